"""Each isolation property of a sandbox, proven by a test that tries to break it, on both backends.

What the two backends guarantee differs in places, and the tests assert what each one does:

* bwrap: the root is an empty tmpfs per command with the base rootfs's /usr, /etc and /var bound
  read-only, the sealed tree at the workdir and a per-sandbox /tmp; every command is a fresh pid
  namespace, so nothing a command starts outlives it.
* docker: one container per sandbox, run as uid 1000 with ``--network none``, a pids and memory cgroup;
  the image's own /root, /home, ... exist but are the image's, not the host's, and are not writable.
  Processes a command leaves behind (a fork bomb's children) can outlive the command inside the
  container until the sandbox is closed.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import BACKENDS, ROOT, git

from harness.config import Limits, Settings
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import gold_pattern, grade
from harness.records import Status, Task
from harness.sandboxes.sandbox import IO_DIR, Backend, Sandbox, Unreadable

NET_TASK = "sample__toposort-1"
HISTORY_TASK = "sample__matrixlite-1"


@pytest.fixture
def toposort(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks[NET_TASK]


@pytest.fixture
def sandbox(limited_backend: Backend, toposort: Task) -> Iterator[Sandbox]:
    box = limited_backend.open(toposort)
    try:
        yield box
    finally:
        box.close()


# ------------------------------------------------------------------------------------------ network


@pytest.mark.parametrize(
    "probe",
    [
        pytest.param(
            "import socket; s = socket.socket(); s.settimeout(30); s.connect(('1.1.1.1', 80))", id="connect-public-ip"
        ),
        pytest.param(
            "import socket; s = socket.socket(); s.settimeout(30); s.connect(('8.8.8.8', 53))", id="connect-dns-server"
        ),
        pytest.param("import socket; print(socket.getaddrinfo('example.com', 443))", id="dns-resolution"),
        pytest.param(
            "import urllib.request; urllib.request.urlopen('http://example.com', timeout=30)", id="http-by-name"
        ),
    ],
)
def test_no_network_fails_fast(sandbox: Sandbox, probe: str) -> None:
    result = sandbox.run(f'python -c "{probe}"')
    assert result.exit_code not in (0, None), result.output
    assert not result.timed_out
    # the connection is refused at once (no route / no resolver), not left to a 30 s socket timeout
    assert result.duration_s < 5, result
    assert any(word in result.output for word in ("unreachable", "resolution", "Name or service", "URLError")), (
        result.output
    )


def _host_addresses() -> list[str]:
    done = subprocess.run(["hostname", "-I"], capture_output=True, text=True)
    return ["127.0.0.1", *(a for a in done.stdout.split() if "." in a)]


def test_host_services_are_unreachable(sandbox: Sandbox) -> None:
    """A service listening on every host address (loopback, the docker bridge, the host's own IPs)."""
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen()
        port = server.getsockname()[1]
        for address in _host_addresses():
            probe = f"import socket; socket.create_connection(('{address}', {port}), timeout=30)"
            result = sandbox.run(f'python -c "{probe}"')
            assert result.exit_code not in (0, None), f"{address}:{port} reachable: {result.output}"
            assert result.duration_s < 5, result


def test_only_loopback_interface(sandbox: Sandbox) -> None:
    result = sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["lo"]


# ------------------------------------------------------------------------------------------ git history


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory, sample_tasks: dict[str, Task]) -> dict[str, object]:
    """The task's bundle cloned on the host: what the sandbox must NOT show, and what it may."""
    task = sample_tasks[HISTORY_TASK]
    clone = tmp_path_factory.mktemp("bundle") / "repo"
    git(["clone", "-q", task.repo_source.path, str(clone)], clone.parent)
    base = task.repo_source.ref
    fix = git(["rev-parse", "v0.3.1^{commit}"], clone).strip()
    side = git(["rev-parse", "origin/feature/lu-decomposition"], clone).strip()
    ancestors = set(git(["rev-list", base], clone).split())
    every_commit = set(git(["rev-list", "--all"], clone).split())
    base_objects = {line.split()[0] for line in git(["rev-list", "--objects", base], clone).splitlines()}
    all_objects = set(git(["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], clone).split())
    future = every_commit - ancestors
    # the bundle really does hold the leak this test is about
    assert fix in future and side in future and base in ancestors
    assert git(["merge-base", "--is-ancestor", base, fix], clone) == ""
    return {
        "base": base,
        "fix": fix,
        "side": side,
        "ancestors": ancestors,
        "future": future,
        "leaked_objects": all_objects - base_objects,
        "base_objects": base_objects,
    }


@pytest.fixture
def history_box(backend: Backend, sample_tasks: dict[str, Task]) -> Iterator[Sandbox]:
    box = backend.open(sample_tasks[HISTORY_TASK])
    try:
        yield box
    finally:
        box.close()


def _shas_in(text: str, known: set[str]) -> set[str]:
    """Every known sha (or 7-char prefix of one) that occurs in ``text``."""
    return {sha for sha in known if sha in text or sha[:7] in text}


@pytest.mark.parametrize(
    "command",
    [
        "git log --all --oneline --decorate",
        "git log --all --format=%H%n%B",
        "git tag --list",
        "git branch -a -v",
        "git reflog --all",
        "git reflog",
        "git stash list",
        "git remote -v",
        "git fsck --lost-found",
        "git fsck --unreachable --no-reflogs",
        "git fsck --dangling",
        "git for-each-ref",
        "git show-ref",
        "git rev-list --all --reflog",
        "git log --all --grep=Fixes --format=%H",
        "cat .git/packed-refs .git/FETCH_HEAD .git/ORIG_HEAD 2>/dev/null; grep -rs . .git/refs .git/logs",
    ],
)
def test_git_history_is_sealed(history_box: Sandbox, history: dict, command: str) -> None:
    result = history_box.run(command)
    assert not result.timed_out
    leaked = _shas_in(result.output, history["future"])
    assert not leaked, f"`{command}` shows commits newer than the base: {leaked}\n{result.output}"
    for word in ("v0.3.1", "lu-decomposition", "origin", "Fix determinant sign", "Fixes #12"):
        assert word not in result.output, f"`{command}` shows {word!r}:\n{result.output}"


def test_git_log_all_is_ancestors_of_base(history_box: Sandbox, history: dict) -> None:
    result = history_box.run("git log --all --format=%H")
    assert result.exit_code == 0, result.output
    listed = set(result.output.split())
    assert listed <= history["ancestors"]
    assert history["base"] in listed
    head = history_box.run("git rev-parse HEAD")
    assert head.output.strip() == history["base"]


def test_fix_commit_object_is_gone(history_box: Sandbox, history: dict) -> None:
    for sha in (history["fix"], history["side"]):
        for command in (f"git cat-file -p {sha}", f"git show {sha}", f"git cat-file -t {sha[:7]}"):
            result = history_box.run(command)
            assert result.exit_code not in (0, None), f"`{command}` succeeded:\n{result.output}"
    for ref in ("v0.3.1", "v0.3.0", "origin/main", "feature/lu-decomposition"):
        result = history_box.run(f"git rev-parse --verify --quiet {ref}")
        assert result.exit_code != 0, f"{ref} still resolves: {result.output}"


def test_object_store_holds_only_the_base_history(history_box: Sandbox, history: dict) -> None:
    """Not just unreachable: every object of the fix, the side branch and the tags is physically gone."""
    stored = history_box.run("git cat-file --batch-all-objects --batch-check='%(objectname)'")
    assert stored.exit_code == 0, stored.output
    assert set(stored.output.split()) <= history["base_objects"]
    history_box.write_file("/tmp/leaked.txt", "\n".join(sorted(history["leaked_objects"])) + "\n")
    probe = history_box.run("git cat-file --batch-check < /tmp/leaked.txt")
    lines = probe.output.splitlines()
    assert len(lines) == len(history["leaked_objects"]) > 0
    assert all(line.endswith(" missing") for line in lines), probe.output


# ------------------------------------------------------------------------------------------ host paths


def test_host_paths_are_invisible(sandbox: Sandbox, swedeck_env: Settings, limited_backend: Backend) -> None:
    sentinel = swedeck_env.cache_dir / f"host-sentinel-{os.getpid()}"
    sentinel.write_text("host only")
    try:
        host_only = [
            str(sentinel),
            str(swedeck_env.cache_dir / "trees"),
            str(ROOT / "pyproject.toml"),
            str(ROOT / "harness" / "grading" / "grader.py"),
            "/work",
            "/var/run/docker.sock",
            "/run/docker.sock",
            str(swedeck_env.base_rootfs),
        ]
        for path in host_only:
            result = sandbox.run(f"test -e {path}")
            assert result.exit_code == 1, f"{path} is visible inside the {limited_backend.name} sandbox"
        # the host's home and /root: absent under bwrap; under docker the image's own, empty and closed
        for path in ("/root", "/home"):
            listing = sandbox.run(f"ls -A {path}")
            if limited_backend.name == "bwrap":
                assert listing.exit_code != 0, listing.output
            else:
                assert listing.output.strip() in ("", f"ls: cannot open directory '{path}': Permission denied"), (
                    listing.output
                )
        # host processes are not visible: the sandbox has its own pid namespace
        procs = sandbox.run("ls -d /proc/[0-9]* | wc -l")
        assert int(procs.output.strip()) < 20, procs.output
        ours = Path(f"/proc/{os.getpid()}/cmdline").read_bytes()
        inside = sandbox.run(f"cat /proc/{os.getpid()}/cmdline 2>/dev/null | base64 -w0")
        assert base64.b64decode(inside.output.strip()) != ours
    finally:
        sentinel.unlink()


def test_runs_unprivileged(sandbox: Sandbox) -> None:
    result = sandbox.run("id -u")
    assert result.exit_code == 0 and result.output.strip() != "0", result.output


def test_writes_outside_workdir_and_tmp(
    sandbox: Sandbox, limited_backend: Backend, toposort: Task, swedeck_env: Settings
) -> None:
    for path in ("/usr/evil", "/etc/evil", "/var/evil", "/usr/lib/python3/dist-packages/evil.pth", "/etc/passwd"):
        result = sandbox.run(f"echo x >> {path}")
        assert result.exit_code != 0, f"wrote {path} in {limited_backend.name}"
    for path in ("/evil", "/dev/evil", "/home/evil"):
        assert sandbox.run(f"echo x > {path}").exit_code != 0, path
    assert not Path("/evil").exists()
    # the workdir and /tmp are writable and persist between the commands of one sandbox ...
    assert sandbox.run("echo kept > planted.txt && echo kept > /tmp/planted.txt").exit_code == 0
    assert sandbox.run("cat planted.txt /tmp/planted.txt").output.split() == ["kept", "kept"]
    # ... but never reach the cached pristine tree, or a fresh sandbox of the same task
    assert not (prepare_tree(toposort, swedeck_env) / "planted.txt").exists()
    fresh = limited_backend.open(toposort)
    try:
        assert fresh.run("test -e planted.txt || test -e /tmp/planted.txt").exit_code == 1
        assert fresh.run("git status --porcelain").output.strip() == ""
    finally:
        fresh.close()


def test_regression_write_file_folders_belong_to_the_sandbox_user(sandbox: Sandbox) -> None:
    """bwrap's write_file created missing parent folders as root, so the sandboxed command could not add
    or delete files in them (docker's `mkdir -p` runs as the sandbox user): the two backends differed
    for hidden test files written into new folders, and neutralization could not delete planted files
    there."""
    sandbox.write_file("new/deeper/test_planted.py", "x = 1\n")
    sandbox.write_file("/tmp/new/deeper/data.txt", "x\n")
    for folder in ("new/deeper", "/tmp/new/deeper"):
        result = sandbox.run(f"touch {folder}/another && rm {folder}/another && rm -r {folder}")
        assert result.exit_code == 0, result.output
    assert sandbox.run("git status --porcelain --untracked-files=all").output.strip() == ""



def test_io_folder_symlinks_never_lead_the_host_out(sandbox: Sandbox, tmp_path: Path) -> None:
    """The IO folder is the host's on both backends: code under test can write only the files reserved
    for it, so it plants no symlink there. One planted in the tree must not make the harness read or
    write a host file through it."""
    secret = tmp_path / "host-secret"
    secret.write_text("host only\n")
    planted = sandbox.run(f"mkdir -p {IO_DIR} && ln -s {secret} {IO_DIR}/report.xml && ln -s / {IO_DIR}/root")
    assert planted.exit_code != 0 and "Permission denied" in planted.output, planted.output
    if sandbox.backend == "bwrap":  # the tree is a host folder too there
        assert sandbox.run(f"ln -s {secret} report.xml && ln -s / root").exit_code == 0
        with pytest.raises(ValueError, match="escapes"):
            sandbox.read_file("report.xml")
        with pytest.raises(ValueError, match="escapes"):
            sandbox.write_file(f"root{secret}", "overwritten\n")
    assert secret.read_text() == "host only\n"
    sandbox.write_file(f"{IO_DIR}/plain.txt", "in\n")
    assert sandbox.run(f"cat {IO_DIR}/plain.txt").output == "in\n"
    assert sandbox.read_file(f"{IO_DIR}/plain.txt") == b"in\n"


@pytest.mark.parametrize("name", ["docker", "bwrap"])
def test_regression_docker_io_folder_is_not_an_unbounded_host_folder(
    name: str, backend_factory: Callable[..., Backend], toposort: Task
) -> None:
    """Docker's IO folder is a bind mount of a host folder, which no tmpfs bounds: the sandbox user
    could fill the host's disk there (it owned the folder). On bwrap it lay in /tmp, the sandbox
    user's, where code under test put a named pipe in place of a report and the host's read of it
    blocked for ever. Now, on both, it writes only the files reserved for it, each held to the
    per-file limit, and cannot swap one for a link, a folder or a pipe."""
    limits = SMALL.model_copy(update={"file_bytes": 4 * 2**20})
    box = backend_factory(name, limits).open(toposort)
    try:
        report = box.output(f"{IO_DIR}/report.xml")
        assert box.run(f"echo '<testsuite/>' > {report}").exit_code == 0
        assert box.read_file(report) == b"<testsuite/>\n"
        big = box.run(f"head -c 8388608 /dev/zero > {report}")
        assert big.exit_code != 0 and "File size limit exceeded" in big.output, big.output
        # a folder the host made there (probe sessions, plugins): the host maps IO paths to its own
        # without resolving links (sandbox.io_target), so no link may appear in one either
        box.write_file(f"{IO_DIR}/host-made/inner.txt", "x\n")
        inner = f"{IO_DIR}/host-made/inner.txt"
        for attack in (f"rm -f {report}", f"mv {report} {IO_DIR}/moved", f"ln -sf / {report}", f"mkdir {IO_DIR}/sub",
                       f"mkfifo {IO_DIR}/pipe", f"mv {IO_DIR} /tmp/moved", f"rmdir {IO_DIR}", f"ln -s / {IO_DIR}/host-made/link",
                       f"mv {inner} {IO_DIR}/host-made/moved", f"rm -f {inner}", f"ln -sf / {inner}"):
            done = box.run(attack)
            refused = ("Permission denied", "busy", "not permitted")
            assert done.exit_code != 0 and any(w in done.output for w in refused), (attack, done.output)
        assert len(box.read_file(report)) <= limits.file_bytes and box.read_file(inner) == b"x\n"
        with pytest.raises(ValueError, match="IO folder"):
            box.output("/tmp/elsewhere")
    finally:
        box.close()


@pytest.mark.timeout(120)
def test_reading_a_file_never_blocks_and_checks_type_and_size(sandbox: Sandbox) -> None:
    """What the host reads from a sandbox is a regular file of bounded size, checked before the read:
    a named pipe (whose read would wait for a writer for ever), a folder or a file over the bound is
    refused at once."""
    report = sandbox.output(f"{IO_DIR}/report.xml")
    assert sandbox.run(f"mkfifo pipe && mkdir folder && head -c 2097152 /dev/zero | tee big > {report}").exit_code == 0
    for path in ("pipe", "folder"):
        with pytest.raises(OSError):
            sandbox.read_file(path)
    for path in ("big", report):
        with pytest.raises(Unreadable, match="more than"):
            sandbox.read_file(path, limit=2**20)
        assert len(sandbox.read_file(path, limit=2 * 2**20)) == 2 * 2**20


# ------------------------------------------------------------------------------------------ limits


@pytest.mark.parametrize("name", BACKENDS)
def test_regression_file_limit_is_file_bytes_not_twice_it(
    name: str, backend_factory: Callable[..., Backend], toposort: Task
) -> None:
    """`ulimit -f` was given file_bytes / 512, but bash counts it in KiB: every file could grow to twice
    Limits.file_bytes."""
    box = backend_factory(name, SMALL.model_copy(update={"file_bytes": 2**20})).open(toposort)
    try:
        assert box.run("head -c 1048576 /dev/zero > /tmp/at-limit").exit_code == 0
        over = box.run("head -c 1048577 /dev/zero > /tmp/over-limit")
        assert over.exit_code != 0 and "File size limit exceeded" in over.output, over.output
    finally:
        box.close()


def _bwrap_leftovers(box: Sandbox) -> list[str]:
    uid = getattr(box, "uid", None)
    done = subprocess.run(["ps", "-u", str(uid), "-o", "pid=,comm="], capture_output=True, text=True)
    return done.stdout.splitlines()


def _wait_until(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def test_sleep_forever_times_out(sandbox: Sandbox) -> None:
    started = time.monotonic()
    result = sandbox.run("sleep infinity", timeout=3)
    assert result.timed_out and result.exit_code is None
    assert not result.output_limited
    assert time.monotonic() - started < 3 + 8
    assert sandbox.run("echo ok").output.strip() == "ok"


def test_silent_child_holding_stdout_times_out(sandbox: Sandbox) -> None:
    """A command that exits but leaves a background child holding stdout open still ends."""
    started = time.monotonic()
    result = sandbox.run("(sleep 1000 &) ; echo started", timeout=3)
    assert time.monotonic() - started < 3 + 15
    assert "started" in result.output


def test_regression_escaped_silent_child_holding_stdout_times_out(sandbox: Sandbox) -> None:
    """A child in a session of its own (out of reach of timeout(1)'s process group) that holds stdout
    and never prints: on docker the exec stream never closed and the command hung forever."""
    started = time.monotonic()
    result = sandbox.run("setsid sleep 1000 & echo started", timeout=3)
    assert time.monotonic() - started < 3 + 20
    assert "started" in result.output
    assert sandbox.run("echo ok", timeout=10).output.strip() == "ok"


def test_a_process_named_like_a_zombie_is_still_reaped(sandbox: Sandbox) -> None:
    """Docker's reaping reads each process's state from /proc/PID/stat with the shell's own ``read``;
    a process's name is its own to choose, and one named ``x) Z y`` would read as a zombie to a parse
    that took the first ") ". It is killed like any other left behind (bwrap: with the command's pid
    namespace)."""
    named = "open('/proc/self/comm', 'w').write('x) Z y'); import time; time.sleep(1000)"
    left = f'python -c "{named}" & sleep 0.5; cat /proc/$!/comm'
    assert sandbox.run(left, timeout=10, reap=True).output.strip() == "x) Z y"
    survivors = "for d in /proc/[0-9]*; do grep -qs 'x) Z y' $d/comm && echo alive; done; echo checked"
    assert sandbox.run(survivors, timeout=10).output.split() == ["checked"]


@pytest.mark.parametrize("name", BACKENDS)
def test_regression_full_tmp_does_not_disarm_the_timeout(
    name: str, backend_factory: Callable[..., Backend], toposort: Task
) -> None:
    """On docker each command wrote its process group's id to /tmp for the watchdog: with /tmp filled by
    an earlier command that write failed (the CI failure `echo: write error: No space left on device`),
    and a command that then hung could not be killed. /tmp full, the next command still times out."""
    box = backend_factory(name, SMALL).open(toposort)
    try:
        box.run(FILL.format(d="/tmp"))
        started = time.monotonic()
        result = box.run("setsid sleep 1000 & echo started", timeout=3)
        assert time.monotonic() - started < 3 + 20
        assert "write error" not in result.output, result.output
        assert box.run("rm -f /tmp/fill*; echo ok").output.strip() == "ok"
    finally:
        box.close()


def test_print_a_gigabyte_is_cut(sandbox: Sandbox) -> None:
    for command in (
        "yes | head -c 1000000000",
        "python -c \"import sys\nwhile True: sys.stdout.write('x' * 65536)\"",
    ):
        started = time.monotonic()
        result = sandbox.run(command)
        assert result.output_limited and result.exit_code is None, result
        assert not result.timed_out
        assert time.monotonic() - started < 10
        assert 0 < Path(result.log_path).stat().st_size <= sandbox.limits.output_bytes
        assert len(result.output) < 20_000  # the display is head + tail, not the whole log
    assert sandbox.run("echo ok").output.strip() == "ok"


def test_allocating_4gb_fails(sandbox: Sandbox) -> None:
    assert sandbox.limits.memory_mb < 4096
    for command in (
        'python -c "b = bytearray(4 * 1024 ** 3); print(len(b))"',
        # touched page by page, so lazy allocation cannot fake success
        "python -c \"chunks = [b'x' * (256 * 1024 ** 2) for _ in range(16)]; print(len(chunks))\"",
    ):
        result = sandbox.run(command)
        assert not result.timed_out
        assert result.exit_code != 0
        assert "MemoryError" in result.output or result.exit_code == 137, result.output
        assert result.duration_s < 30  # a few seconds; generous for a loaded machine
    assert sandbox.run("echo ok").output.strip() == "ok"


def test_tmp_is_size_capped(sandbox: Sandbox) -> None:
    """/tmp is a tmpfs of Limits.tmp_mb on both backends (bwrap: mounted by the host, so it outlives
    each command)."""
    assert sandbox.limits.tmp_mb == 512
    files = " ".join(f"/tmp/fill{i}" for i in range(6))  # 6 x 100 MiB, each under the per-file limit
    result = sandbox.run(f"for f in {files}; do head -c 104857600 /dev/zero > $f || exit 1; done")
    assert result.exit_code != 0 and "No space left on device" in result.output, "600 MiB written to /tmp"
    # a full /tmp can be cleaned up, and works again
    assert sandbox.run(f"rm -f {files}").exit_code == 0
    assert sandbox.run("head -c 1048576 /dev/zero > /tmp/small && echo ok").output.strip() == "ok"


# Small limits, so that filling each writable place takes a second: 8 files of 16 MiB (each under the
# per-file limit) are more than any of them may hold.
SMALL = Limits(timeout_s=60, tmp_mb=48, tree_mb=48, shm_mb=16, memory_mb=512)
FILL = "mkdir -p {d} && for i in 1 2 3 4 5 6 7 8; do head -c 16777216 /dev/zero > {d}/fill$i || exit 1; done"


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("place", [".", "deep/inside/the/tree", "/tmp", "/var/tmp", "/run/lock", "/dev/shm", "/", "/dev", IO_DIR])
def test_every_writable_place_is_bounded(
    name: str, place: str, backend_factory: Callable[..., Backend], toposort: Task
) -> None:
    """Wherever a command can write (the tree, /tmp, /var/tmp, /run/lock, /dev/shm), the kernel holds
    it to a size: 128 MiB written there fails with ENOSPC; elsewhere the file system is read-only or
    not the sandbox user's."""
    box = backend_factory(name, SMALL).open(toposort)
    try:
        result = box.run(FILL.format(d=place))
        assert result.exit_code != 0, f"128 MiB written to {place} on {name}"
        assert any(why in result.output for why in ("No space left", "Read-only file system", "Permission denied")), result.output
        # what was written still counts, and can be removed again
        assert box.run(f"rm -f {place}/fill*; echo ok").output.strip().endswith("ok")
    finally:
        box.close()


@pytest.mark.parametrize("name", BACKENDS)
def test_memory_is_bounded_for_the_sandbox_as_a_whole(
    name: str, backend_factory: Callable[..., Backend], toposort: Task
) -> None:
    """Two processes of 320 MiB each fit under a per-process limit of 512 MiB, but not together: the
    sandbox's control group (bwrap) or the container's (docker) bounds their sum."""
    box = backend_factory(name, SMALL).open(toposort)
    hold = "python -c \"import time; b = [b'x' * (32 * 1024 ** 2) for _ in range(10)]; time.sleep(3); print('held')\""
    try:
        alone = box.run(hold)
        assert alone.exit_code == 0 and "held" in alone.output, alone.output
        both = box.run(f"({hold}) & ({hold}) & wait -n; a=$?; wait -n; b=$?; echo codes $a $b")
        codes = both.output.split("codes")[-1].split()
        assert codes != ["0", "0"] and both.output.splitlines().count("held") < 2, both.output
    finally:
        box.close()


def test_fork_bomb_ends_with_a_recorded_outcome(
    limited_backend: Backend, toposort: Task, backend_factory: Callable[..., Backend]
) -> None:
    box = limited_backend.open(toposort)
    try:
        started = time.monotonic()
        # the parent stays alive, so only the limits can end this command
        result = box.run("bomb() { bomb | bomb & }; bomb; sleep infinity", timeout=6)
        assert time.monotonic() - started < 6 + 15
        assert result.timed_out and result.exit_code is None, result
        # the host is fine: it can still start processes
        assert subprocess.run(["true"]).returncode == 0
        if limited_backend.name == "bwrap":
            # the command's pid namespace died with it: nothing of the sandbox's uid runs on the host
            assert _wait_until(lambda: not _bwrap_leftovers(box), 10), _bwrap_leftovers(box)
            answer = box.run("echo ok; ls -d /proc/[0-9]* | wc -l")
            assert answer.exit_code == 0 and answer.output.split()[0] == "ok", answer.output
            assert int(answer.output.split()[1]) < 10
        else:
            # the pids cgroup bounds the bomb; its children may outlive the command in the container
            processes = box.container.top()["Processes"]
            assert len(processes) <= limited_backend.config.limits.processes
            container_id = box.container.id
    finally:
        box.close()
    if limited_backend.name == "docker":
        import docker.errors

        def gone() -> bool:
            try:
                limited_backend.client.containers.get(container_id)
            except docker.errors.NotFound:
                return True
            return False

        # closing removes the container (in the background) and every leftover with it
        assert _wait_until(gone, 30)
    fresh = limited_backend.open(toposort)
    try:
        assert fresh.run("echo ok").output.strip() == "ok"
    finally:
        fresh.close()


# ------------------------------------------------------------------------------------------ through the grader


@pytest.fixture
def grader_backend(request: pytest.FixtureRequest, backend_factory: Callable[..., Backend]) -> Backend:
    name, timeout_s = request.param
    return backend_factory(name, Limits(timeout_s=timeout_s, output_bytes=1024 * 1024))


SIGNATURE = "    def add_dependency(self, node: Hashable, dependency: Hashable) -> None:\n"


def _in_add_dependency(body: str) -> Callable[[str], str]:
    """An edit of toposort/graph.py that runs ``body`` first thing in add_dependency (every test calls it)."""
    indented = "".join(f"        {line}\n" for line in body.strip("\n").splitlines())
    return lambda source: source.replace(SIGNATURE, SIGNATURE + indented)


HANG = _in_add_dependency("import time\ntime.sleep(10 ** 6)")
# pytest captures fds 1 and 2 into a temp file during a test, so a test that floods the log writes to
# the pipe the runner's real output goes to (its saved copy of fd 1), found by trying descriptors
# (listing /proc/self/fd is what the run-time guard stops as tampering)
FLOOD_REAL_STDOUT = _in_add_dependency(
    """
import os, stat
for fd in range(3, 64):
    try:
        is_pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        continue
    if is_pipe:
        for _ in range(16_000):  # 1 GiB
            os.write(fd, b"y" * 65536)
"""
)
# the same gigabyte printed after pytest has given its fds back
FLOOD_AT_EXIT = _in_add_dependency(
    """
import atexit, os
atexit.register(lambda: [os.write(1, b"y" * 65536) for _ in range(16_000)])
"""
)
# a plain print() of 1 GiB inside a test only reaches pytest's capture file (in /tmp), a tmpfs of
# Limits.tmp_mb, which fills first: pytest itself fails and no statuses are reported. Reward 0, recorded
# as tamper_suspected: the session died before the run-time guard sealed its reports, and the guard
# fails closed (a session it cannot vouch for is not told apart from one whose guard was cut off).
FLOOD_CAPTURED = _in_add_dependency("for _ in range(16_000):\n    print('y' * 65535)")


@pytest.mark.parametrize(
    ("grader_backend", "edit", "reason"),
    [
        pytest.param((name, timeout_s), edit, reason, marks=getattr(pytest.mark, name), id=f"{name}-{label}")
        for name in ("bwrap", "docker")
        for label, edit, reason, timeout_s in (
            ("sleep-forever", HANG, "timeout", 6),
            ("print-1gb-to-real-stdout", FLOOD_REAL_STDOUT, "output_limit", 6),
            ("print-1gb-at-exit", FLOOD_AT_EXIT, "output_limit", 6),
            # writes 512 MiB to the capture file first: seconds on a loaded machine
            ("print-1gb-captured", FLOOD_CAPTURED, "tamper_suspected", 60),
        )
    ],
    indirect=["grader_backend"],
)
def test_grader_records_runaway_tests(
    grader_backend: Backend,
    backend_factory: Callable[..., Backend],
    toposort: Task,
    make_patch: Callable,
    edit: Callable[[str], str],
    reason: str,
) -> None:
    patch = make_patch(toposort, {"toposort/graph.py": edit})
    assert "add_dependency" in patch
    expected = gold_pattern(toposort, backend_factory(grader_backend.name))  # under the default limits
    started = time.monotonic()
    result = grade(toposort, patch, grader_backend, expected=expected)
    assert result.reward == 0 and result.reason == reason, result
    assert time.monotonic() - started < 90
    if reason == "pattern_mismatch":  # every test calling add_dependency failed; the run itself ended normally
        assert result.statuses and Status.PASSED not in {result.statuses[t] for t in result.differing}
    else:
        assert result.statuses == {}
    if reason == "output_limit":
        assert Path(result.log_path).stat().st_size <= grader_backend.config.limits.output_bytes


@pytest.mark.bwrap
def test_regression_bwrap_root_tmpfs_cannot_eat_host_memory(bwrap_backend: Backend, toposort: Task) -> None:
    # the sandbox's / was an unbounded tmpfs: 2.9 GB written there sat in host RAM; it is read-only now
    box = bwrap_backend.open(toposort)
    try:
        result = box.run("head -c 104857600 /dev/zero > /fill0")
        assert result.exit_code != 0 and "Read-only file system" in result.output, result.output
    finally:
        box.close()


def test_regression_tmp_files_round_trip_on_docker_tmpfs(sandbox: Sandbox) -> None:
    """Docker's /tmp became a sized tmpfs, which the engine's archive copy cannot see into: files the
    harness writes or reads there must still go both ways."""
    sandbox.write_file("/tmp/deep/er/note.txt", b"\x00binary\xff")
    assert sandbox.run("cat /tmp/deep/er/note.txt | wc -c").output.strip() == "8"
    sandbox.run("printf made-inside > /tmp/inside.txt")
    assert sandbox.read_file("/tmp/inside.txt") == b"made-inside"
    with pytest.raises(FileNotFoundError):
        sandbox.read_file("/tmp/missing.txt")
