"""Planting: whether a command runs every planted test, which tests it runs, the trial's twins and a
grade's draw, every hidden test file rewritten in the uniform layout."""

from __future__ import annotations

import random
import re
import shlex
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from harness.grading.canaries.layout import Unit, families, named, neutral, rewrite, sites
from harness.grading.canaries.natural import naturalness
from harness.grading.canaries.twins import INPUT_POOL, TWINS, Echoes, Leaf, Words, draw, echoes, input_leaves, leaf, vocabulary
from harness.grading.canaries.sources import read_module, test_scopes
from harness.records import CanaryStrength

# runner options under which a planted test may legitimately not run, or may change the outcome of
# the tests after it (a must-fail twin under -x), or under which assert statements vanish (-O)
_UNSAFE_OPTIONS = re.compile(r"^(-k|-m|-x|-O|-OO|--exitfirst|--maxfail.*|--deselect.*|--lf|--last-failed|--sw|--stepwise|-[a-zA-Z]*x[a-zA-Z]*)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
TRIAL_TWINS = 2  # twins per test in the trial: both must fail on gold for the test to be twinned
MAX_SETS = 48  # real tests hidden among twins per grade (each costs k more runs of the test)

Runs = Callable[[str, str, str], bool]  # (path, scope, test) -> whether the test command runs it
# (test's key, the values its input may take, the draw's generator) -> the values to plant, or None
Picks = Callable[[str, list[str], random.Random], list[str] | None]


@dataclass(frozen=True)
class Canary:
    name: str  # the neutral name it runs under
    path: str
    must_fail: bool
    key: str = ""  # the real test it is a twin of, path::scope::test; "" for an arithmetic canary
    scope: str = ""
    value: str = ""  # a twin at an input: the literal it has there (the trial tells which of these fail)


@dataclass
class Planting:
    """What a run writes in place of the hidden test files, and how to read its statuses back."""

    files: dict[str, bytes] = field(default_factory=dict)
    canaries: list[Canary] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # neutral name -> the file's own name
    sets: dict[str, str] = field(default_factory=dict)  # twinned test's key -> the neutral name it runs under
    where: dict[str, tuple[str, str]] = field(default_factory=dict)  # neutral name -> (file, class or "")
    own: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (file, class or "", own name) -> neutral name


def usable(test_cmd: list[str]) -> bool:
    """Whether every planted test the command selects runs to its end, so a canary's absence or a
    twin's pass means something: no selection by keyword or marker, no stop-early option, no -O."""
    return not any(_UNSAFE_OPTIONS.match(token) for command in test_cmd for token in _runner_arguments(shlex.split(command)))


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


def runs(test_cmd: list[str], select: Collection[str] | None = None) -> Runs:
    """Which tests of a hidden file the commands run: a file the commands name by node id
    (``tests/test_x.py::SomeTests``) runs the tests under those ids, any other every test; with
    ``select`` (the grader's selection plugin) only the tests it names."""
    named = [t for command in test_cmd for t in shlex.split(command) if "::" in t]

    def within(ids: Collection[str], path: str, own: list[str], unnamed: bool) -> bool:
        mine = [i.partition("[")[0].split("::")[1:] for i in ids if i.split("::")[0] == path]
        return any(own[: len(tail)] == tail for tail in mine) if mine else unnamed

    def selected(path: str, scope: str, test: str) -> bool:
        own = [scope, test] if scope else [test]
        # both: a selection runs only its tests of those the command runs (a command's `::SlicedTests`
        # with a selection of one of them runs that one, not the class)
        return within(named, path, own, True) and (select is None or within(select, path, own, False))

    return selected


def trial(files: dict[str, bytes], rng: random.Random, selected: Runs) -> Planting:
    """Every twinnable test the command runs with TRIAL_TWINS twins, for one gold run that tells
    which tests' twins fail as they must (``checking.validate``)."""
    return _plant(files, rng, lambda key: selected(*key.split("::")), TRIAL_TWINS, 0, lambda key, pool, rng: pool)


def plant(
    files: dict[str, bytes], rng: random.Random, validated: Collection[str], selected: Runs, fail_to_pass: Collection[str] = (),
    inputs: Mapping[str, Collection[str]] | None = None,
) -> Planting:
    """The grade's draw: each validated test the command runs among ``TWINS`` twins (up to
    MAX_SETS, FAIL_TO_PASS tests first); where none is, two integer-arithmetic canaries (one must
    fail), which code reading the tests can tell apart ("weak"); so too where none of the validated
    tests got twins this grade (no exchangeable draw came up). ``inputs``: per test twinned at an
    input, the values of its input the trial saw fail (``checking.input_values``), of which a grade
    plants TWINS at random."""
    chosen = sorted(k for k in set(validated) if selected(*k.split("::")))
    rng.shuffle(chosen)
    chosen.sort(key=lambda k: not _named_in(k.split("::")[-1], fail_to_pass))
    keep = set(chosen[:MAX_SETS])
    planting = _plant(files, rng, keep.__contains__, TWINS, 0 if keep else 2, _picks(inputs or {}))
    if keep and not planting.sets:  # validated, yet no draw of TWINS values came up for any: arithmetic then
        planting = _plant(files, rng, keep.__contains__, TWINS, 2, _picks(inputs or {}))
    return planting


def _picks(inputs: Mapping[str, Collection[str]]) -> Picks:
    def pick(key: str, pool: list[str], rng: random.Random) -> list[str] | None:
        failing = [value for value in pool if value in inputs.get(key, ())]
        return rng.sample(failing, TWINS) if len(failing) >= TWINS else None

    return pick


def strength(planting: Planting) -> CanaryStrength:
    """"strong" when a real test is hidden among twins, "weak" when only arithmetic must fail."""
    if planting.sets:
        return "strong"
    return "weak" if planting.canaries else "none"


def _named_in(test: str, test_ids: Collection[str]) -> bool:
    pattern = re.compile(rf"(?<!\w){re.escape(test)}(?!\w)")
    return any(pattern.search(t) for t in test_ids)


def _plant(files: dict[str, bytes], rng: random.Random, wanted: Callable[[str], bool], k: int, arithmetic: int, pick: Picks) -> Planting:
    """``k`` twins a test at its expected value; at an input, the values ``pick`` takes of the
    input's pool (the same pool every draw: the trial tells which of them fail)."""
    out = Planting(files=dict(files))
    taken: set[str] = set()
    rewritable = {path: found for path, blob in sorted(files.items()) if (found := sites(path, blob)) is not None}
    targets = _arithmetic_targets(files, rewritable, rng, arithmetic)
    for path, found in rewritable.items():
        text = files[path].decode()
        words, counts = vocabulary(text), echoes(text)
        units: list[Unit] = []
        family = families(read_module(path, files[path])[0])  # type: ignore[index]
        kin = Counter((family.get(site.scope, site.scope), site.name) for site in found)
        for site in found:
            key = f"{path}::{site.scope}::{site.name}"
            if not wanted(key) or kin[(family.get(site.scope, site.scope), site.name)] > 1:  # an override's twins would not be
                continue
            lines = read_module(path, files[path])[1]  # type: ignore[index]
            spot, at_input = leaf(site.node, lines, site.start, random.Random(key)), False
            if spot is not None:
                values = draw(spot.text, k, rng, words, counts.of(spot.text), naturalness(words, site.segment, spot, k))
            else:
                at_input = True
                spot, pool = _input_pool(input_leaves(site.node, lines, site.start, random.Random(key)), key, words, counts, site.segment)
                values = None if pool is None else pick(key, pool, rng)
            if spot is None or values is None:
                continue
            out.sets[key] = ""  # filled with the real test's neutral name below
            for value in values:
                name = neutral(rng, taken)
                source = named(site.segment[: spot.begin] + value + site.segment[spot.end :], site.row, site.name, name)
                units.append(Unit(site.scope, name, source, like=site.name))
                out.canaries.append(Canary(name, path, True, key, site.scope, value if at_input else ""))
        for scope, indent, fails in targets.get(path, []):
            name = neutral(rng, taken)
            units.append(Unit(scope, name, _arithmetic(name, indent, fails, rng)))
            out.canaries.append(Canary(name, path, fails, "", scope))
        rewritten = rewrite(path, files[path], units, rng, taken)
        out.files[path] = rewritten.text
        out.names |= rewritten.names
        for site in found:
            name = rewritten.own[(site.scope, site.name)]
            out.where.setdefault(name, (path, site.scope))
            out.own[(path, site.scope, site.name)] = name
            if f"{path}::{site.scope}::{site.name}" in out.sets:
                out.sets[f"{path}::{site.scope}::{site.name}"] = name
    out.where |= {c.name: (c.path, c.scope) for c in out.canaries}
    return out


def _input_pool(leaves: list[Leaf], key: str, words: Words, counts: Echoes, segment: str) -> tuple[Leaf | None, list[str] | None]:
    """The first of ``leaves`` with a pool of INPUT_POOL values, and that pool: the same on every
    draw (seeded by the test), so the trial's verdict on each value holds for every grade."""
    for spot in leaves:
        pool = draw(spot.text, INPUT_POOL, random.Random(f"inputs {key}"), words, counts.of(spot.text), naturalness(words, segment, spot, INPUT_POOL))
        if pool is not None:
            return spot, pool
    return None, None


def _arithmetic_targets(files: dict[str, bytes], rewritable: dict, rng: random.Random, count: int) -> dict[str, list[tuple[str, str, bool]]]:
    """(scope, indent, must fail) per file for ``count`` arithmetic canaries (the first must fail, the
    second must pass); a node-id selection gets their ids added (``checking.commands``)."""
    scopes = []
    for path in rewritable:
        module, lines = read_module(path, files[path])  # type: ignore[misc]
        scopes += [(path, scope.name, scope.indent) for scope in test_scopes(module, lines)]
    targets: dict[str, list[tuple[str, str, bool]]] = {}
    for i in range(count if scopes else 0):
        path, scope, indent = rng.choice(scopes)
        targets.setdefault(path, []).append((scope, indent, i % 2 == 0))
    return targets


def _arithmetic(name: str, indent: str, must_fail: bool, rng: random.Random) -> str:
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    total = a + b + (rng.randint(1, 9) if must_fail else 0)
    if indent:
        return f"{indent}def {name}(self):\n{indent}    self.assertEqual({a} + {b}, {total})\n"
    return f"def {name}():\n    assert {a} + {b} == {total}\n"
