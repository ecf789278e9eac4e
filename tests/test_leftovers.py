"""Crash hygiene: what a dead run left (processes, sandbox and scratch folders, run files, partial
result folders, orphaned logs) is swept; what a live run owns is not, whoever started it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curation.store import commit_folder
from flows.hygiene import sweep_run_folder
from harness.sandboxes import leftovers
from harness.config import Settings
from harness.records import Pipeline1Result


def dead_token() -> str:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    token = leftovers.process_token(proc.pid)
    proc.wait()
    assert token is not None and not leftovers.alive(token)
    return token


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", base_rootfs=tmp_path / "rootfs", base_image="x")


def test_a_token_names_one_process_for_its_life() -> None:
    mine = leftovers.process_token(os.getpid())
    assert mine is not None and leftovers.alive(mine)
    namespace, pid, start = mine.split(".")
    assert not leftovers.alive(f"{namespace}.{pid}.{int(start) + 1}")  # the same pid, reused later, is someone else
    assert not leftovers.alive("nonsense") and not leftovers.alive("") and not leftovers.alive(f"{pid}.{start}")


def test_owners_from_another_pid_namespace_are_left_to_it() -> None:
    """Regression (pid namespaces): a supervisor inside a service container is pid 1 there; the host's
    sweep read its token against the host's pid 1, judged it dead and killed the container's run."""
    namespace, pid, start = leftovers.process_token(os.getpid()).split(".")
    other = f"{int(namespace) + 1}.{pid}.{int(start) + 1}"  # no such process here, and not ours to judge
    assert leftovers.alive(other)
    result = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c",
         "from harness.sandboxes import leftovers; import os; t = leftovers.owner(); print(t, leftovers.alive(t))"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    token, verdict = result.stdout.split()
    assert verdict == "True" and token.split(".")[1] == "1" and token.split(".")[0] != namespace
    assert leftovers.alive(token)  # the host sees a well-formed foreign token: it leaves that run alone


def test_the_sweep_removes_dead_owners_things_and_keeps_live_ones(settings: Settings) -> None:
    dead, live = dead_token(), leftovers.owner()
    sandboxes = settings.cache_dir / "sandboxes"
    folders = {
        "bwrap-dead": sandboxes / f"bwrap-{dead}-abc", "docker-dead": sandboxes / f"docker-{dead}-abc",
        "bwrap-live": sandboxes / f"bwrap-{live}-abc", "unowned-new": sandboxes / "bwrap-legacy",
        "unowned-old": sandboxes / "bwrap-ancient", "scratch-dead": leftovers.scratch_dir(settings, dead),
        "scratch-live": leftovers.scratch_dir(settings, live),
    }  # fmt: skip
    for folder in folders.values():
        (folder / "tmp").mkdir(parents=True)
    old = time.time() - leftovers.UNOWNED_IDLE_S - 60
    for path in (folders["unowned-old"], folders["unowned-old"] / "tmp"):
        os.utime(path, (old, old))
    (settings.cache_dir / "runs").mkdir()
    (settings.cache_dir / "runs" / f"{dead}.json").write_text("{}")

    swept = leftovers.sweep(settings)
    gone = {name for name, folder in folders.items() if not folder.exists()}
    assert gone == {"bwrap-dead", "docker-dead", "unowned-old", "scratch-dead"}
    assert not (settings.cache_dir / "runs" / f"{dead}.json").exists() and len(swept.folders) == 5


def test_the_sweep_kills_processes_of_a_dead_run_only(settings: Settings) -> None:
    dead = dead_token()
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    orphan = subprocess.Popen(sleep, env={**os.environ, leftovers.RUN_ENV: dead})
    bystander = subprocess.Popen(sleep, env={**os.environ, leftovers.RUN_ENV: leftovers.owner()})
    try:
        time.sleep(0.3)  # let both exec, so their environment is the one given
        swept = leftovers.sweep(settings)
        assert orphan.wait(timeout=10) == -9 and swept.processes == [orphan.pid]
        assert bystander.poll() is None
    finally:
        orphan.kill()
        bystander.kill()
        bystander.wait()


def test_two_live_runs_never_share_a_run_folder(settings: Settings, tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        token = leftovers.process_token(other.pid)
        assert token is not None
        leftovers.register_run(settings, token, tmp_path / "out")
        with pytest.raises(leftovers.RunConflict, match=f"pid {other.pid}"):
            leftovers.register_run(settings, leftovers.owner(), tmp_path / "out")
        leftovers.register_run(settings, leftovers.owner(), tmp_path / "elsewhere")
        assert leftovers.sweep(settings).folders == []  # a live run's file stays
    finally:
        other.kill()
        other.wait()
    leftovers.register_run(settings, leftovers.owner(), tmp_path / "out")  # the dead run's claim lapsed


def test_the_run_folder_loses_partial_folders_and_orphaned_logs_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for stage in ("p1", "p2"):
        (out / stage / ".task-a.x1y2z3").mkdir(parents=True)  # a commit that never finished
    (out / ".load_errors.q9").mkdir()
    (out / "catalog.duckdb.tmp").write_text("")
    logs = out / "logs" / "task-a"
    logs.mkdir(parents=True)
    (logs / "before.log").write_text("the committed attempt's log")
    past = time.time() - 60
    os.utime(logs / "before.log", (past, past))
    commit_folder(out / "p1" / "task-a", [("result", Pipeline1Result, [])])
    (logs / "after.log").write_text("an attempt killed before it committed")
    later = time.time() + 60
    os.utime(logs / "after.log", (later, later))
    (out / "logs" / "task-b").mkdir()
    (out / "logs" / "task-b" / "x.log").write_text("a task that never committed")

    removed = sweep_run_folder(out)
    assert {p.name for p in removed} == {".task-a.x1y2z3", ".load_errors.q9", "catalog.duckdb.tmp", "after.log", "x.log"}
    assert (logs / "before.log").exists() and (out / "p1" / "task-a" / "result.parquet").exists()
    assert not list(out.rglob(".*"))


def test_regression_strengthening_s_judge_transcript_survives_a_rerun(tmp_path: Path) -> None:
    """A rerun on a run folder swept the judge's strengthening transcripts as orphaned logs: only
    Pipeline 2's verdicts were read for the transcripts they cite. A committed strengthening record
    cites its own now; a transcript nothing committed cites still goes."""
    from harness.records import Strengthening

    out = tmp_path / "out"
    (out / "transcripts").mkdir(parents=True)
    kept, orphan = out / "transcripts" / "task-a-strengthen-1-ab.jsonl", out / "transcripts" / "task-b-strengthen-2-cd.jsonl"
    kept.write_text("{}\n")
    orphan.write_text("{}\n")
    record = Strengthening(config_hash="c", task_hash="t", instance_id="task-a", status="not_repaired", reason="r", survivors=[],
                           killed=[], tests=[], transcript_path=f"elsewhere/{kept.name}")  # fmt: skip
    commit_folder(out / "strengthen" / "task-a", [("strengthening", Strengthening, [record])])
    removed = sweep_run_folder(out)
    assert kept.exists() and [p.name for p in removed] == [orphan.name]


@pytest.mark.docker
def test_a_docker_sandbox_carries_its_owner_and_a_dead_owners_one_is_swept(
    swedeck_env: Settings, sample_tasks, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    import docker.errors
    from conftest import make_backend

    dead = dead_token()
    monkeypatch.setenv(leftovers.RUN_ENV, dead)  # as if a run that has died since had opened it
    backend = make_backend("docker", swedeck_env)  # its own backend: the session's spares stay out of this
    try:
        box = backend.open(sample_tasks["sample__semverlite-1"])
        assert box.container.labels == {"swedeck.cache": leftovers.cache_key(swedeck_env), "swedeck.owner": dead}
        assert box.root.name.startswith(f"docker-{dead}-")
        swept = leftovers.sweep(swedeck_env)
        assert box.container.short_id in swept.containers and box.root in swept.folders and not box.root.exists()
        with pytest.raises(docker.errors.NotFound):
            box.container.reload()
    finally:
        backend.drain()


@pytest.mark.docker
def test_regression_a_container_gone_while_the_sweep_lists_them_hides_none_of_the_others(
    swedeck_env: Settings, sample_tasks, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    """The SDK's containers.list inspects each container after listing them: one removed in between (a
    sandbox closing in the background) raised NotFound and the sweep removed nothing at all."""
    import docker
    from conftest import make_backend

    dead = dead_token()
    monkeypatch.setenv(leftovers.RUN_ENV, dead)
    backend = make_backend("docker", swedeck_env)
    try:
        gone, kept = backend.open(sample_tasks["sample__semverlite-1"]), backend.open(sample_tasks["sample__semverlite-1"])
        gone_id = gone.container.id
        with contextlib.suppress(docker.errors.NotFound):  # the second open may have swept it already
            gone.container.remove(force=True)
        listed = docker.APIClient.containers
        monkeypatch.setattr(
            docker.APIClient, "containers", lambda self, **kw: [{"Id": gone_id, "Labels": {"swedeck.owner": dead}}, *listed(self, **kw)]
        )
        assert kept.container.short_id in leftovers.remove_containers(swedeck_env, lambda token: token == dead)
    finally:
        backend.drain()


@pytest.mark.bwrap
def test_a_bwrap_sandbox_of_a_dead_run_is_released_mounts_and_all(
    swedeck_env: Settings, sample_tasks, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    from conftest import make_backend

    dead = dead_token()
    monkeypatch.setenv(leftovers.RUN_ENV, dead)
    box = make_backend("bwrap", swedeck_env).open(sample_tasks["sample__semverlite-1"])
    assert box.root.name.startswith(f"bwrap-{dead}-")
    assert str(box.root) in Path("/proc/mounts").read_text()  # its tree and /tmp are tmpfs mounts
    assert box.root in leftovers.sweep(swedeck_env).folders
    assert not box.root.exists() and str(box.root) not in Path("/proc/mounts").read_text()


@pytest.mark.bwrap
@pytest.mark.timeout(300)
def test_probe_scratch_in_tmp_a_killed_command_leaves_its_files_under_the_cache(
    swedeck_env: Settings, tmp_path: Path
) -> None:
    """Regression (probe scratch in /tmp): an unsupervised `swedeck probe` made its workspaces with the
    machine's TMPDIR, so a kill left `swedeck-probes-*` folders there that no sweep knew of."""
    careless = tmp_path / "tmp"
    careless.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "probe", "sample__semverlite-1", "--set", "pipeline1.runs=1"],
        env={**os.environ, "TMPDIR": str(careless)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    token = leftovers.process_token(proc.pid)
    assert token is not None
    scratch = leftovers.scratch_dir(swedeck_env, token)
    deadline = time.monotonic() + 240
    while not (scratch.is_dir() and any(scratch.iterdir())) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.kill()  # SIGKILL: nothing of the command's own cleanup runs
    proc.wait()
    assert list(careless.iterdir()) == []
    swept = leftovers.sweep(swedeck_env)
    assert scratch in swept.folders and not scratch.exists()


# A grade in a process of its own that stops at STAGE and waits there to be killed: after the
# sandbox opened, after the patch applied, while the tests run (they sleep), in the post-processing.
KILLED_GRADE = """
import json, sys, threading, time
from harness.grading import grader, handover
from harness.sandboxes import leftovers
from harness.config import SandboxConfig, Settings
from harness.records import Task
from harness.sandboxes.backends import get_backend

stage, backend_name, task_json, patch = sys.argv[1], sys.argv[2], sys.argv[3], open(sys.argv[4]).read()
task = Task.model_validate_json(open(task_json).read())
backend = get_backend(SandboxConfig(backend=backend_name), Settings.from_env())

def stop(name):
    print(f"STAGE {name} {leftovers.owner()}", flush=True)
    threading.Event().wait()

def after(module, attribute, name):
    original = getattr(module, attribute)
    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        if stage == name:
            stop(name)
        return result
    setattr(module, attribute, wrapped)

after(backend, "open", "open")
after(handover.Held, "applied", "apply")  # the held command has applied the patch and waits
if stage == "post":
    grader.command_statuses = lambda *args, **kwargs: stop("post")
if stage == "tests":
    go = handover.Held.go
    def announcing(held, *given):  # the first test command runs in the held command, after 'go'
        threading.Timer(3, lambda: print(f"STAGE tests {leftovers.owner()}", flush=True)).start()
        return go(held, *given)
    handover.Held.go = announcing
grader.grade(task, patch, backend, expected={})
print("STAGE finished", flush=True)
"""


@pytest.mark.parametrize("stage", ["open", "apply", "tests", "post"])
@pytest.mark.parametrize("backend_name", [pytest.param("bwrap", marks=pytest.mark.bwrap),
                                          pytest.param("docker", marks=pytest.mark.docker)])  # fmt: skip
@pytest.mark.timeout(400)
def test_a_grade_killed_at_any_stage_leaves_nothing_once_the_next_grade_opens(
    swedeck_env: Settings, sample_tasks, make_patch, tmp_path: Path, backend_name: str, stage: str  # noqa: ANN001
) -> None:
    """A grade stopped from outside (SIGKILL: none of its own cleanup runs) left its bwrap folder and
    tmpfs mounts, or its containers, until a later run's sweep. The next grade's backend releases
    what dead owners left as it opens a sandbox."""
    from conftest import make_backend

    task = sample_tasks["sample__toposort-1"]
    sleeping = {"toposort/__init__.py": lambda old: old + "\nimport time as _t\n_t.sleep(600)\n"}
    (tmp_path / "task.json").write_text(task.model_dump_json())
    # only the tests stage needs tests that run on: past the command's time limit a grade ends as a
    # timeout and never reaches its post-processing
    (tmp_path / "patch.diff").write_text(make_patch(task, sleeping) if stage == "tests" else task.answer.gold_patch)
    env = {k: v for k, v in os.environ.items() if k != leftovers.RUN_ENV}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_GRADE, stage, backend_name, str(tmp_path / "task.json"), str(tmp_path / "patch.diff")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    line = proc.stdout.readline()
    assert line.startswith(f"STAGE {stage} "), (line, proc.stderr.read() if proc.poll() is not None else "")
    owner = line.split()[2]
    folders = lambda: list((swedeck_env.cache_dir / "sandboxes").glob(f"{backend_name}-{owner}-*"))  # noqa: E731
    assert folders(), "the killed grade had no sandbox folder"
    proc.kill()
    proc.wait()
    assert folders(), "nothing was left to clean up"
    backend = make_backend(backend_name, swedeck_env)  # the next grade's
    backend.open(sample_tasks["sample__toposort-1"]).close()
    assert folders() == []
    mounts = Path("/proc/self/mountinfo").read_text()
    assert owner not in mounts
    if backend_name == "docker":
        import docker

        backend.drain()
        owned = docker.from_env().containers.list(all=True, filters={"label": f"swedeck.owner={owner}"})
        assert owned == []


def test_regression_a_control_group_another_releaser_removed_meanwhile_is_not_an_error(tmp_path: Path) -> None:
    """A sweep beside a close (the test environment's teardown releases every folder while parked
    probe sessions release theirs in the background) can find a group that is gone by the time it
    reads its processes: FileNotFoundError ended the release before its folder's mounts and files."""
    from harness.sandboxes import cgroups

    group = tmp_path / "group"  # exists when checked, no process list by the time it is read
    group.mkdir()
    cgroups.remove([group])
    assert not group.exists()
