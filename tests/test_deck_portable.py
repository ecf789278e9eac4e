"""A deck other tools can train on: self-contained (copied to another machine's path it still builds its
environments and grades), SWE-bench-shaped rows that load in the ``swebench`` package's own loader, a
strengthened arm whose ``test_patch`` applies to ``base_commit`` and reproduces its FAIL_TO_PASS, and a
catalog DuckDB opens from any folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_decks
import test_predictions
from conftest import swedeck_cli

from curation.decks import deck_rows, write_deck
from curation.sources import load_source
from data import FIXTURES, SAMPLE
from harness.grading.grader import gold_pattern
from harness.grading.parsers import resolve_parser
from harness.records import HiddenTests, ProbeResult, Status, Strengthening, Task

TASK = test_predictions.TASK
ADDED = "tests/test_formatting.py::test_format_uses_three_minor_units"
ORIGINAL = "tests/test_formatting.py::test_format_uses_currency_minor_units"


def probe(task: Task, probe_id: str) -> ProbeResult:
    return ProbeResult(config_hash="c", task_hash=task.task_hash(), instance_id=task.instance_id, probe_id=probe_id,
                       kind="plausible_wrong", origin="model_free", operator="drop_hunk", description="d", patch="", reward=1.0,
                       reason="", selected_reward=None, executions=1, differing=[], log_path="")  # fmt: skip


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory, bwrap_backend) -> Path:  # noqa: ANN001
    """A deck made from a corpus folder that is then deleted, copied to another path and the original
    removed: nothing of the checkout or the corpus that made it is left to lean on."""
    root = tmp_path_factory.mktemp("portable")
    shutil.copytree(SAMPLE / TASK, root / "corpus" / TASK)
    (task,) = load_source(root / "corpus").tasks
    tests = test_predictions.strengthened_tests(task)
    version = task.model_copy(update={"answer": task.answer.model_copy(update={"hidden_tests": HiddenTests(patch=tests), "expected_status": None})})
    pattern = gold_pattern(version, bwrap_backend)
    record = Strengthening(config_hash="s", task_hash=task.task_hash(), instance_id=TASK, status="repaired", reason="", survivors=["w"],
                           killed=["w"], tests=[], tests_patch=tests, expected_status={k: str(v) for k, v in pattern.items()},
                           fail_to_pass=[ORIGINAL, ADDED])  # fmt: skip
    ran = test_decks.p1(task).model_copy(update={"fail_to_pass": [ORIGINAL]})
    rows = deck_rows([(task, ran)], {TASK: test_decks.verdict(task, "too_loose")}, deck_id="d1", source_run="../runs/x",
                     strengthened={TASK: record})  # fmt: skip
    write_deck(root / "made" / "deck", rows, [task], {TASK: record}, probes=[probe(task, "p1"), probe(task, "not-cited")])
    shutil.rmtree(root / "corpus")
    shutil.copytree(root / "made" / "deck", root / "elsewhere" / "copied")
    shutil.rmtree(root / "made")
    return root / "elsewhere" / "copied"


def test_a_copied_deck_names_nothing_outside_itself(moved: Path) -> None:
    for path in moved.rglob("*.json"):
        text = path.read_text()
        assert str(moved.parent.parent) not in text and str(Path(__file__).parents[1]) not in text, path
    task = json.loads((moved / "tasks" / f"{TASK}.json").read_text())
    assert task["repo_source"] == {"kind": "bundle", "path": f"repos/{TASK}.bundle", "ref": task["base_commit"]}
    import pyarrow.parquet as pq

    for arm in ("raw", "strengthened"):  # the dataset's task column too
        (row,) = pq.read_table(moved / "dataset" / "data" / f"{arm}.parquet").to_pylist()
        assert json.loads(row["task"])["repo_source"]["path"] == f"repos/{TASK}.bundle"


def test_regression_a_copied_deck_builds_its_environment_and_grades_gold_1(moved: Path) -> None:
    """Deck tasks pointed ``repo_source.path`` into the checkout that made them."""
    done = swedeck_cli("grade", TASK, "--source", str(moved), "--arm", "strengthened", "--patch", "gold", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reward"] == 1


def test_regression_the_deck_catalog_opens_with_duckdb_from_any_folder(moved: Path, tmp_path: Path) -> None:
    """Its views named deck.parquet relative to the deck, so DuckDB opened elsewhere found nothing; and
    the probes its rows cite as evidence were not in it."""
    script = ("import duckdb, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
              "print(con.sql(\"select arm, evidence from deck order by arm\").fetchall()); "
              "print(con.sql(\"select d.evidence[1], p.operator from deck d join probes p on p.probe_id = d.evidence[1] limit 1\").fetchall()); "
              "print(con.sql('select count(*) from probes').fetchall())")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script, str(moved / "catalog.duckdb")], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[('raw', ['p1']), ('strengthened', ['p1'])]", "[('p1', 'drop_hunk')]", "[(1,)]"]
    dropped = swedeck_cli("query", "select count(*) as n from dropped", "--db", str(moved), "--csv")
    assert (dropped.returncode, dropped.stdout.split()) == (0, ["n", "0"]), dropped.stderr


def test_the_strengthened_arm_loads_in_the_swebench_packages_own_loader(moved: Path) -> None:
    from swebench.harness import utils
    (row,) = utils.load_swebench_dataset(str(moved / "dataset" / "data"), split="strengthened")
    swebench_columns = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS")
    assert all(row[c] for c in swebench_columns), {c: row[c] for c in swebench_columns}
    assert ADDED in row["FAIL_TO_PASS"] and ADDED not in row["PASS_TO_PASS"] and "test_format_uses_three_minor_units" in row["test_patch"]
    (raw,) = utils.load_swebench_dataset(str(moved / "dataset" / "data"), split="raw")
    assert ADDED not in raw["test_patch"] and raw["FAIL_TO_PASS"] == [ORIGINAL]
    assert (row["verdict"], row["evidence"], row["tests"]) == ("too_loose", ["p1"], "strengthened")


def _statuses(checkout: Path, row: dict) -> dict[str, Status]:
    done = subprocess.run(["bash", "-c", f"{' '.join(row['test_cmd'])} -rA -p no:cacheprovider"], cwd=checkout, capture_output=True,
                          text=True)  # fmt: skip
    return resolve_parser(row["log_parser"])(done.stdout)


def test_the_strengthened_test_patch_applies_to_base_commit_and_reproduces_fail_to_pass(moved: Path, tmp_path: Path) -> None:
    """What an external harness does with a row: check out base_commit from the deck's bundle, apply
    test_patch, run the tests: FAIL_TO_PASS fail; with the gold patch too, FAIL_TO_PASS and PASS_TO_PASS pass."""
    import pyarrow.parquet as pq

    (row,) = pq.read_table(moved / "dataset" / "data" / "strengthened.parquet").to_pylist()
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(moved / "repos" / f"{TASK}.bundle"), str(checkout)], check=True)
    subprocess.run(["git", "checkout", "-q", row["base_commit"]], cwd=checkout, check=True)
    subprocess.run(["git", "apply", "-"], cwd=checkout, input=row["test_patch"], text=True, check=True)
    before = _statuses(checkout, row)
    assert {t: before.get(t) for t in row["FAIL_TO_PASS"]} == dict.fromkeys(row["FAIL_TO_PASS"], Status.FAILED)
    subprocess.run(["git", "apply", "-"], cwd=checkout, input=row["patch"], text=True, check=True)
    after = _statuses(checkout, row)
    assert {t: after.get(t) for t in row["FAIL_TO_PASS"] + row["PASS_TO_PASS"]} == dict.fromkeys(
        row["FAIL_TO_PASS"] + row["PASS_TO_PASS"], Status.PASSED)  # fmt: skip


def test_regression_the_deck_version_column_holds_the_corpus_rows_version(tmp_path: Path) -> None:
    """No adapter kept a row's ``version``, so every deck's column was empty; a row without one (SWE-rebench
    V2 has none) stays empty."""
    from swebench.harness import utils

    tasks = [t for name in ("swe_bench.jsonl", "swe_gym.jsonl", "swe_rebench_v1.jsonl", "swe_rebench_v2.jsonl")
             for t in load_source(FIXTURES / name).tasks]  # fmt: skip
    rows = deck_rows([(t, test_decks.p1(t)) for t in tasks], {}, deck_id="v", source_run="runs/x")
    write_deck(tmp_path / "deck", rows, tasks)
    loaded = {r["instance_id"]: r["version"] for r in utils.load_swebench_dataset(str(tmp_path / "deck" / "dataset" / "data"), split="strengthened")}
    sources = {t.instance_id: t.source for t in tasks}
    by_source = {(sources[i], v) for i, v in loaded.items()}
    assert by_source == {("swe_bench", "1.2"), ("swe_bench", "4.2"), ("swe_gym", "5.0"), ("swe_rebench_v1", "0.4"), ("swe_rebench_v2", "")}
    assert loaded["django__django-90001"] == "4.2"
