"""The grade's held command (``harness.grading.handover``) and the other cost measures of issue 24 that
change what runs: the apply and the tests in one sandbox command, held while the host judges the
change; the named pipe it waits on; bytecode in the base root filesystem; the probe server's files."""

from __future__ import annotations

import base64
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import TEST_LIMITS, fresh_listing
from harness.grading import guard as runtime_guard
from harness.config import Limits, Settings
from harness.grading import grader
from harness.grading.grader import grade, gold_pattern, run_tests
from harness.grading.handover import Held
from harness.sandboxes.sandbox import IO_DIR, io_only

TOPOSORT = "sample__toposort-1"


def test_a_looping_candidate_times_out_at_the_tests_own_limit(limited_backend, backend_factory, sample_tasks, make_patch) -> None:  # noqa: ANN001
    """The held command's timeout is the tests' plus the hold's allowance; the tests themselves get
    their own ``timeout`` of the configured length, and running out of it reads as a timeout."""
    task = sample_tasks[TOPOSORT]
    backend = backend_factory(limited_backend.name, Limits(timeout_s=5, output_bytes=TEST_LIMITS.output_bytes))
    looping = make_patch(task, {"toposort/graph.py": lambda text: text + "\nwhile True:\n    pass\n"})
    started = time.monotonic()
    run = run_tests(task, looping, backend)
    assert run.outcome == "timeout" and run.apply_strategy == "git apply", (run.outcome, run.detail)
    assert time.monotonic() - started < 5 + 30  # not the hold's 120 s on top


def test_nothing_of_a_refused_change_runs(limited_backend, sample_tasks, make_patch, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A change the capability model refuses stops the held command: the tests' script is never
    written, ``go`` never said."""
    task = sample_tasks[TOPOSORT]
    grader.canary_strength(task, limited_backend)  # the canary trial's gold run says go, before the spy
    said = []
    monkeypatch.setattr(Held, "go", lambda self, install, command, env: said.append(command))
    shadow = make_patch(task, {"pytest.py": "raise SystemExit(0)\n"})
    run = run_tests(task, shadow, limited_backend)
    assert run.outcome == "forbidden_change" and said == [], run.detail


def test_a_tasks_fresh_tree_is_listed_once_and_every_later_change_is_still_seen(
    limited_backend, sample_tasks, make_patch, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    """Every fresh sandbox of a task holds the same tree, so only the task's first grade lists it
    before the apply; later grades judge their change against that listing, which equals what any
    fresh sandbox of the task shows, and still refuse what they must."""
    from harness.grading.tree import LISTING
    from harness.grading.trusted import facts_key

    task = sample_tasks[TOPOSORT]
    monkeypatch.setattr(grader, "_PRISTINE", {})
    firsts = []
    hold = Held.__init__

    def spying(self, sandbox, patch, token, **given):  # noqa: ANN001, ANN003, ANN202
        firsts.append(given["first"])
        hold(self, sandbox, patch, token, **given)

    monkeypatch.setattr(Held, "__init__", spying)
    assert run_tests(task, task.answer.gold_patch, limited_backend).outcome == "ok"
    shadow = make_patch(task, {"pytest.py": "raise SystemExit(0)\n"})
    edited = make_patch(task, {"toposort/graph.py": lambda text: text + "\n# edited\n"})
    assert run_tests(task, shadow, limited_backend).outcome == "forbidden_change"
    assert run_tests(task, edited, limited_backend).outcome == "ok"
    # the canary trial, when this process has not run it yet, is one more grade: it lists nothing either
    assert LISTING in firsts[0] and len(firsts) >= 3 and set(firsts[1:]) == {""}
    assert fresh_listing(limited_backend, task) == grader._PRISTINE[facts_key(task, limited_backend)]


# The policy's try at the kept listing: be the task's first grade, so the listing later grades judge
# against comes from its sandbox, and at import (while pytest collects) rewrite the tree around it.
RESHAPING = """
import os as _os, pathlib as _pl
for _p in _pl.Path(".").rglob("*.py"):
    try:
        _p.write_text(_p.read_text() + "\\n")
    except OSError:
        pass
_pl.Path("conftest.py").write_text("import pytest\\n")
_os.utime("toposort/graph.py", (0, 0))
"""


def test_the_first_grade_of_a_task_cannot_shape_the_listing_later_grades_judge_against(
    limited_backend, sample_tasks, make_patch, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    """The listing is taken before the apply, so a candidate that gets the task's first grade, and whose
    code rewrites the tree while its tests run, leaves it as any fresh sandbox shows it; a later
    shadowing change is still refused and gold still earns 1."""
    from harness.grading.trusted import facts_key

    task = sample_tasks[TOPOSORT]
    monkeypatch.setattr(grader, "_PRISTINE", {})
    monkeypatch.setattr(runtime_guard, "ENABLED", False)  # the layer behind the run-time guard
    reshaping = make_patch(task, {"toposort/graph.py": lambda text: text + RESHAPING})
    assert run_tests(task, reshaping, limited_backend).outcome == "ok"
    shadow = make_patch(task, {"pytest.py": "raise SystemExit(0)\n"})
    assert run_tests(task, shadow, limited_backend).outcome == "forbidden_change"
    assert grade(task, task.answer.gold_patch, limited_backend).reward == 1.0
    assert fresh_listing(limited_backend, task) == grader._PRISTINE[facts_key(task, limited_backend)]


def test_regression_a_grader_error_between_apply_and_tests_ends_the_held_command(
    limited_backend, sample_tasks, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    task = sample_tasks[TOPOSORT]

    def broken(*args: object) -> None:
        raise RuntimeError("the audit broke")

    monkeypatch.setattr(grader, "tamper_findings", broken)
    started = time.monotonic()
    run = run_tests(task, task.answer.gold_patch, limited_backend)
    assert run.outcome == "grader_error" and "the audit broke" in run.detail
    assert time.monotonic() - started < 30
    assert not [t for t in threading.enumerate() if t.name == "swedeck-held-grade"]


def test_a_patch_plain_git_apply_refuses_goes_on_through_the_cascade(backend, sample_tasks) -> None:  # noqa: ANN001
    """Wrong hunk counts: the held command's ``git apply`` refuses the patch, so the held command is
    stopped and the cascade goes on in commands of its own, from its second strategy; gold earns 1."""
    task = sample_tasks[TOPOSORT]
    lines = task.answer.gold_patch.splitlines(keepends=True)
    hunk = next(i for i, line in enumerate(lines) if line.startswith("@@"))
    old, new = lines[hunk].split(" @@")[0].split()[1:3]
    lines[hunk] = lines[hunk].replace(f"{old} {new}", f"{old}9 {new}9", 1)
    mangled = "".join(lines)
    expected = gold_pattern(task, backend)
    g = grade(task, mangled, backend, expected=expected)
    run = run_tests(task, mangled, backend)
    assert run.apply_strategy == "git apply --recount --ignore-whitespace", run.detail
    assert g.reward == 1.0, g.reason


def test_a_pipe_wakes_the_command_that_reads_it_and_tells_when_none_does(backend, sample_tasks) -> None:  # noqa: ANN001
    box = backend.open(sample_tasks[TOPOSORT])
    try:
        gate = box.pipe(f"{IO_DIR}/gate-test")
        assert box.tell(gate, "early") is False  # nobody holds it open
        result = {}
        waiting = threading.Thread(target=lambda: result.update(run=box.run(f"exec 9<> {gate}; read -r said <&9; echo got $said")))
        waiting.start()
        deadline = time.monotonic() + 30
        while not box.tell(gate, "go") and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting.join(timeout=30)
        assert result["run"].exit_code == 0 and "got go" in result["run"].output
    finally:
        box.close()


def test_regression_io_paths_cannot_climb_out_of_the_io_folder() -> None:
    assert io_only(f"{IO_DIR}/a/b") == f"{IO_DIR}/a/b"
    for path in (f"{IO_DIR}/../etc/passwd", f"{IO_DIR}/a/../../x", "/tmp/elsewhere", IO_DIR):
        with pytest.raises(ValueError):
            io_only(path)


def test_regression_the_base_rootfs_carries_pytests_bytecode(swedeck_env: Settings) -> None:
    """Sandboxes never write bytecode: without it in the image, every test command compiled pytest again."""
    found = list(swedeck_env.base_rootfs.glob("usr/local/lib/python3*/dist-packages/_pytest/__pycache__/*.pyc"))
    assert len(found) > 20


def _server(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202 - the probe server is a standalone script
    from harness.grading.shipping import PLUGINS

    folder = Path(grader.__file__).parents[2] / "probes"
    # it imports its warm-up module and the preloader's rule from its own folder, where both are shipped
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.syspath_prepend(str(PLUGINS))
    spec = importlib.util.spec_from_file_location("swedeck_session_server", folder / "session_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regression_a_probes_file_never_keeps_the_snapshots_mtime_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytecode the warm-up compiled is checked by whole seconds and size: a probe's file of the same
    size written in the snapshot's second would load the buggy version's bytecode."""
    server = _server(monkeypatch)
    target = tmp_path / "mod.py"
    target.write_text("x = 1\n")
    now = time.time_ns()
    os.utime(target, ns=(now, now))
    listing = server.snapshot(str(tmp_path))
    server.write_files(str(tmp_path), {"mod.py": [0o644, base64.b64encode(b"x = 2\n").decode()]}, listing)
    assert os.stat(target).st_mtime_ns // 10**9 != now // 10**9
    assert target.read_text() == "x = 2\n"


def _forked(body) -> tuple[int, int]:  # noqa: ANN001
    """A child in a process group of its own, as the probe server starts them, running ``body(say)``:
    (its pid, the pipe it may say its exit code on)."""
    said, say = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            body(say)
        finally:
            os._exit(0)
    os.close(say)
    return pid, said


def test_the_probe_server_answers_on_pytests_word_and_leaves_the_exited_child_to_reap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked pytest says its exit code once its reports are written, just before it exits: the
    server answers then, with the child's group killed, instead of waiting for the kernel to take the
    exited process apart; the caller reaps it later. A child that ends without a word (a test that
    called os._exit, a plain command whose exec closed the pipe) is answered by its exit status."""
    server = _server(monkeypatch)
    log = tmp_path / "log"
    log.write_text("")

    def slow_end(say: int) -> None:
        os.write(say, b"3\n")
        time.sleep(60)

    pid, said = _forked(slow_end)
    started = time.monotonic()
    code, timed_out, limited, _, unreaped = server.wait_command(pid, said, str(log), 30, 2**20, started)
    assert (code, timed_out, limited, unreaped) == (3, False, False, pid) and time.monotonic() - started < 10
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL

    def exec_closed(say: int) -> None:
        os.close(say)
        time.sleep(0.2)
        os._exit(5)

    for body, exit_code in ((lambda say: os._exit(4), 4), (exec_closed, 5)):
        pid, said = _forked(body)
        code, timed_out, limited, _, unreaped = server.wait_command(pid, said, str(log), 30, 2**20, time.monotonic())
        assert (code, timed_out, limited, unreaped) == (exit_code, False, False, None)
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already


def test_regression_forked_probes_do_not_import_tomllib_each_run() -> None:
    """Most trees configure pytest in pyproject.toml. The server's warm-up read an ini file, so every
    fork imported tomllib and compiled its patterns again: about 5 ms of each probe's run."""
    from harness.grading.shipping import PLUGINS

    folder = Path(grader.__file__).parents[2] / "probes"
    code = "import sys, session_warmup as w, swedeck_preload as p; p.preload(); w.warm_pytest(); print('tomllib' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(PLUGINS)}  # shipped beside the server, as in a sandbox
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.split()[-1:] == ["True"], done.stdout + done.stderr

# What a patch's code can newly reach: the held command's tests script (bash reads it as it goes, so
# a line appended while pytest runs would run after it) and its gate pipe, both named in the command
# lines of the processes above the tests. The code runs at import, while pytest collects; any step
# that works makes collection fail, so the grade tells.
HELD_ATTACK = '''
import glob as _glob, os as _os
def _held_attack():
    done, found = [], []
    for pid in _os.listdir("/proc"):
        try:
            words = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        except OSError:
            continue
        for word in (w.decode(errors="replace") for w in words):
            if "/tests-" in word and word.endswith(".sh"):
                found.append(word)
                try:
                    with open(word, "a") as script:
                        script.write("\\nexit 0\\n")
                    done.append("appended to " + word)
                except OSError:
                    pass
    for gate in _glob.glob("/tmp/.swedeck-io/gate-*"):
        try:
            fd = _os.open(gate, _os.O_WRONLY | _os.O_NONBLOCK)
            _os.write(fd, b"go\\n")
            _os.close(fd)
            done.append("spoke on " + gate)
        except OSError:
            pass
    if done:
        raise ImportError("held-command attack worked: " + ", ".join(done))
    if CONTROL and found:
        raise ImportError("held-command script found: " + found[0])
_held_attack()
'''
CONTROL = "CONTROL = {}\n"


def test_a_patch_cannot_rewrite_the_held_commands_script_or_speak_on_its_gate(limited_backend, sample_tasks, make_patch, monkeypatch) -> None:  # noqa: ANN001
    """Gold plus the attack earns what gold earns: the script is the host's (read-only to the sandbox
    user) and nobody reads the gate once the tests run."""
    monkeypatch.setattr(runtime_guard, "ENABLED", False)  # the layer behind the run-time guard
    task = sample_tasks[TOPOSORT]
    control = make_patch(task, {"toposort/graph.py": lambda text: text + CONTROL.format(True) + HELD_ATTACK})
    with_gold = make_patch(task, {"toposort/graph.py": lambda text: _gold_file(task) + CONTROL.format(False) + HELD_ATTACK})
    expected = gold_pattern(task, limited_backend)
    # the control shows the attack reaches the script's path (and only that: nothing worked)
    log = Path(run_tests(task, control, limited_backend).log_path).read_text()
    assert "held-command script found: /tmp/.swedeck-io/tests-" in log and "attack worked" not in log
    g = grade(task, with_gold, limited_backend, expected=expected)
    assert g.reward == 1.0, (g.reason, g.detail)
    assert "held-command attack worked" not in Path(g.log_path).read_text()


def _gold_file(task) -> str:  # noqa: ANN001
    """toposort/graph.py as gold leaves it."""
    import subprocess
    import tempfile

    from harness.sandboxes.envs import prepare_tree

    work = Path(tempfile.mkdtemp()) / "gold"
    subprocess.run(["git", "clone", "-q", str(prepare_tree(task, Settings.from_env())), str(work)], check=True)
    subprocess.run(["git", "apply", "-"], cwd=work, input=task.answer.gold_patch, text=True, check=True)
    return (work / "toposort" / "graph.py").read_text()


# ============================================================ the preloaded interpreter (swedeck_preload)

# What the tests' process sees, written on fd 1 once pytest is done with it (its capture holds the fd
# while it collects and runs tests): a non-daemon thread's last word, then the atexit handler's, which
# the interpreter's exit runs in that order. Whether the process's parent is the preloaded interpreter
# tells which way the grade ran it.
SEEN = '''
import atexit as _atexit, json as _json, os as _os, sys as _sys, threading as _threading, time as _time
def _seen():
    with open(f"/proc/{_os.getppid()}/cmdline", "rb") as f:
        parent = f.read()
    main = _sys.modules["__main__"]
    facts = {"path": [p for p in _sys.path if "python3" not in p], "argv0": _sys.argv[0], "cwd": _os.getcwd(),
             "main": main.__spec__.name if main.__spec__ else None, "main_file": getattr(main, "__file__", None),
             "pythonpath": _os.environ.get("PYTHONPATH"), "addopts": _os.environ.get("PYTEST_ADDOPTS", "").split(" --junitxml")[0],
             "preloaded": b"swedeck_preload" in parent}
    _os.write(1, b"\\nSEEN " + _json.dumps(facts).encode() + b"\\n")
def _late():
    _time.sleep(1.5)
    _os.write(1, b"\\nTHREAD-DONE\\n")
_atexit.register(_seen)
_threading.Thread(target=_late).start()
'''


def _seen(run) -> dict:  # noqa: ANN001
    import json

    log = Path(run.log_path).read_text()
    assert log.count("THREAD-DONE") == 1 and log.index("THREAD-DONE") < log.index("SEEN "), log[-2000:]
    return json.loads(log.split("SEEN ", 1)[1].splitlines()[0])


def test_a_preloaded_interpreter_runs_the_tests_as_the_plain_command_does(
    limited_backend, sample_tasks, make_patch, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    """On bwrap a grade's ``python -m pytest`` runs in a fork of an interpreter that imported pytest
    while the patch applied; what the tests see (sys.path, sys.argv, __main__, the environment), the
    statuses, waiting for a non-daemon thread and running atexit handlers at the end are the plain
    command's. Docker runs the plain command (the preload saves nothing there), which this pins too."""
    task = sample_tasks[TOPOSORT]
    patch = make_patch(task, {"toposort/graph.py": lambda text: _gold_file(task) + SEEN})
    preloaded = run_tests(task, patch, limited_backend)
    monkeypatch.setattr(grader, "preload_word", lambda task, sandbox: "")
    plain = run_tests(task, patch, limited_backend)
    assert preloaded.outcome == plain.outcome == "ok", (preloaded.detail, plain.detail)
    assert preloaded.statuses == plain.statuses and preloaded.exit_codes == plain.exit_codes
    seen, plain_seen = _seen(preloaded), _seen(plain)
    assert seen.pop("preloaded") is (limited_backend.name == "bwrap") and plain_seen.pop("preloaded") is False
    assert seen == plain_seen and seen["argv0"].endswith("pytest/__main__.py") and seen["main"] == "pytest.__main__"


def test_a_candidate_that_stops_the_preloaded_interpreter_still_times_out_at_the_limit(
    limited_backend, backend_factory, sample_tasks, make_patch  # noqa: ANN001
) -> None:
    """The tests' deadline is the timeout's, not the preloaded interpreter's: code under test that
    kills it (its parent), leaves the timeout's process group and ignores SIGTERM still ends at the
    tests' limit, as a timeout, not at the held command's allowance on top."""
    task = sample_tasks[TOPOSORT]
    backend = backend_factory(limited_backend.name, Limits(timeout_s=5, output_bytes=TEST_LIMITS.output_bytes))
    attack = """
import os as _os, signal as _signal, time as _time
_killed = 0
for _pid in _os.listdir("/proc"):
    try:
        _words = open(f"/proc/{_pid}/cmdline", "rb").read().split(b"\\0")
        if _words[0].startswith(b"python") and _words[1].endswith(b"swedeck_preload.py") and int(_pid) != _os.getpid():
            _os.kill(int(_pid), _signal.SIGKILL)
            _killed += 1
    except (OSError, ValueError, IndexError):
        pass
if not _killed and _os.path.exists("/tmp/.swedeck-io/plugins/swedeck_preload.py"):
    raise ImportError("the preloaded interpreter was not found")  # the test would not test it
_os.setsid()
_signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
while True:
    _time.sleep(0.1)
"""
    started = time.monotonic()
    run = run_tests(task, make_patch(task, {"toposort/graph.py": lambda text: text + attack}), backend)
    assert run.outcome == "timeout", (run.outcome, run.detail, run.exit_codes)
    assert time.monotonic() - started < 5 + 30


def test_an_early_word_on_the_answer_pipe_only_cuts_the_candidates_own_run_short(limited_backend, sample_tasks, make_patch) -> None:  # noqa: ANN001
    """The tests' process holds the pipe its exit code goes on (fd 7 under the preload). Gold plus a
    forged early ``0`` there ends the command before pytest has reported anything: reward 0."""
    task = sample_tasks[TOPOSORT]
    forged = """
import os as _os
try:
    _os.write(7, b"0\\n")
except OSError:
    pass
"""
    expected = gold_pattern(task, limited_backend)
    g = grade(task, make_patch(task, {"toposort/graph.py": lambda text: _gold_file(task) + forged}), limited_backend, expected=expected)
    assert g.reward == (0.0 if limited_backend.name == "bwrap" else 1.0), (g.reason, g.detail)


def _preloader():  # noqa: ANN202 - a standalone script
    from harness.grading.shipping import PLUGINS

    spec = importlib.util.spec_from_file_location("swedeck_preload_under_test", PLUGINS / "swedeck_preload.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_folder_ahead_that_holds_a_preloaded_modules_name_sends_the_command_to_bash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree that is pluggy, or holds a file named like a standard module pytest imports, would have
    that entry imported by the plain command (the work directory comes first): the preloaded copy
    would be the wrong one, so such a command runs plainly. Only folders the command puts ahead count."""
    preload = _preloader()
    monkeypatch.setattr(preload, "STARTED_WITH", "/env/site")
    monkeypatch.setattr(sys, "path", ["/plugins", "/env/site", "/usr/lib/python3.11"])
    monkeypatch.setenv("PYTHONPATH", "src:/plugins:/env/site")
    assert preload.command_path("/testbed") == ["/testbed", "/testbed/src", "/plugins", "/env/site", "/usr/lib/python3.11"]
    tree = tmp_path / "tree"
    (tree / "src" / "pluggy").mkdir(parents=True)
    (tree / "inspect.py").write_text("")
    (tree / "pluggy-1.0.dist-info").mkdir()
    assert preload.shadows([str(tree)], {"inspect", "pytest"})
    assert preload.shadows([str(tree), str(tree / "src")], {"pluggy"}) and not preload.shadows([str(tree)], {"pluggy"})
    assert not preload.shadows([str(tree), str(tmp_path / "missing")], {"json", "_pytest"})
    (tree / "_speedups.cpython-311-x86_64-linux-gnu.so").write_text("")
    assert preload.shadows([str(tree)], {"_speedups"})


def test_regression_a_pytest_ini_is_no_module_named_pytest(tmp_path: Path) -> None:
    """The rule first took any entry's name up to its first dot, so a tree with a ``pytest.ini`` (or
    ``setup.cfg`` beside a preloaded ``setup``) shadowed pytest, and every probe of such a tree ran as
    a plain command; only suffixes the interpreter imports count."""
    preload = _preloader()
    for name in ("pytest.ini", "tox.ini", "json.txt", "pluggy-1.0.dist-info", "inspect.py.orig"):
        (tmp_path / name).write_text("")
    assert not preload.shadows([str(tmp_path)], {"pytest", "tox", "json", "pluggy", "inspect"})


def test_a_command_whose_tree_shadows_what_the_process_imported_is_not_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grades' preloaded interpreter and the probe server fork pytest from a process that imported
    pytest, its plugins and modules of their own: a tree (or its ``PYTHONPATH=src``) holding an entry
    named like one of those would have that entry imported by the plain command, so such a command is
    not forked. Only folders the command puts ahead of the process's own path count."""
    server = _server(monkeypatch)
    at_start = set(sys.modules) - {"json", "pluggy"}  # as if the process had imported these itself
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "setup.py").write_text("")
    known = [str(tmp_path / "plugins")]
    assert not server.shadowed(str(tree), "", known, at_start)
    (tree / "src" / "pluggy").mkdir()
    assert not server.shadowed(str(tree), "", known, at_start) and server.shadowed(str(tree), "src", known, at_start)
    assert not server.shadowed(str(tree), "src", [*known, str(tree / "src")], at_start)  # not ahead: the process had it
    (tree / "json.py").write_text("")
    assert server.shadowed(str(tree), "", known, at_start)


@pytest.mark.docker
def test_a_docker_spare_is_started_once_the_open_sandboxs_first_command_has_started(swedeck_env: Settings, sample_tasks) -> None:  # noqa: ANN001
    """Each open warms the next sandbox of its task in the background. Started at the open, the
    engine started that container while it started the grade's first exec, the one the grade waits
    on; it now starts once that command has."""
    from conftest import make_backend

    backend = make_backend("docker", swedeck_env)  # its own backend: the session's spares stay out of this
    task = sample_tasks["sample__semverlite-1"]
    try:
        box = backend.open(task)
        try:
            time.sleep(0.5)
            assert not backend._warming and not backend._spares
            assert box.run("echo ran", timeout=30).output.strip() == "ran"
            deadline = time.monotonic() + 60
            while not backend._spares and time.monotonic() < deadline:
                time.sleep(0.1)
            (spare,) = backend._spares.values()
        finally:
            box.close()
        again = backend.open(task)
        assert again is spare
        again.close()
    finally:
        backend.drain()


# The policy's best use of the preload: at collection, before any test has run, forge a complete
# passing run of every test function the test files hold (JUnit report, outcome records, summary),
# then say 0 on the answer pipe so the command ends before pytest writes its own reports. No
# os._exit, which the tamper audit flags: the pipe ends the run without one.
FORGE_AND_ANSWER = '''
import glob as _glob, json as _json, os as _os, re as _re, time as _time
_m = _re.search(r"--junitxml=(\\S+)", _os.environ.get("PYTEST_ADDOPTS", ""))
if _m and not _os.environ.get("_FORGED"):
    _os.environ["_FORGED"] = "1"
    _ids = [f"{_p}::{_n}" for _p in sorted(_glob.glob("tests/test_*.py")) for _n in _re.findall(r"^def (test\\w+)", open(_p).read(), _re.M)]
    with open(_m.group(1), "w") as _f:
        _f.write('<?xml version="1.0"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="%d">' % len(_ids))
        for _id in _ids:
            _path, _name = _id.split("::")
            _f.write('<testcase classname="%s" name="%s" time="0.001"/>' % (_path[:-3].replace("/", "."), _name))
        _f.write("</testsuite></testsuites>")
    with open(_os.environ["SWEDECK_OUTCOME_LOG"], "a") as _f:
        _f.writelines(_json.dumps({"test": _id, "raised": None}) + "\\n" for _id in _ids)
    _os.write(1, "".join(f"PASSED {_id}\\n" for _id in _ids).encode() + b"==== %d passed in 0.01s ====\\n" % len(_ids))
    try:  # the command ends with the answer, and this process with it, before pytest reports
        _os.write(7, b"0\\n")
        _time.sleep(30)
    except OSError:  # no such pipe (docker): pytest's own reports follow
        pass
'''


def test_a_forged_passing_run_answered_early_on_the_preloads_pipe_earns_nothing(limited_backend, sample_tasks, make_patch, monkeypatch) -> None:  # noqa: ANN001
    """The buggy tree plus a forged complete passing run, ended through the answer pipe before pytest
    reports, with no os._exit for the tamper audit to flag. On bwrap the grader reads the forgery, and
    a must-fail canary it reports passed (the forger cannot tell canaries from tests) gives it away;
    on docker fd 7 is no answer pipe and the run ends as a timeout. Reward 0 on both."""
    monkeypatch.setattr(runtime_guard, "ENABLED", False)  # the layer behind the run-time guard
    task = sample_tasks[TOPOSORT]
    expected = gold_pattern(task, limited_backend)
    g = grade(task, make_patch(task, {"toposort/__init__.py": lambda text: text + FORGE_AND_ANSWER}), limited_backend, expected=expected)
    assert g.reward == 0.0, (g.reason, g.detail)
    assert g.reason in ("spoofing_suspected", "pattern_mismatch", "timeout"), (g.reason, g.detail)  # docker: fd 7 is something else
    if limited_backend.name == "bwrap":  # the forged report is what the grader read, and a canary gave it away
        assert g.reason == "spoofing_suspected" and "must fail but was reported PASSED" in g.detail, g.detail
