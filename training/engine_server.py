"""A small HTTP server with vLLM's token-in generation and RLHF admin routes, on top of a ``LocalEngine``.

It is the test double that lets ``VLLMClient`` be exercised end to end without vLLM (and serves a tiny
model to an agent over real HTTP in demos). Routes and bodies follow vLLM's (``shared/reference/
trainer.md`` §3): ``POST /v1/completions`` with a token-id prompt, ``POST /pause?mode=``, ``/resume``,
``GET /is_paused``, ``POST /reset_prefix_cache?reset_running_requests=``, ``POST /collective_rpc``
(``update_weights_from_path`` with a path to a ``torch.save``-d state dict, as a worker extension would
provide), ``POST /update_weight_version``, ``GET /weight_info``, ``GET /v1/models`` and ``GET /openapi.json``
listing them. Two deliberate differences: ``/reset_prefix_cache`` reports ``{"success": bool}`` (vLLM
answers an empty 200 whatever happened), and request bodies with fields the server does not implement
are rejected (400), so a client that sends something this server would ignore is caught in tests.

Each request runs in its own thread; a generation admitted while the engine is paused waits for resume.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.scripted import send_json
from training.engines import PAUSE_MODES, UPDATE_METHOD, LocalEngine, PauseMode

Answer = tuple[int, dict[str, Any]]
Route = Callable[[dict[str, str], dict[str, Any]], Answer]


class CompletionRequest(BaseModel):
    """The token-in subset of vLLM's completion request that the client sends."""

    model_config = ConfigDict(extra="forbid")

    model: str
    prompt: list[int] = Field(min_length=1)
    max_tokens: int = Field(default=16, ge=1)  # vLLM's default
    temperature: float = Field(default=1.0, ge=0.0)
    logprobs: int | None = None
    return_tokens_as_token_ids: bool = False
    return_token_ids: bool = False
    stop_token_ids: list[int] = []
    seed: int | None = None
    cache_salt: str | None = None  # no cross-request prefix cache here, so nothing to isolate


class RpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str
    args: list[str] = []
    kwargs: dict[str, str] = {}
    timeout: float | None = None


class VersionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    new_version: str


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Answer:
    return status, {"error": {"message": message, "type": kind, "code": status}}


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "false").lower() in ("1", "true", "yes")


class EngineServer:
    """``with EngineServer(engine) as url: VLLMClient(url, "tiny-dense", tokenizer)`` serves ``engine`` on
    a free local port; ``url`` is the server root (``http://127.0.0.1:PORT``)."""

    def __init__(self, engine: LocalEngine, *, model: str = "tiny-dense") -> None:
        self.engine, self.model = engine, model
        self.routes: dict[tuple[str, str], Route] = {
            ("POST", "/v1/completions"): self.completions,
            ("GET", "/v1/models"): self.models,
            ("POST", "/pause"): self.pause,
            ("POST", "/resume"): self.resume,
            ("GET", "/is_paused"): self.is_paused,
            ("POST", "/reset_prefix_cache"): self.reset_prefix_cache,
            ("POST", "/collective_rpc"): self.collective_rpc,
            ("POST", "/update_weight_version"): self.update_weight_version,
            ("GET", "/weight_info"): self.weight_info,
            ("GET", "/openapi.json"): self.openapi,
        }
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- routes

    def completions(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        request = CompletionRequest.model_validate(body)
        if request.model != self.model:
            return _error(404, f"The model `{request.model}` does not exist.", "NotFoundError")
        if request.logprobs not in (None, 0):
            return _error(400, "only logprobs=0 (the sampled token's) is served")
        other_stops = set(request.stop_token_ids) - {self.engine.tokenizer.stop_id}
        if other_stops:
            return _error(400, f"this server stops only at {self.engine.tokenizer.stop_id}, not {sorted(other_stops)}")
        sample = self.engine.generate(
            request.prompt, max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed
        )
        ids, decode = sample.token_ids, self.engine.tokenizer.decode
        choice: dict[str, Any] = {
            "index": 0,
            "text": decode(ids),
            "logprobs": None,
            "finish_reason": sample.finish_reason,
            "stop_reason": None,
        }
        if request.logprobs is not None:
            tokens = [f"token_id:{i}" if request.return_tokens_as_token_ids else decode([i]) for i in ids]
            choice["logprobs"] = {
                "tokens": tokens, "token_logprobs": sample.logprobs, "top_logprobs": None, "text_offset": [],
            }  # fmt: skip
        if request.return_token_ids:
            choice["token_ids"] = ids
        answer: dict[str, Any] = {
            "id": f"cmpl-local-{time.monotonic_ns()}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(request.prompt),
                "completion_tokens": len(ids),
                "total_tokens": len(request.prompt) + len(ids),
            },
        }
        if request.return_token_ids:
            answer["prompt_token_ids"] = request.prompt
        return 200, answer

    def models(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "swedeck"}]}

    def pause(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        mode = query.get("mode", "abort")  # vLLM's default
        if mode not in PAUSE_MODES:
            return _error(400, f"unknown pause mode {mode!r}; choose from {PAUSE_MODES}")
        self.engine.pause(cast(PauseMode, mode))
        return 200, {"status": "paused"}

    def resume(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        self.engine.resume()
        return 200, {"status": "resumed"}

    def is_paused(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        return 200, {"is_paused": self.engine.is_paused()}

    def reset_prefix_cache(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        return 200, {"success": self.engine.reset_prefix_cache(_flag(query, "reset_running_requests"))}

    def collective_rpc(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        request = RpcRequest.model_validate(body)
        if request.method != UPDATE_METHOD:
            return _error(400, f"unknown worker method {request.method!r}; this server provides {UPDATE_METHOD!r}")
        if len(request.args) != 1:
            return _error(400, f"{UPDATE_METHOD} takes one argument, the state dict's path")
        version = request.kwargs.get("version")
        loaded = self.engine.update_weights_from_path(request.args[0], int(version) if version is not None else None)
        return 200, {"results": [{"weight_version": loaded}]}  # one worker

    def update_weight_version(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        request = VersionRequest.model_validate(body)
        self.engine.weight_version = int(request.new_version)  # a label: the weights are already in place
        return 200, {"success": True, "new_version": request.new_version}

    def weight_info(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        return 200, {"weight_version": str(self.engine.weight_version)}

    def openapi(self, query: dict[str, str], body: dict[str, Any]) -> Answer:
        paths: dict[str, dict[str, Any]] = {}
        for (method, path), route in self.routes.items():
            paths.setdefault(path, {})[method.lower()] = {"summary": route.__name__}
        return 200, {"openapi": "3.1.0", "info": {"title": "swedeck engine server", "version": "0.1.0"}, "paths": paths}

    # ---- serving

    def handle(self, method: str, target: str, raw: bytes) -> Answer:
        """(HTTP status, JSON body) for one request."""
        url = urlsplit(target)
        route = self.routes.get((method, url.path.rstrip("/") or "/"))
        if route is None:
            return _error(404, f"no route {method} {url.path}", "not_found")
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        try:
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                return _error(400, "the body must be a JSON object")
            return route(query, body)
        except (ValidationError, ValueError, KeyError, FileNotFoundError) as err:  # the request's fault
            return _error(400, f"{type(err).__name__}: {err}")
        except Exception as err:  # noqa: BLE001 - reported to the client as a server error, as vLLM does
            return _error(500, f"{type(err).__name__}: {err}", "server_error")

    def __enter__(self) -> str:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _answer(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                send_json(self, *server.handle(method, self.path, raw))

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits for the loop's next poll, once per test server
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="engine-server", daemon=True
        )
        self._thread.start()
        return self.url

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not running: use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
