"""Reading a hidden test file: its syntax tree, test classes and functions, and where a test may go."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.pyast import parse


@dataclass(frozen=True)
class Scope:
    name: str  # the class, "" for the module
    sites: tuple[int, ...]  # 0-based lines a test may be inserted before
    indent: str
    method: bool


def _is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test") or name.endswith("_test.py"))


# Parsed once per process and file content: these are the hidden tests of the task record, never a
# candidate's files, and grades of one task plant canaries in the same files again and again.
@functools.lru_cache(maxsize=32)
def read_module(path: str, blob: bytes) -> tuple[ast.Module, list[str]] | None:
    """The file's syntax tree and lines (shared between callers: neither is ever modified)."""
    if not _is_test_file(path):
        return None
    try:
        text = blob.decode()
        return parse(text, path), text.splitlines(keepends=True)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _test_classes(module: ast.Module) -> list[ast.ClassDef]:
    """Classes a runner collects tests from: named Test*, a TestCase, or derived from one here."""
    found: list[ast.ClassDef] = []
    for node in module.body:
        if isinstance(node, ast.ClassDef) and (
            node.name.startswith("Test") or _unittest_style(node) or any(isinstance(b, ast.Name) and b.id in {c.name for c in found} for b in node.bases)
        ):
            found.append(node)
    return [node for node in found if any(_is_test(item) for item in node.body)]


def _unittest_style(node: ast.stmt) -> bool:
    return isinstance(node, ast.ClassDef) and any(_is_testcase(b) for b in node.bases)


def _is_testcase(base: ast.expr) -> bool:
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return name.endswith("TestCase")


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")


def start_line(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1


def test_scopes(module: ast.Module, lines: list[str]) -> list[Scope]:
    """Where tests can go: before or after any method of a test class, or before or after any
    module-level test function; a file with ``unittest.TestCase`` classes gets methods only, as a
    unittest runner collects nothing else."""
    scopes = []
    for cls in _test_classes(module):
        methods = [i for i in cls.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))]
        indent = lines[methods[0].lineno - 1][: methods[0].col_offset]
        sites = sorted({s for m in methods for s in (start_line(m), m.end_lineno or m.lineno)})
        scopes.append(Scope(cls.name, tuple(sites), indent, True))
    tests = [] if any(map(_unittest_style, module.body)) else [node for node in module.body if _is_test(node)]
    sites = sorted({s for t in tests for s in (start_line(t), t.end_lineno or t.lineno)})
    return scopes + ([Scope("", tuple(sites), "", False)] if sites else [])


def test_functions(module: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = [(cls.name, item) for cls in _test_classes(module) for item in cls.body if _is_test(item)]
    if not any(map(_unittest_style, module.body)):
        found += [("", node) for node in module.body if _is_test(node)]
    return found  # type: ignore[return-value]
