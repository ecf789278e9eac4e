"""``swedeck grade --predictions`` as a user runs it, on the arms asked for: an arm holding none of the
predictions still gets its row, and a folder's earlier grades of another arm are not this run's."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import test_decks
from conftest import swedeck_cli

from curation.decks import deck_rows, write_deck
from data import SAMPLE
from harness.records import Task

LOOSE, ACCEPTED = "sample__moneyfmt-1", "sample__toposort-1"


@pytest.fixture
def deck(sample_tasks: dict[str, Task], tmp_path: Path) -> Path:
    """Two tasks: one a model's verdict accepted (the curated arm's only task), one it called too loose."""
    tasks = [sample_tasks[LOOSE], sample_tasks[ACCEPTED]]
    verdicts = {LOOSE: test_decks.verdict(tasks[0], "too_loose"), ACCEPTED: test_decks.verdict(tasks[1], "accept")}
    verdicts = {i: v.model_copy(update={"judge": "model"}) for i, v in verdicts.items()}
    write_deck(tmp_path / "deck", deck_rows([(t, test_decks.p1(t)) for t in tasks], verdicts, deck_id="d1", source_run="runs/x"), tasks)
    return tmp_path / "deck"


def _table(stdout: str) -> dict[str, list[str]]:
    """The arms table's rows by arm: predictions, resolved, rate, empty patches, not in arm, reasons."""
    return {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]] for line in stdout.splitlines() if line.count("│") > 4}


def test_regression_curated_alone_gets_its_row_and_earlier_strengthened_grades_are_not_this_runs(deck: Path, tmp_path: Path) -> None:
    """``--arm curated`` alone printed an empty table and ``"arms": {}``; ``--arm raw --arm curated`` into a
    folder holding earlier strengthened grades showed the stale strengthened row and no curated one."""
    wrong = (SAMPLE / LOOSE / "probes" / "wrong.patch").read_text()
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": LOOSE, "model_patch": wrong, "model_name_or_path": "shortcut"}) + "\n")
    out = tmp_path / "graded"

    def grade(*arms: str, json_out: bool = False):  # noqa: ANN202 - a CompletedProcess
        done = swedeck_cli("grade", "--predictions", str(predictions), "--source", str(deck), *(f"--arm={a}" for a in arms), "--out", str(out),
                           "--run-id", "r", *(["--json"] if json_out else []))  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    earlier = grade("strengthened")
    assert _table(earlier.stdout)["strengthened"][:2] == ["1", "1"], earlier.stdout  # the wrong patch passes the loose tests

    alone = grade("curated")
    assert _table(alone.stdout) == {"curated": ["0", "0", "n/a", "0", "1", ""]}, alone.stdout
    assert f"not in arm curated: 1 instance(s), {LOOSE}" in alone.stdout
    report = json.loads((out / "curated" / "shortcut.r.json").read_text())
    assert (report["total_instances"], report["submitted_instances"], report["not_in_dataset_ids"]) == (1, 0, [LOOSE])
    summary = json.loads(grade("curated", json_out=True).stdout)
    assert list(summary["arms"]) == ["curated"] and summary["arms"]["curated"]["not_in_arm_ids"] == [LOOSE]

    both = grade("raw", "curated")
    rows = _table(both.stdout)
    assert set(rows) == {"raw", "curated"} and rows["raw"][:2] == ["1", "1"] and rows["curated"][4] == "1", both.stdout
    assert "strengthened" not in both.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["arms"]) == {"raw", "curated"} and not any("strengthened" in pair for pair in summary["resolved_only_on"])
    assert {r["arm"] for r in pq.read_table(out / "results.parquet").to_pylist()} == {"raw"}
    assert (out / "graded" / "strengthened").is_dir()  # the earlier grades stand, for a later run that asks for that arm
