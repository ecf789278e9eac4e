"""What a user of the installed ``swedeck`` command sees: one line and exit 2 for each mistake, never a
traceback, and the small things a first session trips over.

The console script used to point at the Typer app itself, so the CLI's own handling (one line for a
config error, the command's token and scratch folder) only ran under ``python -m flows.cli``, which the
other tests use: a user saw an 85-line traceback for ``--set pipeline1.runz=5``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from data import SAMPLE
from harness.sandboxes import leftovers
from harness.config import Settings

REPO = Path(__file__).resolve().parents[1]


def _swedeck(*args: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("swedeck")
    assert script, "the install puts the swedeck command on PATH"
    piped = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # as a user's pipe: rich's 80 columns
    return subprocess.run([script, *args], capture_output=True, text=True, cwd=cwd, timeout=300, env={**piped, **env}, check=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mistakes")
    (folder / "broken.toml").write_text("[pipeline1\nruns = 3\n")
    (folder / "toy.toml").write_text('env = "toy"\n')
    return folder


MISTAKES = {
    "unknown setting": (["p1", str(SAMPLE), "--set", "pipeline1.runz=5"], "unknown setting pipeline1.runz (--set pipeline1.runz=5); known here: "),
    "bad value": (["p1", str(SAMPLE), "--set", "pipeline1.runs=abc"], "pipeline1.runs (--set pipeline1.runs=abc): Input should be a valid integer"),
    "override without =": (["curate", "--set", "pipeline1.runs"], "override 'pipeline1.runs' is not key.path=value"),
    "malformed config": (["curate", "--config", "{files}/broken.toml"], "config file {files}/broken.toml: "),
    "missing config": (["p1", str(SAMPLE), "--config", "{files}/none.toml"], "config file {files}/none.toml: No such file or directory"),
    "p1 of a missing path": (["p1", "{files}/nowhere", "--out", "{files}/run"], "{files}/nowhere: no such file or folder"),
    "serve without swedeck.toml": (["serve"], "config file swedeck.toml: No such file or directory"),
    "train setting": (["train", "--set", "train.updatez=3"], "unknown setting train.updatez"),
    "arms without a swe config": (["arms", "{files}"], 'set env = "swe" in the run config'),
    "arms of a folder that is no deck": (["arms", "{files}", "--set", "env=swe"], "not a deck folder"),
}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_installed_command_answers_each_mistake_in_one_line(mistake: str, files: Path) -> None:
    args, expected = MISTAKES[mistake]
    done = _swedeck(*(a.format(files=files) for a in args), cwd=files)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert expected.format(files=files) in lines[0]
    assert not (files / "run").exists()  # refused before a run folder is made


def test_a_typo_of_a_local_path_is_not_sent_to_the_hub() -> None:
    """``data/sampel`` beside ``data/`` is a path, said at once; before, five DNS retries (34 s) and a
    message about the hub only."""
    done = _swedeck("tasks", "list", "data/sampel")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: data/sampel: no such file or folder (not tried as a Hugging Face hub id: it names a local path)"


def test_an_unreachable_hub_fails_at_once_and_names_both_readings(tmp_path: Path) -> None:
    done = _swedeck("tasks", "list", "someone/dataset", cwd=tmp_path, HF_ENDPOINT="http://swedeck-no-such-host.invalid")
    assert done.returncode == 2
    assert "someone/dataset: no such local file or folder, and the Hugging Face hub is unreachable" in done.stderr
    assert "Retrying" not in done.stderr


def test_a_short_link_leads_into_the_scratch_folder_and_goes_with_it(tmp_path: Path) -> None:
    """A temporary Ray's sockets live under the run's scratch folder through a short link (Unix
    socket paths are limited to 107 bytes); a sweep removes the link once its folder is gone."""
    target = tmp_path / ("deep-" * 20) / "ray"
    link = leftovers.short_link(target)
    assert len(str(link)) < 40 and link.resolve() == target.resolve()
    (link / "sock").write_text("x")
    assert (target / "sock").exists()
    shutil.rmtree(target)
    assert link in leftovers._dangling_links()
    leftovers.sweep(Settings.from_env(), gone=set())
    assert not link.is_symlink()


def test_version_help_and_what_a_source_was_read_as() -> None:
    assert _swedeck("--version").stdout.startswith("swedeck ")
    assert "run config with [schedules.NAME] tables" in _swedeck("serve", "--help").stdout  # markup ate the brackets
    assert "Writes into --out: checkpoint.pt" in _swedeck("train", "--help").stdout
    listed = _swedeck("tasks", "list", "data/fixtures/swe_bench.jsonl")
    assert "data/fixtures/swe_bench.jsonl: read as swe_bench (SWE-bench 5), 1 rows" in listed.stderr
    assert "…" not in listed.stdout  # piped, rich cut every cell to fit 80 columns


def test_a_rerun_of_a_finished_p1_reuses_every_result_without_starting_prefect(tmp_path: Path) -> None:
    """A no-op rerun took 70 s (the temporary Prefect API starting) and did not say it reused anything."""
    shutil.copytree(SAMPLE / "sample__semverlite-1", tmp_path / "src" / "sample__semverlite-1")
    args = ("p1", str(tmp_path / "src"), "--out", str(tmp_path / "run"), "--set", "pipeline1.runs=1")
    first = _swedeck(*args, PREFECT_HOME=str(tmp_path / "first"))
    assert first.returncode == 0 and "reused" not in first.stdout
    assert (tmp_path / "first" / "prefect.db").exists()  # the temporary API's database
    again = _swedeck(*args, PREFECT_HOME=str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    assert "every task already had its result for this content and config: reused all 1" in again.stdout
    assert not (tmp_path / "again" / "prefect.db").exists()  # no Prefect API was started
