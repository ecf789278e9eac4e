"""Every record swedeck reads or writes, defined once.

Arrow schemas and DuckDB views derive from these models (``curation.store``); nothing else declares a
record's fields. Records are pydantic models with ``extra="forbid"`` so a typo in a corpus adapter or a
stale Parquet file fails loudly instead of silently dropping a column.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


def content_hash(obj: Any) -> str:
    """A stable short hash of a JSON-able object (sorted keys), used for cache keys and lineage."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# --------------------------------------------------------------------------------------------- task


class Status(StrEnum):
    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    XFAIL = "XFAIL"
    XPASS = "XPASS"


class Recipe(Record):
    """How to build an environment when the corpus ships no image: a base plus install commands.

    Commands run once per recipe, tree and workdir (``harness.sandboxes.envs.env_key``), at build time, with
    the network on, in the task's workdir on a copy of its buggy tree; they install into the virtual
    environment at ``/opt/swedeck-env`` (``harness.sandboxes.envs``).
    """

    base: str = "swedeck-base"
    install: list[str] = Field(default_factory=list)
    origin: str = ""  # where the commands came from, for a recipe swedeck made (a row's install spec, ...)


class Environment(Record):
    """Exactly one of ``image`` (a prebuilt corpus image) or ``recipe`` is set."""

    image: str | None = None
    recipe: Recipe | None = None
    workdir: str = "/testbed"
    activation: str = ""  # shell prefix run before every command, e.g. "source /opt/conda/bin/activate testbed"


class RepoSource(Record):
    """Where the buggy tree comes from when it is not already inside ``Environment.image``."""

    kind: Literal["files", "bundle", "git", "image"]
    path: str = ""  # folder of plain files, a git bundle, or a git clone ("git"), on the host
    ref: str = ""  # for bundles and clones: the commit or ref to check out as the base


class HiddenTests(Record):
    patch: str = ""  # unified diff applied after the candidate patch
    files: dict[str, str] = Field(default_factory=dict)  # path -> content, written after the patch


class Answer(Record):
    """Everything that leaks the solution. Never rendered into anything agent-facing."""

    gold_patch: str
    hidden_tests: HiddenTests
    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)
    expected_status: dict[str, Status] | None = None  # R2E-Gym's full gold map, when the corpus has it
    leaky_columns: dict[str, str] = Field(default_factory=dict)  # raw corpus columns kept for audit


class Task(Record):
    schema_version: int = SCHEMA_VERSION
    instance_id: str
    source: str  # corpus name: r2e_gym, swe_rebench_v2, scale_swe, swe_bench, swe_gym, local
    repo: str
    base_commit: str = ""
    problem_statement: str
    environment: Environment
    repo_source: RepoSource = RepoSource(kind="image")
    test_cmd: list[str]
    log_parser: str = "pytest"
    test_paths: list[str] = Field(default_factory=list)  # test files the task owns, restored before grading
    answer: Answer

    def task_hash(self) -> str:
        return content_hash(self)

    def agent_view(self) -> AgentTask:
        return AgentTask(
            instance_id=self.instance_id,
            repo=self.repo,
            base_commit=self.base_commit,
            problem_statement=self.problem_statement,
            workdir=self.environment.workdir,
        )


class AgentTask(Record):
    """The only projection of a Task that an agent or a prompt may see."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    workdir: str


class LoadError(Record):
    """A corpus row or task folder that could not become a Task; the rest of the source still loads."""

    source: str
    location: str  # file and row number, or folder
    field: str
    message: str
    stage: str = "corpus_row"


# --------------------------------------------------------------------------------------------- execution


class ExecResult(Record):
    command: str
    exit_code: int | None  # None when the command was killed (timeout, output limit)
    output: str  # head and tail of the output, for display
    log_path: str = ""  # the full (capped) output on the host
    timed_out: bool = False
    output_limited: bool = False
    duration_s: float = 0.0


RunOutcome = Literal[
    "ok", "patch_apply_failed", "forbidden_change", "hidden_tests_apply_failed", "timeout", "output_limit",
    "sandbox_error", "grader_error", "tamper_suspected",  # the run-time guard's (harness.grading.guard)
]


# the canaries a run planted: real tests hidden among must-fail twins ("strong"), integer arithmetic
# that must fail, which code reading test sources can tell apart ("weak"), or none (harness.grading.canaries)
CanaryStrength = Literal["strong", "weak", "none"]


class TestRun(Record):
    """One execution of a task's tests on one tree, before any expectation is applied."""

    __test__ = False  # not a pytest class, despite the name

    schema_version: int = SCHEMA_VERSION
    instance_id: str
    backend: str
    outcome: RunOutcome
    statuses: dict[str, Status] = Field(default_factory=dict)
    exit_codes: list[int | None] = Field(default_factory=list)
    apply_strategy: str = ""
    neutralized: list[str] = Field(default_factory=list)
    spoof_evidence: list[str] = Field(default_factory=list)
    durations: dict[str, float] = Field(default_factory=dict)
    log_path: str = ""
    detail: str = ""
    instrumented: bool = False  # the assertion plugin loaded: the tests ran under pytest
    assert_events: str = ""  # JSONL from the assertion plugin, when instrumented
    test_sources: dict[str, str] = Field(default_factory=dict)  # hidden test files as run, when instrumented
    coverage: str = ""  # JSONL from the coverage plugin, when asked for
    observed: str = ""  # JSONL from the observation plugin (swedeck_observe), when asked for
    canaries: CanaryStrength = "none"
    # at most the chance that code forcing the tests it believes real forges this run unseen: 1/(k+1)
    # per twinned test it must forge (harness.grading.canaries.bound); 1.0 where nothing bounds it
    forgery_bound: float = 1.0
    tamper: list[str] = Field(default_factory=list)  # harness.grading.tamper's findings in the change: path:line: what
    raised: dict[str, str | None] = Field(default_factory=dict)  # what each test's call raised: kept by the canary trial only


GradeReason = Literal[
    "ok",
    "patch_apply_failed",
    "forbidden_change",  # the change does what harness.grading.capabilities refuses; the detail names path and rule
    "hidden_tests_apply_failed",
    "timeout",
    "output_limit",
    "tests_errored",
    "spoofing_suspected",
    "tamper_suspected",  # the change reaches into the test runner or the interpreter (harness.grading.tamper)
    "pattern_mismatch",
    "sandbox_error",
    "grader_error",  # something the grader did not foresee; the detail says what
]


class Grade(Record):
    """The one grader's answer for one patch on one task."""

    schema_version: int = SCHEMA_VERSION
    instance_id: str
    backend: str
    reward: float
    reason: GradeReason
    statuses: dict[str, Status]
    expected: dict[str, Status]
    differing: dict[str, list[str | None]] = Field(default_factory=dict)  # id -> [expected, observed]
    apply_strategy: str = ""
    neutralized: list[str] = Field(default_factory=list)  # test paths restored or deleted before the run
    exit_code: int | None = None
    spoof_evidence: list[str] = Field(default_factory=list)
    durations: dict[str, float] = Field(default_factory=dict)
    log_path: str = ""
    detail: str = ""
    canaries: CanaryStrength = "none"
    forgery_bound: float = 1.0  # the run's (TestRun.forgery_bound)
    tamper: list[str] = Field(default_factory=list)  # recorded whether or not the setting zeroes the reward


# --------------------------------------------------------------------------------------------- pipeline 1

Tree = Literal["buggy", "gold", "gold_network"]


class Stamped(Record):
    """Every stored record says which schema, config and task content produced it."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="the record schema's version")
    config_hash: str = Field(description="hash of the resolved configuration that produced the record")
    task_hash: str = Field(description="hash of the task's content (issue, patches, tests, environment) the record is about")
    instance_id: str = Field(description="the task's id, as its corpus names it")


class TaskRow(Stamped):
    """A task as the catalog shows it: the public fields, never the answer."""

    source: str
    repo: str
    base_commit: str
    problem_statement: str
    test_cmd: list[str]
    log_parser: str
    environment: str
    test_paths: list[str]
    claimed_fail_to_pass: list[str]
    claimed_pass_to_pass: list[str]


class RunRecord(Stamped):
    """One execution of the hidden tests on one tree (Pipeline 1 runs each tree k times)."""

    tree: Tree
    attempt: int
    backend: str
    outcome: RunOutcome
    statuses: dict[str, str]
    exit_codes: list[int | None]
    apply_strategy: str
    spoof_evidence: list[str]
    durations: dict[str, float]
    log_path: str
    detail: str


AssertionStatus = Literal["passed", "failed", "not_reached"]
AssertionKind = Literal["assert", "unittest", "raises", "call"]


class AssertionRecord(Stamped):
    """One assertion site's outcome in one test on one run. The key (test_file, test_id, assert_file,
    line, source_hash, occurrence) is stable across the buggy and gold trees."""

    tree: Tree
    attempt: int
    test_file: str
    test_id: str
    assert_file: str
    line: int
    end_line: int
    qualname: str  # enclosing function's __qualname__, "<module>", or "" when known only from an event
    kind: AssertionKind
    source: str
    source_hash: str  # sha1 of the whitespace-normalised source, 12 hex digits
    occurrence: int
    passed: int
    failed: int
    status: AssertionStatus


P1Reason = Literal[
    "",
    "env_error",
    "sandbox_error",
    "internal_error",
    "patch_does_not_apply",
    "timeout",
    "output_limit",
    "ungradeable",
    "needs_network",
    "only_flaky",
    "gold_fails",
    "no_fail_to_pass",
    "no_binding_assertion",
]


class Pipeline1Result(Stamped):
    source: str
    repo: str
    decision: Literal["keep", "reject"]
    reason: P1Reason
    infrastructure: bool  # the failure is ours or the machine's, not the task's
    stage: str  # where a failure happened: environment, sandbox, patch, tests, instrumentation
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    flaky: list[str]
    gold_failing: list[str]
    binding_assertions: list[str]  # "file:line"
    # Assertions are instrumented under pytest only; other runners (unittest, Django's, go test, ...)
    # are kept without the binding rule, and this says so
    binding_checked: bool = True
    label_disagreements: list[str]
    expected_status: dict[str, str]  # the gold pattern every later grade is held to
    runs: int
    duration_s: float
    detail: str
    image_digest: str = ""  # docker: the image the runs used (registry digest name@sha256:..., else its id); "" on bwrap
    # what the kept task's grades plant: "weak" (arithmetic must-fail canaries, no twinnable test) is
    # counted in the catalog (SELECT canaries, count(*) FROM results GROUP BY canaries), and the bound
    # on forging a grade of its full command unseen (TestRun.forgery_bound)
    canaries: CanaryStrength = "none"
    forgery_bound: float = 1.0


# --------------------------------------------------------------------------------------------- pipeline 2

ProbeKind = Literal["plausible_wrong", "correct_alternative"]


class Behaviour(Record):
    """What one call did on one tree (``probes.differential``): its return value in canonical form,
    the exception type it raised ("" when it returned), what it printed."""

    value: str = ""
    raised: str = ""
    stdout: str = ""


class DistinguishingInput(Record):
    """An input on which gold and another patch behave differently, derived from a FAIL_TO_PASS test."""

    test_id: str  # the test whose statements and literals it came from
    how: str  # the literal it replaced and where the new value came from
    setup: list[str]  # statements run before the call
    call: str  # the expression (or, with call_is_statement, the statement) that behaves differently
    call_is_statement: bool = False
    gold: Behaviour
    other: Behaviour
    literal: str = ""  # Python source of gold's return value when its repr evaluates back to it
    # from the observation engine (probes.observe); a program replay leaves the defaults
    source: Literal["program", "observed", "variant"] = "program"  # a test's call as observed, or an input varied from one
    target: str = ""  # "module:qualname" of the function called
    args: list[str] = Field(default_factory=list)  # the call's positional arguments as source (a method's instance first)
    kwargs: dict[str, str] = Field(default_factory=dict)  # its keyword arguments as source


ProbeOrigin = Literal["model_free", "judge"]


class ProbeResult(Stamped):
    """A counterfactual patch and how the one grader scored it.

    A plausible-but-wrong probe with reward 1 is evidence of a too-loose suite (it may still be
    equivalent to gold); a correct-but-different probe with reward 0 is evidence of an over-restrictive
    one. Neither is a verdict by itself.
    """

    probe_id: str  # stable: hash of (instance, kind, operator, patch)
    kind: ProbeKind
    origin: ProbeOrigin
    operator: str  # e.g. drop_hunk, mutate_compare, special_case, rename_locals, swap_branches
    description: str
    patch: str
    reward: float
    reason: str  # the Grade's reason
    selected_reward: float | None  # the quick verdict on the binding tests alone, when run
    executions: int  # test-command executions spent on this probe
    differing: list[str]
    log_path: str
    tests_run: list[str] = Field(default_factory=list)  # every test executed for this probe, all runs together
    decided_by: Literal["full", "selection"] = "full"  # the runs that gave the reward: a full grade, or selected tests
    inherited: int = 0  # tests that kept gold's status without running: the probe changed nothing they ran under gold
    # differential execution of a wrong probe that survived: an input that tells it from gold, or none
    distinguishing: DistinguishingInput | None = None
    likely_equivalent: bool = False  # survived, and no input the engine tried tells it from gold: no evidence
    differential_tried: int = 0  # inputs the engine compared
    differential_observed: int = 0  # of which standalone calls the tests themselves made (probes.observe)
    differential_generated: int = 0  # ... and calls varied from them or read from the issue and docs


class ProbeCounts(Stamped):
    """Pipeline 2's plausible-but-wrong probes of one task: ``generated`` = ``killed`` + ``survived``,
    and ``survived`` = ``confirmed`` (a distinguishing input tells it from gold: too-loose evidence) +
    ``likely_equivalent`` (no evidence). Zero generated is "no probes", not "all killed"."""

    generated: int
    survived: int
    confirmed: int
    likely_equivalent: int
    killed: int
    alternatives: int  # correct_alternative probes
    alternatives_failed: int  # ... that the tests rejected (over-restrictive evidence)


Verdict = Literal["accept", "issue_rewritten", "gold_wrong", "too_loose", "over_restrictive", "unjudgeable"]


class VerdictRecord(Stamped):
    """Pipeline 2's answer for one task, with the executed evidence it rests on."""

    verdict: Verdict
    q1_gold_fixes_issue: bool | None
    q2_tests_grade_issue: Literal["yes", "too_loose", "over_restrictive"] | None
    q3_issue_states_requirements: bool | None
    evidence: list[str]  # probe ids whose executed grades support the verdict
    rewritten_issue: str
    rationale: str
    judge_model: str
    transcript_path: str
    tokens: int
    detail: str  # why a task is unjudgeable (budget spent, endpoint failed), or other notes
    # "model": a judge session with a model (judge_model names it); "scripted": a session with the
    # shipped test double (judge.scripted), never to be mistaken for a model's answers; "none": no judge
    # endpoint, the verdict follows from the executed probes alone
    judge: Literal["model", "scripted", "none"] = "model"


# strengthened: no confirmed survivor to kill, tests added from the fix's untested footprint
StrengtheningStatus = Literal["repaired", "partially_repaired", "not_repaired", "strengthened"]
# passes_on_buggy: a test of what the fix keeps (next to what it changes) must pass there, where fails_on_buggy is asked of the others
ValidationStep = Literal["leak", "contract", "gold_stable", "fails_on_buggy", "passes_on_buggy", "kills_survivor", "invariant", "pass_to_pass",
                         "relevance"]
Relevance = Literal["unreviewed", "accepted", "rejected"]


class ValidationCheck(Record):
    """One validation step of one added test, as the one grader (or the leak and relevance rules) saw it."""

    step: ValidationStep
    passed: bool
    detail: str = ""
    rewards: list[float] = Field(default_factory=list)  # the grades behind it, in order
    executions: int = 0  # test executions spent on it


class AddedTest(Record):
    """A test proposed for a too-loose suite: where it goes, where it came from, and every check it met."""

    file: str
    test_id: str
    source: ProbeOrigin  # model_free: a survivor's distinguishing input; judge: propose_test
    found_by: str  # the survivor and input it asserts gold's behaviour on, or the judge's proposal
    code: str
    issue_quote: str = ""  # the issue sentence the assertion follows from (judge-written, or a review)
    relevance: Relevance = "unreviewed"
    checks: list[ValidationCheck] = Field(default_factory=list)
    rejected_at: str = ""  # the first step it failed; "" when it is kept
    kills: list[str] = Field(default_factory=list)  # survivor probe ids it makes fail


class FootprintInput(Record):
    """An input where the buggy and gold trees behave differently (``probes.footprint``), and what
    strengthening made of it: pinned by the tests already, a kept test, or why none."""

    call: str
    target: str  # "module:qualname" of the function called
    how: str  # where the input came from (the tests' call, a document, Hypothesis over gold's diff)
    gold: Behaviour
    buggy: Behaviour
    tested: bool  # one of the tests' own calls: the suite pins it already
    outcome: str  # the test that now pins it, or why it is left untested


class Strengthening(Stamped):
    """Test strengthening of one task: the tests tried, the new hidden tests and how far they repair it.
    The original hidden tests stay as they are; ``tests_patch`` replaces them only in the strengthened arm."""

    status: StrengtheningStatus
    reason: str
    survivors: list[str]  # confirmed survivors (wrong probes with a distinguishing input)
    killed: list[str]  # those the strengthened suite fails (full grade)
    tests: list[AddedTest]
    tests_patch: str = ""  # the strengthened hidden tests against the buggy tree ("" when nothing was added)
    hidden_files: dict[str, str] = Field(default_factory=dict)
    expected_status: dict[str, str] = Field(default_factory=dict)  # gold's pattern on the strengthened suite
    fail_to_pass: list[str] = Field(default_factory=list)
    executions: int = 0
    duration_s: float = 0.0
    judge_session: str = ""  # how the judge's session ended ("" when no judge ran)
    transcript_path: str = ""  # that session's transcript
    footprint: list[FootprintInput] = Field(default_factory=list)  # inputs where buggy and gold differ
    footprint_detail: str = ""  # what the footprint search tried


Arm = Literal["raw", "curated", "strengthened"]
TestsVersion = Literal["original", "strengthened"]


class DeckRow(Stamped):
    """One task in one arm of a deck: the issue text the agent reads there, and why it is in the arm.

    ``raw``: every task Pipeline 1 kept, as the corpus states it. ``curated``: the tasks Pipeline 2
    accepted, with the judge's rewritten issue where it rewrote one. ``strengthened``: exactly the raw
    arm's tasks, graded by the strengthened hidden tests where strengthening added any (``tests``) and
    by their original tests otherwise. The task itself (environment, hidden tests) is stored beside the deck.
    """

    # the descriptions are the dataset card's column meanings (curation.deck_dataset); the SWE-bench
    # columns first, in SWE-bench's names, so a harness reading SWE-bench rows reads an arm as it is
    deck_id: str = Field(description="the deck's id")
    arm: Arm = Field(description="raw, curated or strengthened: which version of the task this row is")
    repo: str = Field(default="", description="SWE-bench: the repository, owner/name")
    base_commit: str = Field(default="", description="SWE-bench: the buggy commit; the deck's repos/ bundle holds it where the "
                             "corpus ships no image")  # fmt: skip
    patch: str = Field(default="", description="SWE-bench: the gold patch (never shown to the agent)")
    test_patch: str = Field(default="", description="SWE-bench: the hidden tests as a diff against base_commit, applied after the "
                            "candidate patch; in the strengthened arm the strengthened suite's")  # fmt: skip
    problem_statement: str = Field(description="SWE-bench: the issue text the agent reads in this arm (curated: the judge's rewrite where it rewrote one)")
    FAIL_TO_PASS: list[str] = Field(default_factory=list, description="SWE-bench: tests that fail on base_commit and pass with the gold "
                                    "patch (strengthened arm: of the strengthened suite)")  # fmt: skip
    PASS_TO_PASS: list[str] = Field(default_factory=list, description="SWE-bench: tests that pass on both (strengthened arm: of the "
                                    "strengthened suite)")  # fmt: skip
    image_name: str = Field(default="", description="SWE-rebench: the task's environment image; empty where swedeck builds the "
                            "environment from the task's recipe (DECK/tasks/<id>.json, environment.recipe)")  # fmt: skip
    version: str = Field(default="", description="SWE-bench: the repository version its harness keys environment specs by, where "
                         "the corpus row had one")  # fmt: skip
    workdir: str = Field(default="/testbed", description="where the repository is checked out in the environment")
    test_cmd: list[str] = Field(default_factory=list, description="SWE-rebench install_config.test_cmd: the command that runs the tests")
    log_parser: str = Field(default="pytest", description="SWE-rebench install_config.log_parser: how the test output becomes statuses")
    verdict: str = Field(description="Pipeline 2's verdict (accept, issue_rewritten, too_loose, ...); empty when the task was not judged")
    judge: str = Field(default="", description="who gave the verdict: model, scripted (the shipped test double: its verdicts reach the "
                       "curated arm only with `swedeck deck --scripted-verdicts`) or none (the executed probes alone)")  # fmt: skip
    evidence: list[str] = Field(default_factory=list, description="ids of the executed probes the verdict rests on (the deck's probes table)")
    source_run: str = Field(description="the curate run folder the deck was built from, relative to the deck's folder")
    tests: TestsVersion = Field(default="original", description="the hidden tests this arm grades the task with: original or strengthened")
    strengthening: str = Field(default="", description="lineage: the strengthening record (RUN/strengthen/<id>#<record hash>); empty when none ran")
    strengthening_status: str = Field(default="", description="that record's status (repaired, partially_repaired, not_repaired); empty when none ran")
    cluster_id: str = Field(default="", description="the upstream fix's cluster across corpora; empty when the deck was built without fingerprints")
    lineage: list[str] = Field(default_factory=list, description="every member of the cluster: corpus/version/instance_id")
    contamination: list[str] = Field(default_factory=list, description="evaluation-set matches kept under a flag-only policy: rule:eval_member")


# ---- trajectories

# imported here so that nothing above this section changes
from pydantic import model_validator

Termination = Literal["submitted", "malformed_turn", "repeated_call", "max_turns", "max_tokens", "timeout", "env_error"]


class ToolCall(Record):
    """One parsed call from a turn that passed the raw-turn check."""

    name: str
    arguments: dict[str, str] = Field(default_factory=dict)


class TurnRecord(Record):
    """One assistant turn exactly as sampled, and what its call did.

    ``raw``, ``token_ids`` and ``logprobs`` are the sampled turn itself (history is never re-rendered
    from ``call``). ``call`` is None when the turn failed the raw-turn check (``check_error`` then holds
    its error class) and nothing was executed.
    """

    index: int
    raw: str
    token_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    check_error: str = ""  # "" when the turn passed the raw-turn check
    call: ToolCall | None = None
    output: str = ""  # the full tool output, as kept for the record
    output_shown: str = ""  # what the model saw (head and tail when truncated)
    followup_ids: list[int] = Field(default_factory=list)  # the tokens appended after the turn (tool output framing)
    exit_code: int | None = None
    duration_s: float = 0.0


class TrajectoryRecord(Stamped):
    """One rollout: every turn, why it ended, and its gated reward (``turns`` is stored as a list of
    structs). ``weight_version`` is the oldest version any of its turns was sampled under."""

    rollout_id: str
    group_id: str
    weight_version: int
    prompt_ids: list[int] = Field(default_factory=list)  # the context before the first turn
    turns: list[TurnRecord] = Field(default_factory=list)
    termination: Termination
    submitted: bool
    patch: str = ""
    grader_reward: float | None = None  # the one grader's reward, when the patch was graded
    reward: float  # the gated reward: grader_reward only when submitted, else 0
    detail: str = ""  # why an env_error ended it

    @model_validator(mode="after")
    def _submitted_matches_termination(self) -> TrajectoryRecord:
        if self.submitted != (self.termination == "submitted"):
            raise ValueError(f"submitted={self.submitted} contradicts termination={self.termination!r}")
        if not self.submitted and self.reward != 0.0:
            raise ValueError(f"a trajectory that did not submit has reward {self.reward}, not 0")
        return self


# ---- scheduled runs


class IncrementRecord(Stamped):
    """One task as one run of a schedule found it: ``new`` (no stored result), ``changed`` (its content
    or the config differ from the stored result's), ``retried`` (the stored attempt failed on
    infrastructure) or ``unchanged`` (nothing to redo). Only the first three are processed."""

    flow_run: str  # the Prefect flow run
    started: str  # when that run started, ISO 8601
    change: Literal["new", "changed", "retried", "unchanged"]


# ---- deduplication and decontamination (curation.fingerprints, curation.dedup)

Role = Literal["train", "eval"]
DedupRule = Literal["same_pr", "same_patch", "syntax_equal", "near_issue"]
ReportRule = Literal["near_issue_below", "near_issue_other_repo", "same_patch_other_base"]
ContaminationRule = Literal["same_pr", "same_patch", "syntax_equal", "near_issue", "same_repo"]


class Fingerprint(Record):
    """What identifies a task's fix whatever corpus ships it, computed from its row at load time.

    ``member`` (``source:instance_id``) is the task's name in clusters: two corpora may ship one id."""

    schema_version: int = SCHEMA_VERSION
    member: str
    instance_id: str
    source: str  # corpus: swe_bench, swe_rebench_v2, r2e_gym, ...
    version: str  # the corpus's schema version (``Detection.version``)
    location: str  # file#row the task came from
    role: Role = "train"
    repo: str  # normalised: lower case, no host, no .git; a fork sharing the root commit maps to one name
    base_commit: str
    pr: int | None = None
    issues: list[int] = Field(default_factory=list)
    created_at: str = ""  # ISO 8601, when the row says
    patch_hash: str  # gold without test files: added and removed lines, whitespace, context and hunk headers dropped
    syntax_hash: str  # the same, from tree-sitter tokens: survives reformatting and renamed locals ("" when no code)
    languages: list[str] = Field(default_factory=list)
    fail_to_pass: list[str] = Field(default_factory=list)
    fail_to_pass_hash: str = ""
    # datasketch MinHash of the issue's word shingles: its hash values as little-endian uint32, base64 ("" for
    # an issue without words); a string, since 100k tasks of 128 Python ints would hold half a gigabyte
    issue_minhash: str = ""


class ClusterMember(Record):
    """One task's cluster: the same fix across every corpus loaded (a cluster of one is a task alone)."""

    cluster_id: str
    member: str
    instance_id: str
    source: str
    version: str
    location: str
    size: int


class Duplicate(Record):
    """Two tasks found to be the same fix (``merged``, with the equality rule that joined them), or
    near-duplicates below the rules (reported, not merged; ``cluster_id`` is then "")."""

    cluster_id: str
    a: str  # members
    b: str
    rule: str  # a DedupRule when merged, else a ReportRule
    similarity: float = 1.0  # the issue texts' estimated Jaccard similarity, where the rule compares them
    merged: bool


class Contamination(Record):
    """A training task that matches an evaluation task, and how."""

    member: str
    instance_id: str
    source: str
    eval_source: str  # the --eval source it matches
    eval_member: str  # "" for same_repo (the repository is in the eval set)
    rule: ContaminationRule
    similarity: float = 1.0
    exact: bool  # same_pr, same_patch, syntax_equal or near_issue: the eval task's own fix
    task_created: str = ""
    eval_cutoff: str = ""  # the eval set's latest created_at, or the configured one
    predates_cutoff: bool | None = None  # None when either date is unknown


class DeckDrop(Record):
    """A kept task a deck leaves out, and why: a duplicate of the row kept for its cluster, or
    contaminated under the deck's policy."""

    member: str
    instance_id: str
    reason: Literal["duplicate", "contaminated"]
    detail: str  # the representative kept, or the eval match and rule
    cluster_id: str = ""


# ---- batch grading (curation.predictions)


class Prediction(BaseModel):
    """One row of a predictions file, as SWE-bench's harness reads it; its other fields (an agent's
    full output, costs) are not ours to read. A null ``model_patch`` is an empty one, as there."""

    model_config = ConfigDict(extra="ignore", protected_namespaces=())

    instance_id: str
    model_patch: str | None = ""
    model_name_or_path: str = ""

    def prediction_id(self) -> str:
        """Stable over reruns and row order: several predictions of one instance (samples, models) stay apart."""
        return content_hash([self.instance_id, self.model_name_or_path, self.model_patch or ""])


class PredictionGrade(Stamped):
    """One prediction graded by the one grader against one arm of a deck. ``config_hash`` is the
    sandbox configuration's hash and ``task_hash`` the arm's task's: a rerun regrades when either changed."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    prediction_id: str
    model_name_or_path: str
    deck_id: str
    arm: Arm
    tests: TestsVersion  # the hidden tests the arm grades this task with
    resolved: bool  # reward 1: the tests reproduce gold's pattern exactly
    reward: float
    reason: Literal[GradeReason, "env_error"]  # env_error: no environment or no gold pattern to grade against (regraded on rerun)
    detail: str
    differing: list[str]  # tests whose status differs from gold's
    backend: str
    log_path: str
    duration_s: float
