"""Pipeline 2's judge loop: one privileged judge session per task, over any OpenAI-compatible chat
endpoint with tool calling.

The spine (``judge_task``): render the prompt; ask the model; run the tool calls it makes and send
back their results; stop at the first verdict the rules accept (``judge.rules``), or end the task as
``unjudgeable`` when the token budget or the turns run out, the endpoint keeps failing, or the model
will not call tools. Every message, failed request and refusal goes to a JSONL transcript as it
happens, so even a crashed session leaves its record. The endpoint and the transcript are
``judge.endpoint``.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from harness.names import under
from harness.records import Pipeline1Result, ProbeResult, Task, VerdictRecord
from harness.sandboxes.sandbox import Backend
from judge.config import JudgeConfig, JudgeSettings
from judge.endpoint import DeadlineReached, EndpointFailed, Transcript, complete
from judge.prompts import (
    NUDGE,
    STRENGTHEN_NUDGE,
    STRENGTHEN_TOOL_NAMES,
    STRENGTHEN_TOOLS,
    TOOL_NAMES,
    hidden_tests_text,
    render_messages,
    render_strengthen,
)
from judge.rules import (
    VerdictArgs,
    check_citations,
    leak_problems,
    map_verdict,
    normalise,
    refusal_message,
)
from judge.strengthen import Workbench
from judge.tools import (
    DifferentialArgs,
    FinishArgs,
    GradeArgs,
    ProposeTestArgs,
    ReviewTestArgs,
    ShellArgs,
    StrengthenTools,
    ToolSession,
)


# ------------------------------------------------------------------------------------------ tool calls


@dataclass
class Session:
    task: Task
    tools: ToolSession
    transcript: Transcript
    verdict: VerdictArgs | None = None
    refusals: list[str] = field(default_factory=list)


def _parse(call: dict, model: type[BaseModel]) -> BaseModel | str:
    raw = call["function"]["arguments"]
    try:
        data = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as err:
        return f"the arguments are not valid JSON ({err}); send one JSON object"
    if not isinstance(data, dict):
        return "the arguments must be one JSON object"
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in err.errors())
        return f"invalid arguments: {problems}"


def run_tool(call: dict, session: Session) -> dict:
    """Run one tool call; every mistake becomes an error result, never an exception."""
    name = call["function"]["name"]
    if name not in TOOL_NAMES:
        return {"error": f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}"}
    model = {"shell": ShellArgs, "grade_patch": GradeArgs, "differential": DifferentialArgs, "submit_verdict": VerdictArgs}[name]
    args = _parse(call, model)
    if isinstance(args, str):
        return {"error": args}
    if isinstance(args, ShellArgs):
        return session.tools.shell(args)
    if isinstance(args, GradeArgs):
        return session.tools.grade_patch(args)
    if isinstance(args, DifferentialArgs):
        return session.tools.differential(args)
    return submit(args, session)  # type: ignore[arg-type]


def submit(args: VerdictArgs, session: Session) -> dict:
    args = normalise(args)
    session.tools.confirm(args.evidence)
    problems = check_citations(args, session.tools.known, executed=session.tools.executed)
    if not problems and args.rewritten_issue is not None:
        task = session.task
        problems = leak_problems(
            args.rewritten_issue,
            issue=task.problem_statement,
            gold_patch=task.answer.gold_patch,
            hidden_tests=hidden_tests_text(task),
            existing=session.tools.gold_files_text(),
        )
    if problems:
        message = refusal_message(problems)
        session.refusals.append(message)
        session.transcript.write("verdict_refused", problems=problems)
        return {"accepted": False, "refused": message}
    session.verdict = args
    verdict = map_verdict(args.q1_gold_fixes_issue, args.q2_tests_grade_issue, args.q3_issue_states_requirements)
    return {"accepted": True, "verdict": verdict}


# ------------------------------------------------------------------------------------------ the spine


def judge_task(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    stamp: dict[str, str],
    *,
    settings: JudgeSettings,
    config: JudgeConfig,
    transcript_dir: Path,
    run_deadline: float | None = None,
) -> tuple[VerdictRecord, list[ProbeResult]]:
    """Judge one task kept by Pipeline 1. Returns the verdict and the probes the judge graded.

    The session ends unjudgeable at ``config.task_deadline_s`` or at ``run_deadline`` (wall-clock
    time, from the run's judge budget), whichever comes first: no request outlives it, and a tool
    call that is running when it passes ends the session once it returns."""
    started = time.monotonic()
    budget, why = config.task_deadline_s, f"task deadline reached: {config.task_deadline_s:g} s"
    if run_deadline is not None and run_deadline - time.time() < budget:
        budget, why = run_deadline - time.time(), f"the run's judge budget is spent (run_budget_s = {config.run_budget_s:g})"
    deadline = started + budget
    transcript = Transcript(Path(transcript_dir), task.instance_id)
    tools = ToolSession(
        task, p1.expected_status, backend, stamp, probes, config, under(Path(transcript_dir) / "logs", task.instance_id),
        fail_to_pass=p1.fail_to_pass,
    )
    session = Session(task, tools, transcript)
    tokens = 0

    def finish(detail: str = "") -> tuple[VerdictRecord, list[ProbeResult]]:
        args = session.verdict
        if args is None:
            record = VerdictRecord(
                **stamp, verdict="unjudgeable", q1_gold_fixes_issue=None, q2_tests_grade_issue=None,
                q3_issue_states_requirements=None, evidence=[], rewritten_issue="", rationale="",
                judge_model=settings.model, transcript_path=str(transcript.path), tokens=tokens, detail=detail,
                judge="scripted" if settings.scripted else "model",
            )  # fmt: skip
        else:
            record = VerdictRecord(
                **stamp,
                verdict=map_verdict(
                    args.q1_gold_fixes_issue, args.q2_tests_grade_issue, args.q3_issue_states_requirements
                ),
                q1_gold_fixes_issue=args.q1_gold_fixes_issue,
                q2_tests_grade_issue=args.q2_tests_grade_issue,
                q3_issue_states_requirements=args.q3_issue_states_requirements,
                evidence=args.evidence,
                rewritten_issue=args.rewritten_issue or "",
                rationale=args.rationale,
                judge_model=settings.model,
                judge="scripted" if settings.scripted else "model",
                transcript_path=str(transcript.path),
                tokens=tokens,
                detail=detail or (f"{len(session.refusals)} verdict(s) refused first" if session.refusals else ""),
            )
        transcript.write("end", verdict=record.verdict, detail=record.detail, tokens=tokens)
        return record, list(tools.written)

    nudges = 0
    try:
        messages = render_messages(task, p1, [p for p in probes if p.origin == "model_free"], config.section_chars)
        for message in messages:
            transcript.write("message", message=message)
        for turn in range(1, config.max_turns + 1):
            if tokens >= config.token_budget:
                return finish(f"token budget spent: {tokens} of {config.token_budget} tokens after {turn - 1} turn(s)")
            if time.monotonic() >= deadline:
                raise DeadlineReached(f"after {turn - 1} turn(s)")
            reply = complete(settings, config, messages, transcript, deadline)
            tokens += reply.tokens
            messages.append(reply.message)
            transcript.write(
                "message", turn=turn, message=reply.message, tokens=reply.tokens, finish_reason=reply.finish_reason
            )
            calls = reply.message.get("tool_calls", [])
            if not calls:
                said = (reply.message.get("content") or reply.message.get("refusal") or "").strip()
                if nudges >= config.max_nudges:
                    return finish(
                        f"model refused: replied without a tool call {nudges + 1} time(s); last: {said[:500]!r}"
                    )
                nudges += 1
                messages.append({"role": "user", "content": NUDGE})
                transcript.write("message", message=messages[-1], nudge=nudges)
                continue
            for call in calls:
                result = run_tool(call, session)
                tool_message = {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                messages.append(tool_message)
                transcript.write("message", message=tool_message, tool=call["function"]["name"])
                if session.verdict is not None:
                    return finish()
        return finish(f"max turns reached: {config.max_turns} replies without an accepted verdict")
    except EndpointFailed as err:
        return finish(f"endpoint failed: {err}")
    except DeadlineReached as err:
        return finish(f"{why}, {err} ({time.monotonic() - started:.1f} s)")
    except Exception as err:  # noqa: BLE001 -- our own bug: recorded as data, the run goes on
        transcript.write("internal_error", traceback=traceback.format_exc())
        return finish(f"internal error: {type(err).__name__}: {err}")
    finally:
        tools.close()
        transcript.close()


# ------------------------------------------------------------------------------------------ strengthening


def strengthen_session(bench: Workbench, settings: JudgeSettings, config: JudgeConfig, transcript_dir: Path) -> str:
    """The judge's part of strengthening one task (``judge.strengthen``): it proposes tests and reviews
    the model-free ones through ``StrengthenTools`` until it calls ``finish``; returns how the session
    ended. The same limits as a verdict session end it (turns, tokens, deadline, endpoint failures), and
    what it did until then stands: every proposal was validated as it came."""
    task = bench.ctx.task
    transcript = Transcript(Path(transcript_dir), f"{task.instance_id}-strengthen")
    bench.transcript = str(transcript.path)
    tools = StrengthenTools(bench)
    handlers = {"propose_test": (ProposeTestArgs, tools.propose_test), "review_test": (ReviewTestArgs, tools.review_test),
                "finish": (FinishArgs, tools.finish)}  # fmt: skip
    deadline = time.monotonic() + config.task_deadline_s
    tokens, nudges = 0, 0
    try:
        messages = render_strengthen(task, bench.ctx.survivors, bench.tests, bench.ctx.sources, config.section_chars)
        for message in messages:
            transcript.write("message", message=message)
        for turn in range(1, config.max_turns + 1):
            if tokens >= config.token_budget:
                return f"token budget spent after {turn - 1} turn(s)"
            reply = complete(settings, config, messages, transcript, deadline, tools=STRENGTHEN_TOOLS)
            tokens += reply.tokens
            messages.append(reply.message)
            transcript.write("message", turn=turn, message=reply.message, tokens=reply.tokens)
            calls = reply.message.get("tool_calls", [])
            if not calls:
                if nudges >= config.max_nudges:
                    return f"model refused: replied without a tool call {nudges + 1} time(s)"
                nudges += 1
                messages.append({"role": "user", "content": STRENGTHEN_NUDGE})
                continue
            for call in calls:
                name = call["function"]["name"]
                if name not in handlers:
                    result: dict = {"error": f"unknown tool {name!r}; the tools are {', '.join(STRENGTHEN_TOOL_NAMES)}"}
                else:
                    model, run = handlers[name]
                    args = _parse(call, model)
                    result = {"error": args} if isinstance(args, str) else run(args)  # type: ignore[operator]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
                transcript.write("message", message=messages[-1], tool=name)
            if tools.finished:
                return f"finished after {turn} turn(s) ({transcript.path.name})"
        return f"max turns reached: {config.max_turns}"
    except (EndpointFailed, DeadlineReached) as err:
        return f"ended early: {err}"
    finally:
        transcript.close()
