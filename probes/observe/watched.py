"""The functions the observation plugin watches, and what their code says (signatures, changed literals)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from harness.pyast import parse
from harness.records import Task
from probes.workspace import file_lines, touched_lines, workspace

MAX_TARGETS = 24
MAX_ENDINGS = 6  # short literals of the changed functions tried as a string's ending


def _defs(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions and class methods, as the plugin names them."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            out += [(f"{node.name}.{item.name}", item) for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def changed_functions(path: str, old: str | None, new: str | None) -> list[str]:
    """``path::qualname`` of each function or method of ``new`` holding a line gold touched."""
    if new is None or not path.endswith(".py"):
        return []
    try:
        tree = parse(new)
    except SyntaxError:
        return []
    touched = touched_lines(file_lines(old), file_lines(new))
    return [f"{path}::{name}" for name, node in _defs(tree) if any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in touched)]


def called_names(sources: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for text in sources:
        try:
            tree = parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                names.add(func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else "")
    return names - {""}


def public_called(path: str, text: str, names: set[str]) -> list[str]:
    """``path::qualname`` of the public functions (and constructors) of ``text`` whose name the tests call."""
    try:
        tree = parse(text)
    except SyntaxError:
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_") or node.name not in names:
            continue
        if isinstance(node, ast.FunctionDef):
            out.append(f"{path}::{node.name}")
        elif any(isinstance(i, ast.FunctionDef) and i.name == "__init__" for i in node.body):
            out.append(f"{path}::{node.name}.__init__")
    return out


def targets(task: Task, tree: Path, test_sources: Mapping[str, str], fail_to_pass: Sequence[str]) -> list[str]:
    """What the plugin watches: gold's changed functions, then the public functions of the changed
    files the FAIL_TO_PASS tests' files call, then those of the other modules of the changed files'
    folders (semver's tests call ``match`` of ``_deprecated.py``, which calls the ``Version.match``
    gold changed)."""
    files = {t.partition("::")[0] for t in fail_to_pass}
    names = called_names(text for path, text in test_sources.items() if path in files)
    out: list[str] = []
    with workspace(task, tree) as ws:
        if ws is None:
            return []
        changed = [p for p in ws.paths if p not in test_sources and p.endswith(".py")]
        for path in changed:
            out += changed_functions(path, ws.old.get(path), ws.new.get(path))
            out += public_called(path, ws.new.get(path) or "", names)
        for folder in dict.fromkeys(Path(p).parent for p in changed):
            for sibling in sorted((ws.root / folder).glob("*.py")):
                path = str(folder / sibling.name) if str(folder) != "." else sibling.name
                if path not in changed and path not in test_sources and not _is_test_path(path):
                    out += public_called(path, sibling.read_text(errors="replace"), names)
    return list(dict.fromkeys(out))[:MAX_TARGETS]


def _is_test_path(path: str) -> bool:
    name = Path(path).name
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in Path(path).parts


def changed_literals(path: str, old: str | None, new: str | None) -> list[str]:
    """Short string constants (1 to 4 characters) in the functions of ``new`` that gold touched:
    the endings and markers a rule tests for (``'ch'``, ``'sh'`` in boltons' pluralize)."""
    if new is None or not path.endswith(".py"):
        return []
    try:
        tree = parse(new)
    except SyntaxError:
        return []
    touched = touched_lines(file_lines(old), file_lines(new))
    out: list[str] = []
    for _, node in _defs(tree):
        if any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in touched):
            out += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and 1 <= len(n.value) <= 4]
    return list(dict.fromkeys(out))[:MAX_ENDINGS]


def none_defaults(sources: Mapping[str, str], watched: Sequence[str]) -> dict[str, set[str]]:
    """For each target (``module:qualname`` is not known here, so keyed by qualname) the parameters,
    by position and by name, whose default is ``None``."""
    out: dict[str, set[str]] = {}
    for target in watched:
        path, _, qualname = target.partition("::")
        try:
            tree = parse(sources.get(path, ""))
        except SyntaxError:
            continue
        for name, node in _defs(tree):
            if name != qualname:
                continue
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            kinds = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
            skip = 1 if node.name == "__init__" or "classmethod" in kinds else 0  # a method's instance is an argument
            defaults = dict(zip([a.arg for a in positional][-len(args.defaults) :] if args.defaults else [], args.defaults))
            defaults |= {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
            slots = set()
            for i, a in enumerate(positional[skip:]):
                if isinstance(defaults.get(a.arg), ast.Constant) and defaults[a.arg].value is None:  # type: ignore[union-attr]
                    slots |= {str(i), a.arg}
            for a in args.kwonlyargs:
                if isinstance(defaults.get(a.arg), ast.Constant) and defaults[a.arg].value is None:  # type: ignore[union-attr]
                    slots.add(a.arg)
            out[qualname] = slots
    return out


def import_root(file: str, module: str) -> str:
    """The folder to put on ``sys.path`` so ``module`` (at ``file``) imports: ``src`` for a src layout."""
    parts = Path(file).with_suffix("").parts
    depth = len(module.split("."))
    if parts and parts[-1] == "__init__":
        depth += 1
    return str(Path(*parts[:-depth])) if len(parts) > depth else "."
