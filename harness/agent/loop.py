"""The agent loop: two tools, an explicit submit, a raw-turn check before anything runs, gated reward.

In the style of mini-swe-agent: one sandbox of the task (the buggy tree, no hidden tests, no network,
sealed git history), a prompt built only from the task's agent view, and a loop that samples one turn,
checks its raw text against the Qwen3.5 grammar, executes the single call and appends the output.
History is the exact token ids sampled plus the tokenised tool outputs; nothing is re-rendered from
parsed calls. When the loop ends, the diff of the tree is graded by the one grader in a fresh sandbox,
and only an explicit submit earns that reward.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, NonNegativeFloat, PositiveFloat, PositiveInt

from harness.agent.engine import Engine, EngineError, assistant_prefix, message, tool_response
from harness.records import (
    AgentTask,
    ExecResult,
    Task,
    Termination,
    ToolCall,
    TrajectoryRecord,
    TurnRecord,
)
from harness.agent.reward import gated_reward, terminate
from harness.sandboxes.sandbox import Backend, EnvError, Sandbox, SandboxError
from harness.agent.turns import check_turn

Grader = Callable[[Task, str], float]


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_turns: PositiveInt = 100
    max_tokens: PositiveInt = 131_072  # the whole trajectory: prompt, sampled turns and tool outputs
    max_turn_tokens: PositiveInt = 8192  # one sampled turn
    command_timeout_s: PositiveFloat = 120.0
    output_chars: PositiveInt = 10_000  # tool output shown to the model, head and tail; the record keeps it all
    temperature: NonNegativeFloat = 1.0
    thinking: bool = True


SYSTEM = """You are a software engineer fixing an issue in the repository at {workdir}.
You have three functions. Call exactly one per turn, in this format:

<tool_call>
<function=NAME>
<parameter=KEY>
VALUE
</parameter>
</function>
</tool_call>

- execute_bash(command): run a bash command in {workdir} (no network; {timeout:.0f} s per command).
- edit_via_str_replace(path, old_str, new_str): replace the one exact occurrence of old_str in the file
  at path with new_str. Whitespace counts; zero or several occurrences is an error and nothing changes.
- submit(): end the task; your changes to the repository are then evaluated.

Only a submitted fix is evaluated."""


def system_prompt(view: AgentTask, config: AgentConfig) -> str:
    return SYSTEM.format(workdir=view.workdir, timeout=config.command_timeout_s)


def str_replace(text: str, old: str, new: str) -> tuple[str | None, str]:
    """Exact-once replacement: (new text, "") or (None, the error the model reads). No tab expansion,
    no whitespace stripping: the model must quote the file as it is."""
    if old == "":
        return None, "old_str is empty; quote the exact text to replace"
    count = text.count(old)
    if count != 1:
        where = "not found" if count == 0 else f"found {count} times; include more context so it is unique"
        return None, f"old_str {where}. No change was made."
    return text.replace(old, new, 1), ""


def shown(output: str, limit: int) -> str:
    """Head and tail of a tool output for the model, with how much was left out."""
    if len(output) <= limit:
        return output
    half = limit // 2
    return f"{output[:half]}\n[... {len(output) - 2 * half} characters omitted ...]\n{output[-half:]}"


def _bash(sandbox: Sandbox, command: str, config: AgentConfig) -> tuple[str, int | None]:
    result = sandbox.run(command, timeout=config.command_timeout_s)
    output = Path(result.log_path).read_text(errors="replace")
    if result.timed_out:
        output += f"\n[command timed out after {config.command_timeout_s:.0f} s and was killed]"
    elif result.output_limited:
        output += "\n[output limit reached; the command was killed]"
    else:
        output += f"\n[exit code {result.exit_code}]"
    return output, result.exit_code


def _edit(sandbox: Sandbox, args: dict[str, str]) -> tuple[str, int | None]:
    path = args["path"]
    try:
        before = sandbox.read_file(path).decode()
    except (FileNotFoundError, ValueError, UnicodeDecodeError) as err:
        return f"cannot edit {path}: {type(err).__name__}: {err}", 1
    after, error = str_replace(before, args["old_str"], args["new_str"])
    if after is None:
        return error, 1
    sandbox.write_file(path, after)
    return f"edited {path}", 0


def execute(sandbox: Sandbox, call: ToolCall, config: AgentConfig) -> tuple[str, int | None]:
    if call.name == "execute_bash":
        return _bash(sandbox, call.arguments["command"], config)
    return _edit(sandbox, call.arguments)


def final_diff(sandbox: Sandbox, base: str) -> str:
    """Everything the agent changed in the tree (added files too), against the commit it started from,
    whatever it did to HEAD or the index meanwhile."""
    done: ExecResult = sandbox.run(
        f"git add -A . >/dev/null 2>&1; git diff --cached --binary {shlex.quote(base)}", timeout=120
    )
    if done.exit_code != 0:
        raise SandboxError(f"could not take the final diff: {done.output[-400:]}")
    return Path(done.log_path).read_text(errors="replace")


def rollout(
    task: Task,
    engine: Engine,
    backend: Backend,
    grader: Grader,
    *,
    config: AgentConfig,
    stamp: dict[str, str],
    rollout_id: str,
    group_id: str,
    seed: int | None = None,
) -> TrajectoryRecord:
    """One trajectory on ``task``: sample, check, execute until it ends; then the gated reward."""
    tok = engine.tokenizer
    view = task.agent_view()
    prompt = message("system", system_prompt(view, config)) + message("user", view.problem_statement)
    history = prompt_ids = tok.encode(prompt + assistant_prefix(config.thinking))
    turns: list[TurnRecord] = []
    termination: Termination | None = None
    detail, patch, version = "", "", 0
    try:
        sandbox = backend.open(task)
    except (EnvError, SandboxError) as err:
        return _record(stamp, rollout_id, group_id, version, prompt_ids, turns, "env_error", "", None, str(err))
    try:
        base = sandbox.run("git rev-parse HEAD", timeout=60).output.strip()
        while termination is None:
            budget = min(config.max_turn_tokens, config.max_tokens - len(history))
            if budget <= 0:
                termination = "max_tokens"
                break
            sample = engine.generate(
                history, max_tokens=budget, temperature=config.temperature,
                seed=None if seed is None else seed + len(turns), session=rollout_id,
            )  # fmt: skip
            version = sample.weight_version if not turns else min(version, sample.weight_version)
            raw = tok.decode(sample.token_ids)
            check = check_turn(raw, thinking=config.thinking, finish_reason=sample.finish_reason)
            history = history + sample.token_ids
            turn = TurnRecord(
                index=len(turns), raw=raw, token_ids=sample.token_ids, logprobs=sample.logprobs,
                check_error="" if check.ok else (check.error_class or "malformed"),
                call=ToolCall(name=check.name, arguments=check.arguments or {}) if check.ok else None,
            )  # fmt: skip
            termination = terminate(
                turns, check, max_turns=config.max_turns, max_tokens=config.max_tokens, tokens_used=len(history)
            )
            if termination is None and turn.call is not None:
                started = time.monotonic()
                output, turn.exit_code = execute(sandbox, turn.call, config)
                turn.duration_s = round(time.monotonic() - started, 4)
                turn.output, turn.output_shown = output, shown(output, config.output_chars)
                turn.followup_ids = tok.encode(tool_response(turn.output_shown) + assistant_prefix(config.thinking))
                history = history + turn.followup_ids
            turns.append(turn)
        patch = final_diff(sandbox, base)
    except (EnvError, SandboxError, EngineError) as err:
        termination, detail = "env_error", f"{type(err).__name__}: {err}"
    finally:
        engine.end_session(rollout_id)
        sandbox.close()
    grader_reward = None
    if termination == "submitted":
        try:
            grader_reward = grader(task, patch)
        except (EnvError, SandboxError) as err:  # the grader answers for the patch; these are the machine's
            termination, detail = "env_error", f"grading: {type(err).__name__}: {err}"
    return _record(stamp, rollout_id, group_id, version, prompt_ids, turns, termination, patch, grader_reward, detail)


def _record(
    stamp: dict[str, str],
    rollout_id: str,
    group_id: str,
    version: int,
    prompt_ids: list[int],
    turns: list[TurnRecord],
    termination: Termination,
    patch: str,
    grader_reward: float | None,
    detail: str,
) -> TrajectoryRecord:
    return TrajectoryRecord(
        **stamp,
        rollout_id=rollout_id,
        group_id=group_id,
        weight_version=version,
        prompt_ids=prompt_ids,
        turns=turns,
        termination=termination,
        submitted=termination == "submitted",
        patch=patch,
        grader_reward=grader_reward,
        reward=gated_reward(termination, grader_reward),
        detail=detail,
    )
