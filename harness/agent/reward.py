"""Gated reward: when a trajectory ends, what it earns, and its group advantage. Pure functions.

A trajectory earns the grader's reward only if it submits explicitly. A malformed turn, a repeated
identical tool call, or running out of turns or tokens ends it at once with reward 0, and the gate is
applied *before* group advantages are computed, so no repaired or unfinished behaviour shares a
positive reward (issue 5, "Gated reward").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.records import Termination, TurnRecord
from harness.agent.turns import TurnCheck

SUBMIT = "submit"


def terminate(
    turns_so_far: Sequence[TurnRecord],
    check: TurnCheck,
    *,
    max_turns: int,
    max_tokens: int,
    tokens_used: int,
) -> Termination | None:
    """Decide, right after a turn is sampled and checked, whether the trajectory ends with it.

    ``turns_so_far`` are the earlier turns (not the one just checked); ``tokens_used`` counts every
    token of the trajectory including this turn. Returns None when the loop should execute the call
    and sample another turn. Rules, first match wins:

    1. the turn failed the raw-turn check -> ``malformed_turn``; except a truncated turn once the token
       budget is spent, which is ``max_tokens`` (the budget cut it, not the grammar);
    2. the call is ``submit`` -> ``submitted`` (a submit on the last allowed turn still counts);
    3. the call has the same name and arguments as the previous call -> ``repeated_call``;
    4. this turn is the ``max_turns``-th -> ``max_turns``; ``tokens_used >= max_tokens`` -> ``max_tokens``.
       Its call is not executed: no turn would follow to read the output.
    """
    if not check.ok:
        if check.error_class == "truncated_turn" and tokens_used >= max_tokens:
            return "max_tokens"
        return "malformed_turn"
    if check.name == SUBMIT:
        return "submitted"
    previous = next((t.call for t in reversed(turns_so_far) if t.call is not None), None)
    if previous is not None and previous.name == check.name and previous.arguments == (check.arguments or {}):
        return "repeated_call"
    if len(turns_so_far) + 1 >= max_turns:
        return "max_turns"
    if tokens_used >= max_tokens:
        return "max_tokens"
    return None


def gated_reward(termination: Termination, grader_reward: float | None) -> float:
    """The grader's reward if the trajectory submitted explicitly; 0.0 for every other ending."""
    if termination != "submitted" or grader_reward is None:
        return 0.0
    reward = float(grader_reward)
    if not math.isfinite(reward):
        raise ValueError(f"grader reward is not finite: {grader_reward!r}")
    return reward


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """A_i = r_i - mean(r) over one group (no division by the std). Pass *gated* rewards."""
    if not rewards:
        return []
    mean = sum(rewards) / len(rewards)
    return [float(r) - mean for r in rewards]
