"""Pipeline 2: the privileged LLM judge (``judge_task``), its rules, and the scripted test double.

The loop and the test double load on first use (PEP 562): reading a run config imports ``judge.config``
alone, not the engines behind the loop."""

from __future__ import annotations

import importlib

from judge.config import JudgeConfig, JudgeSettings

_LAZY = {"judge_task": "judge.loop", "ScriptedJudge": "judge.scripted"}

__all__ = ["JudgeConfig", "JudgeSettings", "ScriptedJudge", "judge_task"]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'judge' has no attribute {name!r}")
