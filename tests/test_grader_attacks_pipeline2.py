"""Attacks through the other ways a patch is graded: a predictions file graded on a deck's raw and
strengthened arms (``swedeck grade --predictions ... --source DECK --arm ...``,
``curation.predictions``), and Pipeline 2's probe sessions (``probes.session``: no canaries, no
run-time guard, for our own rewrites of gold's files).

Through the arms, the attacks of the other files (the runtime forger of test_grader_attacks_runtime.py,
the twins forger, the code written at run time, the forger of tests asserting no literal, a plugin
through pyproject.toml) each resolve on both arms with the defences off (the control) and on neither
with them on, on both backends.

Probe sessions trusted that a probe carries no code that forges: it is a rewrite of gold's files. But
gold is a corpus's, and Pipeline 1 runs it instrumented, without the guard: a gold that forges at run
time with nothing a reader of the source sees (the code written at run time) reached the sessions,
where its probes earned 1 while ``grade`` gives each 0.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import test_decks
from test_predictions import TASK, deck  # noqa: F401 - the deck fixture: moneyfmt, raw and strengthened arms

import curation.predictions
from harness.grading import grader
from harness.grading import guard as runtime_guard
from harness.records import Prediction, Task
from harness.sandboxes.sandbox import Backend
from probes.generate import Candidate
from probes.runner import grading as probe_grading
from tests.test_grader_attacks_config import PLUGIN, _keeping_config, _with_section
from tests.test_grader_attacks_runtime import ATTACKS, SWALLOW
from tests.test_grader_attacks_truth import BELIEVES, FORGER as TRUTH_FORGER
from tests.test_grader_attacks_twins import FORGER as TWINS_FORGER
from tests.test_grader_attacks_written import PREAMBLE, WRITERS

PACKAGE = "moneyfmt"
# each an attack of another file, on the deck's task (path -> new content or a function of the old)
ATTACK_EDITS: dict[str, Callable[[], dict]] = {
    "runtime-plugin": lambda: {f"{PACKAGE}/__init__.py": lambda s: s + "\n" + SWALLOW + textwrap.dedent(ATTACKS["plugin-pdb-config"])},
    "twins-forger": lambda: {f"{PACKAGE}/__init__.py": lambda s: s + "\n" + textwrap.dedent(TWINS_FORGER.format(tells=["order_first"]))},
    "written-module": lambda: {f"{PACKAGE}/__init__.py": lambda s: s + "\n" + PREAMBLE + WRITERS["new-module"]},
    "no-look-alike-forger": lambda: {
        f"{PACKAGE}/__init__.py": lambda s: s + "\n" + TRUTH_FORGER.format(believes=textwrap.indent(BELIEVES["no-look-alike"], "    "))
    },
    "pyproject-plugin": lambda: {f"{PACKAGE}/_accel.py": PLUGIN, "pyproject.toml": lambda t: _with_section(t, f'addopts = "-p {PACKAGE}._accel"')},
}


def _predictions(tmp_path: Path, patches: dict[str, str]) -> list[Prediction]:
    rows = [{"instance_id": TASK, "model_patch": patch, "model_name_or_path": name} for name, patch in patches.items()]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return curation.predictions.read_predictions(path)


@pytest.mark.slow  # the arms grade through grade itself: the attacks' own files hold them in the default tier
@pytest.mark.parametrize("names", [pytest.param(["written-module"]), pytest.param(sorted(ATTACK_EDITS))])
def test_attacks_graded_through_a_deck_s_arms_resolve_on_neither(
    backend: Backend, deck: Path, sample_tasks: dict[str, Task], make_patch: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    names: list[str],
) -> None:  # fmt: skip
    task = sample_tasks[TASK]
    predictions = _predictions(tmp_path, {name: make_patch(task, ATTACK_EDITS[name]()) for name in names})
    with monkeypatch.context() as mp:  # the control: no canaries, no guard, the audit flagging, the config as written
        mp.setattr(grader.canaries, "usable", lambda test_cmd: False)
        mp.setattr(runtime_guard, "ENABLED", False)
        mp.setattr(curation.predictions, "grade", lambda *args, **kwargs: grader.grade(*args, **kwargs, tamper="flag"))
        mp.setattr(grader, "plan", _keeping_config(grader.plan))
        control = curation.predictions.grade_predictions(deck, predictions, ["raw", "strengthened"], backend, "c", tmp_path / "control")
    assert {(r.arm, r.model_name_or_path) for r in control if r.resolved} == {(arm, n) for arm in ("raw", "strengthened") for n in names}, [
        (r.arm, r.model_name_or_path, r.reason, r.detail[:200]) for r in control if not r.resolved
    ]
    graded = curation.predictions.grade_predictions(deck, predictions, ["raw", "strengthened"], backend, "c", tmp_path / "graded")
    assert len(graded) == 2 * len(names)
    for record in graded:
        assert not record.resolved and record.reason in ("tamper_suspected", "spoofing_suspected", "pattern_mismatch"), (
            record.arm, record.model_name_or_path, record.reason, record.detail[:300])  # fmt: skip


def test_regression_a_gold_that_forges_at_run_time_made_its_probes_pass_in_probe_sessions(
    backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose gold carries the code written at run time (a corpus's gold nothing vetted under the
    guard), and a probe that carries it too (a partial gold would): in a probe session the probe
    earned 1; sessions are used now only where gold grades clean as a candidate would, so the probe
    goes to ``grade`` and earns 0."""
    clean = sample_tasks["sample__toposort-1"]
    forger = make_patch(clean, {"toposort/__init__.py": lambda s: s + "\n" + PREAMBLE + WRITERS["new-module"]})
    hostile = clean.model_copy(update={"instance_id": clean.instance_id + "-hostile", "answer": clean.answer.model_copy(
        update={"gold_patch": clean.answer.gold_patch + forger})})  # fmt: skip
    pattern = grader.gold_pattern(clean, backend)  # what Pipeline 1's instrumented gold run recorded: every test passing
    p1 = test_decks.p1(hostile).model_copy(update={"expected_status": {k: str(v) for k, v in pattern.items()}})
    stamp = {"config_hash": "c", "task_hash": hostile.task_hash(), "instance_id": hostile.instance_id}
    probe = [Candidate("plausible_wrong", "partial_gold", "gold's forger without its fix", forger)]
    with monkeypatch.context() as mp:
        mp.setattr(probe_grading, "gold_grades_clean", lambda task, backend: True)
        control = probe_grading.run_probes(hostile, probe, backend, p1, stamp, selection=False)
    assert [(r.reward, r.reason) for r in control] == [(1.0, "ok")], control
    assert not probe_grading.gold_grades_clean(hostile, backend)
    result = probe_grading.run_probes(hostile, probe, backend, p1, stamp, selection=False)
    assert [(r.reward, r.reason) for r in result] == [(0.0, "tamper_suspected")], result
    assert probe_grading.gold_grades_clean(clean, backend)  # an honest gold keeps its sessions


@pytest.mark.slow
def test_attacks_the_audit_reads_are_graded_by_grade_even_as_probes(
    backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable
) -> None:
    """The other files' attacks whose code the static audit reads (a plugin registered from the
    package, the twins forger, a plugin through pyproject.toml), handed to the probe runner as probes
    of a task whose gold is clean: the session's own checks send each to ``grade``, and each earns 0.
    (A probe's own code that forges unseen by the audit would still earn 1 in a session: probes are
    only ever generated from gold, ``probes.generate``.)"""
    task = sample_tasks["sample__toposort-1"]
    edits = {
        "runtime-plugin": {"toposort/__init__.py": lambda s: s + "\n" + SWALLOW + textwrap.dedent(ATTACKS["plugin-pdb-config"])},
        "twins-forger": {"toposort/__init__.py": lambda s: s + "\n" + textwrap.dedent(TWINS_FORGER.format(tells=["order_first"]))},
        "pyproject-plugin": {"toposort/_accel.py": PLUGIN, "pyproject.toml": lambda t: _with_section(t, 'addopts = "-p toposort._accel"')},
    }
    probes = [Candidate("plausible_wrong", name, name, make_patch(task, edit)) for name, edit in edits.items()]
    pattern = grader.gold_pattern(task, backend)
    p1 = test_decks.p1(task).model_copy(update={"expected_status": {k: str(v) for k, v in pattern.items()}})
    stamp = {"config_hash": "c", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    results = probe_grading.run_probes(task, probes, backend, p1, stamp, selection=False)
    assert [(r.reward, r.reason) for r in results] == [(0.0, "tamper_suspected")] * len(probes), [(r.reward, r.reason) for r in results]
