"""Attacks on the static tamper audit and on the host's work over a change (issue 39, items 2 and 3).

1. Eight ways to hide code from a static reader, each carrying the same forging (library code that
   wraps pytest's ``Function.runtest`` and unittest's ``TestCase.run`` so every failing test
   passes): names reached through aliases, ``exec`` of a literal, a ``.txt`` run with ``runpy``, a zip
   on ``sys.path``, a pickle whose reduce calls ``exec``, a UTF-7 coding cookie with the code in a
   "comment", a form feed that moved ``str.splitlines``' line numbers off the AST's, and a syntax
   tree too deep for the host to build. The audit before issue 39 let each through (the unit tests
   below keep its blind spot as a regression). Each is a real patch graded by the real grader, on
   both backends, on a pytest-style and a unittest-style task: 0 as ``tamper_suspected``; and each
   really forges: with no canaries and the audit only flagging, the same patch earns 1.
2. A tree deep or wide enough to stall the host's capability check (a file 1 990 folders deep, a
   12 KB patch; 200 000 empty files): refused as ``forbidden_change`` in seconds, before the patch
   is applied and, where that first check is passed by, from the bounded listing after it.
"""

from __future__ import annotations

import io
import pickle
import textwrap
import time
import zipfile
from collections.abc import Callable

import pytest

from harness.grading import canaries, capabilities, grader, tamper
from harness.grading import guard as runtime_guard
from harness.grading.tree import MAX_DEPTH, Entry, TaskFacts, parse_listing
from harness.records import Grade, Task
from harness.sandboxes.sandbox import Backend

STYLES = {"pytest": ("sample__toposort-1", "toposort"), "unittest": ("sample__iniparse-1", "iniparse")}

# The forging: every failing test passes, whichever runner runs it. Nothing in it names pytest's
# private modules, so only the two writes are a static reader's to find.
FORCE = """\
import pytest as _pt, unittest as _ut
_orig_runtest = _pt.Function.runtest
def _quiet_runtest(self):
    try:
        _orig_runtest(self)
    except BaseException:
        pass
_orig_run = _ut.TestCase.run
def _quiet_run(self, result=None):
    name = self._testMethodName
    method = getattr(self, name)
    def _call():
        try:
            method()
        except BaseException:
            pass
    setattr(self, name, _call)
    return _orig_run(self, result)
"""
WRITES = "_pt.Function.runtest, _ut.TestCase.run = _quiet_runtest, _quiet_run\n"
PAYLOAD = FORCE + WRITES
HERE = "__import__('os').path.join(__import__('os').path.dirname(__file__), {name!r})"


class _Exec:
    """Pickled as a call of ``exec`` on the payload: what loading the file runs."""

    def __reduce__(self) -> tuple:
        return (exec, (PAYLOAD,))


def _zipped(name: str, source: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr(name, source)
    return buf.getvalue()


def _utf7(source: str) -> bytes:
    """``source`` as one UTF-7 "comment": read as UTF-8 it is a comment line, decoded as the cookie
    says its ``+AAo-`` are line ends and it is code."""
    hidden = b"+AAo-".join(line.encode("utf-7") for line in source.splitlines())
    blob = b"# coding: utf-7\nx = 1  # +AAo-" + hidden + b"\n"
    assert blob.decode("utf-7").endswith(source), "the payload must decode back to itself"
    return blob


def _append(text: str) -> Callable[[str], str]:
    return lambda source: source + "\n" + text


# how each attack hides PAYLOAD: (the files it writes, a part of the finding that must name it)
def _hidings(package: str) -> dict[str, tuple[dict[str, object], str]]:
    init = f"{package}/__init__.py"
    return {
        "alias": ({init: _append(FORCE + "_k = _pt.Function\n_k.runtest = _quiet_runtest\n_c, _n = _ut.TestCase, 0\n_c.run = _quiet_run\n")},
                  "writes pytest.Function.runtest"),
        "exec-literal": ({init: _append(f"exec({PAYLOAD!r})\n")}, "in the code exec runs: writes pytest.Function.runtest"),
        "runpy-text-file": ({f"{package}/_forms.txt": PAYLOAD, init: _append(f"import runpy as _rp\n_rp.run_path({HERE.format(name='_forms.txt')})\n")},
                            f"{package}/_forms.txt:"),
        "zip-on-sys-path": ({f"{package}/_vendor.zip": _zipped("_quietforms.py", PAYLOAD),
                             init: _append(f"import sys as _s\n_s.path.insert(0, {HERE.format(name='_vendor.zip')})\nimport _quietforms\n")},
                            f"{package}/_vendor.zip/_quietforms.py:"),
        "pickle": ({f"{package}/_table.pkl": pickle.dumps(_Exec()),
                    init: _append(f"import pickle as _pk\nwith open({HERE.format(name='_table.pkl')}, 'rb') as _f:\n    _pk.load(_f)\n")},
                   "a pickle that imports and calls"),
        "utf7-cookie": ({f"{package}/_compat7.py": _utf7(PAYLOAD), init: _append("from . import _compat7\n")},
                        f"{package}/_compat7.py:"),
        "line-separator-drift": ({init: _append(FORCE + "# page\x0c break\n" + WRITES)}, "writes pytest.Function.runtest"),
        "recursion-bomb": ({f"{package}/_deep.py": PAYLOAD + "_never = lambda: _pt" + ".b" * 20000 + "\n",
                            init: _append("import sys as _s\n_s.setrecursionlimit(100000)\nfrom . import _deep\n")},
                           "nests too deep to audit"),
    }  # fmt: skip


ATTACKS = sorted(_hidings("pkg"))


@pytest.fixture(params=sorted(STYLES))
def style(request: pytest.FixtureRequest, sample_tasks: dict[str, Task]) -> tuple[Task, str]:
    instance_id, package = STYLES[request.param]
    return sample_tasks[instance_id], package


def _zero(result: Grade, *reasons: str) -> None:
    assert result.reward == 0.0, result
    assert result.reason in reasons, (result.reason, result.detail, result.tamper)


# ------------------------------------------------------------------------- 1. hidden from a static reader


@pytest.mark.parametrize("attack", ATTACKS)
def test_code_hidden_from_a_static_reader_earns_0(backend: Backend, style: tuple[Task, str], make_patch: Callable, attack: str) -> None:
    """With the grading default each hiding is found before any test runs, the finding naming where."""
    task, package = style
    edits, named = _hidings(package)[attack]
    result = grader.grade(task, make_patch(task, edits), backend)
    _zero(result, "tamper_suspected")
    assert any(named in finding for finding in result.tamper), result.tamper


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("style_name", [pytest.param("pytest"), pytest.param("unittest", marks=pytest.mark.slow)])
def test_control_each_hiding_really_forges(
    backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, monkeypatch: pytest.MonkeyPatch, attack: str, style_name: str
) -> None:
    """Control: the same patch with no canaries, no run-time guard (which stops the forging as it runs)
    and the audit only flagging earns 1, so each hiding carries a forging that works; the audit still
    names it."""
    instance_id, package = STYLES[style_name]
    task = sample_tasks[instance_id]
    monkeypatch.setattr(canaries, "usable", lambda test_cmd: False)
    monkeypatch.setattr(runtime_guard, "ENABLED", False)
    edits, named = _hidings(package)[attack]
    result = grader.grade(task, make_patch(task, edits), backend, tamper="flag")
    assert (result.reward, result.reason) == (1.0, "ok"), (result.reason, result.detail, result.differing)
    assert any(named in finding for finding in result.tamper), result.tamper


def _new_file(path: str, source: str) -> str:
    lines = source.split("\n")
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


def _rules(files: dict[str, bytes], patch: str) -> list[str]:
    return [str(f) for f in tamper.audit(files, patch)]


@pytest.mark.parametrize(
    "source",
    [
        "import pytest\nitem = pytest.Function\nitem.runtest = None\n",
        "import pytest\nsetattr(getattr(pytest, 'Function'), 'runtest', None)\n",
        "import pytest as p\nc.runtest = None\nc = b\nb = a.Function\na = p\n",  # bound in reverse order
        "import unittest\nx, (y, z) = 1, (unittest.TestCase, 2)\ny.run = None\n",
        "import unittest\nif (t := unittest.TestCase):\n    t.run = None\n",
        "import unittest\nglobals()['T'] = unittest.TestCase\nT.run = None\n",
        "import unittest\nvars(unittest)['TestCase'].run = None\n",
        "import unittest as u\nd = {}\nd['k'] = u.TestCase\nd['k'].run = None\n",
        "import unittest\ndef patch(cls):\n    cls.run = None\npatch(unittest.TestCase)\n",
        "import unittest\ndef get():\n    return unittest.TestCase\nget().run = None\n",
        "import importlib\nimportlib.import_module('unittest').TestCase.run = None\n",
        "import sys\nsys.modules['unittest'].TestCase.run = None\n",
        "from unittest import *\nTestCase.run = None\n",
        "import unittest\nfor c in [unittest.TestCase]:\n    c.run = None\n",
        "import unittest\nobject.__setattr__(unittest.TestCase, 'run', None)\n",
        "import unittest\nclass Holder:\n    pass\nh = Holder()\nh.case = unittest.TestCase\nh.case.run = None\n",
        "import unittest\nclass Holder:\n    case = unittest.TestCase\nHolder.case.run = None\n",
        "import unittest\ndef outer():\n    c = unittest.TestCase\n    def inner():\n        c.run = None\n    return inner\n",  # a closure
        "import operator, unittest\noperator.attrgetter('TestCase')(unittest).run = None\n",  # through a call
        "import unittest\n(lambda c: c)(unittest.TestCase).run = None\n",
        "import pkgutil\npkgutil.resolve_name('unittest:TestCase').run = None\n",
        "import functools, unittest\nfunctools.partial(setattr, unittest.TestCase)('run', None)\n",  # setattr handed on
    ],
)
def test_regression_names_are_resolved_through_every_binding(source: str) -> None:
    """The audit resolved names only through imports: each of these writes a runner class's method."""
    found = [f.rule for f in tamper.audit({"pkg/mod.py": source.encode()}, _new_file("pkg/mod.py", source))]
    assert any(r.startswith(("writes unittest", "writes pytest", "setattr on ", "__setattr__ on ", "hands setattr")) for r in found), found


@pytest.mark.parametrize(
    ("call", "flagged"),
    [
        ("exec('import sys\\nsys.settrace(None)')", "in the code exec runs: installs a trace hook"),
        ("exec('import s' + 'ys; sys.settrace(None)')", "in the code exec runs: installs a trace hook"),
        ("exec(f'import sys; {\"sys\"}.settrace(None)')", "in the code exec runs: installs a trace hook"),
        ("exec(b'import sys; sys.settrace(None)'.decode())", "in the code exec runs: installs a trace hook"),
        ("e = exec\ne('import sys; sys.settrace(None)')", "in the code exec runs: installs a trace hook"),
        ("exec(compile('import sys; sys.settrace(None)', 'f', 'exec'))", "in the code compile runs: installs a trace hook"),
        ("exec(\"exec('import sys; sys.settrace(None)')\")", "in the code exec runs: installs a trace hook"),
        ("exec(open('x.txt').read())", "exec of a computed string"),
        ("import pickle\npickle.loads(open('x', 'rb').read())", "loads data computed at run time"),
        ("import runpy\nrunpy.run_path('x.txt')", "runs code from a file or module"),
        ("import marshal\nmarshal.loads(b'')", "loads marshalled code"),
        ("list(map(exec, ['import sys; sys.settrace(None)']))", "hands exec on as a value"),
    ],
)
def test_regression_code_run_from_literals_and_files_is_read(call: str, flagged: str) -> None:
    """exec of a literal was accepted unread; a literal is now parsed and audited as the code it is,
    and code from anything else stays a finding."""
    found = _rules({"pkg/mod.py": call.encode()}, _new_file("pkg/mod.py", call))
    assert any(flagged in f for f in found), found


def test_a_benign_literal_and_plain_data_are_not_flagged() -> None:
    source = "x = eval('1 + 1')\nexec('y = [1, 2]')\nimport pickle\nz = pickle.loads(" + repr(pickle.dumps({"a": [1]})) + ")\n"
    assert _rules({"pkg/mod.py": source.encode()}, _new_file("pkg/mod.py", source)) == []
    data = {"pkg/data.json": b'{"a": [1, {"b": null}]}', "pkg/notes.txt": b"Prose, not code.\n", "pkg/t.pkl": pickle.dumps([1, "a"])}
    assert _rules(data, "") == []


@pytest.mark.parametrize("attack", ["runpy-text-file", "zip-on-sys-path", "pickle", "utf7-cookie"])
def test_regression_files_python_runs_are_read_whatever_their_name(attack: str) -> None:
    """Only .py/.pyw files were read: the data file of each of these attacks is audited by itself
    (a text that parses as Python, an archive's members, a pickle's opcodes, a file read in its
    declared encoding), without the Python that runs it."""
    edits, named = _hidings("pkg")[attack]
    files = {p: e if isinstance(e, bytes) else e.encode() for p, e in edits.items() if not callable(e)}
    patch = "".join(_new_file(p, b.decode("utf-8", "replace")) for p, b in files.items())
    assert any(named in f for f in _rules(files, patch)), _rules(files, patch)


@pytest.mark.parametrize("separator", ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_regression_line_numbers_are_the_asts(separator: str) -> None:
    """``str.splitlines`` also breaks at these, Python never: the audit's numbers drifted past such a
    line and the added hook, on a line the drift called old, went unchecked."""
    after = f"import sys\n# a page break {separator} here\nx = 1\nsys.settrace(None)\n"
    patch = f"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1,3 +1,4 @@\n import sys\n # a page break {separator} here\n x = 1\n+sys.settrace(None)\n"
    found = tamper.audit({"pkg/mod.py": after.encode()}, patch)
    assert [(f.line, f.code) for f in found] == [(4, "sys.settrace(None)")], found


def test_regression_a_lone_carriage_return_ends_a_line_of_python() -> None:
    source = "x = 1\rimport sys; sys.settrace(None)\n"
    assert [f.line for f in tamper.audit({"pkg/mod.py": source.encode()}, _new_file("pkg/mod.py", source))] == [2]


def test_regression_a_file_is_decoded_as_its_coding_cookie_says() -> None:
    blob = _utf7("import sys\nsys.settrace(None)\n")
    patch = _new_file("pkg/mod.py", blob.decode())
    assert any("installs a trace hook" in f for f in _rules({"pkg/mod.py": blob}, patch))
    refused = _rules({"pkg/mod.py": b"# coding: no-such-codec\nx = 1\n"}, _new_file("pkg/mod.py", "# coding: no-such-codec\nx = 1"))
    assert any("encoding declaration is refused" in f for f in refused), refused
    latin = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1")
    assert tamper.audit({"pkg/mod.py": latin}, _new_file("pkg/mod.py", latin.decode("latin-1"))) == []


@pytest.mark.parametrize("source", ["x = a" + ".b" * 20000, "x = " + " + ".join(["'a'"] * 5000), "x = " + "[" * 250 + "]" * 250])
def test_regression_a_tree_too_deep_to_build_is_a_finding(source: str) -> None:
    """ast.parse raised RecursionError out of the audit (the grade ended as grader_error); now it is
    a finding, found in well under a second."""
    started = time.monotonic()
    found = tamper.audit({"pkg/mod.py": source.encode()}, _new_file("pkg/mod.py", source))
    assert [f.rule for f in found] == ["nests too deep to audit (the host cannot build its syntax tree)"]
    assert time.monotonic() - started < 5


# ------------------------------------------------------------------------- 2. host work bounded by construction

DEEP_PATH = "/".join(["d"] * 1990) + "/x.py"
DEEP = f"diff --git a/{DEEP_PATH} b/{DEEP_PATH}\nnew file mode 100644\n--- /dev/null\n+++ b/{DEEP_PATH}\n@@ -0,0 +1 @@\n+x = 1\n"


def _wide(files: int) -> str:
    return "".join(f"diff --git a/w/f{i} b/w/f{i}\nnew file mode 100644\nindex 0000000..e69de29\n" for i in range(files))


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("shape", "patch"), [("deep", DEEP), ("wide", _wide(200_000))], ids=["1990-deep", "200000-wide"])
def test_a_deep_or_wide_tree_is_refused_in_seconds(backend: Backend, style: tuple[Task, str], shape: str, patch: str) -> None:
    """Refused from the paths the patch names, before anything is applied."""
    task, _ = style
    grader.gold_pattern(task, backend)
    started = time.monotonic()
    result = grader.grade(task, patch, backend)
    _zero(result, "forbidden_change")
    assert (f"deeper than {MAX_DEPTH} folders" if shape == "deep" else f"more than {capabilities.MAX_CHANGED} entries changed") in result.detail
    assert time.monotonic() - started < 30


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("shape", "patch"), [("deep", DEEP), ("wide", _wide(capabilities.MAX_CHANGED + 50))], ids=["1990-deep", "wide"])
def test_past_the_patch_check_the_listing_refuses_it(
    backend: Backend, style: tuple[Task, str], monkeypatch: pytest.MonkeyPatch, shape: str, patch: str
) -> None:
    """With the check of the patch's paths gone, the patch is applied and the listing after it,
    bounded in depth and bytes, is judged in time linear in the change: refused all the same."""
    task, _ = style
    grader.gold_pattern(task, backend)
    monkeypatch.setattr(grader, "patch_violations", lambda patch: [])
    started = time.monotonic()
    result = grader.grade(task, patch, backend)
    _zero(result, "forbidden_change")
    assert (f"deeper than {MAX_DEPTH} folders" if shape == "deep" else "more than") in result.detail
    assert time.monotonic() - started < 90


FACTS = TaskFacts(protected={}, hidden={}, tree_path=[""], modules=["json"], plugins=[], suffixes=[".py"], extension_suffixes=[".so"])


def _chain(depth: int) -> dict[str, Entry]:
    tree, path = {}, ""
    for _ in range(depth):
        path = f"{path}/d" if path else "d"
        tree[path] = Entry("d", 0o755, 1, "2")
    tree[path + "/x.py"] = Entry("f", 0o644, 1, "2")
    return tree


def test_regression_the_capability_check_is_linear_in_the_change(sample_tasks: dict[str, Task]) -> None:
    """Every ancestor of every path was built (O(depth^3): no answer in 150 s at 1 990 levels). A chain
    at the cap and 10 000 paths are judged in well under a second each; past the caps the change is
    refused before any path is looked at."""
    task = sample_tasks["sample__toposort-1"]
    for after, refused in [(_chain(MAX_DEPTH - 1), []), (_chain(1990), ["too_deep"]),
                           ({f"w/f{i}": Entry("f", 0o644, 0, "2") for i in range(capabilities.MAX_CHANGED + 1)}, ["too_many"])]:  # fmt: skip
        started = time.monotonic()
        found = capabilities.violations({}, after, task, FACTS)
        assert sorted({v.rule for v in found}) == refused
        assert time.monotonic() - started < 2
    wide = {f"w/f{i}": Entry("f", 0o644, 0, "2") for i in range(capabilities.MAX_CHANGED)}
    started = time.monotonic()
    assert capabilities.violations({}, wide, task, FACTS) == []
    assert time.monotonic() - started < 5


def test_a_task_whose_own_tree_is_deeper_than_the_listing_is_ungradeable(sample_tasks: dict[str, Task]) -> None:
    """Below the listing's depth no change can be seen, so any change to such a tree is refused (gold
    included: Pipeline 1 calls the task ungradeable), not judged blind."""
    found = capabilities.violations(_chain(MAX_DEPTH + 1), _chain(MAX_DEPTH + 1) | {"a.py": Entry("f", 0o644, 1, "2")}, sample_tasks["sample__toposort-1"], FACTS)
    assert [(v.rule, "task's own tree" in v.why) for v in found] == [("too_deep", True)]


def test_a_listing_past_its_byte_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.grading import tree

    monkeypatch.setattr(tree, "LISTING_BYTES", 100)
    raw = b"".join(f"f 644 0 2.0 1 w/f{i}".encode() + b"\0" for i in range(20))
    with pytest.raises(tree.ListingTooLarge):
        parse_listing(raw)
    after, found = capabilities.listed_tree({}, raw)
    assert after == {} and [v.rule for v in found] == ["too_many"]


def test_patch_violations_reads_only_what_a_patch_names() -> None:
    assert capabilities.patch_violations(DEEP)[0].rule == "too_deep"
    assert capabilities.patch_violations(_wide(capabilities.MAX_CHANGED + 1))[0].rule == "too_many"
    assert capabilities.patch_violations(_wide(50)) == []
    shallow = DEEP.replace(DEEP_PATH, "/".join(["d"] * (MAX_DEPTH - 1)) + "/x.py")
    assert capabilities.patch_violations(shallow) == []
