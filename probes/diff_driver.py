"""The differential engine's driver: runs inside a sandbox, on one tree, with only the standard library
(and the tree's own pytest, for the tests that take fixtures).

``python diff_driver.py SPEC OUT`` reads a JSON spec of programs (each the statements of one
FAIL_TO_PASS test, with its asserts turned into observations, or with an empty ``test_file`` a
standalone call of ``probes.observe`` run in a fresh namespace) and writes what each observation did:
the canonical form of the value it returned, the exception type it raised, what it printed, and
whether it entered a file gold changed. ``probes.differential`` writes the spec and compares the
output of two trees; nothing here decides anything.

Spec: ``{"changed": [paths], "timeout_s": float, "discover": bool, "paths": [folders put on sys.path],
"programs": [{"key", "test_id", "test_file",
"cls", "method", "steps": [{"kind": "exec"|"observe", "src"}], "names": [identifiers], "fixtures": [argnames],
"decorators": [source]}]}``.
A program with fixtures runs through pytest (``InPytest``), the others in a namespace of their own.
Out: ``{"results": {key: [observation]}, "alternatives": {key: {name: [[module, attr], ...]}},
"params": {key: {argname: source}}}`` (``params``: a parametrized case's own values).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import json
import os
import re
import signal
import sys
import types

MAX_ALTERNATIVES = 6  # other module-level values tried in place of one name
MAX_STRUCTURE = 2000  # items and public attributes read per value (a tree of objects), all the way down
# their state is code, not data: a module's namespace, a function's attributes
OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class ProgramTimeout(BaseException):
    """Raised by the alarm: a BaseException so the code under test cannot swallow it as an Exception."""


def _alarm(signum: int, frame: object) -> None:
    raise ProgramTimeout()


def canon(value: object, depth: int = 0) -> object:
    """A JSON form of a value that is equal on two trees exactly when the values look the same."""
    return _canon(value, depth, [MAX_STRUCTURE])


def _canon(value: object, depth: int, budget: list[int]) -> object:
    if depth > 6:
        return "..."
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_canon(v, depth + 1, budget) for v in value[:200]]]
    if isinstance(value, (set, frozenset)):
        return [type(value).__name__, sorted(json.dumps(_canon(v, depth + 1, budget)) for v in value)]
    if isinstance(value, dict):
        return [type(value).__name__, [[_canon(k, depth + 1, budget), _canon(v, depth + 1, budget)] for k, v in list(value.items())[:200]]]
    if isinstance(value, types.GeneratorType) or (hasattr(value, "__next__") and hasattr(value, "__iter__")):
        items = []
        for item in value:  # type: ignore[union-attr]
            items.append(_canon(item, depth + 1, budget))
            if len(items) >= 200:
                break
        return ["iterator", items]
    text = ADDRESS.sub("", repr(value))
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict) and not isinstance(value, type) and " object>" in text:
        # an object with no repr of its own: its public plain data, never its internals (a compiled
        # pattern, a cache), which a correct alternative may build otherwise (boltons-435774e)
        public = {k: v for k, v in state.items() if not k.startswith("_") and plain(v)}
        items = _read_items(value, depth, budget)
        return [type(value).__qualname__, _canon(public, depth + 1, budget), *([{"items": items}] if items is not None else [])]
    # a repr of its own may hide what the object holds (a parse tree printed as its first words): its
    # items and its public plain data too, where it has any
    shape = structure(value, depth, budget)
    return [type(value).__qualname__, text, shape] if shape else [type(value).__qualname__, text]


def structure(value: object, depth: int, budget: list[int]) -> dict:
    """What an object holds beyond its repr: ``items``, its first items where it is an iterable (no
    string, no mapping) that each ``iter`` reads afresh (not a one-shot stream the caller still reads:
    an iterator, or an object handing out the same one each time), and ``attrs``, its public plain
    data (instance attributes and slots without a leading underscore). Never a property: it runs code (costly, raising, filling a cache that changes what a
    later statement sees) and computes from internals a correct alternative may keep otherwise; nor
    private or non-literal attributes (a compiled pattern, a cache, a parent link: boltons-435774e).
    At most ``MAX_STRUCTURE`` items and attributes per value, all the way down."""
    out: dict = {}
    if isinstance(value, OPAQUE) or budget[0] <= 0:
        return out
    items = _read_items(value, depth, budget)
    if items is not None:
        out["items"] = items
    public = public_data(value) if budget[0] > 0 else {}
    if public:
        budget[0] -= len(public)
        out["attrs"] = [[k, _canon(v, depth + 1, budget)] for k, v in sorted(public.items())]
    return out


def _read_items(value: object, depth: int, budget: list[int]) -> list | None:
    """The canonical forms of an object's first items (``structure``), None where it has none to read."""
    items = _items(value) if budget[0] > 0 else None
    if items is None:
        return None
    budget[0] -= len(items)
    return [_canon(v, depth + 1, budget) for v in items]


def _items(value: object) -> list | None:
    """Its first items, where each ``iter`` hands out a new iterator (not a one-shot stream the test still reads)."""
    try:
        kind = type(value)
        if isinstance(value, (str, bytes, bytearray)) or hasattr(value, "keys") or not hasattr(kind, "__iter__"):
            return None
        if iter(value) is iter(value):  # type: ignore[call-overload]
            return None
        return list(itertools.islice(value, 200))  # type: ignore[call-overload]
    except Exception:  # noqa: BLE001 - an object that cannot be iterated has no items here
        return None


def public_data(value: object) -> dict:
    """Its instance attributes and slots without a leading underscore that hold plain data (``plain``)."""
    found: dict = {}
    try:
        state = object.__getattribute__(value, "__dict__")
    except Exception:  # noqa: BLE001
        state = None
    if isinstance(state, dict):
        found.update(state)
    for kind in type(value).__mro__:
        slots = kind.__dict__.get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else slots:
            slot = kind.__dict__.get(name)
            if not name.startswith("_") and hasattr(slot, "__get__"):
                try:
                    found.setdefault(name, slot.__get__(value, kind))
                except AttributeError:  # a slot never set
                    pass
    return {k: v for k, v in found.items() if isinstance(k, str) and not k.startswith("_") and plain(v)}


def plain(value: object, depth: int = 0) -> bool:
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


def literal(value: object, namespace: dict) -> str:
    """Source that evaluates to ``value`` in the test's namespace, or ''."""
    text = repr(value)
    if ADDRESS.search(text):
        return ""
    try:
        again = eval(text, dict(namespace))  # noqa: S307 - our own repr, in the sandbox
    except Exception:  # noqa: BLE001
        return ""
    try:
        return text if type(again) is type(value) and again == value else ""
    except Exception:  # noqa: BLE001
        return ""


def exc_name(err: BaseException) -> str:
    cls = type(err)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def load_module(path: str) -> types.ModuleType:
    """The test module, importable the way pytest's default ("prepend") mode imports it."""
    folder = os.path.dirname(os.path.abspath(path))
    parts = [os.path.splitext(os.path.basename(path))[0]]
    while os.path.exists(os.path.join(folder, "__init__.py")):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    for entry in (folder, os.getcwd()):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    name = ".".join(parts)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def namespace(module: types.ModuleType, cls: str | None, method: str | None) -> dict:
    ns = dict(vars(module))
    if cls:
        klass = getattr(module, cls)
        instance = klass(method) if _is_testcase(klass) else klass()
        for setup in ("setUp", "setup_method"):
            fn = getattr(instance, setup, None)
            if callable(fn):
                fn() if setup == "setUp" else fn(getattr(instance, method, None))
        ns["self"] = instance
    return ns


def _is_testcase(klass: type) -> bool:
    return any(base.__name__ == "TestCase" for base in klass.__mro__)


def run_program(program: dict, changed: set[str], timeout_s: float, ns: dict | None = None, supplied: set[str] | frozenset = frozenset()) -> list[dict]:
    """The program's steps, each observation recorded, until one raises; inside the test's own
    decorators that wrap its call (a frozen clock, a patch), re-applied around the steps, whose
    positional arguments (a patch's mock) bind the test's parameters nothing in ``supplied`` gave."""
    entered = [False]

    def profile(frame, event, arg):  # noqa: ANN001, ANN202
        if event == "call" and frame.f_code.co_filename in changed:
            entered[0] = True

    out: list[dict] = []
    try:
        # imported once, outside any program's time limit
        module = load_module(program["test_file"]) if program["test_file"] and ns is None else None
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        if ns is None:
            ns = namespace(module, program.get("cls"), program.get("method")) if module else {}
        env = ns

        def steps(*args: object, **kwargs: object) -> None:
            env.update(zip([n for n in program.get("fixtures", []) if n not in supplied], args))
            env.update(kwargs)
            for i, step in enumerate(program["steps"]):
                printed = io.StringIO()
                entered[0] = False
                sys.setprofile(profile)
                try:
                    with contextlib.redirect_stdout(printed):
                        if step["kind"] == "observe":
                            value = eval(compile(step["src"], "<observe>", "eval"), env)  # noqa: S307
                            observed = canon(value)
                        else:
                            exec(compile(step["src"], "<setup>", "exec"), env)  # noqa: S102
                            observed = None
                except ProgramTimeout:
                    sys.setprofile(None)
                    out.append({"step": i, "raised": "timeout", "value": None, "stdout": "", "reached": True, "literal": ""})
                    return
                except (Exception, SystemExit) as err:  # noqa: BLE001 - the behaviour under observation; a CLI's exit too (semver's main)
                    sys.setprofile(None)
                    out.append({"step": i, "raised": exc_name(err), "value": None, "stdout": printed.getvalue()[-2000:],
                                "reached": entered[0], "literal": ""})  # fmt: skip
                    return
                sys.setprofile(None)
                if step["kind"] == "observe":
                    out.append({"step": i, "raised": "", "value": observed, "stdout": printed.getvalue()[-2000:],
                                "reached": entered[0], "literal": literal(value, env)})  # fmt: skip

        run = steps
        for src in reversed(program.get("decorators", [])):
            run = eval(compile(src, "<decorator>", "eval"), env)(run)  # noqa: S307
        run()
    except ProgramTimeout:
        out.append({"step": -1, "raised": "timeout", "value": None, "stdout": "", "reached": True, "literal": ""})
    except Exception as err:  # noqa: BLE001 - the test module, its setUp or a decorator failed
        out.append({"step": -1, "raised": exc_name(err), "value": None, "stdout": "", "reached": False, "literal": ""})
    finally:
        sys.setprofile(None)
        signal.setitimer(signal.ITIMER_REAL, 0)
    return out


def _project_modules(root: str) -> list[types.ModuleType]:
    found = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path.startswith(root + os.sep) and "test" not in os.path.basename(path):
            found.append(module)
    return sorted(found, key=lambda m: m.__name__)


def alternatives(program: dict) -> dict[str, list[list[str]]]:
    """For each name the test uses that holds a project-defined value (not a function, class or
    module): other public module-level values of exactly its type in the project's modules."""
    try:
        module = load_module(program["test_file"])
    except Exception:  # noqa: BLE001
        return {}
    root = os.getcwd()
    out: dict[str, list[list[str]]] = {}
    for name in program.get("names", []):
        value = getattr(module, name, None)
        if value is None or isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
            continue
        defined = sys.modules.get(type(value).__module__)
        if not (getattr(defined, "__file__", "") or "").startswith(root + os.sep):
            continue
        seen, found = [value], []
        for other in _project_modules(root):
            for attr, candidate in sorted(vars(other).items()):
                if attr.startswith("_") or type(candidate) is not type(value):
                    continue
                if any(candidate is s for s in seen) or any(_same(candidate, s) for s in seen):
                    continue
                seen.append(candidate)
                found.append([other.__name__, attr])
                if len(found) >= MAX_ALTERNATIVES:
                    break
            if len(found) >= MAX_ALTERNATIVES:
                break
        if found:
            out[name] = found
    return out


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


class InPytest:
    """A pytest plugin that runs each program of a test with fixtures in place of the test's body: one
    copy of the test per program (so each gets its own fixtures, set up and torn down by pytest), whose
    call runs the program's steps in the test module's namespace with the fixtures' values (and the
    class instance as ``self``)."""

    def __init__(self, programs: list[dict], changed: set[str], timeout_s: float) -> None:
        self.programs, self.changed, self.timeout_s = programs, changed, timeout_s
        self.results: dict[str, list[dict]] = {}
        self.params: dict[str, dict[str, str]] = {}  # a parametrized case's parameters, as source ('' where none reads back)
        self.by_node: dict[str, dict] = {}

    def pytest_collection_modifyitems(self, session, config, items) -> None:  # noqa: ANN001
        import pytest

        copies = []
        for item in items:
            # the test's id as the task's test command names it, from the repository's root, whatever
            # rootdir pytest settled on here
            test_id = "::".join([os.path.relpath(str(item.path)), *item.nodeid.split("::")[1:]])
            # a parametrized case keeps its parameters (pytest's own copies pass the same three)
            case = {"callspec": item.callspec, "fixtureinfo": item._fixtureinfo} if hasattr(item, "callspec") else {}
            for k, program in enumerate(p for p in self.programs if p["test_id"] == test_id):
                copy = pytest.Function.from_parent(item.parent, name=f"{item.name}__swedeck{k}", callobj=item.obj,
                                                   originalname=item.originalname, **case)  # fmt: skip
                self.by_node[copy.nodeid] = program
                if case:
                    self.params[program["key"]] = {n: literal(v, {}) for n, v in item.callspec.params.items()}
                copies.append(copy)
        items[:] = copies

    def pytest_pyfunc_call(self, pyfuncitem) -> bool | None:  # noqa: ANN001
        program = self.by_node.get(pyfuncitem.nodeid)
        if program is None:
            return None
        ns = dict(vars(pyfuncitem.module))
        supplied = {name for name in program["fixtures"] if name in pyfuncitem.funcargs}
        ns.update({name: pyfuncitem.funcargs[name] for name in supplied})
        if pyfuncitem.instance is not None:
            ns["self"] = pyfuncitem.instance
        self.results[program["key"]] = run_program(program, self.changed, self.timeout_s, ns, supplied)
        return True


def run_in_pytest(programs: list[dict], changed: set[str], timeout_s: float) -> InPytest:
    """The programs of tests with fixtures, run by pytest (in this process) with their fixtures; a
    program whose test pytest did not collect or set up has no result."""
    import pytest

    plugin = InPytest(programs, changed, timeout_s)
    if os.getcwd() not in sys.path:  # as ``python -m pytest`` in the root, as test commands run it
        sys.path.insert(0, os.getcwd())
    ids = list(dict.fromkeys(p["test_id"] for p in programs))
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(["-q", "-s", "-p", "no:cacheprovider", "-o", "addopts=", *ids], plugins=[plugin])
    return plugin


def main(spec_path: str, out_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    root = os.getcwd()
    changed = {os.path.join(root, p) for p in spec["changed"]}
    for folder in reversed(spec.get("paths", [])):
        sys.path.insert(0, os.path.join(root, folder))
    signal.signal(signal.SIGALRM, _alarm)
    results, alts = {}, {}
    timeout_s = spec.get("timeout_s", 2.0)
    for program in spec["programs"]:
        if not program.get("fixtures"):
            results[program["key"]] = run_program(program, changed, timeout_s)
        if spec.get("discover"):
            alts[program["key"]] = alternatives(program)
    with_fixtures = [p for p in spec["programs"] if p.get("fixtures")]
    params: dict[str, dict[str, str]] = {}
    if with_fixtures:
        ran = run_in_pytest(with_fixtures, changed, timeout_s)
        results.update(ran.results)
        params = ran.params
    with open(out_path, "w") as f:
        json.dump({"results": results, "alternatives": alts, "params": params}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
