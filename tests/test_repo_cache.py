"""SWE-bench-shaped and SWE-rebench V2 Python rows without their image (issue 12): the environment
built from the row's install spec, the repository from a local repository cache (``--repo-cache``).
The end-to-end runs use a real fix commit of a real public library (r1chardj0n3s/parse #113, bundled
in data/fixtures/repos), as a SWE-bench 4 row and as a SWE-rebench V2 row."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import RepoCache, SourceError, load_corpus_file, load_sources
from curation.sources.base import RowError
from curation.sources.recipes import (
    DEFAULT_INSTALL,
    first_requirements,
    row_recipe,
    spec_recipe,
)
from harness.config import Settings
from harness.sandboxes.envs import prepare_tree, tree_commit
from harness.records import Answer, Environment, HiddenTests, Recipe, RepoSource, Task
from conftest import cli_query, swedeck_cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"
REPOS = FIXTURES / "repos"
ROW_FILE = FIXTURES / "swe_bench_repo_cache.jsonl"
ROW = json.loads(ROW_FILE.read_text())
V2_FILE = FIXTURES / "swe_rebench_v2_repo_cache.jsonl"
V2_ROW = json.loads(V2_FILE.read_text())
BASE = ROW["base_commit"]
FIX = "19689cf5b4e0b025821be2e59e0bff0ab5977361"




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


# Verbatim from swebench 4.1.0 (PyPI wheel, swebench/harness/constants/python.py), the last release
# line with MAP_REPO_VERSION_TO_SPECS: `import swebench.harness.constants` runs swebench/__init__.py,
# which imports its collection and Docker harness (bs4, ghapi, GitPython, datasets, docker, ...), so
# the package is not installed here. swebench 5.0.2 has no spec table at all.
SWEBENCH_4_SPECS = {
    "pallets/flask": {
        "2.0": {
            "python": "3.9",
            "packages": "requirements.txt",
            "install": "python -m pip install -e .",
            "pip_packages": [
                "setuptools==70.0.0", "Werkzeug==2.3.7", "Jinja2==3.0.1", "itsdangerous==2.1.2", "click==8.0.1",
                "MarkupSafe==2.1.3",
            ],
            "test_cmd": "pytest -rA",
        },
    },
    "psf/requests": {"2.0": {"python": "3.9", "packages": "pytest", "install": "python -m pip install .", "test_cmd": "pytest -rA"}},
    "pyvista/pyvista": {},
}  # fmt: skip
SWEBENCH_4_REQS_PATHS = {
    "pallets/flask": ["requirements/dev.txt"],
    "pyvista/pyvista": ["requirements_test.txt", "requirements.txt"],
}


def task_of(repo: str, version: str) -> tuple[Task, dict]:
    """The fixture row as a row of ``repo`` at ``version``."""
    (task,) = load_sources([ROW_FILE]).tasks
    return task.model_copy(update={"repo": repo}), {**ROW, "repo": repo, "version": version}


def test_swebench_specs_in_the_real_release_shape_become_recipes(monkeypatch: pytest.MonkeyPatch) -> None:
    """(b): the row has no install_config; swebench knows its repository and version."""
    fake_swebench(monkeypatch, SWEBENCH_4_SPECS, SWEBENCH_4_REQS_PATHS)
    flask, _ = row_recipe(*task_of("pallets/flask", "2.0"))
    assert flask.install == [
        "python -m pip install -r requirements/dev.txt",
        "python -m pip install setuptools==70.0.0 Werkzeug==2.3.7 Jinja2==3.0.1 itsdangerous==2.1.2 click==8.0.1 MarkupSafe==2.1.3",
        "python -m pip install -e .",
    ]
    assert flask.origin == "swebench spec pallets/flask 2.0; asks for python 3.9, the base's python runs it"
    requests, _ = row_recipe(*task_of("psf/requests", "2.0"))
    assert requests.install == ["python -m pip install pytest", "python -m pip install ."]
    assert row_recipe(*task_of("pallets/flask", "0.1"))[0].install == [DEFAULT_INSTALL]  # a version it has no spec for
    fake_swebench(monkeypatch, {ROW["repo"]: {ROW["version"]: SWEBENCH_4_SPECS["pallets/flask"]["2.0"]}}, {})
    (task,) = load_sources([ROW_FILE], RepoCache(REPOS)).tasks  # through the loader, and no reqs path: requirements.txt
    assert task.environment.recipe is not None and task.environment.recipe.install[0] == "python -m pip install -r requirements.txt"


def test_swebench_5_without_a_spec_table_gives_the_default_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: swebench 5.x's harness.constants has no MAP_REPO_VERSION_TO_SPECS; reading it
    raised AttributeError, which the loader records against every SWE-bench row as our_code."""
    fake_swebench(monkeypatch, {}, {})
    del sys.modules["swebench.harness.constants"].MAP_REPO_VERSION_TO_SPECS
    loaded = load_sources([ROW_FILE], RepoCache(REPOS))
    assert not loaded.errors
    (task,) = loaded.tasks
    assert task.environment.recipe is not None and task.environment.recipe.install == [DEFAULT_INSTALL]


def test_of_several_requirement_paths_the_first_the_tree_has_is_installed(tmp_path: Path) -> None:
    """SWE-bench installs the first of a repository's requirement paths that exists at the commit
    (pyvista: requirements_test.txt, else requirements.txt), never all of them."""
    command = first_requirements(SWEBENCH_4_REQS_PATHS["pyvista/pyvista"])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text('#!/bin/sh\necho "python $*"\n')
    (bin_dir / "python").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)

    (tmp_path / "requirements.txt").write_text("")
    assert run().stdout == "python -m pip install -r requirements.txt\n"
    (tmp_path / "requirements_test.txt").write_text("")
    assert run().stdout == "python -m pip install -r requirements_test.txt\n"
    for name in ("requirements.txt", "requirements_test.txt"):
        (tmp_path / name).unlink()
    missing = run()
    assert missing.returncode != 0 and "none of requirements_test.txt requirements.txt is in the tree" in missing.stderr


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


def test_a_python_swe_rebench_v2_row_becomes_a_recipe_task_from_its_install_config() -> None:
    """V2's install_config (base_image_name, docker_specs, install, log_parser, test_cmd): the install
    commands replayed but the system package step, the row's own test command, parser and workdir."""
    (image_task,) = load_sources([V2_FILE]).tasks
    loaded = load_sources([V2_FILE], RepoCache(REPOS))
    (task,) = loaded.tasks
    assert task.environment.image is None and task.environment.recipe is not None
    assert task.environment.recipe.install == ["pip install -e ."]
    assert task.environment.recipe.origin == (
        "SWE-rebench V2 install_config; asks for python 3.11, the base's python runs it; "
        "left out: `apt-get update -qq && apt-get install -y -qq locales`"
    )
    assert (task.repo_source.kind, task.repo_source.ref) == ("bundle", V2_ROW["base_commit"])
    assert task.environment.workdir == "/parse"
    assert (task.test_cmd, task.log_parser) == ([V2_ROW["install_config"]["test_cmd"]], "parse_log_pytest")
    assert task.answer == image_task.answer and task.answer.fail_to_pass == V2_ROW["FAIL_TO_PASS"]
    assert "1 of 1 rows built from a recipe" in loaded.detected[0].reason


def test_swe_rebench_v2_rows_in_other_languages_keep_their_image(tmp_path: Path) -> None:
    """A recipe builds Python environments only: a Go row keeps its image even with its repository
    cached, and the load says why."""
    go_row = next(json.loads(line) for line in (FIXTURES / "swe_rebench_v2.jsonl").read_text().splitlines() if '"language": "go"' in line)
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in ("gopherco__ringbuf", "r1chardj0n3s__parse"):  # any bundle will do: the Go row never looks
        shutil.copy(REPOS / "r1chardj0n3s__parse.bundle", cache / f"{name}.bundle")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(go_row) + "\n" + json.dumps({**V2_ROW, "language": "Python"}) + "\n")
    loaded = load_sources([rows], RepoCache(cache))
    go, python = sorted(loaded.tasks, key=lambda t: t.instance_id)
    assert go.environment.image == go_row["image_name"] and go.environment.recipe is None and go.repo_source.kind == "image"
    assert python.environment.recipe is not None
    assert "rows in other languages than Python keep their image (1 go): the base root filesystem has Python's toolchain only" in loaded.detected[0].reason


def test_an_image_name_with_the_default_registry_is_the_name_docker_lists() -> None:
    from docker.auth import INDEX_NAME

    from curation.sources.swe_rebench import tagged

    assert tagged(f"{INDEX_NAME}/{V2_ROW['image_name']}") == V2_ROW["image_name"]
    assert tagged(f"{INDEX_NAME}/library/python") == "python:latest"
    assert tagged("127.0.0.1:5000/a/b") == "127.0.0.1:5000/a/b:latest"  # another registry stays in the name


@pytest.mark.docker
def test_a_v2_image_named_with_the_default_registry_is_found_on_the_engine(docker_backend, swedeck_env: Settings, tmp_path: Path) -> None:
    """Regression: V2's image_name carries the default registry's host, which Docker drops from the
    names it lists, so a V2 image on the engine was never found: its workdir was not read, and with a
    repository cache the row was built from a recipe although docker could run its image."""
    import docker
    from docker.auth import INDEX_NAME

    client = docker.from_env()
    image = f"{INDEX_NAME}/swedeck-test/r1chardj0n3s-parse:113-{os.getpid()}"
    (tmp_path / "Dockerfile").write_text(f"FROM {swedeck_env.base_image}\nWORKDIR /src/parse\n")
    client.images.build(path=str(tmp_path), tag=image, rm=True)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({**V2_ROW, "image_name": image}) + "\n")
    try:
        loaded = load_sources([rows], RepoCache(REPOS, images=True))
    finally:
        client.images.remove(image, force=True)
    (task,) = loaded.tasks
    assert task.environment.recipe is None and task.environment.image == image
    assert task.environment.workdir == "/src/parse" and "workdir from the image for 1 of 1 rows" in loaded.detected[0].reason


def test_a_cloned_repository_is_sealed_at_the_base_commit(tmp_path: Path, swedeck_env: Settings, no_swebench: None) -> None:
    clone = tmp_path / "r1chardj0n3s__parse"
    subprocess.run(["git", "clone", "-q", str(REPOS / "r1chardj0n3s__parse.bundle"), str(clone)], check=True)
    (task,) = load_sources([ROW_FILE], RepoCache(tmp_path)).tasks
    tree = prepare_tree(task, swedeck_env)
    assert tree_commit(tree) == BASE
    fix = subprocess.run(["git", "cat-file", "-e", FIX], cwd=tree, capture_output=True, check=False)
    assert fix.returncode != 0  # the clone holds the fix commit; the sealed tree does not
    assert not list((tree / ".git" / "hooks").glob("*.sample"))  # inert templates every sandbox would copy


def test_fixture_bundle_is_small_and_reaches_the_fix() -> None:
    bundle = REPOS / "r1chardj0n3s__parse.bundle"
    assert bundle.stat().st_size < 2_000_000
    heads = subprocess.run(["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True, check=True)
    assert heads.stdout.split() == [FIX, "refs/heads/master"]


def test_repo_cache_that_is_not_a_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = swedeck_cli("p1", str(ROW_FILE), "--repo-cache", str(tmp_path / "nope"), "--out", str(tmp_path / "run"),
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
def test_a_go_swe_rebench_v2_row_on_bwrap_is_image_missing_saying_why(bwrap_backend, tmp_path: Path) -> None:
    (go,) = [t for t in load_sources([FIXTURES / "swe_rebench_v2.jsonl"], RepoCache(REPOS)).tasks if t.log_parser == "parse_log_gotest"]
    result = process_task(go, bwrap_backend, Pipeline1Config(runs=1), "cfg", tmp_path)
    assert (result.reason, result.stage) == ("env_error", "image_missing")
    assert go.environment.image in result.detail and "Python's toolchain only" in result.detail, result.detail


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
    done = swedeck_cli("p1", str(ROW_FILE), "--repo-cache", str(REPOS), "--out", str(run), "--backend", "bwrap", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = cli_query(run, "select reason, fail_to_pass, pass_to_pass from p1_results")
    assert result["reason"] == ""
    assert result["fail_to_pass"] == json.loads(ROW["FAIL_TO_PASS"])
    assert sorted(result["pass_to_pass"]) == sorted(json.loads(ROW["PASS_TO_PASS"]))
    (stored,) = run.glob("p1/*/task.json")
    environment = json.loads(stored.read_text())["environment"]
    assert environment["recipe"]["origin"].startswith("default: `python -m pip install -e .`")

    done = swedeck_cli("p1", str(ROW_FILE), "--out", str(tmp_path / "plain"), "--backend", "bwrap", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    (missing,) = cli_query(tmp_path / "plain", "select reason, stage, detail from p1_results")
    assert (missing["reason"], missing["stage"]) == ("env_error", "image_missing") and "--repo-cache" in missing["detail"]


@pytest.mark.slow
@pytest.mark.docker
def test_p1_on_docker_builds_from_the_repository_cache_when_the_image_is_missing(tmp_path: Path) -> None:
    run = tmp_path / "cached"
    done = swedeck_cli("p1", str(ROW_FILE), "--repo-cache", str(REPOS), "--out", str(run), "--backend", "docker",
                   "--set", "sandbox.pull=never", "--set", "pipeline1.runs=1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = cli_query(run, "select reason, fail_to_pass from p1_results")
    assert (result["reason"], result["fail_to_pass"]) == ("", json.loads(ROW["FAIL_TO_PASS"]))

    done = swedeck_cli("p1", str(ROW_FILE), "--out", str(tmp_path / "plain"), "--backend", "docker", "--set", "sandbox.pull=never", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    (missing,) = cli_query(tmp_path / "plain", "select reason, stage from p1_results")
    assert (missing["reason"], missing["stage"]) == ("env_error", "image_missing")


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.bwrap), pytest.param("docker", marks=pytest.mark.docker)])
def test_p1_runs_a_python_swe_rebench_v2_row_from_the_repository_cache(tmp_path: Path, backend: str) -> None:
    """The V2 row of the same fix commit: its install_config's commands build the environment, its
    test command runs in /parse, and the task is kept with the row's FAIL_TO_PASS and PASS_TO_PASS."""
    run = tmp_path / "run"
    done = swedeck_cli("p1", str(V2_FILE), "--repo-cache", str(REPOS), "--out", str(run), "--backend", backend,
                   "--set", "sandbox.pull=never", "--set", "pipeline1.runs=1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = cli_query(run, "select reason, detail, fail_to_pass, pass_to_pass from p1_results")
    assert result["reason"] == "", result["detail"]
    assert result["fail_to_pass"] == V2_ROW["FAIL_TO_PASS"]
    assert sorted(result["pass_to_pass"]) == sorted(V2_ROW["PASS_TO_PASS"])
    (stored,) = run.glob("p1/*/task.json")
    environment = json.loads(stored.read_text())["environment"]
    assert environment["recipe"]["origin"].startswith("SWE-rebench V2 install_config") and environment["workdir"] == "/parse"


def test_regression_one_tree_in_two_workdirs_gets_a_tree_tar_for_each(docker_backend) -> None:  # noqa: ANN001
    """parse #113's SWE-bench row (/testbed) and its SWE-rebench V2 row (/parse) share one tree: docker
    cached one tar per tree, rooted at the first task's workdir name, so the other's environment build
    failed (chdir to /parse: no such file or directory) and its gold earned 0 on docker only."""
    import tarfile
    from pathlib import PurePosixPath

    from harness.sandboxes.envs import tree_key

    (swe,) = load_sources([ROW_FILE], RepoCache(REPOS)).tasks
    (v2,) = load_sources([V2_FILE], RepoCache(REPOS)).tasks
    assert tree_key(swe) == tree_key(v2) and swe.environment.workdir != v2.environment.workdir
    for task in (swe, v2):
        with tarfile.open(docker_backend._tree_tar(task)) as tar:
            assert tar.getnames()[0] == PurePosixPath(task.environment.workdir).name
