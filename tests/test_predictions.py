"""Batch grading of a predictions file (SWE-bench's format) against the arms of a deck, as a user runs it:
``swedeck grade --predictions FILE --source DECK --arm raw --arm strengthened``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import test_decks
from conftest import cli_query, swedeck_cli

from curation.decks import deck_rows, write_deck
from curation.predictions import PredictionsError, read_predictions
from data import SAMPLE
from harness.grading.grader import gold_pattern
from harness.records import HiddenTests, Prediction, Strengthening, Task

TASK = "sample__moneyfmt-1"  # too loose: its tests check JPY's minor units only, so a fix for 0 or 2 decimals passes
# the test strengthening would add: KWD has three decimals, which the wrong patch prints as two
ADDED = '''

def test_format_uses_three_minor_units():
    assert format_money(Money("12.345", "KWD")) == "KD 12.345"
'''


def strengthened_tests(task: Task) -> str:
    """The task's hidden tests patch with ADDED appended to the file it creates lines in."""
    patch = task.answer.hidden_tests.patch
    assert patch.count("@@ -35,3 +35,12 @@") == 1
    lines = ADDED.splitlines()
    return patch.replace("@@ -35,3 +35,12 @@", f"@@ -35,3 +35,{12 + len(lines)} @@").rstrip("\n") + "\n" + "".join(f"+{line}\n" for line in lines)


@pytest.fixture
def deck(sample_tasks: dict[str, Task], tmp_path: Path, bwrap_backend) -> Path:  # noqa: ANN001
    """A one-task deck as `swedeck deck` writes it: the too-loose task in the raw arm, and in the
    strengthened arm with ADDED among its hidden tests (gold's pattern on them from a real gold run)."""
    task = sample_tasks[TASK]
    tests = strengthened_tests(task)
    probe = task.model_copy(update={"answer": task.answer.model_copy(update={"hidden_tests": HiddenTests(patch=tests), "expected_status": None})})
    pattern = gold_pattern(probe, bwrap_backend)
    added = "tests/test_formatting.py::test_format_uses_three_minor_units"
    assert pattern[added] == "PASSED"
    record = Strengthening(config_hash="s", task_hash=task.task_hash(), instance_id=TASK, status="repaired", reason="", survivors=["w"],
                           killed=["w"], tests=[], tests_patch=tests, expected_status={k: str(v) for k, v in pattern.items()},
                           fail_to_pass=[*task.answer.fail_to_pass, added])  # fmt: skip
    rows = deck_rows([(task, test_decks.p1(task))], {TASK: test_decks.verdict(task, "too_loose")}, deck_id="d1", source_run="runs/x",
                     strengthened={TASK: record})  # fmt: skip
    write_deck(tmp_path / "deck", rows, [task], {TASK: record})
    return tmp_path / "deck"


def test_a_predictions_file_is_graded_on_both_arms_and_resumes(deck: Path, sample_tasks: dict[str, Task], tmp_path: Path) -> None:
    task = sample_tasks[TASK]
    wrong = (SAMPLE / TASK / "probes" / "wrong.patch").read_text()
    rows = [
        {"instance_id": TASK, "model_patch": task.answer.gold_patch, "model_name_or_path": "gold"},
        {"instance_id": TASK, "model_patch": "", "model_name_or_path": "empty"},
        {"instance_id": TASK, "model_patch": None, "model_name_or_path": "org/null"},
        {"instance_id": TASK, "model_patch": wrong, "model_name_or_path": "shortcut", "full_output": "ignored"},
        {"instance_id": "sample__toposort-1", "model_patch": wrong, "model_name_or_path": "shortcut"},  # not in this deck
    ]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "graded"
    args = ("grade", "--predictions", str(predictions), "--source", str(deck), "--arm", "raw", "--arm", "strengthened",
            "--workers", "2", "--out", str(out), "--run-id", "r1")  # fmt: skip
    done = swedeck_cli(*args)
    assert done.returncode == 0, done.stderr
    # the user's table: gold and the shortcut resolve the raw arm, only gold the strengthened one; the
    # empty and the null patch are empty patches, not graded
    lines = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]] for line in done.stdout.splitlines() if line.count("│") > 4}
    assert lines["raw"][:5] == ["2", "2", "100.0%", "2", "1"] and lines["strengthened"][:5] == ["2", "1", "50.0%", "2", "1"], done.stdout
    assert "resolved on raw, not on strengthened: 1 of 2 predictions graded on both" in done.stdout
    assert "not in arm raw: 1 instance(s), sample__toposort-1" in done.stdout

    results = pq.read_table(out / "results.parquet").to_pylist()
    resolved = {(r["arm"], r["model_name_or_path"]): r["resolved"] for r in results}
    assert resolved == {("raw", "gold"): True, ("raw", "shortcut"): True, ("strengthened", "gold"): True, ("strengthened", "shortcut"): False}
    killed = next(r for r in results if r["arm"] == "strengthened" and r["model_name_or_path"] == "shortcut")
    assert killed["differing"] == ["tests/test_formatting.py::test_format_uses_three_minor_units"] and killed["tests"] == "strengthened"
    assert Path(killed["log_path"]).is_relative_to(out / "logs" / "strengthened")
    summary = json.loads((out / "summary.json").read_text())
    shortcut = Prediction.model_validate(rows[3]).prediction_id()
    assert summary["resolved_only_on"]["raw_not_strengthened"]["prediction_ids"] == [shortcut]
    assert summary["resolved_only_on"]["strengthened_not_raw"]["resolved"] == 0

    # the SWE-bench harness's layout, per arm: a report per model, a folder per instance
    report = json.loads((out / "strengthened" / "shortcut.r1.json").read_text())
    assert {k: report[k] for k in ("submitted_instances", "completed_instances", "resolved_instances", "unresolved_ids", "error_ids",
                                   "not_in_dataset_ids")} == {  # fmt: skip
        "submitted_instances": 1, "completed_instances": 1, "resolved_instances": 0, "unresolved_ids": [TASK], "error_ids": [],
        "not_in_dataset_ids": ["sample__toposort-1"]}  # fmt: skip
    assert json.loads((out / "raw" / "shortcut.r1.json").read_text())["resolved_ids"] == [TASK]
    for model in ("empty", "org__null"):
        empty = json.loads((out / "raw" / f"{model}.r1.json").read_text())
        assert (empty["empty_patch_ids"], empty["completed_instances"], empty["unresolved_ids"]) == ([TASK], 0, []), model
    instance = out / "strengthened" / "logs" / "run_evaluation" / "r1" / "shortcut" / TASK
    status = json.loads((instance / "report.json").read_text())[TASK]
    assert status["resolved"] is False and status["patch_successfully_applied"] is True
    assert status["tests_status"]["FAIL_TO_PASS"]["failure"] == ["tests/test_formatting.py::test_format_uses_three_minor_units"]
    assert status["tests_status"]["PASS_TO_PASS"]["failure"] == [] and status["tests_status"]["PASS_TO_PASS"]["success"]
    # the run's own output; a planted run names its tests by the twins' neutral names there (issue 39),
    # so the failing test is the report's (above), and the output shows a failure
    assert (instance / "patch.diff").read_text() == wrong and " failed" in (instance / "test_output.txt").read_text()
    null = json.loads((out / "raw" / "logs" / "run_evaluation" / "r1" / "org__null" / TASK / "report.json").read_text())[TASK]
    assert (null["patch_is_None"], null["patch_exists"], null["resolved"]) == (True, False, False)

    # a rerun grades nothing: every grade stands (its file untouched), and the results are the same
    stamps = sorted((p, p.stat().st_mtime_ns) for p in (out / "graded").rglob("grade.parquet"))
    again = swedeck_cli(*args, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == summary
    assert sorted((p, p.stat().st_mtime_ns) for p in (out / "graded").rglob("grade.parquet")) == stamps and len(stamps) == 4


def test_regression_every_requested_arm_gets_a_row_and_earlier_arms_are_not_this_runs(deck: Path, tmp_path: Path) -> None:
    """``--arm curated`` alone printed an empty table; a folder's earlier strengthened grades showed as
    this run's, and the requested arm that held none of the predictions had no row."""
    wrong = (SAMPLE / TASK / "probes" / "wrong.patch").read_text()
    predictions = tmp_path / "preds.json"  # a JSON list, as SWE-agent writes
    predictions.write_text(json.dumps([{"instance_id": TASK, "model_patch": wrong, "model_name_or_path": "shortcut"}]))
    out = tmp_path / "graded"
    for arms in (["strengthened"], ["raw"]):
        done = swedeck_cli("grade", "--predictions", str(predictions), "--source", str(deck), *(f"--arm={a}" for a in arms),
                           "--out", str(out), "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert list(json.loads(done.stdout)["arms"]) == arms
    both = swedeck_cli("grade", "--predictions", str(predictions), "--source", str(deck), "--arm", "raw", "--arm", "strengthened",
                       "--out", str(out), "--json")  # fmt: skip
    summary = json.loads(both.stdout)  # nothing regraded: both arms' grades stand, and compare
    assert {a: s["resolved"] for a, s in summary["arms"].items()} == {"raw": 1, "strengthened": 0}
    assert summary["resolved_only_on"]["raw_not_strengthened"]["resolved"] == 1
    subset = swedeck_cli("grade", "--predictions", str(predictions), "--source", str(deck), "--arm", "raw", "--instance-ids", "nosuch",
                         "--out", str(out))  # fmt: skip
    assert subset.returncode == 2 and "--instance-ids: nosuch in no requested arm" in subset.stderr, subset.stderr


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("p.txt", "", "name it .jsonl (one prediction a line) or .json (a list of them)"),
        ("p.jsonl", '{"instance_id": "a"}\n{"model_patch": ""}\n', "line 2: instance_id: Field required"),
        ("p.jsonl", '{"instance_id": "a"\n', "not JSON at line 1"),
        ("p.json", '"a"', "a JSON list of predictions"),
        ("p.json", '[{"instance_id": 3}]', "item 0: instance_id: Input should be a valid string"),
    ],
)
def test_regression_a_bad_predictions_file_is_one_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PredictionsError, match=re.escape(message)):
        read_predictions(path)


def test_batch_grading_refuses_mistakes_in_one_line(deck: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "p.jsonl"
    predictions.write_text('{"instance_id": "x", "model_patch": ""}\n')
    cases = {
        "no such arm": (["--source", str(deck), "--arm", "curated"], "has no arm 'curated'; its arms: raw, strengthened"),
        "no deck": (["--arm", "raw"], "--predictions needs --source DECK"),
        "missing file": (["--source", str(deck), "--arm", "raw", "--predictions", str(tmp_path / "nope.jsonl")], "no such file"),
    }
    for name, (args, message) in cases.items():
        done = swedeck_cli("grade", "--predictions", str(predictions), *args, "--out", str(tmp_path / "o"))
        assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)


@pytest.mark.slow  # a whole curate run of the sample corpus, then every probe graded twice
@pytest.mark.timeout(14400)
def test_every_probe_of_the_sample_deck_graded_on_the_raw_and_strengthened_arms(tmp_path: Path) -> None:
    run, deck, out = tmp_path / "run", tmp_path / "deck", tmp_path / "graded"
    for args in (("curate", "--out", str(run)), ("deck", str(run), "--out", str(deck))):
        done = swedeck_cli(*args, timeout=7200)
        assert done.returncode == 0, done.stderr
    probes = cli_query(run, "select instance_id, probe_id, patch, reward from probes")
    killed = {r["probe_id"] for r in cli_query(run, "select unnest(killed) as probe_id from strengthening")}
    raw_ids = {r["instance_id"] for r in cli_query(deck, "select instance_id from deck where arm = 'raw'")}
    predictions = tmp_path / "probes.jsonl"
    predictions.write_text("".join(json.dumps({"instance_id": p["instance_id"], "model_patch": p["patch"], "model_name_or_path": p["probe_id"]}) + "\n"
                                   for p in probes))  # fmt: skip
    done = swedeck_cli("grade", "--predictions", str(predictions), "--source", str(deck), "--arm", "raw", "--arm", "strengthened",
                       "--workers", "2", "--out", str(out), "--json",
                       "--set", "sandbox.limits.timeout_s=60", timeout=7200)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    results = pq.read_table(out / "results.parquet").to_pylist()
    resolved = {(r["arm"], r["model_name_or_path"]): r["resolved"] for r in results}
    # probes edit the code under test only: none of them is a forgery (a collection error once was one)
    assert not [r for r in results if r["reason"] in ("spoofing_suspected", "tamper_suspected")]
    # the raw arm grades as Pipeline 2 graded its probes, and strengthening's kills hold on the strengthened arm
    assert {pid for (arm, pid), ok in resolved.items() if arm == "raw" and ok} == {
        p["probe_id"] for p in probes if p["reward"] == 1 and p["instance_id"] in raw_ids}  # fmt: skip
    assert killed and all(resolved["raw", pid] and not resolved["strengthened", pid] for pid in killed)
    assert summary["resolved_only_on"]["raw_not_strengthened"]["resolved"] >= len(killed)
    assert summary["arms"]["strengthened"]["rate"] < summary["arms"]["raw"]["rate"]
