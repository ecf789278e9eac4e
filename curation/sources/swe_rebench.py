"""SWE-rebench rows -> Task: V2 (``nebius/SWE-rebench-V2``, 20 languages) and v1 (``nebius/SWE-rebench``).

V2 rows ship a prebuilt image (``image_name``) with the install commands already run, so
``install_config.install`` is not replayed, except for a Python row whose image cannot run here and
whose repository is in a ``--repo-cache`` (``recipes``). ``install_config`` has a row-varying schema and arrives
as a struct/dict or as a JSON string; its ``test_cmd`` is a string or a list of commands and its
``log_parser`` names one of SWE-rebench's parsers (kept as is, resolved by the harness). Every
language loads: the harness runs whatever the image holds. The workdir is the image's own working
directory when the image is here to ask (:func:`with_image_workdirs`), else ``/<repo-name>``, which
is the ``WORKDIR`` the V2 Dockerfile template sets.

v1 rows are SWE-bench-shaped Python tasks (``environment_setup_commit``, ``version``, ``hints_text``,
``FAIL_TO_FAIL``/``PASS_TO_FAIL``) whose ``install_config`` is a SWE-bench install spec (``python``,
``install``, ``pip_packages``, ``reqs_path``, ...) that may lack ``test_cmd`` and ``log_parser``; their
images (``docker_image``) keep the repository at ``/testbed`` in conda env ``testbed``, as SWE-bench's
do. The test command is the spec's ``test_cmd`` (or ``pytest -rA``) plus the test files of the test
patch, as SWE-bench's harness builds it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from curation.sources.base import (
    RowError,
    conda_activation,
    id_list,
    is_test_directive,
    json_object,
    optional_str,
    patch_paths,
    pr_answer,
    require_str,
)
from harness.records import Environment, Task

SOURCE = "swe_rebench_v2"
SOURCE_V1 = "swe_rebench_v1"
LEAKY = ("patch", "test_patch", "pr_description", "interface", "meta")
LEAKY_V1 = ("patch", "test_patch", "hints_text", "meta")
V1_WORKDIR = "/testbed"
V1_TEST_CMD = "pytest -rA"
V1_PARSER = "parse_log_pytest"


def _repo_name(row: Mapping[str, Any]) -> tuple[str, str]:
    repo = require_str(row, "repo").strip()
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise RowError("repo", f"{repo!r} is not of the form owner/name")
    return repo, name


def to_task(row: Mapping[str, Any]) -> Task:
    """A V2 row."""
    instance_id = require_str(row, "instance_id").strip()
    repo, name = _repo_name(row)
    config = json_object(row, "install_config")
    answer, hidden = pr_answer(row, LEAKY)
    return Task(
        instance_id=instance_id,
        source=SOURCE,
        repo=repo,
        base_commit=require_str(row, "base_commit").strip(),
        problem_statement=require_str(row, "problem_statement"),
        environment=Environment(image=require_str(row, "image_name").strip(), workdir=f"/{name}"),
        test_cmd=_test_cmd(config),
        log_parser=_log_parser(config),
        test_paths=patch_paths(hidden),
        answer=answer,
    )


def v1_task(row: Mapping[str, Any]) -> Task:
    """A v1 row. FAIL_TO_FAIL and PASS_TO_FAIL are read (they must be id lists when present) but are
    no part of the reward: Pipeline 1 derives the gold pattern from its own runs."""
    instance_id = require_str(row, "instance_id").strip()
    repo, _ = _repo_name(row)
    config = json_object(row, "install_config")
    answer, hidden = pr_answer(row, LEAKY_V1)
    for field in ("FAIL_TO_FAIL", "PASS_TO_FAIL"):
        if row.get(field) is not None:
            id_list(row, field)
    runner = config.get("test_cmd") or V1_TEST_CMD
    if not isinstance(runner, str):
        raise RowError("install_config.test_cmd", f"expected a string, got {type(runner).__name__}")
    directives = [p for p in (f.new_path for f in hidden) if p and is_test_directive(p)]
    parser = config.get("log_parser") or V1_PARSER
    if not isinstance(parser, str):
        raise RowError("install_config.log_parser", f"expected a string, got {type(parser).__name__}")
    return Task(
        instance_id=instance_id,
        source=SOURCE_V1,
        repo=repo,
        base_commit=require_str(row, "base_commit").strip(),
        problem_statement=require_str(row, "problem_statement"),
        environment=Environment(
            image=optional_str(row, "docker_image").strip() or v1_image(instance_id),
            workdir=V1_WORKDIR,
            activation=conda_activation("/opt/miniconda3"),
        ),
        test_cmd=[f"{runner.strip()} {shlex.join(directives)}".rstrip()],
        log_parser=parser.strip(),
        test_paths=patch_paths(hidden),
        answer=answer,
    )


def v1_image(instance_id: str) -> str:
    """SWE-rebench's image name for a v1 row without ``docker_image`` (SWE-bench's scheme, namespace
    ``swerebench``)."""
    return f"swerebench/sweb.eval.x86_64.{instance_id.lower().replace('__', '_1776_')}:latest"


def _test_cmd(config: Mapping[str, Any]) -> list[str]:
    cmd = config.get("test_cmd")
    if cmd is None:
        raise RowError("install_config.test_cmd", "install_config has no test_cmd")
    commands = [cmd] if isinstance(cmd, str) else cmd
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise RowError("install_config.test_cmd", f"expected a string or a list of strings, got {type(cmd).__name__}")
    commands = [c for c in commands if c.strip()]
    if not commands:
        raise RowError("install_config.test_cmd", "is empty")
    return commands


def _log_parser(config: Mapping[str, Any]) -> str:
    parser = config.get("log_parser")
    if not isinstance(parser, str) or not parser.strip():
        raise RowError("install_config.log_parser", "install_config names no log_parser")
    return parser.strip()


def with_image_workdirs(tasks: list[Task]) -> tuple[list[Task], int]:
    """V2 tasks with the working directory their image declares, for images present on this
    machine's Docker engine; the others keep ``/<repo-name>``. Also the number of tasks whose image
    was asked. No engine, no change."""
    workdirs = local_image_workdirs({t.environment.image for t in tasks if t.environment.image})
    out = []
    for task in tasks:
        workdir = workdirs.get(task.environment.image or "")
        if workdir:
            task = task.model_copy(update={"environment": task.environment.model_copy(update={"workdir": workdir})})
        out.append(task)
    return out, sum(1 for t in tasks if (t.environment.image or "") in workdirs)


def local_image_workdirs(images: set[str]) -> dict[str, str]:
    """``{image: WORKDIR}`` for those of ``images`` the local engine holds (one listing, then one
    inspection per image found); an image without a WORKDIR maps to ''."""
    local = local_image_tags()
    found = {image for image in images if tagged(image) in local}
    if not found:
        return {}
    import docker

    client = docker.from_env(timeout=10)
    return {image: client.images.get(image).attrs.get("Config", {}).get("WorkingDir") or "" for image in found}


def local_image_tags() -> set[str]:
    """Every ``name:tag`` the local engine holds (one listing); none without an engine."""
    try:
        import docker

        return {tag for image in docker.from_env(timeout=10).images.list() for tag in image.tags}
    except Exception:  # noqa: BLE001 - no SDK, no engine, no permission: nothing is known
        return set()


def tagged(image: str) -> str:
    """``image`` as Docker lists it: ``name:tag`` (no tag means ``:latest``), without the default
    registry's host and its ``library/`` namespace, which the engine drops from the names it lists
    (V2's ``image_name`` carries the host)."""
    from docker.auth import INDEX_NAME, resolve_repository_name

    last = image.rsplit("/", 1)[-1]
    reference = image if ":" in last or "@" in last else f"{image}:latest"
    registry, name = resolve_repository_name(reference)
    return name.removeprefix("library/") if registry == INDEX_NAME else reference
