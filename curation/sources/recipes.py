"""SWE-bench-shaped rows without their image: the environment built from the row's install spec,
the repository from a local repository cache (``--repo-cache DIR``, config ``sources.repo_cache``).

The cache holds ``<owner>__<name>.bundle`` git bundles or ``<owner>__<name>/`` clones (names matched
without regard to case, as GitHub matches them). A SWE-bench, SWE-Gym, SWE-rebench v1 or Python
SWE-rebench V2 task whose image this backend cannot run (bwrap runs none; docker runs those its
engine holds) and whose repository is in the cache becomes a recipe task: its tree is the cached
repository at the row's ``base_commit``, and its environment is built from, in this order,

(a) the row's own ``install_config`` (SWE-rebench v1: a SWE-bench spec; V2: ``install`` commands,
    the Python version in ``docker_specs.python_version``), else
(b) SWE-bench's spec for the row's repository and version (``MAP_REPO_VERSION_TO_SPECS``) when the
    ``swebench`` package of a release that has it (up to 4.x; 5.x builds from Dockerfiles and has no
    spec table) is installed, else
(c) ``python -m pip install -e .``.

Specs are replayed the way SWE-bench's harness replays them, in a virtual environment instead of a
conda env: ``packages`` (``requirements.txt``: the first of the ``reqs_path`` files that the tree
has; else the listed packages, through pip), ``pip_packages``, ``pre_install``, ``install``;
``env_vars`` are exported for builds and tests. What a virtual environment cannot do is left out and
said in ``Recipe.origin`` (a conda ``environment.yml``, system packages, another Python than the
base's). A failing command fails the build, naming it (V2's image build ignored failing install
commands; a build that hid a failure would cache a broken environment). The test command stays the
row's own, run in the workdir the row names.

V2 rows in other languages keep their image: the base root filesystem holds Python's toolchain only.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curation.sources.base import RowError, json_object
from harness.records import Environment, Recipe, RepoSource, Task

# the adapters whose rows name an install spec or can do with the default one
SOURCES = ("swe_bench", "swe_gym", "swe_rebench_v1", "swe_rebench_v2")
V2 = "swe_rebench_v2"
PIP_INSTALL = "python -m pip install"
DEFAULT_INSTALL = f"{PIP_INSTALL} -e ."
# commands that install system packages: they need root and the distribution's mirrors, neither of
# which a recipe build has
SYSTEM_PACKAGERS = ("apt-get ", "apt ", "yum ", "dnf ", "apk ", "conda ")


def _commands(value: Any, field_name: str) -> list[str]:
    """A spec entry that is one command or a list of them (SWE-rebench writes both)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(c, str) for c in items):
        raise RowError(field_name, f"expected a command or a list of commands, got {type(value).__name__}")
    return [c.strip() for c in items if c.strip()]


def _shell_word(item: str) -> str:
    """A pip requirement as one shell word (``pytest<8`` would be a redirection); specs that quote
    their own (``"'numpy<2'"``) keep their quotes."""
    return item if item[:1] in ("'", '"') else shlex.quote(item)


def spec_recipe(spec: Mapping[str, Any], origin: str, reqs_paths: list[str] | None = None) -> tuple[Recipe, str]:
    """A SWE-bench install spec (or SWE-rebench's ``install_config``, the same keys) as a recipe and
    the activation its ``env_vars`` need; ``origin`` names where the spec came from. ``reqs_paths``
    are the requirement files ``packages = "requirements.txt"`` means when the spec names none."""
    where = "install_config"
    install: list[str] = []
    left_out: list[str] = []
    packages = spec.get("packages") or ""
    if not isinstance(packages, str):
        raise RowError(f"{where}.packages", f"expected a string, got {type(packages).__name__}")
    if packages.strip() == "requirements.txt":
        paths = _commands(spec.get("reqs_path"), f"{where}.reqs_path") or reqs_paths or ["requirements.txt"]
        install.append(first_requirements(paths))
    elif packages.strip() == "environment.yml":
        left_out.append("the conda environment.yml")
    elif packages.strip():
        install.append(f"{PIP_INSTALL} {packages.strip()}")  # conda package names, as pip knows them
    pip_packages = _commands(spec.get("pip_packages"), f"{where}.pip_packages")
    if pip_packages:
        install.append(f"{PIP_INSTALL} {' '.join(_shell_word(p) for p in pip_packages)}")
    for key in ("pre_install", "install"):
        for command in _commands(spec.get(key), f"{where}.{key}"):
            if command.startswith(SYSTEM_PACKAGERS):
                left_out.append(f"`{command}`")
            else:
                install.append(command)
    env_vars = spec.get("env_vars") or {}
    if not isinstance(env_vars, Mapping):
        raise RowError(f"{where}.env_vars", f"expected a mapping, got {type(env_vars).__name__}")
    activation = " ".join(f"export {k}={shlex.quote(str(v))};" for k, v in env_vars.items())
    notes = [origin]
    docker_specs = spec.get("docker_specs") or {}
    python = spec.get("python") or (docker_specs.get("python_version") if isinstance(docker_specs, Mapping) else None)
    if python:
        notes.append(f"asks for python {python}, the base's python runs it")
    if left_out:
        notes.append("left out: " + ", ".join(left_out))
    return Recipe(install=install, origin="; ".join(notes)), activation


def swebench_spec(repo: str, version: str) -> tuple[Mapping[str, Any], list[str]] | None:
    """SWE-bench's install spec for ``repo`` at ``version`` and its requirement paths for the repo,
    when the ``swebench`` package is installed and knows them."""
    try:
        from swebench.harness import constants
    except ImportError:
        return None
    # swebench 5.x dropped the table (its images come from per-task Dockerfiles)
    spec = getattr(constants, "MAP_REPO_VERSION_TO_SPECS", {}).get(repo, {}).get(version)
    if spec is None:
        return None
    return spec, list(getattr(constants, "MAP_REPO_TO_REQS_PATHS", {}).get(repo, []))


def first_requirements(paths: list[str]) -> str:
    """Install the first of ``paths`` the tree has, as SWE-bench's harness takes the first of a
    repository's requirement paths that exists at the commit; none of them fails the build."""
    if len(paths) == 1:
        return f"{PIP_INSTALL} -r {shlex.quote(paths[0])}"
    words = " ".join(shlex.quote(p) for p in paths)
    # no exec or exit: the sandbox may run the command inside a script of its own
    return (
        f'r=$(for r in {words}; do if [ -f "$r" ]; then echo "$r"; break; fi; done); '
        f'if [ -n "$r" ]; then {PIP_INSTALL} -r "$r"; else echo "none of {words} is in the tree" >&2; false; fi'
    )


def other_language(task: Task, row: Mapping[str, Any]) -> str:
    """The language of a V2 row that is not Python (its image is its only environment), else ''."""
    if task.source != V2:
        return ""
    language = str(row.get("language") or "").strip().lower()
    return "" if language == "python" else language or "an unnamed language"


def row_recipe(task: Task, row: Mapping[str, Any]) -> tuple[Recipe, str]:
    """The recipe and activation for a row's environment: (a) its install_config, (b) SWE-bench's
    spec, (c) an editable install of the tree."""
    if row.get("install_config") is not None:
        which = "SWE-rebench V2 install_config" if task.source == V2 else "SWE-rebench install_config"
        return spec_recipe(json_object(row, "install_config"), which)
    version = str(row.get("version") or "").strip()
    found = swebench_spec(task.repo, version)
    if found is not None:
        spec, reqs_paths = found
        return spec_recipe(spec, f"swebench spec {task.repo} {version}", reqs_paths)
    return Recipe(install=[DEFAULT_INSTALL], origin=f"default: `{DEFAULT_INSTALL}` (no install_config, no swebench spec)"), ""


def as_recipe_task(task: Task, row: Mapping[str, Any], source: RepoSource) -> Task:
    recipe, activation = row_recipe(task, row)
    environment = Environment(recipe=recipe, workdir=task.environment.workdir, activation=activation)
    return task.model_copy(update={"environment": environment, "repo_source": source})


@dataclass
class RepoCache:
    """A folder of repositories, and whether the backend runs corpus images (docker: a task whose
    image its engine holds keeps the image)."""

    root: Path
    images: bool = False

    @functools.cached_property
    def _entries(self) -> dict[str, Path]:
        """``owner__name`` (lower case) -> bundle or clone."""
        found = {}
        for entry in self.root.iterdir():
            if entry.suffix == ".bundle" and entry.is_file():
                found[entry.stem.lower()] = entry
            elif entry.is_dir() and ((entry / ".git").exists() or (entry / "HEAD").is_file()):
                found.setdefault(entry.name.lower(), entry)  # a bundle of the same name comes first
        return found

    @functools.cached_property
    def _local_images(self) -> set[str]:
        from curation.sources.swe_rebench import local_image_tags

        return local_image_tags() if self.images else set()

    def source(self, repo: str, base_commit: str) -> RepoSource | None:
        path = self._entries.get(repo.replace("/", "__").lower())
        if path is None or not base_commit:
            return None
        kind = "bundle" if path.is_file() else "git"
        return RepoSource(kind=kind, path=str(path.resolve()), ref=base_commit)

    def resolve(self, task: Task, row: Mapping[str, Any]) -> Task:
        """``task`` as a recipe task when its image cannot run here and its repository is cached;
        else unchanged (a missing image is then recorded as such when the task runs)."""
        from curation.sources.swe_rebench import tagged

        image = task.environment.image
        if task.source not in SOURCES or image is None or other_language(task, row) or tagged(image) in self._local_images:
            return task
        source = self.source(task.repo, task.base_commit)
        return task if source is None else as_recipe_task(task, row, source)
