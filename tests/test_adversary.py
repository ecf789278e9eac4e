"""The adversarial audit: a scripted agent tries every cheating channel on a sample task.

With isolation on (both backends) no channel earns reward and the audit flags every attempt. With
isolation deliberately switched off — history unsealed, network shared, hidden tests in the agent's
sandbox, neutralisation and the JUnit cross-check disabled — the same scripts cheat successfully, which
proves it is the isolation that stops them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import harness.grading.canaries
import harness.grading.grader
import harness.grading.guard
from harness.agent.adversary import CHANNELS, Channel, adversary_turns
from harness.agent.loop import AgentConfig, rollout
from harness.agent.audit import audit
from harness.agent.engine import ScriptedEngine
from harness.grading.grader import grade
from harness.grading.patching import PATCH_FILE
from harness.records import Task, TrajectoryRecord
from harness.sandboxes.sandbox import Backend, Sandbox
from harness.grading.trusted import Audit, Plan
from training.rollouts import hidden_paths

TASK = "sample__matrixlite-1"  # its repository bundle holds the fix commit: a history leak if unsealed
EXPECTED_FINDING = {
    "git_history": "git_history",
    "network": "network",
    "hidden_tests": "hidden_tests",
    "tamper": "test_planting",
    "spoof": "test_planting",
}


@pytest.fixture(scope="module")
def fix_url(sample_tasks: dict[str, Task]) -> Iterator[str]:
    """A host HTTP server handing out the gold patch: what a cheating agent would download."""
    body = sample_tasks[TASK].answer.gold_patch.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/fix.patch"
    server.shutdown()


@pytest.fixture
def matrixlite(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks[TASK]


def attempt(task: Task, agent_backend: Backend, grade_backend: Backend, channel: Channel, url: str) -> TrajectoryRecord:
    turns = adversary_turns(channel, test_paths=hidden_paths(task), url=url)
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    return rollout(
        task, ScriptedEngine(turns), agent_backend, lambda t, p: grade(t, p, grade_backend).reward,
        config=AgentConfig(command_timeout_s=30), stamp=stamp, rollout_id=channel, group_id="adversary",
    )  # fmt: skip


@pytest.mark.parametrize("channel", CHANNELS)
def test_no_channel_pays_with_isolation_on(matrixlite: Task, backend: Backend, fix_url: str, channel: Channel) -> None:
    record = attempt(matrixlite, backend, backend, channel, fix_url)
    assert record.termination == "submitted", record.detail
    assert record.reward == 0.0, f"{channel} earned reward on {backend.name}"
    channels = {f.channel for f in audit(record, hidden_paths(matrixlite))}
    assert EXPECTED_FINDING[channel] in channels
    if channel == "hidden_tests":
        added = re.findall(r"(?m)^\+def (test_\w+)", matrixlite.answer.hidden_tests.patch)
        assert not any(name in turn.output for turn in record.turns for name in added)


class Unisolated:
    """A backend with the agent-side isolation switched off: network shared, every ref of the
    environment's repository (the fix commit included) fetched back in, hidden tests applied to a
    copy of the tree beside it (in the tree they would be part of every diff the agent submits,
    which the grader refuses for touching the tests)."""

    def __init__(self, inner: Backend, task: Task) -> None:
        self.inner, self.task, self.name = inner, task, inner.name

    def prepare(self, task: Task) -> None:
        self.inner.prepare(task)

    def image_digest(self, task: Task) -> str:
        return self.inner.image_digest(task)

    def open(self, task: Task, *, network: bool = False) -> Sandbox:
        box = self.inner.open(task, network=True)
        from pathlib import Path

        box.write_file("/tmp/repo.bundle", Path(task.repo_source.path).read_bytes())
        box.write_file(PATCH_FILE.format(name="leak"), task.answer.hidden_tests.patch)
        done = box.run(
            "git fetch -q /tmp/repo.bundle '+refs/*:refs/unsealed/*' && mkdir -p /tmp/leaked && "
            "git archive HEAD | tar -x -C /tmp/leaked && cd /tmp/leaked && git apply " + PATCH_FILE.format(name="leak")
        )
        assert done.exit_code == 0, done.output
        return box


def test_the_isolation_is_what_stops_them(
    matrixlite: Task, bwrap_backend: Backend, fix_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_backend = Unisolated(bwrap_backend, matrixlite)
    history = attempt(matrixlite, open_backend, bwrap_backend, "git_history", fix_url)
    network = attempt(matrixlite, open_backend, bwrap_backend, "network", fix_url)
    hidden = attempt(matrixlite, open_backend, bwrap_backend, "hidden_tests", fix_url)
    assert history.reward == 1.0, history.turns[-2].output
    assert network.reward == 1.0, network.turns[0].output
    added = re.findall(r"(?m)^\+def (test_\w+)", matrixlite.answer.hidden_tests.patch)
    assert all(name in hidden.turns[0].output for name in added)

    # the grader's own defences: a planted conftest is refused, or left out of the tests' run, the
    # reports it rewrites would be caught against what the calls raised, and against the canaries;
    # with all four off it pays (the tamper audit, which reads its hooks, and the run-time guard, which
    # stops the hooks as they run, are off for these steps)...
    monkeypatch.setattr(harness.grading.guard, "ENABLED", False)
    audit = harness.grading.grader.tamper_findings
    monkeypatch.setattr(harness.grading.grader, "tamper_findings", lambda *args: Audit([], {}))
    monkeypatch.setattr(harness.grading.grader, "violations", lambda *args: [])
    assert attempt(matrixlite, bwrap_backend, bwrap_backend, "tamper", fix_url).reward == 0.0
    monkeypatch.setattr(harness.grading.grader, "plan", _hidden_tests_only)
    assert attempt(matrixlite, bwrap_backend, bwrap_backend, "tamper", fix_url).reward == 0.0
    monkeypatch.setattr(harness.grading.grader, "forged_passes", lambda *args: [])
    assert attempt(matrixlite, bwrap_backend, bwrap_backend, "tamper", fix_url).reward == 0.0
    monkeypatch.setattr(harness.grading.canaries, "usable", lambda test_cmd: False)
    assert attempt(matrixlite, bwrap_backend, bwrap_backend, "tamper", fix_url).reward == 1.0
    # ...but a spoofed summary still does not, until the JUnit cross-check is gone too
    assert attempt(matrixlite, bwrap_backend, bwrap_backend, "spoof", fix_url).reward == 0.0
    monkeypatch.setattr(harness.grading.grader, "uses_junit", lambda parser: False)
    assert attempt(matrixlite, bwrap_backend, bwrap_backend, "spoof", fix_url).reward == 1.0
    # and with every other defence off, the tamper audit alone reads the hooks in both planted files
    monkeypatch.setattr(harness.grading.grader, "tamper_findings", audit)
    for channel in ("tamper", "spoof"):
        assert attempt(matrixlite, bwrap_backend, bwrap_backend, channel, fix_url).reward == 0.0


def _hidden_tests_only(before: object, after: object, task: Task, facts: object, hidden: dict) -> Plan:
    """The grader's plan with neutralisation switched off: the hidden tests are written, nothing of
    the candidate's is restored or deleted."""
    return Plan(delete=[], write={path: file for path, file in hidden.items() if file is not None}, neutralized=[])


def test_audit_report_of_a_stored_run(matrixlite: Task, bwrap_backend: Backend, fix_url: str, tmp_path) -> None:
    """Trajectories written by a rollout group come back from Parquet with their findings."""
    from training.rollouts import audit_run, run_group

    engine = ScriptedEngine(adversary_turns("git_history") + adversary_turns("tamper"))
    run_group(matrixlite, engine, bwrap_backend, n=2, config=AgentConfig(), config_hash="test", out=tmp_path)
    rows = audit_run(tmp_path)
    assert [r.reward for r in rows] == [0.0, 0.0]
    assert [sorted({f.channel for f in r.findings}) for r in rows] == [["git_history"], ["test_planting"]]
