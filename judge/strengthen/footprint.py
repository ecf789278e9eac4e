"""Tests from the fix's untested footprint (``probes.footprint``): an input where the buggy and gold trees
behave differently and no test of the suite calls, written as a maintainer would write it.

Each test checks one behaviour, on one input, with the weakest property that separates gold from the
buggy tree: that it raises (gold raises an exception type the tests, the issue or gold's diff name,
the buggy tree returns), that it returns (the buggy tree raises), the type of what it returns (the
types differ), else the value. It goes beside the tests of the function it calls (a FAIL_TO_PASS test
that calls it, or the first FAIL_TO_PASS test's file, also for an input read from a document), in the
file's style (a method of a unittest class with ``self.assert*``), with the call's keyword arguments
as the tests spell them, named after what it checks. Validation is the survivors' tests' one
(``judge.strengthen.validation``), except that it need not kill a survivor: it must fail on the buggy
tree by itself and pass on gold, its rewrites and every correct alternative. Per (function,
argument) one test is kept; what is left untested is recorded with why.

Then one test of what the fix keeps: up to ``KEPT_PER_TEST`` calls no test makes where the two trees
agree, at an end of a FAIL_TO_PASS input where other characters make them differ (``Footprint.kept``:
the boundary of gold's change), each asserting the value both give. It must pass on the buggy tree
(``passes_on_buggy``) and everything a footprint test must; a fix wider than gold's (an ending too
many, a guard one value too wide), or one that rewrites the function for the tested inputs only,
fails it though it handles every input gold changed.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence

from harness.pyast import literal_eval, parse
from harness.records import DistinguishingInput, FootprintInput
from judge.strengthen.validation import Workbench
from judge.strengthen.writing import Candidate, _imports_pytest, function_code, is_unittest_class, model_free_body, module_repr, split_test_id
from probes.footprint import Footprint, Found
from probes.special_case import find_def

MAX_TESTS = 2  # footprint tests kept per task
MAX_TRIES = 4  # footprint candidates validated per task
BUILTIN_TYPES = {"list", "tuple", "dict", "set", "frozenset", "str", "bytes", "int", "float", "complex", "bool"}


def value_type(value: str) -> str:
    """The type name of a canonical value (``probes.diff_driver.canon`` as JSON); "" when there is none."""
    try:
        canon = json.loads(value) if value else None
    except ValueError:
        return ""
    if isinstance(canon, str):
        try:
            return type(literal_eval(canon)).__name__
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return ""
    return canon[0] if isinstance(canon, list) and canon and isinstance(canon[0], str) else ""


# the public attributes a standard library value's repr lists by position
FIELDS = {
    "datetime": ("year", "month", "day", "hour", "minute", "second", "microsecond"),
    "date": ("year", "month", "day"),
    "time": ("hour", "minute", "second", "microsecond"),
    "timedelta": ("days", "seconds", "microseconds"),
    "Decimal": (),
    "Fraction": ("numerator", "denominator"),
}


def attributes(value: str) -> dict[str, str] | None:
    """The public attributes of a value whose canonical form is ``[type, repr]`` with a repr written as
    its constructor call (``datetime.datetime(1997, 8, 29, 6, 14, 0, 123)``): positional arguments named
    by ``FIELDS``, keyword arguments by their keyword, each as source; None where that is not so."""
    try:
        canon = json.loads(value) if value else None
        if not (isinstance(canon, list) and len(canon) == 2 and all(isinstance(x, str) for x in canon)):
            return None
        # an attribute shown as ``<... object>`` (a tzinfo of the library's own) is no literal, but the
        # others still are
        node = parse(re.sub(r"<[^<>]*>", "_opaque", canon[1]), mode="eval").body  # type: ignore[attr-defined]
    except (ValueError, SyntaxError):
        return None
    if not isinstance(node, ast.Call) or canon[0] not in FIELDS:
        return None
    names = FIELDS[canon[0]]
    if len(node.args) > len(names):
        return None
    out = {name: ast.unparse(a) for name, a in zip(names, node.args)}
    out |= {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}
    return out


Part = tuple[str, str, tuple[str, ...]]  # an expression on ``result``, gold's value of it as source, the imports that source needs


def differing_attributes(found: Found) -> list[Part]:
    """The parts of gold's value that differ from the buggy tree's and read back: a standard library
    value's literal attributes (``result.year``), or an object's items (``list(result)``) and public
    plain data (``result.fixed``) where its repr hides them (``probes.diff_driver.structure``); []
    where the values differ otherwise, or nowhere a literal states."""
    if value_type(found.gold.value) != value_type(found.buggy.value):
        return []
    g, b = attributes(found.gold.value), attributes(found.buggy.value)
    if g is not None and b is not None:
        out: list[Part] = []
        for name in dict.fromkeys([*g, *b]):
            if g.get(name) != b.get(name):
                try:
                    literal_eval(g.get(name, ""))
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    return []
                out.append((f"result.{name}", g[name], ()))
        return out
    return differing_structure(found.gold.value, found.buggy.value)


def _structure(canon: object) -> dict | None:
    """``{"items": [...], "attrs": {name: canon}}`` of an object's canonical form, None for any other value."""
    if not (isinstance(canon, list) and len(canon) in (2, 3) and isinstance(canon[0], str)) or canon[0] in BUILTIN_TYPES | {"iterator"}:
        return None
    shape = canon[2] if len(canon) == 3 and isinstance(canon[2], dict) else {}
    if isinstance(canon[1], list) and canon[1][:1] == ["dict"]:  # no repr of its own: its public data, then its items
        return {**shape, "attrs": {literal_eval(k): v for k, v in canon[1][1]}}
    return {**shape, "attrs": dict(shape.get("attrs", []))} if isinstance(canon[1], str) else None


def canon_source(canon: object) -> tuple[str, tuple[str, ...]] | None:
    """Source of the value ``canon`` is the canonical form of (``probes.diff_driver.canon``), with the
    imports it needs: a literal, a container of such, or a standard library value written as its
    module's constructor call (``module_repr``); None for any other."""
    if isinstance(canon, str):
        if canon == "...":  # deeper than canon reads: no value
            return None
        try:
            literal_eval(canon)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        return canon, ()
    if not (isinstance(canon, list) and len(canon) == 2 and isinstance(canon[1], (list, str))):
        return None
    kind, inner = canon
    if isinstance(inner, str):
        got = module_repr(json.dumps(canon))
        return (got[1], tuple(got[0])) if got is not None else None
    if kind not in {"list", "tuple", "set", "frozenset", "dict"}:
        return None
    parts = [canon_source(json.loads(v) if kind in {"set", "frozenset"} else v) for v in inner] if kind != "dict" else []
    pairs = [(canon_source(k), canon_source(v)) for k, v in inner] if kind == "dict" else []
    stated = [*parts, *(x for pair in pairs for x in pair)]
    if any(x is None for x in stated):
        return None
    imports = tuple(dict.fromkeys(i for x in stated for i in x[1]))  # type: ignore[index]
    texts = [x[0] for x in parts]  # type: ignore[index]
    if kind == "dict":
        return "{" + ", ".join(f"{k[0]}: {v[0]}" for k, v in pairs) + "}", imports  # type: ignore[index]
    if kind in {"set", "frozenset"}:
        inside = "{" + ", ".join(texts) + "}" if texts else ""
        return (inside if kind == "set" and texts else f"{kind}({inside})"), imports
    if kind == "tuple":
        return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")", imports
    return "[" + ", ".join(texts) + "]", imports


def differing_items(gold: list, buggy: list) -> list[Part]:
    """How a test states that an object's items differ: all of them where each reads back
    (``list(result)``), else their number where it differs (``len(list(result))``), else each public
    attribute of the items that differs (``[x.value for x in result]``: tokens printed alike)."""
    if (got := canon_source(["list", gold])) is not None:
        return [("list(result)", *got)]
    if len(gold) != len(buggy):
        return [("len(list(result))", str(len(gold)), ())]
    shapes = [(_structure(g), _structure(b)) for g, b in zip(gold, buggy)]
    if not all(g is not None and b is not None for g, b in shapes):
        return []
    out: list[Part] = []
    for name in dict.fromkeys(n for g, _ in shapes for n in g["attrs"]):  # type: ignore[index]
        pairs = [(g["attrs"].get(name), b["attrs"].get(name)) for g, b in shapes]  # type: ignore[index]
        if not name.isidentifier() or any(g is None for g, _ in pairs) or all(g == b for g, b in pairs):
            continue
        if (got := canon_source(["list", [g for g, _ in pairs]])) is not None:
            out.append((f"[x.{name} for x in result]", *got))
    return out


def differing_structure(gold: str, buggy: str) -> list[Part]:
    """The parts of two objects' canonical forms that differ where their reprs hide them: the items
    (``differing_items``), each public attribute (``result.<name>``)."""
    try:
        g, b = _structure(json.loads(gold) if gold else None), _structure(json.loads(buggy) if buggy else None)
    except ValueError:
        return []
    if g is None or b is None:
        return []
    out = differing_items(g["items"], b["items"]) if "items" in g and "items" in b and g["items"] != b["items"] else []
    for name, value in g["attrs"].items():
        if name.isidentifier() and value != b["attrs"].get(name) and (got := canon_source(value)) is not None:
            out.append((f"result.{name}", *got))
    return out


def weakest(found: Found) -> str:
    """The weakest property that tells gold from the buggy tree on this input: raises, returns, type, value."""
    g, b = found.gold, found.buggy
    if g.raised and not b.raised:
        return "raises"
    if b.raised and not g.raised:
        return "returns"
    gt, bt = value_type(g.value), value_type(b.value)
    if bt == "NoneType" and gt and gt != "NoneType":
        return "not_none"
    if gt != bt and {gt, bt} != {"int", "bool"} and (gt in BUILTIN_TYPES or gt == "NoneType"):
        return "type"
    return "attributes" if differing_attributes(found) else "value"


def _check(call: str, gold_type: str, *, unittest: bool) -> str:
    if gold_type == "NoneType":
        return f"self.assertIsNone({call})" if unittest else f"assert {call} is None"
    return f"self.assertIsInstance({call}, {gold_type})" if unittest else f"assert isinstance({call}, {gold_type})"


def body(found: Found, prop: str, *, unittest: bool, pytest_imported: bool) -> list[str] | None:
    """The test's statements for ``prop`` (``weakest``): the call's imports, then one check."""
    d = as_input(found, "")
    if prop == "type":
        return [*d.setup, _check(d.call, value_type(found.gold.value), unittest=unittest)]
    if prop == "returns":
        return [*d.setup, d.call]
    if prop == "attributes":
        parts = differing_attributes(found)
        checks = [(f"self.assertEqual({a}, {v})" if unittest else f"assert {a} == {v}") for a, v, _ in parts]
        return [*d.setup, *dict.fromkeys(i for _, _, imports in parts for i in imports), f"result = {d.call}", *checks]
    if prop == "not_none":
        return [*d.setup, f"self.assertIsNotNone({d.call})" if unittest else f"assert {d.call} is not None"]
    return model_free_body(d, unittest=unittest, pytest_imported=pytest_imported)  # its value (or "keeps": the value both trees give)


_OPERATORS = {"__add__": ast.Add, "__sub__": ast.Sub, "__mul__": ast.Mult, "__truediv__": ast.Div, "__floordiv__": ast.FloorDiv,
              "__mod__": ast.Mod, "__pow__": ast.Pow, "__and__": ast.BitAnd, "__or__": ast.BitOr, "__xor__": ast.BitXor,
              "__lshift__": ast.LShift, "__rshift__": ast.RShift, "__matmul__": ast.MatMult}  # fmt: skip
_COMPARISONS = {"__eq__": ast.Eq, "__ne__": ast.NotEq, "__lt__": ast.Lt, "__le__": ast.LtE, "__gt__": ast.Gt, "__ge__": ast.GtE,
                "__contains__": ast.In}  # fmt: skip


def as_written(src: str) -> str:
    """A recorded call of a dunder method as a test writes it: ``Markup.__mod__(m, 42)`` is ``m % 42``,
    ``T.__getitem__(t, 0)`` is ``t[0]``, ``S.__contains__(s, x)`` is ``x in s``; other calls as they are."""
    try:
        node = parse(src, mode="eval").body  # type: ignore[attr-defined]
    except (SyntaxError, ValueError):
        return src
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 2 and not node.keywords):
        return src
    a, b = node.args
    name = node.func.attr
    if name in _OPERATORS:
        return ast.unparse(ast.BinOp(a, _OPERATORS[name](), b))
    if name == "__contains__":
        return ast.unparse(ast.Compare(b, [ast.In()], [a]))
    if name in _COMPARISONS:
        return ast.unparse(ast.Compare(a, [_COMPARISONS[name]()], [b]))
    if name == "__getitem__":
        return ast.unparse(ast.Subscript(a, b, ast.Load()))
    return src


def as_input(found: Found, test_id: str) -> DistinguishingInput:
    c = found.call
    return DistinguishingInput(test_id=test_id or c.test_id, how=c.how, setup=list(c.imports), call=as_written(c.src), gold=found.gold, other=found.buggy,
                               literal=found.literal, source="variant", target=c.target, args=list(c.args), kwargs=dict(c.kwargs))  # fmt: skip


def home(found: Found, sources: dict[str, str], fail_to_pass: Sequence[str]) -> str:
    """The test id whose file and class the new test joins: the one the input came from when it is a
    hidden test, else a FAIL_TO_PASS test calling the same function, else the first FAIL_TO_PASS test."""
    origin = found.call.test_id
    if origin.partition("::")[0] in sources:
        return origin
    name = found.call.func.rpartition(".")[2]
    for test_id in fail_to_pass:
        file, parts = split_test_id(test_id)
        try:
            fn = find_def(parse(sources.get(file, "")), parts)
        except SyntaxError:
            continue
        if fn is not None and re.search(rf"\b{re.escape(name)}\(", "\n".join(sources[file].splitlines()[fn.lineno - 1 : fn.end_lineno])):
            return test_id
    return next((t for t in fail_to_pass if t.partition("::")[0] in sources), "")


_SLUG = re.compile(r"[^0-9a-zA-Z]+")
_PART_NAMES = {"list(result)": "items", "len(list(result))": "length"}


def _part_name(expression: str) -> str:
    """What an assertion of ``differing_attributes`` checks, for a test's name: ``result.fixed`` -> fixed."""
    if expression in _PART_NAMES:
        return _PART_NAMES[expression]
    return expression.partition(" for ")[0].strip("[").rpartition(".")[2]


def name_for(found: Found, prop: str, taken: str) -> str:
    """``test_<function>_<what it checks>_<the input>``, unique in the file."""
    func = found.call.func.rpartition(".")[2].strip("_").lower() or "call"
    what = {"raises": f"raises_{found.gold.raised.rpartition('.')[2].lower()}", "returns": "does_not_raise",
            "type": f"returns_{value_type(found.gold.value).lower()}", "not_none": "finds_a_result", "value": "result",
            "attributes": "_".join(_part_name(a) for a, _, _ in differing_attributes(found)),
            "keeps": "keeps_its_result"}[prop]  # fmt: skip
    where, _, value = found.call.how.partition(" with ")[2].partition(" -> ")
    varied = f"{where if where.endswith('=') else ''}{value.rpartition(' (')[0]}" if value else found.call.src
    slug = _SLUG.sub("_", varied).strip("_").lower()[:32] or "empty"
    base = f"test_{func}_{what}_for_{slug}"
    name, n = base, 2
    while re.search(rf"\bdef {re.escape(name)}\(", taken):
        name, n = f"{base}_{n}", n + 1
    return name


def candidate(picked: Sequence[tuple[Found, str]], sources: dict[str, str], fail_to_pass: Sequence[str]) -> Candidate | None:
    """One test asserting each (input, property) of ``picked``: inputs of one kind (a function's
    argument), one behaviour of gold's change; placed and named after the first."""
    found, prop = picked[0]
    anchor = home(found, sources, fail_to_pass)
    if not anchor:
        return None
    file, parts = split_test_id(anchor)
    source = sources[file]
    cls = parts[-2] if len(parts) > 1 else None
    unittest = cls is not None and is_unittest_class(source, cls)
    bodies = [body(f, p, unittest=unittest, pytest_imported=_imports_pytest(source)) for f, p in picked]
    if any(b is None for b in bodies):
        return None
    lines = [line for b in bodies for line in b or []]
    imports = list(dict.fromkeys(line for line in lines if line.startswith(("import ", "from "))))
    stated = [*imports, *(line for line in lines if line not in imports)]
    name = name_for(found, prop, source)
    keeps = prop == "keeps"
    origin = found.call.how.rpartition(" (")[2].rstrip(")") or "the tests"
    why = f"what gold keeps next to its change, on input(s) no test calls ({origin})" if keeps else f"gold's change on input(s) no test calls ({origin})"
    found_by = "the fix's footprint: " + "; ".join(f"{f.call.src[:120]}: gold {f.gold.raised or f.gold.value[:50]}, buggy {f.buggy.raised or f.buggy.value[:50]}"
                                                   for f, _ in picked)  # fmt: skip
    code = function_code(name, stated, method=cls is not None, why=why)
    return Candidate(file=file, cls=cls, name=name, code=code, source="model_free", found_by=found_by, footprint=not keeps, keeps=keeps)


PER_TEST = 3  # inputs of one kind asserted in one test
KEPT_PER_TEST = 25  # inputs where the trees agree, asserted in the one test of what the fix keeps: one end's whole class


def _bigrams(text: str) -> set[str]:
    """The character pairs of a call, and the length of each of its string literals up to 3 (an empty
    or one-character argument is something new even though it brings no pair)."""
    pairs = {text[i : i + 2] for i in range(len(text) - 1)}
    try:
        strings = [n.value for n in ast.walk(parse(text, mode="eval")) if isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes))]
    except (SyntaxError, ValueError):
        strings = []
    return pairs | {f"<len {len(v)}>" for v in strings if len(v) <= 3}


def diverse(inputs: Sequence[Found], own: Sequence[str], k: int = PER_TEST) -> list[Found]:
    """Up to ``k`` inputs, each the shortest that brings character pairs neither the tests' own calls
    nor the ones picked before have (``pluralize('sx')``, ``pluralize('shox')``: endings the tests
    never name); the shortest of all where none does."""
    seen = {b for src in own for b in _bigrams(src)}
    picked: list[Found] = []
    rest = list(inputs)
    while rest and len(picked) < k:
        fresh = [f for f in rest if _bigrams(f.call.src) - seen]
        if picked and not fresh:
            break
        # the simplest input that brings anything new, not the one that brings most (a long splice)
        best = min(fresh or rest, key=lambda f: (len(f.call.src), -len(_bigrams(f.call.src) - seen)))
        picked.append(best)
        rest.remove(best)
        seen |= _bigrams(best.call.src)
    return picked


def strengthen_from(bench: Workbench, footprint: Footprint, sources: dict[str, str], fail_to_pass: Sequence[str]) -> list[FootprintInput]:
    """Validate a test per kind of the untested footprint (a few diverse inputs of one function's
    argument together, else each alone) and record, per input, the test that pins it or why none does."""
    outcomes: dict[str, str] = {f.call.src: "tested: one of the tests' own calls" for f in footprint.found if f.tested}
    kinds: dict[tuple[str, str], list[Found]] = {}
    for f in footprint.found:
        if not f.tested:
            kinds.setdefault(f.kind, []).append(f)
    kept, tried = 0, 0
    for inputs in kinds.values():
        if kept >= MAX_TESTS or tried >= MAX_TRIES:
            break
        picked = diverse(inputs, footprint.own)
        tries = [[(f, weakest(f)) for f in picked]] if len(picked) > 1 else []
        for f in picked[:2]:  # each alone, its weakest property, then its value
            tries += [[(f, p)] for p in dict.fromkeys([weakest(f), "value"])]
        why: list[str] = []
        for attempt in tries:
            if tried >= MAX_TRIES:
                break
            cand = candidate(attempt, sources, fail_to_pass)
            if cand is None:
                why.append("not stated (no evaluable value, or no test file to place it in)")
                continue
            tried += 1
            record = bench.consider(cand)
            if not record.rejected_at:
                kept += 1
                outcomes |= {f.call.src: f"kept as {record.test_id} ({p})" for f, p in attempt}
                break
            step = next(c for c in record.checks if c.step == record.rejected_at)
            why.append(f"{', '.join(p for _, p in attempt)}: rejected at {record.rejected_at} ({step.detail[:160]})")
        pinned = any(outcomes.get(f.call.src, "").startswith("kept") for f in inputs)
        for f in inputs:
            outcomes.setdefault(f.call.src, "left untested: " + ("a kept test pins other inputs of this function's argument" if pinned else "; ".join(why)))
    # the boundary of gold's change: where it agrees with the buggy tree, nearest to where it differs
    keeps = footprint.kept[:KEPT_PER_TEST]
    if keeps and (cand := candidate([(f, "keeps") for f in keeps], sources, fail_to_pass)) is not None:
        record = bench.consider(cand)
        step = next((c for c in record.checks if c.step == record.rejected_at), None)
        outcomes |= {f.call.src: f"kept as {record.test_id} (keeps)" if step is None else f"left untested: rejected at {record.rejected_at} ({step.detail[:160]})"
                     for f in keeps}  # fmt: skip
    return [FootprintInput(call=f.call.src, target=f.call.target, how=f.call.how, gold=f.gold, buggy=f.buggy, tested=f.tested,
                           outcome=outcomes.get(f.call.src, f"left untested: over the budget ({MAX_TESTS} tests, {MAX_TRIES} tried a task)"))  # fmt: skip
            for f in [*footprint.found, *keeps]]
