"""swedeck_observe's values: a call's arguments as evaluable source, its return value in canonical form."""

from __future__ import annotations

import ast
import builtins
import itertools
import json
import re
import sys
import types

MAX_ITEMS = 200  # items of a container or a generator recorded
MAX_SOURCE = 2000  # characters of an argument's source
MAX_STRUCTURE = 2000  # items and public attributes read per value (a tree of objects), all the way down
# their state is code, not data: a module's namespace, a function's attributes
OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def canon(value, depth=0):
    """A JSON form of a value that is equal on two trees exactly when the values look the same
    (``probes.diff_driver.canon``, except that an iterator is not consumed)."""
    return _canon(value, depth, [MAX_STRUCTURE])


def _canon(value, depth, budget):
    if depth > 6:
        return "..."
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_canon(v, depth + 1, budget) for v in value[:MAX_ITEMS]]]
    if isinstance(value, (set, frozenset)):
        return [type(value).__name__, sorted(json.dumps(_canon(v, depth + 1, budget)) for v in value)]
    if isinstance(value, dict):
        return [type(value).__name__, [[_canon(k, depth + 1, budget), _canon(v, depth + 1, budget)] for k, v in list(value.items())[:MAX_ITEMS]]]
    if hasattr(value, "__next__") and hasattr(value, "__iter__"):
        return ["iterator", type(value).__qualname__]
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


def structure(value, depth, budget):
    """What an object holds beyond its repr: ``items``, its first items where it is an iterable (no
    string, no mapping) that each ``iter`` reads afresh (not a one-shot stream the caller still reads:
    an iterator, or an object handing out the same one each time), and ``attrs``, its public plain
    data (instance attributes and slots without a leading underscore). Never a property: it runs code (costly, raising, filling a cache that changes what a
    later statement sees) and computes from internals a correct alternative may keep otherwise; nor
    private or non-literal attributes (a compiled pattern, a cache, a parent link: boltons-435774e).
    At most ``MAX_STRUCTURE`` items and attributes per value, all the way down."""
    out = {}
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


def _read_items(value, depth, budget):
    """The canonical forms of an object's first items (``structure``), None where it has none to read."""
    items = _items(value) if budget[0] > 0 else None
    if items is None:
        return None
    budget[0] -= len(items)
    return [_canon(v, depth + 1, budget) for v in items]


def _items(value):
    """Its first items, where each ``iter`` hands out a new iterator (not a one-shot stream the test still reads)."""
    try:
        kind = type(value)
        if isinstance(value, (str, bytes, bytearray)) or hasattr(value, "keys") or not hasattr(kind, "__iter__"):
            return None
        if iter(value) is iter(value):
            return None
        return list(itertools.islice(value, MAX_ITEMS))
    except Exception:  # an object that cannot be iterated has no items here
        return None


def public_data(value):
    """Its instance attributes and slots without a leading underscore that hold plain data (``plain``)."""
    found = {}
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
