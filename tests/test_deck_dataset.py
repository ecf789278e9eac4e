"""A deck loads as a Hugging Face dataset, one split per arm, both from Parquet and from disk."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest

from curation.deck_files import arm_tasks
from curation.decks import deck_rows, write_deck
from harness.records import Task
from test_decks import IDS, p1, verdict


@pytest.fixture
def deck(sample_tasks: dict[str, Task], tmp_path: Path) -> Path:
    tasks = [sample_tasks[i] for i in IDS]
    verdicts = {IDS[0]: verdict(tasks[0], "accept"), IDS[1]: verdict(tasks[1], "issue_rewritten", "Dedupe dependencies.")}
    rows = deck_rows([(t, p1(t)) for t in tasks], verdicts, deck_id="d1", source_run="runs/x")
    write_deck(tmp_path / "deck", rows, tasks)
    return tmp_path / "deck"


def _check_arms(loaded: datasets.DatasetDict, deck: Path) -> None:
    assert sorted(loaded) == ["curated", "raw", "strengthened"]
    assert loaded["raw"]["instance_id"] == loaded["strengthened"]["instance_id"] == list(IDS)
    assert loaded["curated"]["instance_id"] == list(IDS[:2])
    for arm in loaded:
        # each row's task is the task that arm trains and grades on, issue text included
        assert [Task.model_validate_json(t) for t in loaded[arm]["task"]] == arm_tasks(deck, arm, locate=False)
    assert loaded["curated"][1]["problem_statement"] == "Dedupe dependencies."
    assert loaded["curated"][0]["evidence"] == ["p1"] and loaded["raw"][0]["config_hash"] == "c"


def test_parquet_splits_load_with_load_dataset(deck: Path, tmp_path: Path) -> None:
    data = deck / "dataset" / "data"
    files = {arm: str(data / f"{arm}.parquet") for arm in ("raw", "curated", "strengthened")}
    _check_arms(datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf")), deck)
    # the card's header names the splits, so the folder alone loads too
    _check_arms(datasets.load_dataset(str(deck / "dataset"), cache_dir=str(tmp_path / "hf2")), deck)


def test_saved_dataset_dict_loads_from_disk(deck: Path) -> None:
    _check_arms(datasets.load_from_disk(str(deck / "dataset" / "arrow")), deck)


def test_card_states_arms_counts_schema_and_provenance(deck: Path) -> None:
    card = (deck / "dataset" / "README.md").read_text()
    assert "| `raw` | 3 |" in card and "| `curated` | 2 |" in card and "| `strengthened` | 3 |" in card
    assert "| `task` | `string` |" in card and "| `problem_statement` | `string` |" in card
    assert "source runs: `runs/x`" in card and "config hashes: `c`" in card


def test_the_readme_deck_columns_table_names_every_column_and_no_other() -> None:
    """The README's table of the deck's columns is what a harness author reads; a column added or renamed
    in ``DeckRow`` (or the dataset's ``task``) must show there."""
    import re

    from harness.records import DeckRow

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme.split("### The deck's columns")[1].split("\n### ")[0]
    named = {n for line in table.splitlines() if line.startswith("| `") for n in re.findall(r"`(\w+)`", line.split("|")[1])}
    assert named == {*DeckRow.model_fields, "task"}
