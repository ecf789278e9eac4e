"""Test strengthening: writing a test from a distinguishing input in the file's style, the leak rule,
the judge's tools (a proposal without a citation, one that pins gold's private helper, the real
``openai`` client calling them on the scripted judge), then the sample corpus's too-loose tasks
repaired for real (bwrap, with the scripted judge reviewing and proposing tests) and the planted bad
tests of ``data/sample/labels.toml`` each rejected at its validation step."""

from __future__ import annotations

import json
import textwrap
import tomllib
from pathlib import Path

import openai
import pytest
from conftest import TEST_LIMITS

from curation.decks import strengthened_task
from curation.pipeline1 import Pipeline1Config, process_task
from data import SAMPLE
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import grade
from harness.records import (
    AddedTest,
    Behaviour,
    DistinguishingInput,
    ProbeResult,
    Status,
    Task,
)
from judge import JudgeConfig, JudgeSettings, ScriptedJudge
from judge.loop import strengthen_session
from judge.prompts import STRENGTHEN_TOOLS, render_strengthen
from judge.rules import added_test_leaks, touched_files
from judge.scripted_policies import STRENGTHEN
from judge.strengthen import Candidate, Workbench, confirmed_survivors, strengthen
from judge.strengthen.candidates import model_free_candidate
from judge.strengthen.cases import insert_test
from judge.strengthen.validation import Context, validate
from judge.strengthen.writing import model_free_body
from judge.tools import FinishArgs, ProposeTestArgs, ReviewTestArgs, StrengthenTools
from probes import workspace
from probes.runner import probe_task

PLANTED = tomllib.loads((SAMPLE / "labels.toml").read_text())["planted"]
TOO_LOOSE = ["sample__cronexpr-1", "sample__moneyfmt-1"]


def distinguishing(**changes: object) -> DistinguishingInput:
    base = {"test_id": "tests/t.py::test_a", "how": "'USD' -> 'KWD'", "setup": ["rate = 2"], "call": "price(1, 'KWD', rate)",
            "gold": Behaviour(value="'KWD 2.000'"), "other": Behaviour(value="'KWD 2.00'"), "literal": "'KWD 2.000'"}  # fmt: skip
    return DistinguishingInput(**{**base, **changes})


def test_a_distinguishing_input_becomes_an_assertion_of_gold_behaviour_in_the_files_style() -> None:
    d = distinguishing()
    assert model_free_body(d, unittest=False, pytest_imported=True) == ["rate = 2", "assert price(1, 'KWD', rate) == 'KWD 2.000'"]
    assert model_free_body(d, unittest=True, pytest_imported=True)[-1] == "self.assertEqual(price(1, 'KWD', rate), 'KWD 2.000')"
    raised = distinguishing(gold=Behaviour(raised="shop.errors.PriceError"), literal="")
    assert model_free_body(raised, unittest=False, pytest_imported=False) == [
        "rate = 2", "from shop.errors import PriceError", "import pytest", "with pytest.raises(PriceError):", "    price(1, 'KWD', rate)"
    ]  # fmt: skip
    assert model_free_body(distinguishing(gold=Behaviour(raised="ValueError")), unittest=True, pytest_imported=True)[-2:] == [
        "with self.assertRaises(ValueError):", "    price(1, 'KWD', rate)"
    ]  # fmt: skip
    # a value whose repr does not evaluate back to it cannot be asserted; a timeout tells nothing
    assert model_free_body(distinguishing(literal=""), unittest=False, pytest_imported=True) is None
    assert model_free_body(distinguishing(gold=Behaviour(raised="timeout")), unittest=False, pytest_imported=True) is None


def test_an_input_the_buggy_tree_gets_right_is_asserted_after_the_original_test_s_checks() -> None:
    """more-itertools' real fix: ``n <= 0`` survives a test that checks only ``tail(-1, ...)`` raises,
    and is told apart at ``tail(0, ...)``, where buggy and gold both give ``[]``. Alone that test passes
    on buggy; anchored, it first runs the FAIL_TO_PASS test's own checks (its docstring left out)."""
    source = textwrap.dedent('''
        class TailTests(TestCase):
            def test_sized_negative(self):
                """Negative tail sizes should raise for sized iterables."""
                self.assertRaises(ValueError, lambda: list(mi.tail(-1, 'ABCDEFG')))
    ''')
    d = distinguishing(test_id="tests/test_recipes.py::TailTests::test_sized_negative", how="-1 -> 0 (neighbour)", setup=[],
                       call="list(mi.tail(0, 'ABCDEFG'))", gold=Behaviour(value='["list", []]'), other=Behaviour(raised="ValueError"),
                       literal="[]")  # fmt: skip
    probe = ProbeResult(config_hash="c", task_hash="t", instance_id="i", probe_id="p", kind="plausible_wrong", origin="model_free",
                        operator="mutate_compare", description="", patch="", reward=1.0, reason="", selected_reward=None,
                        executions=1, differing=[], log_path="", distinguishing=d)  # fmt: skip
    sources = {"tests/test_recipes.py": source}
    alone = model_free_candidate(probe, sources)
    anchored = model_free_candidate(probe, sources, form="anchored")
    assert alone is not None and anchored is not None and alone.cls == anchored.cls == "TailTests"
    assert alone.code.splitlines()[2:] == ["    self.assertEqual(list(mi.tail(0, 'ABCDEFG')), [])"]
    assert anchored.code.splitlines()[2:] == [
        "    self.assertRaises(ValueError, lambda: list(mi.tail(-1, 'ABCDEFG')))",
        "    self.assertEqual(list(mi.tail(0, 'ABCDEFG')), [])",
    ]
    assert anchored.name != alone.name and "test_sized_negative's checks" in anchored.code.splitlines()[1]


def test_a_test_goes_at_the_end_of_the_module_or_of_its_class() -> None:
    module = "import pytest\n\ndef test_a():\n    assert 1\n"
    assert insert_test(module, "def test_b():\n    assert 2\n", None) == module.rstrip("\n") + "\n\n\ndef test_b():\n    assert 2\n"
    cls = textwrap.dedent("""\
        import unittest

        class T(unittest.TestCase):
            def test_a(self):
                self.assertTrue(1)

        def helper():
            return 1
        """)
    out = insert_test(cls, "def test_b(self):\n    self.assertTrue(2)\n", "T")
    assert out == cls.replace("self.assertTrue(1)\n", "self.assertTrue(1)\n\n    def test_b(self):\n        self.assertTrue(2)\n")


def test_a_test_that_names_a_gold_only_identifier_leaks_unless_the_issue_names_it() -> None:
    gold = "--- a/m.py\n+++ b/m.py\n@@ -1 +1,3 @@\n-x = 1\n+def _shorten(text, n):\n+    return text[:n]\n+x = 1\n"
    code = "def test_t():\n    from m import _shorten\n    assert _shorten('abc', 2) == 'ab'\n"
    assert any("_shorten" in p for p in added_test_leaks(code, issue="Slugs are too long.", gold_patch=gold))
    assert added_test_leaks(code, issue="Add a `_shorten(text, n)` helper.", gold_patch=gold) == []
    assert added_test_leaks("def test_t():\n    assert slug('abc') == 'ab'\n", issue="", gold_patch=gold) == []


# ================================================================================ the judge's tools


def _bench(task: Task, swedeck_env, file: str) -> Workbench:  # noqa: ANN001
    """A workbench on which nothing runs: the citation and leak checks come before any grade."""
    from test_decks import p1

    tree = prepare_tree(task, swedeck_env)
    existing = "\n".join(t for p in touched_files(task.answer.gold_patch) if (t := workspace.read_text(tree / p)) is not None)
    ctx = Context(task, p1(task), None, [], [], workspace.test_sources(task, tree, [file]), existing)  # type: ignore[arg-type]
    return Workbench(ctx)


def test_a_judge_proposal_that_cites_no_issue_sentence_is_rejected_before_anything_runs(sample_tasks, swedeck_env) -> None:  # noqa: ANN001
    script = STRENGTHEN["sample__moneyfmt-1"]
    tools = StrengthenTools(_bench(sample_tasks["sample__moneyfmt-1"], swedeck_env, script["file"]))
    for cites in ([], ["Please make the formatting correct."]):
        result = tools.propose_test(ProposeTestArgs(file=script["file"], code=script["code"], cites=cites))
        assert result["kept"] is False and result["rejected_at"] == "relevance", result
        assert [c["step"] for c in result["checks"]] == ["relevance"]
        assert ("cites no sentence of the issue" if not cites else "not sentences of the issue") in result["checks"][0]["detail"]
    assert [t.rejected_at for t in tools.bench.tests] == ["relevance", "relevance"]  # kept in the record with the step


def test_a_judge_proposal_that_pins_gold_s_private_helper_fails_the_leak_check(sample_tasks, swedeck_env) -> None:  # noqa: ANN001
    task = sample_tasks["sample__slugkit-1"]
    tools = StrengthenTools(_bench(task, swedeck_env, "tests/test_slugify.py"))
    code = "def test_truncation_never_ends_with_a_separator():\n    from slugkit.slugify import _truncate\n    assert _truncate('a-b-c', 4, '-') == 'a-b'\n"
    cite = next(line.strip("*- ") for line in task.problem_statement.splitlines() if len(line.strip()) > 30)
    result = tools.propose_test(ProposeTestArgs(file="tests/test_slugify.py", code=code, cites=[cite]))
    assert result["rejected_at"] == "leak" and "_truncate" in result["checks"][-1]["detail"], result
    assert tools.propose_test(ProposeTestArgs(file="tests/test_slugify.py", code="x = 1", cites=[cite]))["error"]


def test_the_openai_client_calls_the_strengthening_tools_on_the_scripted_judge(sample_tasks) -> None:  # noqa: ANN001
    """The wire format: the real client sends the strengthening tools and gets review_test, propose_test
    and finish calls back whose arguments are the tools' own argument models."""
    task = sample_tasks["sample__moneyfmt-1"]
    added = AddedTest(file="tests/test_formatting.py", test_id="tests/test_formatting.py::test_strengthened_1", source="model_free",
                      found_by="a distinguishing input", code="def test_strengthened_1():\n    assert 1\n", kills=["w"])  # fmt: skip
    messages = render_strengthen(task, [], [added], {}, 40_000)
    expected = [("review_test", ReviewTestArgs), ("propose_test", ProposeTestArgs), ("finish", FinishArgs)]
    with ScriptedJudge("labelled") as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=5)
        for name, model in expected:
            reply = client.chat.completions.create(model="scripted-judge", messages=messages, tools=STRENGTHEN_TOOLS)  # type: ignore[arg-type]
            (call,) = reply.choices[0].message.tool_calls or []
            assert call.function.name == name
            args = model.model_validate_json(call.function.arguments)
            if isinstance(args, ReviewTestArgs):
                assert args.test_id == added.test_id and args.relevant and args.cites == STRENGTHEN[task.instance_id]["cites"]
            messages = [*messages, reply.choices[0].message.model_dump(exclude_none=True),
                        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"ok": True})}]  # fmt: skip


# ================================================================================ the sample corpus (bwrap)


@pytest.fixture(scope="module")
def probe_backend(backend_factory):  # noqa: ANN001, ANN201
    return backend_factory("bwrap", TEST_LIMITS)


@pytest.fixture(scope="module")
def repaired(sample_tasks: dict[str, Task], probe_backend, swedeck_env, tmp_path_factory):  # noqa: ANN001, ANN201
    out = tmp_path_factory.mktemp("strengthen")
    results = {}
    for iid in TOO_LOOSE:
        task = sample_tasks[iid]
        before = task.task_hash()
        p1 = process_task(task, probe_backend, Pipeline1Config(runs=1), "test", out)
        stamp = {"config_hash": "test", "task_hash": before, "instance_id": iid}
        probes = probe_task(task, probe_backend, p1, stamp, workers=2, log_dir=out / "logs")
        with ScriptedJudge("labelled") as url:
            settings = JudgeSettings(base_url=url, model="scripted")

            def judge(bench: Workbench, settings: JudgeSettings = settings) -> str:
                return strengthen_session(bench, settings, JudgeConfig(), out / "transcripts")

            record = strengthen(task, p1, probes, probe_backend, stamp, prepare_tree(task, swedeck_env), judge=judge, log_dir=out / "logs")
        assert task.task_hash() == before  # the original task is untouched
        results[iid] = (task, p1, probes, record)
    return results


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize("instance_id", TOO_LOOSE)
def test_too_loose_tasks_are_repaired(repaired, probe_backend, instance_id: str) -> None:  # noqa: ANN001
    task, p1, probes, record = repaired[instance_id]
    assert record.status == "repaired", record.reason
    survivors = [p for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0]
    assert survivors and survivors == confirmed_survivors(probes)  # every survivor here behaves unlike gold somewhere
    assert sorted(record.killed) == sorted(p.probe_id for p in survivors)
    kept = [t for t in record.tests if not t.rejected_at]
    steps = ["leak", "contract", "gold_stable", "fails_on_buggy", "kills_survivor", "invariant", "pass_to_pass", "relevance"]
    # the model-free tests, reviewed by the judge, and the judge's own test, each through every step
    free = [t for t in kept if t.source == "model_free"]
    assert free and all(t.relevance == "accepted" and t.issue_quote for t in free) and "finished" in record.reason
    assert record.judge_session.startswith("finished after") and record.reason.endswith(f"; judge: {record.judge_session}")
    (written,) = [t for t in kept if t.source == "judge"]
    assert written.relevance == "accepted" and written.issue_quote == STRENGTHEN[instance_id]["cites"][0] and written.kills
    assert all([c.step for c in t.checks] == steps and all(c.passed for c in t.checks) for t in kept)
    strong = strengthened_task(task, record)
    assert strong.answer.hidden_tests.patch == record.tests_patch != task.answer.hidden_tests.patch
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    assert grade(strong, task.answer.gold_patch, probe_backend, expected=expected).reward == 1.0
    buggy = grade(strong, "", probe_backend, expected=expected)
    assert buggy.reward == 0.0 and all(buggy.statuses[t.test_id] == Status.FAILED for t in kept)
    for probe in survivors:  # every wrong probe that survived the original tests fails the strengthened ones
        assert grade(strong, probe.patch, probe_backend, expected=expected).reward == 0.0, probe.description
    for probe in (p for p in probes if p.kind == "correct_alternative" and p.reward == 1.0):
        assert grade(strong, probe.patch, probe_backend, expected=expected).reward == 1.0, probe.description
    for t in kept:
        assert added_test_leaks(t.code, issue=task.problem_statement, gold_patch=task.answer.gold_patch) == []


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_planted_bad_test_is_rejected_at_its_step(name: str, repaired, sample_tasks, probe_backend, swedeck_env, tmp_path) -> None:  # noqa: ANN001
    planted = PLANTED[name]
    task = sample_tasks[planted["task"]]
    tree = prepare_tree(task, swedeck_env)
    if planted["task"] in repaired:
        _, p1, probes, _ = repaired[planted["task"]]
    else:  # the leak is found before anything runs: no probes needed
        p1 = process_task(task, probe_backend, Pipeline1Config(runs=1), "test", tmp_path)
        probes = []
    existing = "\n".join(t for p in touched_files(task.answer.gold_patch) if (t := workspace.read_text(tree / p)) is not None)
    ctx = Context(task, p1, probe_backend, confirmed_survivors(probes),
                  [p for p in probes if p.kind == "correct_alternative" and p.reward == 1.0],
                  workspace.test_sources(task, tree, [planted["file"]]), existing, gold_runs=10)  # fmt: skip
    code = textwrap.dedent(planted["code"]).strip() + "\n"
    fn = code.split("(")[0].removeprefix("def ")
    record = validate(ctx, Candidate(file=planted["file"], cls=None, name=fn, code=code, source="model_free", found_by="planted"))
    assert record.rejected_at == planted["rejected_at"], [(c.step, c.passed, c.detail) for c in record.checks]
    assert not record.checks[-1].passed and all(c.passed for c in record.checks[:-1])


# ================================================================================ the run stage


def test_only_too_loose_tasks_are_strengthened_unless_all_asks_for_every_kept_task(sample_tasks) -> None:  # noqa: ANN001
    from test_decks import verdict

    from judge.strengthen import eligible

    task = sample_tasks["sample__moneyfmt-1"]
    assert eligible(verdict(task, "too_loose"), every=False)
    assert not eligible(verdict(task, "accept"), every=False) and not eligible(None, every=False)
    # with --all the fix's footprint is searched on every kept task, survivor or not
    assert eligible(verdict(task, "accept"), every=True) and eligible(None, every=True)


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.prefect
def test_the_strengthen_stage_commits_a_record_per_too_loose_task_and_resumes(prefect_api, bwrap_backend, tmp_path: Path) -> None:  # noqa: ANN001
    import shutil

    from conftest import catalog_rows

    from flows.config import load_config
    from flows.pipeline1 import run_pipeline1
    from flows.pipeline2 import run_pipeline2
    from flows.strengthen import run_strengthen
    from judge.config import JudgeSettings
    from judge.scripted import ScriptedJudge

    for name in ("sample__moneyfmt-1", "sample__semverlite-1"):
        shutil.copytree(SAMPLE / name, tmp_path / "src" / name)
    out = tmp_path / "run"
    cfg = load_config(overrides=["pipeline1.runs=1"])
    run_pipeline1([tmp_path / "src"], out, cfg, workers=2)
    with ScriptedJudge("labelled") as url:
        run_pipeline2(out, cfg, 2, JudgeSettings(base_url=url, model="scripted"))
    summary = run_strengthen(out, cfg, 2, every=False)
    assert summary["statuses"] == {"repaired": 1} and list(summary["per_task"]) == ["sample__moneyfmt-1"]
    assert catalog_rows(out / "catalog.duckdb", "select instance_id, status from strengthening") == [("sample__moneyfmt-1", "repaired")]
    record = out / "strengthen" / "sample__moneyfmt-1" / "strengthening.parquet"
    stamp = record.stat().st_mtime_ns
    again = run_strengthen(out, cfg, 2, every=True)  # semverlite joins (its footprint); moneyfmt's record is kept
    assert sorted(again["per_task"]) == ["sample__moneyfmt-1", "sample__semverlite-1"] and record.stat().st_mtime_ns == stamp


@pytest.mark.bwrap
def test_regression_gold_s_full_grade_of_one_suite_is_run_once(sample_tasks, probe_backend, swedeck_env, tmp_path) -> None:  # noqa: ANN001
    """With a single kept test the final suite is the one its ``pass_to_pass`` step graded in full on
    gold: strengthening graded it twice. Gold's full grade is remembered by suite and pattern; another
    suite is graded anew."""
    task = sample_tasks["sample__moneyfmt-1"]
    file = STRENGTHEN["sample__moneyfmt-1"]["file"]
    p1 = process_task(task, probe_backend, Pipeline1Config(runs=1), "test", tmp_path)
    tree = prepare_tree(task, swedeck_env)
    ctx = Context(task, p1, probe_backend, [], [], workspace.test_sources(task, tree, [file]), "")
    first = ctx.gold_full(ctx.with_tests({}, p1.expected_status))
    ran = ctx.executions
    assert first.reward == 1.0 and ran == len(p1.expected_status)
    assert ctx.gold_full(ctx.with_tests({}, dict(p1.expected_status))) is first and ctx.executions == ran
    added = f"{ctx.sources[file]}\n\ndef test_added():\n    assert True\n"
    other = ctx.gold_full(ctx.with_tests({file: added}, {**p1.expected_status, f"{file}::test_added": "PASSED"}))
    assert other is not first and other.reward == 1.0 and ctx.executions == 2 * ran + 1
