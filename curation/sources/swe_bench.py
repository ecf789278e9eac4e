"""SWE-bench and SWE-Gym rows -> Task.

The two share a schema. SWE-bench encodes FAIL_TO_PASS / PASS_TO_PASS as JSON strings and has
``environment_setup_commit``; SWE-Gym has native lists and no ``environment_setup_commit``. They differ in
image namespace and in how ``__`` (forbidden in image names) is spelled: ``_1776_`` vs ``_s_``.

The test command is SWE-bench's: the repo's runner plus the files named in the ``diff --git`` headers of
the test patch (minus data-file extensions). Plain pytest repos use ``pytest -rA``; the few repos whose
spec runs something else (Django's runtests.py, SymPy's bin/test, ...) get that runner and parser, since
``pytest`` cannot run their suites.

SWE-bench 5 rows (``make_test_spec`` in swebench>=5) carry their own ``image``, ``log_parser``,
``eval_type`` and ``eval_script``; the ids may be lists. There the script is the truth: the test command
is what it runs between its ``>>>>> Start Test Output`` and ``>>>>> End Test Output`` markers, and the
workdir and activation are its own ``cd`` and environment lines (a Go or JavaScript image has no conda).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any, NamedTuple

from curation.sources.base import (
    RowError,
    conda_activation,
    is_test_directive,
    optional_str,
    patch_paths,
    pr_answer,
    require_str,
    unique,
)
from harness.records import Environment, Task

SOURCES = ("swe_bench", "swe_gym")
WORKDIR = "/testbed"
ACTIVATION = conda_activation("/opt/miniconda3")
# eval_script (swebench>=5 rows) embeds the test patch, so it leaks too
LEAKY = ("patch", "test_patch", "hints_text", "eval_script")
_IMAGE = {"swe_bench": ("swebench", "_1776_"), "swe_gym": ("xingyaoww", "_s_")}
PYTEST = "pytest -rA"
# repo -> (runner, parser) where SWE-bench's spec does not run plain `pytest -rA` (v4.1.0 constants)
_REPO_RUNNER = {
    "django/django": ("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1", "parse_log_django"),
    "sympy/sympy": (
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose",
        "parse_log_sympy",
    ),
    "astropy/astropy": ("pytest -rA -vv -o console_output_style=classic --tb=no", "parse_log_pytest_v2"),
    "sphinx-doc/sphinx": ("tox --current-env -epy39 -v --", "parse_log_pytest_v2"),
    "mwaskom/seaborn": ("pytest --no-header -rA", "parse_log_seaborn"),
}
_DJANGO_1_9 = "./tests/runtests.py --verbosity 2"
# the columns swebench>=5's make_test_spec reads beyond the 4.x schema
V5_COLUMNS = ("image", "log_parser", "eval_type", "eval_script")
EVAL_TYPES = ("pass_and_fail", "fail_only")
_START, _END = ">>>>> Start Test Output", ">>>>> End Test Output"
_HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")
_ENV_LINE = re.compile(r"^(?:source |conda activate |export |\. )")


def is_v5(row: Mapping[str, Any]) -> bool:
    return isinstance(row.get("eval_script"), str) and bool(row["eval_script"].strip())


def detect_source(row: Mapping[str, Any]) -> str:
    """SWE-Gym rows carry list-typed ids, no environment_setup_commit and no eval_script; anything
    else is SWE-bench (5.x rows may have list ids too)."""
    lists = isinstance(row.get("FAIL_TO_PASS"), (list, tuple)) and isinstance(row.get("PASS_TO_PASS"), (list, tuple))
    gym = lists and row.get("environment_setup_commit") is None and not is_v5(row)
    return "swe_gym" if gym else "swe_bench"


def version(row: Mapping[str, Any]) -> tuple[str, str]:
    """The schema a SWE-bench row follows and why, for the load result's detection note."""
    if is_v5(row):
        return "SWE-bench 5", "eval_script, image and log_parser given by the row"
    return "SWE-bench <=4", "no eval_script: runner and parser from the repository"


class EvalScript(NamedTuple):
    workdir: str
    activation: str
    test_cmd: list[str]


def read_eval_script(script: str) -> EvalScript:
    """What a swebench>=5 eval script does around its tests: the last ``cd`` before the start marker,
    the environment lines (``source``, ``conda activate``, ``export``), and the commands between the
    markers. Heredoc bodies (the test patch) are skipped."""
    if _START not in script:
        raise RowError("eval_script", f"has no {_START!r} marker: the test command cannot be found")
    workdir, env, tests = WORKDIR, [], []
    heredoc: str | None = None
    state = "before"
    for line in script.splitlines():
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        stripped = line.strip()
        if _START in stripped:
            state = "tests"
        elif _END in stripped:
            state = "after"
        elif state == "tests" and stripped and not stripped.startswith("#"):
            tests.append(stripped)
        elif state == "before" and stripped.startswith("cd "):
            workdir = stripped.removeprefix("cd ").strip()
        elif state == "before" and _ENV_LINE.match(stripped):
            env.append(stripped)
        match = _HEREDOC.search(stripped)
        if match and heredoc is None and not (_START in stripped or _END in stripped):
            heredoc = match.group(1)
    if not tests:
        raise RowError("eval_script", "runs no command between its test output markers")
    return EvalScript(workdir=workdir, activation="\n".join(unique(env)), test_cmd=tests)


def image_name(instance_id: str, source: str) -> str:
    namespace, dunder = _IMAGE[source]
    return f"{namespace}/sweb.eval.x86_64.{instance_id.lower().replace('__', dunder)}:latest"


def to_task(row: Mapping[str, Any], source: str | None = None) -> Task:
    """``source`` forces swe_bench or swe_gym; by default it is detected from the row."""
    source = source or detect_source(row)
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r} for the SWE-bench adapter")
    instance_id = require_str(row, "instance_id").strip()
    repo = require_str(row, "repo").strip()
    answer, hidden = pr_answer(row, LEAKY)
    runner, parser = _REPO_RUNNER.get(repo, (PYTEST, "pytest"))
    if repo == "django/django" and str(row.get("version") or "").strip() == "1.9":
        runner = _DJANGO_1_9
    directives = [p for p in (f.new_path for f in hidden) if p and is_test_directive(p)]
    if repo == "django/django":
        directives = [_django_label(p) for p in directives]
    script = EvalScript(WORKDIR, ACTIVATION, [f"{runner} {shlex.join(directives)}".rstrip()])
    if is_v5(row):
        script = read_eval_script(row["eval_script"])
        eval_type = optional_str(row, "eval_type", "pass_and_fail").strip()
        if eval_type not in EVAL_TYPES:
            raise RowError("eval_type", f"{eval_type!r} is none of {', '.join(EVAL_TYPES)}")
    return Task(
        instance_id=instance_id,
        source=source,
        repo=repo,
        base_commit=require_str(row, "base_commit").strip(),
        problem_statement=require_str(row, "problem_statement"),
        environment=Environment(
            image=optional_str(row, "image").strip() or image_name(instance_id, source),
            workdir=script.workdir,
            activation=script.activation,
        ),
        test_cmd=script.test_cmd,
        log_parser=optional_str(row, "log_parser").strip() or parser,
        test_paths=patch_paths(hidden),
        answer=answer,
    )


def _django_label(path: str) -> str:
    """tests/foo/test_bar.py -> foo.test_bar, as runtests.py expects."""
    label = path.removesuffix(".py")
    label = label.removeprefix("tests/")
    return label.replace("/", ".")


def swe_gym_task(row: Mapping[str, Any]) -> Task:
    return to_task(row, "swe_gym")


def swe_bench_task(row: Mapping[str, Any]) -> Task:
    return to_task(row, "swe_bench")
