"""What each name of a module can be bound to, for the tamper audit: a small flow-insensitive alias
analysis, so that a rule about ``pytest.Function`` holds however the object is reached.

An origin is the dotted name of an object a module can reach by importing or by the builtins
(``pytest.Function``, ``sys.modules``, ``exec``). Every binding in the module counts, wherever and
whenever it happens (flow- and scope-insensitive: over-approximation only makes the audit stricter):
imports, assignments with tuple unpacking, walrus, ``for`` and ``with`` targets, comprehensions,
attribute and subscript stores (``x.a = v`` binds ``.a`` of every object, ``d[k] = v`` and
``d.append(v)`` put ``v`` in ``d``), ``setattr``, writes into ``globals()``/``vars()``/``__dict__``,
arguments bound to a function's parameters and a function's returns to its calls. An expression's
origins follow attribute chains, subscripts (a container holds the origins of its items),
``getattr``, ``importlib.import_module``/``__import__``, ``sys.modules[...]``, ``vars()``/``globals()``
(a computed key: any of the module's bindings) and ``eval`` of a literal. The equations are solved
with a worklist, so the order of the bindings in the file does not matter, and bounded: an origin has
at most ``MAX_PARTS`` parts and a name at most ``MAX_ORIGINS`` origins.
"""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from harness.grading import codefiles
from harness.pyast import parse

MAX_LITERAL = 2 * 1024 * 1024  # the longest string a literal folds to
MAX_PARTS = 4
MAX_ORIGINS = 16
BUILTINS = frozenset(dir(builtins)) | {"__builtins__"}
GLOBALS = "<globals>"  # the module's own namespace (globals(), vars(), locals())
ANY_NAME = "<any>"  # bound by a write into the namespace under a computed name
UNKNOWN = "?"  # an attribute or key computed at run time
# what the audit's rules are about: an object of these reaches every expression it can flow into
RUNNER_ROOTS = ("unittest", "_pytest", "pytest", "pluggy")
SENSITIVE_ROOTS = ("sys", "builtins", "gc", "inspect", "os", "importlib", "threading", "atexit", "signal", "faulthandler", "ctypes", *RUNNER_ROOTS)
# what is kept of a binding: origins the audit has a rule about (its modules, the builtins that run
# code, write attributes or reach a namespace); a module's own names are nothing to it
_TRACKED = {
    *SENSITIVE_ROOTS, "runpy", "zipimport", "pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib",
    "jsonpickle", "pkgutil", "traceback", "imp", "exec", "eval", "compile", "getattr", "setattr", "delattr", "globals",
    "vars", "locals", "__import__", "object", "type", GLOBALS,
}  # fmt: skip


def tracked(origin: str) -> bool:
    return origin.split(".")[0] in _TRACKED


_MUTATORS = {"append", "add", "insert", "extend", "update", "setdefault", "__setitem__"}
_NAMESPACES = {"globals", "vars", "locals"}
_IMPORTERS = {"__import__", "importlib.import_module", "importlib.__import__"}

Origins = frozenset[str]


def _join(origin: str, attr: str) -> str:
    parts = origin.split(".")
    return ".".join([*parts, attr][:MAX_PARTS])


def fold(node: ast.expr | None) -> str | bytes | None:
    """The string or bytes an expression always is: a literal, literals added together (a chain of
    any length), an f-string of constant parts, a literal's ``decode``/``encode``; None for anything
    computed at run time."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (str, bytes)) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        operands = []
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            operands.append(node.right)
            node = node.left
        values = [fold(part) for part in [node, *reversed(operands)]]
        kinds = {type(v) for v in values}
        if len(kinds) == 1 and None not in values and sum(map(len, values)) <= MAX_LITERAL:  # type: ignore[arg-type]
            return values[0][:0].join(values)  # type: ignore[index, union-attr]
        return None
    if isinstance(node, ast.JoinedStr):
        parts = [fold(v.value if isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None else v) for v in node.values]
        return "".join(parts) if all(isinstance(p, str) for p in parts) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("decode", "encode") and not node.keywords:
        base, args = fold(node.func.value), [fold(a) for a in node.args]
        if all(isinstance(a, str) for a in args) and isinstance(base, bytes if node.func.attr == "decode" else str):
            try:
                return getattr(base, node.func.attr)(*args)  # type: ignore[no-any-return]
            except (UnicodeError, LookupError):
                return None
    return None


def code_of(node: ast.expr | None) -> ast.Module | None:
    """The code a literal holds, parsed (bytes decoded as source is, by its coding cookie); None when
    it is no literal or does not parse."""
    text = fold(node)
    if isinstance(text, bytes):
        source = codefiles.decode(text)
        text = None if source.error else source.text
    if text is None:
        return None
    try:
        return parse(text, "<literal>")
    except (SyntaxError, ValueError):
        return None


class Bindings:
    """``resolve(expr)``: the origins an expression of the module can evaluate to."""

    def __init__(self, module: ast.Module) -> None:
        self.values: dict[str, set[str]] = defaultdict(set)
        self.stars: set[str] = set()  # modules imported with *
        self._equations: list[tuple[str, ast.expr]] = []
        self._parameters: dict[str, list[tuple[ast.arguments, str]]] = defaultdict(list)
        self._keys: dict[int, str] = {}  # a Name node's key: its name, in the scope that binds it
        self._scopes: tuple[_Scope, ...] = ()
        self._literals: list[ast.Module] = []
        self._calls: list[ast.Call] = []
        self._readers: dict[str, set[int]] = defaultdict(set)
        self._reading: set[str] | None = None
        self._imported: set[str] = set()
        self._collect(module)
        self._assigned = {key for key, _ in self._equations}
        self._solve()

    # reading ------------------------------------------------------------------------------------

    def get(self, key: str) -> set[str]:
        if self._reading is not None:
            self._reading.add(key)
        return self.values.get(key, set())

    def name(self, name: str, key: str | None = None) -> Origins:
        """What ``name`` can be, where it lives under ``key`` (the module's own by default)."""
        key = key or name
        found = set(self.get(key)) | self.get(ANY_NAME)
        if key not in self.values:  # bound nowhere here: a star import's, or as it is spelled
            found |= {name, *(f"{m}.{name}" for m in self.stars)}
        if name in BUILTINS and not (key in self._imported and key not in self._assigned):
            # the builtin before any assignment of the module's runs (``exec = exec``); a name only
            # ever imported (``from re import compile``) is the import's
            found.add("builtins" if name == "__builtins__" else name)
        return frozenset(found)

    def resolve(self, node: ast.expr | None) -> Origins:
        if node is None:
            return frozenset()
        if isinstance(node, ast.Name):
            return self.name(node.id, self._keys.get(id(node), node.id))
        if isinstance(node, ast.Attribute):
            attrs = []
            while isinstance(node, ast.Attribute):  # a chain of any length, without recursion
                attrs.append(node.attr)
                node = node.value
            found = self.resolve(node)
            for attr in reversed(attrs):
                found = self.attribute(found, attr)
            return found
        if isinstance(node, ast.Subscript):
            return self.subscript(self.resolve(node.value), node.slice)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return frozenset().union(*(self.resolve(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            return frozenset().union(*(self.resolve(v) for v in node.values))
        if isinstance(node, (ast.Starred, ast.NamedExpr, ast.Await)):
            return self.resolve(node.value)
        if isinstance(node, ast.IfExp):
            return self.resolve(node.body) | self.resolve(node.orelse)
        if isinstance(node, ast.BoolOp):
            return frozenset().union(*(self.resolve(v) for v in node.values))
        return frozenset()

    def attribute(self, origins: Origins, attr: str) -> Origins:
        found = set(self.get("." + attr))
        for origin in origins:
            if origin == "builtins" and attr in BUILTINS:
                found.add(attr)
            elif origin == GLOBALS:
                found |= self.name(attr)
            else:
                found.add(_join(origin, attr))
        return frozenset(found)

    def subscript(self, origins: Origins, key: ast.expr) -> Origins:
        text = fold(key)
        const = text if isinstance(text, str) else None
        found: set[str] = set()
        for origin in origins:
            if origin == GLOBALS:
                found |= self.name(const) if const is not None else self.everything()
            elif origin.endswith(".__dict__"):
                found |= self.attribute(frozenset({origin[: -len(".__dict__")]}), const if const is not None else UNKNOWN)
            elif origin == "sys.modules":
                found.add(const if const is not None else UNKNOWN)
            else:  # a container: what it holds
                found.add(origin)
        return frozenset(found)

    def everything(self) -> set[str]:
        """What a computed name of the module's namespace can be: any of its bindings."""
        if self._reading is not None:
            self._reading.add(ANY_NAME)
        return {o for key, values in self.values.items() if not key.startswith((".", "@")) for o in values}

    def call(self, node: ast.Call) -> Origins:
        funcs = self.resolve(node.func)
        first = node.args[0] if node.args else None
        found: set[str] = set()
        for func in funcs:
            if func == "getattr" and len(node.args) >= 2:
                name = fold(node.args[1])
                found |= self.attribute(self.resolve(first), name if isinstance(name, str) else UNKNOWN)
            elif func in _IMPORTERS and first is not None:
                name = fold(first)
                found |= {name, name.split(".")[0]} if isinstance(name, str) else {UNKNOWN}
            elif func == "sys.modules.get" and first is not None:
                name = fold(first)
                found.add(name if isinstance(name, str) else UNKNOWN)
            elif func in _NAMESPACES:
                found |= {f"{o}.__dict__" for o in self.resolve(first)} if first is not None else {GLOBALS}
            elif func == "eval" and first is not None and (code := code_of(first)) is not None:
                if len(code.body) == 1 and isinstance(code.body[0], ast.Expr):
                    found |= self.resolve(code.body[0].value)
            elif func == "pkgutil.resolve_name" and first is not None:
                name = fold(first)
                found.add(name.replace(":", ".") if isinstance(name, str) else UNKNOWN)
        # any other call may hand back what it was given (an identity, a partial, attrgetter's result)
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            found |= {o for o in self.resolve(arg) if o.split(".")[0] in SENSITIVE_ROOTS}
        if isinstance(node.func, ast.Lambda):
            found |= self.resolve(node.func.body)
        if isinstance(node.func, ast.Name):
            found |= self.get(f"{node.func.id}()")
        elif isinstance(node.func, ast.Attribute):
            found |= self.get(f".{node.func.attr}()")
        return frozenset(found)

    # collecting ---------------------------------------------------------------------------------

    def _bind(self, key: str, value: ast.expr) -> None:
        self._equations.append((key, value))

    def _target(self, target: ast.expr, value: ast.expr, elementwise: bool = True) -> None:
        """Bind ``target`` to ``value``; a tuple of targets to the tuple's items where ``value`` is a
        tuple of the same length, else each to all of it (an iterable's items: what it holds)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            same = elementwise and isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
            for i, element in enumerate(target.elts):
                self._target(element, value.elts[i] if same else value, False)  # type: ignore[attr-defined]
        elif isinstance(target, ast.Starred):
            self._target(target.value, value, False)
        elif isinstance(target, ast.Name):
            self._bind(self.key(target.id), value)
            if self._scopes and self._scopes[-1].is_class:  # a class attribute, reached as one
                self._bind("." + target.id, value)
        elif isinstance(target, ast.Attribute):
            self._bind("." + target.attr, value)
        elif isinstance(target, ast.Subscript):
            self._store(target.value, target.slice, value)

    def _store(self, container: ast.expr, key: ast.expr | None, value: ast.expr) -> None:
        """``container[key] = value``: into a namespace it binds a name or an attribute; into anything
        else it puts ``value`` among the container's items."""
        text = fold(key) if key is not None else None
        const = text if isinstance(text, str) else None
        if isinstance(container, ast.Call) and isinstance(container.func, ast.Name) and container.func.id in _NAMESPACES:
            if container.args:  # vars(obj)[k]
                self._bind("." + (const or UNKNOWN), value)
            else:
                self._bind(const if const is not None else ANY_NAME, value)
        elif isinstance(container, ast.Attribute) and container.attr == "__dict__":
            self._bind("." + (const or UNKNOWN), value)
        elif isinstance(container, ast.Name):
            self._bind(self.key(container.id), value)
        elif isinstance(container, ast.Attribute):
            self._bind("." + container.attr, value)

    def _collect(self, module: ast.Module) -> None:
        # (node, the function whose body holds it, the scopes it is in: innermost last)
        stack: list[tuple[ast.AST, str, tuple[_Scope, ...]]] = [(module, "", ())]
        while stack:
            node, function, self._scopes = stack.pop()
            if isinstance(node, ast.Name):
                self._keys[id(node)] = self.key(node.id)
            self._visit(node, function)
            inner, scopes = function, self._scopes
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                inner = getattr(node, "name", function) if not isinstance(node, ast.ClassDef) else function
                scopes = (*scopes, _Scope(f"@{id(node)}", _locals(node), isinstance(node, ast.ClassDef)))
            stack.extend((child, inner, scopes) for child in ast.iter_child_nodes(node))
            if isinstance(node, ast.Call) and _runs_code(node) and node.args and (code := code_of(node.args[0])) is not None:
                self._literals.append(code)  # kept: its nodes' ids key their names
                stack.append((code, function, self._scopes))  # a literal run by exec binds names in this namespace

    def key(self, name: str) -> str:
        """Where ``name`` lives, seen from the scopes being collected: the innermost function (or the
        class body it is written in) that binds it, else the module."""
        for depth, scope in enumerate(reversed(self._scopes)):
            if name in scope.names and (not scope.is_class or depth == 0):
                return f"{scope.id}:{name}"
        return name

    def _visit(self, node: ast.AST, function: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                self._import(alias.asname or top, alias.name if alias.asname else top)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    self.stars.add(node.module)
                else:
                    self._import(alias.asname or alias.name, f"{node.module}.{alias.name}")
        elif isinstance(node, ast.ImportFrom):  # the project's own module: nothing this module can name
            self._imported.update(self.key(alias.asname or alias.name) for alias in node.names)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._target(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            self._target(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._target(node.target, node.iter, False)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._target(node.optional_vars, node.context_expr, False)
        elif isinstance(node, ast.Return) and function and node.value is not None:
            self._bind(f"{function}()", node.value)
            self._bind(f".{function}()", node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._parameters[node.name].append((node.args, f"@{id(node)}"))
        elif isinstance(node, ast.Call):
            self._call(node)

    def _import(self, name: str, origin: str) -> None:
        key = self.key(name)
        self.values[key].update({origin} if tracked(origin) else ())
        self._imported.add(key)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) >= 3:
            attr = fold(node.args[1])
            self._bind("." + (attr if isinstance(attr, str) else UNKNOWN), node.args[2])
        elif isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self._store(func.value, None, arg)
        self._calls.append(node)

    def _arguments(self) -> Iterator[tuple[str, ast.expr]]:
        """(parameter, argument) for each call of a function the module defines, matched by its name,
        and of a lambda called where it is written."""
        for node in self._calls:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            defined = [(func.args, f"@{id(func)}")] if isinstance(func, ast.Lambda) else self._parameters.get(name, [])
            for params, scope in defined:
                positional = [a.arg for a in [*params.posonlyargs, *params.args]]
                if isinstance(func, ast.Attribute) and positional[:1] in (["self"], ["cls"]):
                    positional = positional[1:]
                pairs = [*zip(positional, node.args), *((k.arg, k.value) for k in node.keywords if k.arg is not None)]
                if params.vararg is not None:
                    pairs += [(params.vararg.arg, arg) for arg in node.args[len(positional) :]]
                yield from ((f"{scope}:{param}", arg) for param, arg in pairs)

    # solving ------------------------------------------------------------------------------------

    def _solve(self) -> None:
        self._equations += list(self._arguments())
        work = list(range(len(self._equations)))
        queued = set(work)
        while work:
            i = work.pop()
            queued.discard(i)
            key, value = self._equations[i]
            self._reading = set()
            try:
                found = self.resolve(value)
            finally:
                reads, self._reading = self._reading, None
            for read in reads:
                self._readers[read].add(i)
            old = self.values[key]
            new = {o for o in found if tracked(o)} - old
            if not new or len(old) >= MAX_ORIGINS:
                continue
            old |= set(sorted(new)[: MAX_ORIGINS - len(old)])
            for j in self._readers[key] | (self._readers[ANY_NAME] if not key.startswith(".") else set()):
                if j not in queued:
                    queued.add(j)
                    work.append(j)


def _runs_code(node: ast.Call) -> bool:
    """A call spelled like exec, eval or compile (however reached, the audit's visitor resolves it)."""
    name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
    return name in ("exec", "eval", "compile")


@dataclass(frozen=True)
class _Scope:
    id: str
    names: frozenset[str]  # the names it binds (its locals)
    is_class: bool  # a class body's names are not seen from the functions inside it


def _locals(scope: ast.AST) -> frozenset[str]:
    """The names a function, lambda or class body binds itself: parameters, stores, imports, nested
    definitions, less what it declares global or nonlocal (never walking into nested scopes)."""
    names, shared = set(), set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = scope.args
        names |= {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a is not None}
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            shared |= set(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(names - shared)
