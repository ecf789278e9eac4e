"""Model-free probes of a task: generated, planned by change impact, graded against gold's pattern."""

from probes.runner.grading import run_probes
from probes.runner.task import generate, probe_task, probe_timeout

__all__ = ["generate", "probe_task", "probe_timeout", "run_probes"]
