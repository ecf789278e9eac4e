"""The tamper audit (harness.grading.tamper): what a change adds that reaches into the test runner or the
interpreter is found, with file and line, without running anything; what a fix ordinarily does, and
what the file held before the change, is not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.grading import tamper

ROOT = Path(__file__).resolve().parents[1]


def _added(path: str, source: str) -> str:
    """A patch adding ``source`` as a new file."""
    lines = source.splitlines()
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


def _findings(source: str, patch: str | None = None) -> list[str]:
    source = textwrap.dedent(source)
    return [f.rule for f in tamper.audit({"pkg/mod.py": source.encode()}, _added("pkg/mod.py", source) if patch is None else patch)]


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import _pytest.python\n", "imports the test runner's internals"),
        ("from unittest.case import TestCase\n", "imports the test runner's internals"),
        ("import sys\nm = sys.modules['_pytest.runner']\n", "names the test runner's internals"),
        ("import unittest\nunittest.TestCase.run = lambda self, result=None: None\n", "writes unittest.TestCase.run"),
        ("from unittest import TestCase as T\nT.run = None\n", "writes unittest.TestCase.run"),
        ("import pytest\npytest.Function.runtest = None\n", "writes pytest.Function.runtest"),
        ("def pytest_runtest_makereport(item, call):\n    pass\n", "defines a test runner hook"),
        ("import sys as s\ns.setprofile(print)\n", "installs a profile hook"),
        ("from sys import settrace\nsettrace(None)\n", "installs a trace hook"),
        ("import threading\nthreading.setprofile(print)\n", "installs a profile hook"),
        ("import sys\nf = sys._getframe(1)\n", "walks frames"),
        ("import inspect\ninspect.currentframe()\n", "walks frames"),
        ("def f(frame):\n    return frame.f_back.f_locals\n", "walks frames"),
        ("import gc\nfor o in gc.get_objects():\n    pass\n", "walks the heap"),
        ("object.__subclasses__()\n", "walks the class graph"),
        ("import atexit\natexit.register(print)\n", "registers exit handlers"),
        ("import os\nos._exit(0)\n", "ends the process without cleanup"),
        ("import signal\nsignal.signal(14, print)\n", "installs a signal handler"),
        ("import builtins\nbuiltins.print = None\n", "writes builtins.print"),
        ("__builtins__['len'] = None\n", "touches __builtins__"),
        ("import sys\nsys.modules['json'] = None\n", "writes sys.modules"),
        ("import sys\nsys.modules.update({})\n", "writes sys.modules"),
        ("import sys\nfor m in sys.modules.values():\n    pass\n", "walks the loaded modules"),
        ("import sys\nsys.meta_path.insert(0, None)\n", "touches import hooks"),
        ("import sys\nsys.excepthook = print\n", "writes interpreter state"),
        ("def f():\n    pass\nf.__code__ = (lambda: 1).__code__\n", "replaces a function's code"),
        ("m = __import__('s' + 'ys')\n", "imports by a computed name"),
        ("import importlib, os\nimportlib.import_module(os.environ['M'])\n", "imports by a computed name"),
        ("import importlib\nimportlib.import_module('_' + 'pytest')\n", "reaches the test runner's internals"),
        ("import os, sys\ngetattr(sys, os.environ['N'])(print)\n", "getattr on sys with a computed name"),
        ("import sys\ngetattr(sys, 'set' + 'profile')(print)\n", "installs a profile hook"),
        ("import sys\nsetattr(sys, 'modules', {})\n", "setattr on sys"),
        ("exec(''.join(['im', 'port os']))\n", "exec of a computed string"),
    ],
)
def test_the_audit_finds_what_reaches_into_the_runner(source: str, rule: str) -> None:
    assert any(found.startswith(rule) for found in _findings(source)), _findings(source)


@pytest.mark.parametrize(
    "source",
    [
        "import sys\nprint(sys.version_info, file=sys.stderr)\nsys.stdout = sys.stderr\n",
        "import importlib\nmod = importlib.import_module('json')\n",
        "import sys\nthis = sys.modules[__name__]\n",
        "import gc\ngc.collect()\n",
        "x = eval('1 + 1')\n",
        "class Graph:\n    def run(self):\n        return getattr(self, 'name', None)\n",
        "import os\nos.environ.get('HOME')\n",
        "from unittest import mock\n",
    ],
)
def test_ordinary_code_is_not_flagged(source: str) -> None:
    assert _findings(source) == []


def test_only_what_the_change_added_counts() -> None:
    """The file already walked frames; the fix adds a line elsewhere: nothing is charged to it. A line
    the fix adds that walks frames is, with its line number."""
    after = "import sys\n\ndef caller():\n    return sys._getframe(1)\n\ndef fixed():\n    return 2\n"
    patch = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -6,2 +6,2 @@\n def fixed():\n-    return 1\n+    return 2\n"
    assert tamper.audit({"pkg/mod.py": after.encode()}, patch) == []
    walking = patch.replace("+    return 2", "+    return sys._getframe(2)")
    found = tamper.audit({"pkg/mod.py": after.replace("return 2", "return sys._getframe(2)").encode()}, walking)
    assert [(f.path, f.line) for f in found] == [("pkg/mod.py", 7)]
    assert str(found[0]).startswith("pkg/mod.py:7: walks frames (sys._getframe)")


def test_the_audit_walks_only_what_holds_a_new_line_and_still_finds_every_added_hook() -> None:
    """The audit skips every subtree without a new line. A decorator lies outside its definition's
    own lines, a nested function inside its class's and function's: an added line in either is found,
    and the file's other hooks, on lines the fix did not add, are not charged to it."""
    after = (
        "import sys as system\n"
        "import gc\n"
        "\n"
        "@system.settrace\n"  # 4: added
        "def traced():\n"
        "    return gc.get_objects()\n"
        "\n"
        "class Outer:\n"
        "    def method(self):\n"
        "        def inner():\n"
        "            return system._getframe(1)\n"  # 11: added
        "        return inner\n"
        "    def other(self):\n"
        "        return system.setprofile(print)\n"
    )
    patch = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,1 +1,2 @@\n+@system.settrace\n+            return system._getframe(1)\n"
    found = tamper.audit({"pkg/mod.py": after.encode()}, patch)
    assert [(f.line, f.rule.split(" (")[0]) for f in found] == [(4, "installs a trace hook"), (11, "walks frames")]

def test_a_file_the_host_cannot_parse_is_scanned_by_name() -> None:
    """Syntax newer than the host's Python must not hide a hook: the added lines are scanned."""
    source = "type Alias[T] = list[T]\nimport sys; sys.setprofile(print)\n"
    patch = _added("pkg/mod.py", source)
    found = tamper.audit({"pkg/mod.py": ("def broken(:\n" + source).encode()}, patch)
    assert [f.line for f in found] == [3] and "setprofile" in found[0].rule


def test_a_file_too_large_to_read_is_a_finding() -> None:
    assert [f.rule for f in tamper.audit({"pkg/huge.py": None}, "")] == ["too large to audit"]


@pytest.mark.slow  # prepares the base tree of every sample task and real commit (~50 s)
def test_no_gold_patch_in_the_repository_is_flagged() -> None:
    """The benchmark's count, which must be 0: every sample task, fixture row and real fix commit."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "tamper_audit.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "flagged: 0" in done.stdout


def test_regression_one_change_is_audited_once_and_any_other_byte_or_patch_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch graded many times (gold in Pipeline 1, a survivor under each candidate test) was parsed
    and audited every time. The findings are remembered by what the audit read; a changed byte, an
    unreadable file in place of an empty one, or another patch is audited again, never answered from
    another change's findings."""
    from harness.grading import trusted

    audits: list[str] = []
    real = tamper.audit
    monkeypatch.setattr(tamper, "audit", lambda files, patch: audits.append(patch) or real(files, patch))
    patch = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,2 +1,2 @@\n def fixed():\n-    return 1\n+    return 2\n"
    clean = {"pkg/mod.py": b"def fixed():\n    return 2\n"}
    assert trusted.audited(clean, patch) == [] and trusted.audited(dict(clean), patch) == [] and len(audits) == 1
    walking = {"pkg/mod.py": b"import sys\ndef fixed():\n    return sys._getframe(2)\n"}
    walks = patch.replace("+    return 2", "+    return sys._getframe(2)")
    assert trusted.audited(walking, walks)[0].startswith("pkg/mod.py:3: walks frames") and len(audits) == 2
    assert trusted.audited(walking, patch) == [] and len(audits) == 3  # the same files: that line is not the patch's
    assert trusted.audited({"pkg/mod.py": None}, patch) != trusted.audited({"pkg/mod.py": b""}, patch) == []
    assert len(audits) == 5
