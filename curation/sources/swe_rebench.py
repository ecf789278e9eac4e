"""SWE-rebench V2 rows -> Task.

Every row ships a prebuilt image (``image_name``) with the repository at ``/<repo-name>`` and the
install commands already run, so ``install_config.install`` is not replayed (a Recipe cannot express
it anyway: Recipe commands run without the repository). ``install_config`` has a row-varying schema and
arrives as a struct/dict or as a JSON string; its ``test_cmd`` is a string or a list of commands and its
``log_parser`` names one of SWE-rebench's parsers (kept as is, resolved by the harness).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curation.sources.base import (
    RowError,
    id_list,
    json_object,
    leaky_columns,
    parse_patch,
    patch_paths,
    require_str,
)
from harness.records import Answer, Environment, HiddenTests, Task

SOURCE = "swe_rebench_v2"
LEAKY = ("patch", "test_patch", "pr_description", "interface", "meta")


def to_task(row: Mapping[str, Any]) -> Task:
    instance_id = require_str(row, "instance_id").strip()
    repo = require_str(row, "repo").strip()
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise RowError("repo", f"{repo!r} is not of the form owner/name")
    config = json_object(row, "install_config")
    gold = require_str(row, "patch")
    parse_patch(gold, "patch")
    test_patch = require_str(row, "test_patch")
    hidden = parse_patch(test_patch, "test_patch")
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
        answer=Answer(
            gold_patch=gold,
            hidden_tests=HiddenTests(patch=test_patch),
            fail_to_pass=id_list(row, "FAIL_TO_PASS"),
            pass_to_pass=id_list(row, "PASS_TO_PASS"),
            leaky_columns=leaky_columns(row, LEAKY),
        ),
    )


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
