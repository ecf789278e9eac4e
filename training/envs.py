"""Environments the trainer rolls out in, and the episode it trains on.

An ``Episode`` is one rollout as the optimiser sees it: the whole token sequence (prompt, sampled turns,
environment tokens), which positions the policy sampled, the engine's log-probs there, the gated reward
and the oldest weight version that produced any of it.

Two environments:

* ``SWEEnv`` — the agent harness: a sandboxed rollout on a task, the final diff graded by the one
  grader, reward gated on an explicit submit (``harness.agent.loop``).
* ``ToyEnv`` — a two-turn task a tiny model learns on CPU in minutes, with the same shape of rules: a
  strict format check (turn 1 must be the call ``<call>``; turn 2 ``<answer> DIGIT``, each ended by the
  stop token), an observation from the environment between the turns, and reward only for the task's
  secret digit in a well-formed answer. ``strict=False`` is the deliberately broken recipe of the
  overfit stress test: malformed turns are "repaired" as public parsers do, and an answer counts if
  the digit appears anywhere in it, so spraying digits pays.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from harness.agent.loop import AgentConfig, rollout
from harness.agent.engine import Engine
from harness.grading.grader import grade
from harness.records import Task, TrajectoryRecord
from harness.sandboxes.sandbox import Backend


class Episode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    group_id: str
    tokens: list[int]
    mask: list[int]  # 1 where the policy sampled the token
    logprobs: list[float]  # the engine's log-prob of each sampled token, 0.0 elsewhere
    reward: float  # gated
    success: bool  # the strict criterion, whatever the reward rule (the overfit test's q)
    version: int  # oldest weight version among the sampled tokens
    termination: str


class Environment(Protocol):
    def tasks(self) -> list[str]: ...

    def rollout(self, task_id: str, engine: Engine, *, seed: int, group_id: str, rollout_id: str) -> Episode: ...


# ------------------------------------------------------------------------------------------ toy


class ToyTokenizer:
    """Ten digits and six tags: a vocabulary small enough that a tiny random model samples the format
    at all, so a short warm-up teaches it and RL has a signal from the first update."""

    TAGS = ("<call>", "<answer>", "<|im_end|>", "<user>", "<obs>", "<pad>")

    def __init__(self) -> None:
        self.ids = {tag: 10 + i for i, tag in enumerate(self.TAGS)}

    @property
    def vocab_size(self) -> int:
        return 10 + len(self.TAGS)

    @property
    def stop_id(self) -> int:
        return self.ids["<|im_end|>"]

    def encode(self, text: str) -> list[int]:
        out = []
        for word in text.split():
            out.append(self.ids[word] if word in self.ids else int(word))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(str(i) if i < 10 else self.TAGS[i - 10] for i in ids)


class ToyEnv:
    def __init__(
        self, n_tasks: int = 4, *, seed: int = 0, strict: bool = True, skill: float = 0.3, ramble: float = 0.15
    ) -> None:
        self.tok = ToyTokenizer()
        self.strict, self.skill, self.ramble = strict, skill, ramble
        rng = random.Random(seed)
        self.spec = {f"toy-{i}": [rng.randrange(10) for _ in range(3)] for i in range(n_tasks)}

    def tasks(self) -> list[str]:
        return list(self.spec)

    def prompt(self, task_id: str) -> list[int]:
        return [self.tok.ids["<user>"], *self.spec[task_id]]

    def answer(self, task_id: str, seed: int) -> int:
        """What the tool call reveals: the task is to call the tool, read the observation and answer
        with it."""
        return sum(self.spec[task_id]) % 10

    def demonstration(self, task_id: str, rng: random.Random) -> tuple[list[int], list[int]]:
        """A warm-up episode (tokens, mask): the answer is right with probability ``skill``, a random digit
        otherwise, and with probability ``ramble`` two more digits follow it (a malformed turn). RL
        starts, as in practice, from a model that mostly keeps the format, sometimes solves the task
        and sometimes rambles; the format gate is what keeps rambling from paying."""
        call = [self.tok.ids["<call>"], self.tok.stop_id]
        revealed = self.answer(task_id, rng.randrange(10))
        digit = revealed if rng.random() < self.skill else rng.randrange(10)
        extra = [rng.randrange(10), rng.randrange(10)] if rng.random() < self.ramble else []
        answer = [self.tok.ids["<answer>"], digit, *extra, self.tok.stop_id]
        prompt, obs = self.prompt(task_id), [self.tok.ids["<obs>"], revealed]
        tokens = prompt + call + obs + answer
        mask = [0] * len(prompt) + [1] * len(call) + [0] * len(obs) + [1] * len(answer)
        return tokens, mask

    def rollout(self, task_id: str, engine: Engine, *, seed: int, group_id: str, rollout_id: str) -> Episode:
        ids = self.tok.ids
        tokens, mask, logprobs = self.prompt(task_id), [0] * 4, [0.0] * 4
        versions, termination = [], "submitted"
        well_formed = True
        for turn, limit in ((0, 4), (1, 6)):
            sample = engine.generate(tokens, max_tokens=limit, seed=seed * 2 + turn, session=rollout_id)
            tokens, mask = tokens + sample.token_ids, mask + [1] * len(sample.token_ids)
            logprobs = logprobs + sample.logprobs
            versions.append(sample.weight_version)
            want = [ids["<call>"], self.tok.stop_id] if turn == 0 else None
            turn_ok = sample.token_ids == want if turn == 0 else _is_answer(sample.token_ids, self.tok)
            well_formed = well_formed and turn_ok
            if not turn_ok and self.strict:
                termination = "malformed_turn"
                break
            if turn == 0:
                obs = [ids["<obs>"], self.answer(task_id, seed)]
                tokens, mask, logprobs = tokens + obs, mask + [0] * len(obs), logprobs + [0.0] * len(obs)
        engine.end_session(rollout_id)
        answer = tokens[-len(sample.token_ids) :] if termination == "submitted" else []
        secret = self.answer(task_id, seed)
        success = well_formed and answer[1:2] == [secret]
        hit = success if self.strict else secret in answer
        return Episode(
            task_id=task_id, group_id=group_id, tokens=tokens, mask=mask, logprobs=logprobs,
            reward=1.0 if hit else 0.0, success=success, version=min(versions), termination=termination,
        )  # fmt: skip


def _is_answer(ids: Sequence[int], tok: ToyTokenizer) -> bool:
    return len(ids) == 3 and ids[0] == tok.ids["<answer>"] and ids[1] < 10 and ids[2] == tok.stop_id


# ------------------------------------------------------------------------------------------ SWE


class SWEEnv:
    """Agent rollouts on SWE tasks in sandboxes; reward from the one grader, gated on submit."""

    def __init__(self, tasks: Sequence[Task], backend: Backend, config: AgentConfig, config_hash: str) -> None:
        self.by_id = {t.instance_id: t for t in tasks}
        self.backend, self.config, self.config_hash = backend, config, config_hash

    def tasks(self) -> list[str]:
        return list(self.by_id)

    def trajectory(self, task_id: str, engine: Engine, *, seed: int, group_id: str, rollout_id: str) -> TrajectoryRecord:
        """One agent rollout, as stored: every turn, its tokens and outputs, the gated reward."""
        task = self.by_id[task_id]
        stamp = {"config_hash": self.config_hash, "task_hash": task.task_hash(), "instance_id": task_id}
        return rollout(
            task, engine, self.backend, lambda t, patch: grade(t, patch, self.backend).reward,
            config=self.config, stamp=stamp, rollout_id=rollout_id, group_id=group_id, seed=seed,
        )  # fmt: skip

    def rollout(self, task_id: str, engine: Engine, *, seed: int, group_id: str, rollout_id: str) -> Episode:
        record = self.trajectory(task_id, engine, seed=seed, group_id=group_id, rollout_id=rollout_id)
        tokens, mask, logprobs = list(record.prompt_ids), [0] * len(record.prompt_ids), [0.0] * len(record.prompt_ids)
        for turn in record.turns:
            tokens += turn.token_ids + turn.followup_ids
            mask += [1] * len(turn.token_ids) + [0] * len(turn.followup_ids)
            logprobs += turn.logprobs + [0.0] * len(turn.followup_ids)
        return Episode(
            task_id=task_id, group_id=group_id, tokens=tokens, mask=mask, logprobs=logprobs,
            reward=record.reward, success=record.reward == 1.0, version=record.weight_version,
            termination=record.termination,
        )  # fmt: skip
