"""Tasks whose repository lives only inside their image (every SWE-bench, SWE-rebench, R2E-Gym and
Scale-SWE row), issue 12: the tree is copied out of the image once for Pipeline 2 (probes, the
judge's tools), sealed on the host, and Pipeline 1 records the image it ran. The image is built here
from the base image with `docker commit`, a small repository with a bug at its workdir."""

from __future__ import annotations

import io
import os
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from curation.pipeline1 import Pipeline1Config, process_task
from harness.config import Settings
from harness.sandboxes.envs import GIT_IDENTITY, prepare_tree
from harness.records import Answer, Environment, HiddenTests, RepoSource, Task
from harness.sandboxes.sandbox import Backend
from probes.runner import probe_task

pytestmark = pytest.mark.docker

CALC = "def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return a * 2\n"
FIXED = CALC.replace("a - b", "a + b")
OLD_TESTS = "from calc import double\n\n\ndef test_double():\n    assert double(4) == 8\n"
GOLD = """\
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def double(a):
"""
HIDDEN = """\
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,9 @@
+from calc import add
+
+
+def test_add():
+    assert add(2, 3) == 5
+
+
+def test_add_zero():
+    assert add(0, 7) == 7
"""


def git(args: list[str], cwd: Path) -> str:
    env = {**os.environ, **GIT_IDENTITY}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def imaged(docker_backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Task, str]]:
    """A task whose repository exists only in a local image: the base commit holds the bug, a later
    commit (the fix) sits in the image's history too, and the image's git config names a hook path
    the host must never use. Yields the task and the fix commit."""
    client = docker_backend.client  # type: ignore[attr-defined]
    repo = tmp_path_factory.mktemp("imaged") / "testbed"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_double.py").write_text(OLD_TESTS)
    git(["init", "-q", "-b", "main"], repo)
    git(["add", "-A"], repo)
    git(["commit", "-q", "-m", "base"], repo)
    base = git(["rev-parse", "HEAD"], repo)
    (repo / "calc.py").write_text(FIXED)
    git(["commit", "-q", "-am", "the fix"], repo)
    fix = git(["rev-parse", "HEAD"], repo)
    git(["checkout", "-q", base], repo)
    git(["config", "core.hooksPath", "/nonexistent-hooks"], repo)
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        archive.add(repo, arcname="testbed")
    tag = f"swedeck-test/imaged:{secrets.token_hex(4)}"
    container = client.containers.create(docker_backend.settings.base_image, ["true"])  # type: ignore[attr-defined]
    try:
        container.put_archive("/", data.getvalue())
        container.commit(*tag.split(":"))
    finally:
        container.remove(force=True)
    task = Task(
        instance_id="imaged__calc-1", source="swe_bench", repo="imaged/calc", base_commit=base,
        problem_statement="add() subtracts its arguments instead of adding them.",
        environment=Environment(image=tag, workdir="/testbed"), repo_source=RepoSource(kind="image"),
        test_cmd=["python -m pytest tests"], test_paths=["tests/test_add.py"],
        answer=Answer(gold_patch=GOLD, hidden_tests=HiddenTests(patch=HIDDEN)),
    )  # fmt: skip
    yield task, fix
    client.images.remove(tag, force=True)


def test_the_tree_is_copied_out_of_the_image_and_sealed(imaged: tuple[Task, str], swedeck_env: Settings) -> None:
    """Regression (issue 12): prepare_tree raised 'the repository lives inside image ...', so no
    probe or verdict could be made for an image-based task."""
    task, fix = imaged
    tree = prepare_tree(task, swedeck_env)
    assert (tree / "calc.py").read_text() == CALC
    assert git(["rev-parse", "HEAD"], tree) == task.base_commit
    assert subprocess.run(["git", "cat-file", "-e", fix], cwd=tree).returncode != 0  # the fix is not in the copy
    assert "hookspath" not in (tree / ".git" / "config").read_text().lower()
    assert prepare_tree(task, swedeck_env) == tree  # once per image and base commit


@pytest.mark.slow
def test_pipeline_2_probes_a_task_whose_repository_lives_in_its_image(
    imaged: tuple[Task, str], docker_backend: Backend, tmp_path: Path
) -> None:
    task, _ = imaged
    p1 = process_task(task, docker_backend, Pipeline1Config(runs=1), "t", tmp_path)
    assert p1.decision == "keep", (p1.reason, p1.detail)
    assert sorted(p1.fail_to_pass) == ["tests/test_add.py::test_add", "tests/test_add.py::test_add_zero"]
    assert p1.image_digest == docker_backend.client.images.get(task.environment.image).id  # type: ignore[attr-defined]
    stamp = {"config_hash": "t", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    probes = probe_task(task, docker_backend, p1, stamp, log_dir=tmp_path / "probes", differential=False)
    assert probes and {p.kind for p in probes} >= {"plausible_wrong"}
    assert all(p.reward in (0.0, 1.0) for p in probes)
