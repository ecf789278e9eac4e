"""The grader on the sample corpus: gold earns 1, nothing earns 0, both backends agree, and patches that
try to earn the reward without fixing the bug get 0 for the right reason.

Adversarial patches are real unified diffs made with ``git diff`` against a checkout of the task's
sealed buggy tree (the ``make_patch`` fixture), so they go through the same apply cascade a model's
patch would.
"""

from __future__ import annotations

import json
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import LABELS, VALID_IDS, git, sampled
from test_grader_attacks import REPORT_REWRITE

from harness.grading import guard as runtime_guard
from harness.config import Settings
from harness.sandboxes.envs import prepare_tree
from harness.grading import grader
from harness.grading.grader import _canary_pool, gold_pattern, run_tests
from harness.grading.reports import command_statuses
from harness.grading.verdict import compare
from harness.grading.parsers import parse_junit, resolve_parser
from harness.records import Grade, HiddenTests, Status, Task, TestRun
from harness.sandboxes.sandbox import Backend, Sandbox
from harness.grading.trusted import facts_key, task_facts

ADVERSARY_TASK = "sample__toposort-1"


def grade(task: Task, patch: str, backend: Backend, **options: object) -> Grade:
    """The adversarial patches here test the defences behind the tamper audit (most of them would
    reach into the runner), so the audit only flags; gold is graded with the default, which zeroes."""
    return grader.grade(task, patch, backend, tamper="flag", **options)  # type: ignore[arg-type]
BAD = {Status.FAILED, Status.ERROR}


@pytest.fixture
def task(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks[ADVERSARY_TASK]


@pytest.fixture
def expected(task: Task, backend: Backend) -> dict[str, Status]:
    return gold_pattern(task, backend)


def f2p(task: Task) -> list[str]:
    return LABELS[task.instance_id]["fail_to_pass"]


# ------------------------------------------------------------------------------------------ gold and empty


@pytest.mark.bwrap
@pytest.mark.docker
@pytest.mark.parametrize("instance_id", sampled(VALID_IDS, {"sample__semverlite-1", "sample__iniparse-1", "sample__jsonptr-1"}))
def test_gold_earns_1_and_empty_earns_0_on_both_backends(
    instance_id: str, sample_tasks: dict[str, Task], backends: dict[str, Backend]
) -> None:
    task = sample_tasks[instance_id]
    grades: dict[tuple[str, str], Grade] = {}
    for name, backend in backends.items():
        for label, patch in (("gold", task.answer.gold_patch), ("empty", "")):
            grades[name, label] = grader.grade(task, patch, backend)
    for name in backends:
        gold, empty = grades[name, "gold"], grades[name, "empty"]
        assert (gold.reward, gold.reason) == (1.0, "ok"), (name, gold.differing, gold.spoof_evidence, gold.detail)
        assert gold.apply_strategy == "git apply" and gold.neutralized == []
        assert (empty.reward, empty.reason) == (0.0, "pattern_mismatch"), (name, empty)
        assert empty.apply_strategy == "empty"
    # the backends see the same tests with the same outcomes, tree for tree
    assert grades["bwrap", "gold"].statuses == grades["docker", "gold"].statuses
    assert grades["bwrap", "empty"].statuses == grades["docker", "empty"].statuses
    # and the statuses are the labelled truth: FAIL_TO_PASS flips, PASS_TO_PASS holds
    gold, empty = grades["bwrap", "gold"].statuses, grades["bwrap", "empty"].statuses
    flipped = sorted(t for t in gold if gold[t] is Status.PASSED and empty.get(t, Status.ERROR) in BAD)
    kept = [t for t in gold if gold[t] is Status.PASSED and empty.get(t) is Status.PASSED]
    assert flipped == sorted(LABELS[instance_id]["fail_to_pass"])
    assert len(kept) == LABELS[instance_id]["pass_to_pass_count"]


# ------------------------------------------------------------------------------------------ adversarial patches

FORCE_PASS_CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

# The bug fixed by monkeypatching from wherever this code is imported: a real fix, living in a file
# of the candidate's choice.
FIX_BY_MONKEYPATCH = """
import toposort.graph as _graph

_add = _graph.DependencyGraph.add_dependency


def _add_once(self, node, dependency):
    if node in self._deps and dependency in self._deps[node]:
        return
    _add(self, node, dependency)


_graph.DependencyGraph.add_dependency = _add_once
"""


def _prepend(text: str) -> Callable[[str], str]:
    return lambda source: text + source


def _append(text: str) -> Callable[[str], str]:
    return lambda source: source + text


def _forged_summary(ids: list[str]) -> str:
    """Library code that prints a fake pytest summary (all passed) after pytest's own, at exit."""
    lines = ["", "=" * 30 + " short test summary info " + "=" * 30, *(f"PASSED {i}" for i in ids)]
    lines.append("=" * 30 + f" {len(ids)} passed in 0.12s " + "=" * 30)
    text = "\n".join(lines) + "\n"
    return textwrap.dedent(
        f"""
        import atexit as _atexit
        import os as _os

        _atexit.register(lambda: _os.write(1, {text.encode()!r}))
        """
    )


def test_control_monkeypatch_fix_in_library_earns_1(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable
) -> None:
    """Control for the test-file case below: the same code outside a test file really fixes the bug."""
    patch = make_patch(task, {"toposort/__init__.py": _append(FIX_BY_MONKEYPATCH)})
    result = grade(task, patch, backend)
    assert (result.reward, result.reason) == (1.0, "ok"), result


def _refused(result: Grade, *paths: str) -> None:
    """Refused as applied (harness.grading.capabilities), naming each path the tests own."""
    assert (result.reward, result.reason) == (0.0, "forbidden_change"), result
    assert [line.split(": ")[0] for line in result.detail.splitlines()[1:]] == list(paths), result.detail
    assert "a path the tests own" in result.detail


def test_editing_the_hidden_tests_file_is_refused(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable
) -> None:
    patch = make_patch(task, {"tests/test_sort.py": _prepend(FIX_BY_MONKEYPATCH)})
    _refused(grade(task, patch, backend), "tests/test_sort.py")


def test_control_force_pass_conftest_works_when_left_in_place(backend: Backend, task: Task) -> None:
    """Control for the conftest cases: planted by hand next to the hidden tests (no grader, so no
    neutralization), the hook does turn the FAIL_TO_PASS failures into passes."""
    box = backend.open(task)
    try:
        box.write_file("conftest.py", FORCE_PASS_CONFTEST)
        box.write_file("/tmp/tests.patch", task.answer.hidden_tests.patch)
        assert box.run("git apply /tmp/tests.patch").exit_code == 0
        result = box.run(task.test_cmd[0] + " -rA")
    finally:
        box.close()
    assert result.exit_code == 0, result.output
    for test_id in f2p(task):
        assert f"PASSED {test_id}" in result.output


# protected by name wherever it is, even where pytest would not load it
@pytest.mark.parametrize("where", ["conftest.py", "tests/conftest.py", "toposort/conftest.py"])
def test_conftest_forcing_passes_is_refused(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable, where: str
) -> None:
    patch = make_patch(task, {where: FORCE_PASS_CONFTEST})
    _refused(grade(task, patch, backend), where)


@pytest.mark.parametrize(
    ("forge", "reason"),
    [
        # Forged PASSED lines for the real ids, printed after pytest's own summary: the text parser
        # reads the last session's summary, which then disagrees with the JUnit report
        pytest.param("known-ids", "spoofing_suspected", id="forged-real-ids"),
        # Forged PASSED lines naming a test pytest never ran: the text summary lists a test the JUnit
        # report does not have, which is evidence of forging.
        pytest.param("unknown-id", "spoofing_suspected", id="forged-unknown-id"),
    ],
)
def test_forged_pass_lines_are_not_believed(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable, forge: str, reason: str
) -> None:
    ids = sorted(expected) + (["tests/test_sort.py::test_everything_is_fixed"] if forge == "unknown-id" else [])
    patch = make_patch(task, {"toposort/__init__.py": _append(_forged_summary(ids))})
    result = grade(task, patch, backend)
    assert (result.reward, result.reason) == (0.0, reason), result
    assert "PASSED tests/test_sort.py::test_repeated_dependency_is_not_a_cycle" in Path(result.log_path).read_text()
    assert all(result.statuses[t] in BAD for t in f2p(task))
    # the forged summary is the last one, so it is the text parser's: each forged pass shows
    shown = "test_everything_is_fixed" if forge == "unknown-id" else f2p(task)[0]
    assert any(shown in e for e in result.spoof_evidence), result.spoof_evidence


def test_deleting_the_test_files_is_refused(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable
) -> None:
    patch = make_patch(task, {"tests/test_sort.py": None, "tests/test_graph.py": None})
    assert patch.count("deleted file mode") == 2
    _refused(grade(task, patch, backend), "tests/test_graph.py", "tests/test_sort.py")


PRINTING_PASSES_AT_IMPORT = """\
import gc as _gc
import os as _os
import sys as _sys

if "_pytest.capture" in _sys.modules:  # imported while pytest collects: step out of its output capture
    for _obj in _gc.get_objects():
        if isinstance(_obj, _sys.modules["_pytest.capture"].CaptureManager):
            _obj.suspend_global_capture()
            break

IDS = {ids!r}
print("=" * 30 + " short test summary info " + "=" * 30)
for test_id in IDS:
    print("PASSED " + test_id)
print("=" * 30 + " %d passed in 0.10s " % len(IDS) + "=" * 30, flush=True)
_os._exit(0)

"""


@pytest.mark.parametrize(
    ("early_exit", "reason"),
    [
        # nothing printed, no JUnit report: no statuses and nothing forged
        pytest.param("os-exit-at-import", "tests_errored"),
        # a pass summary printed while pytest collects, then out before pytest writes its JUnit report
        pytest.param("print-passes-at-import", "spoofing_suspected"),
    ],
)
def test_exiting_early_with_0_earns_nothing(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable, early_exit: str, reason: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime_guard, "ENABLED", False)  # the layer behind the run-time guard
    if early_exit == "os-exit-at-import":
        edits = {"toposort/__init__.py": _prepend("import os\n\nos._exit(0)\n")}
    else:
        edits = {"toposort/__init__.py": _prepend(PRINTING_PASSES_AT_IMPORT.format(ids=sorted(expected)))}
    result = grade(task, make_patch(task, edits), backend)
    assert (result.reward, result.reason) == (0.0, reason), result
    assert result.exit_code == 0
    assert result.statuses == {}
    if reason == "spoofing_suspected":
        assert any("no JUnit report" in e for e in result.spoof_evidence)


def test_patch_that_does_not_apply(
    backend: Backend, task: Task, sample_tasks: dict[str, Task], expected: dict[str, Status], make_patch: Callable
) -> None:
    # a real diff whose removed line is nowhere in the buggy tree (no fuzz can place it) ...
    patch = make_patch(task, {"toposort/graph.py": lambda s: s.replace("class DependencyGraph", "class Graph")})
    assert "-class DependencyGraph" in patch
    stale = patch.replace("-class DependencyGraph", "-class SomethingElse")
    # ... and another task's gold patch, for files this repository does not have
    foreign = sample_tasks["sample__semverlite-1"].answer.gold_patch
    for candidate in (stale, foreign):
        result = grade(task, candidate, backend)
        assert (result.reward, result.reason) == (0.0, "patch_apply_failed"), result
        assert result.statuses == {} and "git apply" in result.detail and "patch --fuzz=5" in result.detail


@pytest.mark.parametrize(
    "garbage",
    [
        "this is not a patch at all\n",
        "diff --git a/x b/x\n@@ nonsense @@\n+++\n",
        "\x00\x01\x02 binary junk \xff",
        "--- a/toposort/graph.py\n+++ b/toposort/graph.py\n@@ -1,3 +1,3 @@\n-no such line\n+x\n",
    ],
    ids=["prose", "broken-header", "binary", "wrong-context"],
)
def test_garbage_patch(backend: Backend, task: Task, expected: dict[str, Status], garbage: str) -> None:
    result = grade(task, garbage, backend)
    assert (result.reward, result.reason) == (0.0, "patch_apply_failed"), result


# ------------------------------------------------------------------------------------------ regressions


def test_regression_gitignore_hides_planted_conftest(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable
) -> None:
    """A .gitignore listing conftest.py hid the planted file from `git status`, so it survived
    neutralization and its forced passes earned reward 1."""
    patch = make_patch(task, {".gitignore": "conftest.py\n", "conftest.py": FORCE_PASS_CONFTEST})
    assert "+++ b/conftest.py" in patch
    _refused(grade(task, patch, backend), "conftest.py")


GIT_HOOK = """#!/bin/sh
cat > conftest.py <<'PY'
{conftest}PY
"""


def _git_hook_patch(task: Task, make_patch: Callable, via_symlink: bool) -> str:
    """A patch that plants .git/hooks/post-checkout (directly, or through a symlink to .git) and
    touches a test file so that neutralization's own `git checkout` runs the hook, which plants a
    conftest.py after the scan. git apply refuses it; GNU patch (the last strategy) used to apply it."""
    diff = make_patch(task, {"tests/test_graph.py": _prepend("# touched\n")})
    hook = GIT_HOOK.format(conftest=FORCE_PASS_CONFTEST).splitlines()
    prefix = "g" if via_symlink else ".git"
    if via_symlink:
        diff += "diff --git a/g b/g\nnew file mode 120000\n--- /dev/null\n+++ b/g\n@@ -0,0 +1 @@\n+.git\n"
        diff += "\\ No newline at end of file\n"
    diff += f"diff --git a/{prefix}/hooks/post-checkout b/{prefix}/hooks/post-checkout\nnew file mode 100755\n"
    diff += f"--- /dev/null\n+++ b/{prefix}/hooks/post-checkout\n@@ -0,0 +1,{len(hook)} @@\n"
    return diff + "".join(f"+{line}\n" for line in hook)


@pytest.mark.parametrize("via_symlink", [False, True], ids=["direct", "through-symlink"])
def test_regression_patch_fallback_writes_git_hook(
    backend: Backend, task: Task, expected: dict[str, Status], make_patch: Callable, via_symlink: bool
) -> None:
    """GNU patch wrote a hook into .git; neutralization's `git checkout` then ran it and the planted
    conftest.py forced every test to pass (reward 1)."""
    result = grade(task, _git_hook_patch(task, make_patch, via_symlink), backend)
    assert (result.reward, result.reason) == (0.0, "patch_apply_failed"), result
    assert "refused" in result.detail


# Fixes matrixlite's determinant from inside a test module, by rewriting the library function's code
# at collection time: a "fix" that only exists while the tampered test file is in the tree.
FIX_FROM_TEST_MODULE = """
import inspect as _inspect

import matrixlite.linalg as _la

_src = _inspect.getsource(_la.determinant).replace(
    "a[col], a[pivot] = a[pivot], a[col]\\n", "a[col], a[pivot] = a[pivot], a[col]\\n            det = -det\\n"
)
_ns = {}
exec(compile(_src, _la.__file__, "exec"), _la.__dict__, _ns)
_la.determinant.__code__ = _ns["determinant"].__code__
"""


def _three_way_hunk(task: Task, tmp_path: Path) -> str:
    """A hunk written against the commit before the base: stale context, but its pre-image blob is in
    the sealed history, so only `git apply --3way` takes it (and --3way stages what it applies)."""
    clone = tmp_path / "older"
    git(["clone", "-q", task.repo_source.path, str(clone)], tmp_path)
    git(["checkout", "-q", f"{task.repo_source.ref}~1"], clone)
    init = clone / "matrixlite/__init__.py"
    init.write_text(init.read_text().replace("from .matrix import Matrix\n", "from .matrix import Matrix  # noqa\n"))
    return git(["diff"], clone)


def test_regression_staged_rename_blocked_test_restore(
    backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, tmp_path: Path
) -> None:
    """A patch applied by --3way is staged, so `git status` reports a moved file as a rename (R). The
    rename's new path, when protected, went to the `git checkout HEAD --` list although HEAD does not
    have it; the whole checkout failed and every edited test file stayed as the candidate left it
    (here: a test module that patches the library at collection time, reward 1)."""
    task = sample_tasks["sample__matrixlite-1"]
    readme = (Path(prepare_tree(task, Settings.from_env())) / "README.md").read_text()
    tampering = make_patch(
        task,
        {
            "tests/test_matrix.py": _prepend(FIX_FROM_TEST_MODULE),
            "README.md": None,
            "tests/README.md": readme,  # staged by --3way as a rename README.md -> tests/README.md
        },
    )
    result = grade(task, _three_way_hunk(task, tmp_path) + tampering, backend)
    assert result.apply_strategy == "git apply --3way", result.detail
    _refused(result, "tests/README.md", "tests/test_matrix.py")


# ------------------------------------------------------------------------------------------ known gaps

SHADOW_PYTEST_FORCING_PASSES = '''\
"""Shadows pytest, then runs the real one with a plugin that turns every result into a pass."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
sys.modules.pop("pytest", None)
import pytest as real

sys.path.insert(0, here)  # the code under test is imported from the workdir


class ForcePass:
    @real.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        report.outcome = "passed"
        report.longrepr = None


sys.exit(real.main(sys.argv[1:], plugins=[ForcePass()]))
'''

SHADOW_ARGPARSE_FORCING_PASSES = '''\
"""Shadows argparse, which pytest imports as it starts: loads the real one in its place, then has
pytest load a plugin that turns every result into a pass."""
import importlib.machinery
import importlib.util
import os
import sys
import types

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.machinery.PathFinder.find_spec("argparse", [p for p in sys.path if os.path.abspath(p or ".") != here])
real = importlib.util.module_from_spec(spec)
sys.modules["argparse"] = real
spec.loader.exec_module(real)

import pluggy


@pluggy.HookimplMarker("pytest")(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None


plugin = types.ModuleType("force_pass")
plugin.pytest_runtest_makereport = pytest_runtest_makereport
sys.modules["force_pass"] = plugin
os.environ["PYTEST_PLUGINS"] = "force_pass"
'''

def test_regression_modules_shadowing_pytest_or_the_stdlib_are_refused_before_the_tests_run(
    backend: Backend, task: Task, make_patch: Callable
) -> None:
    """A pytest.py (or pytest/__init__.py) added at the root would run instead of pytest and report
    every test passed; an argparse.py there would run inside pytest's start-up. Only the shadow is
    named: a new module of the candidate's own is allowed."""
    for path, source in [("pytest.py", SHADOW_PYTEST_FORCING_PASSES), ("pytest/__init__.py", SHADOW_PYTEST_FORCING_PASSES),
                         ("argparse.py", SHADOW_ARGPARSE_FORCING_PASSES)]:  # fmt: skip
        result = grade(task, make_patch(task, {path: source, "toposort_extra.py": "VALUE = 1\n"}), backend)
        assert (result.reward, result.reason) == (0.0, "forbidden_change"), result
        name = path.split("/")[0]
        module = name.removesuffix(".py")
        shadow = f"{name}: imported instead of a module the environment provides (`{module}`, from the work directory on sys.path)"
        assert result.detail.splitlines()[1:] == [shadow]


def test_regression_library_code_rewriting_pytest_reports_is_caught(
    backend: Backend, task: Task, make_patch: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Imported by the tests, the candidate's package replaced TestReport.from_item_and_call so every
    failing test was reported passed, and JUnit and the summary agreed. swedeck_outcomes saw the calls
    raise first."""
    monkeypatch.setattr(runtime_guard, "ENABLED", False)  # the layer behind the run-time guard
    result = grade(task, make_patch(task, {"toposort/__init__.py": _append(REPORT_REWRITE)}), backend)
    assert (result.reward, result.reason) == (0.0, "spoofing_suspected"), result
    assert any("CycleError but is reported passed" in e for e in result.spoof_evidence), result.spoof_evidence


# Erasing a call's exception before any hook sees it, the gap once pinned here, is caught by the
# canaries now: see test_grader_attacks.py.


# ------------------------------------------------------------------------------------------ gold_pattern


class CountingBackend:
    """Delegates to a real backend and counts the sandboxes it opens."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.opened = 0

    def prepare(self, task: Task) -> None:
        self.inner.prepare(task)

    def open(self, task: Task, *, network: bool = False) -> Sandbox:
        self.opened += 1
        return self.inner.open(task, network=network)

    def image_digest(self, task: Task) -> str:
        return self.inner.image_digest(task)


def test_gold_pattern_is_cached(backend: Backend, task: Task, tmp_path: Path, swedeck_env: Settings) -> None:
    settings = swedeck_env.model_copy(update={"cache_dir": tmp_path / "cache"})
    changed = task.model_copy(update={"test_cmd": ["python -m pytest tests/test_sort.py"]})
    for known in (task, changed):  # each task's facts and canary trial take a sandbox of their own, once
        _canary_pool(known, task_facts(known, backend), backend, facts_key(known, backend))
    counting = CountingBackend(backend)
    first = gold_pattern(task, counting, settings)
    assert counting.opened == 1
    assert first and all(status is Status.PASSED for status in first.values())
    assert (settings.cache_dir / "gold" / f"{facts_key(task, backend)}.json").is_file()
    second = gold_pattern(task, counting, settings)
    assert counting.opened == 1, "the second call ran a sandbox"
    assert second == first
    # a different task (another hash) is not served from that cache
    third = gold_pattern(changed, counting, settings)
    assert counting.opened == 2
    assert set(third) == {t for t in first if t.startswith("tests/test_sort.py")}
    # a corpus that ships the expected map never needs a sandbox
    shipped = task.model_copy(update={"answer": task.answer.model_copy(update={"expected_status": first})})
    assert gold_pattern(shipped, counting, settings) == first
    assert counting.opened == 2


def test_regression_two_workers_gathering_one_task_s_facts_at_once(backend: Backend, task: Task, tmp_path: Path,
                                                                  swedeck_env: Settings) -> None:  # fmt: skip
    """Two graders of one task (a predictions file's raw and strengthened arms) gathered its facts at once
    and wrote them through one temporary name: the second rename found the file gone (sandbox_error)."""
    settings = swedeck_env.model_copy(update={"cache_dir": tmp_path / "cache"})
    fresh = task.model_copy(update={"test_cmd": ["python -m pytest tests/test_sort.py -p no:cacheprovider"]})
    counting = CountingBackend(backend)
    start = threading.Barrier(2)

    def gather() -> object:
        start.wait()
        return task_facts(fresh, counting, settings)

    with ThreadPoolExecutor(2) as pool:
        first, second = [f.result() for f in [pool.submit(gather), pool.submit(gather)]]
    assert first == second and counting.opened == 1
    assert [p.name for p in (settings.cache_dir / "facts").iterdir()] == [f"{facts_key(fresh, backend)}.json"]


def test_grade_through_counting_backend_opens_one_sandbox_per_run(
    backend: Backend, task: Task, expected: dict[str, Status]
) -> None:
    _canary_pool(task, task_facts(task, backend), backend, facts_key(task, backend))  # once per task, and cached
    counting = CountingBackend(backend)
    result = grade(task, task.answer.gold_patch, counting, expected=expected)
    assert result.reward == 1.0 and counting.opened == 1


# ------------------------------------------------------------------------------------------ compare


def _run(**fields: object) -> TestRun:
    return TestRun(instance_id="t", backend="bwrap", **{"outcome": "ok", **fields})


@pytest.mark.parametrize(
    ("run", "reason"),
    [
        (_run(statuses={"a": Status.PASSED}), "ok"),
        (_run(statuses={"a": Status.FAILED}), "pattern_mismatch"),
        (_run(statuses={"a": Status.PASSED, "b": Status.PASSED}), "pattern_mismatch"),  # an extra test
        (_run(statuses={}), "tests_errored"),
        (_run(statuses={}, spoof_evidence=["x"]), "spoofing_suspected"),
        (_run(statuses={"a": Status.PASSED}, spoof_evidence=["x"]), "spoofing_suspected"),
        (_run(outcome="timeout"), "timeout"),
        (_run(outcome="output_limit", statuses={"a": Status.PASSED}), "output_limit"),
        (_run(outcome="patch_apply_failed"), "patch_apply_failed"),
    ],
)
def test_compare_reasons(run: TestRun, reason: str) -> None:
    result = compare(run, {"a": Status.PASSED}, _task_stub())
    assert result.reason == reason
    assert result.reward == (1.0 if reason == "ok" else 0.0)


def test_regression_a_spoofing_grade_says_why_in_its_detail() -> None:
    """A predictions file's results keep a grade's detail only: a spoofing_suspected grade read there
    had an empty one."""
    run = _run(statuses={"a": Status.PASSED}, spoof_evidence=["canary x is missing", "exit code 0"])
    assert compare(run, {"a": Status.PASSED}, _task_stub()).detail == "canary x is missing; exit code 0"
    tampered = _run(statuses={"a": Status.PASSED}, tamper=["conftest.py:1: imports pytest"])
    assert compare(tampered, {"a": Status.PASSED}, _task_stub()).detail == "conftest.py:1: imports pytest"
    assert compare(_run(statuses={"a": Status.FAILED}), {"a": Status.PASSED}, _task_stub()).detail == ""


def test_regression_an_observed_run_plants_no_canaries(backend: Backend, sample_tasks: dict[str, Task]) -> None:
    """Observation runs are Pipeline 2's own evidence, never a candidate's reward: canaries drawn at
    random per run added calls of their own to the records (three observations of this gold gave 14,
    12 and 9 rows), the likely reason packaging-0726512's survivor was confirmed in only some runs.
    A grade still plants them."""
    task = sample_tasks["sample__toposort-1"]
    watched = ["toposort/graph.py::DependencyGraph.add_dependency"]
    runs = [run_tests(task, task.answer.gold_patch, backend, observe=watched) for _ in range(2)]
    assert [run.canaries for run in runs] == ["none", "none"]
    assert runs[0].observed and runs[0].observed == runs[1].observed
    assert run_tests(task, task.answer.gold_patch, backend).canaries != "none"


def test_run_tests_without_expectation(backend: Backend, task: Task) -> None:
    run = run_tests(task, "", backend)
    assert run.outcome == "ok" and run.backend == backend.name
    assert all(run.statuses[t] in BAD for t in f2p(task))
    stages = {"open", "apply", "capabilities", "audit", "canaries", "plan", "setup", "command", "parse", "close"}
    assert set(run.durations) == stages | {"tests"}
    assert run.durations["tests"] <= sum(run.durations[s] for s in ("setup", "command", "parse")) + 0.01


def test_an_instrumented_run_ships_the_assertion_plugin_with_its_helper_modules(backend: Backend, sample_tasks: dict[str, Task]) -> None:
    """The assertion plugin is swedeck_assertions.py and its swedeck_assertions_*.py modules, shipped
    together (harness.grading.shipping): in the sandbox it loads, and unittest's assertion methods (its
    wrappers module) record passes and failures at the test's own lines."""
    task = sample_tasks["sample__iniparse-1"]
    run = run_tests(task, "", backend, instrument=True)
    events = [json.loads(line) for line in run.assert_events.splitlines()]
    assert run.outcome == "ok" and run.instrumented, run.detail
    calls = [e for e in events if e.get("source", "").startswith("self.assert")]
    assert {e["outcome"] for e in calls} == {"passed", "failed"}
    assert all(e["file"].startswith("tests/") for e in calls)


# ------------------------------------------------------------------------------------------ honest real runs

LOGS = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "logs"


def _real_cases(runner: str) -> list[str]:
    return sorted(p.name for p in (LOGS / runner).iterdir() if p.is_dir())


def _honest_exit_code(statuses: dict[str, Status], unittest_style: bool) -> int:
    """What the runner exits with: 1 when a test failed (unittest also on an unexpected success)."""
    bad = BAD | ({Status.XPASS} if unittest_style else set())
    return int(any(s in bad for s in statuses.values()))


@pytest.mark.parametrize("case", _real_cases("pytest"))
def test_honest_real_pytest_runs_show_no_spoof_evidence(case: str) -> None:
    """Real runs of pytest 6.2, 7.4 (with pytest-subtests), 8 and 9, each with tests that run pytest
    in-process (pytester, pytest.main), xfail/xpass with and without reasons and unittest subtests:
    the cross-check of text summary, JUnit report and exit code finds nothing, so gold earns 1."""
    folder = LOGS / "pytest" / case
    junit = parse_junit((folder / "report.xml").read_text())
    text = resolve_parser("pytest")((folder / "log.txt").read_text())
    statuses, evidence = command_statuses(text, junit, _honest_exit_code(junit, False), 0, True)
    assert evidence == [] and statuses == junit
    run = TestRun(instance_id="t", backend="bwrap", outcome="ok", statuses=statuses)
    assert compare(run, junit, _task_stub()).reward == 1.0


@pytest.mark.parametrize(("runner", "case"), [(r, c) for r in ("unittest", "django") for c in _real_cases(r)])
def test_honest_real_unittest_runs_show_no_spoof_evidence(runner: str, case: str) -> None:
    """unittest on Python 3.8-3.13 and Django's runner: text only, an unexpected success explains the
    exit code 1 as well as a failure does."""
    folder = LOGS / runner / case
    parsed = resolve_parser("parse_log_django" if runner == "django" else "unittest")((folder / "log.txt").read_text())
    _, evidence = command_statuses(parsed, None, _honest_exit_code(parsed, True), 0, False)
    assert evidence == []


def _task_stub() -> Task:
    return Task.model_validate(
        {
            "instance_id": "t", "source": "local", "repo": "r", "problem_statement": "p", "environment": {"recipe": {}},
            "test_cmd": ["true"], "answer": {"gold_patch": "", "hidden_tests": HiddenTests().model_dump()},
        }
    )  # fmt: skip


def test_regression_an_engine_that_does_not_answer_is_a_sandbox_error(task: Task) -> None:
    """The Docker engine timed out (a read timeout of the SDK) while a sandbox opened, and the
    exception left grade(): now it is a grade with reason sandbox_error, an infrastructure fault."""

    class Stalled:
        name = "stalled"

        def prepare(self, task: Task) -> None:
            pass

        def open(self, task: Task, *, network: bool = False) -> Sandbox:
            raise TimeoutError("UnixHTTPConnectionPool(host='localhost'): Read timed out. (read timeout=60)")

        def image_digest(self, task: Task) -> str:
            return ""

    result = grade(task, "", Stalled(), expected={"t": Status.PASSED})
    assert (result.reward, result.reason) == (0.0, "sandbox_error") and "Read timed out" in result.detail
