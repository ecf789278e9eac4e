"""Differential execution: an input on which gold and another patch behave differently, or "none found".

A probe that survives the tests is evidence of a too-loose suite only when it behaves differently from
gold somewhere; a survivor that behaves exactly like gold (an equivalent mutant, a guard whose branches
agree, a dropped no-op) is no evidence. This engine searches for such an input:

1. Programs. Each FAIL_TO_PASS test (a pytest function or a unittest/pytest-class method without
   fixture or parametrize arguments) becomes a program: its statements in order, where each assert
   (``assert a == b``, ``self.assertEqual(a, b)``, ...) becomes an *observation* of the operands that
   call something, a ``with pytest.raises(...)`` block an observation of its body, and the call form
   (``self.assertRaises(E, lambda: f(x))``, ``pytest.raises(E, f, x)``) an observation of ``f(x)``.
   The program runs in the test's module namespace (and its class instance after ``setUp``).
2. Inputs. The test's own literals first (the baseline), then variants that replace one literal
   (``-1`` is one) in a statement that leads to gold's changed code: neighbouring and boundary values,
   values of the same shape from the issue text and the hidden tests, Hypothesis-generated values of
   the same type, and for a name bound to a project value (``DAY_OF_MONTH``) the other public
   module-level values of that exact type (``MONTH``).
3. Execution. ``probes/diff_driver.py`` runs every program on gold's tree and on the other patch's tree,
   each in its own sandbox with the hidden tests applied, and records per observation the canonical
   return value, the exception type (messages may be reworded) and the printed output.
4. Comparison. The first program whose observations differ is the distinguishing input, with both
   behaviours; none differing is "none found", with the number of programs tried.

5. Observation. When no program tells the patch apart, ``probes.observe`` watches the whole suite
   inside pytest (parametrized cases, fixtures, classes, PASS_TO_PASS tests too) and replays the calls
   it saw, and inputs varied from them, as standalone calls on both trees.

The gold side is run once per task (``DifferentialSession``) and reused for every probe.

Limits of the program replay (step 5 covers the first): tests that take fixtures or parameters are not replayed; only literals and module-level names
in the test body vary (not values built inside the library); state a program leaves in the library
(a cache) is seen by the next program on both trees alike. A value without an evaluable ``repr`` can
tell two trees apart but cannot become an assertion (``DistinguishingInput.literal`` is then empty).
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.grading.patching import apply_patch
from harness.pyast import literal_eval, parse
from harness.records import Behaviour, DistinguishingInput, ProbeResult, Task
from harness.sandboxes.sandbox import Backend, EnvError, SandboxError
from probes.special_case import find_def
from probes.workspace import test_sources

if TYPE_CHECKING:
    from probes.observe import ObservationSession

DRIVER = Path(__file__).with_name("diff_driver.py")
IO = "/tmp/swedeck-differential"
MAX_VARIANTS = 160  # variant programs per task
MAX_UNCONFIRMED = 3  # program differences replayed alone without repeating before the replay gives up
PER_LITERAL = 10  # values tried in place of one literal
HYPOTHESIS_EXAMPLES = 4
PROGRAM_TIMEOUT_S = 2.0
ASSERT_METHODS = {
    "assertEqual", "assertEquals", "assertNotEqual", "assertTrue", "assertFalse", "assertIs", "assertIsNot",
    "assertIsNone", "assertIsNotNone", "assertIn", "assertNotIn", "assertAlmostEqual", "assertGreater",
    "assertGreaterEqual", "assertLess", "assertLessEqual", "assertCountEqual", "assertListEqual",
    "assertDictEqual", "assertSetEqual", "assertTupleEqual", "assertSequenceEqual", "assertMultiLineEqual",
    "assertRegex",
}  # fmt: skip
RAISES = {"raises", "assertRaises", "assertRaisesRegex", "warns", "assertWarns"}
BUILTINS = set(dir(builtins))


# ============================================================================================ programs


@dataclass(frozen=True)
class Step:
    kind: str  # "exec" (a statement) or "observe" (an expression whose behaviour is recorded)
    src: str
    assertion: bool = False  # an operand of an assert in the test (pure by convention)


@dataclass
class Program:
    key: str
    test_id: str
    test_file: str
    cls: str | None
    method: str
    steps: list[Step]
    how: str = "the test's own literals"
    imports: list[str] = field(default_factory=list)  # `from m import x` lines a name substitution needs
    base_key: str = ""  # the test's own program this variant came from
    renamed: tuple[str, str] | None = None  # the string literal this variant replaced, and its new value

    def spec(self, names: Sequence[str] = ()) -> dict:
        steps = [{"kind": "exec", "src": line} for line in self.imports]
        steps += [{"kind": s.kind, "src": s.src} for s in self.steps]
        return {"key": self.key, "test_file": self.test_file, "cls": self.cls, "method": self.method, "steps": steps,
                "names": list(names)}  # fmt: skip


def _calls_something(node: ast.AST) -> bool:
    """The expression calls a non-builtin (an expected value like ``frozenset(range(3))`` does not)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            if not (isinstance(func, ast.Name) and func.id in BUILTINS):
                return True
        if isinstance(n, (ast.Attribute, ast.Subscript)) and not isinstance(n.ctx, ast.Store):
            return True
    return False


def _strip_asserts(stmt: ast.stmt) -> ast.stmt:
    """A compound statement run as setup: its asserts keep their side effects, not their verdicts."""

    class Strip(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.AST:
            return ast.copy_location(ast.Expr(node.test), node)

    return ast.fix_missing_locations(Strip().visit(parse(ast.unparse(stmt)).body[0]))


def _observed(node: ast.AST) -> list[ast.AST]:
    """The operands of an assert expression worth observing."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return [n for n in (node.left, node.comparators[0]) if _calls_something(n)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _observed(node.operand)
    return [node] if _calls_something(node) else []


def _assert_call(stmt: ast.stmt) -> ast.Call | None:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in ASSERT_METHODS:
            return stmt.value
    return None


def _callable_arg(call: ast.Call) -> int:
    """Position of the callable in a call-form raises: after the regex for ``assertRaisesRegex``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return 2 if name.endswith("Regex") else 1


def _raises_call(stmt: ast.stmt) -> ast.expr | None:
    """What a call-form raises statement invokes: ``self.assertRaises(E, lambda: f(x))`` observes
    ``f(x)`` and ``pytest.raises(E, f, x)`` observes ``f(x)``, so gold's own behaviour there (a value,
    or which exception) is compared, not whether the assertion machinery passed."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    at = _callable_arg(call)
    if name not in RAISES or len(call.args) <= at or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    target, args = call.args[at], call.args[at + 1 :]
    keywords = [k for k in call.keywords if k.arg not in ("match", "msg")]
    if isinstance(target, ast.Lambda) and not (args or keywords):
        lam = target.args
        if lam.posonlyargs or lam.args or lam.kwonlyargs or lam.vararg or lam.kwarg:
            return None
        return target.body
    return ast.Call(func=target, args=args, keywords=keywords)


def _raises_block(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.With):
        return False
    for item in stmt.items:
        call = item.context_expr
        if isinstance(call, ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in RAISES:
                return True
    return False


def steps_of(body: Sequence[ast.stmt]) -> list[Step]:
    out: list[Step] = []
    for i, stmt in enumerate(body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            continue  # docstring
        if isinstance(stmt, ast.Assert):
            out += [Step("observe", ast.unparse(n), True) for n in _observed(stmt.test)]
        elif (call := _assert_call(stmt)) is not None:
            out += [Step("observe", ast.unparse(a), True) for a in call.args[:2] if _calls_something(a)]
        elif (invoked := _raises_call(stmt)) is not None:
            out.append(Step("observe", ast.unparse(invoked), True))
        elif _raises_block(stmt):  # its observations raised in the test: never setup for a later input
            out += [Step(s.kind, s.src, s.kind == "observe") for s in steps_of(stmt.body)]  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.Expr):
            out.append(Step("observe", ast.unparse(stmt.value)))
        else:
            out.append(Step("exec", ast.unparse(_strip_asserts(stmt))))
    return out


def programs(sources: Mapping[str, str], test_ids: Sequence[str]) -> list[Program]:
    """One program per replayable FAIL_TO_PASS test (see the module docstring)."""
    out = []
    for test_id in test_ids:
        file, _, rest = test_id.partition("::")
        if not rest or file not in sources or "[" in rest:
            continue
        parts = rest.split("::")
        try:
            fn = find_def(parse(sources[file]), parts)
        except SyntaxError:
            continue
        if fn is None or isinstance(fn, ast.AsyncFunctionDef):
            continue
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
        if params not in ([], ["self"]) or fn.args.vararg or fn.args.kwarg or fn.decorator_list:
            continue  # fixtures and parametrized tests are not replayed
        cls = parts[-2] if len(parts) > 1 else None
        steps = steps_of(fn.body)
        if any(s.kind == "observe" for s in steps):
            out.append(Program(key=test_id, test_id=test_id, test_file=file, cls=cls, method=parts[-1], steps=steps))
    return out


def free_names(steps: Iterable[Step]) -> list[str]:
    """Names the steps read that they do not bind: the test module's globals."""
    loaded, bound = [], set()
    for step in steps:
        for node in ast.walk(parse(step.src)):
            if isinstance(node, ast.Name):
                (loaded.append(node.id) if isinstance(node.ctx, ast.Load) else bound.add(node.id))
    return [n for n in dict.fromkeys(loaded) if n not in bound and n not in BUILTINS and n != "self"]


# ============================================================================================ inputs

_CODE_SPAN = re.compile(r"`([^`\n]{1,40})`")
_CODE_BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
_TOKEN = re.compile(r"\b(?:[A-Z]{2,6}|\d+(?:\.\d+)?)\b")


def pool(issue: str, sources: Iterable[str]) -> list[object]:
    """Values a literal may take: constants of the hidden tests, and values the issue text states (code
    spans, constants of its code blocks, short upper-case tokens and numbers)."""
    found: dict[tuple[type, object], None] = {}

    def add(value: object) -> None:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            if not isinstance(value, str) or len(value) <= 60:
                found[(type(value), value)] = None

    for text in [*sources, *_CODE_BLOCK.findall(issue)]:
        try:
            tree = parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                add(node.value)
    for span in _CODE_SPAN.findall(issue):
        add(span)
        try:
            add(literal_eval(span))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    for token in _TOKEN.findall(issue):
        add(token)
        if token[0].isdigit():
            add(float(token) if "." in token else int(token))
    return [value for _, value in found]


def _shape(text: str) -> str:
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", text)))


def _digit_neighbours(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"\d+", text):
        n = int(m.group())
        for v in (n + 1, n - 1):
            if v >= 0:
                out.append(text[: m.start()] + str(v) + text[m.end() :])
    return out


def _hypothesis(value: object) -> list[object]:
    """A few Hypothesis-generated values of the literal's type."""
    from hypothesis import strategies as st

    if isinstance(value, str):
        alphabet = "".join(sorted(set(value))) or "a"
        strategy = st.text(alphabet=st.sampled_from(alphabet + "0123456789"), min_size=0, max_size=len(value) + 3)
    elif isinstance(value, int):
        strategy = st.integers(min_value=-2 * abs(value) - 10, max_value=2 * abs(value) + 10)
    else:
        strategy = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
    return draw(strategy, HYPOTHESIS_EXAMPLES * 3)


def draw(strategy: object, examples: int) -> list[object]:
    """What Hypothesis draws from ``strategy`` in ``examples`` derandomised tries (two runs agree)."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[object] = []

    @settings(derandomize=True, database=None, max_examples=examples, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)  # fmt: skip
    @given(strategy)
    def collect(x: object) -> None:
        drawn.append(x)

    collect()
    return drawn


def alternatives_for(value: object, values: Sequence[object]) -> list[tuple[object, str]]:
    """Values tried in place of a literal, each with where it came from, best first."""
    out: list[tuple[object, str]] = []
    same_type = [v for v in values if type(v) is type(value)]
    if isinstance(value, str):
        out += [(v, "neighbour") for v in _digit_neighbours(value)]
        out += [(v, "issue or tests, same shape") for v in same_type if _shape(v) == _shape(value)]  # type: ignore[arg-type]
        out += [(value.swapcase(), "case"), ("", "boundary")]
        out += [(v, "issue or tests") for v in same_type]
    elif isinstance(value, int):
        out += [(v, "neighbour") for v in (value + 1, value - 1)]
        out += [(v, "boundary") for v in (0, 1, -1, -value, 2 * value + 1)]
        out += [(v, "issue or tests") for v in same_type]
    else:
        out += [(v, "neighbour") for v in (value + 1, value - 1, value + 0.5)]
        out += [(v, "boundary") for v in (0.0, -value)]
        out += [(v, "issue or tests") for v in same_type]
    out += [(v, "hypothesis") for v in _hypothesis(value)]
    seen, unique = {(type(value), value)}, []
    for v, how in out:
        if (type(v), v) not in seen:
            seen.add((type(v), v))
            unique.append((v, how))
    return unique[:PER_LITERAL]


def _number(node: ast.AST) -> ast.Constant | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node
    return None


def _negative(node: ast.AST) -> bool:
    """``-1`` is one literal, so its neighbours are 0 and -2, not ``-0`` and ``-2``."""
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _number(node.operand) is not None


def literal_value(node: ast.AST) -> object:
    if _negative(node):
        return -node.operand.value  # type: ignore[attr-defined]
    return node.value  # type: ignore[attr-defined]


def constant(value: object) -> ast.expr:
    """The literal for ``value``; a negative number as a unary minus so it unparses in parentheses
    where it needs them (``(-2).bit_length()``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _literal_nodes(tree: ast.AST, names: Mapping[str, object]) -> list[ast.AST]:
    out: list[ast.AST] = []
    signed = set()
    for node in ast.walk(tree):  # breadth first: a unary minus comes before its operand
        if _negative(node):
            signed.add(id(node.operand))  # type: ignore[attr-defined]
            out.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool):
            if id(node) not in signed and not (isinstance(node.value, str) and len(node.value) > 200):
                out.append(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            out.append(node)
    return out


def _replace(src: str, index: int, names: Mapping[str, object], new: ast.expr) -> str:
    tree = parse(src)
    target = _literal_nodes(tree, names)[index]

    class Swap(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            return new if node is target else super().generic_visit(node)

    return ast.unparse(Swap().visit(tree))


def variants(
    base: Program, reached: Sequence[bool], values: Sequence[object], alternatives: Mapping[str, list[list[str]]], budget: int
) -> list[Program]:
    """Programs that each replace one literal of ``base`` in a step up to the last one that reached
    gold's changed code; steps that reached it first, then the setup before them."""
    reaching = [i for i, r in enumerate(reached) if r]
    if not reaching:
        return []
    last = max(reaching)
    order = [i for i in reaching] + [i for i in range(last + 1) if i not in reaching and base.steps[i].kind == "exec"]
    sites: list[list[Program]] = []
    for i in order:
        step = base.steps[i]
        nodes = _literal_nodes(parse(step.src), alternatives)
        for k, node in enumerate(nodes):
            tries: list[Program] = []
            if isinstance(node, ast.Name):
                for module, attr in alternatives[node.id]:
                    tries.append(_variant(base, i, step, k, alternatives, ast.Name(attr), f"{node.id} -> {attr} (same type, {module})",
                                          [f"from {module} import {attr}"]))  # fmt: skip
            else:
                old = literal_value(node)
                for value, how in alternatives_for(old, values):
                    variant = _variant(base, i, step, k, alternatives, constant(value), f"{old!r} -> {value!r} ({how})", [])
                    if isinstance(old, str) and isinstance(value, str):
                        variant.renamed = (old, value)
                    tries.append(variant)
            sites.append(tries)
    out: list[Program] = []
    while any(sites) and len(out) < budget:  # round-robin over the literals, best values first
        for tries in sites:
            if tries and len(out) < budget:
                out.append(tries.pop(0))
        sites = [t for t in sites if t]
    return out


def _variant(base: Program, i: int, step: Step, k: int, names: Mapping[str, object], new: ast.expr, how: str, imports: list[str]) -> Program:
    steps = list(base.steps)
    steps[i] = Step(step.kind, _replace(step.src, k, names, new), step.assertion)
    key = f"{base.test_id}#{i}.{k}:{how}"
    return Program(key=key, test_id=base.test_id, test_file=base.test_file, cls=base.cls, method=base.method,
                   steps=steps, how=how, imports=[*base.imports, *imports], base_key=base.key)  # fmt: skip


# Opaque identifiers. A string the tests use may be a name (a node, a key, a label) whose value gold
# never looks at: renaming it everywhere in the test renames it in gold's behaviour and changes nothing
# else. For gold such a string and its replacement are one equivalence class, so an input that differs
# from the test only in that string is the test's own case under another name, not a case the tests
# leave out; a patch that behaves differently there tells names apart (it memorised the test's
# literals), which every finite suite admits and no added test could rule out. So a variant that
# replaced a string is evidence only when gold is *not* equivariant under the renaming: gold itself
# treats the new value differently (moneyfmt: 'USD' -> 'KWD', a currency with three decimals), i.e. the
# input exercises a behaviour the FAIL_TO_PASS tests' subject depends on.


def renamed_everywhere(base: Program, old: str, new: str) -> Program:
    """``base`` with every string literal equal to ``old`` replaced by ``new`` (a consistent renaming)."""

    class Rename(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Constant(new) if node.value == old else node

    steps = [Step(s.kind, ast.unparse(Rename().visit(parse(s.src))), s.assertion) for s in base.steps]
    return Program(key=f"{base.key}#rename:{old!r}->{new!r}", test_id=base.test_id, test_file=base.test_file, cls=base.cls,
                   method=base.method, steps=steps, how=f"{old!r} -> {new!r} everywhere", imports=list(base.imports))  # fmt: skip


def renamed_behaviour(obs: dict, old: str, new: str) -> Behaviour:
    """What gold's observation would be if ``old`` were only a name: the same, with ``old`` renamed."""
    b = behaviour(obs)
    word = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)")
    return Behaviour(value=b.value.replace(json.dumps(repr(old))[1:-1], json.dumps(repr(new))[1:-1]), raised=b.raised,
                     stdout=word.sub(new, b.stdout))  # fmt: skip


def equivariant(base: Sequence[dict], renamed: Sequence[dict], old: str, new: str) -> bool:
    """Gold's behaviour on the renamed program is its behaviour on the test's own, renamed: ``old`` is opaque."""
    return len(base) == len(renamed) and all(
        b.get("step") == r.get("step") and renamed_behaviour(b, old, new) == behaviour(r) for b, r in zip(base, renamed)
    )


# ============================================================================================ running


@dataclass
class Observed:
    """What the driver recorded for every program on one tree."""

    results: dict[str, list[dict]]
    alternatives: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)
    error: str = ""


def run_programs(
    task: Task, backend: Backend, patch: str, progs: Sequence[Program], changed: Sequence[str], *,
    discover: bool = False, timeout_s: float = 120.0, paths: Sequence[str] = (), program_timeout_s: float = PROGRAM_TIMEOUT_S,
) -> Observed:  # fmt: skip
    """Every program on the buggy tree with ``patch`` and the hidden tests applied, in one sandbox."""
    try:
        sandbox = backend.open(task)
    except (EnvError, SandboxError, OSError) as err:
        return Observed({}, error=f"no sandbox: {err}")
    try:
        strategy, why = apply_patch(sandbox, patch, "differential")
        if not strategy:
            return Observed({}, error=f"the patch does not apply: {why}")
        hidden = task.answer.hidden_tests
        strategy, why = apply_patch(sandbox, hidden.patch, "differential-tests")
        if not strategy:
            return Observed({}, error=f"the hidden tests do not apply: {why}")
        for path, content in hidden.files.items():
            sandbox.write_file(path, content)
        spec = {"changed": list(changed), "timeout_s": program_timeout_s, "discover": discover, "paths": list(paths),
                "programs": [p.spec(free_names(p.steps)) for p in progs]}  # fmt: skip
        sandbox.write_file(f"{IO}/driver.py", DRIVER.read_text())
        sandbox.write_file(f"{IO}/spec.json", json.dumps(spec))
        out = f"{IO}/out.json"
        # one hash seed on every tree: a set of strings then iterates (and prints) in the same order on
        # both, so an object whose repr shows a set is no difference (boltons-ec1ff9f's complement sets)
        done = sandbox.run(f"python {shlex.quote(IO + '/driver.py')} {IO}/spec.json {out}", timeout=timeout_s,
                           env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"})  # fmt: skip
        try:
            raw = json.loads(sandbox.read_file(out))
        except (OSError, ValueError) as err:
            return Observed({}, error=f"the driver wrote no result (exit {done.exit_code}): {err}: {done.output[-500:]}")
        return Observed(raw.get("results", {}), raw.get("alternatives", {}))
    except (EnvError, SandboxError, OSError) as err:
        return Observed({}, error=f"the sandbox failed: {err}")
    finally:
        sandbox.close()


def behaviour(obs: dict | None) -> Behaviour:
    if obs is None:
        return Behaviour(raised="not reached")
    value = "" if obs.get("value") is None else json.dumps(obs["value"], ensure_ascii=False)
    return Behaviour(value=value, raised=obs.get("raised", ""), stdout=obs.get("stdout", ""))


def first_difference(gold: Sequence[dict], other: Sequence[dict]) -> int | None:
    """Index of the first observation whose behaviour differs; None when they agree. A program that
    timed out or did not load on gold tells nothing."""
    if any(o.get("raised") == "timeout" or o.get("step") == -1 for o in gold):
        return None
    for i in range(max(len(gold), len(other))):
        g = gold[i] if i < len(gold) else None
        o = other[i] if i < len(other) else None
        if g is None or o is None or behaviour(g) != behaviour(o) or g.get("step") != o.get("step"):
            return i
    return None


@dataclass
class Differential:
    """The engine's answer for one patch: the distinguishing input, or none found with what was tried."""

    found: DistinguishingInput | None
    tried: int  # programs and standalone calls compared
    detail: str = ""
    observed: int = 0  # standalone calls the observation engine took from the tests' own calls
    generated: int = 0  # ... and varied or read from documents (``probes.observe``)


class DifferentialSession:
    """Gold's side for one task, computed once (two sandbox runs: the baseline programs with name
    discovery, then every variant), and compared with any number of other patches (one run each)."""

    def __init__(self, task: Task, backend: Backend, fail_to_pass: Sequence[str], sources: Mapping[str, str],
                 changed: Sequence[str], *, budget: int = MAX_VARIANTS, observer: ObservationSession | None = None) -> None:  # fmt: skip
        self.task, self.backend, self.changed, self.budget = task, backend, list(changed), budget
        self.observer = observer  # the suite observed through pytest, asked when no program tells the patch apart
        self.base = programs(sources, fail_to_pass)
        self.values = pool(task.problem_statement, sources.values())
        self._gold: Observed | None = None
        self.programs: list[Program] = []
        self.runs = 0  # sandbox runs of the driver
        self._opaque: dict[tuple[str, str, str], bool] = {}

    def gold(self) -> Observed:
        if self._gold is None:
            first = run_programs(self.task, self.backend, self.task.answer.gold_patch, self.base, self.changed, discover=True)
            self.runs += 1
            progs = [p for p in self.base if p.key in first.results]
            per_test = max(8, self.budget // max(len(progs), 1))
            extra: list[Program] = []
            for base in progs:
                observed = first.results[base.key]
                reached = [any(o.get("reached") for o in observed if o.get("step") == i) for i in range(len(base.steps))]
                extra += variants(base, reached, self.values, first.alternatives.get(base.key, {}), per_test)
            extra = extra[: self.budget]
            second = run_programs(self.task, self.backend, self.task.answer.gold_patch, extra, self.changed) if extra else Observed({})
            self.runs += bool(extra)
            self.programs = progs + [p for p in extra if p.key in second.results]
            self._gold = Observed({**first.results, **second.results}, first.alternatives, first.error or second.error)
        return self._gold

    def distinguish(self, patch: str) -> Differential:
        answer = self.replay_programs(patch)
        if answer.found is not None or self.observer is None:
            return answer
        more = self.observer.distinguish(patch)
        return Differential(more.found, answer.tried + more.tried, f"{answer.detail}; {more.detail}", more.observed, more.generated)

    def replay_programs(self, patch: str) -> Differential:
        gold = self.gold()
        if not self.programs:
            return Differential(None, 0, gold.error or "no FAIL_TO_PASS test could be replayed")
        other = run_programs(self.task, self.backend, patch, self.programs, self.changed)
        self.runs += 1
        if other.error:
            return Differential(None, 0, other.error)
        tried, names, unconfirmed = 0, 0, 0
        for program in self.programs:
            if program.key not in other.results:
                continue
            tried += 1
            g, o = gold.results[program.key], other.results[program.key]
            at = first_difference(g, o)
            if at is None:
                continue
            if self.opaque(program):
                names += 1
                continue
            if not self.confirmed(program, patch, g, o):
                unconfirmed += 1
                if unconfirmed >= MAX_UNCONFIRMED:
                    break
                continue
            return Differential(_distinguishing(program, g, o, at), tried)
        renamings = f"; {names} differ only on renamed opaque identifiers" if names else ""
        renamings += f"; {unconfirmed} differences did not repeat when replayed alone" if unconfirmed else ""
        return Differential(None, tried, f"none found: {tried} programs over {len(self.base)} FAIL_TO_PASS tests behave alike{renamings}")

    def confirmed(self, program: Program, patch: str, gold: Sequence[dict], other: Sequence[dict]) -> bool:
        """The program alone, in a fresh sandbox on each tree, behaves as in the batch (no state left by
        an earlier program, no flake): the rule ``probes.observe`` applies to its calls."""
        again = [run_programs(self.task, self.backend, p, [program], self.changed).results.get(program.key)
                 for p in (self.task.answer.gold_patch, patch)]  # fmt: skip
        self.runs += 2
        g, o = again
        return g is not None and o is not None and [behaviour(x) for x in g] == [behaviour(x) for x in gold] \
            and [behaviour(x) for x in o] == [behaviour(x) for x in other]

    def opaque(self, program: Program) -> bool:
        """The variant only renamed a string that gold treats as a name (see ``renamed_everywhere``);
        one extra gold run per renaming, remembered."""
        if program.renamed is None:
            return False
        old, new = program.renamed
        key = (program.base_key, old, new)
        if key not in self._opaque:
            base = self.gold().results.get(program.base_key)
            renamed = renamed_everywhere(next(p for p in self.base if p.key == program.base_key), old, new)
            observed = run_programs(self.task, self.backend, self.task.answer.gold_patch, [renamed], self.changed)
            self.runs += 1
            got = observed.results.get(renamed.key)
            self._opaque[key] = base is not None and got is not None and equivariant(base, got, old, new)
        return self._opaque[key]


def _distinguishing(program: Program, gold: Sequence[dict], other: Sequence[dict], at: int) -> DistinguishingInput:
    g = gold[at] if at < len(gold) else None
    o = other[at] if at < len(other) else None
    spec_steps = program.spec()["steps"]
    index = min(max((g or o or {}).get("step", 0), 0), len(spec_steps) - 1)
    offset = len(program.imports)
    # earlier assert operands are pure by convention and dropped; every other earlier statement is setup
    setup = list(program.imports[:index])
    setup += [s.src for s in program.steps[: max(index - offset, 0)] if s.kind == "exec" or not s.assertion]
    return DistinguishingInput(
        test_id=program.test_id, how=program.how, setup=setup, call=spec_steps[index]["src"],
        call_is_statement=spec_steps[index]["kind"] == "exec", gold=behaviour(g), other=behaviour(o),
        literal=(g or {}).get("literal", "") or "",
    )  # fmt: skip


# ============================================================================================ survivors

_CHANGED = re.compile(r"^\+\+\+ b/(\S+\.py)$", re.MULTILINE)


def changed_python_files(patch: str) -> list[str]:
    return list(dict.fromkeys(_CHANGED.findall(patch)))


def session_for(task: Task, backend: Backend, fail_to_pass: Sequence[str], tree: Path) -> DifferentialSession:
    from probes.observe import ObservationSession, context  # builds on this module's programs and driver

    files = [t.partition("::")[0] for t in fail_to_pass]
    sources = test_sources(task, tree, files)
    hidden = test_sources(task, tree, [*task.answer.hidden_tests.files, *changed_python_files(task.answer.hidden_tests.patch)])
    ctx = context(task, tree, {**hidden, **sources}, fail_to_pass)
    observer = ObservationSession(task, backend, ctx, pool(task.problem_statement, hidden.values()))
    return DifferentialSession(task, backend, fail_to_pass, sources, changed_python_files(task.answer.gold_patch), observer=observer)


def with_differential(probe: ProbeResult, answer: Differential) -> ProbeResult:
    return probe.model_copy(update={
        "distinguishing": answer.found, "likely_equivalent": answer.found is None, "differential_tried": answer.tried,
        "differential_observed": answer.observed, "differential_generated": answer.generated,
    })  # fmt: skip


def check_survivors(session: DifferentialSession, probes: Sequence[ProbeResult]) -> list[ProbeResult]:
    """Each plausible-but-wrong probe that survived the tests, with the engine's answer: evidence
    (a distinguishing input) or ``likely_equivalent``; other probes unchanged."""
    return [
        with_differential(p, session.distinguish(p.patch)) if p.kind == "plausible_wrong" and p.reward == 1.0 else p
        for p in probes
    ]
