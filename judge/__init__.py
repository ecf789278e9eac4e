"""Pipeline 2: the privileged LLM judge (``judge_task``), its rules, and the scripted test double."""

from judge.config import JudgeConfig, JudgeSettings
from judge.loop import judge_task
from judge.scripted import ScriptedJudge

__all__ = ["JudgeConfig", "JudgeSettings", "ScriptedJudge", "judge_task"]
