"""Groups of agent rollouts on a task, stored as Parquet, and the cheating report over a run.

A run folder holds one folder per task (written atomically, like Pipeline 1's): the trajectories of
every rollout and the task itself, which the audit needs to know the hidden-test paths.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from curation.pipeline1 import TASK_FILE
from curation.store import commit_folder, read_records
from harness.agent.loop import AgentConfig
from harness.agent.audit import Finding, audit
from harness.agent.engine import Engine
from harness.names import under
from harness.records import Task, TrajectoryRecord, content_hash
from harness.sandboxes.sandbox import Backend
from training.envs import SWEEnv

TRAJECTORIES = "trajectories.parquet"


def run_group(
    task: Task,
    engine: Engine,
    backend: Backend,
    *,
    n: int,
    config: AgentConfig,
    config_hash: str,
    out: Path,
    seed: int = 0,
    on_done: Callable[[TrajectoryRecord], None] = lambda record: None,
) -> list[TrajectoryRecord]:
    """``n`` rollouts of one group on ``task``, graded by the one grader, written to ``out/<id>/``."""
    env = SWEEnv([task], backend, config, config_hash)
    group_id = content_hash([task.instance_id, config_hash, seed])
    records = []
    for i in range(n):
        record = env.trajectory(task.instance_id, engine, seed=seed + 1000 * i, group_id=group_id, rollout_id=f"{group_id}-{i}")
        records.append(record)
        on_done(record)
    commit_folder(under(out, task.instance_id), [("trajectories", TrajectoryRecord, records)], {TASK_FILE: task.model_dump_json()})
    return records


class AuditRow(BaseModel):
    """One rollout's cheating findings, with what it earned."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    rollout_id: str
    termination: str
    reward: float
    findings: list[Finding]


def hidden_paths(task: Task) -> list[str]:
    """The test files an agent must never see: every path the hidden tests add or change."""
    return sorted(set(task.test_paths) | set(task.answer.hidden_tests.files))


def audit_run(run_dir: Path) -> list[AuditRow]:
    rows = []
    for folder in sorted(p for p in run_dir.iterdir() if (p / TRAJECTORIES).exists()):
        task = Task.model_validate_json((folder / TASK_FILE).read_text())
        for record in read_records(folder / TRAJECTORIES, TrajectoryRecord):
            findings = audit(record, hidden_paths(task))
            rows.append(AuditRow(**record.model_dump(include={"instance_id", "rollout_id", "termination", "reward"}), findings=findings))
    return rows
