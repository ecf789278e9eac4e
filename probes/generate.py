"""Model-free counterfactual patches, derived mechanically from a task's gold patch.

Two kinds (``harness.records.ProbeKind``):

* ``plausible_wrong``: variants of gold that should break the fix: drop one hunk or change block of
  gold, revert one file of a multi-file gold, the operator mutants of ``probes.mutants``, the
  data-level operators of ``probes.data_ops`` (regexes, container entries, decorators and string
  constants gold added), the ``special_case`` guards of ``probes.special_case`` and the other
  implementations of ``probes.implementations`` (gold's guards narrowed or with a conjunct dropped, a
  normalising call left out, a parameter pinned to the tests' value, gold at one of several similar
  sites or next to its lines, mutmut's operators on gold's lines). Only files the
  tests can import are probed (``probes.workspace.importable``). A survivor (reward 1) means the tests cannot
  tell the variant from gold; it may still be equivalent to gold, so it is evidence of a too-loose
  suite only when ``probes.differential`` finds an input on which it behaves differently.
* ``correct_alternative``: the behaviour-preserving rewrites of ``probes.rewrites``. A failure
  (reward 0) is evidence of an over-restrictive suite.

This module assembles them: every candidate is a diff from ``probes.workspace``; identical patches
are deduplicated; candidates equal to gold (or, for wrong probes, AST-equal to gold or to the buggy
tree) and empty ones are dropped; each operator is capped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from harness.records import ProbeKind, Task
from probes.data_ops import data_mutants
from probes.implementations import (
    adjacent_edit,
    constant_for_variable,
    drop_conjunct,
    drop_normaliser,
    mutmut_mutants,
    narrow_guard,
    one_similar_site,
)
from probes.implementations.calls import calls_in_tests
from probes.mutants import mutants
from probes.pycst import guarded, one_file, python_files
from probes.rewrites import rewrites
from probes.special_case import special_cases, test_literals
from probes.workspace import (
    MAX_PER_OPERATOR,
    Candidate,
    Contents,
    Lazy,
    Workspace,
    ast_dump,
    change_blocks,
    file_lines,
    hunk_groups,
    importable,
    revert_blocks,
    test_sources,
    workspace,
)

MAX_SPECIAL_CASE = 6  # special_case tries several guard names per change block
MAX_MUTMUT = 6  # mutmut's operators are many: one budget for all of them, spread over the lines
CAPS = {"special_case": MAX_SPECIAL_CASE, "mutmut": MAX_MUTMUT}
MAX_TOTAL = 40  # candidates per task and per kind, operators interleaved round-robin


def plausible_wrong(task: Task, tree: Path, test_ids: Sequence[str]) -> list[Candidate]:
    """Variants of gold that should not pass a sound suite (see the module docstring)."""
    with workspace(task, tree) as ws:
        if ws is None:
            return []
        sources = test_sources(task, tree, [t.partition("::")[0] for t in test_ids])
        literals, calls = test_literals(sources, test_ids), calls_in_tests(sources, test_ids)
        per_op: dict[str, list[tuple[str, Lazy]]] = {}

        def add(operator: str, description: str, contents: Contents | Lazy) -> None:
            thunk = contents if callable(contents) else (lambda c=contents: c)
            per_op.setdefault(operator, []).append((description, thunk))

        blocks = {p: change_blocks(file_lines(ws.old[p]), file_lines(ws.new[p])) for p in ws.paths}
        hunks = [(p, h) for p in ws.paths if ws.old[p] is not None and ws.new[p] is not None and importable(p, ws.root)
                 for h in hunk_groups(file_lines(ws.old[p]), file_lines(ws.new[p]))]  # fmt: skip
        if len(hunks) > 1:
            for n, (path, hunk) in enumerate(hunks, 1):
                text = revert_blocks(file_lines(ws.old[path]), file_lines(ws.new[path]), hunk)
                first = min(j1 for _, _, j1, _ in hunk) + 1
                add("drop_hunk", f"gold without hunk {n} of {len(hunks)} ({path} near line {first})", {path: text})
        elif len(hunks) == 1 and len(blocks[hunks[0][0]]) > 1:
            path, _ = hunks[0]
            for i1, i2, j1, j2 in blocks[path]:
                text = revert_blocks(file_lines(ws.old[path]), file_lines(ws.new[path]), {(i1, i2, j1, j2)})
                add("drop_change", f"gold without its change at {path}:{j1 + 1}", {path: text})
        code_paths = [p for p in ws.paths if importable(p, ws.root)]
        if len(code_paths) > 1:
            for path in code_paths:
                add("revert_file", f"gold without its changes to {path}", {path: ws.old[path]})
        for operator, description, build in guarded(one_similar_site(ws), "gold's change blocks"):
            add(operator, description, build)
        for py in python_files(ws):
            built = [mutants(py), data_mutants(py), narrow_guard(py, literals), drop_conjunct(py), drop_normaliser(py),
                     constant_for_variable(py, calls), adjacent_edit(py), mutmut_mutants(py)]  # fmt: skip
            for operator, description, build in (site for sites in built for site in guarded(sites, py.path)):
                add(operator, description, lambda build=build, path=py.path: one_file(path, build()))
            for operator, description, code in guarded(special_cases(py, literals), py.path):
                add(operator, description, {py.path: code})

        gold_ast = {p: ast_dump(ws.new[p]) for p in ws.paths}
        old_ast = {p: ast_dump(ws.old[p]) for p in ws.paths}

        def equivalent(contents: Contents) -> bool:
            dumps = {p: ast_dump(contents.get(p, ws.new[p])) for p in ws.paths}
            return dumps == gold_ast or dumps == old_ast

        return _finish(ws, "plausible_wrong", per_op, equivalent)


def correct_alternatives(task: Task, tree: Path) -> list[Candidate]:
    """Behaviour-preserving rewrites of the gold-patched code (see the module docstring)."""
    with workspace(task, tree) as ws:
        if ws is None:
            return []
        per_op: dict[str, list[tuple[str, Lazy]]] = {}
        for py in python_files(ws):
            for operator, description, code in guarded(rewrites(py, task.problem_statement, ws), py.path):
                per_op.setdefault(operator, []).append((description, lambda c={py.path: code}: c))
        return _finish(ws, "correct_alternative", per_op, lambda contents: False)


def _finish(
    ws: Workspace, kind: ProbeKind, per_op: Mapping[str, list[tuple[str, Lazy]]], equivalent: Callable[[Contents], bool]
) -> list[Candidate]:
    """Diffs, deduplicated, minus gold and empties; capped per operator, interleaved, capped in total."""
    gold = ws.diff({})
    seen = {gold, ""}
    kept: dict[str, list[Candidate]] = {}
    for operator, items in per_op.items():
        cap = CAPS.get(operator, MAX_PER_OPERATOR)
        for description, build in items:
            if len(kept.get(operator, [])) >= cap:
                break
            contents = build()
            if contents is None:
                continue
            if all(contents.get(p, ws.new[p]) == ws.new[p] for p in ws.paths) or equivalent(contents):
                continue
            patch = ws.diff(contents)
            if patch in seen or not patch.strip():
                continue
            seen.add(patch)
            kept.setdefault(operator, []).append(Candidate(kind, operator, description, patch))
    out: list[Candidate] = []
    queues = [list(v) for v in kept.values()]
    while queues and len(out) < MAX_TOTAL:
        for q in queues:
            if q and len(out) < MAX_TOTAL:
                out.append(q.pop(0))
        queues = [q for q in queues if q]
    return out



__all__ = ["Candidate", "correct_alternatives", "plausible_wrong", "MAX_PER_OPERATOR", "MAX_TOTAL"]
