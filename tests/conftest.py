"""Shared fixtures: a per-session cache, both sandbox backends, sample tasks and a patch builder.

Everything a sandbox test needs is installed by ``./install.sh`` (``.ci/run`` runs it, then the suite):
bubblewrap, a Docker engine, and the base root filesystem / ``swedeck-base`` image. When one of them is
missing the tests that need it FAIL with a message saying so; nothing is skipped silently.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from curation.sources import load_source
from data import SAMPLE
from harness.sandboxes.folders import release
from harness.config import Limits, SandboxConfig, Settings
from harness.sandboxes.envs import GIT_IDENTITY, prepare_tree
from harness.records import Task
from harness.sandboxes.backends import get_backend
from harness.sandboxes.sandbox import Backend, EnvError
from probes.pool import release_parked

ROOT = Path(__file__).resolve().parents[1]
LABELS: dict[str, dict] = tomllib.loads((SAMPLE / "labels.toml").read_text())["tasks"]
# the sample tasks whose gold patch is a genuine fix under sound tests (matrixlite only leaks its history)
VALID_IDS = sorted(name for name, label in LABELS.items() if label["label"] in ("valid", "history_leak"))
BACKENDS = ("bwrap", "docker")
INSTALL_HINT = "run ./install.sh as root (`.ci/run` installs everything, then runs the suite)"
# small limits for tests that hit them on purpose: a runaway command ends in seconds, not minutes
TEST_LIMITS = Limits(timeout_s=20, output_bytes=1024 * 1024)


# ----------------------------------------------------------------------------------- session settings


def _default_base_rootfs() -> Path:
    return Path(os.environ.get("SWEDECK_BASE_ROOTFS", f"/var/tmp/swedeck-{os.getuid()}/base-rootfs"))


@pytest.fixture(scope="session", autouse=True)
def swedeck_env() -> Iterator[Settings]:
    """A fresh cache for this session (trees, gold patterns, logs), the machine's existing base rootfs
    (so nothing is rebuilt), and a private Prefect home with analytics off and warnings only."""
    base_rootfs = _default_base_rootfs()
    # not under pytest's tmp_path (mode 0700): bwrap sandboxes run as unprivileged uids that must
    # traverse the cache to bind their tree
    cache = Path(tempfile.mkdtemp(prefix="swedeck-test-", dir="/var/tmp"))
    cache.chmod(0o755)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SWEDECK_CACHE", str(cache))
        mp.setenv("SWEDECK_BASE_ROOTFS", str(base_rootfs))
        mp.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        mp.setenv("PREFECT_HOME", str(cache / "prefect"))
        # INFO lines would land in streams pytest has closed by the time the temporary API server stops
        mp.setenv("PREFECT_LOGGING_LEVEL", "WARNING")
        yield Settings.from_env()
    release_parked()  # idle probe sessions hold sandboxes in this cache
    for sandbox in (cache / "sandboxes").glob("bwrap-*"):  # one a test left open holds tmpfs mounts
        release(sandbox)
    shutil.rmtree(cache, ignore_errors=True)


# ----------------------------------------------------------------------------------- backends


def _require_bwrap(settings: Settings) -> None:
    if shutil.which("bwrap") is None:
        pytest.fail(
            f"bubblewrap (`bwrap`) is not installed: apt-get install bubblewrap, or {INSTALL_HINT}", pytrace=False
        )
    if not (settings.base_rootfs / "usr" / "bin" / "python3").exists():
        pytest.fail(
            f"the base root filesystem is missing at {settings.base_rootfs} (set SWEDECK_BASE_ROOTFS to it if it "
            f"lives elsewhere): build it with `swedeck env base`, or {INSTALL_HINT}",
            pytrace=False,
        )


def _require_docker(settings: Settings) -> None:
    if shutil.which("docker") is None:
        pytest.fail(f"the Docker CLI is not installed: {INSTALL_HINT}", pytrace=False)
    try:
        import docker
        import docker.errors

        client = docker.from_env()
        client.ping()
    except Exception as err:  # the SDK raises several unrelated types for "no engine"
        pytest.fail(f"no Docker engine reachable ({err}): start dockerd, or {INSTALL_HINT}", pytrace=False)
    try:
        client.images.get(settings.base_image)
    except docker.errors.ImageNotFound:
        pytest.fail(
            f"the Docker image {settings.base_image} is missing: build it with `swedeck env base`, or {INSTALL_HINT}",
            pytrace=False,
        )


def make_backend(name: str, settings: Settings, limits: Limits | None = None) -> Backend:
    {"bwrap": _require_bwrap, "docker": _require_docker}[name](settings)
    try:
        return get_backend(SandboxConfig(backend=name, limits=limits or Limits()), settings)
    except EnvError as err:
        pytest.fail(f"the {name} backend is unusable: {err}; {INSTALL_HINT}", pytrace=False)


@pytest.fixture(scope="session")
def bwrap_backend(swedeck_env: Settings) -> Backend:
    return make_backend("bwrap", swedeck_env)


@pytest.fixture(scope="session")
def docker_backend(swedeck_env: Settings) -> Backend:
    return make_backend("docker", swedeck_env)


@pytest.fixture(scope="session")
def backends(bwrap_backend: Backend, docker_backend: Backend) -> dict[str, Backend]:
    return {"bwrap": bwrap_backend, "docker": docker_backend}


def sampled(values: list[str], quick: set[str]) -> list:
    """Parameters where only ``quick`` run in the default tier and the rest are marked slow: the same
    check over every sample task repeats itself, so CI runs a few of each kind and the slow tier all."""
    assert quick <= set(values), quick - set(values)
    return [pytest.param(v, marks=() if v in quick else pytest.mark.slow) for v in values]


BACKEND_PARAMS = [pytest.param("bwrap", marks=pytest.mark.bwrap), pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(params=BACKEND_PARAMS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test that takes it runs once per backend."""
    return request.getfixturevalue(f"{request.param}_backend")


@pytest.fixture(scope="session")
def backend_factory(swedeck_env: Settings) -> Callable[..., Backend]:
    """``backend_factory("docker", Limits(timeout_s=5))``: a backend with its own limits."""
    return lambda name, limits=None: make_backend(name, swedeck_env, limits)


@pytest.fixture(params=BACKEND_PARAMS)
def limited_backend(request: pytest.FixtureRequest, backend_factory: Callable[..., Backend]) -> Backend:
    """Each backend with TEST_LIMITS (20 s per command, 1 MiB of captured output)."""
    return backend_factory(request.param, TEST_LIMITS)


# ----------------------------------------------------------------------------------- sample tasks


@pytest.fixture(scope="session")
def sample_tasks() -> dict[str, Task]:
    result = load_source(SAMPLE)
    assert not result.errors, result.errors
    return {task.instance_id: task for task in result.tasks}


def git(args: list[str], cwd: Path, *, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **GIT_IDENTITY})
    if check and done.returncode:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {done.stderr}")
    return done.stdout


def staged_diff(root: Path, files: Mapping[str, str]) -> str:
    """The diff of writing ``files`` into the git work tree ``root``, which is left as it was."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(["add", "-A"], root)
    out = git(["diff", "--cached", "HEAD"], root)
    git(["reset", "-q", "--hard", "HEAD"], root)
    git(["clean", "-qfd"], root)
    return out


def fresh_listing(backend: Backend, task: Task) -> dict:
    """The harness's own listing (``harness.grading.tree.LISTING``) of a fresh sandbox of ``task``."""
    from harness.grading.tree import LISTING, parse_listing
    from harness.sandboxes.sandbox import IO_DIR

    box = backend.open(task)
    try:
        box.run(f"{LISTING} > {box.output(f'{IO_DIR}/fresh-listing')}")
        return parse_listing(box.read_file(f"{IO_DIR}/fresh-listing"))
    finally:
        box.close()


def swedeck_cli(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    """The ``swedeck`` command in a subprocess, as a user runs it (wide columns: rich wraps nothing)."""
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="200"), timeout=timeout, check=False)  # fmt: skip


def cli_query(run: Path, sql: str) -> list[dict]:
    done = swedeck_cli("query", "--db", str(run), "--json", sql)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


PatchEdits = Mapping[str, "str | bytes | None | Callable[[str], str]"]


@pytest.fixture
def make_patch(tmp_path: Path, swedeck_env: Settings) -> Callable[[Task, PatchEdits], str]:
    """A real unified diff against a task's buggy tree: clone the sealed tree, make the edits
    (path -> new content, None to delete, or a function of the old content), and ``git diff`` it."""
    counter = iter(range(1_000_000))

    def build(task: Task, edits: PatchEdits) -> str:
        work = tmp_path / f"patch-{next(counter)}"
        git(["clone", "-q", str(prepare_tree(task, swedeck_env)), str(work)], tmp_path)
        for path, edit in edits.items():
            target = work / path
            if edit is None:
                target.unlink()
                continue
            if callable(edit):
                edit = edit(target.read_text())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(edit if isinstance(edit, bytes) else edit.encode())
        git(["add", "-A", "--force", "."], work)
        return git(["diff", "--cached", "--no-renames", "--binary", "HEAD"], work)

    return build


# ----------------------------------------------------------------------------------- prefect


@pytest.fixture(scope="session")
def prefect_api(swedeck_env) -> Iterator[str]:  # noqa: ANN001
    """A temporary Prefect API for in-process flows, stopped before pytest closes its output; its URL."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield PREFECT_API_URL.value()


def catalog_rows(db: Path, sql: str) -> list[tuple]:
    """Rows of a query over a run's DuckDB catalog, opened read-only and closed again."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
