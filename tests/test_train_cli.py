"""``swedeck train`` as a user runs it: the default run ends and writes its plot, a resumed run ends, a
run whose every task is retired ends there, SIGTERM stops it at once with one line, and a log (not a
terminal) gets a line per update."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import swedeck_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.prefect

SMALL = ["--set", "train.group_size=2", "--set", "train.groups_per_update=2", "--set", "train.warmup_steps=30"]


def test_regression_train_ends_when_every_task_is_retired_and_a_rerun_ends_too(tmp_path: Path) -> None:
    """Once every toy task was retired nothing was dispatched again and the trainer waited for ever in
    its fleet's ``take``: no metrics.png, and a resume hung again."""
    out = tmp_path / "train"
    easy = ["--set", "toy.tasks=2", "--set", "toy.skill=1.0", "--set", "train.updates=50", *SMALL]
    done = swedeck_cli("train", "--out", str(out), *easy, timeout=400)
    assert done.returncode == 0, done.stderr
    assert "every task was retired after" in done.stderr and (out / "metrics.png").stat().st_size > 0
    import duckdb

    updates = duckdb.sql(f"SELECT count(*) FROM '{out}/metrics/*.parquet'").fetchall()[0][0]
    assert 0 < updates < 50
    assert f"training (toy): {updates}/50" in done.stderr  # not a terminal: a line per update
    assert len([line for line in done.stderr.splitlines() if line.startswith("training (toy): ")]) == updates
    again = swedeck_cli("train", "--out", str(out), *easy, timeout=400)
    assert again.returncode == 0 and f"every task was retired after {updates} of 50 updates" in again.stderr, again.stderr
    assert duckdb.sql(f"SELECT count(*) FROM '{out}/metrics/*.parquet'").fetchall()[0][0] == updates


def test_regression_train_stops_on_sigterm_at_once_with_one_line_and_the_rerun_resumes(tmp_path: Path) -> None:
    """SIGTERM used to cost a minute of ConnectError tracebacks from the dead temporary Prefect API (and
    SIGKILL under ``timeout``)."""
    out = tmp_path / "train"
    args = ["train", "--out", str(out), "--set", "train.updates=40", "--set", "train.checkpoint_every=2", *SMALL]
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, COLUMNS="200"))  # fmt: skip
    deadline = time.monotonic() + 600
    while len(list((out / "metrics").glob("update-*.parquet"))) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, "the run should reach update 3"
        time.sleep(0.1)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, time.monotonic() - sent < 10) == (143, True), err
    last = [line for line in err.splitlines() if not line.startswith("training (toy): ")]
    assert len(last) == 1 and last[0].startswith("interrupted after ") and "rerun the same command to resume" in last[0], err
    rerun = swedeck_cli(*args, timeout=600)
    assert rerun.returncode == 0 and "resumed" in rerun.stderr, rerun.stderr
    assert (out / "metrics.png").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_regression_the_default_train_ends_and_writes_its_plot(tmp_path: Path) -> None:
    """With its defaults the run reached update 59 and waited for ever (every toy task retired)."""
    out = tmp_path / "train"
    done = swedeck_cli("train", "--out", str(out), timeout=1100)
    assert done.returncode == 0, done.stderr
    assert (out / "metrics.png").stat().st_size > 0 and (out / "checkpoint.pt").exists()
