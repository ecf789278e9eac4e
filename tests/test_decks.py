"""Decks and paired arms: rows per arm from Pipeline 1 and 2 results, stored and queried, then both
arms trained with one config and one seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import swedeck_cli

from curation.deck_files import arm_tasks, arms
from curation.decks import deck_rows, verified_task, write_deck
from curation.store import connect, read_records
from harness.records import DeckRow, Pipeline1Result, Strengthening, Task, VerdictRecord

IDS = ("sample__toposort-1", "sample__matrixlite-1", "sample__iniparse-1")


def p1(task: Task) -> Pipeline1Result:
    return Pipeline1Result(
        config_hash="c", task_hash=task.task_hash(), instance_id=task.instance_id, source="local", repo=task.repo,
        decision="keep", reason="", infrastructure=False, stage="", fail_to_pass=[], pass_to_pass=[], flaky=[],
        gold_failing=[], binding_assertions=[], label_disagreements=[], expected_status={}, runs=1, duration_s=0.0,
        detail="",
    )  # fmt: skip


def verdict(task: Task, label: str, rewritten: str = "") -> VerdictRecord:
    return VerdictRecord(
        config_hash="c", task_hash=task.task_hash(), instance_id=task.instance_id, verdict=label,
        q1_gold_fixes_issue=True, q2_tests_grade_issue="yes", q3_issue_states_requirements=not rewritten,
        evidence=["p1"], rewritten_issue=rewritten, rationale="", judge_model="scripted", transcript_path="",
        tokens=0, detail="",
    )  # fmt: skip


def strengthening(task: Task, status: str, tests_patch: str) -> Strengthening:
    return Strengthening(
        config_hash="s", task_hash=task.task_hash(), instance_id=task.instance_id, status=status, reason="", survivors=["w"],
        killed=["w"] if tests_patch else [], tests=[], tests_patch=tests_patch, hidden_files={},
        expected_status={"tests/t.py::test_new": "PASSED"}, fail_to_pass=["tests/t.py::test_new"],
    )  # fmt: skip


@pytest.fixture
def deck(sample_tasks: dict[str, Task], tmp_path: Path) -> Path:
    tasks = [sample_tasks[i] for i in IDS]
    verdicts = {
        IDS[0]: verdict(tasks[0], "accept"),
        IDS[1]: verdict(tasks[1], "issue_rewritten", "Adding the same dependency twice must be a no-op."),
        IDS[2]: verdict(tasks[2], "too_loose"),
    }
    records = {IDS[2]: strengthening(tasks[2], "repaired", "diff --git a/tests/t.py b/tests/t.py\n"),
               IDS[0]: strengthening(tasks[0], "not_repaired", "")}  # fmt: skip
    rows = deck_rows([(t, p1(t)) for t in tasks], verdicts, deck_id="d1", source_run="runs/x", strengthened=records)
    write_deck(tmp_path / "deck", rows, tasks, records)
    return tmp_path / "deck"


def test_the_strengthened_arm_has_the_raw_ids_and_says_which_tests_each_task_keeps(deck: Path, sample_tasks: dict[str, Task]) -> None:
    raw, strong = arm_tasks(deck, "raw"), arm_tasks(deck, "strengthened")
    assert [t.instance_id for t in strong] == [t.instance_id for t in raw] == list(IDS)
    rows = {r.instance_id: r for r in read_records(deck / "deck.parquet", DeckRow) if r.arm == "strengthened"}
    assert {i: (r.tests, r.strengthening_status) for i, r in rows.items()} == {
        IDS[0]: ("original", "not_repaired"), IDS[1]: ("original", ""), IDS[2]: ("strengthened", "repaired")}  # fmt: skip
    assert rows[IDS[2]].strengthening.startswith("runs/x/strengthen/sample__iniparse-1#") and rows[IDS[1]].strengthening == ""
    assert all(r.source_run == "runs/x" and r.config_hash == "c" for r in rows.values())
    # a repaired task is graded by its strengthened tests; the others, and the raw arm, by the original ones
    assert strong[2].answer.hidden_tests.patch == "diff --git a/tests/t.py b/tests/t.py\n"
    assert strong[2].answer.fail_to_pass == ["tests/t.py::test_new"]
    assert raw[2].answer == sample_tasks[IDS[2]].answer
    assert strong[:2] == raw[:2]


def test_regression_twin_tell_a_deck_task_carries_pipeline1s_fail_to_pass(sample_tasks: dict[str, Task]) -> None:
    """The sample corpus lists no FAIL_TO_PASS, so its deck's grades planted copies of random failing
    tests, and code forcing only the tests without a near-twin was paid whenever none was a real one."""
    task = sample_tasks[IDS[0]]
    assert task.answer.fail_to_pass == []
    ran = p1(task).model_copy(update={"fail_to_pass": ["tests/test_x.py::test_real"]})
    assert verified_task(task, ran).answer.fail_to_pass == ["tests/test_x.py::test_real"]
    assert verified_task(task, ran).answer.model_copy(update={"fail_to_pass": []}) == task.answer
    listed = task.model_copy(update={"answer": task.answer.model_copy(update={"fail_to_pass": ["tests/t.py::test_listed"]})})
    assert verified_task(listed, ran) == listed  # the corpus's own list stands


def test_arms_hold_what_each_verdict_allows(deck: Path, sample_tasks: dict[str, Task]) -> None:
    assert arms(deck) == ["curated", "raw", "strengthened"]
    raw, curated = arm_tasks(deck, "raw"), arm_tasks(deck, "curated")
    assert [t.instance_id for t in raw] == list(IDS)
    assert [t.instance_id for t in curated] == list(IDS[:2])  # the too-loose task is left out
    assert curated[0].problem_statement == sample_tasks[IDS[0]].problem_statement
    assert curated[1].problem_statement == "Adding the same dependency twice must be a no-op."
    assert curated[1].answer == sample_tasks[IDS[1]].answer  # only the issue text changed
    con = connect(deck / "catalog.duckdb")
    assert con.execute("select arm, count(*) from deck group by arm order by arm").fetchall() == [("curated", 2), ("raw", 3), ("strengthened", 3)]


@pytest.mark.slow  # training runs by default in test_cli's train command and test_trainer
@pytest.mark.prefect
def test_paired_arms_train_with_one_config(deck: Path, tmp_path: Path, bwrap_backend, prefect_api) -> None:  # noqa: ANN001
    pytest.importorskip("torch")
    from flows.training import arms_flow
    from training.metrics import read_metrics
    from training.run import RunConfig

    config = RunConfig.model_validate({
        "env": "swe",
        "train": {"updates": 1, "group_size": 2, "groups_per_update": 2, "max_inflight_groups": 2, "engines": 1},
        "swe": {"agent": {"max_turn_tokens": 16}},
    }).model_dump(mode="json")  # fmt: skip
    results = arms_flow(str(deck), config, str(tmp_path / "runs"))
    assert set(results) == {"raw", "curated", "strengthened"}
    assert len({r["config_hash"] for r in results.values()}) == 1
    for arm, summary in results.items():
        assert summary["updates"] == [0]
        # the task with strengthened tests is held out of every arm and scores every arm's final policy
        assert summary["held_out"] == [IDS[2]] and summary["strengthened_score"] in (0.0, 1.0)
        assert summary["own_score"] is None if arm == "curated" else summary["own_score"] in (0.0, 1.0)
        assert [m.update for m in read_metrics(tmp_path / "runs" / arm / "metrics")] == [0]
        assert (tmp_path / "runs" / arm / "checkpoint.pt").exists() and Path(summary["plot"]).stat().st_size > 0
    with pytest.raises(ValueError, match="swe"):
        arms_flow(str(deck), RunConfig().model_dump(mode="json"), str(tmp_path / "toy"))


def test_regression_a_moved_deck_answers_queries_and_loads_with_datasets(deck: Path, tmp_path: Path) -> None:
    """Issue 25: the catalog named its files by absolute path, so a copied or moved deck failed
    ('No files found that match the pattern ...'); raw and strengthened rows had no evidence."""
    card = (deck / "dataset" / "README.md").read_text()
    assert card.startswith("---\npretty_name: \"d1\"\nlicense: other\n") and "\n# d1\n" in card
    assert "keeps that\nrepository's license" in card and "`swedeck-samples/toposort`" in card
    columns = [line.split("|")[1:4] for line in card.split("## Columns")[1].split("##")[0].splitlines() if line.startswith("| `")]
    assert {c[0].strip(" `") for c in columns} == {*DeckRow.model_fields, "task"} and all(c[2].strip() for c in columns)
    snippet = card.split("```python\n")[1].split("```")[0]
    moved = tmp_path / "elsewhere" / "moved-deck"
    moved.parent.mkdir()
    deck.rename(moved)
    arms_sql = "select arm, count(*) as n, list(distinct evidence) as evidence from deck group by arm order by arm"
    for db in (moved, moved / "catalog.duckdb"):  # the folder (catalog built on the fly) and the deck's own catalog file
        done = swedeck_cli("query", "--db", str(db), "--json", arms_sql)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [{"arm": arm, "n": n, "evidence": [["p1"]]} for arm, n in (("curated", 2), ("raw", 3), ("strengthened", 3))]
    # the card's own snippet, pointed at the moved deck, from another folder
    where = next(line for line in snippet.splitlines() if line.startswith("deck = Path("))
    code = snippet.replace(where, f"deck = Path({str(moved)!r})") + "print('splits', {k: v.num_rows for k, v in ds.items()})\n"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "splits {'curated': 2, 'raw': 3, 'strengthened': 3}" in done.stdout and "│ raw" in done.stdout


def test_regression_a_deck_written_to_a_relative_folder_bundles_its_repositories(sample_tasks: dict[str, Task], tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """``swedeck deck runs/sample --out decks/sample``, as the README writes it, failed: git bundle ran in
    the task's tree with the scratch folder's relative path."""
    task = sample_tasks[IDS[0]]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "decks" / "sample").mkdir(parents=True)  # as the command does before it writes
    write_deck(Path("decks") / "sample", deck_rows([(task, p1(task))], {}, deck_id="d1", source_run="runs/x"), [task])
    (copied,) = arm_tasks(tmp_path / "decks" / "sample", "raw")
    bundle = Path(copied.repo_source.path)
    assert bundle == (tmp_path / "decks" / "sample" / "repos" / f"{IDS[0]}.bundle").resolve() and bundle.stat().st_size > 0
