"""What a killed run leaves in its run folder, removed when the next run on that folder starts.

- partial folders: ``commit_folder`` writes a task's results into a dot-named folder and renames it
  into place, so a dot-named folder (in ``p1/``, ``p2/``, ``strengthen/`` or the run folder itself) is always an
  unfinished write, as is a catalog's ``.tmp``;
- orphaned logs: a log or transcript written after a task's last committed result belongs to an
  attempt that never committed (the rerun writes its own), so it goes. Logs of committed results,
  and everything older than them, stay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

STAGE_FOLDERS = ("p1", "p2", "strengthen")


def sweep_run_folder(out: Path) -> list[Path]:
    """Remove the partial folders and orphaned logs of ``out``; returns what was removed."""
    removed = [p for root in (out, *(out / s for s in STAGE_FOLDERS)) for p in _partials(root)]
    removed += list(out.glob("*.duckdb.tmp"))
    committed = _committed(out)
    for logs in (out / "logs", out / "transcripts" / "logs"):
        for folder in sorted(logs.iterdir()) if logs.is_dir() else []:
            since = committed.get(folder.name, 0.0)
            removed += [f for f in folder.iterdir() if f.stat().st_mtime > since]
    transcripts = out / "transcripts"
    if transcripts.is_dir():
        cited = _transcripts_cited(out)
        removed += [t for t in transcripts.glob("*.jsonl") if t.name not in cited]
    for path in removed:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return removed


def _partials(root: Path) -> list[Path]:
    return sorted(p for p in root.glob(".*") if p.is_dir()) if root.is_dir() else []


def _committed(out: Path) -> dict[str, float]:
    """Each task folder name: when its last result was committed (its newest Parquet file)."""
    times: dict[str, float] = {}
    for stage in STAGE_FOLDERS:
        for table in (out / stage).glob("[!.]*/*.parquet"):
            name = table.parent.name
            times[name] = max(times.get(name, 0.0), table.stat().st_mtime)
    return times


def _transcripts_cited(out: Path) -> set[str]:
    """File names of the transcripts committed verdicts cite (unique: a time stamp and random hex;
    the stored path may be relative to wherever that run started)."""
    import pyarrow.parquet as pq

    cited = set()
    for pattern in ("p2/[!.]*/verdict.parquet", "strengthen/[!.]*/strengthening.parquet"):
        for table in out.glob(pattern):
            if "transcript_path" in pq.read_schema(table).names:
                cited.update(Path(p).name for p in pq.read_table(table, columns=["transcript_path"]).column(0).to_pylist() if p)
    return cited
