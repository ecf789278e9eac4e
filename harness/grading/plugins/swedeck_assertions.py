"""swedeck_assertions: a pytest plugin that records the outcome of every assertion a test executes.

Self-contained on purpose (standard library and pytest only): it is copied into task sandboxes and
loaded there with ``-p swedeck_assertions -o enable_assertion_pass_hook=true`` with its folder on
``PYTHONPATH``. It writes one JSON object per line, per assertion event, to the file named by the
``SWEDECK_ASSERT_LOG`` environment variable (nothing at all when the variable is unset), after a line
``{"plugin": "swedeck_assertions"}`` from each process that loaded it (the grader reserves the file
beforehand, so only that line says the tests ran instrumented)::

    {"nodeid": ..., "file": <path relative to the rootdir>, "line": <1-based start line>,
     "source": <the assertion's source, whitespace normalised>, "outcome": "passed" | "failed"}

Where events come from:

* a bare ``assert`` that passes: ``pytest_assertion_pass``. The hook names no file, so the file is the
  first frame, walking up from the hook, that belongs to an assertion-rewritten module and stands on the
  hook's line; an assert in a helper module is therefore reported at the helper's file and line.
* a bare ``assert`` that fails: a ``pytest_runtest_makereport`` wrapper reads the exception's traceback
  and reports the innermost frame inside the rootdir whose line belongs to an ``assert`` statement or to
  an ``assert*(...)`` / ``self.fail*(...)`` call. An exception raised while an assert's expression is
  evaluated therefore also counts as that assert failing.
* ``unittest.TestCase`` assertion methods (every public ``assert*`` and ``fail*`` method, wrapped when
  the plugin is imported): each call records at its caller's line; a method that hands back a context
  manager (``with self.assertRaises(...)``) records when the ``with`` block exits. Calls made by
  unittest itself (``assertEqual`` delegating to ``assertListEqual``, ``fail`` raising a failure) are
  not recorded, so only the outermost call counts.
* ``pytest.raises`` (wrapped the same way when the plugin is imported, so ``from pytest import raises``
  in a test module gets the wrapper): a call with a function records when it returns or raises, a
  ``with pytest.raises(...)`` block when it exits (``DID NOT RAISE`` fails it).

Limitations:

* pytest rewrites asserts only in test modules, ``conftest.py`` files and modules registered with
  ``pytest.register_assert_rewrite``. The plugin registers the other modules beside each test file it
  collects (``from common import assert_equal`` in a tests folder) before the test file imports them,
  unless they were imported already or the test file sits in the rootdir (there they would be the
  code under test); a passing assert in any other helper module is invisible (a failing one is still
  found through the traceback).
* a failing bare assert whose ``AssertionError`` is caught by the test itself (``pytest.raises
  (AssertionError)``) is not recorded.
* every process appends to the same file with single ``O_APPEND`` writes (one line each), which keeps
  lines whole under pytest-xdist; the file is never truncated by the plugin.

* with ``--assert=plain`` nothing is rewritten and passing bare asserts are not seen at all.
* unittest assertions made outside any test (at import time) are not recorded.

Rewritten modules are cached in ``__pycache__`` under a name that ignores ``enable_assertion_pass_hook``,
so a cache left by an earlier plain run would hide every passing assert; when the log is enabled the
plugin makes pytest ignore those caches and rewrite afresh.

The plugin never changes an outcome: every piece of its own work swallows its errors. Each event is
written with one ``os.write`` call, so a test that hangs or calls ``os._exit`` leaves every event
recorded before that point.

PYTEST_DONT_REWRITE (pytest rewrites ``-p`` plugins unless their docstring says this)
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import sys
import threading
import unittest

import pytest

ENV_VAR = "SWEDECK_ASSERT_LOG"

# Frames of this module are hidden from unittest's and pytest's failure reports.
__unittest = True

_PLUGIN_FILE = os.path.normcase(os.path.abspath(__file__))
_UNITTEST_DIR = os.path.normcase(os.path.dirname(os.path.abspath(unittest.__file__))) + os.sep
_RECORDED_TAG = "_swedeck_assert_recorded"


class _State:
    def __init__(self) -> None:
        self.path = os.environ.get(ENV_VAR) or ""
        self.fd: int | None = None
        self.rootdir = os.path.normcase(os.path.abspath(os.getcwd()))
        self.real_rootdir = os.path.normcase(os.path.realpath(self.rootdir))
        self.nodeid = ""
        self.lock = threading.Lock()
        self.index: dict[str, list[tuple[int, int, str, str, str]]] = {}
        self.seen: set[tuple[str, str, int, str, str]] = set()
        self.pass_sites: dict[tuple[str, int, str], tuple[str, str]] = {}
        self.repeats: dict[tuple[str, str, int, str, str], int] = {}


_STATE = _State()


# ------------------------------------------------------------------------------------------ writing


def _write(nodeid: str, file: str, line: int, source: str, outcome: str) -> None:
    """The first event of a (test, site, outcome) is written at once, so a run that dies keeps every
    outcome it reached; repeats (asserts in loops) are only counted, and written when the test ends."""
    if not _STATE.path:
        return
    key = (nodeid, file, line, source, outcome)
    with _STATE.lock:
        if key in _STATE.seen:
            _STATE.repeats[key] = _STATE.repeats.get(key, 0) + 1
            return
        _STATE.seen.add(key)
    _emit(key, 1)


def _emit(key: tuple[str, str, int, str, str], count: int) -> None:
    nodeid, file, line, source, outcome = key
    try:
        row = {"nodeid": nodeid, "file": file, "line": line, "source": source, "outcome": outcome}
        if count != 1:
            row["count"] = count
        data = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        with _STATE.lock:
            _open_log()
            os.write(_STATE.fd, data)
    except Exception:
        pass


ANNOUNCE = b'{"plugin": "swedeck_assertions"}\n'


def _open_log() -> None:
    """Open the event log once (callers hold the lock)."""
    if _STATE.fd is None:
        _STATE.fd = os.open(_STATE.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _flush_repeats() -> None:
    with _STATE.lock:
        repeats, _STATE.repeats = _STATE.repeats, {}
    for key, count in repeats.items():
        _emit(key, count)


def _under_root(filename: str) -> str | None:
    """``filename`` relative to the rootdir (with ``/``), or None when it lies outside."""
    path = os.path.normcase(os.path.abspath(filename))
    for root, candidate in ((_STATE.rootdir, path), (_STATE.real_rootdir, None)):
        if candidate is None:
            candidate = os.path.normcase(os.path.realpath(filename))
        if candidate.startswith(root + os.sep):
            return candidate[len(root) + 1 :].replace(os.sep, "/")
    return None


def _relpath(filename: str) -> str:
    inside = _under_root(filename)
    if inside is not None:
        return inside
    return os.path.abspath(filename).replace(os.sep, "/")


def _in_rootdir(filename: str) -> bool:
    return _under_root(filename) is not None


def normalise(text: str) -> str:
    """Whitespace-normalised source: line continuations and line breaks just inside brackets dropped,
    every other run of whitespace made one space. The plugin and ``curation.assertions`` must agree."""
    text = re.sub(r"\\\r?\n", " ", text)
    text = re.sub(r"([(\[{])[ \t]*\r?\n\s*", r"\1", text)
    text = re.sub(r"\s*\n[ \t]*([)\]}])", r"\1", text)
    return " ".join(text.split())


# ------------------------------------------------------------------------------------------ source index

# One entry per assertion-like node of a file: (start line, end line, kind, callee name, source).
# kind is "assert" for an assert statement and "call" for an assert*/fail* call.


def _callee(node: ast.Call) -> tuple[str, bool]:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id, False
    if isinstance(func, ast.Attribute):
        on_self = isinstance(func.value, ast.Name) and func.value.id == "self"
        return func.attr, on_self
    return "", False


def _source_lines(text: str) -> list[str]:
    """``text`` split as ``ast.get_source_segment`` splits it (on \\r\\n, \\r and \\n only), line ends kept."""
    lines, start = [], 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _segment(lines: list[str], node: ast.AST) -> str:
    """``ast.get_source_segment`` over lines split once: that function splits the whole file for every
    node, quadratic in a large test file (more-itertools' 7,000-line test_more.py took minutes)."""
    try:
        first, last = node.lineno - 1, node.end_lineno - 1
        start, end = node.col_offset, node.end_col_offset
        if first == last:
            return lines[first].encode()[start:end].decode()
        head = lines[first].encode()[start:].decode()
        tail = lines[last].encode()[:end].decode()
        return head + "".join(lines[first + 1 : last]) + tail
    except (AttributeError, IndexError, TypeError, UnicodeDecodeError):
        return ""


def _index(filename: str) -> list[tuple[int, int, str, str, str]]:
    """The assertion-like nodes of ``filename``, parsed once per process (test files do not change
    while they run)."""
    cached = _STATE.index.get(filename)
    if cached is not None:
        return cached
    entries: list[tuple[int, int, str, str, str]] = []
    try:
        with open(filename, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8", errors="replace")
        lines = _source_lines(text)
        tree = ast.parse(raw, filename)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                kind, name = "assert", ""
            elif isinstance(node, ast.Call):
                name, on_self = _callee(node)
                if not (name.startswith("assert") or name == "raises" or (on_self and name.startswith("fail"))):
                    continue
                kind = "call"
            else:
                continue
            segment = _segment(lines, node)
            end = getattr(node, "end_lineno", None) or node.lineno
            entries.append((node.lineno, end, kind, name, normalise(segment)))
    except Exception:
        entries = []
    entries.sort()
    _STATE.index[filename] = entries
    return entries


def _find(
    filename: str,
    line: int,
    kind: str | None = None,
    name: str | None = None,
    start_only: bool = False,
    prefix: str = "",
) -> tuple[int, str] | None:
    """The innermost indexed node of ``filename`` covering ``line`` (start line, source), if any;
    among nodes starting on the same line, the first whose source starts with ``prefix``."""
    best: tuple[int, int, str, str, str] | None = None
    for entry in _index(filename):
        start, end, ekind, ename, source = entry
        if start > line:
            break
        if end < line or (start_only and start != line):
            continue
        if (kind is not None and ekind != kind) or (name is not None and ename != name):
            continue
        if best is None or (end - start, -start) < (best[1] - best[0], -best[0]):
            best = entry
        elif prefix and start == best[0] and source.startswith(prefix) and not best[4].startswith(prefix):
            best = entry
    if best is None:
        return None
    return best[0], best[4]


# ------------------------------------------------------------------------------------------ bare asserts


def _rewritten(frame) -> bool:
    return "@py_builtins" in frame.f_globals or "@pytest_ar" in frame.f_globals


@pytest.hookimpl
def pytest_assertion_pass(item, lineno, orig, expl):
    if not _STATE.path:
        return
    try:
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if (
                frame.f_lineno == lineno
                and _rewritten(frame)
                and os.path.normcase(os.path.abspath(filename)) != _PLUGIN_FILE
            ):
                break
            frame = frame.f_back
        if frame is None:
            return
        filename = frame.f_code.co_filename
        site = _STATE.pass_sites.get((filename, lineno, orig))
        if site is None:  # asserts in loops pass thousands of times; look each site up once
            fallback = normalise("assert " + (orig or ""))
            found = _find(filename, lineno, kind="assert", start_only=True, prefix=fallback)
            site = _STATE.pass_sites[(filename, lineno, orig)] = (_relpath(filename), found[1] if found else fallback)
        _write(item.nodeid, site[0], lineno, site[1], "passed")
    except Exception:
        pass


def _tagged(exc: BaseException) -> bool:
    return bool(getattr(exc, _RECORDED_TAG, False))


def _tag(exc: BaseException) -> None:
    try:
        setattr(exc, _RECORDED_TAG, True)
    except Exception:
        pass


def _failure_site(exc: BaseException) -> tuple[str, int, str] | None:
    """The innermost traceback frame in the rootdir that stands on an assertion: (file, line, source)."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    for filename, line in reversed(entries):
        if os.path.normcase(os.path.abspath(filename)) == _PLUGIN_FILE or not _in_rootdir(filename):
            continue
        found = _find(filename, line)
        if found is not None:
            return filename, found[0], found[1]
    return None


# Old-style wrappers (``hookwrapper=True``) work with every pytest since 3, and task images carry
# whatever pytest their corpus pinned.


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    yield
    if not _STATE.path:
        return
    try:
        excinfo = call.excinfo
        if excinfo is None:
            return
        exc = excinfo.value
        if isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception, unittest.SkipTest)) or _tagged(exc):
            return
        site = _failure_site(exc)
        if site is not None:
            _tag(exc)
            _write(item.nodeid, _relpath(site[0]), site[1], site[2], "failed")
    except Exception:
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _STATE.nodeid = getattr(item, "nodeid", "")
    try:
        yield
    finally:
        _STATE.nodeid = ""
        _flush_repeats()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    try:
        root = getattr(config, "rootpath", None) or config.rootdir
        _STATE.rootdir = os.path.normcase(os.path.abspath(str(root)))
        _STATE.real_rootdir = os.path.normcase(os.path.realpath(_STATE.rootdir))
    except Exception:
        pass
    if not _STATE.path:
        return
    try:
        with _STATE.lock:
            _open_log()
            os.write(_STATE.fd, ANNOUNCE)
    except Exception:
        pass
    try:
        if not config.getini("enable_assertion_pass_hook"):
            sys.stderr.write(
                "swedeck_assertions: enable_assertion_pass_hook is off, passing bare asserts are not recorded\n"
            )
    except Exception:
        pass


@pytest.hookimpl
def pytest_collectstart(collector):
    """Before a test file is imported: have pytest rewrite the helper modules beside it."""
    if not _STATE.path:
        return
    try:
        path = str(getattr(collector, "path", None) or getattr(collector, "fspath", ""))
        folder = os.path.dirname(os.path.abspath(path))
        if not path.endswith(".py") or not _in_rootdir(path) or _under_root(folder) is None:
            return
        names = [n for n in _helper_modules(folder) if n not in sys.modules]
        if names:
            pytest.register_assert_rewrite(*names)
    except Exception:
        pass


def _helper_modules(folder):
    """Import names of the modules in ``folder`` that are neither test files nor conftest: by their
    file name, and by their dotted name when the folder is a package."""
    package = []
    parent = folder
    while os.path.isfile(os.path.join(parent, "__init__.py")):
        package.insert(0, os.path.basename(parent))
        parent = os.path.dirname(parent)
    names = []
    for entry in sorted(os.listdir(folder)):
        stem = entry[:-3]
        if not entry.endswith(".py") or entry == "conftest.py" or stem == "__init__":
            continue
        if stem.startswith("test_") or stem.endswith("_test"):
            continue
        names.append(stem)
        if package:
            names.append(".".join(package + [stem]))
    return names


@pytest.hookimpl
def pytest_unconfigure(config):
    _flush_repeats()
    try:
        if _STATE.fd is not None:
            os.close(_STATE.fd)
            _STATE.fd = None
    except Exception:
        pass


# ------------------------------------------------------------------------------------------ unittest


def _internal(filename: str) -> bool:
    path = os.path.normcase(os.path.abspath(filename))
    return path.startswith(_UNITTEST_DIR) or path == _PLUGIN_FILE


def _caller_site(frame, name: str) -> tuple[str, int, str] | None:
    """Where the test code called ``name``: the caller, or, when the caller lies outside the rootdir
    (an installed library's assertion helper), the first frame up the stack inside the rootdir."""
    first = frame
    probe = frame
    while probe is not None and not _in_rootdir(probe.f_code.co_filename):
        probe = probe.f_back
    chosen = probe if probe is not None else first
    filename = chosen.f_code.co_filename
    line = chosen.f_lineno
    found = _find(filename, line, kind="call", name=name) if chosen is first else None
    if found is None:
        found = _find(filename, line)
    if found is None:
        return filename, line, normalise(f"self.{name}(...)")
    return filename, found[0], found[1]


class _RecordingContext:
    """Stands in for the context manager an assertion method or ``pytest.raises`` returned; records when
    the block exits."""

    def __init__(self, context, site, nodeid):
        self._swedeck_context = context
        self._swedeck_site = site
        self._swedeck_nodeid = nodeid

    def __enter__(self):
        return self._swedeck_context.__enter__()

    def __exit__(self, exc_type, exc, tb):
        __tracebackhide__ = True
        try:
            suppressed = self._swedeck_context.__exit__(exc_type, exc, tb)
        except (Exception, pytest.fail.Exception) as error:  # DID NOT RAISE is an OutcomeException
            _record_call(self._swedeck_site, self._swedeck_nodeid, "failed")
            _tag(error)
            raise
        if exc_type is not None and not suppressed:
            _record_call(self._swedeck_site, self._swedeck_nodeid, "failed")
            if exc is not None:
                _tag(exc)
        else:
            _record_call(self._swedeck_site, self._swedeck_nodeid, "passed")
        return suppressed

    def __getattr__(self, name):
        return getattr(self._swedeck_context, name)


def _record_call(site, nodeid, outcome):
    if site is None or not nodeid:
        return
    try:
        _write(nodeid, _relpath(site[0]), site[1], site[2], outcome)
    except Exception:
        pass


def _is_context(result) -> bool:
    kind = type(result)
    return (
        hasattr(kind, "__enter__")
        and hasattr(kind, "__exit__")
        and getattr(kind, "__module__", "").startswith("unittest")
    )


def _wrap(name, original):
    @functools.wraps(original)
    def recording(self, *args, **kwargs):
        __tracebackhide__ = True
        site = None
        try:
            caller = sys._getframe(1)
            if not _internal(caller.f_code.co_filename):
                site = _caller_site(caller, name)
        except Exception:
            site = None
        if site is None:
            return original(self, *args, **kwargs)
        nodeid = _STATE.nodeid
        try:
            result = original(self, *args, **kwargs)
        except Exception as error:
            _record_call(site, nodeid, "failed")
            _tag(error)
            raise
        try:
            if _is_context(result):
                return _RecordingContext(result, site, nodeid)
        except Exception:
            pass
        _record_call(site, nodeid, "passed")
        return result

    recording._swedeck_wrapped = True  # type: ignore[attr-defined]
    return recording


def _install_unittest_wrappers() -> None:
    for name in dir(unittest.TestCase):
        if not name.startswith(("assert", "fail")):
            continue
        try:
            original = unittest.TestCase.__dict__.get(name)
            if original is None:
                for klass in unittest.TestCase.__mro__:
                    if name in klass.__dict__:
                        original = klass.__dict__[name]
                        break
            if not callable(original) or isinstance(original, type):
                continue
            if getattr(original, "_swedeck_wrapped", False):
                continue
            setattr(unittest.TestCase, name, _wrap(name, original))
        except Exception:
            pass


def _install_raises_wrapper() -> None:
    """``pytest.raises`` records at its caller's line, like a unittest assertion method: a call with a
    function when it returns or raises, a ``with`` block when the block exits (``Failed: DID NOT RAISE``
    comes out of ``__exit__``). Installed before the test modules are imported, so ``from pytest import
    raises`` gets it too. Only calls written in the rootdir record (a plugin's own use does not)."""
    original = pytest.raises
    if getattr(original, "_swedeck_wrapped", False):
        return

    @functools.wraps(original)
    def raises(*args, **kwargs):
        __tracebackhide__ = True
        site = None
        try:
            caller = sys._getframe(1)
            if _in_rootdir(caller.f_code.co_filename) and not _internal(caller.f_code.co_filename):
                site = _caller_site(caller, "raises")
        except Exception:
            site = None
        if site is None:
            return original(*args, **kwargs)
        nodeid = _STATE.nodeid
        try:
            result = original(*args, **kwargs)
        except (Exception, pytest.fail.Exception) as error:
            _record_call(site, nodeid, "failed")
            _tag(error)
            raise
        if hasattr(type(result), "__exit__"):
            return _RecordingContext(result, site, nodeid)
        _record_call(site, nodeid, "passed")
        return result

    raises._swedeck_wrapped = True  # type: ignore[attr-defined]
    pytest.raises = raises


def _force_fresh_rewrite() -> None:
    """Ignore rewritten-module caches, which may predate the pass hook (their key ignores the ini)."""
    try:
        from _pytest.assertion import rewrite

        rewrite._read_pyc = lambda *args, **kwargs: None  # type: ignore[assignment]
    except Exception:
        pass


if _STATE.path:
    _install_unittest_wrappers()
    _install_raises_wrapper()
    _force_fresh_rewrite()
