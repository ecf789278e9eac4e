"""The inference-engine seam: how the agent loop and the trainer sample tokens from a policy.

An engine continues a prompt given as token ids and returns the exact sampled ids with their per-token
log-probabilities, so a trajectory keeps what was sampled and history is never re-rendered from parsed
calls. Implementations live in ``training.engines`` (a local transformers engine, a client for vLLM
servers); ``ScriptedEngine`` here is the deliberate test double that plays fixed turns.

The chat framing is Qwen's: ``<|im_start|>ROLE\\n ... <|im_end|>\\n``, the assistant turn opened with
``<think>\\n`` by the prompt, tool output returned as a user message wrapped in ``<tool_response>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (
    IM_START, IM_END, "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
    "<|endoftext|>",
)  # fmt: skip
FinishReason = Literal["stop", "length", "abort"]


class EngineError(RuntimeError):
    """The engine could not sample (server unreachable, timed out, refused): the rollout ends with
    ``env_error`` and the reason, it is not the policy's fault."""


class Sample(BaseModel):
    """One sampled continuation: ids and log-probs of the sampled tokens, and the weights used."""

    model_config = ConfigDict(extra="forbid")

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    weight_version: int = 0


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str:
        """Special tokens kept: the raw-turn check reads them."""
        ...

    @property
    def stop_id(self) -> int:
        """The id of ``<|im_end|>``, where an assistant turn ends."""
        ...


class Engine(Protocol):
    tokenizer: Tokenizer

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float = 1.0,
        seed: int | None = None,
        session: str | None = None,
    ) -> Sample:
        """Continue ``prompt_ids`` until ``tokenizer.stop_id`` (included in the sample) or ``max_tokens``.
        ``session`` names a multi-turn conversation whose cache the engine may keep between calls."""
        ...

    def end_session(self, session: str) -> None:
        """The conversation is over: its cache may go."""
        ...


class ByteTokenizer:
    """Bytes as ids 0-255, the chat and tool tags as single ids above them: a tokenizer for tiny models
    built from a config (no download), and for the scripted engine."""

    def __init__(self) -> None:
        self.special = {tok: 256 + i for i, tok in enumerate(SPECIAL_TOKENS)}
        self.by_id = {i: tok for tok, i in self.special.items()}
        # longest first, so no special token is split by a shorter one that prefixes it
        self._order = sorted(self.special, key=len, reverse=True)

    @property
    def vocab_size(self) -> int:
        return 256 + len(self.special)

    @property
    def stop_id(self) -> int:
        return self.special[IM_END]

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        i = 0
        while i < len(text):
            tok = next((t for t in self._order if text.startswith(t, i)), None)
            if tok is not None:
                ids.append(self.special[tok])
                i += len(tok)
                continue
            nxt = min((p for p in (text.find(t, i) for t in self._order) if p >= 0), default=len(text))
            ids.extend(text[i:nxt].encode())
            i = nxt
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        out, pending = [], bytearray()
        for i in ids:
            if i < 256:
                pending.append(i)
                continue
            out.append(pending.decode(errors="replace"))
            pending = bytearray()
            out.append(self.by_id.get(i, ""))
        out.append(pending.decode(errors="replace"))
        return "".join(out)


def message(role: str, text: str) -> str:
    return f"{IM_START}{role}\n{text}{IM_END}\n"


def assistant_prefix(thinking: bool = True) -> str:
    """What the prompt ends with so the model writes an assistant turn (the template opens the think block)."""
    return f"{IM_START}assistant\n" + ("<think>\n" if thinking else "<think>\n\n</think>\n\n")


def tool_response(output: str) -> str:
    """A tool's output as the next user message, closing the assistant turn's trailing newline."""
    return "\n" + message("user", f"<tool_response>\n{output}\n</tool_response>")


class ScriptedEngine:
    """Test double: plays a fixed list of raw assistant turns, one per call, whatever the prompt.

    Each turn is returned as the tokens of its text with log-prob 0 (the script is certain); a turn
    longer than ``max_tokens`` is cut there with ``finish_reason="length"``, as a real engine would.
    It records the prompts it was given so tests can check what the model saw.
    """

    def __init__(self, turns: Sequence[str], tokenizer: Tokenizer | None = None) -> None:
        self.turns = list(turns)
        self.tokenizer = tokenizer or ByteTokenizer()
        self.prompts: list[list[int]] = []

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float = 1.0,
        seed: int | None = None,
        session: str | None = None,
    ) -> Sample:
        self.prompts.append(list(prompt_ids))
        if not self.turns:
            raise RuntimeError("the scripted engine has no turns left")
        ids = self.tokenizer.encode(self.turns.pop(0))
        finish: FinishReason = "stop" if len(ids) <= max_tokens else "length"
        ids = ids[:max_tokens]
        return Sample(token_ids=ids, logprobs=[0.0] * len(ids), finish_reason=finish)

    def end_session(self, session: str) -> None:
        pass  # nothing is cached
