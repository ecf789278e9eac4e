"""The local engine: a transformers causal LM sampled token by token with a cache (CPU tests, or one GPU)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.agent.engine import FinishReason, Sample, Tokenizer
from training.engines.base import PAUSE_MODES, PauseMode, checked

if TYPE_CHECKING:
    import torch


@dataclass
class _CacheState:
    """A model cache holding exactly ``ids``, the next-token logits after them, and the cache epoch they
    were computed in (a state from an older epoch is never extended)."""

    ids: list[int]
    cache: Any
    logits: torch.Tensor
    epoch: int


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
        context = checked(prompt_ids, max_tokens)
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
        context = checked(prompt_ids)
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
