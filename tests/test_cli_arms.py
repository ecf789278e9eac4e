"""``swedeck arms`` as a user runs it: SIGTERM stops it at once with one line and the rerun resumes and
ends; an arm the deck lacks, or a held-out count that leaves an arm nothing to train on, is one line
and exit 2 before anything starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import test_decks
from conftest import swedeck_cli

from curation.decks import deck_rows, write_deck
from harness.records import Task

pytest.importorskip("torch")
CONFIG = str(Path(__file__).resolve().parents[1] / "configs" / "arms-cpu.toml")


@pytest.fixture
def deck(sample_tasks: dict[str, Task], tmp_path: Path) -> Path:
    """Three sample tasks in a deck with all three arms: one accepted by a model's verdict (the curated arm), one
    strengthened (held out first)."""
    tasks = [sample_tasks[i] for i in test_decks.IDS]
    verdicts = {tasks[1].instance_id: test_decks.verdict(tasks[1], "accept"), tasks[2].instance_id: test_decks.verdict(tasks[2], "too_loose")}
    verdicts = {i: v.model_copy(update={"judge": "model"}) for i, v in verdicts.items()}
    records = {tasks[2].instance_id: test_decks.strengthening(tasks[2], "repaired", "diff --git a/tests/t.py b/tests/t.py\n")}
    write_deck(tmp_path / "deck", deck_rows([(t, test_decks.p1(t)) for t in tasks], verdicts, deck_id="d1", source_run="runs/x",
                                            strengthened=records), tasks, records)  # fmt: skip
    return tmp_path / "deck"


@pytest.mark.prefect
def test_regression_arms_stops_on_sigterm_at_once_with_one_line_and_the_rerun_ends(deck: Path, tmp_path: Path) -> None:
    """``swedeck arms`` ran its flows in its own process: SIGTERM reached Prefect's engine, the run went
    on to the end, and a finished rerun said "0 updates"."""
    out = tmp_path / "arms"
    args = ["arms", str(deck), "--config", CONFIG, "--arm", "raw", "--held-out", "0", "--out", str(out), "--set", "train.updates=5",
            "--set", "train.checkpoint_every=1"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, COLUMNS="200"))  # fmt: skip
    deadline = time.monotonic() + 600
    while not (out / "raw" / "metrics" / "update-00000001.parquet").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the run should reach update 2"
        time.sleep(0.1)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, time.monotonic() - sent < 10) == (143, True), err
    lines = [line for line in err.splitlines() if not line.startswith("arms: ")]
    assert len(lines) == 1 and lines[0].startswith("interrupted after ") and lines[0].endswith("of 5 updates; rerun the same command to "
                                                                                               "resume from the last checkpoint"), err  # fmt: skip
    assert not (out / "curated").exists() and not (out / "strengthened").exists()
    rerun = swedeck_cli(*args, timeout=600)
    assert rerun.returncode == 0 and "resumed" in rerun.stderr, rerun.stderr
    done = len(list((out / "raw" / "metrics").glob("update-*.parquet")))
    assert f"raw: {done} of 5 updates" in rerun.stderr and (out / "raw" / "metrics.png").stat().st_size > 0, rerun.stderr
    again = swedeck_cli(*args, timeout=600)  # a finished run ends and still tells its updates
    assert again.returncode == 0 and f"raw: {done} of 5 updates" in again.stderr, again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arm", "nosuch"], "--arm nosuch: deck {deck} has no such arm; its arms: curated, raw, strengthened"),
        (["--held-out", "3"], "--held-out 3: arm curated, raw, strengthened of {deck} would have no task left to train on"),
        (["--arm", "curated", "--held-out", "2"], "--held-out 2: arm curated of {deck} would have no task left to train on"),
    ],
)
def test_regression_arms_refuses_what_it_cannot_train_in_one_line(deck: Path, tmp_path: Path, args: list[str], message: str) -> None:
    """An arm the deck lacks trained on no task, and ``--held-out`` as large as the deck held every task out."""
    started = time.monotonic()
    done = swedeck_cli("arms", str(deck), "--config", CONFIG, *args, "--out", str(tmp_path / "o"))
    assert time.monotonic() - started < 5, "refused before anything starts"
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0] == "error: " + message.format(deck=deck), done.stderr
    assert not (tmp_path / "o").exists()
