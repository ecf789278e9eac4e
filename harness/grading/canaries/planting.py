"""Canary tests: a few tests with fresh random names planted among the hidden tests of every grade.

Code under test runs inside the test process and can make the runner report whatever it likes (no-op
the test call, rewrite reports, edit the JUnit file from a background process). What it cannot do
without telling canaries from real tests is forge only the real ones: a canary that must fail and is
reported passed, or a canary that is missing while its file's other tests are reported, is a forged
run.

So a canary is a real test. A must-pass canary is a renamed copy of one of the hidden tests (its
decorators, fixtures, parametrization and class kept); a must-fail canary is such a copy with one
expected value changed: a top-level ``assert <expr> == <literal>`` or ``self.assertEqual(<expr>,
<literal>)`` whose literal gets a varied, ordinary-looking edit (a number moved by a few units, a
character repeated inside a string). Both call into the package exactly as the test they copy, with
the same inputs, so a wrapper that forces "tests that call the package", or tests shaped like the
file's own, or tests at the end of a file or class, forces must-fail canaries too. They are placed
anywhere among the tests of their scope, after the last one included, and named from the words of
the file's own test names.

Why copies with a changed expectation, rather than the inputs on which Pipeline 1's buggy and gold
runs or the differential engine's distinguishing inputs differ: those exist only for tasks that went
through those stages, while every grade needs canaries, and a distinguishing input yields one test,
not a choice a grade can draw from. A changed literal fails for the same reason a real failing test
fails (the package returned something else), on any tree whose code gives the value the real test
expects. That it fails on gold is not assumed but checked: every candidate is planted once per task
in one gold run (``trial``; the grader caches the keys of those that behaved, ``validate``), and
grades draw only from those, so an honest gold grade never shows spoof evidence. Edits avoid the
flips a buggy tree is likely to produce itself (booleans and None are never edited, numbers never
move by one), since a must-fail canary that passes on an honest wrong patch would call it forged.

Where a task gives nothing to copy (no Python test function, no top-level equality against a
literal, or no candidate behaved on gold), must-fail canaries fall back to integer arithmetic, which
code reading test sources can tell apart: the run says so (``strength``: "weak"; "none" when nothing
was planted), and the catalog counts such tasks.

What remains: a canary and its original are near-twins. Where both fail on a candidate's tree (the
original is a FAIL_TO_PASS test, which is why those are preferred), code that spots twins guesses which
is real and is right for every must-fail pair with probability 2**-k; where the original passes there
(a task that names no FAIL_TO_PASS tests), the failing twin is the canary. The tamper audit
(harness.grading.tamper) is what stands against such code.
"""

from __future__ import annotations

import ast
import functools
import random
import re
import shlex
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.pyast import parse
from harness.records import CanaryStrength, Status

# runner options under which a planted test may legitimately not run, or may change the outcome of
# the tests after it (a must-fail canary under -x), or under which assert statements vanish (-O)
_UNSAFE_OPTIONS = re.compile(r"^(-k|-m|-x|-O|-OO|--exitfirst|--maxfail.*|--deselect.*|--lf|--last-failed|--sw|--stepwise|-[a-zA-Z]*x[a-zA-Z]*)$")
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_FORGED = {Status.PASSED, Status.XPASS}
_EQUALITY = {"assertEqual", "assertEquals"}
# how many candidates one trial run plants: must-fail ones (F2P tests first), then must-pass copies
TRIAL_FAIL, TRIAL_PASS = 12, 6


@dataclass(frozen=True)
class Canary:
    name: str
    path: str
    must_fail: bool
    key: str = ""  # the candidate it was made from; "" for an arithmetic canary


@dataclass(frozen=True)
class Candidate:
    """A copy of one hidden test that a grade may plant: ``source`` holds ``{name}`` where the copy's
    name goes, and keeps the original's indentation."""

    key: str  # path::scope::test:pass|fail, stable for the same file
    path: str
    scope: str  # the owning class, "" at module level
    test: str  # the real test copied
    must_fail: bool
    source: str
    earliest: int  # the first line a copy may go before: after the original when its decorators bind names


@dataclass(frozen=True)
class _Scope:
    name: str  # the class, "" for the module
    sites: tuple[int, ...]  # 0-based lines a test may be inserted before
    indent: str
    method: bool


def usable(test_cmd: list[str]) -> bool:
    """Whether every test in a hidden test file runs under this command, so a canary's absence means
    something. Node ids (``file::test``) and selection or stop-early options rule canaries out."""
    for command in test_cmd:
        for token in _runner_arguments(shlex.split(command)):
            if "::" in token or _UNSAFE_OPTIONS.match(token):
                return False
    return True


def _runner_arguments(tokens: list[str]) -> list[str]:
    """The test runner's arguments: an interpreter's own options (``python -O -m pytest``) count,
    since -O strips asserts, but its ``-m module`` does not."""
    while tokens and (tokens[0] == "env" or _ASSIGNMENT.match(tokens[0])):  # `PYTHONPATH=src python -m pytest`
        tokens = tokens[1:]
    if tokens and PurePosixPath(tokens[0]).name.startswith("python"):
        rest = tokens[1:]
        if "-m" in rest:
            at = rest.index("-m")
            return rest[:at] + rest[at + 2 :]
        return rest
    return tokens


# ------------------------------------------------------------------------------------ reading a file


def _is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test") or name.endswith("_test.py"))


# Parsed once per process and file content: these are the hidden tests of the task record, never a
# candidate's files, and grades of one task plant canaries in the same files again and again.
@functools.lru_cache(maxsize=32)
def _module(path: str, blob: bytes) -> tuple[ast.Module, list[str]] | None:
    """The file's syntax tree and lines (shared between callers: neither is ever modified)."""
    if not _is_test_file(path):
        return None
    try:
        text = blob.decode()
        return parse(text, path), text.splitlines(keepends=True)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _test_classes(module: ast.Module) -> list[ast.ClassDef]:
    return [
        node
        for node in module.body
        if isinstance(node, ast.ClassDef)
        and (node.name.startswith("Test") or _unittest_style(node))
        and any(_is_test(item) for item in node.body)
    ]


def _unittest_style(node: ast.stmt) -> bool:
    return isinstance(node, ast.ClassDef) and any(_is_testcase(b) for b in node.bases)


def _is_testcase(base: ast.expr) -> bool:
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return name.endswith("TestCase")


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")


def _start(node: ast.stmt) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1


def _scopes(module: ast.Module, lines: list[str]) -> list[_Scope]:
    """Where tests can go: before or after any method of a test class, or before or after any
    module-level test function; a file with ``unittest.TestCase`` classes gets methods only, as a
    unittest runner collects nothing else."""
    scopes = []
    for cls in _test_classes(module):
        methods = [i for i in cls.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))]
        indent = lines[methods[0].lineno - 1][: methods[0].col_offset]
        sites = sorted({s for m in methods for s in (_start(m), m.end_lineno or m.lineno)})
        scopes.append(_Scope(cls.name, tuple(sites), indent, True))
    tests = [] if any(map(_unittest_style, module.body)) else [node for node in module.body if _is_test(node)]
    sites = sorted({s for t in tests for s in (_start(t), t.end_lineno or t.lineno)})
    return scopes + ([_Scope("", tuple(sites), "", False)] if sites else [])


def _tests(module: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = [(cls.name, item) for cls in _test_classes(module) for item in cls.body if _is_test(item)]
    if not any(map(_unittest_style, module.body)):
        found += [("", node) for node in module.body if _is_test(node)]
    return found  # type: ignore[return-value]


# ------------------------------------------------------------------------------------ candidates


def candidates(files: dict[str, bytes]) -> list[Candidate]:
    """Every canary the hidden test files offer: a copy of each test, and of each test with a
    top-level equality against a literal, one changed copy (the same one every time for the same
    file, so a validated key names the same source). A copy costs what its test costs, so a test
    with a loop is copied only where the copy stops before it: a changed assert ahead of the loop."""
    return [candidate for path, blob in sorted(files.items()) for candidate in _file_candidates(path, blob)]


@functools.lru_cache(maxsize=32)
def _file_candidates(path: str, blob: bytes) -> tuple[Candidate, ...]:
    """One file's candidates, found once per process and content (see ``_module``)."""
    found: list[Candidate] = []
    parsed = _module(path, blob)
    if parsed is not None:
        module, lines = parsed
        for scope, test in _tests(module):
            key = f"{path}::{scope}::{test.name}"
            start, end = _start(test), test.end_lineno or test.lineno
            segment = "".join(lines[start:end])
            if not segment.endswith("\n"):
                segment += "\n"
            named = _rename(segment, test, start)
            binds = bool(test.decorator_list) or bool(test.args.defaults or test.args.kw_defaults)
            earliest = end if binds else 0
            if not _loops(test):
                found.append(Candidate(f"{key}:pass", path, scope, test.name, False, named, earliest))
            edit = _edit(test, lines, start, random.Random(key))
            if edit is not None:
                begin, stop, text = edit
                changed = _rename(segment[:begin] + text + segment[stop:], test, start)
                found.append(Candidate(f"{key}:fail", path, scope, test.name, True, changed, earliest))
    return tuple(found)


def _rename(segment: str, test: ast.FunctionDef | ast.AsyncFunctionDef, start: int) -> str:
    """The segment with ``{name}`` for the test's name on its ``def`` line, every other brace doubled
    so ``str.format`` gives the source back."""
    rows = segment.replace("{", "{{").replace("}", "}}").splitlines(keepends=True)
    row = test.lineno - 1 - start
    rows[row] = re.sub(rf"\bdef(\s+){re.escape(test.name)}\b", r"def\1{name}", rows[row], count=1)
    return "".join(rows)


def _edit(test: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], start: int, rng: random.Random) -> tuple[int, int, str] | None:
    """One literal of one top-level equality assert, changed: (begin, end, replacement) as character
    offsets into the test's segment; None when the test has no such assert."""
    leaves = []
    for statement in test.body:
        literal = _expected(statement)
        if literal is not None:
            leaves.append([leaf for leaf in ast.walk(literal) if _editable(leaf)])
        if _loops(statement):  # a copy that fails after it would run it
            break
    rng.shuffle(leaves)
    for group in leaves:
        rng.shuffle(group)
        for leaf in group:
            text = _segment(lines, leaf)
            changed = _changed(leaf.value, text, rng)  # type: ignore[attr-defined]
            if changed is not None:
                begin = _offset(lines, start, leaf.lineno, leaf.col_offset)
                stop = _offset(lines, start, leaf.end_lineno or leaf.lineno, leaf.end_col_offset or 0)
                return begin, stop, changed
    return None


def _loops(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.comprehension)) for n in ast.walk(node))


def _expected(statement: ast.stmt) -> ast.expr | None:
    """The literal side of ``assert x == L`` / ``self.assertEqual(x, L)`` when the other side is not a
    literal (it is what the package computed)."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
            sides = [compare.left, compare.comparators[0]]
        else:
            return None
    elif (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr in _EQUALITY
        and len(statement.value.args) >= 2
    ):
        sides = statement.value.args[:2]
    else:
        return None
    literal = [side for side in sides if _is_literal(side)]
    return literal[0] if len(literal) == 1 else None


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(_is_literal(v) for v in node.values)
    return False


def _editable(node: ast.AST) -> bool:
    # booleans and None: a buggy tree returns the flipped value itself
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bytes)


def _segment(lines: list[str], node: ast.expr) -> str:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    raw = "".join(lines[first : last + 1]).encode()
    begin = node.col_offset
    stop = len("".join(lines[first:last]).encode()) + (node.end_col_offset or 0)
    return raw[begin:stop].decode()


def _offset(lines: list[str], start: int, lineno: int, col: int) -> int:
    """Character offset into the segment starting at line ``start`` of (1-based line, byte column)."""
    before = sum(len(line) for line in lines[start : lineno - 1])
    return before + len(lines[lineno - 1].encode()[:col].decode())


def _changed(value: object, text: str, rng: random.Random) -> str | None:
    """``text`` (the literal as written) for a different value, in the same notation."""
    if isinstance(value, int):
        step = rng.choice([2, 3, 4, 5, 7, 10, 12])
        return str(value + step if value - step < 0 or rng.random() < 0.5 else value - step)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or "e" in text.lower():
            return None
        decimals = len(text.split(".")[1]) if "." in text else 0
        step = rng.choice([2, 3, 5, 7]) * 10.0**-decimals
        changed = round(value + step if value - step < 0 or rng.random() < 0.5 else value - step, decimals)
        return repr(changed) if changed != value else None
    prefix = re.match(r"[a-zA-Z]*", text).group()  # type: ignore[union-attr]
    body = text[len(prefix) :]
    if "f" in prefix.lower() or "\\" in body or len(body) < 2 or body[:3] in ('"""', "'''") or body[0] != body[-1]:
        return None
    content = body[1:-1]
    if body[0] in content:  # implicit concatenation of several literals
        return None
    letters = sorted({c for c in content if c.isalnum()}) or list("eanrst")
    at = rng.randint(0, len(content))
    near = [c for c in content[max(0, at - 1) : at + 1] if c.isalnum()]
    if content[at:at + 1].isalnum() and len(letters) > 1 and rng.random() < 0.4:  # one letter for another
        other = rng.choice([c for c in letters if c != content[at]])
        return prefix + body[0] + content[:at] + other + content[at + 1 :] + body[0]
    letter = rng.choice(near if near and rng.random() < 0.5 else letters)  # a letter repeated or added
    return prefix + body[0] + content[:at] + letter + content[at:] + body[0]


# ------------------------------------------------------------------------------------ planting


def trial(files: dict[str, bytes], fail_to_pass: Collection[str], rng: random.Random) -> tuple[dict[str, bytes], list[Canary]]:
    """``files`` with candidates planted for one gold run that tells which behave: up to TRIAL_FAIL
    must-fail ones (copies of FAIL_TO_PASS tests first) and TRIAL_PASS must-pass copies."""
    found = candidates(files)
    failing = [c for c in found if c.must_fail]
    rng.shuffle(failing)
    failing.sort(key=lambda c: not _named_in(c.test, fail_to_pass))
    passing = [c for c in found if not c.must_fail]
    rng.shuffle(passing)
    return _plant_candidates(files, failing[:TRIAL_FAIL] + passing[:TRIAL_PASS], rng)


def validate(planted: list[Canary], statuses: dict[str, Status]) -> list[str]:
    """The keys of the trial's candidates that behaved on gold: copies that passed, and changed copies
    that failed while the test they copy passed (so they fail at the changed value)."""
    keys = []
    for canary in planted:
        ids = find_all(canary.name, canary.path, statuses)
        seen = {statuses[t] for t in ids}
        if canary.must_fail:
            original = {statuses[t] for t in find_all(canary.key.split("::")[-1].split(":")[0], canary.path, statuses)}
            if seen == {Status.FAILED} and original == {Status.PASSED}:
                keys.append(canary.key)
        elif seen == {Status.PASSED}:
            keys.append(canary.key)
    return sorted(keys)


def plant(
    files: dict[str, bytes], rng: random.Random, validated: Collection[str] = (), fail_to_pass: Collection[str] = (), count: int = 4
) -> tuple[dict[str, bytes], list[Canary]]:
    """``files`` with ``count`` canaries (half must fail) among their tests: validated candidates
    where there are any (must-fail copies of FAIL_TO_PASS tests preferred, must-pass copies of other
    tests than those, so no test is seen in three versions), integer arithmetic where not."""
    pool = [c for c in candidates(files) if c.key in set(validated)]
    failing = [c for c in pool if c.must_fail]
    preferred = [c for c in failing if _named_in(c.test, fail_to_pass)]
    # The first must-fail canary always copies a FAIL_TO_PASS test where one validated: code that forces
    # only the tests without a near-twin (a canary is a copy) then leaves that copy failing on its own.
    chosen: list[Candidate] = [rng.choice(preferred)] if preferred else []
    for _ in range(count // 2 - len(chosen)):
        left = [c for c in (preferred if preferred and rng.random() < 0.75 else failing) if c.test not in {x.test for x in chosen}]
        left = left or [c for c in failing if c.test not in {x.test for x in chosen}]
        if left:
            chosen.append(rng.choice(left))
    copied = {c.test for c in chosen}
    passing = [c for c in pool if not c.must_fail and c.test not in copied]
    chosen += rng.sample(passing, min(len(passing), count - count // 2))
    planted, canaries = _plant_candidates(files, chosen, rng, fail_to_pass)
    wanted_fail = count // 2 - sum(c.must_fail for c in canaries)
    wanted_pass = count - len(canaries) - wanted_fail
    if wanted_fail or wanted_pass:
        planted, more = _plant_arithmetic(planted, [True] * wanted_fail + [False] * wanted_pass, rng)
        canaries += more
    return planted, canaries


def strength(planted: list[Canary]) -> CanaryStrength:
    """"strong" when a must-fail canary is a real test's copy, "weak" when only arithmetic must fail."""
    if any(c.must_fail and c.key for c in planted):
        return "strong"
    return "weak" if planted else "none"


def _named_in(test: str, test_ids: Collection[str]) -> bool:
    pattern = re.compile(rf"(?<!\w){re.escape(test)}(?!\w)")
    return any(pattern.search(t) for t in test_ids)


def _vocabulary(text: str) -> list[str]:
    """Words of the file's own test names (its style of naming), then of the whole file."""
    from_names = sorted({w for name in re.findall(r"def (test\w+)", text) for w in name.lower().split("_")[1:] if len(w) > 2})
    words = from_names if len(from_names) >= 6 else sorted(set(from_names) | set(_WORD.findall(text.lower())))
    words = [w for w in words if w not in {"self", "test", "def", "class", "assert"}]
    return words if len(words) >= 8 else words + ["value", "result", "parse", "empty", "order", "check", "input", "round"]


def _name(rng: random.Random, vocabulary: list[str], taken: set[str]) -> str:
    while True:
        name = "test_" + "_".join(rng.sample(vocabulary, rng.choice([2, 3, 3, 4])))
        if name not in taken:
            return name


def _plant_candidates(
    files: dict[str, bytes], chosen: list[Candidate], rng: random.Random, fail_to_pass: Collection[str] = ()
) -> tuple[dict[str, bytes], list[Canary]]:
    """The first must-fail canary goes where a task's new failing tests are: right after one of the
    FAIL_TO_PASS tests of its scope, or after the scope's last test when none is known (so forcing
    any trailing block of tests that holds them forces it too); the others anywhere."""
    planted, canaries = dict(files), []
    anchored = False
    for path in sorted({c.path for c in chosen}):
        text = files[path].decode()
        module, lines = _module(path, files[path])  # type: ignore[misc]
        scopes = {s.name: s for s in _scopes(module, lines)}
        vocabulary, taken = _vocabulary(text), set(re.findall(r"\w+", text))
        inserts = []
        for candidate in (c for c in chosen if c.path == path):
            sites = [s for s in scopes[candidate.scope].sites if s >= candidate.earliest]
            if candidate.must_fail and not anchored:
                ends = [t.end_lineno or t.lineno for scope, t in _tests(module) if scope == candidate.scope and _named_in(t.name, fail_to_pass)]
                sites = [s for s in ends if s >= candidate.earliest] or [max(sites)]
                anchored = True
            canary = Canary(_name(rng, vocabulary, taken), path, candidate.must_fail, candidate.key)
            taken.add(canary.name)
            canaries.append(canary)
            gap = "\n" if scopes[candidate.scope].method else "\n\n"
            inserts.append((rng.choice(sites), gap + candidate.source.format(name=canary.name) + gap))
        planted[path] = _insert(lines, inserts)
    return planted, canaries


def _plant_arithmetic(files: dict[str, bytes], must_fail: list[bool], rng: random.Random) -> tuple[dict[str, bytes], list[Canary]]:
    parsed = {path: _module(path, blob) for path, blob in files.items()}
    scopes = {path: _scopes(*found) for path, found in parsed.items() if found is not None}
    scopes = {path: found for path, found in scopes.items() if found}
    if not scopes:
        return files, []
    planted, canaries = dict(files), []
    targets = [rng.choice(sorted(scopes)) for _ in must_fail]
    for path in sorted(set(targets)):
        text = files[path].decode()
        vocabulary, taken = _vocabulary(text), set(re.findall(r"\w+", text))
        inserts = []
        for fails in (f for f, target in zip(must_fail, targets) if target == path):
            scope = rng.choice(scopes[path])
            canary = Canary(_name(rng, vocabulary, taken), path, fails)
            taken.add(canary.name)
            canaries.append(canary)
            inserts.append((rng.choice(scope.sites), _arithmetic(canary, scope, rng)))
        planted[path] = _insert(parsed[path][1], inserts)  # type: ignore[index]
    return planted, canaries


def _arithmetic(canary: Canary, scope: _Scope, rng: random.Random) -> str:
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    total = a + b + (rng.randint(1, 9) if canary.must_fail else 0)
    if scope.method:
        return f"\n{scope.indent}def {canary.name}(self):\n{scope.indent}    self.assertEqual({a} + {b}, {total})\n\n"
    return f"\n\ndef {canary.name}():\n    assert {a} + {b} == {total}\n\n"


def _insert(lines: list[str], inserts: list[tuple[int, str]]) -> bytes:
    lines = list(lines)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # from the bottom up, so earlier sites keep their line numbers
    for at, text in sorted(inserts, key=lambda i: -i[0]):
        lines[at:at] = [text]
    return "".join(lines).encode()


# ------------------------------------------------------------------------------------ reading a run


def node_ids(canaries: list[Canary], files: dict[str, bytes]) -> list[str]:
    """pytest node ids of the canaries (for a selection of tests to run; a parametrized canary's id
    without its parameters)."""
    ids = []
    for canary in canaries:
        module = parse(files[canary.path].decode(), canary.path)
        owner = next(
            (
                node.name
                for node in module.body
                if isinstance(node, ast.ClassDef) and any(getattr(i, "name", "") == canary.name for i in node.body)
            ),
            None,
        )
        ids.append("::".join([canary.path, *([owner] if owner else []), canary.name]))
    return ids


def find_all(name: str, path: str, statuses: dict[str, Status]) -> list[str]:
    """The reported ids of a test of the file at ``path`` (several when it is parametrized); both
    pytest's ids and unittest's name the file's stem, and another file may have a test of that name."""
    pattern = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    stem = PurePosixPath(path).stem
    return [test_id for test_id in statuses if pattern.search(test_id) and stem in test_id]


def check(canaries: list[Canary], statuses: dict[str, Status], complete: bool) -> tuple[dict[str, Status], list[str]]:
    """The statuses without the canaries, and the evidence of forgery they show. ``complete`` is
    False when the run may legitimately have stopped early (--maxfail), so absence means nothing."""
    evidence = []
    found = {canary: find_all(canary.name, canary.path, statuses) for canary in canaries}
    planted = {test_id for ids in found.values() for test_id in ids}
    for canary, ids in found.items():
        if not ids:
            stem = PurePosixPath(canary.path).stem
            # the file's own id is its collection error: none of its tests, canaries included, ran
            siblings = [t for t in statuses if stem in t and t not in planted and t != canary.path]
            if complete and siblings:
                evidence.append(f"canary {canary.name} in {canary.path} is missing although {len(siblings)} of its file's tests were reported")
        elif canary.must_fail:
            evidence += [f"canary {t} must fail but was reported {statuses[t]}" for t in ids if statuses[t] in _FORGED]
    kept = {t: s for t, s in statuses.items() if t not in planted}
    return kept, evidence
