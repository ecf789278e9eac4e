"""The judge's chat endpoint: one assistant reply over OpenAI-compatible HTTP within a deadline, with retries, and the JSONL transcript."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from pydantic import BaseModel, Field, ValidationError

from harness.names import file_name
from judge.config import JudgeConfig, JudgeSettings
from judge.prompts import TOOLS


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
