"""swedeck_observe: what the code under test returns, raises and prints for each call the tests make into it.

PYTEST_DONT_REWRITE. Self-contained (standard library and pytest only): copied into task sandboxes and
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
import builtins
import dis
import json
import os
import re
import sys
import threading

import pytest

TARGETS_VAR, LOG_VAR, ROOT_VAR = "SWEDECK_OBSERVE_TARGETS", "SWEDECK_OBSERVE_LOG", "SWEDECK_OBSERVE_ROOT"
ANNOUNCE = '{"plugin": "swedeck_observe"}\n'
MAX_RECORDS_PER_TEST = 200
MAX_ITEMS = 200  # items of a container or a generator recorded
MAX_SOURCE = 2000  # characters of an argument's source
MAX_BUILT = 500  # objects per test whose building call is remembered
FRAMEWORK = ("_pytest", "pytest", "pluggy", "unittest")
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
CO_GENERATOR = 0x20
PASSTHROUGH = 0x04 | 0x08  # CO_VARARGS | CO_VARKEYWORDS


def canon(value, depth=0):
    """A JSON form of a value that is equal on two trees exactly when the values look the same
    (``probes.diff_driver.canon``, except that an iterator is not consumed)."""
    if depth > 6:
        return "..."
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [canon(v, depth + 1) for v in value[:MAX_ITEMS]]]
    if isinstance(value, (set, frozenset)):
        return [type(value).__name__, sorted(json.dumps(canon(v, depth + 1)) for v in value)]
    if isinstance(value, dict):
        return [type(value).__name__, [[canon(k, depth + 1), canon(v, depth + 1)] for k, v in list(value.items())[:MAX_ITEMS]]]
    if hasattr(value, "__next__") and hasattr(value, "__iter__"):
        return ["iterator", type(value).__qualname__]
    text = ADDRESS.sub("", repr(value))
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict) and not isinstance(value, type) and " object>" in text:
        # an object with no repr of its own: its public plain data, never its internals (a compiled
        # pattern, a cache), which a correct alternative may build otherwise (boltons-435774e)
        public = {k: v for k, v in state.items() if not k.startswith("_") and plain(v)}
        return [type(value).__qualname__, canon(public, depth + 1)]
    return [type(value).__qualname__, text]


def plain(value, depth=0):
    """Data the standard library's literals can hold, all the way down."""
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return True
    if depth > 4:
        return False
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(plain(v, depth + 1) for v in list(value)[:200])
    if isinstance(value, dict):
        return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in list(value.items())[:200])
    return False


def _types_in(value, found, depth=0):
    if depth > 4 or len(found) > 20:
        return
    found.append(type(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value)[:MAX_ITEMS]:
            _types_in(item, found, depth + 1)
    elif isinstance(value, dict):
        for key, item in list(value.items())[:MAX_ITEMS]:
            _types_in(key, found, depth + 1)
            _types_in(item, found, depth + 1)


def source_of(value, home=None):
    """Source that evaluates back to an equal value of the same type, with the imports it needs; None
    when there is none. A repr is evaluated with the names it uses from the modules that define the
    value's types (``complement({'a'})`` of boltons.setutils); a value with no such repr (an address in
    it, one that does not round-trip) that is a module-level name of ``home`` (the target's module:
    ``(name, globals)``) is written as that name: a default such as ``UTC`` or a sentinel."""
    try:
        if isinstance(value, type) and "<" not in value.__qualname__:
            module = value.__module__
            if module == "builtins":
                return value.__qualname__, []
            top = value.__qualname__.split(".")[0]
            return value.__qualname__, ["from %s import %s" % (module, top)]
        got = _repr_source(value)
        if got is None and home is not None:
            got = _global_name(value, *home)
        return got
    except Exception:
        return None


def _repr_source(value):
    text = repr(value)
    if ADDRESS.search(text) or len(text) > MAX_SOURCE:
        return None
    types = []
    _types_in(value, types)
    namespace, imports = {}, []
    for cls in dict.fromkeys(types):
        module, name = cls.__module__, cls.__qualname__
        if module == "builtins" or "<" in name or "." in name:
            continue
        namespace[name] = cls
        imports.append("from %s import %s" % (module, name))
        top = module.split(".")[0]
        if top in sys.modules:
            namespace.setdefault(top, sys.modules[top])
            imports.append("import %s" % top)
    try:
        names = {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError):
        return None
    for cls in dict.fromkeys(types):
        defined = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
        for name in sorted(names - set(namespace)):
            if name in defined and not hasattr(builtins, name):
                namespace[name] = defined[name]
                imports.append("from %s import %s" % (cls.__module__, name))
    again = eval(text, namespace)  # noqa: S307 - a repr, in the sandbox
    if type(again) is not type(value) or not (again == value):
        return None
    used = [line for line in imports if re.search(r"\b%s\b" % re.escape(line.split()[-1]), text)]
    return text, used


def _global_name(value, module, namespace):
    if isinstance(value, (bool, int, float, str, bytes, tuple, list, dict, set)) or value is None:
        return None  # a value whose source failed for another reason; a name would hide that
    for name, held in list(namespace.items()):
        if held is value and not name.startswith("__") and name.isidentifier():
            return name, ["from %s import %s" % (module, name)]
    return None


class _Target:
    __slots__ = ("rel", "module", "qualname", "kind", "params", "vararg", "kwonly", "varkw")

    def __init__(self, rel, qualname, kind, params, vararg, kwonly, varkw):
        self.rel, self.qualname, self.kind = rel, qualname, kind  # kind: function, method, classmethod, staticmethod, init
        self.params, self.vararg, self.kwonly, self.varkw = params, vararg, kwonly, varkw
        self.module = ""


class _State:
    def __init__(self):
        self.log = os.environ.get(LOG_VAR, "")
        self.root = ""
        self.by_line = {}  # (normalised file, first line of the code object) -> _Target
        self.files = set()
        self.watched = {}  # co_filename -> normalised path when it holds targets, else ""
        self.is_test = {}  # co_filename -> bool
        self.test = ""
        self.ordinal = {}
        self.open = {}  # id(frame) -> _Call
        self.built = {}  # id(object) -> (object, the call that built it, its imports, its canon then); per test
        self.main = threading.get_ident()
        self.lock = threading.Lock()
        self.fd = None


_STATE = _State()


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


class _Tee:
    """sys.stdout during an observed call: writes go through, and are kept."""

    def __init__(self, inner):
        self.inner, self.kept = inner, []

    def write(self, text):
        self.kept.append(text)
        return self.inner.write(text) if self.inner is not None else len(text)

    def flush(self):
        if self.inner is not None:
            self.inner.flush()

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _Call:
    """The local tracer of one observed frame."""

    __slots__ = ("target", "test", "args", "kwargs", "imports", "reproducible", "pending", "items", "generator",
                 "tee", "saved", "home")

    def __init__(self, target, frame):
        self.target, self.test = target, _STATE.test
        self.generator = bool(frame.f_code.co_flags & CO_GENERATOR)
        self.pending, self.items, self.tee, self.saved = None, [], None, None
        local = frame.f_locals
        self.home = (frame.f_globals.get("__name__", ""), frame.f_globals)
        self.args, self.kwargs, self.imports, self.reproducible = [], {}, [], True
        params = list(target.params)
        if target.kind in ("classmethod", "init") and params:
            params = params[1:]
        elif target.kind == "method" and params:  # the instance is the first argument: ``Class.method(obj, ...)``
            self.args.append(self._take(self._source(local.get(params[0]))))
            params = params[1:]
        for name in params:
            self.args.append(self._take(self._source(local.get(name))))
        if target.vararg:
            for value in local.get(target.vararg, ()):
                self.args.append(self._take(self._source(value)))
        for name in target.kwonly:
            self.kwargs[name] = self._take(self._source(local.get(name)))
        if target.varkw:
            for name, value in dict(local.get(target.varkw, {})).items():
                self.kwargs[name] = self._take(self._source(value))

    def _source(self, value):
        return source_of(value, self.home) or _built(value)

    def _take(self, got):
        if got is None:
            self.reproducible = False
            return None
        self.imports.extend(line for line in got[1] if line not in self.imports)
        return got[0]

    def start(self):
        self.saved = sys.stdout
        self.tee = _Tee(self.saved)
        sys.stdout = self.tee

    def stop(self):
        if self.tee is not None and sys.stdout is self.tee:
            sys.stdout = self.saved
        self.saved = None

    def __call__(self, frame, event, arg):
        try:
            if event == "line":
                self.pending = None
            elif event == "exception":
                self.pending = arg[0]
            elif event == "return":
                self.stop()
                if self.generator and _suspended(frame) and self.pending is None:
                    self.items.append(canon(arg, 1))
                    return self
                _STATE.open.pop(id(frame), None)
                if self.generator and self.pending is GeneratorExit:  # closed by its consumer, unfinished
                    self.finish(["iterator", self.items], "", False)
                elif self.pending is not None and arg is None:
                    self.finish(None, _exc_name(self.pending), True)
                elif self.generator:
                    self.finish(["iterator", self.items], "", True)
                elif self.target.kind == "init":
                    made = frame.f_locals.get(self.target.params[0]) if self.target.params else None
                    self.finish(canon(made), "", True, made)
                else:
                    self.finish(canon(arg), "", True, arg)
        except Exception:
            pass
        return self

    def finish(self, value, raised, complete, returned=None):
        target = self.target
        head = target.qualname.split(".")[0]
        imports = list(dict.fromkeys(["from %s import %s" % (target.module, head)] + self.imports))
        call = ""
        if self.reproducible:
            parts = list(self.args) + ["%s=%s" % (k, v) for k, v in self.kwargs.items()]
            func = target.qualname.rsplit(".", 1)[0] if target.kind == "init" else target.qualname
            call = "%s(%s)" % (func, ", ".join(parts))
        literal = ""
        if not raised and not self.generator and target.kind != "init":
            got = source_of(returned)
            literal = got[0] if got else ""
        if call and not raised and not self.generator and returned is not None and not literal:
            _remember(returned, call, imports, value)
        n = _STATE.ordinal.get(self.test, 0)
        if n >= MAX_RECORDS_PER_TEST:
            return
        _STATE.ordinal[self.test] = n + 1
        _emit({"test": self.test, "ordinal": n, "target": "%s:%s" % (target.module, target.qualname), "file": target.rel,
               "args": self.args, "kwargs": self.kwargs, "call": call, "imports": imports, "value": value,
               "literal": literal, "raised": raised, "stdout": "".join(self.tee.kept if self.tee else [])[-2000:],
               "generator": self.generator, "complete": complete})


def _remember(obj, call, imports, value):
    """How an object a test got from a watched call was built (``m = MultiReplace({...})`` then
    ``m.sub(text)``), so a later call taking it as an argument can be replayed standalone."""
    if isinstance(obj, (bool, int, float, str, bytes, list, tuple, dict, set, frozenset)) or len(_STATE.built) >= MAX_BUILT:
        return
    _STATE.built[id(obj)] = (obj, call, imports, json.dumps(value, sort_keys=True))


def _built(value):
    """The call that built ``value`` in this test, while the object still looks as it did then."""
    got = _STATE.built.get(id(value))
    if got is None or got[0] is not value or json.dumps(canon(value), sort_keys=True) != got[3]:
        return None
    return got[1], got[2]


def _suspended(frame):
    """The generator frame returned by yielding (it will resume), not by finishing."""
    try:
        code = frame.f_code.co_code
        name = dis.opname[code[frame.f_lasti]]
        return name.startswith("YIELD") or name in ("SEND", "RESUME")
    except Exception:
        return False


def _exc_name(cls):
    return cls.__qualname__ if cls.__module__ == "builtins" else "%s.%s" % (cls.__module__, cls.__qualname__)


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
        target.module = target.module or frame.f_globals.get("__name__", "")
        call = _Call(target, frame)
        _STATE.open[id(frame)] = call
        call.start()
        return call
    except Exception:
        return None


def _emit(row):
    try:
        data = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8")
        with _STATE.lock:
            if _STATE.fd is None:
                _STATE.fd = os.open(_STATE.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                os.write(_STATE.fd, ANNOUNCE.encode())
            os.write(_STATE.fd, data)
    except Exception:
        pass


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
