"""Gold coverage: one traced gold run records which lines and functions each test ran."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.config import Settings
from harness.grading.grader import run_tests
from harness.grading.parsers import uses_junit
from harness.grading.shipping import PLUGINS
from harness.records import Pipeline1Result, Task, content_hash
from harness.sandboxes.envs import prepare_tree
from probes.workspace import Trees

COVERAGE_PLUGIN = PLUGINS / "swedeck_coverage.py"

Lines = dict[str, set[int]]  # path -> line numbers (or first lines of code objects)


@dataclass
class GoldCoverage:
    """Per-test coverage of the gold tree's changed Python files, from one traced gold run."""

    usable: bool
    why: str = ""  # why not usable
    files: list[str] = field(default_factory=list)  # the paths traced
    lines: dict[str, Lines] = field(default_factory=dict)  # test id -> lines it ran
    calls: dict[str, Lines] = field(default_factory=dict)  # test id -> code objects it entered
    global_lines: Lines = field(default_factory=dict)  # ran outside any test: counts for every test
    global_calls: Lines = field(default_factory=dict)
    always: set[str] = field(default_factory=set)  # tests that always run (no record, started a process)
    executions: int = 0  # tests run to record it
    log_path: str = ""

    def to_json(self) -> str:
        def plain(table: Lines) -> dict[str, list[int]]:
            return {k: sorted(v) for k, v in table.items()}

        return json.dumps({
            "usable": self.usable, "why": self.why, "files": self.files,
            "lines": {t: plain(v) for t, v in self.lines.items()}, "calls": {t: plain(v) for t, v in self.calls.items()},
            "global_lines": plain(self.global_lines), "global_calls": plain(self.global_calls),
            "always": sorted(self.always), "executions": self.executions, "log_path": self.log_path,
        })  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> GoldCoverage:
        raw = json.loads(text)

        def sets(table: Mapping[str, list[int]]) -> Lines:
            return {k: set(v) for k, v in table.items()}

        return cls(
            usable=raw["usable"], why=raw["why"], files=raw["files"],
            lines={t: sets(v) for t, v in raw["lines"].items()}, calls={t: sets(v) for t, v in raw["calls"].items()},
            global_lines=sets(raw["global_lines"]), global_calls=sets(raw["global_calls"]),
            always=set(raw["always"]), executions=raw["executions"], log_path=raw["log_path"],
        )  # fmt: skip


def _merge(into: Lines, table: Mapping[str, Iterable[int]]) -> None:
    for path, values in table.items():
        into.setdefault(path, set()).update(values)


def parse_coverage(text: str, files: Sequence[str], expected: Iterable[str]) -> GoldCoverage:
    """The plugin's records as a ``GoldCoverage`` (unusable when it cannot vouch for every test)."""
    cov = GoldCoverage(usable=True, files=list(files))
    globals_seen = 0
    for raw in text.splitlines():
        try:
            row = json.loads(raw)
        except json.JSONDecodeError:
            return GoldCoverage(usable=False, why="a coverage record was cut short", files=list(files))
        if row.get("lost"):
            return GoldCoverage(usable=False, why="another tracer replaced the coverage tracer", files=list(files))
        if row.get("global"):
            globals_seen += 1
            if row.get("spawned"):
                return GoldCoverage(usable=False, why="a process started outside any test", files=list(files))
            _merge(cov.global_lines, row.get("lines", {}))
            _merge(cov.global_calls, row.get("calls", {}))
            continue
        test_id = row.get("test", "")
        if row.get("spawned"):
            cov.always.add(test_id)
        _merge(cov.lines.setdefault(test_id, {}), row.get("lines", {}))
        _merge(cov.calls.setdefault(test_id, {}), row.get("calls", {}))
    if not globals_seen:
        return GoldCoverage(usable=False, why="no coverage record from pytest (another runner?)", files=list(files))
    cov.always |= {t for t in expected if t not in cov.lines}
    # a traced file nothing ran (not imported, or imported from another copy) vouches for nothing
    ran = set(cov.global_lines) | set(cov.global_calls)
    for table in [*cov.lines.values(), *cov.calls.values()]:
        ran |= set(table)
    cov.files = [path for path in files if path in ran]
    return cov


def gold_coverage(
    task: Task,
    backend,  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    p1: Pipeline1Result,
    *,
    log_dir: Path | None = None,
    cache_dir: Path | None = None,
    tree: Path | None = None,
    runner=run_tests,  # noqa: ANN001 - harness.grading.grader.run_tests or a probe session pool's run_tests
) -> GoldCoverage:
    """One gold run with the coverage plugin tracing gold's Python files, checked against gold's
    pattern; a usable result is cached in ``cache_dir`` by task, pattern and plugin (a cached result
    reports 0 executions, since nothing ran for it)."""
    cache = None
    if cache_dir is not None:
        key = content_hash([task.task_hash(), getattr(backend, "name", ""), p1.expected_status, COVERAGE_PLUGIN.read_text()])
        cache = cache_dir / f"gold-coverage-{key}.json"
        if cache.exists():
            found = GoldCoverage.from_json(cache.read_text())
            found.executions = 0
            return found
    if not uses_junit(task.log_parser):
        return GoldCoverage(usable=False, why=f"the {task.log_parser} runner is not pytest")
    if tree is None:
        tree = prepare_tree(task, getattr(backend, "settings", None) or Settings.from_env())
    with Trees(task, tree) as trees:
        files = [p for p, text in trees.gold.items() if p.endswith(".py") and text is not None] if trees.ok else []
    if not files:
        return GoldCoverage(usable=False, why="gold changes no Python file")
    run = runner(task, task.answer.gold_patch, backend, log_dir=log_dir, coverage=files)
    expected = {k: str(v) for k, v in p1.expected_status.items()}
    if run.outcome != "ok" or run.spoof_evidence:
        cov = GoldCoverage(usable=False, why=f"the traced gold run failed: {run.outcome} {run.detail[-300:]}")
    elif {k: str(v) for k, v in run.statuses.items()} != expected:
        cov = GoldCoverage(usable=False, why="the traced gold run did not reproduce gold's pattern")
    else:
        cov = parse_coverage(run.coverage, files, expected)
    cov.executions, cov.log_path = len(run.statuses), run.log_path
    if cache is not None and cov.usable:  # a failed run may be the machine's fault: try again next time
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(cov.to_json())
    return cov
