"""Test strengthening (the stage's spine is ``judge.strengthen.stage``): the names used outside the package."""

from judge.strengthen.stage import (
    confirmed_survivors,
    eligible,
    finished,
    process_task,
    records,
    result_path,
    strengthen,
)
from judge.strengthen.validation import GOLD_RUNS, Workbench
from judge.strengthen.writing import Candidate

__all__ = [
    "GOLD_RUNS",
    "Candidate",
    "Workbench",
    "confirmed_survivors",
    "eligible",
    "finished",
    "process_task",
    "records",
    "result_path",
    "strengthen",
]
