"""Test strengthening: repair a too-loose suite in place with tests that reject its surviving wrong patches.

Candidates come from two sources:

1. *Model-free*: each confirmed survivor's distinguishing input (``probes.differential``) becomes a test
   in the test file's own style. Where the test it came from is parametrized and the input's call
   matches the test's call with its argnames as holes (and the argname the result is compared with
   takes gold's value), the test gets a new case: a ``pytest.param(..., id="strengthened_...")``
   appended to its ``parametrize`` list, so its own checks, fixtures and class run on the new input.
   Otherwise it becomes a function that asserts gold's behaviour on that input (its return value when
   its ``repr`` evaluates back to it, the exception type it raises, or what it prints): a method of
   the test's class (``self.assert*`` in a unittest class, whose setUp runs) or a module-level
   function, taking the original test's fixtures that its statements use. Where the buggy tree already
   behaves like gold on that input (the survivor broke something the bug left alone), the function
   repeats the checks of the FAIL_TO_PASS test the input came from first, so it still fails on buggy.
   The survivor is one wrong fix; others the suite lets through are wrong next to where it is. So the
   function also asserts gold's behaviour on the input's *neighbours* (``observe_neighbours``): the
   call with one literal argument moved to a close value (a boundary number, an empty or one-element
   container, a string one shorter or with a longer run of digits), each replayed alone on gold
   (twice), the buggy tree and every survivor, kept where gold answers alike both times and in
   contract and the buggy tree or a survivor answers otherwise. Beside them go neighbours of the
   tests' own cases of the input's function (``seed_calls``: the calls the input's test and the
   FAIL_TO_PASS tests make with literal arguments, varied where the cases differ from each other) on
   which gold answers so and the buggy tree otherwise: the class of behaviour gold changes, where a
   fix that special-cases the tests' cases fails though the survivor's input lies elsewhere. A task
   with several confirmed survivors gets a test per distinct input, even where an earlier test
   already kills a survivor.
   Where gold's value has no evaluable repr (an object holding one that prints ``<... object>``), the
   input is compared as text, ``str(call)``, when that still tells the survivor apart
   (``restate_as_text``).
2. *Judge-written*: tests the judge proposes with ``propose_test`` (``judge.tools``), each citing the
   issue sentences its assertions follow from. In the same session the judge reviews the kept
   model-free tests (``review_test``): relevant with a cited sentence of the issue, or irrelevant
   (dropped, and recorded as rejected at ``relevance``).

Every candidate goes through the same validation, by the one grader, each step recorded
(``ValidationCheck``) and stopped at the first that fails (``AddedTest.rejected_at``):

``leak``            it names no identifier that only gold introduces (unless the issue names it) and
                    copies no line gold adds;
``contract``        it pins nothing a correct fix unlike gold may do otherwise: no exception message,
                    object address or float to full precision (``implementation_details``; set order
                    and other per-process detail fail ``gold_stable``, each run its own hash seed);
``gold_stable``     it passes on gold in k runs;
``fails_on_buggy``  it fails on the buggy tree;
``kills_survivor``  it fails on at least one confirmed survivor;
``invariant``       it passes on every behaviour-preserving rewrite of gold (the correct_alternative
                    probes that passed the original suite): STING's guard against pinning gold's form;
``pass_to_pass``    with it added, gold still reproduces the original pattern on every other test;
``relevance``       a judge-written test must cite sentences of the issue (checked first: a proposal
                    that cites none is rejected before anything runs); a model-free one stays
                    ``unreviewed`` (kept, flagged) until the judge accepts that the issue asks for it.

Kept tests are added until every survivor is killed; the suite with all of them is graded once more
(gold reproduces its pattern; each survivor is graded in full) and the task ends ``repaired`` (every
survivor killed), ``partially_repaired`` or ``not_repaired``, with the reason. The strengthened hidden
tests are a new tests patch; the task's own hidden tests stay untouched.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import shutil
import tempfile
import textwrap
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from curation.store import commit_folder, read_records
from harness.grading.grader import grade
from harness.names import under
from harness.pyast import literal_eval, parse
from harness.records import (
    AddedTest,
    DistinguishingInput,
    Grade,
    HiddenTests,
    Pipeline1Result,
    ProbeResult,
    Status,
    Strengthening,
    Task,
    ValidationCheck,
    VerdictRecord,
    content_hash,
)
from harness.sandboxes.sandbox import Backend
from judge.rules import added_test_leaks, touched_files
from probes.differential import Program, Step, behaviour, run_programs
from probes.observe import MAX_ENDINGS, alternatives, changed_literals, expected_exceptions, in_contract, slot_name
from probes.special_case import find_def
from probes.workspace import apply_trusted, git, read_text, test_sources, workspace

GOLD_RUNS = 3  # k: a kept test passes on gold this many times
MAX_NEIGHBOURS = 24  # variations of one distinguishing input replayed on every tree
KEEP_NEIGHBOURS = 8  # of those, asserted beside the input
MAX_SEEDS = 8  # calls of the input's function that its test and the FAIL_TO_PASS tests make, varied too
SEED_NEIGHBOURS = 32  # variations of one such call replayed on every tree (of the arguments the cases vary)
KEEP_SEED_NEIGHBOURS = 16  # of those, asserted beside the input (each kind of variation before a second of a kind)
NEIGHBOUR_TIMEOUT_S = 300.0  # one tree's replay of every variation
# variations too far from the input to be its neighbourhood: what gold does on a string doubled or
# spliced with another (pyiso8601 reads one doubled date as a -08:00 offset) is no behaviour the issue
# states, and a correct fix unlike gold may well reject it
FAR_VARIATIONS = ("doubled", "spliced with another seen value", "nested in another seen value", "Hypothesis, inferred from the values seen")
MAX_FLOAT_DIGITS = 12  # significant digits past which a float is gold's arithmetic, not the contract
RAN = ("pattern_mismatch", "tests_errored")  # a zero reward the test itself gave


# ============================================================================================ writing tests


@dataclass(frozen=True)
class Candidate:
    """A test to try: the file it goes in, the class it goes in (None: module level), its code. With
    ``case``, ``name`` is an existing parametrized test and ``code`` a new entry of its parametrize
    list whose id is ``case``."""

    file: str
    cls: str | None
    name: str
    code: str
    source: str  # model_free or judge
    found_by: str
    cites: tuple[str, ...] = ()  # the issue sentences its assertions follow from (judge-written)
    probe_id: str = ""  # the survivor it came from (model-free)
    case: str = ""
    copied: str = ""  # the original test's checks it repeats first (anchored): the suite's, not its own

    @property
    def test_id(self) -> str:
        node = "::".join([self.file, *([self.cls] if self.cls else []), self.name])
        return f"{node}[{self.case}]" if self.case else node


Form = Literal["case", "function", "anchored"]


def is_unittest_class(source: str, cls: str) -> bool:
    for node in parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return any("TestCase" in ast.unparse(base) for base in node.bases)
    return False


def _imports_pytest(source: str) -> bool:
    return re.search(r"^\s*(import pytest|from pytest import)", source, re.MULTILINE) is not None


def _oneline(text: str) -> str:
    return " ".join(text.split()).replace("\\", "/")[:120]


def split_test_id(test_id: str) -> tuple[str, list[str]]:
    """(file, [class..., function]) of a pytest node id, its parametrize id left out."""
    file, _, rest = test_id.partition("::")
    return file, rest.partition("[")[0].split("::")


def model_free_body(d: DistinguishingInput, *, unittest: bool, pytest_imported: bool) -> list[str] | None:
    """Statements asserting gold's behaviour on the distinguishing input; None when it cannot be stated
    (a value without an evaluable repr, a timeout)."""
    body = list(d.setup)
    raised = d.gold.raised
    if raised in ("timeout", "not reached"):
        return None
    if raised:
        module, _, name = raised.rpartition(".")
        if module:
            body.append(f"from {module} import {name}")
        if unittest:
            return [*body, f"with self.assertRaises({name}):", textwrap.indent(d.call, "    ")]
        return [*body, *([] if pytest_imported else ["import pytest"]), f"with pytest.raises({name}):", textwrap.indent(d.call, "    ")]
    if d.call_is_statement:  # gold runs it; the other patch raised
        return [*body, d.call]
    if d.gold.value == d.other.value and d.gold.stdout != d.other.stdout:
        printed = repr(d.gold.stdout)
        check = f"self.assertEqual(printed.getvalue(), {printed})" if unittest else f"assert printed.getvalue() == {printed}"
        return [*body, "import contextlib", "import io", "with contextlib.redirect_stdout(io.StringIO()) as printed:",
                textwrap.indent(d.call, "    "), check]  # fmt: skip
    stated = ([], d.literal) if d.literal else module_repr(d.gold.value)
    if stated is None:
        return None
    imports, literal = stated
    return [*body, *imports, f"self.assertEqual({d.call}, {literal})" if unittest else f"assert {d.call} == {literal}"]


def module_repr(value: str) -> tuple[list[str], str] | None:
    """Gold's value as source with the imports it needs, where its repr did not evaluate in the test's
    namespace but names only attributes of modules (``_datetime.datetime(2020, 1, 1, tzinfo=
    _datetime.timezone.utc)`` after ``import datetime as _datetime``); None otherwise. ``value`` is the canonical
    JSON of ``probes.diff_driver.canon``: an object without state is ``[type, repr]``. A module that
    does not import fails the test on gold, which ``gold_stable`` rejects."""
    try:
        canon = json.loads(value) if value else None
    except ValueError:
        return None
    if not (isinstance(canon, list) and len(canon) == 2 and all(isinstance(x, str) for x in canon)):
        return None
    text = canon[1]
    try:
        body = parse(text).body
    except (SyntaxError, ValueError):
        return None
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return None
    names = [n for n in ast.walk(body[0]) if isinstance(n, ast.Name)]
    roots = {id(n.value) for n in ast.walk(body[0]) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    if not names or any(id(n) not in roots or not n.id.isidentifier() or n.id in _NOT_MODULES for n in names):
        return None
    for n in names:  # under a name of their own: the test may bind the module's name to something else
        n.id = f"_{n.id}"
    return [f"import {name[1:]} as {name}" for name in sorted({n.id for n in names})], ast.unparse(body[0])


_NOT_MODULES = set(dir(builtins)) | {"self", "cls"}


def function_code(name: str, body: Sequence[str], *, method: bool, why: str, fixtures: Sequence[str] = (),
                  decorators: Sequence[str] = ()) -> str:  # fmt: skip
    params = ", ".join([*(["self"] if method else []), *fixtures])
    lines = [*(f"@{d}" for d in decorators), f"def {name}({params}):", f"    # {why}"]
    lines += [textwrap.indent(statement, "    ") for statement in body]
    return "\n".join(lines) + "\n"


def own_checks(source: str, parts: Sequence[str]) -> str | None:
    """The statements of the test ``parts`` names (its docstring left out), dedented, as written."""
    try:
        fn = find_def(parse(source), parts)
    except SyntaxError:
        return None
    if fn is None:
        return None
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    if not body:
        return None
    lines = source.splitlines(keepends=True)
    return textwrap.dedent("".join(lines[body[0].lineno - 1 : fn.end_lineno])).rstrip("\n")


_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")
_MESSAGE_ASSERTS = {"assertRaisesRegex", "assertRaisesRegexp", "assertWarnsRegex", "assertRegex"}


def _significant_digits(x: float) -> int:
    return len(repr(abs(x)).lower().partition("e")[0].replace(".", "").strip("0"))


def implementation_details(code: str, copied: str = "") -> list[str]:
    """What an added test pins beyond the behaviour a fix's contract implies ([] when nothing): an
    exception's message (``match=``, ``assertRaisesRegex``, ``str()`` or ``.args`` of the caught
    exception), an object's address, a value of ``hash()``, ``__hash__`` or ``id()`` (semver db55f27:
    any hash of the compared parts is correct), a float written to full precision (a correct fix that computes
    it another way may differ in the last bits). Set order and hash-dependent output are left to the
    runs themselves (gold passes in several processes, each with its own hash seed). Lines of
    ``copied`` are the original test's own checks, repeated: the suite's, not the candidate's."""
    try:
        tree = parse(code)
    except SyntaxError:
        return []
    lines = code.splitlines()
    theirs = {line.strip() for line in copied.splitlines() if line.strip()}
    found: list[str] = []
    for node in ast.walk(tree):
        lineno = getattr(node, "lineno", 0)
        if 0 < lineno <= len(lines) and lines[lineno - 1].strip() in theirs:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and _significant_digits(node.value) > MAX_FLOAT_DIGITS:
            found.append(f"a float to full precision ({node.value!r})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _ADDRESS.search(node.value):
            found.append("an object's address")
        elif isinstance(node, ast.Call) and _dotted(node.func).rpartition(".")[2] in ("hash", "__hash__", "id"):
            found.append("a hash or identity value")  # per process (hash seeds) and per implementation
        elif isinstance(node, ast.Call):
            name = _dotted(node.func).rpartition(".")[2]
            caught = bool(node.args) and isinstance(node.args[0], ast.Attribute) and node.args[0].attr in ("value", "exception")
            if name in _MESSAGE_ASSERTS or (name in ("raises", "warns") and any(k.arg == "match" for k in node.keywords)) \
                    or (name in ("str", "repr") and caught):  # fmt: skip
                found.append("an exception's message")
        elif isinstance(node, ast.Attribute) and node.attr == "args" and isinstance(node.value, ast.Attribute) and node.value.attr in ("value", "exception"):
            found.append("an exception's message")
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------------------------- parametrize cases


@dataclass(frozen=True)
class Parametrize:
    """A test's one ``parametrize`` decorator, when its argnames and lists are written out literally."""

    argnames: tuple[str, ...]
    values: ast.List | ast.Tuple
    ids: ast.List | ast.Tuple | None
    param: str  # how the file spells ``pytest.param``


def _dotted(node: ast.expr) -> str:
    return ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""


def parametrize_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> Parametrize | None:
    """The test's parametrize decorator; None when it has none, several (a product of cases), indirect
    argnames (fixtures), or argnames, argvalues or ids that are not literal."""
    marks = [d for d in fn.decorator_list if isinstance(d, ast.Call) and _dotted(d.func).endswith("mark.parametrize")]
    if len(marks) != 1:
        return None
    (mark,) = marks
    keywords = {k.arg: k.value for k in mark.keywords}
    args = [*mark.args, *(keywords[k] for k in ("argnames", "argvalues") if k in keywords)]
    if len(args) != 2 or "indirect" in keywords or not isinstance(args[1], (ast.List, ast.Tuple)):
        return None
    names, values = args
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        argnames = tuple(n.strip() for n in names.value.split(",") if n.strip())
    elif isinstance(names, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names.elts):
        argnames = tuple(e.value for e in names.elts)  # type: ignore[attr-defined]
    else:
        return None
    ids = keywords.get("ids")
    if ids is not None and not isinstance(ids, (ast.List, ast.Tuple)):
        ids = None  # a function of the values: the case's own id wins over it
    prefix = _dotted(mark.func).removesuffix("mark.parametrize")
    param = f"{prefix}param" if prefix else "pytest.param" if re.search(r"^import pytest\b", source, re.MULTILINE) else ""
    if not param or not argnames:
        return None
    return Parametrize(argnames, values, ids, param)


def _same_callee(pattern: ast.expr, concrete: ast.expr) -> bool:
    """Two spellings of one callee: ``mi.tail`` and ``more_itertools.tail`` both end in ``tail``."""
    last = [n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None for n in (pattern, concrete)]
    return last[0] is not None and last[0] == last[1]


def unify(pattern: ast.AST, concrete: ast.AST, holes: frozenset[str], bound: dict[str, str]) -> bool:
    """Whether ``concrete`` is ``pattern`` with each hole (a name) filled by one expression, the same
    one wherever the hole occurs; ``bound`` collects each filled hole's source."""
    if isinstance(pattern, ast.Name) and pattern.id in holes:
        text = ast.unparse(concrete)
        return bound.setdefault(pattern.id, text) == text
    if type(pattern) is not type(concrete):
        return False
    if isinstance(pattern, ast.Call) and isinstance(concrete, ast.Call):
        same = _same_callee(pattern.func, concrete.func) or unify(pattern.func, concrete.func, holes, bound)
        if not same or len(pattern.args) != len(concrete.args) or [k.arg for k in pattern.keywords] != [k.arg for k in concrete.keywords]:
            return False
        pairs = [*zip(pattern.args, concrete.args), *((a.value, b.value) for a, b in zip(pattern.keywords, concrete.keywords))]
        return all(unify(a, b, holes, bound) for a, b in pairs)
    for name, value in ast.iter_fields(pattern):
        if name == "ctx":
            continue
        other = getattr(concrete, name, None)
        if isinstance(value, list):
            if not isinstance(other, list) or len(value) != len(other):
                return False
            if not all(unify(a, b, holes, bound) if isinstance(a, ast.AST) else a == b for a, b in zip(value, other)):
                return False
        elif isinstance(value, ast.AST):
            if not isinstance(other, ast.AST) or not unify(value, other, holes, bound):
                return False
        elif value != other:
            return False
    return True


def _compared(fn: ast.AST, node: ast.AST) -> list[ast.expr]:
    """What the test compares ``node`` (or a name assigned from it) with for equality: ``assert node == x``,
    ``self.assertEqual(node, x)``, ``result = node`` then ``assert result == x``."""
    names = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.value is node for t in n.targets if isinstance(t, ast.Name)}

    def same(e: ast.expr) -> bool:
        return e is node or (isinstance(e, ast.Name) and e.id in names)

    found: list[ast.expr] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq):
            pair = [n.left, n.comparators[0]]
        elif isinstance(n, ast.Call) and _dotted(n.func) in ("self.assertEqual", "self.assertEquals") and len(n.args) >= 2:
            pair = n.args[:2]
        else:
            continue
        found += [b for a, b in (pair, pair[::-1]) if same(a)]
    return found


def _equal_literals(a: str, b: str) -> bool:
    try:
        return bool(literal_eval(a) == literal_eval(b))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _raises_holes(fn: ast.AST, node: ast.AST) -> list[ast.expr]:
    """The exception expressions of the ``pytest.raises`` / ``assertRaises`` blocks ``node`` runs in."""
    found = []
    for n in ast.walk(fn):
        if isinstance(n, (ast.With, ast.AsyncWith)) and any(node in ast.walk(s) for s in n.body):
            for item in n.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and call.args and _dotted(call.func).endswith(("raises", "assertRaises")):
                    found.append(call.args[0])
    return found


def case_values(fn: ast.FunctionDef | ast.AsyncFunctionDef, spec: Parametrize, d: DistinguishingInput, module_names: set[str]) -> list[str] | None:
    """The source of each argname's value in a new case of ``fn`` that runs the distinguishing input:
    the test's call with the argnames as holes must match the input's call; the argname the result is
    compared with gets gold's value, and one naming the expected exception gets gold's exception when
    the module (or builtins) binds that name. None when an argname stays unfilled or the input does not fit."""
    try:
        concrete = parse(d.call).body
    except SyntaxError:
        return None
    if len(concrete) != 1 or not isinstance(concrete[0], ast.Expr) or not _imports_only(d.setup):
        return None  # statements before the call would need a place in the test's body (imports: it has its own)
    holes = frozenset(spec.argnames)
    call = as_operator(concrete[0].value)
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        bound: dict[str, str] = {}
        if isinstance(node, ast.Name) or not isinstance(node, ast.expr) or not unify(node, call, holes, bound) or not bound:
            continue  # a bare argname would take the whole call as its value, run at collection
        # the test's own check must state gold's behaviour: a hole takes it, a fixed value must be it
        if d.gold.raised:
            name = d.gold.raised.rpartition(".")[2]
            excs = _raises_holes(fn, node)
            for exc in excs:
                if isinstance(exc, ast.Name) and exc.id in holes and (name in module_names or hasattr(builtins, name)):
                    bound.setdefault(exc.id, name)
            if not any(_dotted(e).rpartition(".")[2] == name or (isinstance(e, ast.Name) and bound.get(e.id) == name) for e in excs):
                continue
        else:
            if _raises_holes(fn, node) or not d.literal or d.gold.value == d.other.value:
                continue  # the test's checks read the value: a difference in print alone escapes them
            checks = _compared(fn, node)
            for other in checks:
                if isinstance(other, ast.Name) and other.id in holes:
                    bound.setdefault(other.id, d.literal)
            if not checks or not all(isinstance(o, ast.Name) and bound.get(o.id) == d.literal or _equal_literals(ast.unparse(o), d.literal)
                                     for o in checks):  # fmt: skip
                continue
        if set(bound) == holes:
            return [bound[n] for n in spec.argnames]
    return None


_DUNDER_OPS = {"__add__": ast.Add, "__sub__": ast.Sub, "__mul__": ast.Mult, "__truediv__": ast.Div, "__floordiv__": ast.FloorDiv,
               "__mod__": ast.Mod, "__pow__": ast.Pow, "__matmul__": ast.MatMult, "__and__": ast.BitAnd, "__or__": ast.BitOr,
               "__xor__": ast.BitXor, "__lshift__": ast.LShift, "__rshift__": ast.RShift}  # fmt: skip


def as_operator(node: ast.expr) -> ast.expr:
    """``Markup.__mod__(x, y)`` (how the engine states a call of an operator) as the test writes it,
    ``x % y``; any other expression as it is."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DUNDER_OPS
            and len(node.args) == 2 and not node.keywords):  # fmt: skip
        return ast.BinOp(left=node.args[0], op=_DUNDER_OPS[node.func.attr](), right=node.args[1])
    return node


def _imports_only(statements: Sequence[str]) -> bool:
    try:
        return all(isinstance(node, (ast.Import, ast.ImportFrom)) for line in statements for node in parse(line).body)
    except SyntaxError:
        return False


def _module_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def case_code(spec: Parametrize, values: Sequence[str], case: str) -> str:
    return f"{spec.param}({', '.join(values)}, id={case!r})"


def _char(lines: list[str], lineno: int, col: int) -> int:
    """The offset in the whole text of an AST position (``col`` counts UTF-8 bytes)."""
    return sum(len(line) for line in lines[: lineno - 1]) + len(lines[lineno - 1].encode()[:col].decode())


def _append_entry(source: str, seq: ast.List | ast.Tuple, entry: str) -> str:
    """``source`` with ``entry`` as the last element of the list ``seq``, in its layout: one entry a
    line where the closing bracket has a line of its own, else after the last entry on its line."""
    lines = source.splitlines(keepends=True)
    end = _char(lines, seq.end_lineno or 1, seq.end_col_offset or 0) - 1  # the closing bracket
    if not seq.elts:
        return source[:end] + entry + ("," if isinstance(seq, ast.Tuple) else "") + source[end:]
    last = seq.elts[-1]
    at = _char(lines, last.end_lineno or 1, last.end_col_offset or 0)
    while source[at] in " \t":  # a tuple entry's position covers its parentheses
        at += 1
    trailing = source[at] == ","
    if (last.end_lineno or 0) == (seq.end_lineno or 0):
        return source[:at] + f", {entry}" + source[at:]
    first = lines[last.lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    if trailing:
        return source[: at + 1] + f"\n{indent}{entry}," + source[at + 1 :]
    return source[:at] + f",\n{indent}{entry}" + source[at:]


def add_case(source: str, parts: Sequence[str], code: str, case: str) -> str:
    """``source`` with ``code`` appended to the parametrize list of the test ``parts`` names (and
    ``case`` to its literal ids list, which pytest wants as long as the cases)."""
    tree = parse(source)
    fn = find_def(tree, parts)
    spec = parametrize_of(fn, source) if fn is not None else None
    if spec is None:
        raise ValueError(f"{'::'.join(parts)} has no literal parametrize list")
    if spec.ids is None:
        return _append_entry(source, spec.values, code)
    # the later list first, so the earlier one's positions still hold
    first, second = sorted([(spec.values, code), (spec.ids, repr(case))], key=lambda p: (p[0].lineno, p[0].col_offset))
    return _append_entry(_append_entry(source, second[0], second[1]), first[0], first[1])


def insert_test(source: str, code: str, cls: str | None) -> str:
    """``source`` with the test function added at the end of the module, or of class ``cls``."""
    if cls is None:
        return source.rstrip("\n") + "\n\n\n" + code
    lines = source.splitlines(keepends=True)
    node = next(n for n in parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls)
    indent = " " * node.body[0].col_offset
    end = node.end_lineno or len(lines)
    block = "\n" + textwrap.indent(code, indent)
    if end and not lines[end - 1].endswith("\n"):
        block = "\n" + block
    return "".join(lines[:end]) + block + "".join(lines[end:])


def place(source: str, cand: Candidate) -> str:
    """``source`` with the candidate in it: a new case of its test, or a new function."""
    if cand.case:
        return add_case(source, [*([cand.cls] if cand.cls else []), cand.name], cand.code, cand.case)
    return insert_test(source, cand.code, cand.cls)


# ---------------------------------------------------------------------------------- candidates


def _fixtures(fn: ast.FunctionDef | ast.AsyncFunctionDef, statements: Sequence[str], skip: Sequence[str]) -> list[str]:
    """The original test's fixtures (its parameters but ``self`` and parametrize argnames) that
    ``statements`` use, in the test's order."""
    try:
        used = {n.id for n in ast.walk(parse("\n".join(statements))) if isinstance(n, ast.Name)}
    except SyntaxError:
        return []
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    return [p for p in params if p != "self" and p not in skip and p in used]


def _usefixtures(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [ast.unparse(d) for d in fn.decorator_list if isinstance(d, ast.Call) and _dotted(d.func).endswith("mark.usefixtures")]


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
    decorators = _usefixtures(fn) if fn is not None else []

    def code(name: str) -> str:
        return function_code(name, body, method=cls is not None, why=why, fixtures=fixtures, decorators=decorators)

    name = f"test_strengthened_{content_hash(code('test_x'))[:8]}"
    return Candidate(file=file, cls=cls, name=name, code=code(name), source="model_free", probe_id=probe.probe_id, found_by=found_by,
                     copied=own)  # fmt: skip


# ---------------------------------------------------------------------------------- the neighbourhood


_WRAPPERS = ("list", "tuple", "sorted", "set", "dict", "str")


def _calls(src: str) -> tuple[ast.Call, ast.Call] | None:
    """(the whole call, the call under test) of an input's expression: the one inside ``list(...)`` or
    ``str(...)`` where the input wraps it, else the same call twice; None for anything but a call."""
    try:
        body = parse(src).body
    except (SyntaxError, ValueError):
        return None
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return None
    outer = body[0].value
    inner = outer.args[0] if len(outer.args) == 1 and not outer.keywords and isinstance(outer.args[0], ast.Call) else None
    return outer, inner if inner is not None and _dotted(outer.func) in _WRAPPERS else outer


def neighbour_calls(d: DistinguishingInput, limit: int = MAX_NEIGHBOURS, endings: Sequence[str] = (),
                    only: Collection[str] = ()) -> list[tuple[str, str]]:  # fmt: skip
    """(how, call) for variations of the distinguishing input's call that each change one literal
    argument of the call under test (inside ``list(...)`` or ``str(...)``, kept around it) to a
    close value: a boundary number, an empty or one-element container, a string one shorter or with a
    longer run of digits, its ending replaced by a short literal of the code gold changed
    (``endings``; ``probes.observe.alternatives`` but ``FAR_VARIATIONS``), then None and another plain
    type (``other_types``), round-robin over the arguments (``only`` these slots, where given) so each
    gets its closest first. A string that differs only in the case of its letters is no neighbour: a
    mixed case the tests never use is gold's accident (boltons 1e61524's correct alternative lowercases
    ``'BOSs'``, gold returns it as it is). A wrong fix unlike the survivor (a guard off by one
    elsewhere, a special case of the same input) tends to differ from gold next to where the survivor
    does."""
    found = _calls(d.call)
    if found is None:
        return []
    call = found[1]
    slots = [(str(i), a) for i, a in enumerate(call.args)] + [(k.arg, k.value) for k in call.keywords if k.arg]
    values = {slot: v for slot, node in slots if (v := _literal_source(ast.unparse(node))) is not _NOT_LITERAL}
    lines = d.call.splitlines(keepends=True)
    sites: list[list[tuple[str, str]]] = []
    for slot, node in slots:
        if slot not in values or (only and slot not in only):
            continue
        start = _char(lines, node.lineno, node.col_offset)
        end = _char(lines, node.end_lineno or node.lineno, node.end_col_offset or 0)
        seen = [v for s, v in values.items() if s != slot]
        tries = []
        value = values[slot]
        for new, how in [*alternatives(value, seen, False, endings), *other_types(value)]:
            text = repr(new)
            if isinstance(new, str) and isinstance(value, str) and new.lower() == value.lower():
                continue
            if how not in FAR_VARIATIONS and _literal_source(text) is not _NOT_LITERAL:
                tries.append((f"{d.call} with {slot_name(slot)} {d.call[start:end]} -> {text} ({how})", d.call[:start] + text + d.call[end:]))
        sites.append(tries)
    out: dict[str, str] = {}
    while any(sites) and len(out) < limit:
        for tries in sites:
            if tries and len(out) < limit:
                how, src = tries.pop(0)
                if src != d.call:
                    out.setdefault(src, how)
        sites = [t for t in sites if t]
    return [(how, src) for src, how in out.items()]


_NOT_LITERAL = object()


def other_types(value: object) -> list[tuple[object, str]]:
    """None and a value of another plain type in place of ``value``: a fix that handles only the types
    the tests pass (``Markup('<em></em>') % 42`` raises, ``% None`` stays silent) differs there. Gold's
    answer on a type the tests never pass counts only where the issue states it: an exception the
    issue names (``pick_neighbours``); what gold happens to return for ``sub(None)`` or raise for
    ``chunked('ABC', '')`` is no contract, and correct fixes differ there (boltons 435774e, more-itertools
    0e6acdf: their alternatives failed such neighbours)."""
    out: list[tuple[object, str]] = [] if value is None else [(None, OTHER_TYPES[0])]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [*out, ("", OTHER_TYPES[1])]
    return [*out, (0, OTHER_TYPES[2])]


OTHER_TYPES = ("None in its place", "a string in its place", "a number in its place")


def _literal_source(src: str) -> object:
    try:
        return literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _program(key: str, d: DistinguishingInput, call: str, how: str, sources: dict[str, str]) -> Program:
    """A standalone call in the namespace of the test the input came from (its module, its class with
    setUp run), after the input's imports: the names the input's call uses are bound as in that test."""
    file, parts = split_test_id(d.test_id)
    in_test = file in sources
    return Program(key=key, test_id=d.test_id, test_file=file if in_test else "", cls=parts[-2] if in_test and len(parts) > 1 else None,
                   method=parts[-1] if in_test else "", steps=[*(Step("exec", line) for line in d.setup), Step("observe", call, True)],
                   how=how)  # fmt: skip


def pick_neighbours(d: DistinguishingInput, gold: Sequence[dict | None], others: Sequence[dict | None], survivors: int,
                    expected: set[str], how: str, call: str, named: Collection[str] = ()) -> tuple[int, DistinguishingInput] | None:  # fmt: skip
    """The neighbour ``call`` as an input to assert, with its rank (0: a survivor behaves otherwise, 1:
    only the buggy tree does), or None: gold answered it differently in its two replays (time,
    randomness; hash order shows in ``gold_stable``, whose pytest runs each draw a hash seed), outside
    the contract (an exception type no test or the issue expects, a value without an evaluable repr,
    a full-precision float; for an argument of another type, anything but an exception the issue
    names, ``named``), or every other tree behaves alike (``others``: buggy first, then the survivors;
    the last ``survivors`` of them)."""
    if any(g is None for g in gold):
        return None
    first = behaviour(gold[0])
    if any(behaviour(g) != first for g in gold[1:]) or not in_contract(first, expected):
        return None
    if how.endswith(tuple(f"({h})" for h in OTHER_TYPES)) and (not first.raised or first.raised.rpartition(".")[2] not in named):
        return None
    literal = (gold[0] or {}).get("literal", "") or ""
    differs = [i for i, o in enumerate(others)
               if o is not None and (behaviour(o).value, behaviour(o).raised) != (first.value, first.raised) and behaviour(o).raised != "timeout"]
    if not differs:
        return None
    rank = 0 if any(i >= len(others) - survivors for i in differs) else 1
    other = behaviour(others[differs[-1] if rank == 0 else differs[0]])
    v = d.model_copy(update={"call": call, "how": how, "gold": first, "other": other, "literal": literal, "source": "variant"})
    statements = model_free_body(v, unittest=False, pytest_imported=True)
    if statements is None or implementation_details("\n".join(statements)):
        return None
    return rank, v


def _replay(ctx: Context, tree: Path, patch: str, progs: Sequence[Program]) -> dict[str, dict | None]:
    """What each standalone call did on the buggy tree with ``patch``, by key (None: not reached)."""
    paths = ["src"] if (tree / "src").is_dir() else []
    got = run_programs(ctx.task, ctx.backend, patch, progs, [], paths=paths, timeout_s=NEIGHBOUR_TIMEOUT_S, program_timeout_s=1.0)
    return {p.key: next((o for o in got.results.get(p.key, []) if o.get("step") == len(p.steps) - 1), None) for p in progs}


def unstated(d: DistinguishingInput) -> bool:
    """Whether gold's value on the input cannot be written as a check: it returned an object whose
    repr does not evaluate (``datetime(..., tzinfo=<iso8601.iso8601.Utc object>)``)."""
    return not d.gold.raised and not d.call_is_statement and model_free_body(d, unittest=False, pytest_imported=True) is None


def restate_as_text(ctx: Context, tree: Path) -> dict[str, DistinguishingInput]:
    """For each survivor whose input is ``unstated``, by probe id: the input compared as ``str(call)``
    (a datetime's text is its ISO form), where gold's text is the same in two replays and the
    survivor's is not, so a check on the text still tells them apart."""
    inputs = [(p, d) for p in ctx.survivors if (d := p.distinguishing) is not None and unstated(d)]
    progs = [_program(f"s{i}", d, f"str({d.call})", d.how, ctx.sources) for i, (_, d) in enumerate(inputs)]
    if not progs:
        return {}
    gold = [_replay(ctx, tree, ctx.task.answer.gold_patch, progs), _replay(ctx, tree, ctx.task.answer.gold_patch, progs)]
    out = {}
    for (probe, d), prog in zip(inputs, progs, strict=True):
        g, again = gold[0][prog.key], gold[1][prog.key]
        o = _replay(ctx, tree, probe.patch, [prog])[prog.key]
        if g is None or o is None or not g.get("literal") or behaviour(g) != behaviour(again) or behaviour(o) == behaviour(g):
            continue
        out[probe.probe_id] = d.model_copy(update={"call": prog.steps[-1].src, "gold": behaviour(g), "other": behaviour(o), "literal": g["literal"],
                                                   "how": f"{d.how}; compared as text (its repr does not evaluate)"})  # fmt: skip
    return out


def seed_calls(d: DistinguishingInput, sources: dict[str, str], tests: Sequence[str], limit: int = MAX_SEEDS) -> list[str]:
    """The calls of the input's function with literal arguments that its own test and the
    FAIL_TO_PASS tests make (``pluralize('box')``, ``parse.parse('Pi = {:+.7f}', ...)``), written as
    the input writes its call: its callee (bound by its setup), inside its ``list(...)`` or
    ``str(...)``. These are the cases the issue's tests state; their neighbours on which gold and the
    buggy tree differ are the class of behaviour gold changes, where a fix that special-cases the
    tests' cases (boltons 8c3fc28's shortcut adds only the endings -ox, -ax, -ix) fails though the
    survivor's input (``pluralize('bch')``) lies elsewhere. A method of a built object is left out:
    the tests' receiver is another object."""
    found = _calls(d.call)
    if found is None or not all(isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(found[1].func)):
        return []
    outer, call = found
    out: list[str] = []
    for test_id in dict.fromkeys([d.test_id, *tests]):
        file, parts = split_test_id(test_id)
        try:
            fn = find_def(parse(sources.get(file, "")), parts)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(fn) if fn is not None else ():
            if not isinstance(node, ast.Call) or not _same_callee(call.func, node.func):
                continue
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue
            if any(_literal_source(ast.unparse(a)) is _NOT_LITERAL for a in [*node.args, *(k.value for k in node.keywords)]):
                continue
            src = ast.unparse(ast.Call(func=call.func, args=node.args, keywords=node.keywords))
            src = f"{ast.unparse(outer.func)}({src})" if outer is not call else src
            if src != d.call and src not in out:
                out.append(src)
    return out[:limit]


def varied_slots(seeds: Sequence[str]) -> set[str]:
    """The arguments (positions as strings, keyword names) whose value differs between the tests'
    cases: what the issue's cases are about (parse 0477aa5's four formats, one text), the rest the
    backdrop every case shares."""
    seen: dict[str, set[str]] = {}
    for seed in seeds:
        found = _calls(seed)
        if found is None:
            continue
        call = found[1]
        for slot, node in [*((str(i), a) for i, a in enumerate(call.args)), *((k.arg, k.value) for k in call.keywords if k.arg)]:
            seen.setdefault(slot, set()).add(ast.unparse(node))
    return {slot for slot, values in seen.items() if len(values) > 1}


def _kind(how: str) -> str:
    """The kind of variation a neighbour's ``how`` ends with (``a separator left out``)."""
    return how.rpartition("(")[2].rstrip(")")


def spread(found: Sequence[DistinguishingInput], keep: int) -> list[DistinguishingInput]:
    """Up to ``keep`` of ``found`` (in the order found), each kind of variation before a second of a
    kind: parse 0477aa5's shortcut fails only where a separator is left out (``{:+7f}``), one of many
    neighbours of the tests' cases on which gold fixes the buggy tree."""
    kinds: dict[str, list[DistinguishingInput]] = {}
    for v in found:
        kinds.setdefault(_kind(v.how), []).append(v)
    out: list[DistinguishingInput] = []
    queues = list(kinds.values())
    while queues and len(out) < keep:
        out += [q.pop(0) for q in queues][: keep - len(out)]
        queues = [q for q in queues if q]
    return out


@dataclass
class Neighbourhood:
    """What an input's test asserts beside it: its own neighbours, and neighbours of the tests' own
    cases of its function (``seed_calls``) on which gold fixes the buggy tree."""

    own: list[DistinguishingInput] = field(default_factory=list)
    cases: list[DistinguishingInput] = field(default_factory=list)


def observe_neighbours(ctx: Context, tree: Path, endings: Sequence[str] = ()) -> dict[str, Neighbourhood]:
    """For each confirmed survivor (by probe id): up to ``KEEP_NEIGHBOURS`` variations of its
    distinguishing input (``neighbour_calls``) on which gold behaves the same in two replays and in
    contract while the buggy tree or some survivor behaves otherwise, those a survivor fails first;
    and up to ``KEEP_SEED_NEIGHBOURS`` variations of the tests' own calls of its function
    (``seed_calls``) on which gold behaves so and the buggy tree otherwise (``spread`` over the kinds
    of variation). Every variation runs as a standalone call on each tree (gold twice, buggy, every
    survivor), one sandbox per tree."""
    progs: list[Program] = []
    owners: list[tuple[list[tuple[str, DistinguishingInput]], str, str, bool]] = []  # (probe id, input)s, how, call, a case's
    at: dict[tuple[str, tuple[str, ...], str], int] = {}
    for probe in ctx.survivors:
        d = probe.distinguishing
        if d is None:
            continue
        tried = [(how, call, False) for how, call in neighbour_calls(d, endings=endings)]
        seeds = seed_calls(d, ctx.sources, ctx.p1.fail_to_pass)
        varied = varied_slots(seeds)  # the argument the cases vary is where their class lies
        for seed in seeds:
            tried += [(how, call, True) for how, call in neighbour_calls(d.model_copy(update={"call": seed}), SEED_NEIGHBOURS, endings, varied)]
        for how, call, case in tried:
            key = (d.test_id, tuple(d.setup), call)
            if key in at:  # a neighbour of the input and of a case, or of two survivors' inputs: one replay serves all
                if probe.probe_id not in (pid for pid, _ in owners[at[key]][0]):
                    owners[at[key]][0].append((probe.probe_id, d))
                continue
            at[key] = len(progs)
            progs.append(_program(f"n{len(progs)}", d, call, how, ctx.sources))
            owners.append(([(probe.probe_id, d)], how, call, case))
    if not progs:
        return {}
    gold_patch = ctx.task.answer.gold_patch
    golds = [_replay(ctx, tree, gold_patch, progs), _replay(ctx, tree, gold_patch, progs)]
    others = [_replay(ctx, tree, "", progs), *(_replay(ctx, tree, p.patch, progs) for p in ctx.survivors)]
    expected = expected_exceptions(ctx.sources.values(), ctx.task.problem_statement)
    named = expected_exceptions((), ctx.task.problem_statement)
    ranked: dict[str, list[tuple[int, int, DistinguishingInput]]] = {}
    cases: dict[str, list[DistinguishingInput]] = {}
    for i, (prog, (inputs, how, call, case)) in enumerate(zip(progs, owners, strict=True)):
        gold, other = [g[prog.key] for g in golds], [o[prog.key] for o in others]
        for probe_id, d in inputs:
            # a case's neighbour must be one gold fixes: the buggy tree (first of ``other``) differs
            picked = pick_neighbours(d, gold, other[:1] if case else other, 0 if case else len(ctx.survivors), expected, how, call, named)
            if picked is None:
                continue
            if case:
                cases.setdefault(probe_id, []).append(picked[1])
            else:
                ranked.setdefault(probe_id, []).append((picked[0], i, picked[1]))
    return {pid: Neighbourhood([v for _, _, v in sorted(ranked.get(pid, []), key=lambda r: r[:2])[:KEEP_NEIGHBOURS]],
                               spread(cases.get(pid, []), KEEP_SEED_NEIGHBOURS))
            for pid in {*ranked, *cases}}  # fmt: skip


# ============================================================================================ validating


@dataclass
class Context:
    """Everything validation needs for one task, gathered once."""

    task: Task
    p1: Pipeline1Result
    backend: Backend
    survivors: list[ProbeResult]
    alternatives: list[ProbeResult]  # behaviour-preserving rewrites of gold that passed the original suite
    sources: dict[str, str]  # hidden test files as they run
    existing: str  # buggy text of the files gold touches (the leak check's baseline)
    gold_runs: int = GOLD_RUNS
    log_dir: Path | None = None
    executions: int = 0

    def with_tests(self, extra: dict[str, str], expected: dict[str, str]) -> Task:
        """The task with these test files' texts written after the hidden tests patch, and gold's pattern."""
        hidden = self.task.answer.hidden_tests
        answer = self.task.answer.model_copy(update={
            "hidden_tests": HiddenTests(patch=hidden.patch, files={**hidden.files, **extra}),
            "expected_status": {k: Status(v) for k, v in expected.items()},
        })  # fmt: skip
        return self.task.model_copy(update={"answer": answer})

    def grade(self, task: Task, patch: str, expected: dict[str, str], select: Sequence[str] | None) -> Grade:
        g = grade(task, patch, self.backend, expected={k: Status(v) for k, v in expected.items()}, select=select,
                  log_dir=self.log_dir)  # fmt: skip
        self.executions += len(g.statuses)
        return g


def validate(ctx: Context, cand: Candidate) -> AddedTest:
    """Every validation step of one candidate, in order, stopping at the first that fails."""
    record = AddedTest(file=cand.file, test_id=cand.test_id, source=cand.source, found_by=cand.found_by,  # type: ignore[arg-type]
                       code=cand.code, issue_quote=" / ".join(cand.cites))  # fmt: skip
    if cand.source == "judge" and (problem := citation_problem(cand.cites, ctx.task.problem_statement)):
        record.relevance = "rejected"
        return _reject(record, ValidationCheck(step="relevance", passed=False, detail=problem))
    base = ctx.sources.get(cand.file)  # each candidate alone on the original suite
    if base is None:
        return _reject(record, ValidationCheck(step="leak", passed=False, detail=f"no hidden test file {cand.file}"))
    try:
        text = place(base, cand)
        parse(text)
    except (SyntaxError, StopIteration, ValueError) as err:
        return _reject(record, ValidationCheck(step="leak", passed=False, detail=f"the test does not fit the file: {err}"))
    leaks = added_test_leaks(cand.code, issue=ctx.task.problem_statement, gold_patch=ctx.task.answer.gold_patch, existing=ctx.existing)
    record.checks.append(ValidationCheck(step="leak", passed=not leaks, detail="; ".join(leaks) or "no gold-only name or line"))
    if leaks:
        return _reject(record)
    details = implementation_details(cand.code, cand.copied)
    record.checks.append(ValidationCheck(step="contract", passed=not details, detail=(
        f"it pins {', '.join(details)}, which another correct fix may not share" if details
        else "no exception message, object address, hash value or full-precision float")))  # fmt: skip
    if details:
        return _reject(record)
    tid = cand.test_id
    alone = {tid: "PASSED"}
    task = ctx.with_tests({cand.file: text}, {**ctx.p1.expected_status, tid: "PASSED"})
    steps: list[tuple[str, Callable[[], ValidationCheck]]] = [
        ("gold_stable", lambda: _gold_stable(ctx, task, alone, tid)),
        ("fails_on_buggy", lambda: _fails_on_buggy(ctx, task, alone, tid)),
        ("kills_survivor", lambda: _kills(ctx, task, alone, tid, record)),
        ("invariant", lambda: _invariant(ctx, task, alone, tid)),
        ("pass_to_pass", lambda: _pass_to_pass(ctx, task)),
    ]
    for _, run in steps:
        check = run()
        record.checks.append(check)
        if not check.passed:
            return _reject(record)
    record.checks.append(_relevance(ctx, cand, record))
    if not record.checks[-1].passed:
        return _reject(record)
    return record


def _reject(record: AddedTest, check: ValidationCheck | None = None) -> AddedTest:
    if check is not None:
        record.checks.append(check)
    record.rejected_at = record.checks[-1].step
    return record


def _gold_stable(ctx: Context, task: Task, alone: dict[str, str], tid: str) -> ValidationCheck:
    rewards, seen = [], []
    for _ in range(ctx.gold_runs):
        g = ctx.grade(task, task.answer.gold_patch, alone, [tid])
        rewards.append(g.reward)
        seen.append(str(g.statuses.get(tid, g.reason)))
    ok = all(r == 1.0 for r in rewards)
    detail = f"{ctx.gold_runs} gold runs: {', '.join(seen)}"
    return ValidationCheck(step="gold_stable", passed=ok, detail=detail + ("" if ok else " (flaky or failing on gold)"),
                           rewards=rewards, executions=len(rewards))  # fmt: skip


def _fails_on_buggy(ctx: Context, task: Task, alone: dict[str, str], tid: str) -> ValidationCheck:
    g = ctx.grade(task, "", alone, [tid])
    status = g.statuses.get(tid)
    ok = status in (Status.FAILED, Status.ERROR)
    return ValidationCheck(step="fails_on_buggy", passed=ok, detail=f"on the buggy tree: {status or g.reason}",
                           rewards=[g.reward], executions=1)  # fmt: skip


def _kills(ctx: Context, task: Task, alone: dict[str, str], tid: str, record: AddedTest) -> ValidationCheck:
    rewards = []
    for probe in ctx.survivors:
        g = ctx.grade(task, probe.patch, alone, [tid])
        rewards.append(g.reward)
        if g.reward == 0.0 and g.reason in RAN:
            record.kills.append(probe.probe_id)
    ok = bool(record.kills)
    return ValidationCheck(step="kills_survivor", passed=ok, rewards=rewards, executions=len(rewards),
                           detail=f"fails on {len(record.kills)} of {len(ctx.survivors)} survivors")  # fmt: skip


def _invariant(ctx: Context, task: Task, alone: dict[str, str], tid: str) -> ValidationCheck:
    rewards, broken = [], []
    for probe in ctx.alternatives:
        g = ctx.grade(task, probe.patch, alone, [tid])
        rewards.append(g.reward)
        if g.reward != 1.0:
            broken.append(f"{probe.operator} ({probe.probe_id})")
    detail = f"fails on behaviour-preserving rewrites of gold: {', '.join(broken)}" if broken else f"passes on {len(rewards)} rewrites of gold"
    return ValidationCheck(step="invariant", passed=not broken, detail=detail, rewards=rewards, executions=len(rewards))


def _pass_to_pass(ctx: Context, task: Task) -> ValidationCheck:
    assert task.answer.expected_status is not None
    g = ctx.grade(task, task.answer.gold_patch, {k: str(v) for k, v in task.answer.expected_status.items()}, None)
    changed = {k: v for k, v in g.differing.items()}
    detail = "every other test keeps gold's status" if g.reward == 1.0 else f"{g.reason}: {dict(list(changed.items())[:5])}"
    return ValidationCheck(step="pass_to_pass", passed=g.reward == 1.0, detail=detail, rewards=[g.reward], executions=1)


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def citation_problem(cites: Sequence[str], issue: str) -> str:
    """Why ``cites`` do not ground an assertion in the issue ("" when they do): none given, or one that
    is not a sentence (at least a dozen characters) of the issue text."""
    if not cites:
        return "cites no sentence of the issue: every assertion must follow from a sentence of the issue"
    missing = [c for c in cites if len(_squash(c)) < 12 or _squash(c) not in _squash(issue)]
    return f"not sentences of the issue: {'; '.join(repr(c[:120]) for c in missing)}" if missing else ""


def _relevance(ctx: Context, cand: Candidate, record: AddedTest) -> ValidationCheck:
    if cand.source == "model_free":
        record.relevance = "unreviewed"
        return ValidationCheck(step="relevance", passed=True, detail="model-free: unreviewed until the judge accepts it")
    record.relevance = "accepted"
    return ValidationCheck(step="relevance", passed=True, detail="cites the issue: " + record.issue_quote[:200])


def review(record: AddedTest, relevant: bool, cites: Sequence[str], reason: str = "") -> AddedTest:
    """The judge's relevance review of a kept model-free test: accepted with the issue sentences that
    ask for the asserted behaviour (checked by the caller), or rejected: a test pinning behaviour the
    issue does not ask for would make the suite over-restrictive, so it leaves the suite, recorded."""
    quote = " / ".join(cites)
    detail = f"the judge accepts it: {quote[:200]}" if relevant else f"the judge finds the issue does not ask for it: {reason[:200]}"
    checks = [c for c in record.checks if c.step != "relevance"] + [ValidationCheck(step="relevance", passed=relevant, detail=detail)]
    return record.model_copy(update={
        "relevance": "accepted" if relevant else "rejected", "issue_quote": quote, "checks": checks,
        "rejected_at": record.rejected_at or ("" if relevant else "relevance"),
    })  # fmt: skip


@dataclass
class Workbench:
    """One task's candidate tests as strengthening goes, each validated record beside the candidate it
    came from; the judge proposes and reviews through it (``judge.tools.StrengthenTools``)."""

    ctx: Context
    tests: list[AddedTest] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)

    def consider(self, cand: Candidate) -> AddedTest:
        record = validate(self.ctx, cand)
        self.tests.append(record)
        self.candidates.append(cand)
        return record

    def killed(self) -> set[str]:
        return {k for t in self.tests if not t.rejected_at for k in t.kills}

    def review(self, test_id: str, relevant: bool, cites: Sequence[str], reason: str = "") -> AddedTest | str:
        """Record the judge's review of a kept model-free test; a problem (no such test, a relevant one
        without a sentence of the issue) comes back as text and changes nothing."""
        at = next((i for i, t in enumerate(self.tests) if t.test_id == test_id and t.source == "model_free" and not t.rejected_at), None)
        if at is None:
            return f"no kept model-free test {test_id!r} to review"
        if relevant and (problem := citation_problem(cites, self.ctx.task.problem_statement)):
            return problem
        self.tests[at] = review(self.tests[at], relevant, cites, reason)
        return self.tests[at]


# ============================================================================================ the stage


def _add_input(bench: Workbench, probe: ProbeResult, sources: dict[str, str], anchor: str, near: Neighbourhood,
               seen: set[str]) -> bool:  # fmt: skip
    """Try the survivor's input as a test in the file's own style until one is kept (True): a new case
    of the parametrized test it came from (kept: its neighbours follow in a function beside it), else a
    function of its own with its neighbours, else that function after the original test's checks
    where the buggy tree passes the input; where neighbours were in a rejected function (gold unstable
    on one, a rewrite of gold fails one, another test changes), the same forms again with the input's
    own neighbours only (``near.cases`` left out), then without any."""

    def attempt(form: Form, with_extra: Sequence[DistinguishingInput]) -> str | None:
        cand = model_free_candidate(probe, sources, form=form, anchor=anchor, extra=with_extra)
        if cand is None or cand.code in seen:
            return None
        seen.add(cand.code)
        return bench.consider(cand).rejected_at

    wider = [w for w in ([*near.own, *near.cases], near.own) if w]
    wider = wider[:1] if len(wider) == 2 and wider[0] == wider[1] else wider
    last = attempt("case", ())
    if last == "":
        for with_extra in wider:
            last = attempt("function", with_extra)
            if last == "fails_on_buggy":
                last = attempt("anchored", with_extra)
            if last == "":
                break
        return True
    buggy_passes = last == "fails_on_buggy"  # the same call and check: buggy passes it as a function too
    for with_extra in [*wider, []]:
        if with_extra or not buggy_passes:  # a neighbour may fail on buggy where the input alone does not
            last = attempt("function", with_extra)
            if last == "":
                return True
            buggy_passes = buggy_passes or last == "fails_on_buggy"
        if buggy_passes and attempt("anchored", with_extra) == "":
            return True
    return False


def tests_patch(task: Task, tree: Path, files: dict[str, str]) -> HiddenTests:
    """The hidden tests with ``files`` (test path -> final text) folded in: one patch against the buggy
    tree for the paths the original patch owns or adds, the original ``files`` updated in place."""
    hidden = task.answer.hidden_tests
    in_files = {p: t for p, t in files.items() if p in hidden.files}
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-strengthen-"))
    try:
        root = tmp / "repo"
        git(["clone", "-q", str(tree), str(root)], tmp)
        if not apply_trusted(hidden.patch, root):
            raise RuntimeError("the hidden tests do not apply to the buggy tree")
        for path, text in files.items():
            if path not in in_files:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
        git(["add", "-A", "--force"], root)
        patch = git(["diff", "--cached", "--no-renames", "--no-color", "HEAD"], root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return HiddenTests(patch=patch, files={**hidden.files, **in_files})


def gold_literals(task: Task, tree: Path) -> list[str]:
    """The short string literals of the functions gold changed (``'sx'``, ``'ch'``, ``'sh'`` in boltons'
    pluralize), tried as a string's ending, as the observation engine does."""
    with workspace(task, tree) as ws:
        if ws is None:
            return []
        return [e for path in ws.paths for e in changed_literals(path, ws.old.get(path), ws.new.get(path))][:MAX_ENDINGS]


def anchor_for(probe: ProbeResult, fail_to_pass: Sequence[str]) -> str:
    """The FAIL_TO_PASS test an anchored test repeats: the one the input came from, else one in its
    file, else the first."""
    origin = probe.distinguishing.test_id if probe.distinguishing else ""
    if origin in fail_to_pass or not fail_to_pass:
        return origin
    return next((t for t in fail_to_pass if t.partition("::")[0] == origin.partition("::")[0]), fail_to_pass[0])


def confirmed_survivors(probes: Sequence[ProbeResult]) -> list[ProbeResult]:
    return [p for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0 and p.distinguishing is not None]


def strengthen(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    stamp: dict[str, str],
    tree: Path,
    *,
    judge: Callable[[Workbench], str] | None = None,
    gold_runs: int = GOLD_RUNS,
    log_dir: Path | None = None,
) -> Strengthening:
    """Strengthen one task's hidden tests (see the module docstring). ``judge`` runs the judge's
    session over the workbench once the model-free tests are validated (it proposes tests and reviews
    the model-free ones) and says how the session ended."""
    started = time.monotonic()
    survivors = confirmed_survivors(probes)
    alternatives = [p for p in probes if p.kind == "correct_alternative" and p.reward == 1.0]
    # the inputs' own tests too: an observed call may come from a test that passed on both trees
    origins = [p.distinguishing.test_id for p in survivors if p.distinguishing]
    files = list(dict.fromkeys([t.partition("::")[0] for t in [*p1.fail_to_pass, *origins]]))
    sources = test_sources(task, tree, files)
    existing = "\n".join(text for path in touched_files(task.answer.gold_patch) if (text := read_text(tree / path)) is not None)
    ctx = Context(task, p1, backend, survivors, alternatives, sources, existing, gold_runs=gold_runs, log_dir=log_dir)

    ended = ""  # how the judge's session ended

    def done(status: str, reason: str, tests: list[AddedTest], **extra: object) -> Strengthening:
        return Strengthening(**stamp, status=status, reason=reason, survivors=[p.probe_id for p in survivors],  # type: ignore[arg-type]
                             tests=tests, executions=ctx.executions, duration_s=round(time.monotonic() - started, 2),
                             judge_session=ended, **extra)  # fmt: skip

    if not survivors:
        return done("not_repaired", "no confirmed survivor: no wrong patch the engine told apart from gold passes the tests", [], killed=[])
    bench = Workbench(ctx)
    texts = restate_as_text(ctx, tree)
    ctx.survivors = survivors = [p.model_copy(update={"distinguishing": texts[p.probe_id]}) if p.probe_id in texts else p for p in survivors]
    neighbours = observe_neighbours(ctx, tree, gold_literals(task, tree))
    seen: set[str] = set()
    asserted: set[str] = set()
    for probe in survivors:
        call = probe.distinguishing.call if probe.distinguishing else ""
        # a test per distinct input, not one per task: a test that already kills this survivor on
        # another input leaves the neighbourhood of this one open to other wrong fixes
        if call not in asserted and _add_input(bench, probe, sources, anchor_for(probe, p1.fail_to_pass), neighbours.get(probe.probe_id, Neighbourhood()), seen):
            asserted.add(call)
    ended = judge(bench) if judge is not None else ""
    session = f"; judge: {ended}" if judge is not None else ""
    tests = bench.tests
    kept = [(t, c) for t, c in zip(tests, bench.candidates, strict=True) if not t.rejected_at]
    if not kept:
        steps = sorted({t.rejected_at for t in tests})
        return done("not_repaired", f"no candidate test passed validation (rejected at: {', '.join(steps) or 'none written'}){session}", tests, killed=[])
    added: dict[str, str] = {}
    for _, cand in kept:
        added[cand.file] = place(added.get(cand.file, sources[cand.file]), cand)
    new_ids = [t.test_id for t, _ in kept]
    expected = {**p1.expected_status, **dict.fromkeys(new_ids, "PASSED")}
    final = ctx.with_tests(added, expected)
    g = ctx.grade(final, task.answer.gold_patch, expected, None)
    if g.reward != 1.0:
        return done("not_repaired", f"gold does not reproduce its pattern with the added tests: {g.reason} {dict(list(g.differing.items())[:3])}", tests, killed=[])
    final_killed = [p.probe_id for p in survivors if ctx.grade(final, p.patch, expected, None).reward == 0.0]
    hidden = tests_patch(task, tree, added)
    status = "repaired" if len(final_killed) == len(survivors) else "partially_repaired" if final_killed else "not_repaired"
    reason = {
        "repaired": f"{len(kept)} added test(s) reject every confirmed survivor ({len(survivors)})",
        "partially_repaired": f"{len(final_killed)} of {len(survivors)} confirmed survivors rejected; the others behave like gold on every input the kept tests try",
        "not_repaired": "the kept tests reject no survivor in a full grade",
    }[status]
    unreviewed = sum(t.relevance == "unreviewed" for t, _ in kept)
    if unreviewed:
        reason += f"; {unreviewed} model-free test(s) unreviewed (relevance not confirmed by a judge)"
    reason += session
    return done(status, reason, tests, killed=final_killed, tests_patch=hidden.patch, hidden_files=hidden.files,
                expected_status=expected, fail_to_pass=[*p1.fail_to_pass, *new_ids])  # fmt: skip


# ============================================================================================ the run stage


def result_path(out: Path, instance_id: str) -> Path:
    return under(out / "strengthen", instance_id)


def eligible(verdict: VerdictRecord | None, probes: Sequence[ProbeResult], every: bool) -> bool:
    """A task is strengthened when the judge called it too loose; with ``every`` also when it has a
    confirmed survivor whatever its verdict (accepted tasks, or tasks no judge saw)."""
    if verdict is not None and verdict.verdict == "too_loose":
        return True
    return every and bool(confirmed_survivors(probes))


def finished(out: Path, task: Task, config_hash: str) -> bool:
    path = result_path(out, task.instance_id) / "strengthening.parquet"
    if not path.exists():
        return False
    return {(r.config_hash, r.task_hash) for r in read_records(path, Strengthening)} == {(config_hash, task.task_hash())}


def process_task(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    config_hash: str,
    tree: Path,
    out: Path,
    judge: Callable[[Workbench], str] | None = None,
) -> Strengthening:
    """Strengthen one task of a run and commit its record atomically under ``OUT/strengthen/<id>/``."""
    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    record = strengthen(task, p1, probes, backend, stamp, tree, judge=judge, log_dir=under(out / "logs", task.instance_id))
    commit_folder(result_path(out, task.instance_id), [("strengthening", Strengthening, [record])])
    return record


def records(out: Path) -> dict[str, Strengthening]:
    """Every stored strengthening record of the run directory ``out``, by instance id."""
    found = {}
    for path in sorted((out / "strengthen").glob("*/strengthening.parquet")):
        for record in read_records(path, Strengthening):
            found[record.instance_id] = record
    return found
