"""Scale-SWE rows -> Task.

Hidden tests are the developer test patch (``f2p_patch``, may be empty) and the synthetic reproduction
test (``f2p_script``, written as ``test_fail_to_pass.py`` in the workdir); at least one must be present.
Tests run as AweAgent runs them: one pytest over the FAIL_TO_PASS + PASS_TO_PASS node ids. AweAgent
reads a JUnit report; here the log is pytest's text, so the parser is ``pytest``, for which the grader
asks pytest for its own JUnit report and prefers it (a report path in the command would override the
grader's and leave it nothing to read).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from curation.sources.base import (
    RowError,
    conda_activation,
    id_list,
    leaky_columns,
    optional_str,
    parse_patch,
    patch_paths,
    require_str,
    unique,
)
from harness.records import Answer, Environment, HiddenTests, Task

SOURCE = "scale_swe"
DEFAULT_WORKDIR = "/testbed"
F2P_SCRIPT = "test_fail_to_pass.py"
LEAKY = ("patch", "pr_commit", "f2p_patch", "f2p_script", "github_url")
# the testbed env lives under /opt/miniconda3 or /opt/conda depending on the image
CONDA = conda_activation("/opt/miniconda3", "/opt/conda")
PRE_DONE = "/tmp/.swedeck-pre-commands-done"
PRE_LOG = "/tmp/.swedeck-pre-commands.log"


def to_task(row: Mapping[str, Any]) -> Task:
    instance_id = require_str(row, "instance_id").strip()
    gold = require_str(row, "patch")
    parse_patch(gold, "patch")
    f2p_patch = optional_str(row, "f2p_patch")
    f2p_script = optional_str(row, "f2p_script")
    if not f2p_patch and not f2p_script:
        raise RowError("f2p_patch", "neither f2p_patch nor f2p_script holds a test: the task has no hidden tests")
    hidden = parse_patch(f2p_patch, "f2p_patch") if f2p_patch else []
    files = {F2P_SCRIPT: f2p_script} if f2p_script else {}
    f2p, p2p = id_list(row, "FAIL_TO_PASS"), id_list(row, "PASS_TO_PASS")
    if not f2p and not p2p:
        raise RowError("FAIL_TO_PASS", "FAIL_TO_PASS and PASS_TO_PASS are both empty: there is nothing to run")
    return Task(
        instance_id=instance_id,
        source=SOURCE,
        repo=_repo(row),
        base_commit=require_str(row, "parent_commit").strip(),
        problem_statement=require_str(row, "problem_statement"),
        environment=Environment(
            image=require_str(row, "image_url").strip(),
            workdir=optional_str(row, "workdir", DEFAULT_WORKDIR).strip(),
            activation=_activation(optional_str(row, "pre_commands")),
        ),
        test_cmd=[
            f"python -m pytest -rA -vv -o addopts= --rootdir=. -- {shlex.join(unique([*f2p, *p2p]))}"
        ],
        log_parser="pytest",
        test_paths=unique([*patch_paths(hidden), *files]),
        answer=Answer(
            gold_patch=gold,
            hidden_tests=HiddenTests(patch=f2p_patch, files=files),
            fail_to_pass=f2p,
            pass_to_pass=p2p,
            leaky_columns=leaky_columns(row, LEAKY),
        ),
    )


def _repo(row: Mapping[str, Any]) -> str:
    repo = require_str(row, "repo").strip()
    if "/" in repo:  # some mirrors already join owner/name
        return repo
    return f"{require_str(row, 'user').strip()}/{repo}"


def _activation(pre_commands: str) -> str:
    """Conda activation, preceded by the row's ``pre_commands`` run once per container.

    ``pre_commands`` must run first in a fresh container: they put the repository on the base commit
    (and, in the published rows, rebuild a single-branch, reflog-free history). The Task schema has no
    "run once at start" hook, and ``activation`` runs before EVERY command, where a checkout or reset
    would wipe the candidate's edits. So they are guarded by a marker in /tmp: the first command in a
    container runs them (before its own work), every later command skips them. A fresh sandbox gives
    a fresh /tmp, so each grading run replays them. They run in a subshell so a ``cd`` inside does not
    move the command; on failure their output goes to stderr, no marker is left, and the next command
    tries again. (The harness also seals git history at ``base_commit`` when the sandbox opens, which
    is the checkout part of what they do.)
    """
    pre = pre_commands.strip()
    if pre.endswith("\\n"):  # the corpus leaves a literal backslash-n at the end; AweAgent strips it
        pre = pre[:-2].rstrip()
    if not pre:
        return CONDA
    guard = (
        f"[ -e {PRE_DONE} ] || {{ ( {pre}\n) > {PRE_LOG} 2>&1 && touch {PRE_DONE} || "
        f"{{ echo 'swedeck: pre_commands failed' >&2; cat {PRE_LOG} >&2; false; }}; }}"
    )
    return f"{guard}\n{CONDA}"
