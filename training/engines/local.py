"""Inference engines behind the ``harness.agent.engine.Engine`` seam: a local transformers engine and a vLLM client.

``LocalEngine`` samples token by token from a transformers causal LM (CPU tests, or one GPU) with a
KV/recurrent cache, so it serves the dense Qwen3 and the Qwen3.5 GatedDeltaNet hybrid alike.
``VLLMClient`` speaks to a vLLM server over HTTP, token-in/token-out through ``/v1/completions``, and
drives the dev/RLHF admin routes around weight updates (``shared/reference/trainer.md`` §3).
``training.engine_server`` serves the same routes on top of a ``LocalEngine``, so the client is tested
without vLLM.

Weight refresh contract (both engines): after new weights land every cache is invalidated and the
kept history of each in-flight trajectory (its prompt plus the tokens sampled so far) is prefilled again
under the new weights before the next token is sampled; a cache computed under old weights is never
extended. ``LocalEngine`` does this in place between two decoding steps. ``VLLMClient`` relies on
vLLM's ``pause(mode="abort")`` and resubmits prompt + partial output once the server resumes (option A in
the reference), with the per-version ``cache_salt`` as a guard against cross-version prefix hits.

Log-probabilities are those of the sampled token under the distribution it was sampled from: at
temperature T > 0 that is ``log_softmax(logits / T)`` (vLLM's ``processed_logprobs``; at T = 1 the raw
log-probs), at T = 0 (greedy) the raw ``log_softmax(logits)``. Against a real vLLM server that means
``--logprobs-mode processed_logprobs`` whenever T != 1.

torch and transformers are imported where the local engine uses them, so the client works on a box
without the ``train`` extra.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

from harness.agent.engine import ByteTokenizer, Engine, EngineError, FinishReason, Sample, Tokenizer

if TYPE_CHECKING:
    import httpx
    import torch

PauseMode = Literal["abort", "wait", "keep"]
PAUSE_MODES: tuple[str, ...] = ("abort", "wait", "keep")
LOCAL_MODELS: dict[str, Literal["dense", "hybrid"]] = {"tiny-dense": "dense", "tiny-hybrid": "hybrid"}
# what a server must expose for the client's whole contract (vLLM: VLLM_SERVER_DEV_MODE=1, a recent
# release for the weight-version routes, and a worker extension providing update_weights_from_path)
REQUIRED_ROUTES = (
    "/v1/completions", "/v1/models", "/pause", "/resume", "/is_paused", "/reset_prefix_cache",
    "/collective_rpc", "/update_weight_version", "/weight_info",
)  # fmt: skip
UPDATE_METHOD = "update_weights_from_path"
# an aborted request is resubmitted with its partial output; a server that aborts forever is broken
MAX_RESUBMITS = 64


class EngineUnavailable(EngineError):
    """The server could not be reached (or kept failing with 5xx) after every retry."""


class EngineTimeout(EngineError):
    """The server accepted the request but did not answer within the timeout (a paused server does this)."""


class ManagedEngine(Engine, Protocol):
    """What the trainer needs beyond sampling: pausing around weight updates and cache control."""

    @property
    def weight_version(self) -> int: ...

    def pause(self, mode: PauseMode = ...) -> None: ...

    def resume(self) -> None: ...

    def is_paused(self) -> bool: ...

    def reset_prefix_cache(self, reset_running_requests: bool = False) -> bool: ...

    def update_weights_from_path(self, path: str | Path, version: int | None = None) -> int: ...


# ------------------------------------------------------------------------------------------ local engine


@dataclass
class _CacheState:
    """A model cache holding exactly ``ids``, the next-token logits after them, and the cache epoch they
    were computed in (a state from an older epoch is never extended)."""

    ids: list[int]
    cache: Any
    logits: torch.Tensor
    epoch: int


def _checked(prompt_ids: Sequence[int], max_tokens: int = 1) -> list[int]:
    if not prompt_ids:
        raise ValueError("the prompt is empty: an engine continues at least one token")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    return [int(i) for i in prompt_ids]


def scaled_logprobs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """The log-probs a token is sampled from at ``temperature`` (0 means greedy: the raw distribution)."""
    return (logits / temperature if temperature > 0 else logits).float().log_softmax(-1)


def sample_token(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> tuple[int, float]:
    """(token, its log-prob under the distribution it was drawn from)."""
    import torch

    logprobs = scaled_logprobs(logits, temperature)
    if temperature > 0:
        token = int(torch.multinomial(logprobs.exp(), 1, generator=generator))
    else:
        token = int(logprobs.argmax())
    return token, float(logprobs[token])


def _generator(seed: int | None) -> torch.Generator:
    import torch

    # sampling runs on the CPU so a seed draws the same tokens whatever device the model is on
    return torch.Generator(device="cpu").manual_seed(seed if seed is not None else random.getrandbits(63))


class LocalEngine:
    """A transformers causal LM as an ``Engine``: token-by-token sampling with a cache, sessions that
    keep their cache across turns, and weight updates that invalidate every cache.

    Concurrency: each forward runs under one lock, so any number of threads may call ``generate`` (their
    steps interleave) while another thread updates weights; an update lands between two forwards and the
    in-flight generations re-prefill their history before their next step. A session must not be used by
    two ``generate`` calls at once.

    ``pause(mode)`` follows vLLM: new requests wait until ``resume()`` in every mode; ``keep`` freezes
    in-flight generations before their next forward, ``abort`` ends them with ``finish_reason="abort"``
    and their partial output, ``wait`` lets them finish. The default is ``keep``: the local engine
    re-prefills in place, so a frozen generation continues correctly under new weights.
    """

    def __init__(self, model: Any, tokenizer: Tokenizer, *, weight_version: int = 0) -> None:
        self.model = model.eval()  # sampling in train mode would apply dropout to the logprobs
        self.tokenizer = tokenizer
        self.weight_version = weight_version
        self.device = next(model.parameters()).device
        self.forwarded_tokens = 0  # tokens fed through the model; tells a cache hit from a re-prefill
        # one re-entrant lock for forwards, weight loads and the pause state; the condition wakes waiters
        self._cond = threading.Condition(threading.RLock())
        self._paused = False
        self._hold = False  # pause(mode="keep"): in-flight generations wait before their next forward
        self._abort_epoch = 0
        self._cache_epoch = 0
        self._inflight = 0
        self._sessions: dict[str, _CacheState] = {}

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
        """Continue ``prompt_ids`` until ``tokenizer.stop_id`` (included) or ``max_tokens``.

        With ``session``, a prompt that extends the session's cached tokens prefills only the new suffix.
        ``weight_version`` is the version the first token was sampled under (the oldest, if weights
        changed mid-generation).
        """
        context = _checked(prompt_ids, max_tokens)
        generator = _generator(seed)
        with self._cond:
            self._cond.wait_for(lambda: not self._paused)
            self._inflight += 1
            abort_epoch, version = self._abort_epoch, self.weight_version
        state = self._sessions.get(session) if session is not None else None
        tokens: list[int] = []
        logprobs: list[float] = []
        finish: FinishReason = "length"
        try:
            while len(tokens) < max_tokens:
                with self._cond:
                    self._cond.wait_for(lambda: not self._hold or self._abort_epoch != abort_epoch)
                    if self._abort_epoch != abort_epoch:
                        finish = "abort"
                        break
                    state = self._sync(state, context, extends=bool(tokens))
                token, logprob = sample_token(state.logits, temperature, generator)
                tokens.append(token)
                logprobs.append(logprob)
                context.append(token)
                if token == self.tokenizer.stop_id:
                    finish = "stop"
                    break
        finally:
            with self._cond:
                if session is not None and state is not None:
                    self._sessions[session] = state
                self._inflight -= 1
                self._cond.notify_all()
        return Sample(token_ids=tokens, logprobs=logprobs, finish_reason=finish, weight_version=version)

    def next_token_logprobs(
        self, prompt_ids: Sequence[int], *, temperature: float = 1.0, session: str | None = None
    ) -> torch.Tensor:
        """The distribution ``generate`` would sample the next token from, through the same caches."""
        context = _checked(prompt_ids)
        with self._cond:
            self._cond.wait_for(lambda: not self._paused)
            state = self._sync(self._sessions.get(session) if session is not None else None, context, extends=False)
            if session is not None:
                self._sessions[session] = state
        return scaled_logprobs(state.logits, temperature)

    def end_session(self, session: str) -> None:
        """Drop a finished trajectory's cache."""
        with self._cond:
            self._sessions.pop(session, None)

    @property
    def inflight(self) -> int:
        """Generations between admission and their last token."""
        return self._inflight

    def _sync(self, state: _CacheState | None, ids: list[int], *, extends: bool) -> _CacheState:
        """A current cache state holding exactly ``ids``: ``state`` extended by the missing suffix when it
        is from the current epoch and a prefix of ``ids`` (``extends`` says the caller knows it is), else
        a fresh prefill of all of ``ids``. Called with the lock held."""
        stale = (
            state is None
            or state.epoch != self._cache_epoch
            or len(state.ids) > len(ids)
            or not (extends or ids[: len(state.ids)] == state.ids)
        )
        if stale:
            cache = self._new_cache()
            return _CacheState(ids=list(ids), cache=cache, logits=self._forward(ids, cache), epoch=self._cache_epoch)
        assert state is not None  # not stale
        suffix = ids[len(state.ids) :]
        if suffix:
            state.logits = self._forward(suffix, state.cache)
            state.ids.extend(suffix)
        return state

    def _new_cache(self) -> Any:
        from transformers import DynamicCache

        # built from the config, a DynamicCache holds attention KV and GatedDeltaNet conv/recurrent
        # state per layer type, so dense and hybrid models share this path
        return DynamicCache(config=self.model.config)

    def _forward(self, ids: list[int], cache: Any) -> torch.Tensor:
        import torch

        with torch.inference_mode():
            out = self.model(
                input_ids=torch.tensor([ids], device=self.device), cache=cache, use_cache=True, logits_to_keep=1
            )
        self.forwarded_tokens += len(ids)
        return out.logits[0, -1].float().cpu()

    # ---- pause, caches, weights

    def pause(self, mode: PauseMode = "keep") -> None:
        """Stop admitting generations; ``keep`` freezes, ``abort`` ends, ``wait`` drains the in-flight ones.
        Returns once no forward is running (and, for ``abort``/``wait``, once none is in flight)."""
        if mode not in PAUSE_MODES:
            raise ValueError(f"unknown pause mode {mode!r}; choose from {PAUSE_MODES}")
        with self._cond:
            self._paused = True
            self._hold = mode == "keep"
            if mode == "abort":
                self._abort_epoch += 1
            self._cond.notify_all()  # generations frozen by an earlier keep now end (abort) or go on (wait)
            if mode != "keep":
                self._cond.wait_for(lambda: self._inflight == 0)

    def resume(self) -> None:
        with self._cond:
            self._paused = self._hold = False
            self._cond.notify_all()

    def is_paused(self) -> bool:
        return self._paused

    def reset_prefix_cache(self, reset_running_requests: bool = False) -> bool:
        """Drop every cache. As in vLLM it fails (False, nothing dropped) while generations are in flight,
        unless ``reset_running_requests``: then they re-prefill their history before their next step."""
        with self._cond:
            if self._inflight and not reset_running_requests:
                return False
            self._invalidate()
            return True

    def update_weights(
        self, weights: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]] | Any, version: int | None = None
    ) -> int:
        """Copy ``weights`` (a state dict, ``named_parameters()`` pairs, or a module; a subset is a partial
        update) into the model, set the version (default: the next one) and invalidate every cache.
        Returns the new version."""
        import torch

        if isinstance(weights, torch.nn.Module):
            weights = weights.state_dict()
        named = dict(weights.items() if isinstance(weights, Mapping) else weights)
        with self._cond:
            own = self.model.state_dict()  # tensors sharing storage with the parameters and buffers
            # copy_ would broadcast a wrongly shaped tensor silently, so shapes are checked first
            misfits = [
                f"{name} {tuple(tensor.shape)}"
                + (f" != {tuple(own[name].shape)}" if name in own else " (no such name)")
                for name, tensor in named.items()
                if name not in own or tensor.shape != own[name].shape
            ]
            if misfits:
                raise ValueError(f"weights that do not fit the model: {misfits[:5]}")
            with torch.no_grad():
                for name, tensor in named.items():
                    own[name].copy_(tensor)  # in place: keeps each parameter's dtype and device
            self.weight_version = self.weight_version + 1 if version is None else version
            self._invalidate()
            return self.weight_version

    def update_weights_from_path(self, path: str | Path, version: int | None = None) -> int:
        """Load a state dict saved with ``torch.save`` (the worker-extension method the server calls)."""
        import torch

        return self.update_weights(torch.load(Path(path), map_location="cpu", weights_only=True), version)

    def _invalidate(self) -> None:
        self._sessions.clear()
        self._cache_epoch += 1


# ------------------------------------------------------------------------------------------ vLLM client


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
        context = _checked(prompt_ids, max_tokens)
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


# ------------------------------------------------------------------------------------------ specs


def engine_from_spec(
    spec: str,
    model_name: str = "tiny-dense",
    *,
    tokenizer: Tokenizer | None = None,
    seed: int = 0,
    timeout: float = 60.0,
) -> LocalEngine | VLLMClient:
    """``"local"``: a ``LocalEngine`` over a tiny random model (``model_name`` ``tiny-dense`` or
    ``tiny-hybrid``, weights from ``seed``); ``"http(s)://host:port"``: a ``VLLMClient`` serving
    ``model_name``. The tokenizer defaults to the byte tokenizer the tiny models use."""
    tokenizer = tokenizer or ByteTokenizer()
    if spec == "local":
        if model_name not in LOCAL_MODELS:
            raise ValueError(f"the local engine runs {sorted(LOCAL_MODELS)}, not {model_name!r}")
        from training.models import tiny_model

        return LocalEngine(tiny_model(LOCAL_MODELS[model_name], seed=seed), tokenizer)
    if spec.startswith(("http://", "https://")):
        return VLLMClient(spec, model_name, tokenizer, timeout)
    raise ValueError(f"engine spec {spec!r} is neither 'local' nor an http(s):// URL")
