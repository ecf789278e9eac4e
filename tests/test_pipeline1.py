"""Pipeline 1: the verdict rules on hand-made status maps, then the real Prefect flow over the sample
corpus (every planted defect rejected with the right reason, every valid task kept with the labelled
FAIL_TO_PASS tests and binding assertions), bad input that must not stop a run, and kill-and-resume."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curation.pipeline1 import Derived, decide, derive, explain, label_disagreements
from data import SAMPLE
from flows.config import load_config
from harness.sandboxes import leftovers
from harness.records import Answer, Environment, HiddenTests, Recipe, Task
from conftest import LABELS, catalog_rows

P, F, E = "PASSED", "FAILED", "ERROR"


# ------------------------------------------------------------------------------------------ pure rules


def test_derive_splits_fail_to_pass_pass_to_pass_and_gold_failures() -> None:
    buggy = [{"t::a": F, "t::b": P, "t::c": F}] * 3
    gold = [{"t::a": P, "t::b": P, "t::c": F}] * 3
    d = derive(buggy, gold, ["t"])
    assert (d.fail_to_pass, d.pass_to_pass, d.gold_failing, d.flaky) == (["t::a"], ["t::b"], ["t::c"], [])


def test_derive_counts_a_test_missing_on_buggy_as_not_passing() -> None:
    # a hidden test importing a name the buggy tree lacks never gets an id there, only a file ERROR
    d = derive([{"t.py": E}], [{"t.py::new": P}])
    assert d.fail_to_pass == ["t.py::new"]


def test_derive_marks_flaky_tests_and_their_parametrised_siblings() -> None:
    buggy = [{"t::x[1]": F, "t::x[2]": F, "t::y": F}] * 3
    gold = [{"t::x[1]": P, "t::x[2]": P, "t::y": P}, {"t::x[1]": F, "t::x[2]": P, "t::y": P}, {"t::x[1]": P, "t::x[2]": P, "t::y": P}]
    d = derive(buggy, gold)
    assert d.flaky == ["t::x[1]", "t::x[2]"]
    assert d.fail_to_pass == ["t::y"]


def test_gold_failures_outside_the_tasks_test_files_are_not_blamed_on_gold() -> None:
    d = derive([{"other.py::t": F, "t.py::a": F}], [{"other.py::t": F, "t.py::a": P}], ["t.py"])
    assert d.gold_failing == [] and d.fail_to_pass == ["t.py::a"]


@pytest.mark.parametrize(
    ("derived", "network", "binding", "reason"),
    [
        (Derived(fail_to_pass=["a"]), True, None, "needs_network"),
        (Derived(flaky=["a"]), False, None, "only_flaky"),
        (Derived(fail_to_pass=["a"], flaky=["b"]), False, ["f:1"], ""),
        (Derived(fail_to_pass=["a"], gold_failing=["b"]), False, ["f:1"], "gold_fails"),
        (Derived(pass_to_pass=["a"]), False, None, "no_fail_to_pass"),
        (Derived(fail_to_pass=["a"]), False, [], "no_binding_assertion"),
        (Derived(fail_to_pass=["a"]), False, ["f:1"], ""),
    ],
)
def test_decide_applies_the_documented_order(derived: Derived, network: bool, binding: list | None, reason: str) -> None:
    assert decide(derived, network=network, binding=binding) == reason


def _task(**answer: object) -> Task:
    return Task(
        instance_id="x", source="swe_bench", repo="o/r", problem_statement="p",
        environment=Environment(recipe=Recipe()), test_cmd=["pytest"],
        answer=Answer(gold_patch="", hidden_tests=HiddenTests(), **answer),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("buggy", "gold", "reason", "says"),
    [
        ([{"t": "FAILED", "f": "PASSED"}, {"t": "FAILED", "f": "FAILED"}], [{"t": "FAILED", "f": "PASSED"}] * 2, "only_flaky",
         "no stable FAIL_TO_PASS test over 2 buggy and 2 gold run(s); 1 test(s) change outcome between identical runs: f (buggy FAILED/PASSED, gold PASSED)"),
        ([{"x": "FAILED", "y": "FAILED"}], [{"x": "ERROR", "y": "PASSED"}], "gold_fails",
         "1 test(s) of the task's own files fail on every gold run (1 buggy and 1 gold run(s)): x (buggy FAILED, gold ERROR)"),
        ([{"p": "PASSED", "q": "PASSED"}], [{"p": "PASSED", "q": "PASSED"}], "no_fail_to_pass",
         "no test fails on buggy and passes on gold (1 buggy and 1 gold run(s)): 2 of 2 pass on both trees"),
    ],
)  # fmt: skip
def test_regression_rejections_by_outcome_say_which_tests_and_runs(buggy: list, gold: list, reason: str, says: str) -> None:
    """Issue 25: p1_results.detail was empty for only_flaky, gold_fails and no_fail_to_pass."""
    d = derive(buggy, gold)
    assert decide(d, network=False, binding=None) == reason
    assert explain(reason, d, buggy, gold) == says


def test_label_disagreements_name_every_claim_the_runs_contradict() -> None:
    task = _task(fail_to_pass=["a", "b"], pass_to_pass=["c"], expected_status={"c": "PASSED", "d": "FAILED"})
    d = Derived(fail_to_pass=["a", "e"], pass_to_pass=["c"], flaky=["b"])
    out = label_disagreements(task, d, {"c": P, "d": P})
    assert out == [
        "b: corpus says FAIL_TO_PASS, runs say flaky",
        "e: runs say FAIL_TO_PASS, corpus does not",
        "d: corpus gold map says FAILED, our gold run says PASSED",
    ]


# ------------------------------------------------------------------------------------------ the flow


@pytest.fixture(scope="session")
def sample_run(prefect_api, bwrap_backend, tmp_path_factory) -> Path:  # noqa: ANN001
    """The real Prefect flow over the whole sample corpus, once per session."""
    from flows.pipeline1 import run_pipeline1

    out = tmp_path_factory.mktemp("p1-sample")
    summary = run_pipeline1([SAMPLE], out, load_config(), workers=2)
    assert summary["tasks"] == len(LABELS)
    return out


@pytest.mark.prefect
@pytest.mark.parametrize("instance_id", sorted(LABELS))
def test_sample_task_is_decided_as_labelled(sample_run: Path, instance_id: str) -> None:
    label = LABELS[instance_id]
    (row,) = catalog_rows(
        sample_run / "catalog.duckdb",
        f"select decision, reason, fail_to_pass, binding_assertions, infrastructure, detail "
        f"from p1_results where instance_id = '{instance_id}'",
    )
    decision, reason, f2p, binding, infrastructure, detail = row
    assert (decision, reason) == (label["p1_decision"], label["p1_reason"]), detail
    assert infrastructure == (reason == "env_error")
    assert bool(detail) or decision == "keep", "a rejection says why"
    if decision == "keep":
        assert sorted(f2p) == sorted(label["fail_to_pass"])
        assert sorted(binding) == sorted(label["binding_asserts"])


@pytest.mark.prefect
def test_catalog_views_hold_every_record_kind(sample_run: Path) -> None:
    db = sample_run / "catalog.duckdb"
    [(tasks,)], [(results,)] = catalog_rows(db, "select count(*) from tasks"), catalog_rows(db, "select count(*) from p1_results")
    assert tasks == results == len(LABELS)
    # each non-env-error task ran 3 times per tree, network confirmation runs aside
    per_tree = catalog_rows(db, "select instance_id, tree, count(*) from runs where tree <> 'gold_network' group by all")
    assert {n for _, _, n in per_tree} == {3}
    [(binding_rows,)] = catalog_rows(
        db,
        "select count(*) from assertions a join p1_results r using (instance_id) where r.decision = 'keep' "
        "and list_contains(r.binding_assertions, a.assert_file || ':' || a.line)",
    )
    assert binding_rows > 0
    [(network_runs,)] = catalog_rows(db, "select count(*) from runs where tree = 'gold_network'")
    assert network_runs == 1  # only the feedfetch task fails gold with network errors
    # the catalog counts what canaries the kept tasks' grades plant: twins of their own tests
    # ("strong") or integer arithmetic ("weak"). intervals' expected values are built by calls
    # (`[Interval(t(9), t(13))]`), never literals, and semverlite's tests assert truth values
    # (`assert satisfies("1.2.3", "=1.2.3")`): both are twinned at an input of those calls
    canaries = catalog_rows(db, "select instance_id, canaries from p1_results where decision = 'keep' order by 1")
    kept = sum(1 for label in LABELS.values() if label["p1_decision"] == "keep")
    assert len(canaries) == kept
    assert [i for i, strength in canaries if strength != "strong"] == [], canaries


def _copy_tasks(dest: Path, *names: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copytree(SAMPLE / name, dest / name)
    return dest


@pytest.mark.prefect
def test_broken_folder_and_hanging_test_do_not_stop_the_run(sample_run: Path, tmp_path: Path) -> None:
    from flows.pipeline1 import run_pipeline1

    src = _copy_tasks(tmp_path / "src", "sample__semverlite-1", "sample__toposort-1")
    broken = src / "sample__broken-1"
    shutil.copytree(SAMPLE / "sample__mdtable-1", broken)
    (broken / "task.toml").write_text('instance_id = "sample__broken-1"\nlog_parser = "pytest"\n')  # no test_cmd
    hanging = src / "sample__toposort-1"
    toml = (hanging / "task.toml").read_text()
    (hanging / "task.toml").write_text(toml.replace("test_cmd = [", 'test_cmd = ["python -c \\"import time; time.sleep(600)\\"", ', 1))
    cfg = load_config(overrides=["sandbox.limits.timeout_s=15"])  # room for the healthy tasks on a loaded machine
    summary = run_pipeline1([src], tmp_path / "out", cfg, workers=2)
    assert summary["kept"] == 1 and summary["rejected"] == {"timeout": 1} and summary["load_errors"] == 1
    db = tmp_path / "out" / "catalog.duckdb"
    assert catalog_rows(db, "select field from load_errors") == [("task.toml:test_cmd",)]
    assert catalog_rows(db, "select reason, stage from p1_results where instance_id = 'sample__toposort-1'") == [("timeout", "tests")]


# ------------------------------------------------------------------------------------------ kill and resume

KILL_TASKS = ("sample__semverlite-1", "sample__mdtable-1", "sample__romans-1", "sample__intervals-1", "sample__invoice-1")
STABLE = (
    "select instance_id, decision, reason, fail_to_pass, pass_to_pass, binding_assertions, expected_status, runs "
    "from p1_results order by instance_id"
)
RUN_KEYS = "select instance_id, tree, attempt, outcome, statuses from runs order by all"
ASSERT_KEYS = "select instance_id, tree, attempt, test_id, assert_file, line, occurrence, status from assertions order by all"


def _p1(src: Path, out: Path, env: dict[str, str], engine: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "flows.cli", "p1", str(src), "--out", str(out), "--workers", "1", "--backend", engine,
           "--set", "pipeline1.runs=2"]  # fmt: skip
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


@pytest.mark.slow  # three runs of five tasks; the default tier resumes after a signal in test_signals
@pytest.mark.prefect
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("engine", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def test_sigkill_then_rerun_equals_an_uninterrupted_run(engine: str, swedeck_env, request: pytest.FixtureRequest, tmp_path: Path) -> None:  # noqa: ANN001
    request.getfixturevalue(f"{engine}_backend")
    src = _copy_tasks(tmp_path / "src", *KILL_TASKS)
    env = {**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING"}
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert _p1(src, whole, env, engine).wait(timeout=600) == 0

    victim = _p1(src, killed, env, engine)
    token = leftovers.process_token(victim.pid)
    deadline = time.monotonic() + 300
    while len(list((killed / "p1").glob("*/result.parquet"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.7)  # land the kill inside the next task's work, not between tasks
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    finished = len(list((killed / "p1").glob("*/result.parquet")))
    assert 2 <= finished < len(KILL_TASKS), "the kill should interrupt the run midway"

    assert _p1(src, killed, env, engine).wait(timeout=600) == 0
    for sql in (STABLE, RUN_KEYS, ASSERT_KEYS):
        assert catalog_rows(killed / "catalog.duckdb", sql) == catalog_rows(whole / "catalog.duckdb", sql)
    dupes = catalog_rows(killed / "catalog.duckdb", "select instance_id, tree, attempt from runs group by all having count(*) > 1")
    assert dupes == []
    assert not list((killed / "p1").glob(".*")), "partial folders of the killed run were swept"
    # and nothing of the killed run is left: its processes (the worker died with it, Prefect's server
    # was orphaned until the rerun's sweep), sandbox and scratch folders, run file
    assert token is not None and not leftovers.alive(token)
    marker = f"{leftovers.RUN_ENV}={token}".encode()
    survivors = [p.name for p in Path("/proc").glob("[0-9]*") if marker in _environ(p)]
    assert survivors == [], f"processes of the killed run survive: {survivors}"
    cache = swedeck_env.cache_dir
    assert list(cache.glob(f"sandboxes/*-{token}-*")) == [] and not leftovers.scratch_dir(swedeck_env, token).exists()
    assert not (cache / "runs" / f"{token}.json").exists()
    if engine == "docker":  # the killed run's containers (labelled with its token) went with the rerun's sweep
        labelled = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=swedeck.owner={token}"], capture_output=True, text=True, check=True)
        assert labelled.stdout.split() == [], "containers of the killed run survive"


def _environ(proc: Path) -> list[bytes]:
    try:
        return (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return []


def test_our_own_exception_is_recorded_and_retried_next_run(sample_tasks, tmp_path: Path) -> None:  # noqa: ANN001
    from curation.pipeline1 import finished, internal_error, result_path
    from curation.store import read_records
    from harness.records import Pipeline1Result

    task = sample_tasks["sample__semverlite-1"]
    try:
        raise ValueError("boom in our code")
    except ValueError as err:
        internal_error(task, "cfg", tmp_path, err)
    (stored,) = read_records(result_path(tmp_path, task.instance_id) / "result.parquet", Pipeline1Result)
    assert (stored.reason, stored.stage, stored.infrastructure) == ("internal_error", "our_code", True)
    assert "boom in our code" in stored.detail
    assert finished(tmp_path, task, "cfg") is None  # infrastructure failures are redone, never reused
