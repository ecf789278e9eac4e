"""A deck folder's files: where its rows and tasks lie, and an arm's tasks read back from them."""

from __future__ import annotations

from pathlib import Path

from curation.store import read_records
from harness.names import file_name
from harness.records import DeckRow, Task

DECK_FILE = "deck.parquet"
DROPPED_FILE = "dropped.parquet"
REPOS_DIR = "repos"  # the tasks' repositories as git bundles; task files name them relative to the deck


def task_file(row: DeckRow) -> str:
    """Where a row's task lives in the deck: the strengthened version apart from the original."""
    return f"tasks/{'strengthened/' if row.tests == 'strengthened' else ''}{file_name(row.instance_id)}.json"


def arm_tasks(deck: Path, arm: str, *, locate: bool = True) -> list[Task]:
    """The tasks of one arm, each with the issue text that arm gives the agent and (``locate``) its
    repository found in the deck, wherever the deck now is; without ``locate`` as stored, the
    repository named relative to the deck (what the deck's dataset carries)."""
    rows = [r for r in read_records(deck / DECK_FILE, DeckRow) if r.arm == arm]
    tasks = []
    for row in rows:
        task = Task.model_validate_json((deck / task_file(row)).read_text())
        source = task.repo_source
        if locate and source.kind != "image" and not Path(source.path).is_absolute():
            source = source.model_copy(update={"path": str((deck / source.path).resolve())})
        tasks.append(task.model_copy(update={"problem_statement": row.problem_statement, "repo_source": source}))
    return tasks


def arms(deck: Path) -> list[str]:
    return sorted({r.arm for r in read_records(deck / DECK_FILE, DeckRow)})
