"""Pipeline 2's judge loop: one privileged judge session per task, over any OpenAI-compatible chat
endpoint with tool calling.

The spine (``judge_task``): render the prompt; ask the model; run the tool calls it makes and send
back their results; stop at the first verdict the rules accept (``judge.rules``), or end the task as
``unjudgeable`` when the token budget or the turns run out, the endpoint keeps failing, or the model
will not call tools. Every message, failed request and refusal goes to a JSONL transcript as it
happens, so even a crashed session leaves its record.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
from pydantic import BaseModel, Field, ValidationError

from harness.names import file_name, under
from harness.records import Pipeline1Result, ProbeResult, Task, VerdictRecord
from harness.sandboxes.sandbox import Backend
from judge.config import JudgeConfig, JudgeSettings
from judge.prompts import (
    NUDGE,
    STRENGTHEN_NUDGE,
    STRENGTHEN_TOOL_NAMES,
    STRENGTHEN_TOOLS,
    TOOL_NAMES,
    TOOLS,
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

RETRYABLE_STATUS = {408, 409, 429}
SHOWN_BYTES = 200  # of a reply that is not a chat completion, in the reason


class EndpointFailed(RuntimeError):
    """The chat endpoint gave no usable reply after every retry (or refused the request outright)."""


class DeadlineReached(RuntimeError):
    """The task's deadline or the run's judge budget ran out; the session ends unjudgeable."""


# ------------------------------------------------------------------------------------------ transcript


class Transcript:
    """A JSONL file, one event per line, flushed as it is written."""

    def __init__(self, directory: Path, instance_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        self.path = directory / f"{file_name(instance_id)}-{stamp}-{secrets.token_hex(3)}.jsonl"
        self._file = self.path.open("a", encoding="utf-8")
        self._started = time.monotonic()

    def write(self, event: str, **data: object) -> None:
        line = {"event": event, "t": round(time.monotonic() - self._started, 3), **data}
        self._file.write(json.dumps(line, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# ------------------------------------------------------------------------------------------ endpoint


@dataclass
class Reply:
    message: dict  # the assistant message as it goes back into the conversation
    tokens: int
    finish_reason: str | None


class _Function(BaseModel):
    name: str = ""
    arguments: str = ""


class _ToolCall(BaseModel):
    id: str | None = None
    function: _Function


class _Message(BaseModel):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None
    refusal: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    total_tokens: int | None = None


class ChatCompletion(BaseModel):
    """What swedeck reads of an OpenAI chat completion; servers may send more, never less."""

    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


class RequestFailed(Exception):
    """One attempt that gave no usable reply; ``retryable`` says whether another may succeed."""

    def __init__(self, reason: str, retryable: bool) -> None:
        super().__init__(reason)
        self.retryable = retryable


def _first_bytes(data: bytes) -> str:
    return repr(data[:SHOWN_BYTES]) + (f" ... ({len(data)} bytes)" if len(data) > SHOWN_BYTES else "")


def post_json(url: str, body: dict, headers: dict[str, str], deadline: float) -> tuple[int, bytes]:
    """POST ``body`` and read the whole reply by ``deadline`` (monotonic), connect to the last byte.

    httpx's timeouts bound each socket operation, so a server that sends a byte now and then would
    never time out; a timer shuts the connection's socket down at the deadline instead, which ends
    whatever read or write is blocked on it."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise RequestFailed("no time left for a request", retryable=False)
    sockets: list[socket.socket] = []

    def trace(event: str, info: dict) -> None:
        if event == "connection.connect_tcp.complete":
            sockets.append(info["return_value"].get_extra_info("socket"))

    def cut() -> None:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(remaining, cut)
    timer.daemon = True
    received = bytearray()
    timer.start()
    try:
        with httpx.Client(timeout=remaining) as client, client.stream(
            "POST", url, json=body, headers=headers, extensions={"trace": trace}
        ) as response:
            for chunk in response.iter_raw():
                received += chunk
                if time.monotonic() > deadline:
                    break
            status = response.status_code
    except httpx.HTTPError as err:
        if time.monotonic() < deadline:
            raise RequestFailed(f"{type(err).__name__}: {str(err)[:300]}", retryable=True) from err
    finally:
        timer.cancel()
    if time.monotonic() >= deadline:
        shown = f"; {len(received)} bytes came: {_first_bytes(bytes(received))}" if received else ""
        raise RequestFailed(f"no complete reply within {remaining:.1f} s{shown}", retryable=True)
    return status, bytes(received)


def parse_reply(status: int, data: bytes) -> ChatCompletion:
    """The reply as a chat completion, or RequestFailed saying what it was instead."""
    if status != 200:
        retryable = status in RETRYABLE_STATUS or status >= 500
        raise RequestFailed(f"HTTP {status}: {_first_bytes(data)}", retryable)
    try:
        payload = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestFailed(f"HTTP 200 but not JSON: {_first_bytes(data)}", retryable=True) from None
    try:
        return ChatCompletion.model_validate(payload)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"])) or "reply"
        raise RequestFailed(
            f"HTTP 200 but not a chat completion ({where}: {first['msg']}): {_first_bytes(data)}", retryable=True
        ) from None


def complete(
    settings: JudgeSettings, config: JudgeConfig, messages: list[dict], transcript: Transcript, deadline: float,
    tools: list[dict] = TOOLS,
) -> Reply:
    """One assistant reply, each attempt bounded by ``config.timeout_s`` and all of them by
    ``deadline`` (monotonic); transient failures are retried with exponential backoff."""
    body = {
        "model": settings.model,
        "messages": messages,
        "tools": tools,
        "tool_choice": "auto",
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        **({"seed": config.seed} if config.seed is not None else {}),
    }
    headers = {"Authorization": f"Bearer {settings.resolved_api_key()}"}
    url = settings.base_url.rstrip("/") + "/chat/completions"
    attempts = config.max_retries + 1
    for attempt in range(attempts):
        if time.monotonic() >= deadline:
            raise DeadlineReached("before a reply came")
        try:
            reply = parse_reply(*post_json(url, body, headers, min(time.monotonic() + config.timeout_s, deadline)))
        except RequestFailed as err:
            transcript.write("request_failed", attempt=attempt + 1, of=attempts, error=str(err))
            if not err.retryable:
                raise EndpointFailed(f"not retried: {err}") from err
            if attempt + 1 == attempts:
                raise EndpointFailed(f"the endpoint failed {attempts} time(s); last: {err}") from err
            pause = min(config.backoff_s * 2**attempt, config.backoff_max_s, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
            continue
        choice = reply.choices[0]
        return Reply(_assistant_message(choice.message), _tokens(reply, messages), choice.finish_reason)
    raise AssertionError("unreachable")


def _assistant_message(message: _Message) -> dict:
    out: dict = {"role": "assistant", "content": message.content}
    calls = [
        {"id": call.id or f"call_{i}", "type": "function",
         "function": {"name": call.function.name, "arguments": call.function.arguments}}
        for i, call in enumerate(message.tool_calls or [])
    ]  # fmt: skip
    if calls:
        out["tool_calls"] = calls
    if message.refusal:
        out["refusal"] = message.refusal
    return out


def _tokens(reply: ChatCompletion, messages: list[dict]) -> int:
    if reply.usage is not None and reply.usage.total_tokens:
        return reply.usage.total_tokens
    return len(json.dumps(messages)) // 4  # an endpoint that reports no usage still spends the budget


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
