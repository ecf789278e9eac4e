"""Recipe environments (issue 12): built with the task's tree at its workdir, this machine's index,
proxy and CA settings, readable by every sandbox user, and a failed build cached only when the
recipe itself is at fault. Both backends."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.config import Settings
from harness.sandboxes.envs import (
    BUILD_FILES_DIR,
    carried_env,
    env_key,
    failure_marker,
    is_infrastructure_failure,
    relocate_files,
)
from harness.grading.grader import gold_pattern
from harness.records import (
    Answer,
    Environment,
    HiddenTests,
    Recipe,
    RepoSource,
    Status,
    Task,
)
from harness.sandboxes.sandbox import Backend, EnvError

SRC_LAYOUT = {
    "pyproject.toml": textwrap.dedent(
        """\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "srcpkg"
        version = "0.3.0"
        """
    ),
    "src/srcpkg/__init__.py": "def answer():\n    return 41\n",
    "tests/test_answer.py": "from srcpkg import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
}


def make_task(tmp_path: Path, name: str, files: dict[str, str], install: list[str], test_cmd: str = "python -m pytest -q tests") -> Task:
    repo = tmp_path / name
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    return Task(
        instance_id=name, source="local", repo=f"local/{name}", problem_statement="p",
        environment=Environment(recipe=Recipe(install=install)),
        repo_source=RepoSource(kind="files", path=str(repo)), test_cmd=[test_cmd],
        answer=Answer(gold_patch="", hidden_tests=HiddenTests()),
    )  # fmt: skip


def run_in(backend: Backend, task: Task, command: str) -> tuple[int | None, str]:
    box = backend.open(task)
    try:
        done = box.run(command)
        return done.exit_code, done.output
    finally:
        box.close()


# ------------------------------------------------------------------------------------------ pure parts


def test_build_carries_index_proxy_and_ca_settings_but_not_local_folders() -> None:
    environ = {
        "PIP_CERT": "/etc/ssl/ca.pem", "https_proxy": "http://proxy:3128", "HOME": "/root",
        "PIP_INDEX_URL": "https://index.example/simple", "PATH": "/usr/bin",
    }  # fmt: skip
    config = {"index-url": "https://other.example/simple", "extra-index-url": "file:///opt/pypi https://x.example/s", "trusted-host": "x.example"}
    env = carried_env(environ, config)
    assert env == {
        "PIP_CERT": "/etc/ssl/ca.pem",
        "https_proxy": "http://proxy:3128",
        "PIP_INDEX_URL": "https://index.example/simple",  # the variable wins over the file
        "PIP_EXTRA_INDEX_URL": "https://x.example/s",
        "PIP_TRUSTED_HOST": "x.example",
    }


def test_variables_naming_host_files_point_at_copies_in_the_build(tmp_path: Path) -> None:
    bundle = tmp_path / "corp-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    env, files = relocate_files({"SSL_CERT_FILE": str(bundle), "SSL_CERT_DIR": str(tmp_path), "PIP_TIMEOUT": "60"})
    inside = f"{BUILD_FILES_DIR}/SSL_CERT_FILE-corp-ca.pem"
    assert env == {"SSL_CERT_FILE": inside, "SSL_CERT_DIR": str(tmp_path), "PIP_TIMEOUT": "60"}
    assert files == {inside: bundle}


@pytest.mark.parametrize(
    ("log", "timed_out", "infra"),
    [
        ("SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed'))", False, True),
        ("Failed to establish a new connection: [Errno -3] Temporary failure in name resolution", False, True),
        ("ERROR: HTTP error 503 while getting https://index/pkg.whl", False, True),
        ("", True, True),
        ("ERROR: No matching distribution found for ccyformat==2.1.0", False, False),
        ("error: subprocess-exited-with-error\n  SyntaxError: invalid syntax", False, False),
    ],
)
def test_build_failures_of_the_network_are_told_from_the_recipes(log: str, timed_out: bool, infra: bool) -> None:
    assert is_infrastructure_failure(log, timed_out) is infra


def test_env_key_follows_recipe_tree_and_workdir(tmp_path: Path) -> None:
    task = make_task(tmp_path, "keyed", {"a.py": "x = 1\n"}, ["pip install -e ."])
    other_dir = task.model_copy(update={"environment": task.environment.model_copy(update={"workdir": "/work"})})
    other_recipe = task.model_copy(update={"environment": Environment(recipe=Recipe(install=["true"]))})
    before = env_key(task)
    assert len({before, env_key(other_dir), env_key(other_recipe)}) == 3
    (tmp_path / "keyed" / "a.py").write_text("x = 2\n")
    assert env_key(task) != before


# ------------------------------------------------------------------------------------------ both backends


def test_recipe_env_is_readable_by_other_sandbox_users_and_installs_the_tree_editable(backend: Backend, tmp_path: Path) -> None:
    """Regression (issue 12): the environment was built as one sandbox uid into a 0700 folder, so
    later sandboxes could import nothing from it; and recipes could not see the repository. Offline:
    the base's pip and setuptools install the src-layout tree itself, editable."""
    task = make_task(tmp_path, f"srclayout-{backend.name}", SRC_LAYOUT, ["python -m pip install --no-index --no-build-isolation -e ."])
    code, output = run_in(backend, task, "python -m pytest -q tests")
    assert code == 1 and "assert 41 == 42" in output, output
    # editable: the sandbox's own tree is what is imported, so a patch to it takes effect
    box = backend.open(task)
    try:
        box.write_file("src/srcpkg/__init__.py", "def answer():\n    return 42\n")
        done = box.run("python -m pytest -q -p no:cacheprovider tests && python -c 'import importlib.metadata as m; print(m.version(\"srcpkg\"))'")
        assert done.exit_code == 0 and "0.3.0" in done.output, done.output
        listing = box.run("git status --porcelain")
        assert listing.output.split() == ["M", "src/srcpkg/__init__.py"], listing.output  # the build left nothing in the tree
    finally:
        box.close()


def test_a_recipe_that_fails_is_cached_with_how_to_retry(backend: Backend, tmp_path: Path, swedeck_env: Settings) -> None:
    task = make_task(tmp_path, f"broken-{backend.name}", {"a.py": ""}, ["echo 'ERROR: No matching distribution found for nope'; exit 1"])
    with pytest.raises(EnvError, match="cached in .*delete that file to build again"):
        backend.prepare(task)
    marker = failure_marker(swedeck_env, env_key(task))
    assert marker.is_file()
    with pytest.raises(EnvError, match="failed earlier .*delete that file to build again") as again:
        backend.prepare(task)
    assert "No matching distribution" in again.value.log
    marker.unlink()
    with pytest.raises(EnvError, match="failed at"):  # deleting it builds again
        backend.prepare(task)


def test_a_build_failed_by_the_network_is_not_cached(backend: Backend, tmp_path: Path, swedeck_env: Settings) -> None:
    """Regression (issue 12): a CERTIFICATE_VERIFY_FAILED install was cached as the recipe's failure
    and blocked every retry."""
    command = "echo '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed' >&2; exit 1"
    task = make_task(tmp_path, f"offline-{backend.name}", {"a.py": ""}, [command])
    for _ in range(2):  # both attempts build; neither leaves a marker
        with pytest.raises(EnvError, match="not cached, the next run builds again"):
            backend.prepare(task)
        assert not failure_marker(swedeck_env, env_key(task)).exists()


# ------------------------------------------------------------------------------------------ from the registry


FREEZER = {
    "clock.py": "import datetime\n\n\ndef today():\n    return datetime.date.today().isoformat()\n",
    "tests/test_clock.py": textwrap.dedent(
        """\
        from freezegun import freeze_time

        from clock import today


        @freeze_time("2012-01-14")
        def test_today():
            assert today() == "2012-01-14"
        """
    ),
}
SCM_LAYOUT = {
    **{k: v for k, v in SRC_LAYOUT.items() if k != "pyproject.toml"},
    "pyproject.toml": textwrap.dedent(
        """\
        [build-system]
        requires = ["setuptools>=64", "setuptools-scm>=8"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "srcpkg"
        dynamic = ["version"]

        [tool.setuptools_scm]
        """
    ),
}


@pytest.mark.slow
def test_recipe_installs_a_package_from_the_registry(backend: Backend, tmp_path: Path) -> None:
    """A real install with the network on, through this machine's index and CA settings (on docker
    the CA bundle is copied into the build container), used by the task's tests in a sandbox of
    another user without the network: a library and a pytest plugin (`--timeout` was 'unrecognized'
    when the environment was unreadable)."""
    install = ["pip install freezegun==1.5.5 pytest-timeout==2.3.1"]
    task = make_task(tmp_path, f"freezer-{backend.name}", FREEZER, install, "python -m pytest --timeout=60 tests")
    code, output = run_in(backend, task, "python -m pytest -q --timeout=60 tests")
    assert code == 0 and "1 passed" in output, output
    # and through the grader (plugins by name, its own PYTHONPATH): the gold pattern it records
    assert gold_pattern(task, backend) == {"tests/test_clock.py::test_today": Status.PASSED}


@pytest.mark.slow
def test_recipe_installs_a_version_from_git_src_layout_repo_editable(backend: Backend, tmp_path: Path) -> None:
    """`pip install -e .` with build isolation: setuptools-scm comes from the registry and reads the
    version from the sealed tree's git history."""
    task = make_task(tmp_path, f"scm-{backend.name}", SCM_LAYOUT, ["pip install -e ."])
    code, output = run_in(backend, task, "python -c 'import importlib.metadata as m, srcpkg; print(m.version(\"srcpkg\"), srcpkg.answer())'")
    assert code == 0 and output.split()[-1] == "41", output
    assert output.split()[-2].startswith("0."), output
