"""Corpus images (issue 12): sandbox.pull never/missing/always, a progress bar, a cache budget over the
images swedeck pulled, the digest Pipeline 1 ran, and image_missing when an image cannot be had.
The registry is harness.sandboxes.local_registry on localhost (no registry image can be pulled here)."""

from __future__ import annotations

import contextlib
import io
import json
import secrets
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from curation.pipeline1 import Pipeline1Config, process_task
from harness.config import SandboxConfig, Settings
from harness.sandboxes.images import (
    LEDGER,
    ImageMissing,
    ImageStore,
    Pulled,
    PullProgress,
    over_budget,
)
from harness.sandboxes.local_registry import load_saved, serve
from harness.records import Answer, Environment, HiddenTests, Task
from harness.sandboxes.backends import get_backend

pytestmark = pytest.mark.docker


# ------------------------------------------------------------------------------------------ pure parts


def test_pull_progress_sums_the_layers_seen_so_far() -> None:
    progress = PullProgress()
    for event in [
        {"status": "Pulling fs layer", "id": "a", "progressDetail": {}},
        {"status": "Downloading", "id": "a", "progressDetail": {"current": 10, "total": 100}},
        {"status": "Downloading", "id": "b", "progressDetail": {"current": 5, "total": 50}},
        {"status": "Download complete", "id": "b", "progressDetail": {}},
        {"status": "Already exists", "id": "c", "progressDetail": {}},
    ]:
        progress.update(event)
    assert (progress.done, progress.total) == (60, 150)
    with pytest.raises(ImageMissing, match="pull failed: manifest unknown"):
        progress.update({"error": "manifest unknown", "errorDetail": {"message": "manifest unknown"}})


def test_over_budget_removes_least_recently_used_but_never_the_one_just_pulled() -> None:
    pulled = [Pulled("a", "1", 40, used=3.0), Pulled("b", "2", 40, used=1.0), Pulled("c", "3", 40, used=2.0)]
    assert [p.ref for p in over_budget(pulled, 80, keep="a")] == ["b"]
    assert [p.ref for p in over_budget(pulled, 10, keep="b")] == ["c", "a"]
    assert over_budget(pulled, 120, keep="a") == []


# ------------------------------------------------------------------------------------------ the engine


@pytest.fixture(scope="module")
def client():
    return docker.from_env()


def tiny_image(client, tmp_path: Path, tag: str) -> Path:
    """A one-file image made here (``docker import``), saved as ``docker save`` writes it."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        blob = tag.encode()
        info = tarfile.TarInfo("marker")
        info.size = len(blob)
        archive.addfile(info, io.BytesIO(blob))
    repository, _, version = tag.rpartition(":")
    client.api.import_image_from_data(data.getvalue(), repository=repository, tag=version)
    saved = tmp_path / f"{secrets.token_hex(4)}.tar"
    with saved.open("wb") as f:
        for chunk in client.images.get(tag).save():
            f.write(chunk)
    client.images.remove(tag)
    return saved


@pytest.fixture
def registry(client, tmp_path: Path) -> Iterator[tuple[int, list[str]]]:
    """A local registry serving two tiny images, ``tiny-a:1`` and ``tiny-b:1``; yields the port and
    the references this machine pulls them by (removed afterwards)."""
    names = [f"swedeck-test/tiny-{x}-{secrets.token_hex(3)}" for x in "ab"]
    repositories = {}
    for name in names:
        saved = tiny_image(client, tmp_path, f"{name}:1")
        repositories[name] = load_saved(saved, tmp_path / name.replace("/", "_"), "1")
    with serve(repositories) as port:
        refs = [f"localhost:{port}/{name}:1" for name in names]
        yield port, refs
    for ref in refs:
        with contextlib.suppress(docker.errors.ImageNotFound):  # not pulled, or evicted by the test
            client.images.remove(ref, force=True)


def task_for(image: str) -> Task:
    return Task(
        instance_id="imaged", source="local", repo="o/r", problem_statement="p",
        environment=Environment(image=image), test_cmd=["python -m pytest"],
        answer=Answer(gold_patch="", hidden_tests=HiddenTests()),
    )  # fmt: skip


def store_for(client, settings: Settings, policy: str, budget_gb: float = 0.0) -> ImageStore:
    return ImageStore(client, settings, policy, budget_gb)  # type: ignore[arg-type]


def test_pull_never_leaves_a_missing_image_missing(client, registry, tmp_path: Path, swedeck_env: Settings) -> None:
    _, (ref, _) = registry
    settings = swedeck_env.model_copy(update={"cache_dir": tmp_path / "cache"})
    with pytest.raises(ImageMissing, match="not on this machine and sandbox.pull is 'never'"):
        store_for(client, settings, "never").ensure(ref, "t")
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(ref)


def test_pull_missing_pulls_from_a_registry_and_records_its_digest(client, registry, tmp_path: Path, swedeck_env: Settings) -> None:
    _, (ref, _) = registry
    settings = swedeck_env.model_copy(update={"cache_dir": tmp_path / "cache"})
    store = store_for(client, settings, "missing")
    assert store.ensure(ref, "t") == ref
    image = client.images.get(ref)
    name = ref.rsplit(":", 1)[0]
    assert store.digest(ref).startswith(f"{name}@sha256:") and store.digest(ref) in image.attrs["RepoDigests"]
    (row,) = json.loads((settings.cache_dir / LEDGER).read_text())
    assert (row["ref"], row["image_id"]) == (ref, image.id)


def test_the_image_cache_budget_removes_the_least_recently_used_pulled_image(client, registry, tmp_path: Path, swedeck_env: Settings) -> None:
    _, (first, second) = registry
    settings = swedeck_env.model_copy(update={"cache_dir": tmp_path / "cache"})
    store = store_for(client, settings, "missing", budget_gb=1e-9)  # one byte: only the newest stays
    store.ensure(first, "t1")
    store.ensure(second, "t2")
    assert [row["ref"] for row in json.loads((settings.cache_dir / LEDGER).read_text())] == [second]
    client.images.get(second)
    with pytest.raises(docker.errors.ImageNotFound):
        client.images.get(first)


def test_pull_failure_is_image_missing_in_pipeline_1(tmp_path: Path, swedeck_env: Settings) -> None:
    """No registry answers on port 9 here: the pull fails, and Pipeline 1 records env_error at stage
    image_missing with the reason, as infrastructure (retried on the next run)."""
    backend = get_backend(SandboxConfig(backend="docker", pull="missing"), swedeck_env)
    result = process_task(task_for("localhost:9/nowhere/repo:1"), backend, Pipeline1Config(runs=1), "t", tmp_path)
    assert (result.reason, result.stage, result.infrastructure) == ("env_error", "image_missing", True)
    assert "localhost:9/nowhere/repo:1 could not be pulled" in result.detail and "not on this machine" in result.detail


def test_a_local_image_is_known_by_its_id(client, swedeck_env: Settings) -> None:
    backend = get_backend(SandboxConfig(backend="docker", pull="never"), swedeck_env)
    assert backend.image_digest(task_for(swedeck_env.base_image)) == client.images.get(swedeck_env.base_image).id


def test_pull_always_asks_the_registry_even_for_an_image_this_machine_has(client, registry, tmp_path: Path, swedeck_env: Settings) -> None:
    port, _ = registry
    ref = f"localhost:{port}/swedeck-test/not-served:1"
    client.images.get(swedeck_env.base_image).tag(ref)
    try:
        settings = swedeck_env.model_copy(update={"cache_dir": tmp_path / "cache"})
        assert store_for(client, settings, "missing").ensure(ref, "t") == ref  # present: no pull
        with pytest.raises(ImageMissing, match=r"could not be pulled \(.*\)$"):
            store_for(client, settings, "always").ensure(ref, "t")
    finally:
        client.images.remove(ref)
