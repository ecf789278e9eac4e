"""The vLLM client: an engine over a vLLM server's HTTP API, token-in/token-out, with its weight-update routes."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from harness.agent.engine import EngineError, FinishReason, Sample, Tokenizer
from training.engines.base import PAUSE_MODES, UPDATE_METHOD, PauseMode, checked

if TYPE_CHECKING:
    import httpx

# what a server must expose for the client's whole contract (vLLM: VLLM_SERVER_DEV_MODE=1, a recent
# release for the weight-version routes, and a worker extension providing update_weights_from_path)
REQUIRED_ROUTES = (
    "/v1/completions", "/v1/models", "/pause", "/resume", "/is_paused", "/reset_prefix_cache",
    "/collective_rpc", "/update_weight_version", "/weight_info",
)  # fmt: skip
# an aborted request is resubmitted with its partial output; a server that aborts forever is broken
MAX_RESUBMITS = 64


class EngineUnavailable(EngineError):
    """The server could not be reached (or kept failing with 5xx) after every retry."""


class EngineTimeout(EngineError):
    """The server accepted the request but did not answer within the timeout (a paused server does this)."""


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body))
        return str(error.get("message", error) if isinstance(error, dict) else error)
    return str(body)


def parse_choice(choice: Mapping[str, Any]) -> tuple[list[int], list[float], str]:
    """(token ids, their log-probs, finish reason) from one ``/v1/completions`` choice.

    Ids come from ``token_ids`` (``return_token_ids``) or, on servers without it, from the logprob tokens
    written ``"token_id:<id>"`` (``return_tokens_as_token_ids``)."""
    logprobs = choice.get("logprobs") or {}
    values = logprobs.get("token_logprobs")
    ids = choice.get("token_ids")
    if ids is None:
        ids = [int(str(tok).removeprefix("token_id:")) for tok in logprobs.get("tokens") or []]
    if values is None or len(values) != len(ids):
        raise EngineError(f"the server returned {len(ids)} token ids but log-probs {values!r}")
    return [int(i) for i in ids], [float(v) for v in values], str(choice.get("finish_reason"))


class VLLMClient:
    """An ``Engine`` (and ``ManagedEngine``) over a vLLM server's HTTP API.

    The server must run with ``VLLM_SERVER_DEV_MODE=1`` (pause, prefix-cache and RPC routes) and a worker
    extension that provides ``update_weights_from_path``; the constructor asserts every route in
    ``REQUIRED_ROUTES`` is in ``/openapi.json`` so a misconfigured server fails at startup, not mid-run.
    Connection errors and 5xx answers are retried ``retries`` times with exponential backoff; a 4xx answer
    or a timeout is raised at once (a timed-out generation may still be running on the server).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        tokenizer: Tokenizer,
        timeout: float = 60.0,
        *,
        retries: int = 3,
        backoff_s: float = 0.5,
        check_routes: bool = True,
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model, self.tokenizer = model, tokenizer
        self.timeout, self.retries, self.backoff_s = timeout, retries, backoff_s
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout)
        if check_routes:
            self._check_routes()
        self._version = self.server_weight_version()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def weight_version(self) -> int:
        """The version this client last set or read; stamped on every sample it returns."""
        return self._version

    # ---- HTTP

    def _request(self, method: str, path: str, *, json: object = None, params: dict | None = None) -> Any:
        import httpx

        where = f"{method} {self.base_url}{path}"
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = self._http.request(method, path, json=json, params=params)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as err:
                failure = f"cannot reach the server: {type(err).__name__}: {err}"
                continue
            except httpx.TimeoutException as err:
                raise EngineTimeout(f"{where}: no answer within {self.timeout}s ({type(err).__name__})") from err
            if response.status_code >= 500:
                failure = f"HTTP {response.status_code}: {_error_message(response)}"
                continue
            if response.status_code >= 400:
                raise EngineError(f"{where}: HTTP {response.status_code}: {_error_message(response)}")
            return response.json() if response.content else None
        raise EngineUnavailable(f"{where}: {failure} (after {self.retries + 1} attempts)")

    def _check_routes(self) -> None:
        spec = self._request("GET", "/openapi.json")
        paths = set((spec or {}).get("paths", {})) if isinstance(spec, dict) else set()
        missing = [route for route in REQUIRED_ROUTES if route not in paths]
        if missing:
            raise EngineError(
                f"{self.base_url} lacks routes {missing}: start vLLM with VLLM_SERVER_DEV_MODE=1, a release "
                f"with the weight-transfer routes, and --worker-extension-cls training.vllm_worker.WeightsFromPath"
            )

    # ---- sampling

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float = 1.0,
        seed: int | None = None,
        session: str | None = None,
    ) -> Sample:
        """Token-in/token-out through ``/v1/completions``. A request aborted by ``pause(mode="abort")`` is
        resubmitted with its partial output appended to the prompt (it waits on the server until
        ``resume``), so the rest is sampled after a full prefill under the weights then current.
        ``session`` is not sent: vLLM's automatic prefix cache finds a conversation's earlier turns by
        their tokens."""
        context = checked(prompt_ids, max_tokens)
        version = self._version
        tokens: list[int] = []
        logprobs: list[float] = []
        for _ in range(MAX_RESUBMITS):
            ids, values, finish = self._complete(context + tokens, max_tokens - len(tokens), temperature, seed)
            tokens += ids
            logprobs += values
            if finish != "abort":
                break
            if len(tokens) >= max_tokens:
                finish = "length"
                break
        else:
            raise EngineError(f"{self.base_url} aborted the same request {MAX_RESUBMITS} times")
        if finish not in ("stop", "length"):
            raise EngineError(f"{self.base_url} ended a completion with finish_reason {finish!r}")
        reason: FinishReason = "stop" if finish == "stop" else "length"
        return Sample(token_ids=tokens, logprobs=logprobs, finish_reason=reason, weight_version=version)

    def _complete(
        self, prompt: list[int], max_tokens: int, temperature: float, seed: int | None
    ) -> tuple[list[int], list[float], str]:
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "logprobs": 0,
            "return_tokens_as_token_ids": True,
            "return_token_ids": True,
            "stop_token_ids": [self.tokenizer.stop_id],
            "seed": seed,
            "cache_salt": f"weights-v{self._version}",
        }
        answer = self._request("POST", "/v1/completions", json=body)
        choices = (answer or {}).get("choices") or []
        if len(choices) != 1:
            raise EngineError(f"{self.base_url} returned {len(choices)} choices for one prompt")
        return parse_choice(choices[0])

    # ---- admin

    def end_session(self, session: str) -> None:
        pass  # the server keeps no per-session state

    def pause(self, mode: PauseMode = "abort") -> None:
        """Default ``abort``: ``generate`` resubmits aborted requests, and unlike ``keep`` that does not
        depend on vLLM recomputing a preempted request's GDN state (an open question in the reference)."""
        if mode not in PAUSE_MODES:
            raise ValueError(f"unknown pause mode {mode!r}; choose from {PAUSE_MODES}")
        self._request("POST", "/pause", params={"mode": mode})

    def resume(self) -> None:
        self._request("POST", "/resume")

    def is_paused(self) -> bool:
        return bool(self._request("GET", "/is_paused")["is_paused"])

    def reset_prefix_cache(self, reset_running_requests: bool = False) -> bool:
        """True when the server reports the reset done. vLLM's route answers an empty 200 whatever happened,
        so against vLLM this is True unless the request failed; servers that report ``success`` are read."""
        answer = self._request(
            "POST", "/reset_prefix_cache", params={"reset_running_requests": str(reset_running_requests).lower()}
        )
        return bool(answer.get("success", True)) if isinstance(answer, dict) else True

    def collective_rpc(self, method: str, args: Sequence[str] = (), kwargs: Mapping[str, str] | None = None) -> list:
        """Call ``method`` on every worker (string arguments only, as vLLM's route takes)."""
        body = {"method": method, "args": list(args), "kwargs": dict(kwargs or {})}
        answer = self._request("POST", "/collective_rpc", json=body)
        return list((answer or {}).get("results") or [])

    def update_weights_from_path(self, path: str | Path, version: int | None = None) -> int:
        """Load the state dict at ``path`` (readable by the server) on every worker, record the version,
        and reset the prefix cache, running requests included. Call it between ``pause`` and ``resume``."""
        version = self._version + 1 if version is None else version
        self.collective_rpc(UPDATE_METHOD, [str(path)], {"version": str(version)})
        self._request("POST", "/update_weight_version", json={"new_version": str(version)})
        if not self.reset_prefix_cache(reset_running_requests=True):
            raise EngineError(f"{self.base_url} loaded weights v{version} but did not reset its prefix cache")
        self._version = version
        return version

    def server_weight_version(self) -> int:
        """The version the server reports (``GET /weight_info``; none recorded reads as 0)."""
        value = (self._request("GET", "/weight_info") or {}).get("weight_version")
        try:
            return int(value) if value is not None else 0
        except ValueError as err:
            raise EngineError(f"{self.base_url} reports a non-integer weight version {value!r}") from err
