"""Traps a new user hit, each run as the user runs it: mistakes are one line with exit 2 before anything
runs, a patch that does not apply says why, test ids keep their brackets, times are wall time, the
Pipeline 1 table counts what its header says and a resumed run says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import swedeck_cli

from data import SAMPLE
from harness.grading.diffs import file_diff

TASK = "sample__moneyfmt-1"
MISTAKES = {  # {o}: a folder the command must not create
    "negative runs": (["p1", str(SAMPLE), "--set", "pipeline1.runs=-1", "--out", "{o}"],
                      "pipeline1.runs (--set pipeline1.runs=-1): Input should be greater than 0"),
    "no such patch file": (["grade", TASK, "--patch", "nosuch.patch"], "--patch nosuch.patch: no such file"),
    "unknown backend": (["grade", TASK, "--backend", "podman"], "sandbox.backend: Input should be 'bwrap' or 'docker', got 'podman'"),
    "json and csv": (["query", "select 1", "--json", "--csv"], "--json and --csv: choose one output format"),
    "group of one": (["train", "--set", "train.group_size=1", "--out", "{o}"],
                     "train.group_size (--set train.group_size=1): Input should be greater than or equal to 2"),
    "similarity above 1": (["p1", str(SAMPLE), "--set", "dedup.merge_similarity=2", "--out", "{o}"], "dedup.merge_similarity"),
    "deck of no run": (["deck", "{o}/run", "--out", "{o}/deck"], "{o}/run has no Pipeline 1 results"),
    "audit of no run": (["audit", "{o}"], "{o}: no such folder"),
    "judge of no run": (["judge", "{o}"], "{o} has no Pipeline 1 results"),
    "unknown option": (["p1", str(SAMPLE), "--nosuch", "--out", "{o}"], "No such option: --nosuch"),
    "zero workers": (["p1", str(SAMPLE), "--workers", "0", "--out", "{o}"], "Invalid value for '--workers' / '-w': Input should be greater than or equal to 1"),
    "unknown command": (["nosuch"], "No such command 'nosuch'"),
}  # fmt: skip


@pytest.mark.parametrize("name", MISTAKES)
def test_regression_a_mistake_is_one_line_with_exit_2_within_5_s(name: str, tmp_path: Path) -> None:
    """``--set pipeline1.runs=-1`` rejected every task as a real rejection; a missing patch file and an
    unknown backend printed tracebacks (rc 1), as did a deck or an audit of a folder that is no run (the
    deck half-written first); a mistyped option was a boxed usage message; the earlier test timed the
    command's CPU, not the user's wait."""
    args, message = MISTAKES[name]
    started = time.monotonic()
    done = swedeck_cli(*(a.format(o=tmp_path / "o") for a in args))
    wall = time.monotonic() - started
    assert done.returncode == 2 and message.format(o=tmp_path / "o") in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: "), done.stderr
    assert not (tmp_path / "o").exists()  # nothing ran
    assert wall < 5, f"{wall:.1f} s of wall time"


def test_regression_a_patch_that_does_not_apply_says_why(tmp_path: Path) -> None:
    """It printed 25 lines of "expected PASSED, got None" and "log " with an empty path."""
    junk = tmp_path / "junk.patch"
    junk.write_text("this is not\na diff\n")
    done = swedeck_cli("grade", TASK, "--patch", str(junk))
    assert done.returncode == 0, done.stderr
    assert "reward 0 (patch_apply_failed)" in done.stdout and "Only garbage was found in the patch input" in done.stdout
    assert "expected PASSED" not in done.stdout and "log \n" not in done.stdout


def test_regression_test_ids_keep_their_bracketed_parameters(tmp_path: Path) -> None:
    """``[en-€1,234,567.50]`` was eaten as rich markup."""
    module = SAMPLE / TASK / "repo" / "moneyfmt" / "formatting.py"
    text = module.read_text()
    broken = tmp_path / "broken.patch"
    broken.write_text(file_diff("moneyfmt/formatting.py", text, text + "\n\ndef format_money(*args, **kwargs):\n    return ''\n"))
    done = swedeck_cli("grade", TASK, "--patch", str(broken))
    assert done.returncode == 0, done.stderr
    assert "tests/test_formatting.py::test_format_styles[en-\\u20ac1,234,567.50]: expected PASSED, got FAILED" in done.stdout, done.stdout  # pytest escapes €


@pytest.mark.prefect
def test_regression_p1_reports_wall_time_counts_flaky_tasks_and_says_it_resumed(tmp_path: Path) -> None:
    """``p1 --json`` said 5.2 s for 21 s of wall time; "flaky tests 12" counted tests in a column of
    tasks; a resumed run never said it resumed. And the catalog's bookkeeping table was among the views."""
    src = tmp_path / "src"
    for name in ("sample__cronexpr-1", "sample__toposort-1"):
        shutil.copytree(SAMPLE / name, src / name)
    out = tmp_path / "run"
    started = time.monotonic()
    first = swedeck_cli("p1", str(src), "--out", str(out), "--json", "--set", "pipeline1.runs=1")
    wall = time.monotonic() - started
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert 0.7 * wall <= summary["seconds"] <= wall and summary["reused"] == 0
    assert summary["flaky_tasks"] <= summary["tasks"]
    shutil.rmtree(out / "p1" / "sample__toposort-1")
    again = swedeck_cli("p1", str(src), "--out", str(out), "--set", "pipeline1.runs=1")
    assert again.returncode == 0, again.stderr
    assert "resumed: 1 of 2 tasks already had their results (reused), 1 ran now" in again.stdout
    assert f"with flaky tests ({summary['flaky_tests']} tests)" in again.stdout
    tables = swedeck_cli("query", "show tables", "--db", str(out / "catalog.duckdb"), "--csv")
    assert tables.returncode == 0 and "p1_results" in tables.stdout and "stale" not in tables.stdout, tables.stdout
    lists = swedeck_cli("query", "select ['a', 'b[1]'] as l", "--db", str(out), "--csv")
    assert lists.stdout.splitlines() == ["l", '"[""a"", ""b[1]""]"'], lists.stdout


def test_regression_piped_summaries_keep_whole_ids_on_one_line() -> None:
    """Piped (CI logs, nohup), Pipeline 2's table cut every id to 15 characters (``sample__cronex…``)
    and its evidence lines wrapped at 80 columns: its console was rich's default, not the table one.
    And its title broke over two lines, the table being narrower than it."""
    ids = [f"owner__a-rather-long-repository-name-{i}" for i in range(2)]
    summary = {"tasks": 2, "seconds": 1.0, "verdicts": {"accept": 2}, "too_loose_evidence": ids, "over_restrictive_evidence": [],
               "probe_counts": {i: dict.fromkeys(("generated", "survived", "confirmed", "likely_equivalent", "killed"), 1) for i in ids}}  # fmt: skip
    code = f"from flows.cli.pipelines import _print_p2; _print_p2({summary!r}, False)"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # a pipe: rich's 80 columns
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert all(f"│ {i} │" in done.stdout for i in ids) and "Pipeline 2: 2 kept tasks in 1.0 s\n" in done.stdout, done.stdout
    assert f"too-loose evidence): {', '.join(ids)}\n" in done.stdout, done.stdout


def test_regression_reading_a_run_config_loads_none_of_the_engines() -> None:
    """A mistyped setting took 5-7 s to refuse on a loaded machine: checking it imported Pipeline 2's
    engines (probes, libcst, mutmut) through judge.pipeline2's config model."""
    import subprocess
    import sys

    code = "import sys, flows.config; print(sorted(m for m in sys.modules if m.split('.')[0] in ('probes', 'libcst', 'mutmut') or m == 'judge.loop'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout
