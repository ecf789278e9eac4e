"""R2E-Gym rows (Subset / Lite / V1) -> Task.

R2E-Gym ships no patch columns: the fix commit is in ``parsed_commit_content`` (JSON). Its files are
split by R2E's test-file rule: test files become the hidden test patch, everything else the gold patch.
Unlike R2E's own ``get_patch`` (Python files only), non-.py changes (.pyx, .cfg, data files) are kept:
dropping them silently would leave a gold patch that may not build or pass. The graded tests are the
``/r2e_tests`` copies in ``execution_result_content``, written to ``r2e_tests/<name>`` in the workdir,
and the reward contract is R2E's: the whole ``expected_output_json`` status map must reproduce.

The command is R2E's own: tornado rows, and pillow rows whose tests are unittest-based, ship one of
R2E's runner scripts among the hidden test files (``tornado_unittest_runner.py``,
``unittest_custom_runner.py``; R2E's ``repo_testextract.py`` adds them) and run it instead of pytest.
The scripts print a pytest-style short test summary, which the ``r2e`` parser reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from curation.sources.base import (
    RowError,
    file_diff,
    is_r2e_test_path,
    json_object,
    leaky_columns,
    optional_str,
    parse_patch,
    patch_paths,
    relative_path,
    require_str,
    unique,
)
from harness.grading.parsers import r2e_keys
from harness.records import Answer, Environment, HiddenTests, Status, Task

SOURCE = "r2e_gym"
WORKDIR = "/testbed"
TESTS_DIR = "r2e_tests"
LEAKY = (
    "parsed_commit_content",
    "execution_result_content",
    "prompt",
    "expected_output_json",
    "modified_files",
    "relevant_files",
    "modified_entity_summaries",
)
# The image's venv (uv, /testbed/.venv); R2E's runtime puts it first on PATH.
ACTIVATION = f"export VIRTUAL_ENV={WORKDIR}/.venv PATH={WORKDIR}/.venv/bin:$PATH"
# run_tests.sh as R2E's repo_analysis writes it; orange3 needs an offscreen Qt and an X server.
_PYTEST = (
    f"PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' .venv/bin/python -W ignore -m pytest -rA {TESTS_DIR}"
)
_REPO_TEST_CMD = {"orange3": f"QT_QPA_PLATFORM=minimal xvfb-run --auto-servernum {_PYTEST}"}
RUNNERS = ("tornado_unittest_runner.py", "unittest_custom_runner.py")
_ISSUE = re.compile(r"\[ISSUE\](.*?)\[/ISSUE\]", re.DOTALL)


def to_task(row: Mapping[str, Any]) -> Task:
    repo = require_str(row, "repo_name").strip()
    commit_hash = require_str(row, "commit_hash").strip()
    image = require_str(row, "docker_image").strip()
    commit = json_object(row, "parsed_commit_content")
    base_commit = commit.get("old_commit_hash")
    if not isinstance(base_commit, str) or not base_commit.strip():
        raise RowError("parsed_commit_content", "has no old_commit_hash (the base commit)")

    gold, hidden_patch = _split_commit(commit)
    if not gold:
        raise RowError("parsed_commit_content", "the commit changes only test files: the gold patch would be empty")
    hidden_files = _hidden_test_files(row)
    expected = _expected_status(row)

    hidden_diffs = parse_patch(hidden_patch, "parsed_commit_content") if hidden_patch else []
    parse_patch(gold, "parsed_commit_content")  # the rebuilt gold patch must itself be a valid diff
    return Task(
        instance_id=optional_str(row, "instance_id") or f"{repo}-{commit_hash[:12]}",
        source=SOURCE,
        repo=repo,
        base_commit=base_commit.strip(),
        problem_statement=_problem_statement(row),
        environment=Environment(image=image, workdir=WORKDIR, activation=ACTIVATION),
        test_cmd=[_test_cmd(repo, hidden_files)],
        log_parser="r2e",
        test_paths=unique([*patch_paths(hidden_diffs), *hidden_files]),
        answer=Answer(
            gold_patch=gold,
            hidden_tests=HiddenTests(patch=hidden_patch, files=hidden_files),
            expected_status=expected,
            leaky_columns=leaky_columns(row, LEAKY),
        ),
    )


def _test_cmd(repo: str, hidden_files: Mapping[str, str]) -> str:
    runner = next((name for name in RUNNERS if f"{TESTS_DIR}/{name}" in hidden_files), None)
    if runner is not None:
        return f".venv/bin/python -W ignore {TESTS_DIR}/{runner}"
    return _REPO_TEST_CMD.get(repo, _PYTEST)


def _problem_statement(row: Mapping[str, Any]) -> str:
    text = require_str(row, "problem_statement")
    match = _ISSUE.search(text)
    inner = (match.group(1) if match else text).strip()
    if not inner:
        raise RowError("problem_statement", "the [ISSUE]...[/ISSUE] wrapper is empty")
    return inner


def _split_commit(commit: Mapping[str, Any]) -> tuple[str, str]:
    """(gold patch, hidden test patch) rebuilt from ``file_diffs``."""
    diffs = commit.get("file_diffs")
    if not isinstance(diffs, list) or not diffs:
        raise RowError("parsed_commit_content", "has no file_diffs list")
    gold, tests = [], []
    for i, fd in enumerate(diffs):
        if not isinstance(fd, Mapping):
            raise RowError("parsed_commit_content", f"file_diffs[{i}] is not an object")
        path = _file_path(fd, i)
        text = _render_file_diff(fd, path, i)
        if text:
            (tests if is_r2e_test_path(path) else gold).append(text)
    return "".join(gold), "".join(tests)


def _file_path(fd: Mapping[str, Any], i: int) -> str:
    header = fd.get("header")
    file = header.get("file") if isinstance(header, Mapping) else None
    path = file.get("path") if isinstance(file, Mapping) else None
    if not isinstance(path, str) or not path:
        raise RowError("parsed_commit_content", f"file_diffs[{i}] has no header.file.path")
    return relative_path(path, "parsed_commit_content")


def _render_file_diff(fd: Mapping[str, Any], path: str, i: int) -> str:
    """One file's diff: from its hunks when present, else from old/new file contents (difflib)."""
    hunks = fd.get("hunks") or []
    header = fd.get("header") or {}
    misc = header.get("misc_line") if isinstance(header, Mapping) else None
    if not hunks:
        if fd.get("is_binary_file"):
            raise RowError(
                "parsed_commit_content",
                f"file_diffs[{i}] ({path}) is a binary change; it cannot be rebuilt as a text patch",
            )
        old, new = fd.get("old_file_content"), fd.get("new_file_content")
        if isinstance(misc, str) and misc.startswith("new file mode"):
            old = None
        if isinstance(misc, str) and misc.startswith("deleted file mode"):
            new = None
        if old is None and new is None:
            if isinstance(misc, str) and misc.strip():  # a mode-only change
                return f"diff --git a/{path} b/{path}\n{misc.rstrip()}\n"
            raise RowError("parsed_commit_content", f"file_diffs[{i}] ({path}) has neither hunks nor file contents")
        if not all(v is None or isinstance(v, str) for v in (old, new)):
            raise RowError("parsed_commit_content", f"file_diffs[{i}] ({path}) file contents are not strings")
        return file_diff(path, old, new)

    out = [f"diff --git a/{path} b/{path}\n"]
    if isinstance(misc, str) and misc.strip():
        out.append(misc.rstrip("\n") + "\n")
    index = fd.get("index_line")
    if isinstance(index, Mapping) and index.get("old_commit_hash") and index.get("new_commit_hash"):
        mode = index.get("mode") or ""
        out.append(f"index {index['old_commit_hash']}..{index['new_commit_hash']}{' ' + mode if mode else ''}\n")
    new_file = isinstance(misc, str) and misc.startswith("new file mode")
    deleted = isinstance(misc, str) and misc.startswith("deleted file mode")
    minus = _marker(fd.get("minus_file"), "/dev/null" if new_file else f"a/{path}")
    plus = _marker(fd.get("plus_file"), "/dev/null" if deleted else f"b/{path}")
    out += [f"--- {minus}\n", f"+++ {plus}\n"]
    for j, hunk in enumerate(hunks):
        out += _render_hunk(hunk, path, i, j)
    return "".join(out)


def _marker(info: Any, default: str) -> str:
    path = info.get("path") if isinstance(info, Mapping) else None
    return path if isinstance(path, str) and path else default


def _render_hunk(hunk: Any, path: str, i: int, j: int) -> list[str]:
    where = f"file_diffs[{i}] ({path}) hunks[{j}]"
    desc = hunk.get("descriptor") if isinstance(hunk, Mapping) else None
    if not isinstance(desc, Mapping):
        raise RowError("parsed_commit_content", f"{where} has no descriptor")
    ranges = []
    for side in ("old_range", "new_range"):
        rng = desc.get(side)
        if not isinstance(rng, Mapping) or not isinstance(rng.get("start"), int):
            raise RowError("parsed_commit_content", f"{where} descriptor.{side} has no integer start")
        length = rng.get("length")
        ranges.append(f"{rng['start']}" + ("" if length is None else f",{length}"))
    section = desc.get("section") or ""
    out = [f"@@ -{ranges[0]} +{ranges[1]} @@{' ' + section if section else ''}\n"]
    group = hunk.get("line_group")
    lines = group.get("all_lines") if isinstance(group, Mapping) else None
    if not isinstance(lines, list):
        raise RowError("parsed_commit_content", f"{where} has no line_group.all_lines")
    prefix = {"context": " ", "added": "+", "deleted": "-", "note": "\\ "}
    for line in lines:
        kind = line.get("type") if isinstance(line, Mapping) else None
        if kind not in prefix:
            raise RowError("parsed_commit_content", f"{where} has a line of unknown type {kind!r}")
        out.append(f"{prefix[kind]}{line.get('content') or ''}\n")
    return out


def _hidden_test_files(row: Mapping[str, Any]) -> dict[str, str]:
    result = json_object(row, "execution_result_content")
    names, codes = result.get("test_file_names"), result.get("test_file_codes")
    if not isinstance(names, list) or not isinstance(codes, list):
        raise RowError("execution_result_content", "test_file_names and test_file_codes must both be lists")
    if len(names) != len(codes):
        raise RowError("execution_result_content", f"{len(names)} test_file_names but {len(codes)} test_file_codes")
    if not names:
        raise RowError("execution_result_content", "has no hidden test files")
    files: dict[str, str] = {}
    for name, code in zip(names, codes, strict=True):
        if not isinstance(name, str) or not isinstance(code, str):
            raise RowError("execution_result_content", "test file names and codes must be strings")
        files[f"{TESTS_DIR}/{relative_path(name, 'execution_result_content')}"] = code
    return files


def _expected_status(row: Mapping[str, Any]) -> dict[str, Status]:
    expected = json_object(row, "expected_output_json")
    if not expected:
        raise RowError("expected_output_json", "is an empty status map")
    out: dict[str, Status] = {}
    for key, value in expected.items():
        try:
            out[key] = Status(value)
        except ValueError:
            raise RowError("expected_output_json", f"test {key!r} has unknown status {value!r}") from None
    return r2e_keys(out)  # R2E-Gym cuts its expected keys as it cuts its parsed ones
