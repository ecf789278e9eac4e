"""A survivor's distinguishing input as a candidate test in the file's own style: a new case, a function, an anchored function."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from harness.pyast import parse
from harness.records import DistinguishingInput, ProbeResult, content_hash
from judge.strengthen.cases import _module_names, case_code, case_values, parametrize_of
from judge.strengthen.writing import (
    Candidate,
    Form,
    _dotted,
    _imports_only,
    _imports_pytest,
    _literal_source,
    _oneline,
    function_code,
    is_unittest_class,
    model_free_body,
    own_checks,
    split_test_id,
)
from probes.differential.statements import injects
from probes.special_case import find_def


def _fixtures(fn: ast.FunctionDef | ast.AsyncFunctionDef, statements: Sequence[str], skip: Sequence[str]) -> list[str]:
    """The original test's fixtures (its parameters but ``self`` and parametrize argnames) that
    ``statements`` use, in the test's order."""
    try:
        used = {n.id for n in ast.walk(parse("\n".join(statements))) if isinstance(n, ast.Name)}
    except SyntaxError:
        return []
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    return [p for p in params if p != "self" and p not in skip and p in used]


def carried_decorators(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The original test's decorators a new test beside it needs: its ``usefixtures`` marks, and those
    that wrap its call (a frozen clock: the input was observed inside it); not its other marks
    (``parametrize``, ``skipif``), nor one that hands the test arguments of its own (a patch, Hypothesis)."""
    out = []
    for d in fn.decorator_list:
        name = _dotted(d.func if isinstance(d, ast.Call) else d)
        mark = name.startswith("mark.") or ".mark." in name
        if name.endswith("mark.usefixtures") or (name and not mark and not injects(name)):
            out.append(ast.unparse(d))
    return out


def _binds_immutable(statement: str) -> bool:
    """Whether ``statement`` binds names to an immutable literal (``seq = 'ABC'``): no call can change
    what it bound, so it need not be repeated before the next one."""
    try:
        (node,) = parse(statement).body
    except (SyntaxError, ValueError):
        return False
    if not isinstance(node, ast.Assign) or not all(isinstance(t, ast.Name) for t in node.targets):
        return False
    value = _literal_source(ast.unparse(node.value))
    return isinstance(value, (str, bytes, int, float, complex, bool, tuple, frozenset)) or value is None


def with_neighbours(body: list[str], extra: Sequence[DistinguishingInput], *, unittest: bool, pytest_imported: bool) -> list[str]:
    """``body`` followed by gold's behaviour on each neighbour that can be stated: every import once,
    first, and a setup statement binding an immutable literal once."""
    parts = [body] + [b for v in extra if (b := model_free_body(v, unittest=unittest, pytest_imported=pytest_imported)) is not None]
    imports = list(dict.fromkeys(line for b in parts for line in b if _imports_only([line])))
    out: list[str] = []
    for line in (line for b in parts for line in b if not _imports_only([line])):
        if not (line in out and _binds_immutable(line)):
            out.append(line)
    return [*imports, *out]


def model_free_candidate(probe: ProbeResult, sources: dict[str, str], *, form: Form = "function", anchor: str = "",
                         extra: Sequence[DistinguishingInput] = ()) -> Candidate | None:  # fmt: skip
    """The survivor's distinguishing input as a test in the given form (None where that form does not
    fit): ``case``, a new case of the parametrized test it came from; ``function``, a function of its
    own beside that test; ``anchored``, that function after the checks of the FAIL_TO_PASS test the
    input came from. A survivor that breaks what the buggy code already got right (``n <= 0`` for
    gold's ``n < 0``: ``tail(0, ...)`` is ``[]`` on buggy and gold) gives an input the buggy tree
    passes, which alone is no FAIL_TO_PASS test; after the original test's checks it fails on buggy
    where they do and on the survivor where the input does. ``anchor``: the FAIL_TO_PASS test whose
    checks go first, when the input came from another test (an observed call of a passing test).
    ``extra``: neighbours of the input (``observe_neighbours``), asserted after it in the function forms."""
    d = probe.distinguishing
    if d is None:
        return None
    file, parts = split_test_id(anchor if form == "anchored" and anchor else d.test_id)
    cls = parts[-2] if len(parts) > 1 else None
    source = sources.get(file, "")
    try:
        tree = parse(source)
    except SyntaxError:
        return None
    fn = find_def(tree, parts)
    spec = parametrize_of(fn, source) if fn is not None else None
    found_by = (f"distinguishing input of survivor {probe.probe_id} ({probe.operator}): {_oneline(d.call)} "
                f"from {d.test_id}, {_oneline(d.how)}; gold {d.gold.raised or d.gold.value[:60]}, "
                f"survivor {d.other.raised or d.other.value[:60]}")  # fmt: skip
    if form == "case":
        values = case_values(fn, spec, d, _module_names(tree)) if fn is not None and spec is not None else None
        if values is None or spec is None or fn is None:
            return None
        case = f"strengthened_{content_hash(', '.join(values))[:8]}"
        return Candidate(file=file, cls=cls, name=fn.name, code=case_code(spec, values, case), source="model_free",
                         found_by=found_by, probe_id=probe.probe_id, case=case)  # fmt: skip
    unittest = cls is not None and is_unittest_class(source, cls)
    body = model_free_body(d, unittest=unittest, pytest_imported=_imports_pytest(source))
    if body is None:
        return None
    why = f"gold's behaviour on an input the original tests leave open ({_oneline(d.how)})"
    if extra:
        body = with_neighbours(body, extra, unittest=unittest, pytest_imported=_imports_pytest(source))
        why += f" and on {len(extra)} of its neighbours"
        found_by += f"; with {len(extra)} neighbours: " + "; ".join(_oneline(v.call) for v in extra)
    own = ""
    if form == "anchored":
        # a parametrized test's checks read its argnames: its new case already runs them on the input
        if spec is not None or (own := own_checks(source, parts)) is None:
            return None
        # imports first: a name the original checks use, imported later in the function, would be a
        # local not yet bound when they run (UnboundLocalError)
        imports = [line for line in body if _imports_only([line])]
        body = [*imports, own, *(line for line in body if line not in imports)]
        why = f"{parts[-1]}'s checks, then {why}"
    argnames = spec.argnames if spec is not None else ()
    fixtures = _fixtures(fn, body, argnames) if fn is not None else []
    decorators = carried_decorators(fn) if fn is not None else []

    def code(name: str) -> str:
        return function_code(name, body, method=cls is not None, why=why, fixtures=fixtures, decorators=decorators)

    name = f"test_strengthened_{content_hash(code('test_x'))[:8]}"
    return Candidate(file=file, cls=cls, name=name, code=code(name), source="model_free", probe_id=probe.probe_id, found_by=found_by,
                     copied=own)  # fmt: skip
