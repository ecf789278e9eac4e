"""Corpus adapters on the fixtures in data/fixtures (each corpus's real column layout, toy content)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

import curation.sources as sources
from curation.sources import LoadResult, detect_corpus, load_corpus_file, load_rows, scale_swe
from curation.sources.base import (
    RowError,
    file_diff,
    id_list,
    is_r2e_test_path,
    leaky_columns,
    split_diff,
)
from harness.records import Status, Task

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"
LEAK = "LEAK-SENTINEL"

LEAKY = {
    "r2e_gym": {
        "parsed_commit_content", "execution_result_content", "prompt", "expected_output_json",
        "modified_files", "relevant_files", "modified_entity_summaries",
    },
    "swe_rebench_v2": {"patch", "test_patch", "pr_description", "interface", "meta"},
    "swe_rebench_v1": {"patch", "test_patch", "hints_text", "meta", "version"},
    "scale_swe": {"patch", "pr_commit", "f2p_patch", "f2p_script", "github_url"},
    "swe_bench": {"patch", "test_patch", "hints_text", "version"},
    "swe_gym": {"patch", "test_patch", "hints_text", "version"},
}  # fmt: skip
FILES = {
    "r2e_gym.parquet": "r2e_gym",
    "swe_rebench_v2.jsonl": "swe_rebench_v2",
    "swe_rebench_v2.arrow": "swe_rebench_v2",
    "scale_swe.parquet": "scale_swe",
    "swe_bench.jsonl": "swe_bench",
    "swe_gym.jsonl": "swe_gym",
    "swe_bench_5.jsonl": "swe_bench",
    "swe_rebench_v1.jsonl": "swe_rebench_v1",
}


@cache
def load(name: str) -> LoadResult:
    return load_corpus_file(str(FIXTURES / name))


def by_id(result: LoadResult) -> dict[str, Task]:
    return {t.instance_id: t for t in result.tasks}


def row_index(location: str) -> int:
    """Rows of a table are numbered from 0 (``#row0``), JSON lines by their line from 1 (``#line1``)."""
    where = location.rsplit("#", 1)[1]
    return int(where.removeprefix("row")) if where.startswith("row") else int(where.removeprefix("line")) - 1


def errors_by_row(result: LoadResult) -> dict[int, tuple[str, str]]:
    return {row_index(e.location): (e.field, e.message) for e in result.errors}


def raw_rows(name: str) -> list[dict]:
    return rows_at(FIXTURES / name)


def rows_at(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    with pa.OSFile(str(path), "rb") as f:
        return pa.ipc.open_stream(f).read_all().to_pylist()


def make_fixtures_module():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------ fixtures


def test_fixtures_are_what_make_fixtures_writes(tmp_path, monkeypatch):
    mf = make_fixtures_module()
    monkeypatch.setattr(mf, "HERE", tmp_path)
    mf.main()
    for name in FILES:
        assert raw_rows(name) == rows_at(tmp_path / name), f"{name} is stale: rerun make_fixtures.py"


def test_fixture_column_layouts():
    assert set(raw_rows("r2e_gym.parquet")[0]) == {
        "repo_name", "docker_image", "commit_hash", "parsed_commit_content", "execution_result_content",
        "modified_files", "modified_entity_summaries", "relevant_files", "num_non_test_files",
        "num_non_test_func_methods", "num_non_test_lines", "prompt", "problem_statement", "expected_output_json",
    }  # fmt: skip
    assert set(raw_rows("swe_rebench_v2.jsonl")[0]) == {
        "instance_id", "repo", "base_commit", "created_at", "patch", "test_patch", "problem_statement",
        "pr_description", "interface", "language", "FAIL_TO_PASS", "PASS_TO_PASS", "install_config", "meta",
        "image_name",
    }  # fmt: skip
    assert set(raw_rows("scale_swe.parquet")[0]) == {
        "instance_id", "user", "repo", "language", "workdir", "image_url", "patch", "pr_commit", "parent_commit",
        "problem_statement", "f2p_patch", "f2p_script", "FAIL_TO_PASS", "PASS_TO_PASS", "github_url", "pre_commands",
    }  # fmt: skip
    swe_bench = {
        "repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
        "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS",
    }  # fmt: skip
    assert set(raw_rows("swe_bench.jsonl")[0]) == swe_bench | {"environment_setup_commit"}
    assert set(raw_rows("swe_gym.jsonl")[0]) == swe_bench
    # swebench>=5 make_test_spec's columns; the ids are lists
    assert set(raw_rows("swe_bench_5.jsonl")[0]) == swe_bench | {"image", "log_parser", "eval_type", "eval_script"}
    assert isinstance(raw_rows("swe_bench_5.jsonl")[0]["FAIL_TO_PASS"], list)
    assert set(raw_rows("swe_rebench_v1.jsonl")[0]) == {
        "instance_id", "base_commit", "created_at", "environment_setup_commit", "hints_text", "patch",
        "problem_statement", "repo", "test_patch", "meta", "version", "install_config", "requirements",
        "environment", "FAIL_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_PASS", "PASS_TO_FAIL", "license_name", "docker_image",
    }  # fmt: skip
    assert isinstance(raw_rows("swe_bench.jsonl")[0]["FAIL_TO_PASS"], str)
    assert isinstance(raw_rows("swe_gym.jsonl")[0]["FAIL_TO_PASS"], list)
    r2e_types = pq.read_schema(FIXTURES / "r2e_gym.parquet")
    assert r2e_types.field("modified_entity_summaries").type.value_type.field("end_lineno").type == pa.int64()


@pytest.mark.parametrize("name", FILES)
def test_every_fixture_has_valid_and_malformed_rows(name):
    result = load(name)
    assert len(result.tasks) >= 2 and len(result.errors) >= 2
    assert len(result.tasks) + len(result.errors) == len(raw_rows(name))
    for err in result.errors:
        assert err.source == FILES[name]
        assert err.location.startswith(f"{FIXTURES / name}#{'line' if name.endswith('.jsonl') else 'row'}")
        assert err.field and err.message and err.stage == "corpus_row"


@pytest.mark.parametrize("name", FILES)
def test_images_carry_no_registry_host(name):
    for task in load(name).tasks:
        first = task.environment.image.split("/", 1)[0]
        assert "/" in task.environment.image
        assert "." not in first and ":" not in first and first != "localhost", task.environment.image


# ------------------------------------------------------------------------------------------ leaks


@pytest.mark.parametrize("name", FILES)
def test_leaky_columns_only_in_answer(name):
    corpus = FILES[name]
    key = "commit_hash" if corpus == "r2e_gym" else "instance_id"
    rows = {r[key]: r for r in raw_rows(name)}
    result = load(name)
    assert result.tasks
    for task in result.tasks:
        view = task.agent_view().model_dump_json()
        outside = json.dumps(task.model_dump(mode="json", exclude={"answer"}))
        assert LEAK not in view and LEAK not in outside
        assert task.answer.gold_patch not in view and task.answer.gold_patch not in outside
        leaky = task.answer.leaky_columns
        assert LEAKY[corpus] <= set(leaky) <= LEAKY[corpus] | {"eval_script"}
        row = rows[task.environment.image.rsplit(":", 1)[1] if corpus == "r2e_gym" else task.instance_id]
        for column, value in leaky.items():  # text verbatim, structures as JSON
            assert value == row[column] if isinstance(row[column], str) else json.loads(value) == row[column]


def test_leaky_columns_helper():
    row = {"patch": "diff", "meta": {"b": 1, "a": [1, 2]}, "hints_text": None, "other": "x"}
    assert leaky_columns(row, ["patch", "meta", "hints_text", "absent"]) == {
        "patch": "diff",
        "meta": '{"a": [1, 2], "b": 1}',
    }


# ------------------------------------------------------------------------------------------ R2E-Gym


def test_r2e_gym_valid_rows():
    rows = raw_rows("r2e_gym.parquet")
    tasks = load("r2e_gym.parquet").tasks
    assert [t.instance_id for t in tasks][:2] == [f"minicalc-{rows[i]['commit_hash'][:12]}" for i in (0, 1)]
    t = tasks[0]
    commit = json.loads(rows[0]["parsed_commit_content"])
    assert t.source == "r2e_gym" and t.repo == "minicalc"
    assert t.base_commit == commit["old_commit_hash"]
    assert t.environment.image == rows[0]["docker_image"] and t.environment.recipe is None
    assert t.environment.workdir == "/testbed"
    assert "/testbed/.venv/bin" in t.environment.activation and "PATH=" in t.environment.activation
    assert t.test_cmd == [
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' .venv/bin/python -W ignore -m pytest -rA r2e_tests"
    ]
    assert t.log_parser == "r2e"
    assert t.problem_statement.startswith("**Title:** `parse` fails") and "[ISSUE]" not in t.problem_statement
    assert tasks[1].problem_statement == rows[1]["problem_statement"]
    assert t.answer.expected_status == {
        "test_add": Status.PASSED,
        "test_parse": Status.PASSED,
        "TestParse.test_spaces": Status.PASSED,
        "TestParse.test_empty": Status.PASSED,
    }
    assert t.answer.fail_to_pass == [] and t.answer.pass_to_pass == []


def test_r2e_gym_runs_the_runner_script_its_row_ships():
    """R2E runs tornado rows (and unittest-based pillow rows) through the runner script it adds to the
    test files, not through pytest; before, every row got `pytest -rA r2e_tests`."""
    tornado = by_id(load("r2e_gym.parquet"))[f"tornado-{raw_rows('r2e_gym.parquet')[6]['commit_hash'][:12]}"]
    assert tornado.test_cmd == [".venv/bin/python -W ignore r2e_tests/tornado_unittest_runner.py"]
    assert "r2e_tests/tornado_unittest_runner.py" in tornado.answer.hidden_tests.files
    assert tornado.log_parser == "r2e" and tornado.answer.expected_status == {
        "FmtTest.test_fmt": Status.PASSED, "FmtTest.test_fmt_sep": Status.PASSED
    }
    row = raw_rows("r2e_gym.parquet")[6]
    execution = json.loads(row["execution_result_content"])
    execution["test_file_names"][1] = "unittest_custom_runner.py"
    pillow = load_rows("r2e_gym", [dict(row, repo_name="pillow", execution_result_content=json.dumps(execution))], "m")
    assert pillow.tasks[0].test_cmd == [".venv/bin/python -W ignore r2e_tests/unittest_custom_runner.py"]


@pytest.mark.skipif(shutil.which("python3") is None, reason="needs python3")
def test_r2e_runner_standin_output_parses_to_the_expected_map(tmp_path):
    """The fixture's runner script prints what R2E's parser reads: its keys are the row's expectations."""
    from harness.grading.parsers import parse_r2e

    tornado = load("r2e_gym.parquet").tasks[2]
    for path, code in tornado.answer.hidden_tests.files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(code)
    (tmp_path / "minicalc").mkdir()
    (tmp_path / "minicalc" / "__init__.py").write_text("")
    (tmp_path / "minicalc" / "fmt.py").write_text('def fmt(n, sep=""):\n    return f"{n:,}".replace(",", sep) if sep else str(n)\n')
    out = subprocess.run(
        ["python3", "-W", "ignore", "r2e_tests/tornado_unittest_runner.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert parse_r2e(out.stdout) == tornado.answer.expected_status


def test_r2e_gym_gold_keeps_non_python_changes_and_tests_are_split_out():
    t = load("r2e_gym.parquet").tasks[0]
    gold = [f.path for f in split_diff(t.answer.gold_patch)]
    hidden = [f.path for f in split_diff(t.answer.hidden_tests.patch)]
    assert gold == ["minicalc/core.py", "minicalc/_speedups.pyx", "setup.cfg"]  # .pyx and .cfg kept
    assert hidden == ["tests/test_core.py", "tests/data/cases.txt"]
    assert set(t.answer.hidden_tests.files) == {"r2e_tests/test_1.py"}
    assert "class TestParse" in t.answer.hidden_tests.files["r2e_tests/test_1.py"]
    assert t.test_paths == ["tests/test_core.py", "tests/data/cases.txt", "r2e_tests/test_1.py"]
    two = load("r2e_gym.parquet").tasks[1]
    assert set(two.answer.hidden_tests.files) == {"r2e_tests/test_1.py", "r2e_tests/test_2.py"}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_r2e_gym_rebuilt_patches_apply_and_give_the_new_commit(tmp_path):
    """Gold + hidden patches, applied to the old tree with git, reproduce every new file content."""
    commit = json.loads(raw_rows("r2e_gym.parquet")[0]["parsed_commit_content"])
    t = load("r2e_gym.parquet").tasks[0]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for fd in commit["file_diffs"]:
        if fd["old_file_content"] is not None:
            path = tmp_path / fd["header"]["file"]["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(fd["old_file_content"])
    for patch in (t.answer.gold_patch, t.answer.hidden_tests.patch):
        (tmp_path / "p.diff").write_text(patch)
        subprocess.run(["git", "apply", "--check", "p.diff"], cwd=tmp_path, check=True)
        subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    for fd in commit["file_diffs"]:
        assert (tmp_path / fd["header"]["file"]["path"]).read_text() == fd["new_file_content"]


def test_r2e_gym_malformed_rows():
    errors = errors_by_row(load("r2e_gym.parquet"))
    assert errors[2] == ("parsed_commit_content", "missing required column")
    assert errors[3][0] == "expected_output_json" and "not valid JSON" in errors[3][1]
    assert errors[4][0] == "parsed_commit_content" and "gold patch would be empty" in errors[4][1]
    assert errors[5][0] == "execution_result_content" and "2 test_file_names but 1" in errors[5][1]


def test_r2e_gym_more_row_checks():
    row = raw_rows("r2e_gym.parquet")[0]
    ok = load_rows("r2e_gym", [dict(row, instance_id="given-id", repo_name="orange3")], "mem")
    assert ok.tasks[0].instance_id == "given-id"
    assert ok.tasks[0].test_cmd[0].startswith("QT_QPA_PLATFORM=minimal xvfb-run")
    commit = json.loads(row["parsed_commit_content"])
    commit["file_diffs"][0]["hunks"] = []
    commit["file_diffs"][0]["is_binary_file"] = True
    commit["file_diffs"][0]["old_file_content"] = commit["file_diffs"][0]["new_file_content"] = None
    no_base = json.loads(row["parsed_commit_content"])
    del no_base["old_commit_hash"]
    bad_rows = [
        dict(row, parsed_commit_content=json.dumps(commit)),
        dict(row, parsed_commit_content=json.dumps(no_base)),
        dict(row, expected_output_json=json.dumps({"test_add": "MAYBE"})),
        dict(row, execution_result_content=json.dumps({"test_file_names": ["../evil.py"], "test_file_codes": ["x"]})),
        dict(row, problem_statement="[ISSUE]\n  \n[/ISSUE]"),
    ]
    result = load_rows("r2e_gym", bad_rows, "mem")
    assert [(e.location, e.field) for e in result.errors] == [
        ("mem#row0", "parsed_commit_content"),
        ("mem#row1", "parsed_commit_content"),
        ("mem#row2", "expected_output_json"),
        ("mem#row3", "execution_result_content"),
        ("mem#row4", "problem_statement"),
    ]
    assert "binary" in result.errors[0].message and "old_commit_hash" in result.errors[1].message
    assert "MAYBE" in result.errors[2].message and "../evil.py" in result.errors[3].message


# ------------------------------------------------------------------------------------------ SWE-rebench V2


@pytest.mark.parametrize("name", ["swe_rebench_v2.jsonl", "swe_rebench_v2.arrow"])
def test_swe_rebench_v2_valid_rows(name):
    tasks = by_id(load(name))
    rows = {r["instance_id"]: r for r in raw_rows(name)}
    py, go = tasks["toyorg__tidyjson-12"], tasks["gopherco__ringbuf-7"]
    assert py.source == go.source == "swe_rebench_v2"
    assert py.environment.image == rows["toyorg__tidyjson-12"]["image_name"]
    assert py.environment.workdir == "/tidyjson" and go.environment.workdir == "/ringbuf"
    assert py.environment.activation == ""
    assert py.test_cmd == ["pytest -rA tests/test_dump.py"]  # string test_cmd
    assert go.test_cmd == ["go build ./...", "go test -v ./..."]  # list test_cmd
    assert py.log_parser == "parse_log_pytest" and go.log_parser == "parse_log_gotest"
    assert py.base_commit == rows["toyorg__tidyjson-12"]["base_commit"]
    assert py.answer.fail_to_pass == ["tests/test_dump.py::test_dump_sorted"]
    assert py.answer.pass_to_pass == ["tests/test_dump.py::test_dump"]
    assert go.answer.fail_to_pass == ["TestCap"] and go.answer.pass_to_pass == []
    assert py.answer.gold_patch == rows["toyorg__tidyjson-12"]["patch"]
    assert py.answer.hidden_tests.patch == rows["toyorg__tidyjson-12"]["test_patch"]
    assert py.test_paths == ["tests/test_dump.py"] and go.test_paths == ["ring_cap_test.go"]
    assert json.loads(py.answer.leaky_columns["meta"])["pr_author"] == "toydev"


def test_swe_rebench_v2_jsonl_and_arrow_agree():
    jsonl, arrow = by_id(load("swe_rebench_v2.jsonl")), by_id(load("swe_rebench_v2.arrow"))
    for iid, task in arrow.items():
        a, b = task.model_dump(), jsonl[iid].model_dump()
        a["answer"].pop("leaky_columns"), b["answer"].pop("leaky_columns")
        assert a == b


def test_swe_rebench_v2_malformed_rows():
    errors = errors_by_row(load("swe_rebench_v2.jsonl"))
    assert errors[2] == ("install_config.test_cmd", "install_config has no test_cmd")
    assert errors[3][0] == "FAIL_TO_PASS" and "not a JSON-encoded list" in errors[3][1]
    assert errors[4][0] == "patch" and "not a unified diff" in errors[4][1]
    arrow = errors_by_row(load("swe_rebench_v2.arrow"))
    assert arrow[2][0] == "install_config" and "not valid JSON" in arrow[2][1]
    assert arrow[3][0] == "install_config.test_cmd"


def test_swe_rebench_v2_more_row_checks():
    row = raw_rows("swe_rebench_v2.jsonl")[0]
    config = dict(row["install_config"])
    rows = [
        dict(row, install_config=json.dumps(dict(config, test_cmd=["make check"]))),  # JSON-string config
        dict(row, install_config=dict(config, test_cmd=["", " "])),
        dict(row, install_config=dict(config, test_cmd=7)),
        dict(row, install_config=dict(config, log_parser=None)),
        dict(row, install_config=["not", "an", "object"]),
        dict(row, repo="no-slash"),
        dict(row, PASS_TO_PASS=[1, 2]),
        dict(row, FAIL_TO_PASS='{"a": 1}'),
        dict(row, test_patch=""),
    ]
    result = load_rows("swe_rebench_v2", rows, "mem")
    assert result.tasks[0].test_cmd == ["make check"]
    assert [e.field for e in result.errors] == [
        "install_config.test_cmd",
        "install_config.test_cmd",
        "install_config.log_parser",
        "install_config",
        "repo",
        "PASS_TO_PASS",
        "FAIL_TO_PASS",
        "test_patch",
    ]
    assert [e.location for e in result.errors][0] == "mem#row1"


# ------------------------------------------------------------------------------------------ Scale-SWE


def test_scale_swe_valid_rows():
    rows = {r["instance_id"]: r for r in raw_rows("scale_swe.parquet")}
    tasks = by_id(load("scale_swe.parquet"))
    t, bare = tasks["acme_widgets_pr42"], tasks["acme_widgets_pr43"]
    assert t.source == "scale_swe" and t.repo == "acme/widgets"
    assert t.environment.image == rows["acme_widgets_pr42"]["image_url"]
    assert t.environment.workdir == "/testbed" and bare.environment.workdir == "/testbed"  # null -> default
    assert t.base_commit == rows["acme_widgets_pr42"]["parent_commit"]
    assert t.answer.fail_to_pass == json.loads(rows["acme_widgets_pr42"]["FAIL_TO_PASS"])
    assert t.answer.pass_to_pass == ["tests/test_color.py::test_hex"]
    assert t.answer.hidden_tests.patch == rows["acme_widgets_pr42"]["f2p_patch"]
    assert t.answer.hidden_tests.files == {"test_fail_to_pass.py": rows["acme_widgets_pr42"]["f2p_script"]}
    assert bare.answer.hidden_tests.patch == "" and bare.answer.pass_to_pass == []
    assert t.test_paths == ["tests/test_color.py", "test_fail_to_pass.py"]
    # the log holds pytest's text: parser "pytest" (the grader adds and prefers its own JUnit report),
    # no report path of the command's own (it overrode the grader's, and parse_junit read text)
    assert t.log_parser == "pytest"
    (cmd,) = t.test_cmd
    assert cmd.startswith("python -m pytest ") and "--junitxml" not in cmd
    assert cmd.endswith(
        "-- tests/test_color.py::test_hex_range test_fail_to_pass.py::test_repro_negative_channel "
        "tests/test_color.py::test_hex"
    )
    assert "/opt/miniconda3/bin/activate testbed" in t.environment.activation
    assert "git checkout -q -B scaleswe\n)" in t.environment.activation  # trailing literal \n stripped
    assert "\\n" not in t.environment.activation
    assert bare.environment.activation == scale_swe.CONDA  # no pre_commands


def test_scale_swe_malformed_rows():
    errors = errors_by_row(load("scale_swe.parquet"))
    assert errors[2][0] == "FAIL_TO_PASS" and "not valid JSON" in errors[2][1]
    assert errors[3] == ("image_url", "missing required column")
    assert errors[4][0] == "f2p_patch" and "no hidden tests" in errors[4][1]


def test_scale_swe_accepts_list_ids_and_quotes_them():
    row = raw_rows("scale_swe.parquet")[1]
    odd = "tests/test_color.py::test_hex[a b]"
    result = load_rows(
        "scale_swe", [dict(row, FAIL_TO_PASS=[odd], PASS_TO_PASS=[], repo="acme/widgets", user=None)], "m"
    )
    (t,) = result.tasks
    assert t.answer.fail_to_pass == [odd] and t.repo == "acme/widgets"
    assert t.test_cmd[0].endswith("-- 'tests/test_color.py::test_hex[a b]'")
    empty = load_rows("scale_swe", [dict(row, FAIL_TO_PASS="[]", PASS_TO_PASS=[])], "m")
    assert empty.errors[0].field == "FAIL_TO_PASS"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_scale_swe_pre_commands_run_once_per_container(tmp_path, monkeypatch):
    monkeypatch.setattr(scale_swe, "PRE_DONE", str(tmp_path / "done"))
    monkeypatch.setattr(scale_swe, "PRE_LOG", str(tmp_path / "pre.log"))
    activation = scale_swe._activation(f"cd {tmp_path} && echo ran >> count\\n")

    def run(act: str) -> subprocess.CompletedProcess:
        # the sandboxes run "<activation>\n<command>" in the workdir
        return subprocess.run(["bash", "-c", f"{act}\npwd"], cwd=tmp_path / "wd", capture_output=True, text=True)

    (tmp_path / "wd").mkdir()
    for _ in range(3):
        out = run(activation)
        assert out.stdout.strip().endswith(str(tmp_path / "wd"))  # a cd in pre_commands does not leak
    assert (tmp_path / "count").read_text() == "ran\n"
    failing = scale_swe._activation("echo boom; false")
    (tmp_path / "done").unlink()
    out = run(failing)
    assert "pre_commands failed" in out.stderr and "boom" in out.stderr
    assert not (tmp_path / "done").exists()


# ------------------------------------------------------------------------------------------ SWE-bench / SWE-Gym


def test_swe_bench_valid_rows():
    tasks = by_id(load("swe_bench.jsonl"))
    rows = {r["instance_id"]: r for r in raw_rows("swe_bench.jsonl")}
    t = tasks["toyorg__calclib-101"]
    assert t.source == "swe_bench" and t.repo == "toyorg/calclib"
    assert t.environment.image == "swebench/sweb.eval.x86_64.toyorg_1776_calclib-101:latest"
    assert t.environment.workdir == "/testbed"
    assert t.environment.activation == "source /opt/miniconda3/bin/activate testbed"
    assert t.base_commit == rows["toyorg__calclib-101"]["base_commit"]
    assert t.answer.fail_to_pass == ["tests/test_ops.py::test_divide_by_zero_message"]  # decoded JSON string
    assert t.answer.pass_to_pass == ["tests/test_ops.py::test_divide"]
    assert t.test_cmd == ["pytest -rA tests/test_ops.py"]  # expected.json is not a test directive
    assert t.test_paths == ["tests/test_ops.py", "tests/data/expected.json"]
    assert t.log_parser == "pytest"
    assert t.answer.gold_patch == rows["toyorg__calclib-101"]["patch"]
    assert t.answer.hidden_tests.patch == rows["toyorg__calclib-101"]["test_patch"]
    dj = tasks["django__django-90001"]
    assert dj.test_cmd == [
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 forms_tests.field_tests.test_charfield"
    ]
    assert dj.log_parser == "parse_log_django" and dj.answer.pass_to_pass == []
    v5 = tasks["toyorg__calclib-102"]
    assert v5.environment.image == rows["toyorg__calclib-102"]["image"]  # the row's image
    assert v5.log_parser == "parse_log_pytest_v2"  # the row's parser
    assert "eval_script" in v5.answer.leaky_columns


def test_swe_bench_5_rows_run_their_eval_script():
    """A swebench>=5 row with list ids was taken for SWE-Gym and its eval_script ignored; now its test
    command, workdir and environment come from the script, for any language."""
    result = load("swe_bench_5.jsonl")
    tasks = by_id(result)
    py, go = tasks["toyorg__calclib-201"], tasks["gopherco__ringbuf-202"]
    assert py.source == go.source == "swe_bench"
    assert py.test_cmd == ["pytest -rA tests/test_ops.py"] and go.test_cmd == ["go test -v ./..."]
    assert py.environment.activation == "source /opt/miniconda3/bin/activate\nconda activate testbed"
    assert go.environment.activation == "" and go.environment.workdir == "/testbed"  # no conda in a Go image
    assert py.log_parser == "parse_log_pytest" and go.log_parser == "parse_log_gotest"
    assert py.answer.fail_to_pass == ["tests/test_ops.py::test_divide_by_zero_message"]
    assert [(d.corpus, d.version, d.rows) for d in result.detected] == [("swe_bench", "SWE-bench 5", 4)]
    errors = errors_by_row(result)
    assert errors[2][0] == "eval_script" and "Start Test Output" in errors[2][1]
    assert errors[3] == ("eval_type", "'sometimes' is none of pass_and_fail, fail_only")


def test_read_eval_script_skips_heredocs_and_informational_commands():
    from curation.sources.swe_bench import read_eval_script

    script = (
        "#!/bin/bash\nset -uxo pipefail\nexport LANG=C.UTF-8\ncd /work/repo\ngit status\n"
        "git apply -v - <<'EOF_1'\ncd /elsewhere\n: '>>>>> Start Test Output'\nEOF_1\n"
        ": '>>>>> Start Test Output'\n\nPYTHONWARNINGS=ignore bin/test -C --verbose sympy/x.py\n"
        ": '>>>>> End Test Output'\ncd /after\n"
    )
    parsed = read_eval_script(script)
    assert parsed.workdir == "/work/repo" and parsed.activation == "export LANG=C.UTF-8"
    assert parsed.test_cmd == ["PYTHONWARNINGS=ignore bin/test -C --verbose sympy/x.py"]
    with pytest.raises(RowError, match="no command"):
        read_eval_script(": '>>>>> Start Test Output'\n: '>>>>> End Test Output'\n")


# ------------------------------------------------------------------------------------------ SWE-rebench v1


def test_swe_rebench_v1_rows():
    """v1 rows (install_config without test_cmd, docker_image, FAIL_TO_FAIL, PASS_TO_FAIL) were taken
    for V2 and skipped with 'install_config has no test_cmd'."""
    result = load("swe_rebench_v1.jsonl")
    rows = {r["instance_id"]: r for r in raw_rows("swe_rebench_v1.jsonl")}
    tasks = by_id(result)
    plain, own = tasks["toyorg__tidyjson-30"], tasks["toyorg__tidyjson-31"]
    assert plain.source == own.source == "swe_rebench_v1"
    assert plain.environment.image == rows["toyorg__tidyjson-30"]["docker_image"]
    assert own.environment.image == "swerebench/sweb.eval.x86_64.toyorg_1776_tidyjson-31:latest"
    assert plain.environment.workdir == "/testbed" and "activate testbed" in plain.environment.activation
    assert plain.test_cmd == ["pytest -rA tests/test_dump.py"] and plain.log_parser == "parse_log_pytest"
    assert own.test_cmd == ["pytest --no-header -rA --tb=line -p no:cacheprovider tests/test_dump.py"]
    assert own.log_parser == "parse_log_pytest_v2"
    assert plain.answer.fail_to_pass == ["tests/test_dump.py::test_dump_sorted"]
    assert plain.answer.pass_to_pass == ["tests/test_dump.py::test_dump"]
    (found,) = result.detected
    assert (found.corpus, found.version, found.rows) == ("swe_rebench_v1", "SWE-rebench v1", 4)
    assert "without image_name" in found.reason and "FAIL_TO_FAIL" in found.reason
    errors = errors_by_row(result)
    assert errors[2][0] == "FAIL_TO_FAIL" and errors[3] == ("install_config", "expected a JSON object, got list")


def test_swe_bench_malformed_rows():
    errors = errors_by_row(load("swe_bench.jsonl"))
    assert errors[3][0] == "FAIL_TO_PASS" and "not valid JSON" in errors[3][1]
    assert errors[4][0] == "patch" and "not a unified diff" in errors[4][1]
    assert errors[5] == ("problem_statement", "missing required column")


def test_swe_gym_valid_rows():
    tasks = by_id(load("swe_gym.jsonl"))
    t, upper = tasks["toyorg__cloudmock-5001"], tasks["ToyOrg__CloudMock-5002"]
    assert t.source == upper.source == "swe_gym"
    assert t.environment.image == "xingyaoww/sweb.eval.x86_64.toyorg_s_cloudmock-5001:latest"
    assert upper.environment.image == "xingyaoww/sweb.eval.x86_64.toyorg_s_cloudmock-5002:latest"  # lower-cased
    assert t.answer.fail_to_pass == ["tests/test_ops.py::test_divide_by_zero_message"]  # native list
    assert t.test_cmd == ["pytest -rA tests/test_ops.py"] and t.log_parser == "pytest"
    assert t.environment.activation == "source /opt/miniconda3/bin/activate testbed"


def test_swe_gym_malformed_rows():
    errors = errors_by_row(load("swe_gym.jsonl"))
    assert errors[2][0] == "FAIL_TO_PASS" and "not a JSON-encoded list" in errors[2][1]
    assert errors[3] == ("patch", "is empty")


def test_swe_bench_source_is_detected_per_row():
    from curation.sources import swe_bench

    gym_row = raw_rows("swe_gym.jsonl")[0]
    bench_row = raw_rows("swe_bench.jsonl")[0]
    assert swe_bench.to_task(gym_row).source == "swe_gym"
    assert swe_bench.to_task(bench_row).source == "swe_bench"
    # list ids but an environment_setup_commit: SWE-bench
    listed = dict(bench_row, FAIL_TO_PASS=["a"], PASS_TO_PASS=[])
    assert swe_bench.to_task(listed).source == "swe_bench"
    # an explicit corpus wins
    assert load_rows("swe_bench", [gym_row], "m").tasks[0].environment.image.startswith("swebench/")
    django19 = dict(raw_rows("swe_bench.jsonl")[1], version="1.9")
    assert swe_bench.to_task(django19).test_cmd[0].startswith("./tests/runtests.py --verbosity 2 forms_tests")


# ------------------------------------------------------------------------------------------ detection, loading


@pytest.mark.parametrize("name", FILES)
def test_detect_corpus_from_fixture_columns(name):
    assert detect_corpus(set(raw_rows(name)[0])) == FILES[name]


def test_detect_corpus_unknown_layout():
    with pytest.raises(ValueError, match="no corpus"):
        detect_corpus({"question", "answer"})


def test_an_unknown_shape_is_one_load_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n{"question": "r", "answer": "b"}\n')
    result = load_corpus_file(str(path))
    assert result.tasks == [] and result.detected == []
    (error,) = result.errors
    assert error.stage == "corpus_file" and "no corpus has this column layout" in error.message
    assert "install_config" in error.message  # says what each corpus needs


@pytest.mark.parametrize(
    ("name", "version", "why"),
    [
        ("r2e_gym.parquet", "R2E-Gym", "parsed_commit_content"),
        ("swe_rebench_v2.jsonl", "SWE-rebench V2", "image_name"),
        ("swe_rebench_v1.jsonl", "SWE-rebench v1", "without image_name"),
        ("scale_swe.parquet", "Scale-SWE", "image_url"),
        ("swe_gym.jsonl", "SWE-Gym", "without environment_setup_commit"),
        ("swe_bench_5.jsonl", "SWE-bench 5", "eval_script"),
    ],
)
def test_load_result_says_which_corpus_and_version_and_why(name, version, why):
    detected = load(name).detected
    assert [(d.location, d.corpus, d.version) for d in detected] == [(str(FIXTURES / name), FILES[name], version)]
    assert why in detected[0].reason and detected[0].rows == len(raw_rows(name))


def test_a_mixed_swe_bench_file_counts_each_version():
    detected = {d.version: d.rows for d in load("swe_bench.jsonl").detected}
    assert detected == {"SWE-bench <=4": 5, "SWE-bench 5": 1}


def test_string_ids_without_setup_commit_load_as_swe_bench(tmp_path):
    rows = raw_rows("swe_bench.jsonl")[:1]
    del rows[0]["environment_setup_commit"]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n")
    assert detect_corpus(set(rows[0])) == "swe_gym"  # columns alone look like SWE-Gym ...
    result = load_corpus_file(str(path))  # ... but the ids are strings: SWE-bench
    assert [t.source for t in result.tasks] == ["swe_bench"]


def test_load_corpus_file_explicit_corpus_and_bad_inputs(tmp_path):
    result = load_corpus_file(str(FIXTURES / "swe_gym.jsonl"), corpus="swe_bench")
    assert {t.source for t in result.tasks} == {"swe_bench"}
    assert {e.source for e in result.errors} == {"swe_bench"}
    other = tmp_path / "rows.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="unsupported file type"):
        load_corpus_file(str(other))
    with pytest.raises(ValueError, match="unknown corpus"):
        load_rows("nope", [], "m")


def test_load_rows_records_validation_and_unexpected_errors(monkeypatch):
    def invalid(row):
        return Task(
            instance_id="x", source="s", repo="r", problem_statement="p", environment={}, test_cmd="oops", answer={}
        )

    def crashes(row):
        raise KeyError("surprise")

    monkeypatch.setitem(sources.ADAPTERS, "swe_bench", invalid)
    with pytest.raises(ValidationError):
        invalid({})
    result = load_rows("swe_bench", [{}], "here")
    assert result.errors[0].field.startswith("task.") and result.errors[0].location == "here#row0"
    monkeypatch.setitem(sources.ADAPTERS, "swe_bench", crashes)
    result = load_rows("swe_bench", [{}, {}], "here")
    assert [e.stage for e in result.errors] == ["our_code", "our_code"]
    assert "KeyError" in result.errors[1].message and result.errors[1].location == "here#row1"


def test_load_result_forbids_extra_fields():
    with pytest.raises(ValidationError):
        LoadResult(tasks=[], errors=[], extra=1)


# ------------------------------------------------------------------------------------------ helpers


def test_id_list_forms():
    assert id_list({"f": ["a", "b"]}, "f") == ["a", "b"]
    assert id_list({"f": ("a",)}, "f") == ["a"]
    assert id_list({"f": '["a", "b c"]'}, "f") == ["a", "b c"]
    assert id_list({"f": "[]"}, "f") == []
    for value, needle in [
        (None, "missing"),
        (3, "got int"),
        ('{"a": 1}', "decodes to dict"),
        ("x", "not a JSON"),
        (["a", 1], "item 1"),
    ]:
        with pytest.raises(RowError, match=needle) as err:
            id_list({"f": value}, "f")
        assert err.value.field == "f"


def test_r2e_test_path_rule():
    assert is_r2e_test_path("pkg/tests/data/x.csv")
    assert is_r2e_test_path("Test/thing.py") and is_r2e_test_path("src/test_io.py")
    assert is_r2e_test_path("src/io_test.py")
    assert not is_r2e_test_path("src/testing.py") and not is_r2e_test_path("src/attest/x.py")
    assert not is_r2e_test_path("pkg/_speedups.pyx") and not is_r2e_test_path("setup.cfg")


def test_split_diff_shapes():
    plain = (
        "--- a/x.py\t2020-01-01\n+++ b/x.py\t2020-01-02\n@@ -1 +1 @@\n-a\n+b\n"
        "--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-c\n+d\n"
    )
    assert [f.path for f in split_diff(plain)] == ["x.py", "y.py"]
    rename = (
        "diff --git a/old name.py b/new name.py\nsimilarity index 100%\n"
        "rename from old name.py\nrename to new name.py\n"
    )
    (f,) = split_diff(rename)
    assert (f.old_path, f.new_path) == ("old name.py", "new name.py")
    name = '"%s/caf\\303\\251.py"'
    quoted = f"diff --git {name % 'a'} {name % 'b'}\n--- {name % 'a'}\n+++ {name % 'b'}\n@@ -1 +1 @@\n-a\n+b\n"
    assert split_diff(quoted)[0].path == "café.py"
    deleted = (
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    (f,) = split_diff(deleted)
    assert f.new_path is None and f.path == "gone.py"
    # a deleted line that looks like a file marker stays inside its hunk
    tricky = "diff --git a/s.sql b/s.sql\n--- a/s.sql\n+++ b/s.sql\n@@ -1,2 +1 @@\n--- comment\n-x\n+y\n"
    assert len(split_diff(tricky)) == 1
    for bad, needle in [
        ("", "empty"),
        ("hello\n", "not a unified diff"),
        ("diff --git a/x b/x\n--- a/x\n+++ b/x\n", "no '@@'"),
    ]:
        with pytest.raises(ValueError, match=needle):
            split_diff(bad)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_file_diff_applies_with_git(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "a.txt").write_text("one\ntwo")  # no newline at end
    (tmp_path / "gone.txt").write_text("bye\n")
    patch = (
        file_diff("a.txt", "one\ntwo", "one\n2\nthree")
        + file_diff("gone.txt", "bye\n", None)
        + file_diff("new/b.txt", None, "hi\n")
    )
    assert file_diff("same.txt", "x\n", "x\n") == ""
    (tmp_path / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "a.txt").read_text() == "one\n2\nthree"
    assert not (tmp_path / "gone.txt").exists()
    assert (tmp_path / "new/b.txt").read_text() == "hi\n"


@pytest.mark.docker
def test_swe_rebench_v2_workdir_is_the_images_own(docker_backend, tmp_path):
    """V2's workdir was hard-coded as /<repo-name>; the image's WORKDIR is the truth when the image is here."""
    import docker

    from harness.config import Settings

    row = raw_rows("swe_rebench_v2.jsonl")[1]
    image = "swedeck-test/ringbuf-workdir:7"
    client = docker.from_env()
    (tmp_path / "Dockerfile").write_text(f"FROM {Settings.from_env().base_image}\nWORKDIR /src/ringbuf\n")
    client.images.build(path=str(tmp_path), tag=image, rm=True)
    try:
        result = load_rows("swe_rebench_v2", [dict(row, image_name=image), row], "m")
    finally:
        client.images.remove(image, force=True)
    here, absent = result.tasks
    assert here.environment.workdir == "/src/ringbuf" and absent.environment.workdir == "/ringbuf"
    assert "workdir from the image for 1 of 2 rows" in result.detected[0].reason


def test_readme_corpus_table_names_tests_that_exist():
    """Each row of the README's corpus table names the fixture tests behind it; they must exist here."""
    import re

    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Corpora", 1)[1].split("\n\n")[2]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith(("| corpus", "| ---"))]
    assert len(rows) == 7
    mine = globals()
    for row in rows:
        named = re.findall(r"`(test_\w+)`", row.rsplit("|", 2)[1])
        assert named and all(callable(mine.get(name)) for name in named), row
