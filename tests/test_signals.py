"""Ctrl-C and SIGTERM stop a run cleanly, as users run it (a subprocess of the CLI): the exit code says
which signal, within 10 s, with a line saying how far it got; no process of the run survives (the
worker, the temporary Prefect server, sandboxes); a rerun of the same command completes as an
uninterrupted run does. A corpus file with bad rows goes through `swedeck curate` writing nothing
outside --out."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from data import SAMPLE
from harness.sandboxes import leftovers
from harness.config import Settings

TASKS = ("sample__semverlite-1", "sample__toposort-1", "sample__intervals-1")
STABLE = "select instance_id, decision, reason, fail_to_pass, binding_assertions from p1_results order by instance_id"


def copy_tasks(dest: Path, *names: str) -> Path:
    for name in names:
        shutil.copytree(SAMPLE / name, dest / name)
    return dest


def start(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[str]:
    """The CLI in its own process group, as a shell runs a foreground job."""
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *args], env=env or os.environ.copy(), cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def descendants(pid: int) -> list[str]:
    """Tokens of every process below ``pid`` (the worker, Prefect's server, sandboxes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return [t for t in map(leftovers.process_token, found) if t]


def run_processes(token: str) -> list[int]:
    """Processes anywhere that carry the run's token (what the run started, orphaned or not)."""
    marker = f"{leftovers.RUN_ENV}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_for(condition, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def committed(out: Path, stage: str = "p1", marker: str = "result.parquet") -> int:
    folder = out / stage
    return sum(1 for p in folder.glob("[!.]*") if (p / marker).exists()) if folder.is_dir() else 0


def interrupt(proc: subprocess.Popen[str], signum: int) -> tuple[int, float, str, list[str]]:
    """Send ``signum`` as a terminal (SIGINT, to the process group) or a service manager (SIGTERM) would;
    (exit code, seconds to exit, stderr, the run's processes just before)."""
    below = descendants(proc.pid)
    sent = time.monotonic()
    if signum == signal.SIGINT:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, time.monotonic() - sent, err, below


def assert_nothing_left(token: str, below: list[str], settings: Settings) -> None:
    survivors = [t for t in below if leftovers.alive(t)]
    assert survivors == [], f"processes of the run survived: {survivors}"
    assert run_processes(token) == []
    owned = [p for p in (settings.cache_dir / "sandboxes").glob(f"*-{token}-*")]
    assert owned == [] and not leftovers.scratch_dir(settings, token).exists()
    assert not (settings.cache_dir / "runs" / f"{token}.json").exists()
    if shutil.which("docker"):
        containers = subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=swedeck.owner={token}"], capture_output=True, text=True, check=False
        )
        assert containers.stdout.split() == [], "containers of the run survived"


def catalog(db: Path, sql: str = STABLE) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


ON_DOCKER = [pytest.mark.slow, pytest.mark.docker]


@pytest.mark.prefect
@pytest.mark.timeout(1500)  # two Pipeline 1 runs of three tasks, each starting Prefect's server
@pytest.mark.parametrize(("signum", "engine"), [(signal.SIGINT, "bwrap"), pytest.param(signal.SIGTERM, "docker", marks=ON_DOCKER)])
def test_a_signal_mid_run_stops_it_cleanly_and_the_rerun_completes(
    signum: int, engine: str, swedeck_env: Settings, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    request.getfixturevalue(f"{engine}_backend")
    src = copy_tasks(tmp_path / "src", *TASKS)
    out = tmp_path / "out"
    args = ("p1", str(src), "--out", str(out), "--workers", "1", "--backend", engine, "--set", "pipeline1.runs=2")
    proc = start(*args)
    token = leftovers.process_token(proc.pid)
    assert token is not None
    wait_for(lambda: committed(out) >= 1 or proc.poll() is not None, 300, "the first committed task")
    assert proc.poll() is None, proc.communicate()
    code, seconds, err, below = interrupt(proc, signum)

    assert code == 128 + signum and seconds < 10, (code, seconds, err)
    done = committed(out)
    assert f"interrupted: {done} of {len(TASKS)} done; rerun the same command to resume" in err
    assert 1 <= done < len(TASKS), "the signal should land midway"
    assert_nothing_left(token, below, swedeck_env)

    rerun = start(*args, "--json")
    stdout, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    assert json.loads(stdout)["tasks"] == len(TASKS) and committed(out) == len(TASKS)
    decisions = {row[0]: (row[1], row[2]) for row in catalog(out / "catalog.duckdb")}
    assert decisions == {"sample__semverlite-1": ("keep", ""), "sample__toposort-1": ("keep", ""),
                         "sample__intervals-1": ("keep", "")}  # fmt: skip


@pytest.mark.prefect
@pytest.mark.timeout(900)
def test_regression_interrupted_after_a_finished_run_says_the_results_are_complete(
    swedeck_env: Settings, bwrap_backend, tmp_path: Path  # noqa: ANN001
) -> None:
    """Ctrl-C as a run ends (its summary printed, the worker still stopping Prefect's server) said
    'interrupted: 0 of ? done; rerun ...' about a run with nothing left to do."""
    src = copy_tasks(tmp_path / "src", "sample__semverlite-1")
    for attempt in range(3):  # the window between the summary and the worker's exit is short; it is rarely missed twice
        out = tmp_path / f"out{attempt}"
        proc = start("p1", str(src), "--out", str(out), "--workers", "1", "--set", "pipeline1.runs=1",
                     env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"})  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("catalog: "):  # the last line of the run's summary
                break
        code, _, err, _ = interrupt(proc, signal.SIGINT)
        if code != 0:
            break
    assert code == 130, err
    assert "interrupted after every stage had finished: the run's results are complete" in err
    assert "rerun the same command" not in err and committed(out) == 1


CURATE = ("curate", "--workers", "1", "--set", "pipeline1.runs=1")


@pytest.fixture(scope="module")
def clean_curate(swedeck_env: Settings, bwrap_backend, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:  # noqa: ANN001
    """(sources, run folder) of an uninterrupted curate run."""
    root = tmp_path_factory.mktemp("clean")
    src = copy_tasks(root / "src", *TASKS)
    first = start(*CURATE, str(src), "--out", str(root / "out"))
    assert first.wait(timeout=1500) == 0, first.communicate()
    return src, root / "out"


@pytest.mark.slow
@pytest.mark.prefect
@pytest.mark.timeout(3000)
@pytest.mark.parametrize(("signum", "when"), [(signal.SIGTERM, "start"), (signal.SIGINT, "pipeline2"), (signal.SIGTERM, "pipeline2")])
def test_signals_at_other_points_of_curate_and_the_rerun_equals_a_clean_run(
    signum: int, when: str, clean_curate: tuple[Path, Path], swedeck_env: Settings, tmp_path: Path
) -> None:
    src, clean = clean_curate
    out = tmp_path / "out"
    base = (*CURATE, str(src))
    proc = start(*base, "--out", str(out))
    token = leftovers.process_token(proc.pid)
    assert token is not None
    if when == "start":  # the worker is starting, Prefect's server with it
        wait_for(lambda: leftovers.scratch_dir(swedeck_env, token).exists(), 300, "the worker's start")
        time.sleep(1)
    else:
        wait_for(lambda: committed(out, "p2", "verdict.parquet") >= 1, 1500, "the first judged task")
    code, seconds, err, below = interrupt(proc, signum)
    assert code == 128 + signum and seconds < 10, (code, seconds, err)
    assert "; rerun the same command to resume" in err
    assert_nothing_left(token, below, swedeck_env)

    rerun = start(*base, "--out", str(out))
    assert rerun.wait(timeout=1500) == 0, rerun.communicate()
    assert catalog(out / "catalog.duckdb") == catalog(clean / "catalog.duckdb")
    verdicts = "select instance_id, verdict from verdicts order by all"
    assert catalog(out / "catalog.duckdb", verdicts) == catalog(clean / "catalog.duckdb", verdicts)


@pytest.mark.prefect
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("engine", ["bwrap", pytest.param("docker", marks=ON_DOCKER)])
def test_curate_over_a_hostile_corpus_completes_and_writes_only_into_out(
    engine: str, swedeck_env: Settings, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from test_load_errors import hostile_corpus

    request.getfixturevalue(f"{engine}_backend")
    corpus = hostile_corpus(tmp_path / "rows.jsonl")
    home, scratch, cwd, out = (tmp_path / name for name in ("home", "tmp", "cwd", "out"))
    for folder in (home, scratch, cwd):
        folder.mkdir()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(scratch)}
    # The whole file system, less what is not files (/proc, /sys, /dev, /run), the engine's own state,
    # the cache the user configured and --out; bytecode is whatever Python compiles on import.
    skip = {"/proc", "/sys", "/dev", "/run", "/var/lib/docker", "/var/lib/containerd", "/var/log",
            str(swedeck_env.cache_dir), str(out)}  # fmt: skip

    def listing() -> set[str]:
        found = set()
        for root, dirs, files in os.walk("/"):
            dirs[:] = [d for d in dirs if d != "__pycache__" and os.path.join(root, d) not in skip]
            found.update(os.path.join(root, name) for name in [*dirs, *files])
        return found

    before = listing()
    proc = start("curate", str(corpus), "--out", str(out), "--backend", engine, "--set", "pipeline1.runs=1", env=env, cwd=cwd)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    new = listing() - before
    assert not new, f"written outside --out: {sorted(new)[:10]}"
    rows = catalog(out / "catalog.duckdb", "select location, field from load_errors order by location")
    assert rows == [(f"{corpus}#line3", "json"), (f"{corpus}#line4", "instance_id"), (f"{corpus}#line5", "instance_id")]
    assert not Path("/tmp/swedeck-escaped").exists() and not (tmp_path.parent / "etc").exists()


ORPHANS = """
import os, subprocess, sys, time
from flows.supervise import _PR_SET_CHILD_SUBREAPER, _prctl, _reap_orphans
assert _prctl(_PR_SET_CHILD_SUBREAPER, 1)
worker = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(); raise SystemExit(3)"], stdin=subprocess.PIPE)
for _ in range(5):  # a sandbox's parent dies and leaves it to us, and it ends (after its parent, which
    # would otherwise reap it on the way out)
    subprocess.run([sys.executable, "-c", "import subprocess; subprocess.Popen(['sleep', '2'])"], check=True)
def state(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[:2]
    except FileNotFoundError:  # a process of the machine's that ended since the listing
        return []
def zombies():
    return [p for p in os.listdir("/proc") if p.isdigit() and state(p) == ["Z", str(os.getpid())]]
deadline = time.monotonic() + 20
while len(zombies()) < 5 and time.monotonic() < deadline:  # the orphans end on their own time
    time.sleep(0.05)
before = len(zombies())
_reap_orphans(worker.pid)
after = len(zombies())
worker.stdin.close()
print(before, after, worker.wait())
"""


def test_regression_orphaned_sandboxes_are_reaped_while_the_run_goes_on() -> None:
    """The supervisor is a subreaper: orphaned sandboxes piled up as zombies (353 in one long curate)
    until the run ended. They are reaped as they come, and the worker's exit status is kept."""
    done = subprocess.run([sys.executable, "-c", ORPHANS], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["5", "0", "3"], done.stderr
