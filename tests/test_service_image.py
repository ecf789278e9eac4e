"""The service image builds here, on the base `swedeck env base` makes, and `swedeck curate` runs inside
it with its sandboxes on the host's Docker engine."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import catalog_rows
from data import SAMPLE
from flows.image import build_image
from harness.config import Settings

pytestmark = [pytest.mark.slow, pytest.mark.docker]
TAG = "swedeck-service:test"
SOCKET = "/var/run/docker.sock"


@pytest.fixture(scope="module")
def image(docker_backend, swedeck_env: Settings) -> Iterator[str]:  # noqa: ANN001 - the fixture checks engine and base image
    build_image(swedeck_env.base_image, TAG)
    yield TAG
    subprocess.run(["docker", "rmi", "-f", TAG], capture_output=True)


def _run(image: str, *args: str, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "run", "--rm", "--init", "-e", "COLUMNS=200", *options, image, *args],
                          capture_output=True, text=True, timeout=1800)  # fmt: skip


def test_the_image_has_python_3_11_the_cli_and_ray(image: str) -> None:
    done = _run(image, "-c", "import sys, prefect_ray; print(tuple(sys.version_info[:2]))", options=("--entrypoint", "python"))
    assert done.returncode == 0 and done.stdout.strip() == "(3, 11)", done.stderr
    assert "curate" in _run(image, "--help").stdout


def test_curate_runs_in_the_image_against_the_host_engine(image: str, swedeck_env: Settings, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for name in ("sample__semverlite-1", "sample__mdtable-1"):
        shutil.copytree(SAMPLE / name, src / name)
    cache = swedeck_env.cache_dir
    # the engine is the host's, through its socket; sandboxes bind folders of the cache into their
    # containers, so the cache sits at the same path on both sides. --pid=host: run ownership tokens
    # are pids, and a sweep on the host must see the container's processes as the live ones they are
    mounts = [f"-v={path}:{path}" for path in (SOCKET, cache, tmp_path)]
    done = _run(
        image, "curate", str(src), "--out", str(tmp_path / "out"), "--backend", "docker", "--set", "pipeline1.runs=1",
        options=(*mounts, "--pid=host", f"-e=SWEDECK_CACHE={cache}"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"report: {tmp_path / 'out' / 'report.html'}" in done.stderr
    rows = catalog_rows(tmp_path / "out" / "catalog.duckdb", "select instance_id, decision, reason, backend from p1_results "
                        "join (select distinct instance_id, backend from runs) using (instance_id) order by instance_id")  # fmt: skip
    assert rows == [("sample__mdtable-1", "reject", "no_fail_to_pass", "docker"), ("sample__semverlite-1", "keep", "", "docker")]
    verdicts = catalog_rows(tmp_path / "out" / "catalog.duckdb", "select instance_id, verdict from verdicts")
    assert verdicts == [("sample__semverlite-1", "accept")]
