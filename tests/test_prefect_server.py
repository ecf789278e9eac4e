"""Pipeline 1 against a started ``prefect server`` (the fleet setup), not only the temporary API."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from data import SAMPLE


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def prefect_server(tmp_path: Path):  # noqa: ANN201
    port = _free_port()
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "server-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port), "--no-ui"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            break
        except OSError:
            assert proc.poll() is None, "prefect server exited during start-up"
            time.sleep(0.5)
    else:
        pytest.fail("prefect server did not answer /api/health within 120 s")
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


@pytest.mark.prefect
def test_pipeline1_runs_against_a_started_server(prefect_server: str, bwrap_backend, tmp_path: Path) -> None:  # noqa: ANN001
    src = tmp_path / "src"
    shutil.copytree(SAMPLE / "sample__semverlite-1", src / "sample__semverlite-1")
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PREFECT_HOME": str(tmp_path / "client-home")}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "p1", str(src), "--out", str(tmp_path / "out"), "--json", "--set", "pipeline1.runs=1"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kept"] == 1
    request = urllib.request.Request(
        f"{prefect_server}/flow_runs/filter", data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    runs = json.loads(urllib.request.urlopen(request, timeout=10).read())
    assert [(r["state_type"]) for r in runs] == ["COMPLETED"]  # the server, not a temporary API, recorded it
