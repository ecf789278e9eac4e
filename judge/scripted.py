"""A scripted judge model behind a real OpenAI-compatible HTTP endpoint: the test double that drives
the real judge loop (real ``openai`` client, real local HTTP, real sandboxes) without a model.

``ScriptedJudge`` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` from a thread. Each
request is answered by a *policy*: a pure function of the conversation so far (messages and tool
results) that returns the next assistant message, with tool calls in the OpenAI wire format and
``usage`` token counts. The server is stateless between requests, like a model.

Policies (``judge.scripted_policies``): ``labelled`` plays the sample corpus and data/real from their
labels, and the strengthening sessions of the sample's too-loose tasks.

Faults (``fault=``), for the first ``fault_requests`` requests or all of them:

``timeout``  sleep past any client timeout; ``http_500``  answer 500;
``malformed_tool_call``  invalid JSON arguments and unknown tool names, alternately;
``refusal``  plain text and no tool call; ``forever``  keep calling shell, never submit.

Wire faults, what a broken server or proxy does to the bytes: ``slow_drip``  a valid reply, one byte
every ``drip_s``; ``hang``  accept the request and never answer; ``non_json``  a 200 HTML page;
``wrong_shape``  200 JSON that is not a chat completion.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from judge.scripted_policies import FAULT_POLICIES, POLICIES, Message

FAULTS = ("timeout", "http_500", "malformed_tool_call", "refusal", "forever", "slow_drip", "hang", "non_json", "wrong_shape")


# ------------------------------------------------------------------------------------------ wire format


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: object) -> None:
    """One JSON response; a client that already gave up (timed out) is not an error of the server."""
    data = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _tokens(value: object) -> int:
    return max(1, len(json.dumps(value)) // 4)


def completion(message: Message, messages: list[Message], model: str) -> dict:
    calls = message.get("tool_calls") or []
    prompt_tokens, completion_tokens = _tokens(messages), _tokens(message)
    return {
        "id": f"chatcmpl-scripted-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": message.get("content"),
                    **({"tool_calls": calls} if calls else {}),
                },
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def request_problem(body: object) -> str:
    """What a real server would reject the request for (HTTP 400), or ''."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return "'messages' must be a non-empty list"
    if not isinstance(body.get("model"), str):
        return "'model' is required"
    pending: set[str] = set()
    for m in body["messages"]:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in pending:
                return f"tool message for an unknown tool_call_id {m.get('tool_call_id')!r}"
            pending.discard(m["tool_call_id"])
            continue
        if pending:
            return f"tool calls {sorted(pending)} have no tool message"
        pending = {c["id"] for c in m.get("tool_calls") or []}
    return ""


# ------------------------------------------------------------------------------------------ wire faults

WIRE_FAULTS = ("slow_drip", "hang", "non_json", "wrong_shape")
NON_JSON_PAGE = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
WRONG_SHAPE = {"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"index": 0, "message": "I am a string"}]}


def send_wire_fault(handler: BaseHTTPRequestHandler, judge: ScriptedJudge, fault: str, reply: dict) -> None:
    """Answer as a broken server would; ``reply`` is the valid completion a drip sends slowly."""
    if fault == "hang":
        judge._stop.wait()
        return
    kind, data = {
        "slow_drip": ("application/json", json.dumps(reply).encode()),
        "non_json": ("text/html", NON_JSON_PAGE),
        "wrong_shape": ("application/json", json.dumps(WRONG_SHAPE).encode()),
    }[fault]
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if fault != "slow_drip":
            handler.wfile.write(data)
            return
        for i in range(len(data)):
            if judge._stop.wait(judge.drip_s):
                return
            handler.wfile.write(data[i : i + 1])
            handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        pass


class ScriptedJudge:
    """``with ScriptedJudge("labelled", fault=None) as base_url: ...`` serves the policy on a free
    local port; ``requests`` counts the chat requests received."""

    def __init__(
        self,
        policy: str = "labelled",
        fault: str | None = None,
        *,
        fault_requests: int | None = None,
        model: str = "scripted-judge",
        sleep_s: float = 30.0,
        drip_s: float = 0.2,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose from {sorted(POLICIES)}")
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; choose from {FAULTS}")
        self.policy, self.fault, self.fault_requests = POLICIES[policy], fault, fault_requests
        self.model, self.sleep_s, self.drip_s = model, sleep_s, drip_s
        self.requests = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _faulty(self) -> str | None:
        with self._lock:
            self.requests += 1
            n = self.requests
        if self.fault is None or (self.fault_requests is not None and n > self.fault_requests):
            return None
        return self.fault

    def answer(self, body: dict, fault: str | None) -> tuple[int, dict]:
        """(HTTP status, JSON body) for one chat request under ``fault``."""
        problem = request_problem(body)
        if problem:
            return 400, {"error": {"message": problem, "type": "invalid_request_error"}}
        if fault == "timeout":
            self._stop.wait(self.sleep_s)
        if fault == "http_500":
            return 500, {"error": {"message": "scripted internal server error", "type": "server_error"}}
        policy = FAULT_POLICIES.get(fault or "", self.policy)
        return 200, completion(policy(body["messages"]), body["messages"], self.model)

    def __enter__(self) -> str:
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, payload: dict) -> None:
                send_json(self, status, payload)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(
                        200, {"object": "list", "data": [{"id": judge.model, "object": "model", "owned_by": "swedeck"}]}
                    )
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                except (ValueError, json.JSONDecodeError) as err:
                    self._send(400, {"error": {"message": f"body is not JSON: {err}", "type": "invalid_request_error"}})
                    return
                fault = None if request_problem(body) else judge._faulty()
                if fault in WIRE_FAULTS:
                    send_wire_fault(self, judge, fault, judge.answer(body, None)[1])
                else:
                    self._send(*judge.answer(body, fault))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-judge", daemon=True)
        self._thread.start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
