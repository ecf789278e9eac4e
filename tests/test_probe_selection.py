"""Change-impact test selection for probes (``probes.runner``): the gold-tree mapping of a probe's
diff, the coverage plugin, and grading with selection against grading in full.

* the mapping, on source text alone: a change inside a function body impacts the tests that ran the
  changed statement (or reached the point where code was inserted); anything else impacts every test;
* the coverage plugin under the host's pytest: per-test lines, and work that outlives a test (imports,
  session fixtures, module bodies run during a test) reported as global; a test that starts a process
  is flagged;
* a synthetic task in a bwrap sandbox: a probe changing a line only one test runs runs that test
  alone; a module-level change runs everything; a survivor decided by selection gets a full grade
  before a verdict may cite it, which stays the final word even when the coverage is wrong;
* probe sessions (``probes.session``), on both backends: probes graded in one prepared sandbox get the
  grade ``harness.grading.grader.grade`` gives them (reward, reason, statuses), a probe's files and what its
  tests wrote never reach the next probe, a looping probe times out, and a probe a session may not
  take (a protected path) goes to ``grade``;
* two sample tasks: every probe gets the same reward with selection in sessions as with a full grade
  of its own, with fewer executions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import TEST_LIMITS, fresh_listing, git, sampled, staged_diff
from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources.local import load_task_folder
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import grade
from harness.grading.shipping import PLUGINS
from harness.records import Pipeline1Result, Status, Task
from probes.generate import Candidate, plausible_wrong
from probes.runner import generate, run_probes
from probes.runner.coverage import GoldCoverage, gold_coverage, parse_coverage
from probes.runner.grading import with_timeout
from probes.runner.impact import ALL, changed_regions, impacted_tests
from probes.runner.plans import selection, selection_pays
from probes import pool as parking, session
from probes.pool import release_parked
from probes.pool import SessionPool
from harness.grading.commands import pytest_command
from probes.session import Stats

# ================================================================================ the mapping, on text

SOURCE = '''\
"""A module."""
import math

SCALE = 2


def area(r):
    """Doc."""
    if r < 0:
        raise ValueError("negative")
    return math.pi * r * r * SCALE


def total(xs):
    out = 0
    for x in xs:
        out += x
    return out


def lookup(key):
    if key:
        return SCALE
    return 0


def numbers(n):
    for i in range(n):
        yield i
'''


def _regions(new: str) -> list[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]] | None:
    found = changed_regions(SOURCE, new, "m.py")
    return None if found is ALL else sorted({(r.lines, r.calls) for r in found})


@pytest.mark.parametrize(
    ("what", "edit", "expected"),
    [
        ("a statement in a body: the tests that ran it", ("math.pi * r * r", "r * r * math.pi"), [(((11, 11),), ())]),
        ("an if header: the tests that ran the if", ("if r < 0:", "if r <= 0:"), [(((9, 10),), ())]),
        ("a branch body: the tests that ran that branch", ('("negative")', '("below zero")'), [(((10, 10),), ())]),
        ("inserted after a loop: the tests that ran the next statement", ("        out += x\n    return out", "        out += x\n    out += 0\n    return out"), [(((18, 18),), ())]),
        ("inserted at the end of a loop body: the tests that ran the last statement", ("        out += x\n", "        out += x\n        out -= 0\n"), [(((17, 17),), ())]),
        ("a comment: nothing", ("    out = 0\n", "    # start\n    out = 0\n"), []),
        ("a generator body: the tests that ran it", ("yield i", "yield i + 0"), [(((29, 29),), ())]),
        # a name that becomes local also breaks the unchanged `return SCALE`: every caller of lookup
        ("a name rescoped: every caller", ("    return 0\n", "    SCALE = 0\n    return SCALE\n"), [(((22, 24),), ((21, 24),))]),
    ],
)
def test_changes_inside_function_bodies_map_to_the_statements_that_ran(what: str, edit: tuple[str, str], expected: list) -> None:
    old, new = edit
    assert old in SOURCE
    assert _regions(SOURCE.replace(old, new, 1)) == expected, what


@pytest.mark.parametrize(
    ("what", "old", "new"),
    [
        ("module-level code", "SCALE = 2", "SCALE = 3"),
        ("an import", "import math", "import math as m2\nimport math"),
        ("a def line", "def total(xs):", "def total(xs, start=0):"),
        ("a docstring", '"""Doc."""', '"""Other doc."""'),
        ("a function no longer a generator", "        yield i\n", "        pass\n    return []\n"),
        ("a syntax error", "return out", "return out out"),
    ],
)
def test_changes_outside_function_bodies_impact_every_test(what: str, old: str, new: str) -> None:
    assert old in SOURCE
    assert _regions(SOURCE.replace(old, new, 1)) is None, what


def _coverage(**tests: set[int]) -> GoldCoverage:
    return GoldCoverage(
        usable=True, files=["m.py"], lines={t: {"m.py": lines} for t, lines in tests.items()},
        calls={t: {} for t in tests}, global_lines={"m.py": {1, 2, 4, 7, 14, 21, 27}}, global_calls={"m.py": {1}},
    )  # fmt: skip


def test_impacted_tests_from_coverage() -> None:
    cov = _coverage(test_a={9, 11}, test_b={15, 16, 17, 18}, test_c={22, 23})
    body = SOURCE.replace("math.pi * r * r", "r * r * math.pi")
    assert impacted_tests({"m.py": SOURCE}, {"m.py": body}, cov) == ({"test_a"}, "")
    # module-level code ran at import, outside every test
    assert impacted_tests({"m.py": SOURCE}, {"m.py": SOURCE.replace("SCALE = 2", "SCALE = 3")}, cov)[0] is ALL
    # a statement that also ran outside any test (a function called at import)
    cov.global_lines["m.py"].add(11)
    assert impacted_tests({"m.py": SOURCE}, {"m.py": body}, cov)[0] is ALL
    # files the run did not trace, new files, unusable coverage: every test
    assert impacted_tests({"n.py": "X = 1\n"}, {"n.py": "X = 2\n"}, cov)[0] is ALL
    assert impacted_tests({"m.py": SOURCE, "new.py": None}, {"m.py": SOURCE, "new.py": "X = 1\n"}, cov)[0] is ALL
    assert impacted_tests({"m.py": SOURCE}, {"m.py": body}, GoldCoverage(usable=False, why="x"))[0] is ALL
    # tests that must always run (no record, a process started) are impacted by any change
    cov = _coverage(test_a={9, 11}, test_b={15})
    cov.always = {"test_z"}
    assert impacted_tests({"m.py": SOURCE}, {"m.py": body}, cov)[0] == {"test_a", "test_z"}


# ================================================================================ the plugin, on the host

PLUGIN_MOD = '''\
TABLE = {}


def f(x):
    return x + 1


def g(x):
    if x:
        return 2
    return 3


def h():
    return 4


def fill():
    TABLE["k"] = 5
    return TABLE
'''
PLUGIN_LAZY = '''\
from pkg.mod import fill

FILLED = fill()
'''
PLUGIN_TESTS = '''\
import subprocess
import sys

import pytest

from pkg.mod import f, g, h


@pytest.fixture(scope="session")
def shared():
    return h()


def test_a():
    assert f(1) == 2


def test_b(shared):
    assert g(1) == 2 and shared == 4


def test_lazy():
    from pkg.lazy import FILLED
    assert FILLED["k"] == 5


def test_spawn():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
'''


def test_coverage_plugin_attributes_lines_to_tests_and_shared_work_to_everyone(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for path, text in {"pkg/__init__.py": "", "pkg/mod.py": PLUGIN_MOD, "pkg/lazy.py": PLUGIN_LAZY, "tests/test_m.py": PLUGIN_TESTS}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "files").write_text("pkg/mod.py\npkg/lazy.py\n")
    log = tmp_path / "cover.jsonl"
    env = {
        **os.environ, "PYTHONPATH": f"{PLUGINS}:{root}", "SWEDECK_COVER_FILES": str(tmp_path / "files"),
        "SWEDECK_COVER_LOG": str(log), "SWEDECK_COVER_ROOT": str(root), "PYTEST_ADDOPTS": "",
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "swedeck_coverage", "-p", "no:cacheprovider", "tests"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    ids = [f"tests/test_m.py::test_{n}" for n in ("a", "b", "lazy", "spawn")]
    cov = parse_coverage(log.read_text(), ["pkg/mod.py", "pkg/lazy.py"], ids)
    assert cov.usable, cov.why
    a, b, lazy, spawn = ids
    assert cov.lines[a] == {"pkg/mod.py": {5}} and cov.calls[a] == {"pkg/mod.py": {4}}
    assert cov.lines[b] == {"pkg/mod.py": {9, 10}}  # g's taken branch only
    assert 15 in cov.global_lines["pkg/mod.py"]  # h ran in a session fixture: shared by every test
    assert {1, 4, 8, 14, 18} <= cov.global_lines["pkg/mod.py"]  # the module body, at collection
    # pkg.lazy was first imported inside test_lazy: its body, and fill() which it called, count for everyone
    assert {19, 20} <= cov.global_lines["pkg/mod.py"] and 3 in cov.global_lines["pkg/lazy.py"]
    assert cov.lines[lazy] == {}
    assert cov.always == {spawn}  # started a process: what it ran is not traced
    assert sum(1 for row in rows if row.get("global")) == 1
    # a run that lost its tracer is unusable
    lost = log.read_text().replace('"lost": false', '"lost": true', 1)
    assert not parse_coverage(lost, ["pkg/mod.py"], ids).usable
    # so is one where a session fixture started a process (a server the tests talk to runs untraced code)
    (root / "tests/conftest.py").write_text(
        "import subprocess, sys, pytest\n\n\n@pytest.fixture(scope='session', autouse=True)\n"
        "def server():\n    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
    )
    log.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "swedeck_coverage", "-p", "no:cacheprovider", "tests"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert parse_coverage(log.read_text(), ["pkg/mod.py"], ids).why == "a process started outside any test"


# ================================================================================ a synthetic task in bwrap

CALC = '''\
SCALE = 1


def add(a, b):
    return a - b


def mul(a, b):
    product = a * b
    return product * SCALE


def clamp(x):
    if x > 100:
        return 100
    return x
'''
CALC_TESTS = '''\
from pkg.calc import add, clamp, mul


def test_add():
    assert add(2, 3) == 5


def test_add_zero():
    assert add(0, 0) == 0


def test_mul():
    assert mul(2, 3) == 6


def test_clamp():
    assert clamp(5) == 5


def test_nothing():
    assert True
'''
TEST_IDS = [f"tests/test_calc.py::test_{n}" for n in ("add", "add_zero", "mul", "clamp", "nothing")]




def _calc_task(base: Path, src: str = "") -> Task:
    """The calc task; with ``src`` (a folder) its package lives there and the command puts it on
    PYTHONPATH, as src-layout repositories' commands do."""
    folder = base / "unit__calc-1"
    repo = folder / "repo"
    (repo / src / "pkg").mkdir(parents=True)
    (repo / src / "pkg/__init__.py").write_text("")
    (repo / src / "pkg/calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests/__init__.py").write_text("")
    (repo / "pytest.ini").write_text("[pytest]\n")
    work = base / "work"
    git(["init", "-q", "-b", "main", str(work)], base)
    paths = [f"{src}/pkg/__init__.py".lstrip("/"), f"{src}/pkg/calc.py".lstrip("/"), "tests/__init__.py", "pytest.ini"]
    for path in paths:
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text((repo / path).read_text())
    git(["add", "-A"], work)
    git(["commit", "-q", "-m", "base"], work)
    (folder / "gold.patch").write_text(staged_diff(work, {paths[1]: CALC.replace("a - b", "a + b")}))
    (folder / "tests.patch").write_text(staged_diff(work, {"tests/test_calc.py": CALC_TESTS}))
    (folder / "issue.md").write_text("add() subtracts.\n")
    command = f"PYTHONPATH={src}:$PYTHONPATH python -m pytest tests/test_calc.py" if src else "python -m pytest tests/test_calc.py"
    (folder / "task.toml").write_text(
        f'instance_id = "unit__calc-1"\ntest_cmd = ["{command}"]\nlog_parser = "pytest"\n'
        '[environment]\nworkdir = "/testbed"\n[environment.recipe]\ninstall = []\n'
    )
    return load_task_folder(folder)


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory, backend_factory: Callable) -> tuple[Task, Pipeline1Result, object]:  # noqa: ANN001
    base = tmp_path_factory.mktemp("calc")
    task = _calc_task(base)
    backend = backend_factory("bwrap", TEST_LIMITS)
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", base / "out")
    assert p1.decision == "keep", (p1.reason, p1.detail)
    assert selection(p1) == ["tests/test_calc.py::test_add"] and sorted(p1.expected_status) == sorted(TEST_IDS)
    return task, p1, backend


def _probe(task: Task, swedeck_env, kind: str, old: str, new: str, path: str = "pkg/calc.py") -> Candidate:  # noqa: ANN001
    tree = prepare_tree(task, swedeck_env)
    work = tree.parent / f"{tree.name}-probe-{abs(hash((kind, old, new)))}"
    if not work.exists():
        git(["clone", "-q", str(tree), str(work)], tree.parent)
    gold = CALC.replace("a - b", "a + b")
    assert old in gold
    return Candidate(kind=kind, operator="hand", description=f"{old!r} -> {new!r}", patch=staged_diff(work, {path: gold.replace(old, new)}))


def _stamp(task: Task) -> dict[str, str]:
    return {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}


def test_a_probe_runs_only_the_tests_its_change_can_impact(calc, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    task, p1, backend = calc
    cov = gold_coverage(task, backend, p1, log_dir=tmp_path)
    assert cov.usable, cov.why
    assert cov.files == ["pkg/calc.py"] and cov.executions == len(TEST_IDS)
    body = _probe(task, swedeck_env, "correct_alternative", "product = a * b", "product = b * a")  # only test_mul runs mul
    module = _probe(task, swedeck_env, "correct_alternative", "SCALE = 1", "SCALE = 2 - 1")  # module level
    killed = _probe(task, swedeck_env, "plausible_wrong", "a + b", "a + b + 1")  # test_add and test_add_zero run add
    survivor = _probe(task, swedeck_env, "plausible_wrong", "a + b", "(a + b if a != 7 else 0)")  # no test adds 7
    unreached = _probe(task, swedeck_env, "plausible_wrong", "x > 100", "x >= 100")  # no binding test runs clamp
    probes = [body, module, killed, survivor, unreached]
    selected = run_probes(task, probes, backend, p1, _stamp(task), coverage=cov, log_dir=tmp_path)
    full = run_probes(task, probes, backend, p1, _stamp(task), selection=False, log_dir=tmp_path)
    assert [r.reward for r in selected] == [r.reward for r in full] == [1.0, 1.0, 0.0, 1.0, 1.0]

    r_body, r_module, r_killed, r_survivor, r_unreached = selected
    assert r_body.tests_run == ["tests/test_calc.py::test_mul"] and r_body.executions == 1
    assert r_body.decided_by == "selection" and r_body.inherited == len(TEST_IDS) - 1
    assert sorted(r_module.tests_run) == sorted(TEST_IDS) and r_module.decided_by == "full"
    # the binding test ran first and stopped the probe
    assert r_killed.tests_run == ["tests/test_calc.py::test_add"] and r_killed.decided_by == "selection"
    assert r_killed.differing == ["tests/test_calc.py::test_add"]
    # a plausible-but-wrong probe its binding test does not kill goes on to its other impacted tests
    assert r_survivor.tests_run == ["tests/test_calc.py::test_add", "tests/test_calc.py::test_add_zero"]
    assert r_survivor.decided_by == "selection" and r_survivor.executions == 2
    assert r_unreached.tests_run == ["tests/test_calc.py::test_clamp"] and r_unreached.decided_by == "selection"
    assert sum(r.executions for r in selected) < sum(r.executions for r in full)


def test_a_test_that_killed_an_earlier_probe_runs_first_in_the_next_probes_run(calc, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """Kill history: probes of one task rewrite the same gold files, so the test that killed one goes
    first in the next probe's selected runs, and a run that stops at its first failure stops there.
    Without it the second probe runs test_add (passing) before test_add_zero."""
    task, p1, backend = calc
    cov = gold_coverage(task, backend, p1, log_dir=tmp_path)
    add, add_zero = TEST_IDS[:2]
    change = ("a + b", "(a + b if a != 0 else 1)")  # only add(0, 0) sees it
    first = _probe(task, swedeck_env, "plausible_wrong", *change)  # the binding test_add, then test_add_zero
    second = _probe(task, swedeck_env, "correct_alternative", *change)  # its impacted tests in one run
    # without schemata: a schema runs its probes' first runs before any has killed (probes.schema)
    r_first, r_second = run_probes(task, [first, second], backend, p1, _stamp(task), coverage=cov, log_dir=tmp_path, schemata=False)
    assert r_first.tests_run == [add, add_zero] and r_first.differing == [add_zero]
    assert r_second.reward == 0.0 and r_second.decided_by == "selection"
    assert r_second.tests_run == [add_zero] and r_second.executions == 1


def test_the_select_plugin_runs_the_listed_tests_in_the_lists_order(tmp_path: Path) -> None:
    """Listed tests run in the file's order, a parametrized test's cases together in pytest's order;
    tests not listed do not run."""
    (tmp_path / "test_order.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n\n"
        "@pytest.mark.parametrize('x', [1, 2])\ndef test_c(x):\n    pass\n\ndef test_d():\n    pass\n"
    )
    (tmp_path / "wanted").write_text("test_order.py::test_d\ntest_order.py::test_c\ntest_order.py::test_a\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "swedeck_select", "test_order.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(PLUGINS), "SWEDECK_SELECT": str(tmp_path / "wanted")})  # fmt: skip
    ran = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("test_order.py::") and "PASSED" in line]
    assert ran == ["test_order.py::test_d", "test_order.py::test_c[1]", "test_order.py::test_c[2]", "test_order.py::test_a"], done.stdout


def test_the_full_grade_is_the_final_word_before_a_survivor_is_cited(calc, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """With coverage that (wrongly) says no test ran anything, selection passes every probe unrun and says
    so (``decided_by="selection"``). A verdict citing such a survivor as too-loose evidence first gets it
    a full grade, which gives the plausible-but-wrong probe its 0: the citation is then refused."""
    from judge.config import JudgeConfig
    from judge.rules import VerdictArgs, check_citations
    from judge.tools import ToolSession

    task, p1, backend = calc
    blind = GoldCoverage(usable=True, files=["pkg/calc.py"], lines={t: {} for t in TEST_IDS}, calls={t: {} for t in TEST_IDS})
    wrong = _probe(task, swedeck_env, "plausible_wrong", "a + b", "a + b + 1")
    (r_wrong,) = run_probes(task, [wrong], backend, p1, _stamp(task), coverage=blind, log_dir=tmp_path)
    assert r_wrong.reward == 1.0 and r_wrong.decided_by == "selection" and r_wrong.executions == 0
    tools = ToolSession(task, p1.expected_status, backend, _stamp(task), [r_wrong], JudgeConfig(), tmp_path)
    tools.confirm([r_wrong.probe_id])
    confirmed = tools.known[r_wrong.probe_id]
    assert confirmed.reward == 0.0 and confirmed.decided_by == "full" and tools.written == [confirmed]
    assert "tests/test_calc.py::test_add" in confirmed.differing
    verdict = VerdictArgs(q1_gold_fixes_issue=True, q2_tests_grade_issue="too_loose", evidence=[r_wrong.probe_id])
    assert check_citations(verdict, tools.known, executed=tools.executed)


def test_regression_a_second_run_folder_does_not_trace_gold_again(calc, swedeck_env, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """The gold coverage is a fact of the task's content and gold pattern: it was cached in the run
    folder's logs, so every new run folder over a warm cache traced gold again (one full suite per task)."""
    import probes.runner.coverage as coverage
    import probes.runner.grading as grading
    import probes.runner.task as runner

    task, p1, backend = calc
    hand = [_probe(task, swedeck_env, "plausible_wrong", "a + b", f"a + b + {n}") for n in (1, 2, 3)]
    monkeypatch.setattr(runner, "generate", lambda *_: hand)
    monkeypatch.setattr(grading, "selection_pays", lambda *_: True)  # the calc suite is too cheap to trace
    traced = []
    monkeypatch.setattr(coverage, "parse_coverage", lambda *args: traced.append(1) or parse_coverage(*args))
    for folder in ("run-a", "run-b"):
        graded = runner.probe_task(task, backend, p1, _stamp(task), log_dir=tmp_path / folder, differential=False)
        assert [r.reward for r in graded] == [0.0, 0.0, 0.0]
    assert len(traced) <= 1 and list((swedeck_env.cache_dir / "coverage").glob("gold-coverage-*.json"))


def test_regression_a_second_run_folder_does_not_generate_the_probes_again(calc, swedeck_env, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Probe generation (libcst rewrites, mutants, a git diff each) was redone by every run folder over
    a warm cache; it is cached by content and generating code, with each probe's files, so a session
    takes a cached probe without a host clone."""
    import probes.runner.task as runner
    import probes.workspace as workspace

    task, p1, _ = calc
    tree = prepare_tree(task, swedeck_env)
    made = []
    monkeypatch.setattr(runner, "plausible_wrong", lambda *args: made.append(1) or plausible_wrong(*args))
    first = runner.generate(task, tree, p1, tmp_path / "probes")
    monkeypatch.setattr(workspace, "_CONTENTS", {})  # another process: nothing remembered
    again = runner.generate(task, tree, p1, tmp_path / "probes")
    assert again == first and len(first) >= 3 and len(made) == 1
    assert all(workspace.recall(tree, c.patch)[0] for c in again)


def test_regression_selection_is_never_slower_than_the_full_suite_on_a_cheap_suite(calc, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """benchmarks/probe_selection.py: selection was slower than the full suite on 5 small sample tasks (the
    traced gold run and a second command per wrong probe cost more than the tests they skip). One probe's
    full grade measures the suite; the calc suite's tests take far less than a command's start-up, so
    nothing is traced and every probe gets the full suite in one command, stopping at its first failure."""
    task, p1, backend = calc
    probes = [
        _probe(task, swedeck_env, "correct_alternative", "product = a * b", "product = b * a"),
        _probe(task, swedeck_env, "plausible_wrong", "a + b", "a + b + 1"),
        _probe(task, swedeck_env, "plausible_wrong", "a + b", "(a + b if a != 7 else 0)"),
    ]
    stats = Stats()
    selected = run_probes(task, probes, backend, p1, _stamp(task), log_dir=tmp_path, stats=stats)
    assert [r.reward for r in selected] == [1.0, 0.0, 1.0]
    assert stats.traced == 0 and stats.graded == 3 and stats.tests_s < stats.command_s / 2
    assert [r.decided_by for r in selected] == ["full", "full", "full"]
    assert selected[1].executions < len(TEST_IDS)  # the wrong probe stopped at its first failure


def test_selection_pays_only_when_the_tests_outweigh_a_commands_start_up() -> None:
    assert not selection_pays(command_s=0.8, tests_s=0.05)
    assert not selection_pays(command_s=1.0, tests_s=0.5)
    assert selection_pays(command_s=3.0, tests_s=2.5)


# ================================================================================ probe sessions


def test_only_a_plain_pytest_command_runs_as_pytest_main() -> None:
    inherited = "/plugins:/env/site"
    assert pytest_command("python -m pytest tests/test_a.py -k 'x or y'", inherited) == {"argv": ["tests/test_a.py", "-k", "x or y"], "pythonpath": None, "python": "python"}
    assert pytest_command("pytest -q tests", inherited) == {"argv": ["-q", "tests"], "pythonpath": None, "python": ""}
    assert pytest_command("python3 -m pytest", inherited) == {"argv": [], "pythonpath": None, "python": "python3"}
    # a src layout's PYTHONPATH, as the shell would expand it
    assert pytest_command("PYTHONPATH=src:$PYTHONPATH python -m pytest t.py", inherited) == {"argv": ["t.py"], "pythonpath": "src:/plugins:/env/site", "python": "python"}
    assert pytest_command("PYTHONPATH=${PYTHONPATH}:lib pytest", inherited) == {"argv": [], "pythonpath": "/plugins:/env/site:lib", "python": ""}
    for shell in (
        "python -m pytest tests/*.py", "cd sub && pytest", "FOO=1 pytest", "pytest $ARGS", "tox -e py", "python -m pytest 'a",
        "PYTHONPATH=src:$HOME pytest", "PYTHONPATH=$PYTHONPATHX pytest", "PYTHONPATH=src: pytest", "PYTHONPATH=src FOO=1 pytest",
        "PYTHONPATH='a b' pytest",
    ):  # fmt: skip
        assert pytest_command(shell, inherited) is None, shell


def test_a_src_layouts_pythonpath_command_is_forked_and_grades_as_grade_does(
    tmp_path_factory: pytest.TempPathFactory, backend_factory, swedeck_env, tmp_path: Path
) -> None:  # noqa: ANN001
    """``PYTHONPATH=src:$PYTHONPATH python -m pytest ...`` runs as a fork too: the fork puts the
    command's PYTHONPATH on sys.path (without it the tests cannot import the package and every probe
    would get 0), and each probe gets grade's reward."""
    base = tmp_path_factory.mktemp("srccalc")
    task = _calc_task(base, "src")
    backend = backend_factory("bwrap", TEST_LIMITS)
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", base / "out")
    assert p1.decision == "keep", (p1.reason, p1.detail)
    probes = [
        _probe(task, swedeck_env, "plausible_wrong", *change, path="src/pkg/calc.py")
        for change in (("a + b", "a + b + 1"), ("a + b", "b + a"), ("a + b", "(a + b if a != 7 else 0)"))
    ]
    results = run_probes(task, probes, backend, p1, _stamp(task), selection=False, log_dir=tmp_path, stats=(stats := Stats()))
    alone = run_probes(task, probes, backend, p1, _stamp(task), selection=False, log_dir=tmp_path, sessions=False)
    assert [r.reward for r in results] == [r.reward for r in alone] == [0.0, 1.0, 1.0]
    assert stats.forked == 3 and stats.plain == 0

def _parked_sessions_grade(task: Task, backend, stats: Stats, patches: list[str]) -> list[float]:  # noqa: ANN001
    from harness.grading.grader import gold_pattern

    pool = SessionPool(task, backend, prepare_tree(task, backend.settings), 1, stats)
    try:
        pool.expect(patches)
        return [pool.grade(task, patch, backend, expected=gold_pattern(task, backend)).reward for patch in patches]
    finally:
        pool.close()


@pytest.mark.parametrize("name", ["bwrap", "docker"])
def test_a_parked_session_serves_the_next_task_of_its_environment_as_a_fresh_one_would(
    name: str, sample_tasks, make_patch, backend_factory, monkeypatch: pytest.MonkeyPatch  # noqa: ANN001
) -> None:
    """A task's closed pool parks its healthy session; the next task of the same environment takes it
    over (its tree swapped in, pytest kept warm) and gets the rewards ``grade`` gives, with a tree
    that holds nothing of the last task's. A task whose tree cannot be swapped in gets a fresh one."""
    release_parked()
    backend = backend_factory(name, TEST_LIMITS)
    first, second = sample_tasks["sample__toposort-1"], sample_tasks["sample__unitconv-1"]
    wrong = make_patch(second, {"unitconv/__init__.py": lambda text: text + "\nraise ImportError('wrong')\n"})
    assert _parked_sessions_grade(first, backend, Stats(), [first.answer.gold_patch]) == [1.0]
    (parked,) = parking._parked
    stats = Stats()
    # probes get a per-command timeout scaled to each task's runs: it is the job's, not the session's
    later = backend_factory(name, TEST_LIMITS.model_copy(update={"timeout_s": TEST_LIMITS.timeout_s + 7}))
    assert _parked_sessions_grade(second, later, stats, [second.answer.gold_patch, wrong]) == [1.0, 0.0]
    assert stats.switched == 1 and parking._parked == [parked] and parked.task is second
    assert parked.timeout_s == TEST_LIMITS.timeout_s + 7
    assert [grade(second, p, backend).reward for p in (second.answer.gold_patch, wrong)] == [1.0, 0.0]
    fresh = fresh_listing(backend, second)
    # the session's listing of its new tree: the same entries as a fresh sandbox's (mtimes come from the tar)
    shape = lambda listing: {path: (e.kind, e.mode, e.size if e.kind != "d" else 0) for path, e in listing.items()}  # noqa: E731
    assert shape(parked.listing) == shape(fresh)
    broken = Stats()
    monkeypatch.setattr(session, "tree_tar", lambda *args: Path(os.devnull))  # nothing to unpack: the switch fails
    assert _parked_sessions_grade(first, backend, broken, [first.answer.gold_patch]) == [1.0]
    assert broken.switched == 0 and broken.graded == 1 and not parked.thread.is_alive()
    release_parked()


LEAKY = "a + b if open('leak.txt', 'w').write('x') and open('/tmp/leak.txt', 'w').write('x') and open(__file__, 'a').write('BROKEN = ') else 0"


@pytest.mark.parametrize("name", ["bwrap", "docker"])
def test_a_probe_session_grades_as_grade_does_and_leaks_nothing_into_the_next_probe(name: str, calc, swedeck_env, backend_factory, tmp_path: Path) -> None:  # noqa: ANN001
    """The leaky probe's tests pass, but its code writes a file into the tree and one into /tmp (HOME)
    and breaks its own module file (``BROKEN = `` at the end does not parse): none may survive it.
    The probe touching a test file is one a session may not take: ``grade`` refuses it
    (forbidden_change), and so it does here. The leaky probe is the one ``grade`` grades otherwise: its
    run-time guard ends a run whose changed code writes a module (sessions run no guard: they are for
    our own rewrites of a gold that grades clean, ``probes.runner.grading.gold_grades_clean``)."""
    task, p1, _ = calc
    backend = backend_factory(name, TEST_LIMITS)
    tree = prepare_tree(task, swedeck_env)
    killed = _probe(task, swedeck_env, "plausible_wrong", "a + b", "a + b + 1")
    leaky = _probe(task, swedeck_env, "correct_alternative", "a + b", LEAKY)
    survivor = _probe(task, swedeck_env, "plausible_wrong", "a + b", "(a + b if a != 7 else 0)")
    work = tree.parent / f"{tree.name}-probe-tests"
    if not work.exists():
        git(["clone", "-q", str(tree), str(work)], tree.parent)
    protected = Candidate(kind="plausible_wrong", operator="hand", description="a test file", patch=staged_diff(work, {"tests/__init__.py": "X = 1\n"}))
    expected = {t: Status(s) for t, s in p1.expected_status.items()}
    probes = [killed, leaky, survivor, leaky, protected]
    stats = Stats()
    pool = SessionPool(task, backend, tree, 1, stats)
    try:
        graded = [pool.grade(task, c.patch, backend, expected=expected, log_dir=tmp_path) for c in probes]
        session = pool.opened[0]
        for leak in ("leak.txt", "/tmp/leak.txt"):
            with pytest.raises(FileNotFoundError):
                session.box.read_file(leak)
        assert session.box.read_file("pkg/calc.py").decode() == CALC
    finally:
        pool.close()
    alone = [grade(task, c.patch, backend, expected=expected, log_dir=tmp_path) for c in probes]
    same = [i for i, c in enumerate(probes) if c is not leaky]
    assert [(graded[i].reward, graded[i].reason, graded[i].statuses) for i in same] == [(alone[i].reward, alone[i].reason, alone[i].statuses) for i in same]
    assert [g.reward for g in graded] == [0.0, 1.0, 1.0, 1.0, 0.0] and graded[-1].reason == "forbidden_change"
    # grade's run-time guard ends the leaky probe: its code rewrites its own module while the tests run
    # (code written at run time), which a session, running no guard, does not see
    assert all(alone[i].reason == "tamper_suspected" and "writes " in alone[i].detail for i, c in enumerate(probes) if c is leaky)
    assert stats.graded == 4 and stats.fallback == 1 and stats.forked == 4 and stats.suite_s > 0


@pytest.mark.parametrize("name", ["bwrap", "docker"])
def test_a_looping_probe_times_out_in_a_session_and_the_next_probe_still_runs(name: str, calc, swedeck_env, backend_factory, tmp_path: Path) -> None:  # noqa: ANN001
    task, p1, _ = calc
    backend = with_timeout(backend_factory(name, TEST_LIMITS), 5)
    looping = _probe(task, swedeck_env, "plausible_wrong", "return a + b", "while True:\n        pass")
    correct = _probe(task, swedeck_env, "correct_alternative", "a + b", "b + a")
    results = run_probes(task, [looping, correct], backend, p1, _stamp(task), selection=False, log_dir=tmp_path, stats=(stats := Stats()))
    assert [(r.reward, r.reason) for r in results] == [(0.0, "timeout"), (1.0, "ok")]
    assert stats.graded == 2 and stats.fallback == 0


def test_one_worker_keeps_its_sessions_queue_full_when_no_probe_waits_on_the_kills(calc, swedeck_env, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Full grades keep pytest's order, so nothing one probe's run shows changes the next one's: with
    one worker the host hands the session its next probe while the server runs one (DEPTH jobs), and
    the server does not wait on the host between probes. Probes that fall back to grade are still
    graded one at a time."""
    task, p1, backend = calc
    probes = [
        _probe(task, swedeck_env, "plausible_wrong", "a + b", "a + b + 1"),
        _probe(task, swedeck_env, "correct_alternative", "a + b", "b + a"),
        _probe(task, swedeck_env, "plausible_wrong", "a + b", "a - b + 2 * b + 1"),
        _probe(task, swedeck_env, "correct_alternative", "product = a * b", "product = b * a"),
    ]
    most = {"session": 0, "grade": 0}
    now = dict.fromkeys(most, 0)
    lock = threading.Lock()

    def counted(where: str, real: Callable) -> Callable:
        def run(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            with lock:
                now[where] += 1
                most[where] = max(most[where], now[where])
            try:
                return real(*args, **kwargs)
            finally:
                with lock:
                    now[where] -= 1
        return run

    monkeypatch.setattr(session.ProbeSession, "run_tests", counted("session", session.ProbeSession.run_tests))
    # without schemata, which would run all four in one command (probes.schema)
    results = run_probes(task, probes, backend, p1, _stamp(task), selection=False, log_dir=tmp_path, stats=(stats := Stats()), schemata=False)
    assert [r.reward for r in results] == [0.0, 1.0, 0.0, 1.0] and stats.graded == 4
    assert most["session"] == session.DEPTH

    monkeypatch.setattr(parking, "uses_junit", lambda parser: False)  # no session can grade: each probe falls back
    monkeypatch.setattr(parking, "run_tests", counted("grade", parking.run_tests))
    results = run_probes(task, probes, backend, p1, _stamp(task), selection=False, log_dir=tmp_path, stats=(stats := Stats()))
    assert [r.reward for r in results] == [0.0, 1.0, 0.0, 1.0] and stats.fallback == 4
    assert most["grade"] == 1

# ================================================================================ sample tasks: same rewards

SAMPLE_IDS = ["sample__querybuild-1", "sample__matrixlite-1"]


@pytest.mark.parametrize("instance_id", sampled(SAMPLE_IDS, {"sample__matrixlite-1"}))
def test_selection_and_full_grading_agree_on_every_probe(instance_id: str, sample_tasks, backend_factory, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    task = sample_tasks[instance_id]
    backend = backend_factory("bwrap", TEST_LIMITS)
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path / "out")
    assert p1.decision == "keep", p1.reason
    tree = prepare_tree(task, swedeck_env)
    candidates = generate(task, tree, p1)
    cov = gold_coverage(task, backend, p1, log_dir=tmp_path, tree=tree)
    assert cov.usable, cov.why
    stats = Stats()
    selected = run_probes(task, candidates, backend, p1, _stamp(task), coverage=cov, tree=tree, workers=2, log_dir=tmp_path, stats=stats)
    full = run_probes(task, candidates, backend, p1, _stamp(task), selection=False, workers=2, log_dir=tmp_path, sessions=False)
    assert [r.reward for r in selected] == [r.reward for r in full]
    assert stats.graded and not stats.fallback  # selection ran in probe sessions, the full grades each alone
    assert any(r.decided_by == "selection" and r.inherited for r in selected)  # some tests were never run
    for r in selected:
        assert set(r.tests_run) <= set(p1.expected_status) and r.executions >= len(set(r.tests_run))
        if r.decided_by == "selection" and r.reward == 1.0:  # impacted tests ran, the rest kept gold's status
            assert len(set(r.tests_run)) + r.inherited == len(p1.expected_status)
    assert cov.executions + sum(r.executions for r in selected) < sum(r.executions for r in full)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-s"]))
