"""The run-time guard's plugin (harness/grading/plugins/swedeck_guard.py) in a real pytest session on
this machine's interpreter, and the host's reading of its log (harness.grading.guard): what the changed
files may do (the standard library's honest uses on their behalf, the tests' own acts), what ends the
run, and seals the host rejects. The attacks through the grader on both backends are in
test_grader_attacks_runtime.py."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.grading import guard
from harness.grading.shipping import PLUGINS

KEY = "k" * 32
TEST = """
from pkg import act

def test_act():
    assert act() == 1
"""


def session(tmp_path: Path, code: str, test: str = TEST, lines: dict[str, list[int]] | None = None) -> tuple[list[str], int]:
    """Run pytest with the guard over a package whose changed ``pkg/__init__.py`` defines ``act()``
    running ``code``; the guard's findings as the host reads them, and pytest's exit."""
    root, io = tmp_path / "tree", tmp_path / "io"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    io.mkdir()
    (root / "pkg" / "__init__.py").write_text("def act():\n" + textwrap.indent(textwrap.dedent(code), "    ") + "\n    return 1\n")
    (root / "pkg" / "data.txt").write_text("x = 1\n")
    (root / "tests" / "test_act.py").write_text(test)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    job, log, junit, outcomes = io / "guard.json", io / "guard.log", io / "junit.xml", io / "outcomes.jsonl"
    for path in (log, junit, outcomes):
        path.write_bytes(b"")
    job.write_text(json.dumps({"root": str(root), "changed": ["pkg/__init__.py", "pkg/data.txt"], "lines": lines or {}, "protected": ["tests/test_act.py"],
                               "log": str(log), "junit": str(junit), "outcomes": str(outcomes)}))  # fmt: skip
    env = {**os.environ, "SWEDECK_GUARD": str(job), "SWEDECK_GUARD_KEY": KEY, "PYTHONPATH": str(PLUGINS),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "SWEDECK_OUTCOME_LOG": str(outcomes)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", guard.PLUGIN, "-p", "swedeck_outcomes", "-p", "no:cacheprovider", "-q", f"--junitxml={junit}", "tests"],
        # a session of its own, as a sandbox's command has: the processes other tests start meanwhile
        # in the test runner's session are no processes this run started
        cwd=root, env=env, capture_output=True, text=True, timeout=120, start_new_session=True,
    )  # fmt: skip
    found = guard.findings(log.read_bytes(), KEY, [junit.read_bytes(), outcomes.read_bytes()], done.returncode, ran=bool(junit.read_bytes()))
    return found, done.returncode


HONEST = {
    "namedtuple": "import collections\ncollections.namedtuple('P', 'x y')(1, 2)",
    "typing": "import typing\ntyping.NamedTuple('N', [('a', int)]); typing.TypeVar('T'); typing.NewType('U', int)",
    "enum": "import enum\nenum.Enum('Color', 'RED GREEN')",
    "dataclass": "import dataclasses\ndataclasses.make_dataclass('D', [('x', int)])(1)",
    "logging": "import logging\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    logging.getLogger('pkg').exception('failed')",
    "warnings": "import warnings\nwarnings.warn('old', DeprecationWarning, stacklevel=2)",
    "traceback": "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.format_exc()",
    "wraps": "import functools\nfunctools.wraps(len)(lambda x: x)",
    "inspect-signature": "import inspect\ninspect.signature(act)",
    "data-file": "import os\nopen(os.path.join(os.path.dirname(__file__), 'data.txt')).read()",
    "thread": "import threading\nt = threading.Thread(target=lambda: None)\nt.start()\nt.join()",
    "own-class": "class A:\n    pass\nA.x = 1\nact.cached = 2",
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_the_standard_librarys_honest_uses_for_the_changed_code_are_sealed(tmp_path: Path, name: str) -> None:
    assert session(tmp_path, HONEST[name]) == ([], 0)


ACTS = {
    "getframe": ("import sys\nsys._getframe(1)", "sys._getframe"),
    "currentframe-via-logging": ("import logging\nlogging.currentframe()", "through logging"),
    "inspect-stack": ("import inspect\ninspect.stack()", "through inspect"),
    "tb-frame": ("import sys\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    sys.exc_info()[2].tb_frame", "tb_frame"),
    "walk-tb": ("import sys, traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    list(traceback.walk_tb(sys.exc_info()[2]))", "tb_frame"),
    "current-frames": ("import sys\nsys._current_frames()", "sys._current_frames"),
    "gc": ("import gc\ngc.get_referrers(act)", "gc.get_referrers"),
    "settrace": ("import sys\nsys.settrace(None)", "sys.settrace"),
    "audit-hook": ("import sys\nsys.addaudithook(lambda *a: None)", "sys.addaudithook"),
    "eval": ("eval('1 + 1')", "compiles code"),
    "runpy-txt": ("import os, runpy\nrunpy.run_path(os.path.join(os.path.dirname(__file__), 'data.txt'))", "compiles code from"),
    "code-object": ("act.__code__.replace(co_name='x')", "code.__new__"),
    "code-swap": ("import json\njson.dumps.__code__ = json.loads.__code__", "sets __code__"),
    "marshal": ("import marshal\nmarshal.loads(marshal.dumps(act.__code__))", "marshal.loads"),
    "ctypes": ("import ctypes\nctypes.CDLL(None)", "ctypes.dlopen"),
    "spawn": ("import subprocess\nsubprocess.run(['true'])", "subprocess.Popen"),
    "read-test": ("open('tests/test_act.py').read()", "a hidden test file"),
    "read-test-linecache": ("import linecache\nlinecache.getline('tests/test_act.py', 1)", "a hidden test file"),
    "read-test-link": ("import os, tempfile\nd = tempfile.mkdtemp()\nos.symlink(os.path.abspath('tests'), d + '/t')\nopen(d + '/t/test_act.py').read()", "a hidden test file"),
    "git": ("open('.git/HEAD').read()", "git objects"),
    "io": ("import os, json\nos.listdir(os.path.dirname(os.environ['SWEDECK_GUARD']))", "IO folder"),
    "proc-environ": ("open('/proc/self/environ', 'rb').read()", "environment"),
    # regression: a thread's own /proc entry holds the process's starting environment, guard key included
    "proc-thread-environ": ("open('/proc/thread-self/environ', 'rb').read()", "environment"),
    "proc-task-environ": ("import os\nopen(f'/proc/self/task/{os.getpid()}/environ', 'rb').read()", "environment"),
    "replace-runner": ("import _pytest.runner\n_pytest.runner.call_and_report = lambda *a, **k: None", "was replaced"),
    "replace-stdlib": ("import json\njson.dumps = lambda *a, **k: '{}'", "json.dumps was replaced"),
    "trace-hook": ("import threading\nthreading.settrace(lambda *a: None)", "trace or profile"),
    "daemon": ("import os, time\nif os.fork() == 0:\n    time.sleep(5)\n    os._exit(0)", "os.fork"),
    "exit": ("import os\nos._exit(0)", "without the run-time guard's seal"),
}


@pytest.mark.parametrize("name", sorted(ACTS))
def test_what_no_library_needs_ends_the_run(tmp_path: Path, name: str) -> None:
    code, evidence = ACTS[name]
    found, _ = session(tmp_path, code)
    assert found and any(evidence in f for f in found), found


def test_the_tests_own_acts_are_not_judged(tmp_path: Path) -> None:
    test = TEST + textwrap.dedent("""
        import gc, os, sys

        def test_introspects(monkeypatch):
            sys._getframe(0)
            gc.get_objects()
            monkeypatch.setattr(os, "getcwd", lambda: "/")
            open(__file__).read()
    """)
    assert session(tmp_path, "", test) == ([], 0)


def test_a_modified_files_pristine_lines_are_the_trees_own(tmp_path: Path) -> None:
    """A library's deprecation helper reading its caller's frame on a line the change did not add
    (python-semver's ``deprecated``) is the tree's code; the same call on an added line is the change's."""
    code = "import inspect\nframe = inspect.currentframe().f_back"  # lines 2 and 3 of pkg/__init__.py
    assert session(tmp_path / "pristine", code, lines={"pkg/__init__.py": [4]}) == ([], 0)
    found, _ = session(tmp_path / "added", code, lines={"pkg/__init__.py": [3]})
    assert found == ["pkg/__init__.py:3: walks the stack's frames (sys._getframe through inspect)"]


def test_the_lines_a_change_added_are_read_from_the_file_wherever_the_apply_put_them() -> None:
    """Numbered as the file reads after the change, by their text: a hunk applied at an offset from
    its header (which git apply and patch do without a word) still has its lines found."""
    after = b"a\nB\nC\nc\n" + b"".join(b"pad %d\n" % i for i in range(20)) + b"x\ny\nz\n"
    added = {"B", "C", "y"}
    assert guard._added_lines("m.py", after, added) == [2, 3, 26]
    assert guard._added_lines("m.py", None, added) is None and guard._added_lines("m.txt", after, added) is None  # every line counts


def test_the_changed_files_lines_are_named(tmp_path: Path) -> None:
    found, code = session(tmp_path, "import gc\ngc.get_objects()")
    assert code == guard.EXIT
    assert found == ["pkg/__init__.py:3: gc.get_objects"]


def _log(*lines: str) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def _seal(reports: list[bytes], key: str = KEY) -> str:
    digests = " ".join(hashlib.sha256(r).hexdigest() for r in reports)
    return f"SEAL {hmac.new(key.encode(), f'seal {digests}'.encode(), hashlib.sha256).hexdigest()} {digests}"


def test_the_host_takes_only_a_seal_keyed_with_the_grades_secret_over_the_reports_it_reads() -> None:
    reports = [b"<testsuite/>", b""]
    assert guard.findings(_log("LOADED", _seal(reports)), KEY, reports, 0, ran=True) == []
    assert "did not write" in guard.findings(_log("LOADED", _seal(reports, "guess")), KEY, reports, 0, ran=True)[0]
    assert "not the ones" in guard.findings(_log("LOADED", _seal(reports)), KEY, [b"<forged/>", b""], 0, ran=True)[0]
    assert "seal" in guard.findings(_log("LOADED"), KEY, reports, 0, ran=True)[0]
    assert "cut" in guard.findings(b"", KEY, reports, 0, ran=False)[0]
    assert "did not write" in guard.findings(_log("LOADED", "PASSED all", _seal(reports)), KEY, reports, 0, ran=True)[0]
    assert guard.findings(_log("LOADED", "TAMPER " + b"x.py:1: gc".hex()), KEY, reports, guard.EXIT, ran=False) == ["x.py:1: gc"]
    unguarded = hmac.new(KEY.encode(), b"unguarded", hashlib.sha256).hexdigest()
    assert guard.findings(_log(f"UNGUARDED {unguarded}"), KEY, reports, 0, ran=True) == []
    assert guard.findings(_log("UNGUARDED forged"), KEY, reports, 0, ran=True) != []


def test_the_hosts_exit_is_the_plugins() -> None:
    source = (PLUGINS / "swedeck_guard.py").read_text()
    assert f"EXIT = {guard.EXIT} " in source
