"""The project's layout as the README and ../shared/DESIGN.md draw it: imports only go down the list of
packages, no module imports itself back through others, and no module is long enough to scroll through."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# DESIGN.md's order: an import only goes down this list
FLOORS = ("flows", "training", "judge", "probes", "curation", "harness")
MAX_LINES = 450
# the one schema module: it declares records and nothing else, and reads best whole
WHOLE = {"harness.records"}


def modules() -> dict[str, Path]:
    found = {}
    for package in FLOORS:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project's modules ``name`` imports, anywhere in it (in functions too): an import that only
    runs late still ties the two modules together."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        yield from (t for t in targets if t in known and t != name)


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imported(name, path, known)) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_circles_finds_a_planted_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    assert circles(graph()) == []


def test_imports_only_go_down_the_floors() -> None:
    upward = [
        f"{name} -> {target}"
        for name, targets in graph().items()
        for target in targets
        if FLOORS.index(target.split(".")[0]) < FLOORS.index(name.split(".")[0])
    ]
    assert upward == []


def test_no_module_to_scroll_through() -> None:
    long = {
        name: n
        for name, path in modules().items()
        if name not in WHOLE and (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_records_module_only_declares_records() -> None:
    """Why it may stay whole: nothing in it but record classes, their field types and the hash that
    stamps them."""
    tree = ast.parse((ROOT / "harness" / "records.py").read_text())
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert functions == ["content_hash"]


def test_harness_is_three_rooms_over_the_shared_records() -> None:
    harness = ROOT / "harness"
    rooms = sorted(p.name for p in harness.iterdir() if (p / "__init__.py").is_file())
    assert rooms == ["agent", "grading", "sandboxes"]
    assert sorted(p.stem for p in harness.glob("*.py")) == ["__init__", "config", "names", "pyast", "records"]


def test_every_module_says_what_it_owns() -> None:
    silent = [
        name
        for name, path in modules().items()
        if not path.name == "__init__.py" and ast.get_docstring(ast.parse(path.read_text())) is None
    ]
    assert silent == []


def test_the_readme_map_names_files_that_exist() -> None:
    """The package table and the sections below it point at files: after a move they must follow."""
    named = re.findall(r"`((?:harness|curation|probes|judge|training|flows|data)/[\w./-]*\w/?)`", (ROOT / "README.md").read_text())
    assert named and [path for path in named if not (ROOT / path).exists()] == []
