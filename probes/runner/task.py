"""One task's model-free probes: generated (cached by content), graded, surviving wrong ones checked."""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import json
from pathlib import Path

from harness.config import Settings
from harness.names import write_whole
from harness.records import Pipeline1Result, ProbeResult, Task, content_hash
from harness.sandboxes.envs import prepare_tree
from probes.differential import check_survivors, session_for
from probes.generate import Candidate, correct_alternatives, plausible_wrong
from probes.runner.grading import run_probes
from probes.workspace import recall, remember

TIMEOUT_FLOOR_S = 30.0  # a probe's per-command timeout is at least this ...
TIMEOUT_FACTOR = 10.0  # ... or this many times one Pipeline 1 test run, whichever is larger


def probe_timeout(p1: Pipeline1Result) -> float:
    """Per-command timeout for probes: TIMEOUT_FACTOR x one Pipeline 1 test run, at least the floor."""
    per_run = p1.duration_s / max(p1.runs, 1)
    return max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * per_run)


GENERATION_CODE = (Path(__file__).parents[1], Path(__file__).parents[2] / "harness")  # what generation runs


GENERATION_LIBRARIES = ("mutmut", "libcst")  # whose operators and printing generation uses


@functools.cache
def _generation_code() -> str:
    """The sources of GENERATION_CODE and the versions of GENERATION_LIBRARIES, read once per process
    (not once per task)."""
    versions = [importlib.metadata.version(name) for name in GENERATION_LIBRARIES]
    return content_hash([*versions, *(f.read_text() for folder in GENERATION_CODE for f in sorted(folder.rglob("*.py")))])


def generate(task: Task, tree: Path, p1: Pipeline1Result, cache_dir: Path | None = None) -> list[Candidate]:
    """The task's model-free probes, cached in ``cache_dir`` when given: they are a function of the
    task's content, its FAIL_TO_PASS tests and the code that generates them (every draw is
    derandomised), so the key holds the sources of ``probes`` and ``harness`` and a change to either
    generates again. A cached probe comes with the files it produces, remembered as at its making
    (``probes.workspace.remember``), so sessions need no host clone to take it."""
    if cache_dir is None:
        return plausible_wrong(task, tree, p1.fail_to_pass) + correct_alternatives(task, tree)
    cache = cache_dir / f"candidates-{content_hash([task.task_hash(), p1.fail_to_pass, _generation_code()])}.json"
    if cache.exists():
        stored = json.loads(cache.read_text())
        for row in stored:
            if row["known"]:
                remember(tree, row["patch"], row["files"])
        return [Candidate(**{k: v for k, v in row.items() if k not in ("known", "files")}) for row in stored]
    candidates = plausible_wrong(task, tree, p1.fail_to_pass) + correct_alternatives(task, tree)
    rows = [{**dataclasses.asdict(c), **dict(zip(("known", "files"), recall(tree, c.patch)))} for c in candidates]
    write_whole(cache, json.dumps(rows))  # two runs may write the same entry
    return candidates


def probe_task(
    task: Task,
    backend,  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    p1: Pipeline1Result,
    stamp: dict[str, str],
    *,
    selection: bool = True,
    log_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float | None = None,
    differential: bool = True,
) -> list[ProbeResult]:
    """Generate the model-free probes of a task Pipeline 1 kept, and grade them (per-command timeout
    ``timeout_s``, default ``probe_timeout(p1)``). A rejected task has no gold pattern to hold probes
    to, so it gets none. With ``selection`` the gold coverage is recorded once here when it can pay for
    itself (``worth_tracing``), cached in the settings' cache folder (a fact of the task's content and
    gold pattern, like the trusted facts: a second run folder over the same tasks does not trace
    again). With ``differential`` every wrong
    probe that survived is run against gold by ``probes.differential``: evidence only with a
    distinguishing input, else ``likely_equivalent``."""
    if p1.decision != "keep" or not p1.expected_status:
        return []
    backend.prepare(task)
    settings = getattr(backend, "settings", None) or Settings.from_env()
    tree = prepare_tree(task, settings)
    timeout_s = probe_timeout(p1) if timeout_s is None else timeout_s
    candidates = generate(task, tree, p1, settings.cache_dir / "probes")
    graded = run_probes(
        task, candidates, backend, p1, stamp, selection=selection, log_dir=log_dir, workers=workers,
        timeout_s=timeout_s, tree=tree, coverage_cache=settings.cache_dir / "coverage",
    )  # fmt: skip
    if not differential or not any(p.kind == "plausible_wrong" and p.reward == 1.0 for p in graded):
        return graded
    return check_survivors(session_for(task, backend, p1.fail_to_pass, tree), graded)
