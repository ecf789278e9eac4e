"""Differential execution through pytest itself: observe what the tests' own calls do, then try inputs
worth trying, as standalone calls.

The program replay of ``probes.differential`` reads a FAIL_TO_PASS test's statements; real suites are
written with ``parametrize``, fixtures and classes, which it does not replay. This engine lets pytest
run the suite as it is and watches from inside (``harness/grading/plugins/swedeck_observe.py``):

1. Targets. The functions gold's patch changes, and the public functions of gold's changed files
   the FAIL_TO_PASS tests' files call (``targets``), as ``path::qualname``.
2. Observation. The task's whole test command runs on gold with the plugin (``harness.grading.grader.run_tests``
   with ``observe=``): every call a test, fixture, test-class or unittest method makes into a target,
   with its arguments as evaluable source, canonical return value, exception type and printed output.
   The suite is observed on gold only: on a survivor, every observed call with evaluable arguments is
   replayed standalone (step 4), which is the same comparison (same call, same arguments) made where it
   can be confirmed; a difference only the suite's context shows (state an earlier call left) could not
   be confirmed standalone, so a full observed run per survivor would buy no evidence for its cost.
3. Inputs worth trying (``variations``). Seeds: every observed call with evaluable arguments (from any
   test that reaches the targets, PASS_TO_PASS too) and the calls of targets written in the issue text's
   code blocks, the changed modules' doctests and the README. Each seed varies one argument at a
   time: boundary numbers around the numbers seen, empty and one-element containers, halves, doubles,
   splices and nestings of one seen string into another, values of the same type from the issue and the
   tests, ``None`` where the signature's default is ``None``, and a few values Hypothesis draws from
   strategies inferred from the values seen (derandomised). At most ``MAX_CALLS`` calls per task.
4. Replay. Every call runs standalone (``from module import f`` + ``f(<args>)``) through
   ``probes/diff_driver.py``, twice on gold's tree (per task: a call gold answers differently the
   second time, random jitter or a clock, is left out) and once per probe. The evidence rule
   against false alarms: a difference counts only where gold's behaviour is in contract (it returns, or
   raises an exception type the tests or the issue expect), values compared canonically and exception
   messages ignored. A difference is confirmed by replaying that one call alone on both trees, each
   in a fresh sandbox: the same two behaviours again, or no evidence.

Budget per task: at most ``MAX_CALLS`` standalone calls, ``MAX_CONFIRMATIONS`` single-call replays per
probe, and ``WALL_BUDGET_S`` of observation in all; ``Differential`` reports how many calls were
compared and how many came from the tests (observed) or were generated.

Limits: a call whose arguments have no evaluable source (an object built by a fixture, a method of an
instance whose repr does not round-trip) cannot be replayed, so it is counted in the detail, never
evidence; variations change one argument at a time; the
public functions the tests call are looked for only in the files gold changed.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading.grader import run_tests
from harness.pyast import literal_eval, parse
from harness.records import Behaviour, DistinguishingInput, Task
from harness.sandboxes.sandbox import Backend, EnvError
from probes.differential import Differential, Program, Step, behaviour, draw, run_programs
from probes.workspace import file_lines, touched_lines, workspace

MAX_CALLS = 600  # standalone calls per task; at most half of them the tests' own
MAX_TARGETS = 24
PER_ARGUMENT = 24  # variations of one argument of one seed
SPLICED = 4  # other seen values one string is spliced with or nested in
REBUILT = 3  # variations of one literal inside an argument written as a call
# methods whose value is the implementation's own (equal objects' equal hashes, pickle's recipe, a size in
# bytes): a correct alternative returns another (semver-db55f27's hash, boltons-ebc7a8f's __reduce__)
ARBITRARY = {"__hash__", "__reduce__", "__reduce_ex__", "__getstate__", "__sizeof__", "__dir__"}
MAX_SEPARATORS = 6  # punctuation characters of a string left out, one at a time
MAX_ENDINGS = 6  # short literals of the changed functions tried as a string's ending
HYPOTHESIS_EXAMPLES = 5
CALL_TIMEOUT_S = 1.0
MAX_CONFIRMATIONS = 5  # differences replayed alone per probe before giving up
REPLAY_TIMEOUT_S = 300.0
WALL_BUDGET_S = 900.0  # observation time per task, gold's side included: later survivors get no evidence
_RAISES = re.compile(r"(?:raises|assertRaises\w*)\(\s*\(?\s*([\w.]+(?:\s*,\s*[\w.]+)*)")
_EXCEPT = re.compile(r"except\s+\(?\s*([\w.]+(?:\s*,\s*[\w.]+)*)")
_EXC_WORD = re.compile(r"\b(\w*(?:Error|Exception|Warning))\b")
_CODE_BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
_DOCTEST = re.compile(r"^\s*>>> (.+)$", re.MULTILINE)


# ============================================================================================ targets


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


# ============================================================================================ observation


def records(jsonl: str) -> list[dict]:
    out = []
    for line in jsonl.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a run killed mid-write
        if isinstance(row, dict) and "target" in row:
            out.append(row)
    return out


def observe(task: Task, backend: Backend, patch: str, watched: Sequence[str]) -> tuple[list[dict], str]:
    """The plugin's records of one run of the task's tests on the tree with ``patch``, or why there are none."""
    try:
        run = run_tests(task, patch, backend, observe=watched)
    except EnvError as err:
        return [], f"no observation run: {err}"
    if run.outcome != "ok":
        return [], f"the observation run ended {run.outcome}: {run.detail[-300:]}"
    return records(run.observed), ""


# ============================================================================================ contract


def expected_exceptions(test_sources: Iterable[str], issue: str) -> set[str]:
    """Exception types the tests expect (``pytest.raises``, ``assertRaises``, ``except``) or the issue names."""
    out: set[str] = set()
    for text in test_sources:
        for match in [*_RAISES.findall(text), *_EXCEPT.findall(text)]:
            out |= {name.strip().rsplit(".", 1)[-1] for name in match.split(",")}
    out |= set(_EXC_WORD.findall(issue))
    return out - {""}


def in_contract(gold: Behaviour, expected: set[str]) -> bool:
    if gold.raised in ("timeout", "not reached"):
        return False
    return not gold.raised or gold.raised.rsplit(".", 1)[-1] in expected


def differs(gold: Behaviour, other: Behaviour, expected: set[str]) -> bool:
    """Evidence: gold in contract and the other tree behaves otherwise, where one of them returned. Two
    exceptions of different types tell nothing: an input wrong in two ways (semver-0309c63's
    ``VersionInfo(-1, None, 0)``) may fail at either check first in a correct fix."""
    if gold == other or not in_contract(gold, expected) or other.raised == "timeout":
        return False
    return not (gold.raised and other.raised)


# ============================================================================================ inputs


@dataclass(frozen=True)
class Call:
    """One standalone call of a target: ``func(args..., k=v...)`` after ``imports``."""

    target: str  # module:qualname
    func: str  # the callable's source (``tail``, ``Box``, ``Box.grow``)
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    imports: tuple[str, ...]
    test_id: str  # the test (or document) the seed came from
    source: str  # "observed" or "variant"
    how: str
    consume: bool = False  # the target returns an iterator: the call is ``list(...)``, so its value has a literal

    @property
    def src(self) -> str:
        call = f"{self.func}({', '.join([*self.args, *(f'{k}={v}' for k, v in self.kwargs)])})"
        return f"list({call})" if self.consume else call


def seeds_from_records(rows: Iterable[dict]) -> list[Call]:
    """The observed calls whose arguments all have evaluable source (inside ``list()`` for a target seen
    returning an iterator, even where this call raised), except calls of a method whose value is
    the implementation's own (``ARBITRARY``)."""
    rows = list(rows)
    iterating = iterators(rows)
    out = []
    for row in rows:
        if row.get("call") and row["target"].rpartition(".")[2] not in ARBITRARY:
            out.append(Call(row["target"], row["call"][: row["call"].index("(")], tuple(row["args"]),
                            tuple(sorted(row["kwargs"].items())), tuple(row["imports"]), row["test"], "observed",
                            f"called by {row['test']}", row["target"] in iterating))  # fmt: skip
    return _unique(out)


def prioritised(seeds: Sequence[Call], first: Collection[str]) -> list[Call]:
    """The FAIL_TO_PASS tests' calls first, then one call per target and test in turn, so a suite
    with thousands of calls (packaging's markers) leaves room for every test and for variations."""
    ahead = [s for s in seeds if s.test_id in first]
    rest = [s for s in seeds if s.test_id not in first]
    rounds: dict[tuple[str, str], list[Call]] = {}
    for s in rest:
        rounds.setdefault((s.target, s.test_id), []).append(s)
    queues = list(rounds.values())
    while queues:
        ahead += [q.pop(0) for q in queues]
        queues = [q for q in queues if q]
    return ahead


def iterators(rows: Iterable[Mapping]) -> set[str]:
    """The targets seen returning an iterator."""
    return {row["target"] for row in rows if isinstance(row.get("value"), list) and row["value"][:1] == ["iterator"]}


def _unique(calls: Iterable[Call]) -> list[Call]:
    seen: dict[str, Call] = {}
    for call in calls:
        seen.setdefault(call.src, call)
    return list(seen.values())


def documented_calls(texts: Mapping[str, str], watched: Sequence[dict], iterating: Collection[str] = ()) -> list[Call]:
    """Calls of a target written in the issue's code blocks, doctests or READMEs (``texts``: where -> text).
    ``watched``: one observed record per target, for its callable and imports; ``iterating``: the
    targets that return iterators."""
    by_name = {}
    for row in watched:
        qualname = row["target"].split(":")[1]
        name = qualname.rsplit(".", 1)[0] if qualname.endswith(".__init__") else qualname
        if "." not in name:
            by_name.setdefault(name, row)
    out = []
    for where, text in texts.items():
        blocks = _CODE_BLOCK.findall(text)
        # a block that does not parse whole (a REPL session, output lines) is read line by line
        snippets = _DOCTEST.findall(text) + [line for b in blocks for line in ([b] if _parses(b) else b.splitlines())]
        for snippet in snippets:
            try:
                tree = parse(snippet)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
                row = by_name.get(name)
                if row is None or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                    continue
                args = [ast.unparse(a) for a in node.args]
                kwargs = tuple((k.arg, ast.unparse(k.value)) for k in node.keywords)
                if not all(_literal(a) is not _NO for a in [*args, *(v for _, v in kwargs)]):
                    continue
                func = row["call"][: row["call"].index("(")] if row.get("call") else name
                out.append(Call(row["target"], func, tuple(args), kwargs, tuple(row["imports"][:1]), where, "variant",
                                f"written in {where}", row["target"] in iterating))  # fmt: skip
    return _unique(out)


_NO = object()


def _parses(text: str) -> bool:
    try:
        parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _literal(src: str) -> object:
    try:
        return literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NO


def _numbers_near(values: Iterable[object]) -> list[int]:
    out: list[int] = []
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool):
            out += [v - 1, v, v + 1]
    return out


def alternatives(value: object, seen: Sequence[object], none_ok: bool, endings: Sequence[str] = ()) -> list[tuple[object, str]]:
    """Values tried in place of one argument, each with where it came from, best first. ``endings``:
    short string literals of the functions gold changed."""
    out: list[tuple[object, str]] = []
    if isinstance(value, bool):
        out.append((not value, "the other truth value"))
    elif isinstance(value, int):
        out += [(v, "boundary") for v in (value - 1, value + 1, 0, -1, 1, -value)]
        out += [(v, "around a number the tests use") for v in _numbers_near(seen)]
    elif isinstance(value, float):
        out += [(v, "boundary") for v in (0.0, -value, value - 0.5, value + 0.5, value * 2)]
    elif isinstance(value, (str, bytes)):
        empty = type(value)()
        out += [(empty, "empty"), (value[:1], "one element"), (value[:-1], "one shorter"), (value + value, "doubled")]
        if isinstance(value, str):
            out += [(v, "a run of digits one longer") for v in longer_digit_runs(value)]
            out += [(v, "another character before the last") for v in other_penultimate(value, seen)]
            out += [(v, "a bracketed group nested once more") for v in deeper_groups(value)]
            out += [(v, "a digit at its extremes") for v in digit_extremes(value)]
            out += [(v, "a separator left out") for v in separators_dropped(value)]
            out += [(value[: -len(e)] + e, "its ending replaced by a literal of the changed code")
                    for e in endings if value and not value.endswith(e)]  # fmt: skip
        for other in list(dict.fromkeys(o for o in seen if type(o) is type(value) and o != value and o))[:SPLICED]:
            half, mid = len(value) // 2, len(other) // 2
            out += [(value[:half] + other[mid:], "spliced with another seen value"),
                    (other[:mid] + value + other[mid:], "nested in another seen value")]  # fmt: skip
    elif isinstance(value, (list, tuple)):
        kind = type(value)
        other_kind = tuple if kind is list else list
        out += [(kind(), "empty"), (kind(value[:1]), "one element"), (kind(value[:-1]), "one shorter"),
                (kind([*value, *value[:1]]), "one longer"), (kind([value]), "nested"),
                (other_kind(value), "the same items in the other sequence type")]  # fmt: skip
    elif isinstance(value, dict):
        out += [({}, "empty"), (dict(list(value.items())[:1]), "one item")]
    if none_ok and value is not None:
        out.insert(1, (None, "None, as the signature's default or the tests' several types allow"))
    out += [(v, "the issue or the tests, same type") for v in seen if type(v) is type(value)]
    out += [(v, "Hypothesis, inferred from the values seen") for v in _hypothesis(value, seen)]
    # keyed by type and repr, and stopped at the budget: a suite with a thousand seen strings made
    # this pairwise comparison the task's bottleneck (packaging's markers)
    unique: dict[tuple[str, str], tuple[object, str]] = {(type(value).__name__, repr(value)): (value, "")}
    for v, how in out:
        unique.setdefault((type(v).__name__, repr(v)), (v, how))
        if len(unique) > PER_ARGUMENT:
            break
    return list(unique.values())[1:]


def longer_digit_runs(text: str) -> list[str]:
    """``text`` with one run of digits one digit longer (its last digit repeated): a field at its width
    limit (``.123456`` -> ``.1234566``); the longest runs first."""
    runs = sorted(re.finditer(r"\d+", text), key=lambda m: -len(m.group()))[:4]
    return [text[: m.end()] + m.group()[-1] + text[m.end() :] for m in runs]


def separators_dropped(text: str) -> list[str]:
    """``text`` without the first occurrence of each of its first few punctuation characters: an
    optional part of a small syntax left out (parse's ``{:+.7f}`` -> ``{:+7f}``: a sign with no
    precision after it)."""
    marks = list(dict.fromkeys(c for c in text if not c.isalnum() and not c.isspace()))[:MAX_SEPARATORS]
    return [text.replace(c, "", 1) for c in marks if len(text) > 1]


def digit_extremes(text: str) -> list[str]:
    """``text`` with its first digit made ``0`` and ``9`` (semver's ``9.3.7``: a check over the
    characters ``0123456789`` that drops one)."""
    at = next((i for i, c in enumerate(text) if c.isdigit()), -1)
    return [] if at < 0 else [text[:at] + d + text[at + 1 :] for d in "09" if d != text[at]]


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


def deeper_groups(text: str) -> list[str]:
    """``text`` with its first balanced ``(...)`` (then ``[...]``, ``{...}``) group wrapped in one more
    pair: a structure one level deeper than the tests' (packaging's markers within a group within a
    group)."""
    out = []
    for opening, closing in ("()", "[]", "{}"):
        start, depth = text.find(opening), 0
        if start < 0:
            continue
        for i in range(start, len(text)):
            depth += (text[i] == opening) - (text[i] == closing)
            if depth == 0:
                out.append(f"{text[:start]}{opening}{text[start : i + 1]}{closing}{text[i + 1 :]}")
                break
    return out


def other_penultimate(text: str, seen: Sequence[object]) -> list[str]:
    """``text`` with the character before its last one replaced by one that no seen string of this
    argument has there: an ending the tests never pair (``box``, ``fox``, ``tax`` -> ``bbx``)."""
    words = [v for v in [*seen, text] if isinstance(v, str) and len(v) >= 2]
    if len(text) < 2:
        return []
    used = {w[-2] for w in words}
    spare = [c for c in sorted(set("".join(words))) if c not in used and c.isalnum()]
    return [text[:-2] + spare[0] + text[-1]] if spare else []


def _hypothesis(value: object, seen: Sequence[object]) -> list[object]:
    """A few values Hypothesis draws from a strategy inferred from the values seen of this type."""
    from hypothesis import strategies as st

    same = [v for v in seen if type(v) is type(value)] + [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        strategy = st.integers(min_value=min(same) - 3, max_value=max(same) + 3)  # type: ignore[type-var]
    elif isinstance(value, str):
        alphabet = "".join(sorted(set("".join(same)))) or "a"  # type: ignore[arg-type]
        strategy = st.text(alphabet=st.sampled_from(alphabet), max_size=max(len(v) for v in same) + 3)  # type: ignore[arg-type]
    elif isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        strategy = st.lists(st.integers(min_value=min(value) - 2, max_value=max(value) + 2), max_size=len(value) + 2)
    else:
        return []
    return draw(strategy, HYPOTHESIS_EXAMPLES * 3)[:HYPOTHESIS_EXAMPLES]


def variations(seeds: Sequence[Call], extra_values: Sequence[object], none_ok: Mapping[str, set[str]], budget: int,
               first: Collection[str] = (), endings: Sequence[str] = ()) -> list[Call]:  # fmt: skip
    """Calls that each change one argument of one seed (see ``alternatives``): every variation of the
    seeds from the tests in ``first`` (the FAIL_TO_PASS tests: the issue's own cases), then
    round-robin over the other seeds' arguments so each gets its best values first. ``none_ok``:
    target -> names or positions (as strings) whose default is ``None``."""
    seen_by_site: dict[tuple[str, str], list[object]] = {}
    for seed in seeds:
        for i, src in enumerate(seed.args):
            if (v := _literal(src)) is not _NO:
                seen_by_site.setdefault((seed.target, str(i)), []).append(v)
        for k, src in seed.kwargs:
            if (v := _literal(src)) is not _NO:
                seen_by_site.setdefault((seed.target, k), []).append(v)
    sites: list[list[Call]] = []
    for seed in seeds:
        slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
        for slot, src in slots:
            value = _literal(src)
            if value is _NO:
                continue
            at_site = seen_by_site.get((seed.target, slot), [])
            seen = [*at_site, *extra_values]
            # None where the signature's default is None, or where the tests pass values of several
            # types (markupsafe's ``Markup % arg``: a str, an int, a tuple; None takes another branch)
            nullable = slot in none_ok.get(seed.target.partition(":")[2], set()) or len({type(v) for v in at_site if v is not None}) > 1
            tries = []
            for new, how in alternatives(value, seen, nullable, endings):
                text = repr(new)
                if _literal(text) is _NO:
                    continue
                args = tuple(text if str(i) == slot else a for i, a in enumerate(seed.args))
                kwargs = tuple((k, text if k == slot else v) for k, v in seed.kwargs)
                tries.append(Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                                  f"{seed.src} with {slot_name(slot)} {src} -> {text} ({how})", seed.consume))  # fmt: skip
            sites.append(tries)
        sites.append(retyped(seed) + renested(seed) + missing_keys(seed) + rebuilt(seed))
    out: list[Call] = []
    known = {s.src for s in seeds}
    for tries in [t for t in sites if t and t[0].test_id in first]:
        for call in tries:
            if call.src not in known and len(out) < budget:
                known.add(call.src)
                out.append(call)
    sites = [t for t in sites if t and t[0].test_id not in first]
    while any(sites) and len(out) < budget:
        for tries in sites:
            while tries and len(out) < budget:
                call = tries.pop(0)
                if call.src not in known:
                    known.add(call.src)
                    out.append(call)
                    break
        sites = [t for t in sites if t]
    return out


def _outer(src: str) -> str:
    """The callable of an argument written as a call (``complement`` of ``complement({'a'})``), else ''."""
    try:
        node = parse(src, mode="eval").body
    except (SyntaxError, ValueError):
        return ""
    return ast.unparse(node.func) if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) else ""


def renested(seed: Call) -> list[Call]:
    """Arguments built by a call (an object no literal can write) nested once more in that call: each
    alone, then all together (``a >= b`` of two complement sets -> of two complements of complements:
    the branch where both are the other kind)."""
    slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
    built = {slot: f"{outer}({src})" for slot, src in slots if (outer := _outer(src)) and _literal(src) is _NO}
    choices = [{slot: new} for slot, new in built.items()] + ([built] if len(built) > 1 else [])
    out = []
    for change in choices:
        args = tuple(change.get(str(i), a) for i, a in enumerate(seed.args))
        kwargs = tuple((k, change.get(k, v)) for k, v in seed.kwargs)
        which = ", ".join(slot_name(slot) for slot in change)
        out.append(Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                        f"{seed.src} with {which} nested in its own call", seed.consume))  # fmt: skip
    return out


def rebuilt(seed: Call) -> list[Call]:
    """Arguments built by a call from literals (``numeric_range(0, 0)``, an object's repr or the call
    that built it) with one of those literals varied (``numeric_range(1, 0)``): the object in another
    state of the same shape (an empty range that does not start at 0), which no variation of the
    seed's own literal arguments reaches."""
    out = []
    slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
    for slot, src in slots:
        if _literal(src) is not _NO or not _outer(src):
            continue
        node = parse(src, mode="eval").body
        for k, inner in enumerate(node.args):
            value = _literal(ast.unparse(inner))
            if value is _NO or isinstance(value, (dict, list, tuple, set)):
                continue
            for new, how in alternatives(value, [], False)[:REBUILT]:
                changed = ast.Call(node.func, [parse(repr(new), mode="eval").body if j == k else a for j, a in enumerate(node.args)], node.keywords)
                text = ast.unparse(changed)
                args = tuple(text if str(i) == slot else a for i, a in enumerate(seed.args))
                kwargs = tuple((name, text if name == slot else v) for name, v in seed.kwargs)
                out.append(Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                                f"{seed.src} with {slot_name(slot)} {src} -> {text} ({how}, inside its building call)", seed.consume))  # fmt: skip
    return out


def _other_type(value: object) -> object:
    """An equal value of another type (``0`` -> ``0.0``, a list -> a tuple), or ``_NO``."""
    if isinstance(value, bool):
        return _NO
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return (tuple if isinstance(value, list) else list)(value)
    return _NO


def retyped(seed: Call) -> list[Call]:
    """The seed with every literal argument an equal value of another type at once: a rule keyed on
    an argument's type or its text (``str(maxsplit) in ('0', ...)``) next to code that converts it
    (``int(maxsplit)``, ``list(src)``) behaves otherwise only where several arguments change together."""
    def other(src: str) -> str:
        value = _literal(src)
        new = _other_type(value) if value is not _NO else _NO
        return repr(new) if new is not _NO else src

    args = tuple(other(a) for a in seed.args)
    kwargs = tuple((k, other(v)) for k, v in seed.kwargs)
    if args == seed.args and kwargs == seed.kwargs:
        return []
    return [Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                 f"{seed.src} with every argument an equal value of another type", seed.consume)]  # fmt: skip


def missing_keys(seed: Call) -> list[Call]:
    """Each dict argument as a ``defaultdict(str)``, with its items and without its first one: a
    mapping that answers missing keys itself, which code that copies it into a plain dict (``**map``)
    loses (markupsafe's ``format_map``)."""
    out = []
    slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
    for slot, src in slots:
        value = _literal(src)
        if not isinstance(value, dict) or not value:
            continue
        for items, how in ((value, "as a defaultdict(str)"), (dict(list(value.items())[1:]), "as a defaultdict(str) without its first key")):
            text = f"defaultdict(str, {items!r})"
            args = tuple(text if str(i) == slot else a for i, a in enumerate(seed.args))
            kwargs = tuple((k, text if k == slot else v) for k, v in seed.kwargs)
            out.append(Call(seed.target, seed.func, args, kwargs, (*seed.imports, "from collections import defaultdict"), seed.test_id,
                            "variant", f"{seed.src} with {slot_name(slot)} {how}", seed.consume))  # fmt: skip
    return out


def slot_name(slot: str) -> str:
    return f"argument {int(slot) + 1}" if slot.isdigit() else f"{slot}="


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


@dataclass
class Replay:
    """Standalone calls and what gold did on each."""

    calls: list[Call] = field(default_factory=list)
    gold: dict[str, dict] = field(default_factory=dict)  # key -> the driver's one observation
    observed: int = 0  # calls the tests made
    generated: int = 0  # calls varied or read from documents
    unstable: int = 0  # calls gold answered differently in two replays, left out
    error: str = ""


# ============================================================================================ session


def call_program(call: Call, key: str) -> Program:
    steps = [Step("exec", line) for line in call.imports] + [Step("observe", call.src, True)]
    return Program(key=key, test_id=call.test_id, test_file="", cls=None, method="", steps=steps, how=call.how)


def _outcome(results: Mapping[str, list[dict]], key: str, call: Call) -> dict | None:
    """The driver's observation of the call itself (None when an import before it failed)."""
    at = len(call.imports)
    return next((o for o in results.get(key, []) if o.get("step") == at), None)


@dataclass
class Context:
    """What the observation engine needs from the trees, read once per task."""

    watched: list[str]  # path::qualname
    documents: dict[str, str]  # where -> text: the issue, the changed modules (doctests), READMEs
    none_ok: dict[str, set[str]]
    expected: set[str]  # exception types the tests or the issue expect
    fail_to_pass: list[str]
    endings: list[str] = field(default_factory=list)  # short string literals of the functions gold changed


def context(task: Task, tree: Path, test_sources: Mapping[str, str], fail_to_pass: Sequence[str]) -> Context:
    watched = targets(task, tree, test_sources, fail_to_pass)
    documents = {"the issue": task.problem_statement}
    changed: dict[str, str] = {}
    endings: list[str] = []
    with workspace(task, tree) as ws:
        if ws is not None:
            changed = {p: t for p, t in ws.new.items() if t is not None and p.endswith(".py") and p not in test_sources}
            endings = [e for p in changed for e in changed_literals(p, ws.old.get(p), ws.new.get(p))]
            documents |= {f"{p} (docstrings)": t for p, t in changed.items()}
            for readme in sorted(ws.root.glob("README*"))[:2]:
                documents[readme.name] = readme.read_text(errors="replace")
    expected = expected_exceptions(test_sources.values(), task.problem_statement)
    return Context(watched, documents, none_defaults(changed, watched), expected, list(fail_to_pass), endings[:MAX_ENDINGS])


class ObservationSession:
    """Gold's side for one task (an observed run of the suite and one replay of every call), compared
    with any number of other patches (one replay each, plus two single-call replays to confirm a
    difference)."""

    def __init__(self, task: Task, backend: Backend, ctx: Context, values: Sequence[object], *, budget: int = MAX_CALLS) -> None:
        self.task, self.backend, self.ctx, self.values, self.budget = task, backend, ctx, list(values), budget
        self.rows: list[dict] = []
        self.paths: list[str] = []
        self._gold: Replay | None = None
        self.runs = 0
        self.seconds = 0.0  # spent on this task so far

    def replay(self, patch: str, calls: Sequence[tuple[str, Call]]) -> dict[str, list[dict]]:
        progs = [call_program(call, key) for key, call in calls]
        self.runs += 1
        got = run_programs(self.task, self.backend, patch, progs, [], paths=self.paths, timeout_s=REPLAY_TIMEOUT_S,
                           program_timeout_s=CALL_TIMEOUT_S)  # fmt: skip
        return got.results

    def gold(self) -> Replay:
        if self._gold is None:
            replay = Replay()
            if self.ctx.watched:
                self.rows, replay.error = observe(self.task, self.backend, self.task.answer.gold_patch, self.ctx.watched)
                self.runs += 1
            seeds = prioritised(seeds_from_records(self.rows), self.ctx.fail_to_pass)[: self.budget // 2]
            one_per_target = list({r["target"]: r for r in self.rows if r.get("call")}.values())
            documented = documented_calls(self.ctx.documents, one_per_target, iterators(self.rows))
            room = max(self.budget - len(seeds) - len(documented), 0)
            replay.calls = _unique([*seeds, *documented, *variations([*seeds, *documented], self.values, self.ctx.none_ok, room, self.ctx.fail_to_pass, self.ctx.endings)])[: self.budget]
            replay.observed = sum(c.source == "observed" for c in replay.calls)
            replay.generated = len(replay.calls) - replay.observed
            self.paths = list(dict.fromkeys(import_root(r["file"], r["target"].partition(":")[0]) for r in self.rows))
            if replay.calls:
                first = self._outcomes(self.task.answer.gold_patch, replay.calls)
                again = self._outcomes(self.task.answer.gold_patch, replay.calls)
                # a call gold answers differently twice (random jitter, time, addresses) tells nothing
                replay.gold = {key: o for key, o in first.items() if key in again and behaviour(again[key]) == behaviour(o)}
                replay.unstable = len(first) - len(replay.gold)
            self._gold = replay
        return self._gold

    def _outcomes(self, patch: str, calls: Sequence[Call]) -> dict[str, dict]:
        keyed = [(f"call{i}", c) for i, c in enumerate(calls)]
        results = self.replay(patch, keyed)
        return {key: o for key, call in keyed if (o := _outcome(results, key, call)) is not None}

    def distinguish(self, patch: str) -> Differential:
        started = time.monotonic()
        try:
            return self._distinguish(patch)
        finally:
            self.seconds += time.monotonic() - started

    def _distinguish(self, patch: str) -> Differential:
        if self.seconds >= WALL_BUDGET_S:
            return Differential(None, 0, f"observation: the task's budget ({WALL_BUDGET_S:.0f} s) is spent")
        gold = self.gold()
        counts = {"observed": gold.observed, "generated": gold.generated}
        if not gold.gold:
            why = gold.error or ("no target of gold's patch was watched" if not self.ctx.watched else "the tests made no call with evaluable arguments into gold's changed functions")
            return Differential(None, 0, f"observation: {why}", **counts)
        other = self._outcomes(patch, gold.calls)
        tried, confirmations = 0, 0
        for i, call in enumerate(gold.calls):  # the tests' own calls first, then the generated ones
            key = f"call{i}"
            if key not in gold.gold or key not in other:
                continue
            tried += 1
            g, o = behaviour(gold.gold[key]), behaviour(other[key])
            if not differs(g, o, self.ctx.expected):
                continue
            confirmations += 1
            if self._confirmed(patch, call, g, o):
                found = DistinguishingInput(
                    test_id=call.test_id, how=call.how, setup=list(call.imports), call=call.src, gold=g, other=o,
                    literal=gold.gold[key].get("literal", "") or "", target=call.target,
                    source=call.source,
                    args=list(call.args), kwargs=dict(call.kwargs),
                )  # fmt: skip
                return Differential(found, tried, f"observation: {call.how}", **counts)
            if confirmations >= MAX_CONFIRMATIONS:
                break
        unusable = sum(1 for row in self.rows if not row.get("call"))
        note = f"; {unusable} observed calls have no evaluable arguments" if unusable else ""
        note += f"; {gold.unstable} calls left out, gold answers them differently each time" if gold.unstable else ""
        return Differential(None, tried, f"observation: none of {tried} calls ({gold.observed} observed, {gold.generated} generated) "
                            f"behaves unlike gold in contract{note}", **counts)  # fmt: skip

    def _confirmed(self, patch: str, call: Call, gold: Behaviour, other: Behaviour) -> bool:
        """The call alone, in a fresh sandbox on each tree, behaves as in the batch: no state left by an
        earlier call, no flake."""
        again = [(patch_side, self._outcomes(p, [call]).get("call0")) for patch_side, p in (("gold", self.task.answer.gold_patch), ("other", patch))]
        seen = {side: behaviour(o) if o is not None else None for side, o in again}
        return seen["gold"] == gold and seen["other"] == other
