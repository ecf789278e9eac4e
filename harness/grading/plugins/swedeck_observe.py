"""swedeck_observe: what the code under test returns, raises and prints for each call the tests make into it.

PYTEST_DONT_REWRITE. Self-contained (standard library, pytest and its helper modules ``swedeck_observe_values``
and ``swedeck_observe_calls`` beside it): copied into task sandboxes with them and
loaded with ``-p swedeck_observe`` with its folder on ``PYTHONPATH``. Inactive unless the environment
names its inputs:

* ``SWEDECK_OBSERVE_TARGETS``: a file listing the functions to watch, one ``path::qualname`` a line
  (path relative to ``SWEDECK_OBSERVE_ROOT``, default the working directory; ``Class.method`` for a
  method, ``Class.__init__`` for a constructor), followed by `` changed`` for a function gold changed
  (entries, below);
* ``SWEDECK_OBSERVE_LOG``: where to append the records, one JSON object a line, each written with a
  single ``os.write``. The first line a process writes is ``{"plugin": "swedeck_observe"}``; then one
  record per observed call::

    {"test": <node id>, "ordinal": <n-th record of this test>, "target": "module:qualname",
     "file": <path as listed>, "args": [source | null], "kwargs": {name: source | null},
     "call": <standalone call source, "" when an argument has no evaluable source>,
     "imports": [<import lines the call and its arguments need>],
     "value": <canonical form of the return value, null when it raised>, "literal": <source of the
     return value when its repr evaluates back to it, else "">, "raised": <exception type, "" when it
     returned>, "stdout": <what the call printed>, "generator": bool, "complete": bool, "entry": bool}

A call is observed when its caller is test code: the first frame above it that is not pytest's,
pluggy's or unittest's own (``pytest.raises(E, f, x)``, ``self.assertRaises(E, f, x)``) lies in a test
file (``test_*.py``, ``*_test.py``, ``conftest.py``, or a file under a ``test``/``tests``/``testing``
folder). So a parametrized case, a fixture, a test-class method and a unittest case are all seen, while the
target's calls from the library itself are not.

Entries: a call from test code into any other function of the project (a file under the root that is no
test file) whose execution reaches, at any depth, a function listed as ``changed`` is recorded too
(``"entry": true``, its value and arguments as a target's), when it returns: a facade (a top-level
``split()`` dispatching to a private method of another module's class) is how the tests reach gold's
change, and no target is called from test code then. Its arguments are kept by reference when it starts
(before its body rebinds them) and written as source only where it reached. An entry that reached
nothing but built an object of the project (a constructor, ``compile('{:d}')``) is remembered as the call
that built it, so a later entry taking that object (``Parser.parse(compile('{:d}'), '1')``) is written
as a standalone call. Cost: a cached lookup per
frame entered in the project, and per call from test code a local tracer without line events; at most
``MAX_ENTRIES_PER_TEST`` such calls a test. Generators and coroutines are not entries (their frames start
when iterated, not when called).

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
from swedeck_observe_calls import _STATE, ANNOUNCE, MAX_BUILT, MAX_RECORDS_PER_TEST, _Call, _exc_name, _remember
from swedeck_observe_values import canon

TARGETS_VAR, ROOT_VAR = "SWEDECK_OBSERVE_TARGETS", "SWEDECK_OBSERVE_ROOT"
FRAMEWORK = ("_pytest", "pytest", "pluggy", "unittest")
PASSTHROUGH = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS
LAZY = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR
MAX_ENTRIES_PER_TEST = 2000  # calls from test code into the project followed per test


class _Target:
    __slots__ = ("rel", "module", "qualname", "kind", "params", "vararg", "kwonly", "varkw", "changed")

    def __init__(self, rel, qualname, kind, params, vararg, kwonly, varkw):
        self.rel, self.qualname, self.kind = rel, qualname, kind  # kind: function, method, classmethod, staticmethod, init
        self.params, self.vararg, self.kwonly, self.varkw = params, vararg, kwonly, varkw
        self.module = ""
        self.changed = False  # gold changed it: an entry whose execution reaches it is recorded


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
    wanted, changed = {}, set()
    with open(listing, encoding="utf-8") as handle:
        for line in handle:
            rel, sep, rest = line.strip().partition("::")
            qualname, _, flag = rest.partition(" ")
            if sep and qualname:
                wanted.setdefault(rel, set()).add(qualname)
                if flag == "changed":
                    changed.add((rel, qualname))
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
                target.changed = (rel, qualname) in changed
                _STATE.entering = _STATE.entering or target.changed
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
    try:
        return _STATE.is_framework[filename]
    except KeyError:
        pass
    parts = filename.replace("\\", "/").split("/")
    found = _STATE.is_framework[filename] = any(p in FRAMEWORK for p in parts[-3:-1])
    return found


def _project_file(filename):
    """The path relative to the root of a project file that is no test file, "" for any other (remembered)."""
    try:
        return _STATE.in_project[filename]
    except KeyError:
        pass
    path, found = _norm(filename), ""
    if (path.startswith(_STATE.root + os.sep) and path.endswith(".py") and not _test_file(filename)
            and not _framework(filename) and not path.startswith(_norm(os.path.dirname(__file__)) + os.sep)):
        found = os.path.relpath(path, _STATE.root)
    _STATE.in_project[filename] = found
    return found


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
        target = _STATE.by_line.get((path, code.co_firstlineno)) if path else None
        if target is None:
            return _entry(frame) if _STATE.entering else None
        if threading.get_ident() != _STATE.main:
            return None
        if target.changed:
            for entry in _STATE.entries:
                entry.reached = True
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


class _Entry:
    """The local tracer of a call from test code into the project: no line events, only whether it
    raised, and when it returns, its record where it reached a changed function."""

    __slots__ = ("target", "local", "reached", "pending", "raised_at")

    def __init__(self, target, local):
        self.target, self.local, self.reached = target, local, False
        self.pending, self.raised_at = None, -1

    def __call__(self, frame, event, arg):
        try:
            if event == "exception":
                self.pending, self.raised_at = arg[0], frame.f_lasti
            elif event == "return":
                if _STATE.entries and _STATE.entries[-1] is self:
                    _STATE.entries.pop()
                elif self in _STATE.entries:
                    _STATE.entries.remove(self)
                self.close(frame, arg)
        except Exception:
            pass
        return self

    def close(self, frame, arg):
        # an exception caught inside lets the frame go on: it raised only if it returns where it raised
        raised = _exc_name(self.pending) if self.pending is not None and arg is None and frame.f_lasti == self.raised_at else ""
        init = self.target.kind == "init"
        made = self.local.get(self.target.params[0]) if init and self.target.params else arg
        if not self.reached and (raised or len(_STATE.built) >= MAX_BUILT or not _of_project(made)):
            return
        call = _Call(self.target, frame, self.local)
        if self.reached:
            call.finish(None if raised else canon(made), raised, True, None if raised else made, entry=True)
        elif call.reproducible:
            _remember(made, call.source(), call.all_imports(), canon(made))


def _of_project(value):
    """An instance of a class the project defines (``Parser('{:d}')``, what ``compile('{:d}')`` returns)."""
    module = sys.modules.get(type(value).__module__)
    return bool(_project_file(getattr(module, "__file__", None) or ""))


def _entry(frame):
    """The tracer of a call from test code into a project function no target is, or None."""
    code = frame.f_code
    rel = _project_file(code.co_filename)
    if not rel or code.co_flags & LAZY or not _STATE.test or threading.get_ident() != _STATE.main:
        return None
    if not _called_from_test(frame):
        return None
    count = _STATE.entered.get(_STATE.test, 0)
    if count >= MAX_ENTRIES_PER_TEST or _STATE.ordinal.get(_STATE.test, 0) >= MAX_RECORDS_PER_TEST:
        return None
    _STATE.entered[_STATE.test] = count + 1
    target = _entry_target(frame, rel)
    if target is None:
        return None
    entry = _Entry(target, dict(frame.f_locals))
    _STATE.entries.append(entry)
    frame.f_trace_lines = False
    return entry


def _entry_target(frame, rel):
    """A project function as a target, where a standalone call can name it (a module's function, a
    method of one of its classes); None for a closure, a lambda, a property (remembered per code object)."""
    code = frame.f_code
    try:
        return _STATE.entry_targets[code]
    except KeyError:
        pass
    qualname = getattr(code, "co_qualname", code.co_name)
    kind = _kind(frame.f_globals, qualname.split("."), code) if "<" not in qualname else ""
    target = None
    if kind:
        names, n, k = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
        vararg = names[n + k] if code.co_flags & 0x04 else None
        varkw = names[n + k + (1 if vararg else 0)] if code.co_flags & 0x08 else None
        target = _Target(rel, qualname, kind, list(names[:n]), vararg, list(names[n : n + k]), varkw)
        target.module = frame.f_globals.get("__name__", "")
    _STATE.entry_targets[code] = target
    return target


def _is(func, code):
    """``func`` runs ``code``, itself or through ``functools.wraps`` (calling it calls the wrapper with the same arguments)."""
    for _ in range(4):
        if getattr(func, "__code__", None) is code:
            return True
        func = getattr(func, "__wrapped__", None)
        if func is None:
            return False
    return False


def _kind(namespace, parts, code):
    """How a standalone call names the function ``parts`` of a module: function, method, classmethod,
    staticmethod, init, or ""."""
    if len(parts) == 1:
        return "function" if _is(namespace.get(parts[0]), code) else ""
    if len(parts) != 2 or not isinstance(namespace.get(parts[0]), type):
        return ""
    raw = namespace[parts[0]].__dict__.get(parts[1])
    if isinstance(raw, classmethod):
        return "classmethod" if _is(raw.__func__, code) else ""
    if isinstance(raw, staticmethod):
        return "staticmethod" if _is(raw.__func__, code) else ""
    if not _is(raw, code):
        return ""
    return "init" if parts[1] == "__init__" else "method"


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
        del _STATE.entries[:]


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
