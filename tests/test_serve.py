"""`swedeck serve` against a started `prefect server`: one deployment per schedule, a cron that fires
within the test, and a second run over a grown source that processes only the new task."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import catalog_rows
from data import SAMPLE
from test_prefect_server import prefect_server  # noqa: F401 - the fixture

# slow: the cron fires on the next minute boundary (about 2 minutes in all); the default tier runs the
# same flows from the CLI and against a started server (tests/test_prefect_server.py)
pytestmark = [pytest.mark.prefect, pytest.mark.bwrap, pytest.mark.slow]
CONFIG = """
[pipeline1]
runs = 1

[pipeline2]
probes = false

[schedules.sample]
sources = ["src"]
cron = "* * * * *"
out = "out"
judge = false
"""


def _api(url: str, path: str, body: dict) -> list | dict:
    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=30).read())


def _wait_for(what: str, check, timeout: float):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(2)
    pytest.fail(f"{what} within {timeout:.0f} s")


def _completed(url: str, deployment_id: str, n: int) -> list[dict]:
    runs = _api(url, "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [deployment_id]}}, "sort": "EXPECTED_START_TIME_ASC"})
    failed = [r for r in runs if r["state_type"] in ("FAILED", "CRASHED")]
    assert not failed, failed
    done = [r for r in runs if r["state_type"] == "COMPLETED"]
    return done if len(done) >= n else []


def test_serve_runs_each_schedule_on_its_cron_and_then_only_new_tasks(prefect_server: str, bwrap_backend, tmp_path: Path) -> None:  # noqa: ANN001, F811
    (tmp_path / "swedeck.toml").write_text(CONFIG)
    shutil.copytree(SAMPLE / "sample__semverlite-1", tmp_path / "src" / "sample__semverlite-1")
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PREFECT_HOME": str(tmp_path / "client-home")}
    log = (tmp_path / "serve.log").open("w")
    served = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve"], cwd=tmp_path, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        deployment = _wait_for("the deployment was not registered",
                               lambda: _api(prefect_server, "/deployments/filter", {"deployments": {"name": {"any_": ["sample"]}}}), 120)[0]  # fmt: skip
        assert [s["schedule"]["cron"] for s in deployment["schedules"]] == ["* * * * *"]
        assert deployment["parameters"]["sources"] == [str(tmp_path / "src")]
        (first,) = _wait_for("the cron schedule did not fire and complete a run", lambda: _completed(prefect_server, deployment["id"], 1), 240)
        assert first["auto_scheduled"]  # the server's scheduler made it, not this test
        out = tmp_path / "out"
        kept = out / "p1" / "sample__semverlite-1" / "result.parquet"
        assert kept.exists() and (out / "report.html").exists()
        stored = kept.stat().st_mtime_ns

        # the corpus grows by one task; a run triggered as from the UI processes only that one
        shutil.copytree(SAMPLE / "sample__toposort-1", tmp_path / "src" / "sample__toposort-1")
        trigger = subprocess.run([sys.executable, "-m", "prefect", "deployment", "run", "curate/sample"], env=env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
        assert trigger.returncode == 0, trigger.stderr
        runs = _wait_for("the triggered run did not complete", lambda: _completed(prefect_server, deployment["id"], 2), 240)
    finally:
        os.killpg(served.pid, signal.SIGTERM)
        served.wait(timeout=60)
        log.close()
    second = runs[-1]["id"]
    changes = catalog_rows(out / "catalog.duckdb", "select flow_run, instance_id, change from increments order by started, instance_id")
    assert changes == [
        (first["id"], "sample__semverlite-1", "new"),
        (second, "sample__semverlite-1", "unchanged"),
        (second, "sample__toposort-1", "new"),
    ]
    assert kept.stat().st_mtime_ns == stored  # the unchanged task's result was not rewritten
    # each run says what it did, in the Prefect UI (the API's logs) and on serve's console; before, neither
    logs = [entry["message"] for entry in _api(prefect_server, "/logs/filter", {"logs": {"flow_run_id": {"any_": [second]}}})]
    assert any(m.startswith("2 tasks in ") and "1 new, 0 changed, 0 retried, 1 unchanged" in m for m in logs), logs
    assert any(m.startswith("pipeline 1: 2 kept of 2") for m in logs), logs
    assert "pipeline 1: 2 kept of 2" in (tmp_path / "serve.log").read_text()
    assert catalog_rows(out / "catalog.duckdb", "select instance_id, decision from p1_results order by 1") == [
        ("sample__semverlite-1", "keep"), ("sample__toposort-1", "keep")]  # fmt: skip


def test_serve_needs_a_server_and_a_schedule(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"COLUMNS": "300"}
    (tmp_path / "swedeck.toml").write_text(CONFIG)
    done = subprocess.run([sys.executable, "-m", "flows.cli", "serve"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "no Prefect server" in done.stderr
    (tmp_path / "swedeck.toml").write_text("[pipeline1]\nruns = 1\n")
    done = subprocess.run([sys.executable, "-m", "flows.cli", "serve"], cwd=tmp_path, env=env | {"PREFECT_API_URL": "http://127.0.0.1:9/api"},
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "has no [schedules.NAME] table" in done.stderr
