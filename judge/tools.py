"""The judge's tools for one session: a shell in one sandbox of the task, and the one grader.

A tool never raises for the model's mistakes or the sandbox's failures: it returns a result that says
what went wrong, and the session goes on.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness.config import Settings
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import grade
from harness.grading.patching import apply_patch
from harness.pyast import parse
from harness.records import (
    AddedTest,
    ProbeKind,
    ProbeResult,
    Status,
    Task,
    content_hash,
)
from harness.sandboxes.sandbox import Backend, EnvError, Sandbox, SandboxError
from judge.config import JudgeConfig
from judge.prompts import GOLD_PATCH_PATH, cut
from judge.rules import touched_files
from judge.strengthen import Candidate, Workbench
from probes.differential import DifferentialSession, session_for, with_differential

JUDGE_OPERATOR = "judge_written"
LOG_TAIL_CHARS = 2000


class ShellArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str


class GradeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    patch: str
    kind: ProbeKind
    description: str = ""


class DifferentialArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    probe_id: str


class ProposeTestArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str  # a hidden test file
    code: str  # one test function (a method when test_class is given)
    cites: list[str] = Field(default_factory=list)  # the issue sentences its assertions follow from
    test_class: str | None = None


class ReviewTestArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    test_id: str
    relevant: bool
    cites: list[str] = Field(default_factory=list)  # for a relevant test: the issue sentences that ask for it
    reason: str = ""


class FinishArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rationale: str = ""


def judge_probe_id(instance_id: str, kind: str, patch: str) -> str:
    return content_hash([instance_id, kind, "judge", patch])


class ToolSession:
    """The shell sandbox (opened on first use, closed by ``close``) and the probes graded so far."""

    def __init__(
        self,
        task: Task,
        expected: dict[str, str],
        backend: Backend,
        stamp: dict[str, str],
        probes: Sequence[ProbeResult],
        config: JudgeConfig,
        log_dir: Path,
        *,
        fail_to_pass: Sequence[str] = (),
    ) -> None:
        self.task, self.backend, self.stamp, self.config, self.log_dir = task, backend, stamp, config, log_dir
        self.fail_to_pass = list(fail_to_pass)
        self._differential: DifferentialSession | None = None
        self.expected = {test_id: Status(status) for test_id, status in expected.items()}
        # what a verdict may cite: model-free probes (adopted) and, later, the ones graded in this session;
        # a judge-written probe from another session must be graded again here
        self.known: dict[str, ProbeResult] = {p.probe_id: p for p in probes if p.origin == "model_free"}
        self.written: list[ProbeResult] = []  # graded by grade_patch in this session, in order
        self.executed = 0  # shell commands and grades run
        self._sandbox: Sandbox | None = None

    # ------------------------------------------------------------------ shell

    def _open(self) -> Sandbox:
        if self._sandbox is None:
            sandbox = self.backend.open(self.task)
            try:
                hidden = self.task.answer.hidden_tests
                strategy, why = apply_patch(sandbox, hidden.patch, "hidden-tests")
                if not strategy:
                    raise SandboxError(f"the hidden tests do not apply to the buggy tree: {why}")
                for path, content in hidden.files.items():
                    sandbox.write_file(path, content)
                sandbox.write_file(GOLD_PATCH_PATH, self.task.answer.gold_patch)
            except BaseException:
                sandbox.close()
                raise
            self._sandbox = sandbox
        return self._sandbox

    def shell(self, args: ShellArgs) -> dict:
        try:
            result = self._open().run(args.command, timeout=self.config.shell_timeout_s)
        except (EnvError, SandboxError, OSError) as err:
            return {"error": f"the sandbox failed: {err}"}
        self.executed += 1
        return {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "output_limited": result.output_limited,
            "output": cut(result.output, self.config.tool_output_chars),
        }

    def buggy_text(self, paths: Sequence[str]) -> str:
        """The pristine buggy text of ``paths`` (for the leak check), read from a fresh sandbox: the
        shell sandbox may hold anything the judge did, gold applied included. Empty where unreadable."""
        texts = []
        try:
            sandbox = self.backend.open(self.task)
        except (EnvError, SandboxError, OSError):
            return ""
        try:
            for path in paths:
                try:
                    texts.append(sandbox.read_file(path).decode(errors="replace"))
                except (OSError, ValueError):
                    continue
        finally:
            sandbox.close()
        return "\n".join(texts)

    def gold_files_text(self) -> str:
        return self.buggy_text(touched_files(self.task.answer.gold_patch))

    # ------------------------------------------------------------------ grader

    def grade_patch(self, args: GradeArgs) -> dict:
        probe_id = judge_probe_id(self.task.instance_id, args.kind, args.patch)
        if probe_id in self.known and self.known[probe_id].origin == "judge":
            return {**self._view(self.known[probe_id]), "note": "already graded in this session"}
        try:
            g = grade(self.task, args.patch, self.backend, expected=self.expected, log_dir=self.log_dir)
        except (EnvError, SandboxError, OSError) as err:
            return {"error": f"the grader could not run: {err}"}
        self.executed += 1
        probe = ProbeResult(
            **self.stamp,
            probe_id=probe_id,
            kind=args.kind,
            origin="judge",
            operator=JUDGE_OPERATOR,
            description=args.description,
            patch=args.patch,
            reward=g.reward,
            reason=g.reason,
            selected_reward=None,
            executions=len(self.task.test_cmd) if g.apply_strategy else 0,
            differing=sorted(g.differing),
            log_path=g.log_path,
        )
        self.known[probe_id] = probe
        self.written.append(probe)
        view = self._view(probe)
        view["differing"] = {k: v for k, v in list(g.differing.items())[:20]}
        if g.detail:
            view["detail"] = cut(g.detail, LOG_TAIL_CHARS)
        if g.log_path and g.reward == 0 and Path(g.log_path).exists():
            view["log_tail"] = Path(g.log_path).read_text(errors="replace")[-LOG_TAIL_CHARS:]
        return view

    def confirm(self, probe_ids: Iterable[str]) -> None:
        """A model-free reward 1 decided by test selection is evidence, not yet the final word: before a
        verdict may cite it, the full grade decides (and replaces the selected result)."""
        for probe_id in probe_ids:
            probe = self.known.get(probe_id)
            if probe is None or probe.decided_by != "selection" or probe.reward != 1.0:
                continue
            g = grade(self.task, probe.patch, self.backend, expected=self.expected, log_dir=self.log_dir)
            self.executed += 1
            confirmed = probe.model_copy(update={
                "reward": g.reward, "reason": g.reason, "decided_by": "full", "differing": sorted(g.differing),
                "log_path": g.log_path, "executions": probe.executions + len(g.statuses), "inherited": 0,
                "tests_run": list(dict.fromkeys([*probe.tests_run, *g.statuses])),
            })  # fmt: skip
            self.known[probe_id] = confirmed
            self.written.append(confirmed)

    def differential(self, args: DifferentialArgs) -> dict:
        """The differential engine on a graded plausible_wrong probe; the answer is stored with the probe
        (a too_loose verdict may cite it only with a distinguishing input)."""
        probe = self.known.get(args.probe_id)
        if probe is None:
            return {"error": f"{args.probe_id!r} is not a probe graded in this session or given to you"}
        if probe.kind != "plausible_wrong" or probe.reward != 1.0:
            return {"error": "differential is for plausible_wrong probes that passed the tests (reward 1)"}
        if probe.distinguishing is None and not probe.likely_equivalent:
            try:
                if self._differential is None:
                    tree = prepare_tree(self.task, getattr(self.backend, "settings", None) or Settings.from_env())
                    self._differential = session_for(self.task, self.backend, self.fail_to_pass, tree)
                answer = self._differential.distinguish(probe.patch)
            except (EnvError, SandboxError, OSError) as err:
                return {"error": f"the differential engine could not run: {err}"}
            self.executed += 1
            probe = with_differential(probe, answer)
            self.known[probe.probe_id] = probe
            # stored once: a probe graded in this session is replaced, a model-free one is added
            self.written = [p for p in self.written if p.probe_id != probe.probe_id] + [probe]
        if probe.distinguishing is None:
            return {"probe_id": probe.probe_id, "found": False, "tried": probe.differential_tried,
                    "note": "likely equivalent to gold on every input tried: not evidence of a too-loose suite"}  # fmt: skip
        return {"probe_id": probe.probe_id, "found": True, "distinguishing": probe.distinguishing.model_dump()}

    @staticmethod
    def _view(probe: ProbeResult) -> dict:
        return {"probe_id": probe.probe_id, "kind": probe.kind, "reward": probe.reward, "reason": probe.reason}

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


class StrengthenTools:
    """The judge's tools when it strengthens a task's tests: ``propose_test`` (validated by the same
    steps as a model-free test before the judge sees any result), ``review_test`` (relevance of a kept
    model-free test) and ``finish``."""

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench
        self.finished = False

    def propose_test(self, args: ProposeTestArgs) -> dict:
        try:
            tree = parse(textwrap.dedent(args.code))
        except (SyntaxError, ValueError) as err:
            return {"error": f"the code does not parse: {err}"}
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        if len(names) != 1 or len(tree.body) != 1:
            return {"error": "propose exactly one test function (def test_...), nothing else; imports go inside it"}
        cand = Candidate(file=args.file, cls=args.test_class, name=names[0], code=textwrap.dedent(args.code), source="judge",
                         found_by="proposed by the judge", cites=tuple(args.cites))  # fmt: skip
        try:
            return self._view(self.bench.consider(cand))
        except (EnvError, SandboxError, OSError) as err:
            return {"error": f"the grader could not run: {err}"}

    def review_test(self, args: ReviewTestArgs) -> dict:
        done = self.bench.review(args.test_id, args.relevant, args.cites, args.reason)
        return {"error": done} if isinstance(done, str) else self._view(done)

    def finish(self, args: FinishArgs) -> dict:
        self.finished = True
        kept = [t for t in self.bench.tests if not t.rejected_at]
        return {"finished": True, "kept": [t.test_id for t in kept], "survivors_killed": sorted(self.bench.killed())}

    @staticmethod
    def _view(record: AddedTest) -> dict:
        return {
            "test_id": record.test_id, "kept": not record.rejected_at, "rejected_at": record.rejected_at,
            "relevance": record.relevance, "kills": record.kills,
            "checks": [{"step": c.step, "passed": c.passed, "detail": c.detail} for c in record.checks],
        }  # fmt: skip
