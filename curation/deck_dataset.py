"""A deck as a Hugging Face dataset: one split per arm, in the two layouts ``datasets`` loads.

``DECK/dataset/data/<arm>.parquet`` with a dataset card (``README.md``: the deck's id as its title, arms
and counts, every column with its meaning from ``DeckRow``'s field descriptions, license, provenance,
config hashes, a loading snippet that runs from any folder) loads with ``datasets.load_dataset("parquet", data_files=...)`` or
``load_dataset("DECK/dataset")``; ``DECK/dataset/arrow`` is the same DatasetDict saved for
``datasets.load_from_disk``. Each row is a deck row plus ``task``: the whole task as that arm grades it
(``harness.records.Task`` as JSON: ``datasets`` has no type for the task's maps).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from curation.deck_files import DECK_FILE, arm_tasks, arms
from curation.store import arrow_schema, read_records
from harness.records import DeckRow

DATASET_DIR = "dataset"


def arm_table(deck: Path, arm: str) -> pa.Table:
    rows = [r for r in read_records(deck / DECK_FILE, DeckRow) if r.arm == arm]
    tasks = {t.instance_id: t for t in arm_tasks(deck, arm, locate=False)}  # a copied dataset names no folder of this machine
    schema = arrow_schema(DeckRow).append(pa.field("task", pa.string()))
    records = [{**r.model_dump(mode="json"), "task": tasks[r.instance_id].model_dump_json()} for r in rows]
    return pa.Table.from_pylist(records, schema=schema)


TASK_COLUMN = ("the whole task as this arm grades it (`harness.records.Task` as JSON: repository, base commit, environment, "
               "hidden tests, gold patch); keep it out of anything an agent reads")


def dataset_card(deck: Path, tables: dict[str, pa.Table]) -> str:
    """README.md: the YAML header ``datasets`` and the Hub read (splits, license), then what a reader needs."""
    all_rows = pa.concat_tables(tables.values())
    deck_ids = sorted(set(all_rows.column("deck_id").to_pylist()))
    runs = sorted(set(all_rows.column("source_run").to_pylist()))
    hashes = sorted(set(all_rows.column("config_hash").to_pylist()))
    repos = sorted({json.loads(task)["repo"] for task in all_rows.column("task").to_pylist()})
    title = ", ".join(deck_ids)
    header = ["---", f"pretty_name: {json.dumps(title)}", "license: other", "license_name: upstream-repository-licenses",
              "configs:", "- config_name: default", "  data_files:"]  # fmt: skip
    header += [f"  - split: {arm}\n    path: data/{arm}.parquet" for arm in tables]
    header += ["tags:", "- swedeck", "- software-engineering", "- reinforcement-learning", "---"]
    meanings = {name: field.description for name, field in DeckRow.model_fields.items()} | {"task": TASK_COLUMN}
    schema = "\n".join(f"| `{f.name}` | `{f.type}` | {meanings[f.name]} |" for f in next(iter(tables.values())).schema)
    counts = "\n".join(f"| `{arm}` | {t.num_rows} |" for arm, t in tables.items())
    where = json.dumps(str(deck.resolve()))
    return f"""{chr(10).join(header)}

# {title}

A swedeck deck: software-engineering RL tasks curated by swedeck, one split per arm. Rows of different
arms share instance ids, so paired arms train on the same tasks and differ only in what curation changed.

## Arms

| arm | tasks |
| --- | --- |
{counts}

- `raw`: every task Pipeline 1 kept, as the corpus states it.
- `curated`: the tasks Pipeline 2 accepted, with the judge's rewritten issue where it rewrote one.
- `strengthened`: the raw arm's tasks with test-strengthened hidden tests where they were repaired.

## Columns

| column | type | meaning |
| --- | --- | --- |
{schema}

## License

`other`: each row is a task made from an upstream repository's code, issue and tests, and keeps that
repository's license (the `repo` field of `task`). This deck's repositories: {", ".join(f"`{r}`" for r in repos)}.
The verdicts, rewritten issues and strengthened tests swedeck adds are derived from that task.

## Provenance

- source runs: {", ".join(f"`{r}`" for r in runs)}
- config hashes: {", ".join(f"`{h}`" for h in hashes)}
- written: {datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}

## Loading

```python
from pathlib import Path

import datasets
import duckdb

deck = Path({where})  # where this deck was written; point it at the deck's folder if you moved or copied it
ds = datasets.load_dataset(str(deck / "dataset"))  # this card's configs: one split per arm
ds = datasets.load_from_disk(str(deck / "dataset" / "arrow"))  # the same DatasetDict, saved
con = duckdb.connect(str(deck / "catalog.duckdb"), read_only=True)  # its tables: deck, dropped, probes
con.sql("select arm, count(*) from deck group by arm").show()
```
"""


def export_dataset(deck: Path) -> Path:
    """Write ``DECK/dataset`` from the deck's rows and tasks as they are on disk; returns the folder."""
    from datasets import Dataset, DatasetDict, disable_progress_bars
    from datasets.table import InMemoryTable

    disable_progress_bars()  # its bars would break into the CLI's own output

    out = deck / DATASET_DIR
    (out / "data").mkdir(parents=True, exist_ok=True)
    tables = {arm: arm_table(deck, arm) for arm in arms(deck)}
    for arm, table in tables.items():
        pq.write_table(table, out / "data" / f"{arm}.parquet")
    DatasetDict({arm: Dataset(InMemoryTable(t)) for arm, t in tables.items()}).save_to_disk(str(out / "arrow"))
    (out / "README.md").write_text(dataset_card(deck, tables))
    return out
