"""Pipeline 2 through its Prefect flow: model-free probes and the scripted judge over a Pipeline 1 run,
verdicts and probes in the catalog, resumability, and a judge endpoint that fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import catalog_rows
from data import SAMPLE
from flows.config import load_config
from judge.config import JudgeSettings
from judge.scripted import ScriptedJudge

TASKS = {"sample__moneyfmt-1": "too_loose", "sample__slugkit-1": "over_restrictive", "sample__semverlite-1": "accept"}


@pytest.fixture(scope="module")
def p1_run(prefect_api, bwrap_backend, tmp_path_factory) -> Path:  # noqa: ANN001
    from flows.pipeline1 import run_pipeline1

    src = tmp_path_factory.mktemp("p2-src")
    for name in TASKS:
        shutil.copytree(SAMPLE / name, src / name)
    out = tmp_path_factory.mktemp("p2-run")
    summary = run_pipeline1([src], out, load_config(overrides=["pipeline1.runs=1"]), workers=2)
    assert summary["kept"] == len(TASKS)
    return out


@pytest.mark.prefect
def test_judge_failure_is_recorded_then_retried_with_a_working_endpoint(p1_run: Path) -> None:
    from flows.pipeline2 import run_pipeline2

    cfg = load_config(overrides=["pipeline1.runs=1", "pipeline2.judge.max_retries=1", "pipeline2.judge.backoff_s=0"])
    with ScriptedJudge("labelled", fault="http_500") as url:
        down = run_pipeline2(p1_run, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    assert down["verdicts"] == {"unjudgeable": len(TASKS)}
    details = catalog_rows(p1_run / "catalog.duckdb", "select detail from verdicts")
    assert all("500" in d for (d,) in details)

    with ScriptedJudge("labelled") as url:
        judged = run_pipeline2(p1_run, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    assert judged["verdicts"] == {"accept": 1, "over_restrictive": 1, "too_loose": 1}
    db = p1_run / "catalog.duckdb"
    verdicts = dict(catalog_rows(db, "select instance_id, verdict from verdicts"))
    assert verdicts == {iid: verdict for iid, verdict in TASKS.items()}
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
    stamps = {p: p.stat().st_mtime_ns for p in (p1_run / "p2").glob("*/verdict.parquet")}
    with ScriptedJudge("labelled") as url:
        again = run_pipeline2(p1_run, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    assert again["verdicts"] == judged["verdicts"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
