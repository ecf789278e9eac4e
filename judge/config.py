"""The judge's settings (where the endpoint is: environment) and config (how it judges: hashed data)."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_serializer

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"  # a local vLLM server
DEFAULT_MODEL = "judge"


class JudgeSettings(BaseModel):
    """An OpenAI-compatible chat endpoint; machine facts, never part of a config hash.

    The API key never leaves the process: it is masked in reprs and dropped when the settings are
    serialised (flows hand settings to workers as JSON), and a settings object without one reads
    SWEDECK_JUDGE_API_KEY when it is used."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = DEFAULT_BASE_URL
    model: str = DEFAULT_MODEL
    api_key: SecretStr | None = None
    scripted: bool = False  # the endpoint is the shipped test double (judge.scripted): its verdicts say judge = "scripted"

    @field_serializer("api_key")
    def _drop_key(self, value: SecretStr | None) -> None:
        return None

    def resolved_api_key(self) -> str:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        return os.environ.get("SWEDECK_JUDGE_API_KEY", "EMPTY")  # vLLM accepts any key unless started with --api-key

    @classmethod
    def from_env(cls) -> JudgeSettings:
        key = os.environ.get("SWEDECK_JUDGE_API_KEY")
        return cls(
            base_url=os.environ.get("SWEDECK_JUDGE_BASE_URL", DEFAULT_BASE_URL),
            model=os.environ.get("SWEDECK_JUDGE_MODEL", DEFAULT_MODEL),
            api_key=SecretStr(key) if key is not None else None,
        )


class JudgeConfig(BaseModel):
    """How one judge session runs. Every limit that ends a session ends it as ``unjudgeable``."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(120.0, gt=0)  # one chat request, from connecting to the reply's last byte
    task_deadline_s: float = Field(1800.0, gt=0)  # one task's whole session, requests, retries and tools
    run_budget_s: float | None = Field(None, gt=0)  # the judge's time over one Pipeline 2 run; None: no limit
    max_retries: int = Field(3, ge=0)  # per request, after the first attempt: timeouts, connection errors, 429, 5xx
    backoff_s: float = Field(1.0, ge=0)  # first wait; doubles per retry
    backoff_max_s: float = Field(30.0, ge=0)
    max_turns: int = Field(40, ge=1)  # assistant replies per task
    token_budget: int = Field(200_000, ge=1)  # prompt + completion tokens over the whole session
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(4096, ge=1)  # per reply
    seed: int | None = 0
    max_nudges: int = Field(1, ge=0)  # replies without a tool call tolerated before giving up
    shell_timeout_s: float = Field(120.0, gt=0)
    tool_output_chars: int = Field(8000, ge=200)  # what a tool result shows the model
    section_chars: int = Field(40_000, ge=1000)  # each prompt section (issue, gold, hidden tests) is cut to this


class Pipeline2Config(BaseModel):
    """Pipeline 2's part of the run config; here, beside the judge's, so that checking a config loads
    none of the engines (a mistyped value is one line within seconds)."""

    model_config = ConfigDict(extra="forbid")

    probes: bool = True  # model-free probes
    selection: bool = True  # score probes on the binding tests first; the full suite stays the final word
    differential: bool = True  # a surviving wrong probe is evidence only with an input that tells it from gold
    judge: JudgeConfig = JudgeConfig()
