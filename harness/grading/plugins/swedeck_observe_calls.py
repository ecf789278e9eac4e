"""swedeck_observe's records: the plugin's state, the tracer of one observed call, and the log it writes to."""

from __future__ import annotations

import dis
import json
import os
import sys
import threading

from swedeck_observe_values import canon, source_of

LOG_VAR = "SWEDECK_OBSERVE_LOG"
ANNOUNCE = '{"plugin": "swedeck_observe"}\n'
MAX_RECORDS_PER_TEST = 200
MAX_BUILT = 500  # objects per test whose building call is remembered
CO_GENERATOR = 0x20


class _State:
    def __init__(self):
        self.log = os.environ.get(LOG_VAR, "")
        self.root = ""
        self.by_line = {}  # (normalised file, first line of the code object) -> _Target
        self.files = set()
        self.watched = {}  # co_filename -> normalised path when it holds targets, else ""
        self.is_test = {}  # co_filename -> bool
        self.is_framework = {}  # co_filename -> bool
        self.in_project = {}  # co_filename -> path relative to the root of a project file no test file is, else ""
        self.entering = False  # a target is listed as changed: calls from test code into the project are followed
        self.entries = []  # the open calls from test code into the project (swedeck_observe._Entry)
        self.entered = {}  # test -> calls from test code into the project followed
        self.entry_targets = {}  # code object -> its _Target as an entry, None where no standalone call names it
        self.test = ""
        self.ordinal = {}
        self.open = {}  # id(frame) -> _Call
        self.built = {}  # id(object) -> (object, the call that built it, its imports, its canon then); per test
        self.main = threading.get_ident()
        self.lock = threading.Lock()
        self.fd = None


_STATE = _State()


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

    def __init__(self, target, frame, local=None):
        self.target, self.test = target, _STATE.test
        self.generator = bool(frame.f_code.co_flags & CO_GENERATOR)
        self.pending, self.items, self.tee, self.saved = None, [], None, None
        local = frame.f_locals if local is None else local  # an entry's: its arguments as they were when it started
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

    def all_imports(self):
        head = self.target.qualname.split(".")[0]
        return list(dict.fromkeys(["from %s import %s" % (self.target.module, head)] + self.imports))

    def source(self):
        """The standalone call, "" when an argument has no evaluable source; a callable instance's
        ``__call__`` as the instance's call (``rrulestr('...')``, not ``_rrulestr.__call__(rrulestr, '...')``)."""
        if not self.reproducible:
            return ""
        parts = list(self.args) + ["%s=%s" % (k, v) for k, v in self.kwargs.items()]
        func = self.target.qualname.rsplit(".", 1)[0] if self.target.kind == "init" else self.target.qualname
        if self.target.kind == "method" and func.endswith(".__call__") and parts:
            func, parts = parts[0], parts[1:]
        return "%s(%s)" % (func, ", ".join(parts))

    def finish(self, value, raised, complete, returned=None, entry=False):
        target = self.target
        imports, call = self.all_imports(), self.source()
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
               "generator": self.generator, "complete": complete, "entry": entry})


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
