"""swedeck_coverage: per-test line coverage of a few named files, for change-impact test selection.

PYTEST_DONT_REWRITE. Self-contained (standard library and pytest only): copied into task sandboxes and
loaded with ``-p swedeck_coverage`` with its folder on ``PYTHONPATH``. Inactive unless the environment
names its inputs:

* ``SWEDECK_COVER_FILES``: a file listing the paths to trace, one per line, relative to
  ``SWEDECK_COVER_ROOT`` (the tree's root; default: the working directory);
* ``SWEDECK_COVER_LOG``: where to append the records, one JSON object per line, each written with a
  single ``os.write`` (so several processes may share the file)::

    {"test": <node id>, "lines": {path: [line, ...]}, "calls": {path: [first line of a code object, ...]},
     "spawned": bool, "lost": bool}
    {"global": true, "pid": ..., "lines": ..., "calls": ..., "spawned": bool, "lost": bool}

A test's record holds what ran while pytest ran that test (its setup, call and teardown, function-scoped
fixtures included). Everything else goes to the ``global`` record, written when pytest unconfigures; a
consumer must treat global lines as touched by every test, and a run without a global record as unusable:

* anything outside a test: imports at collection, conftest code, session teardown;
* the setup of a fixture whose scope is wider than a function (its value outlives the test);
* any module body (``<module>`` code: an import, or an ``exec`` of source) run during a test, together
  with everything it calls, since what it computes outlives the test;
* anything run by a thread other than the main one (it may outlive the test that started it).

``calls`` lists ``co_firstlineno`` of each traced code object entered (a function called, a generator
resumed), which tells a consumer a test entered a function even when the line it changed never ran.
``spawned``: the test started a process (audit events for subprocesses, ``os.system``, ``exec*``,
``spawn*``, ``fork``); what that process ran is not traced, so a consumer must treat the test as
touching everything. In the global record it means a process started where the project's code could
have started it for the tests' sake: while a wider-scoped fixture was set up, while a module body from
the tree (not a ``site-packages`` one) ran, or from another thread; a consumer must then distrust the run.
Processes pytest plugins start for themselves (version-control queries, platform probes) do not count. ``lost``: another tracer replaced
ours (pytest-cov, a debugger, a test calling ``sys.settrace``) during the test; the coverage of the whole
run is then incomplete and must not be used.

Only ``sys.settrace`` is used (Python 3.7+); a frame of an untraced file costs one Python call on entry.
The plugin never changes an outcome: its own errors are swallowed.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import pytest

FILES_VAR, LOG_VAR, ROOT_VAR = "SWEDECK_COVER_FILES", "SWEDECK_COVER_LOG", "SWEDECK_COVER_ROOT"
GLOBAL = ""  # the context of everything not attributed to one test
SPAWN_EVENTS = {
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "pty.spawn", "os.startfile",
}  # fmt: skip


class _State:
    def __init__(self):
        self.log = os.environ.get(LOG_VAR, "")
        self.targets = {}  # normalised absolute path -> path as listed
        self.seen = {}  # co_filename -> listed path or None
        self.context = GLOBAL
        self.module_depth = 0  # module bodies running (imports, exec): their work is global
        self.root_depth = 0  # ... of which from the tree, not from site-packages
        self.fixture_depth = 0  # wider-scoped fixtures being set up
        self.root = ""  # the tree, normalised
        self.lines = {}  # context -> {path: set of lines}
        self.calls = {}  # context -> {path: set of co_firstlineno}
        self.spawned = set()  # contexts that started a process
        self.lost = set()  # contexts during which our tracer was replaced
        self.main = threading.get_ident()
        self.lock = threading.Lock()
        self.fd = None


_STATE = _State()


def _norm(path):
    return os.path.normcase(os.path.abspath(path))


def _load_targets():
    listing = os.environ.get(FILES_VAR, "")
    if not listing or not _STATE.log:
        return False
    root = os.environ.get(ROOT_VAR) or os.getcwd()
    _STATE.root = _norm(root)
    with open(listing, encoding="utf-8") as handle:
        for line in handle:
            rel = line.rstrip("\n")
            if rel.strip():
                full = os.path.join(root, rel)
                _STATE.targets[_norm(full)] = rel
                _STATE.targets[os.path.normcase(os.path.realpath(full))] = rel
    return bool(_STATE.targets)


def _lookup(filename):
    try:
        return _STATE.seen[filename]
    except KeyError:
        pass
    rel = None
    try:
        rel = _STATE.targets.get(_norm(filename))
        if rel is None:
            rel = _STATE.targets.get(os.path.normcase(os.path.realpath(filename)))
    except Exception:
        rel = None
    _STATE.seen[filename] = rel
    return rel


def _context():
    if _STATE.module_depth or threading.get_ident() != _STATE.main:
        return GLOBAL
    return _STATE.context


def _add(table, context, rel, value):
    per = table.get(context)
    if per is None:
        per = table[context] = {}
    found = per.get(rel)
    if found is None:
        found = per[rel] = set()
    found.add(value)


def _in_tree(filename):
    path = _norm(filename)
    return path.startswith(_STATE.root + os.sep) and "site-packages" not in path and "dist-packages" not in path


class _Local:
    """The local tracer of one traced frame: records its lines; ends a module body on return."""

    __slots__ = ("rel", "module")

    def __init__(self, rel, module):
        self.rel = rel
        self.module = module

    def __call__(self, frame, event, arg):
        if event == "line":
            _add(_STATE.lines, _context(), self.rel, frame.f_lineno)
        elif event == "return" and self.module:
            _STATE.module_depth -= 1
            _STATE.root_depth -= 1
            self.module = False
        return self


class _ModuleBody:
    """The local tracer of an untraced module body: only watches for its end."""

    __slots__ = ("active", "root")

    def __init__(self, root):
        self.active = True
        self.root = root

    def __call__(self, frame, event, arg):
        if event == "return" and self.active:
            _STATE.module_depth -= 1
            _STATE.root_depth -= self.root
            self.active = False
        return self


def _trace(frame, event, arg):
    if event != "call":
        return None
    try:
        code = frame.f_code
        rel = _lookup(code.co_filename)
        module = code.co_name == "<module>" and threading.get_ident() == _STATE.main
        if rel is None:
            if module:
                root = 1 if _in_tree(code.co_filename) else 0
                _STATE.module_depth += 1
                _STATE.root_depth += root
                frame.f_trace_lines = False
                return _ModuleBody(root)
            return None
        if module:
            _STATE.module_depth += 1
            _STATE.root_depth += 1
        _add(_STATE.calls, _context(), rel, code.co_firstlineno)
        return _Local(rel, module)
    except Exception:
        return None


def _audit(event, args):
    if event not in SPAWN_EVENTS:
        return
    context = _context()
    if context != GLOBAL or _STATE.fixture_depth or _STATE.root_depth or threading.get_ident() != _STATE.main:
        _STATE.spawned.add(context)


def _jsonable(table):
    return {rel: sorted(values) for rel, values in sorted((table or {}).items())}


def _emit(row):
    try:
        data = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
        with _STATE.lock:
            if _STATE.fd is None:
                _STATE.fd = os.open(_STATE.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(_STATE.fd, data)
    except Exception:
        pass


def _flush(context, extra):
    row = dict(extra)
    row["lines"] = _jsonable(_STATE.lines.pop(context, None))
    row["calls"] = _jsonable(_STATE.calls.pop(context, None))
    row["spawned"] = context in _STATE.spawned
    row["lost"] = context in _STATE.lost
    _STATE.spawned.discard(context)
    _STATE.lost.discard(context)
    _emit(row)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _ACTIVE:
        yield
        return
    nodeid = getattr(item, "nodeid", "")
    if sys.gettrace() is not _trace:
        _STATE.lost.add(GLOBAL)  # replaced between tests: earlier global work may be missing too
        sys.settrace(_trace)
    _STATE.context = nodeid
    try:
        yield
    finally:
        if sys.gettrace() is not _trace:
            _STATE.lost.add(nodeid)
            sys.settrace(_trace)
        _STATE.context = GLOBAL
        _flush(nodeid, {"test": nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    if not _ACTIVE or getattr(fixturedef, "scope", "function") == "function":
        yield
        return
    saved = _STATE.context
    _STATE.context = GLOBAL
    _STATE.fixture_depth += 1
    try:
        yield
    finally:
        _STATE.context = saved
        _STATE.fixture_depth -= 1


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if not _ACTIVE:
        return
    if sys.gettrace() is not _trace:
        _STATE.lost.add(GLOBAL)
    sys.settrace(None)
    threading.settrace(None)
    for context in [c for c in set(_STATE.lines) | set(_STATE.calls) if c != GLOBAL]:
        _merge_into_global(context)  # a test that never finished (pytest stopped inside it)
    _flush(GLOBAL, {"global": True, "pid": os.getpid()})
    try:
        if _STATE.fd is not None:
            os.close(_STATE.fd)
            _STATE.fd = None
    except Exception:
        pass


def _merge_into_global(context):
    for table in (_STATE.lines, _STATE.calls):
        for rel, values in table.pop(context, {}).items():
            for value in values:
                _add(table, GLOBAL, rel, value)
    if context in _STATE.spawned:
        _STATE.spawned.add(GLOBAL)
    if context in _STATE.lost:
        _STATE.lost.add(GLOBAL)


_ACTIVE = False
try:
    _ACTIVE = _load_targets()
except Exception:
    _ACTIVE = False
if _ACTIVE:
    try:
        sys.addaudithook(_audit)
    except Exception:  # Python < 3.8: no audit hooks, so no way to see a process start
        _STATE.lost.add(GLOBAL)
    threading.settrace(_trace)
    sys.settrace(_trace)
