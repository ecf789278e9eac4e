"""Pipeline 2 through its Prefect flow: model-free probes and the scripted judge over a Pipeline 1 run,
verdicts and probes in the catalog, resumability, and a judge endpoint that fails."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import catalog_rows
from data import SAMPLE
from flows.config import load_config
from judge.config import JudgeSettings
from judge.scripted import ScriptedJudge

TASKS = {"sample__moneyfmt-1": "too_loose", "sample__slugkit-1": "over_restrictive", "sample__semverlite-1": "accept"}


@pytest.fixture(
    scope="module",
    params=[pytest.param(("sample__moneyfmt-1",), id="one-task"), pytest.param(tuple(TASKS), id="every-verdict", marks=pytest.mark.slow)],
)
def p1_run(request, prefect_api, bwrap_backend, tmp_path_factory) -> tuple[Path, dict[str, str]]:  # noqa: ANN001
    """A Pipeline 1 run over some of TASKS, and their labelled verdicts."""
    from flows.pipeline1 import run_pipeline1

    tasks = {name: TASKS[name] for name in request.param}
    src = tmp_path_factory.mktemp("p2-src")
    for name in tasks:
        shutil.copytree(SAMPLE / name, src / name)
    out = tmp_path_factory.mktemp("p2-run")
    summary = run_pipeline1([src], out, load_config(overrides=["pipeline1.runs=1"]), workers=2)
    assert summary["kept"] == len(tasks)
    return out, tasks


@pytest.mark.prefect
def test_judge_failure_is_recorded_then_retried_with_a_working_endpoint(p1_run: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.pipeline2
    from flows.pipeline2 import run_pipeline2

    run, tasks = p1_run
    cfg = load_config(overrides=["pipeline1.runs=1", "pipeline2.judge.max_retries=1", "pipeline2.judge.backoff_s=0"])
    with ScriptedJudge("labelled", fault="http_500") as url:
        down = run_pipeline2(run, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    assert down["verdicts"] == {"unjudgeable": len(tasks)}
    details = catalog_rows(run / "catalog.duckdb", "select detail from verdicts")
    assert all("500" in d for (d,) in details)

    # the retry judges the model-free probes the failed attempt committed: none is graded again
    graded_again = []
    probe_task = judge.pipeline2.probe_task
    monkeypatch.setattr(judge.pipeline2, "probe_task", lambda task, *a, **k: graded_again.append(task.instance_id) or probe_task(task, *a, **k))
    with ScriptedJudge("labelled") as url:
        judged = run_pipeline2(run, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    assert judged["verdicts"] == Counter(tasks.values())
    assert graded_again == []
    db = run / "catalog.duckdb"
    verdicts = dict(catalog_rows(db, "select instance_id, verdict from verdicts"))
    assert verdicts == tasks
    # every cited probe is a stored probe with an executed grade that supports the verdict
    cited = catalog_rows(
        db,
        "select v.instance_id, v.verdict, p.kind, p.reward from verdicts v, unnest(v.evidence) as e(probe_id) "
        "join probes p on p.probe_id = e.probe_id and p.instance_id = v.instance_id",
    )
    assert {(iid, verdict) for iid, verdict, _, _ in cited} == set(verdicts.items())
    for _, verdict, kind, reward in cited:
        expected = {"too_loose": ("plausible_wrong", 1.0), "over_restrictive": ("correct_alternative", 0.0),
                    "accept": ("plausible_wrong", 0.0)}[verdict]  # fmt: skip
        assert (kind, reward) == expected
    [(model_free,)] = catalog_rows(db, "select count(*) from probes where origin = 'model_free'")
    assert model_free > 0

    # a rerun with the same config finds every task finished and leaves the files alone
    stamps = {p: p.stat().st_mtime_ns for p in (run / "p2").glob("*/verdict.parquet")}
    with ScriptedJudge("labelled") as url:
        again = run_pipeline2(run, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    assert again["verdicts"] == judged["verdicts"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


@pytest.mark.prefect
def test_a_run_of_fewer_tasks_than_workers_spreads_each_tasks_probes_over_them(
    p1_run: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: Pipeline 2 graded a task's probes with one worker whatever the run's workers, so a run
    of a few big tasks left cores idle; each task now gets its share of the workers (probe sessions)."""
    import judge.pipeline2
    from flows.pipeline2 import run_pipeline2

    run, tasks = p1_run
    shutil.copytree(run / "p1", tmp_path / "p1")  # a run folder of its own: nothing probed yet
    workers, probe_task = [], judge.pipeline2.probe_task
    monkeypatch.setattr(judge.pipeline2, "probe_task", lambda task, *a, **k: workers.append(k["workers"]) or probe_task(task, *a, **k))
    summary = run_pipeline2(tmp_path, load_config(overrides=["pipeline1.runs=1"]), 2, None)
    assert workers == [max(1, 2 // len(tasks))] * len(tasks)
    assert sum(summary["verdicts"].values()) == len(tasks) and not any(v.startswith("failed") for v in summary["verdicts"])
