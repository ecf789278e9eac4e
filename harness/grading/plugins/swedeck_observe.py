"""swedeck_observe: what the code under test returns, raises and prints for each call the tests make into it.

PYTEST_DONT_REWRITE. Self-contained (standard library, pytest and its helper modules ``swedeck_observe_values``
and ``swedeck_observe_calls`` beside it): copied into task sandboxes with them and
loaded with ``-p swedeck_observe`` with its folder on ``PYTHONPATH``. Inactive unless the environment
names its inputs:

* ``SWEDECK_OBSERVE_TARGETS``: a file listing the functions to watch, one ``path::qualname`` a line
  (path relative to ``SWEDECK_OBSERVE_ROOT``, default the working directory; ``Class.method`` for a
  method, ``Class.__init__`` for a constructor);
* ``SWEDECK_OBSERVE_LOG``: where to append the records, one JSON object a line, each written with a
  single ``os.write``. The first line a process writes is ``{"plugin": "swedeck_observe"}``; then one
  record per observed call::

    {"test": <node id>, "ordinal": <n-th record of this test>, "target": "module:qualname",
     "file": <path as listed>, "args": [source | null], "kwargs": {name: source | null},
     "call": <standalone call source, "" when an argument has no evaluable source>,
     "imports": [<import lines the call and its arguments need>],
     "value": <canonical form of the return value, null when it raised>, "literal": <source of the
     return value when its repr evaluates back to it, else "">, "raised": <exception type, "" when it
     returned>, "stdout": <what the call printed>, "generator": bool, "complete": bool}

A call is observed when its caller is test code: the first frame above it that is not pytest's,
pluggy's or unittest's own (``pytest.raises(E, f, x)``, ``self.assertRaises(E, f, x)``) lies in a test
file (``test_*.py``, ``*_test.py``, ``conftest.py``, or a file under a ``test``/``tests``/``testing``
folder). So a parametrized case, a fixture, a test-class method and a unittest case are all seen, while the
target's calls from the library itself are not.

Why ``sys.settrace`` on code objects rather than wrapping the functions: a wrapper must be installed in
every place that holds a reference (``from pkg import f`` in a package ``__init__``, a star import, a
decorator's registry, a conftest imported before any hook of ours could run) and it changes what the
tests see (``__wrapped__``, identity, pickling); a tracer matches the code object wherever it is
called from, sees the arguments as bound in the callee's frame before its body runs, and changes
nothing the tests observe. The cost is one Python call per frame entered (returned ``None`` at once
for every code object that is not a target), as in swedeck_coverage, which never runs in the same
process. A generator function is observed through its yields (its frame starts when first resumed,
so its "caller" is whoever iterates it); a plain function returning an iterator is recorded as an
opaque ``["iterator", type]`` because consuming it would change the test. An exception counts as
raised when the frame returns right after it (no line ran in between). The plugin never changes an
outcome: its own errors are swallowed.
"""

from __future__ import annotations

import ast
import os
import sys
import threading

import pytest
from swedeck_observe_calls import _STATE, ANNOUNCE, MAX_RECORDS_PER_TEST, _Call

TARGETS_VAR, ROOT_VAR = "SWEDECK_OBSERVE_TARGETS", "SWEDECK_OBSERVE_ROOT"
FRAMEWORK = ("_pytest", "pytest", "pluggy", "unittest")
PASSTHROUGH = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS


class _Target:
    __slots__ = ("rel", "module", "qualname", "kind", "params", "vararg", "kwonly", "varkw")

    def __init__(self, rel, qualname, kind, params, vararg, kwonly, varkw):
        self.rel, self.qualname, self.kind = rel, qualname, kind  # kind: function, method, classmethod, staticmethod, init
        self.params, self.vararg, self.kwonly, self.varkw = params, vararg, kwonly, varkw
        self.module = ""


def _norm(path):
    return os.path.normcase(os.path.abspath(path))


def _first_line(node):
    lines = [node.lineno] + [d.lineno for d in node.decorator_list]
    return min(lines) if sys.version_info >= (3, 8) else node.lineno


def _load_targets():
    listing = os.environ.get(TARGETS_VAR, "")
    if not listing or not _STATE.log:
        return False
    root = os.environ.get(ROOT_VAR) or os.getcwd()
    _STATE.root = _norm(root)
    wanted = {}
    with open(listing, encoding="utf-8") as handle:
        for line in handle:
            rel, sep, qualname = line.strip().partition("::")
            if sep and qualname:
                wanted.setdefault(rel, set()).add(qualname)
    for rel, names in wanted.items():
        full = os.path.join(root, rel)
        try:
            with open(full, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
        except Exception:
            continue
        for qualname, node, kind in _defs(tree):
            if qualname in names:
                args = node.args
                params = [a.arg for a in list(getattr(args, "posonlyargs", [])) + list(args.args)]
                target = _Target(rel, qualname, kind, params, args.vararg.arg if args.vararg else None,
                                 [a.arg for a in args.kwonlyargs], args.kwarg.arg if args.kwarg else None)
                for path in {_norm(full), os.path.normcase(os.path.realpath(full))}:
                    _STATE.by_line[(path, _first_line(node))] = target
                    _STATE.files.add(path)
    return bool(_STATE.by_line)


def _defs(tree):
    """(qualname, def node, kind) of the module's functions and its classes' methods."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node, "function"))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = {d.id for d in item.decorator_list if isinstance(d, ast.Name)}
                    kind = ("init" if item.name == "__init__" else "classmethod" if "classmethod" in names
                            else "staticmethod" if "staticmethod" in names else "method")
                    out.append((node.name + "." + item.name, item, kind))
    return out


def _watched_file(filename):
    """The normalised path of a file holding targets, "" for any other (remembered: called on every frame)."""
    try:
        return _STATE.watched[filename]
    except KeyError:
        pass
    found = ""
    for path in (_norm(filename), os.path.normcase(os.path.realpath(filename))):
        if path in _STATE.files:
            found = path
            break
    _STATE.watched[filename] = found
    return found


def _test_file(filename):
    try:
        return _STATE.is_test[filename]
    except KeyError:
        pass
    path = filename.replace("\\", "/")
    base = path.rsplit("/", 1)[-1]
    parts = path.split("/")[:-1]
    found = (base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py"
             or any(p in ("test", "tests", "testing") for p in parts)) and base.endswith(".py")
    found = found and "site-packages" not in path and "dist-packages" not in path
    _STATE.is_test[filename] = found
    return found


def _framework(filename):
    parts = filename.replace("\\", "/").split("/")
    return any(p in FRAMEWORK for p in parts[-3:-1])


def _called_from_test(frame):
    caller = frame.f_back
    hops = 0
    while caller is not None and hops < 8 and (_framework(caller.f_code.co_filename) or _passthrough(caller.f_code)):
        caller = caller.f_back
        hops += 1
    return caller is not None and _test_file(caller.f_code.co_filename)


def _passthrough(code):
    """A decorator's wrapper: a closure taking ``*args, **kwargs`` (semver's ``@deprecated`` around
    ``match``), through which the test's call reaches the target."""
    return code.co_flags & PASSTHROUGH == PASSTHROUGH and bool(code.co_freevars)


def _trace(frame, event, arg):
    if event != "call":
        return None
    try:
        code = frame.f_code
        path = _watched_file(code.co_filename)
        if not path:
            return None
        target = _STATE.by_line.get((path, code.co_firstlineno))
        if target is None or threading.get_ident() != _STATE.main:
            return None
        existing = _STATE.open.get(id(frame))
        if existing is not None and existing.generator:  # a generator resumed
            existing.start()
            return existing
        if not _called_from_test(frame):
            return None
        # a test past its record cap writes nothing more, so reading its arguments (a large object's
        # source, once per call in a loop) is skipped: boltons' BarrelList test took 130 s observed
        if _STATE.ordinal.get(_STATE.test, 0) >= MAX_RECORDS_PER_TEST:
            return None
        target.module = target.module or frame.f_globals.get("__name__", "")
        call = _Call(target, frame)
        _STATE.open[id(frame)] = call
        call.start()
        return call
    except Exception:
        return None


def _close_generators():
    """Generators the test left unfinished: recorded with what they yielded so far."""
    for key, call in list(_STATE.open.items()):
        _STATE.open.pop(key, None)
        call.stop()
        if call.generator:
            call.finish(["iterator", call.items], "", False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _ACTIVE:
        yield
        return
    if sys.gettrace() is not _trace:
        sys.settrace(_trace)
    _STATE.test = getattr(item, "nodeid", "")
    try:
        yield
    finally:
        _close_generators()
        _STATE.test = ""
        _STATE.built.clear()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if not _ACTIVE:
        return
    sys.settrace(None)
    _close_generators()
    try:
        if _STATE.fd is None:
            _emit_announce_only()
        if _STATE.fd is not None:
            os.close(_STATE.fd)
            _STATE.fd = None
    except Exception:
        pass


def _emit_announce_only():
    with _STATE.lock:
        _STATE.fd = os.open(_STATE.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(_STATE.fd, ANNOUNCE.encode())


_ACTIVE = False
try:
    _ACTIVE = _load_targets()
except Exception:
    _ACTIVE = False
if _ACTIVE:
    sys.settrace(_trace)
