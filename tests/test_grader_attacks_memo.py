"""Attacks on the static audit's memo (``harness.grading.trusted.audited``: findings remembered by a
sha256 of the audited files' paths and bytes and the patch): a change first graded clean, then one
that forges and looks the same to anything coarser than those bytes, hoping to be served the clean
verdict. Each pair has the same files' sizes: the forger's path differs from the clean one's only in
case, or in its Unicode normal form (NFC against NFD), or not at all (one byte differs per
sensitive name). The forger (the runtime attack ``class-runtest``, which the audit flags) earns 1 with
the audit only flagging (no canaries, no guard: the control), and 0 as ``tamper_suspected`` right
after its clean twin was audited and remembered, on both backends and both styles. (Code the change
writes after the listing is the run-time guard's: tests/test_grader_attacks_written.py.)
"""

from __future__ import annotations

import textwrap
import unicodedata
from collections.abc import Callable

import pytest

from harness.grading import grader, trusted
from harness.grading import guard as runtime_guard
from harness.records import Grade, Task
from harness.sandboxes.sandbox import Backend
from tests.test_grader_attacks_runtime import ATTACKS, STYLES

FORGER = textwrap.dedent(ATTACKS["class-runtest"])
# the same bytes but for the names the audit knows: "_pytest" -> "xpytest" (it fails to import, which
# does not matter: only its audit is remembered)
CLEAN = FORGER.replace("_pytest", "xpytest")
PATHS = {  # (the clean file's name, the forger's), beside the package's __init__.py
    "same-path": ("_speed.py", "_speed.py"),
    "case": ("_Speed.py", "_speed.py"),
    "normal-form": (unicodedata.normalize("NFC", "_café.py"), unicodedata.normalize("NFD", "_café.py")),
}


def _patch(task: Task, package: str, make_patch: Callable, name: str, code: str) -> str:
    folder = package.rpartition("/")[0]
    module = f"{folder}.{name.removesuffix('.py')}"  # a literal: the name as the file has it (no NFKC of an identifier)
    return make_patch(task, {f"{folder}/{name}": code, package: lambda s: s + f"\nimport importlib\nimportlib.import_module({module!r})\n"})


def _grade(task: Task, patch: str, backend: Backend, monkeypatch: pytest.MonkeyPatch, tamper: str) -> Grade:
    with monkeypatch.context() as mp:
        mp.setattr(grader.canaries, "usable", lambda test_cmd: False)
        mp.setattr(runtime_guard, "ENABLED", False)
        return grader.grade(task, patch, backend, tamper=tamper)  # type: ignore[arg-type]


# the slow tier's: tests/test_tamper.py holds the memo key's own regression test in the default one
CASES = [pytest.param(p, s, marks=pytest.mark.slow) for p in PATHS for s in STYLES]


@pytest.mark.parametrize(("paths", "style"), CASES)
def test_a_forger_is_never_served_the_verdict_its_clean_look_alike_earned(
    backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, monkeypatch: pytest.MonkeyPatch, paths: str, style: str
) -> None:
    task_id, package = STYLES[style]
    task = sample_tasks[task_id]
    clean_name, forger_name = PATHS[paths]
    assert len(CLEAN.encode()) == len(FORGER.encode())
    clean = _patch(task, package, make_patch, clean_name, CLEAN)
    forger = _patch(task, package, make_patch, forger_name, FORGER)
    control = _grade(task, forger, backend, monkeypatch, "flag")
    assert (control.reward, control.reason) == (1.0, "ok") and control.tamper, (control.reason, control.detail, control.tamper)
    trusted._AUDITED.clear()
    first = _grade(task, clean, backend, monkeypatch, "zero")
    assert first.tamper == [] and len(trusted._AUDITED) == 1, first.tamper  # the clean verdict, remembered
    result = _grade(task, forger, backend, monkeypatch, "zero")
    assert (result.reward, result.reason) == (0.0, "tamper_suspected"), (result.reason, result.detail)
    assert any("_pytest" in finding for finding in result.tamper) and len(trusted._AUDITED) == 2, result.tamper
