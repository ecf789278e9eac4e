"""The project functions a test file reaches by name: through a facade (a package's ``__init__``
re-exporting a submodule's function), to where it is defined."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.pyast import parse


def _module_path(root: Path, module: str) -> str | None:
    for base in ("", "src/"):
        for candidate in (f"{base}{module.replace('.', '/')}.py", f"{base}{module.replace('.', '/')}/__init__.py"):
            if (root / candidate).is_file():
                return candidate
    return None


def facade_targets(root: Path, test_sources: Mapping[str, str], files: Sequence[str]) -> list[str]:
    """``path::qualname`` of the project functions and classes the test files import by name and call,
    wherever they are defined (one re-export followed: a package's ``__init__`` importing it from a
    submodule)."""
    out: list[str] = []
    for path in files:
        try:
            tree = parse(test_sources.get(path, ""))
        except SyntaxError:
            continue
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            for alias in node.names:
                if (alias.asname or alias.name) in called:
                    out += _defined(root, node.module, alias.name, hops=1)
    return list(dict.fromkeys(out))


def _defined(root: Path, module: str, name: str, hops: int) -> list[str]:
    path = _module_path(root, module)
    if path is None:
        return []
    try:
        tree = parse((root / path).read_text(errors="replace"))
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return [f"{path}::{name}"]
        if isinstance(node, ast.ClassDef) and node.name == name:
            init = any(isinstance(i, ast.FunctionDef) and i.name == "__init__" for i in node.body)
            return [f"{path}::{name}.__init__"] if init else []
        if hops and isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
            base = package.split(".")[: len(package.split(".")) - max(node.level - 1, 0)] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])]) if node.level else (node.module or "")
            return _defined(root, target, name, hops - 1) if target else []
    return []
