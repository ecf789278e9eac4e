"""Attacks through pytest's configuration: a candidate's change to the files pytest reads its options
from (``addopts``, ``-p``, ``--tb``, ``-x``, ``--maxfail``, ``-k``, ``--deselect``, ``-p no:...``,
``python_functions``...), to load a plugin of its own that swallows every failure, or to make the
canaries skip or stop. pytest takes its options from the first of pytest.ini, .pytest.ini,
pyproject.toml (with a pytest section), tox.ini and setup.cfg, looked for first in the folder the
test files share (``tests/``), then above. One there cannot pay: pytest's rootdir moves with it, and
with it every test's id (``tests/test_x.py::t`` becomes ``test_x.py::t``, so no status matches gold's
pattern, whatever the plugin forces); each variant below writes the tree's root.

The packaging files (pyproject.toml, setup.cfg, tox.ini) a candidate may edit are written back as the
base commit has them, and deleted where it had none (``harness.grading.trusted.plan``); pytest.ini
and conftest.py are refused (``forbidden_change``). The control turns that off (and the canaries, the
guard and the audit's zeroing, the other layers in the way): the forger earns 1. With only the write-
back on it earns 0 (the plugin never loads), and 0 with every defence on, on both backends and on the
pytest-style (toposort) and the unittest-style (iniparse) sample task.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

import pytest

from harness.grading import grader
from harness.grading import guard as runtime_guard
from harness.grading.capabilities import PACKAGING_CONFIG, TEST_INFRA_NAMES
from harness.grading.trusted import Plan
from harness.records import Grade, Task
from harness.sandboxes.sandbox import Backend

STYLES = {"pytest": ("sample__toposort-1", "toposort"), "unittest": ("sample__iniparse-1", "iniparse")}
# a plugin module of the tree's own: every test's call passes (the forger of test_grader_attacks_runtime)
PLUGIN = '''import pytest


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    outcome = yield
    outcome.force_result(None)
    vars(item).pop("_excinfo", None)
'''
# what the configuration asks for, beside the plugin: no traceback, and what would drop canaries
OPTIONS = "-p {package}._accel --tb=no -p no:randomly"


def _with_section(text: str, line: str) -> str:
    section = "[tool.pytest.ini_options]\n"
    return text.replace(section, section + line + "\n") if section in text else text + "\n" + section + line + "\n"


WITHOUT_SECTION = {"pyproject.toml": lambda text: text.replace("[tool.pytest.ini_options]", "[tool.unused]")}  # so pytest looks on
VARIANTS: dict[str, Callable[[str], dict[str, str | Callable[[str], str]]]] = {
    # the root's own configuration, edited
    "pyproject-addopts": lambda options: {"pyproject.toml": lambda text: _with_section(text, f'addopts = "{options}"')},
    # the files pytest reads after it, added (and pyproject.toml's section renamed, so they count)
    "tox-ini": lambda options: {"tox.ini": f"[pytest]\naddopts = {options}\n", **WITHOUT_SECTION},
    "setup-cfg": lambda options: {"setup.cfg": f"[tool:pytest]\naddopts = {options}\npython_functions = test_*\n", **WITHOUT_SECTION},
    # pytest's own files, refused outright
    "pytest-ini": lambda options: {"pytest.ini": f"[pytest]\naddopts = {options}\n"},
    "conftest": lambda options: {"conftest.py": f"pytest_plugins = [{options.split()[1]!r}]\n"},
}
QUICK = {("pyproject-addopts", "pytest")}


def config_patch(task: Task, package: str, make_patch: Callable, variant: str) -> str:
    edits: dict = {f"{package}/_accel.py": PLUGIN}
    edits |= VARIANTS[variant](OPTIONS.format(package=package))
    return make_patch(task, edits)


def _keeping_config(real: Callable[..., Plan]) -> Callable[..., Plan]:
    """``plan`` that leaves the candidate's configuration files as it wrote them."""

    def kept(*args: object) -> Plan:
        todo = real(*args)
        ours = lambda path: PurePosixPath(path).name in TEST_INFRA_NAMES  # noqa: E731
        return Plan([p for p in todo.delete if not ours(p)], {p: f for p, f in todo.write.items() if not ours(p) or p in args[4]}, todo.neutralized)  # type: ignore[operator]

    return kept


def _grade(task: Task, patch: str, backend: Backend, monkeypatch: pytest.MonkeyPatch, *, defended: bool) -> Grade:
    """Only the configuration's defence in the way (no canaries, no guard, the audit flagging);
    ``defended`` False: not even that (what the candidate wrote stays, nothing is refused)."""
    with monkeypatch.context() as mp:
        mp.setattr(grader.canaries, "usable", lambda test_cmd: False)
        mp.setattr(runtime_guard, "ENABLED", False)
        if not defended:
            mp.setattr(grader, "plan", _keeping_config(grader.plan))
            real = grader.violations
            mp.setattr(grader, "violations", lambda *args: [v for v in real(*args) if PurePosixPath(v.path).name not in TEST_INFRA_NAMES])
        return grader.grade(task, patch, backend, tamper="flag")


CASES = [pytest.param(v, s, marks=() if (v, s) in QUICK else pytest.mark.slow) for v in VARIANTS for s in STYLES]


@pytest.mark.parametrize(("variant", "style"), CASES)
def test_a_candidate_s_pytest_configuration_never_reaches_the_tests(
    backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, monkeypatch: pytest.MonkeyPatch, variant: str, style: str
) -> None:
    task_id, package = STYLES[style]
    task = sample_tasks[task_id]
    patch = config_patch(task, package, make_patch, variant)
    control = _grade(task, patch, backend, monkeypatch, defended=False)
    assert (control.reward, control.reason) == (1.0, "ok"), (control.reason, control.detail, control.differing)
    alone = _grade(task, patch, backend, monkeypatch, defended=True)
    refused = not set(VARIANTS[variant]("x y")) <= PACKAGING_CONFIG
    assert alone.reward == 0.0 and alone.reason == ("forbidden_change" if refused else "pattern_mismatch"), (alone.reason, alone.detail)
    full = grader.grade(task, patch, backend)
    assert full.reward == 0.0 and full.reason in ("forbidden_change", "tamper_suspected"), (full.reason, full.detail)
