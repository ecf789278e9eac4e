"""SWE-bench-shaped rows without their image (issue 12): the environment built from the row's install
spec, the repository from a local repository cache (``--repo-cache``). The end-to-end runs use a real
fix commit of a real public library (r1chardj0n3s/parse #113, bundled in data/fixtures/repos)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import RepoCache, SourceError, load_corpus_file, load_sources
from curation.sources.base import RowError
from curation.sources.recipes import DEFAULT_INSTALL, row_recipe, spec_recipe
from harness.config import Settings
from harness.envs import prepare_tree, tree_commit
from harness.records import Answer, Environment, HiddenTests, Recipe, RepoSource, Task

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"
REPOS = FIXTURES / "repos"
ROW_FILE = FIXTURES / "swe_bench_repo_cache.jsonl"
ROW = json.loads(ROW_FILE.read_text())
BASE = ROW["base_commit"]
FIX = "19689cf5b4e0b025821be2e59e0bff0ab5977361"


def swedeck(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="200"), timeout=timeout, check=False)  # fmt: skip


def query(run: Path, sql: str) -> list[dict]:
    done = swedeck("query", "--db", str(run), "--json", sql)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def no_swebench(monkeypatch: pytest.MonkeyPatch) -> None:
    """The swebench package absent, whether or not this machine has it (None in sys.modules makes
    the import fail)."""
    monkeypatch.setitem(sys.modules, "swebench", None)


def fake_swebench(monkeypatch: pytest.MonkeyPatch, specs: dict, reqs_paths: dict) -> None:
    """``swebench.harness.constants`` with the two tables swedeck reads, in swebench's shape."""
    package, harness, constants = (types.ModuleType(n) for n in ("swebench", "swebench.harness", "swebench.harness.constants"))
    constants.MAP_REPO_VERSION_TO_SPECS = specs  # type: ignore[attr-defined]
    constants.MAP_REPO_TO_REQS_PATHS = reqs_paths  # type: ignore[attr-defined]
    package.harness, harness.constants = harness, constants  # type: ignore[attr-defined]
    for name, module in (("swebench", package), ("swebench.harness", harness), ("swebench.harness.constants", constants)):
        monkeypatch.setitem(sys.modules, name, module)


# ------------------------------------------------------------------------------------------ install specs


def test_swe_rebench_install_config_shapes_become_recipes(no_swebench: None) -> None:
    """The install_config shapes of the SWE-rebench v1 fixture rows (requirements.txt with reqs_path,
    pip_packages, an install command, python, null keys), replayed in SWE-bench's order."""
    rows = [json.loads(line) for line in (FIXTURES / "swe_rebench_v1.jsonl").read_text().splitlines()]
    loaded = load_corpus_file(str(FIXTURES / "swe_rebench_v1.jsonl"))
    for task in loaded.tasks:
        row = next(r for r in rows if r["instance_id"] == task.instance_id)
        recipe, activation = row_recipe(task, row)
        assert recipe.install == ["python -m pip install -r requirements.txt", "python -m pip install pytest", "pip install -e ."]
        assert recipe.origin == "SWE-rebench install_config; asks for python 3.11, the base's python runs it"
        assert activation == ""


def test_install_spec_keys_in_swebench_order_and_what_is_left_out() -> None:
    spec = {
        "python": "3.9",
        "packages": "numpy scipy",
        "pip_packages": ["pytest<8", "'setuptools<60'", "attrs==23.1.0"],
        "pre_install": ["apt-get update && apt-get install -y locales", "sed -i 's/a/b/' setup.cfg"],
        "install": "python -m pip install -v --no-build-isolation -e .",
        "env_vars": {"LANG": "C.UTF-8", "OPT": "a b"},
        "test_cmd": "pytest -rA",
    }
    recipe, activation = spec_recipe(spec, "swebench spec x/y 1.0")
    assert recipe.install == [
        "python -m pip install numpy scipy",
        "python -m pip install 'pytest<8' 'setuptools<60' attrs==23.1.0",  # one shell word each, never a redirection
        "sed -i 's/a/b/' setup.cfg",
        "python -m pip install -v --no-build-isolation -e .",
    ]
    assert activation == "export LANG=C.UTF-8; export OPT='a b';"
    assert recipe.origin == (
        "swebench spec x/y 1.0; asks for python 3.9, the base's python runs it; "
        "left out: `apt-get update && apt-get install -y locales`"
    )
    conda, _ = spec_recipe({"packages": "environment.yml", "install": ["pip install -e .", "pip install pytest"]}, "o")
    assert conda.install == ["pip install -e .", "pip install pytest"] and conda.origin == "o; left out: the conda environment.yml"
    with pytest.raises(RowError, match="install_config.pip_packages"):
        spec_recipe({"pip_packages": {"pytest": "8"}}, "o")


def test_swebench_spec_is_used_when_the_package_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """(b): the row has no install_config; swebench knows its repository and version. The spec is
    written as swebench publishes MAP_REPO_VERSION_TO_SPECS (python, packages, install, pip_packages,
    test_cmd) and MAP_REPO_TO_REQS_PATHS."""
    spec = {
        "python": "3.11",
        "packages": "requirements.txt",
        "install": "python -m pip install -e .",
        "pip_packages": ["setuptools==70.0.0", "Werkzeug==2.3.7"],
        "test_cmd": "pytest -rA",
    }
    fake_swebench(monkeypatch, {ROW["repo"]: {ROW["version"]: spec}}, {ROW["repo"]: ["requirements/tests.txt"]})
    (task,) = load_sources([ROW_FILE], RepoCache(REPOS)).tasks
    assert task.environment.recipe is not None
    assert task.environment.recipe.install == [
        "python -m pip install -r requirements/tests.txt",
        "python -m pip install setuptools==70.0.0 Werkzeug==2.3.7",
        "python -m pip install -e .",
    ]
    assert task.environment.recipe.origin.startswith(f"swebench spec {ROW['repo']} {ROW['version']}")
    other = {**ROW, "version": "0.1"}  # a version swebench has no spec for: the default
    assert row_recipe(task, other)[0].install == [DEFAULT_INSTALL]


# ------------------------------------------------------------------------------------------ the repository cache


def test_a_row_whose_repository_is_cached_becomes_a_recipe_task(no_swebench: None) -> None:
    plain = load_sources([ROW_FILE])
    (image_task,) = plain.tasks
    assert image_task.environment.image and image_task.repo_source.kind == "image"
    loaded = load_sources([ROW_FILE], RepoCache(REPOS))
    (task,) = loaded.tasks
    assert task.environment.image is None and task.environment.recipe is not None
    assert task.environment.recipe.install == [DEFAULT_INSTALL] and task.environment.recipe.origin.startswith("default:")
    assert task.environment.activation == ""  # the image's conda env is not there
    assert task.repo_source.kind == "bundle" and task.repo_source.ref == BASE
    assert Path(task.repo_source.path) == (REPOS / "r1chardj0n3s__parse.bundle").resolve()
    # the row's own test command, parser, workdir and answer
    assert (task.test_cmd, task.log_parser, task.environment.workdir) == (["pytest -rA test_parse.py"], "pytest", "/testbed")
    assert task.answer == image_task.answer
    assert "1 of 1 rows built from a recipe" in loaded.detected[0].reason


def test_repository_cache_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_swebench: None) -> None:
    """Clones as well as bundles, names matched without regard to case; a repository not in the
    cache, and on docker an image its engine holds, keep the image."""
    clone = tmp_path / "R1chardj0n3s__Parse"
    subprocess.run(["git", "clone", "-q", str(REPOS / "r1chardj0n3s__parse.bundle"), str(clone)], check=True)
    (task,) = load_sources([ROW_FILE], RepoCache(tmp_path)).tasks
    assert (task.repo_source.kind, task.repo_source.path) == ("git", str(clone))
    (kept,) = load_sources([ROW_FILE], RepoCache(tmp_path / "R1chardj0n3s__Parse")).tasks  # a folder without the repo
    assert kept.environment.image and kept.repo_source.kind == "image"
    from curation.sources import swe_rebench

    image = load_sources([ROW_FILE]).tasks[0].environment.image
    monkeypatch.setattr(swe_rebench, "local_image_tags", lambda: {image})
    (on_docker,) = load_sources([ROW_FILE], RepoCache(tmp_path, images=True)).tasks
    assert on_docker.environment.image == image
    (on_bwrap,) = load_sources([ROW_FILE], RepoCache(tmp_path, images=False)).tasks
    assert on_bwrap.environment.recipe is not None
    with pytest.raises(SourceError, match="no such folder"):
        load_sources([ROW_FILE], RepoCache(tmp_path / "nope"))


def test_a_cloned_repository_is_sealed_at_the_base_commit(tmp_path: Path, swedeck_env: Settings, no_swebench: None) -> None:
    clone = tmp_path / "r1chardj0n3s__parse"
    subprocess.run(["git", "clone", "-q", str(REPOS / "r1chardj0n3s__parse.bundle"), str(clone)], check=True)
    (task,) = load_sources([ROW_FILE], RepoCache(tmp_path)).tasks
    tree = prepare_tree(task, swedeck_env)
    assert tree_commit(tree) == BASE
    fix = subprocess.run(["git", "cat-file", "-e", FIX], cwd=tree, capture_output=True, check=False)
    assert fix.returncode != 0  # the clone holds the fix commit; the sealed tree does not


def test_fixture_bundle_is_small_and_reaches_the_fix() -> None:
    bundle = REPOS / "r1chardj0n3s__parse.bundle"
    assert bundle.stat().st_size < 2_000_000
    heads = subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True, check=True)
    assert heads.stdout.split() == [FIX, "refs/heads/master"]


def test_repo_cache_that_is_not_a_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = swedeck("p1", str(ROW_FILE), "--repo-cache", str(tmp_path / "nope"), "--out", str(tmp_path / "run"),
                   "--set", f"sources.repo_cache={tmp_path / 'nope'}")  # fmt: skip
    assert done.returncode == 2 and "no such folder" in done.stderr, done.stderr
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------------ runs


@pytest.mark.bwrap
def test_without_image_or_cached_repository_the_row_is_image_missing(bwrap_backend, tmp_path: Path) -> None:
    (task,) = load_sources([ROW_FILE]).tasks
    result = process_task(task, bwrap_backend, Pipeline1Config(runs=1), "cfg", tmp_path)
    assert (result.reason, result.stage) == ("env_error", "image_missing")
    assert task.environment.image in result.detail and "--repo-cache" in result.detail


@pytest.mark.bwrap
def test_recipe_environments_have_a_pytest_command(bwrap_backend, tmp_path: Path) -> None:
    """Regression: the base's pytest has no `pytest` command, so every recipe task whose test command
    is a corpus row's `pytest -rA ...` ended 'pytest: command not found' (no_fail_to_pass)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("import sys\n\n\ndef test_a():\n    assert sys.prefix == '/opt/swedeck-env'\n")
    task = Task(
        instance_id="local__pytestcmd-1", source="local", repo="local/pytestcmd", problem_statement="p",
        environment=Environment(recipe=Recipe(install=["true"])), repo_source=RepoSource(kind="files", path=str(repo)),
        test_cmd=["pytest -rA test_a.py"], answer=Answer(gold_patch="", hidden_tests=HiddenTests()),
    )  # fmt: skip
    box = bwrap_backend.open(task)
    try:
        done = box.run("pytest -rA -p no:cacheprovider test_a.py")
    finally:
        box.close()
    assert done.exit_code == 0 and "PASSED test_a.py::test_a" in done.output, done.output


@pytest.mark.slow
@pytest.mark.bwrap
def test_p1_runs_a_real_swe_bench_row_from_the_repository_cache(tmp_path: Path) -> None:
    """`swedeck p1 ROWS --repo-cache DIR` builds the environment (an editable install of the tree) and
    keeps the task with the row's FAIL_TO_PASS and PASS_TO_PASS; without the cache the row is
    image_missing, saying how to run it."""
    run = tmp_path / "cached"
    done = swedeck("p1", str(ROW_FILE), "--repo-cache", str(REPOS), "--out", str(run), "--backend", "bwrap", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = query(run, "select reason, fail_to_pass, pass_to_pass from p1_results")
    assert result["reason"] == ""
    assert result["fail_to_pass"] == json.loads(ROW["FAIL_TO_PASS"])
    assert sorted(result["pass_to_pass"]) == sorted(json.loads(ROW["PASS_TO_PASS"]))
    (stored,) = run.glob("p1/*/task.json")
    environment = json.loads(stored.read_text())["environment"]
    assert environment["recipe"]["origin"].startswith("default: `python -m pip install -e .`")

    done = swedeck("p1", str(ROW_FILE), "--out", str(tmp_path / "plain"), "--backend", "bwrap", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    (missing,) = query(tmp_path / "plain", "select reason, stage, detail from p1_results")
    assert (missing["reason"], missing["stage"]) == ("env_error", "image_missing") and "--repo-cache" in missing["detail"]


@pytest.mark.slow
@pytest.mark.docker
def test_p1_on_docker_builds_from_the_repository_cache_when_the_image_is_missing(tmp_path: Path) -> None:
    run = tmp_path / "cached"
    done = swedeck("p1", str(ROW_FILE), "--repo-cache", str(REPOS), "--out", str(run), "--backend", "docker",
                   "--set", "sandbox.pull=never", "--set", "pipeline1.runs=1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = query(run, "select reason, fail_to_pass from p1_results")
    assert (result["reason"], result["fail_to_pass"]) == ("", json.loads(ROW["FAIL_TO_PASS"]))

    done = swedeck("p1", str(ROW_FILE), "--out", str(tmp_path / "plain"), "--backend", "docker", "--set", "sandbox.pull=never", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    (missing,) = query(tmp_path / "plain", "select reason, stage from p1_results")
    assert (missing["reason"], missing["stage"]) == ("env_error", "image_missing")
