"""``swedeck deck``, ``dedup``, ``arms``, ``query``: build a deck, cluster runs' fixes, train a deck's arms, SQL over a catalog."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import (
    ConfigOpt, EvalOpt, JsonOpt, SetOpt, _config, _console, _print_errors, _progress, _stdout, _user_error, _with_evals,
)
from flows.cli.train import _preflight, supervised

app = typer.Typer()  # added to swedeck's app without a name: its commands are top-level ones


def _dedup_line(d: dict) -> str:
    merged = ", ".join(f"{rule} {n}" for rule, n in d["merged_pairs"].items()) or "none"
    reported = ", ".join(f"{rule} {n}" for rule, n in d["reported_pairs"].items()) or "none"
    return (f"fixes: {d['fixes']} in {d['tasks']} tasks (pairs merged: {merged}; near-duplicates reported: {reported}); "
            f"contaminated: {d['contaminated_tasks']} exact, {d['eval_repo_tasks']} of an eval repository")  # fmt: skip


@app.command()
def deck(
    run_dir: Annotated[Path, typer.Argument(help="a `swedeck curate` run folder")],
    out: Annotated[Path, typer.Option("--out", "-o", help="deck folder")] = Path("decks/sample"),
    deck_id: Annotated[str | None, typer.Option("--id", help="deck id (default: the folder name)")] = None,
    scripted_verdicts: Annotated[bool, typer.Option("--scripted-verdicts", help="let the scripted judge's verdicts (a test double, "
                                 "judge = scripted) admit tasks to the curated arm")] = False,  # fmt: skip
    config: ConfigOpt = None,
    overrides: SetOpt = None,
) -> None:
    """Build a deck from a curate run: the raw arm (every task Pipeline 1 kept), the curated arm (tasks
    Pipeline 2 accepted, with rewritten issues) and the strengthened arm (the raw arm's tasks, with the
    strengthened hidden tests where strengthening added tests). One task per upstream fix (the run's
    clusters), contaminated ones dropped by dedup.policy; dropped.parquet says what was left out."""
    if not (run_dir / "p1").is_dir():
        _user_error(f"{run_dir} has no Pipeline 1 results; run `swedeck curate --out {run_dir}` first")
    cfg = _config(config, overrides, None)
    import os

    from curation.decks import KEEP, deck_rows, dedupe, verified_task, write_deck
    from curation.pipeline1 import kept_tasks
    from curation.store import read_records
    from harness.records import ProbeResult
    from judge.pipeline2 import result_path, verdicts
    from judge.strengthen import records

    judged = verdicts(run_dir)
    every = kept_tasks(run_dir)
    kept, selection = dedupe(run_dir, every, judged, cfg.dedup)
    if not kept:  # a deck of no task would be a folder of empty tables no loader accepts
        _user_error(f"{run_dir}: no task for a deck: Pipeline 1 kept {len(every)}" + (", and dedup.policy dropped them all" if every else ""))
    strengthened = records(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    source_run = os.path.relpath(run_dir.resolve(), out.resolve())  # the deck moves with its run, or names it by a relative path
    rows = deck_rows(kept, judged, deck_id=deck_id or out.name, source_run=source_run, strengthened=strengthened, selection=selection,
                     scripted_verdicts=scripted_verdicts)  # fmt: skip
    tables = [result_path(run_dir, t.instance_id) / "probes.parquet" for t, _ in kept]
    probes = [p for path in tables if path.exists() for p in read_records(path, ProbeResult)]
    write_deck(out, rows, [verified_task(task, p1) for task, p1 in kept], strengthened, selection.dropped if selection else (), probes)
    counts = {arm: sum(r.arm == arm for r in rows) for arm in sorted({r.arm for r in rows})}
    repaired = sum(r.arm == "strengthened" and r.tests == "strengthened" for r in rows)
    _console().print(f"deck {out}: " + ", ".join(f"{arm} {n}" for arm, n in counts.items())
                     + f" ({repaired} with strengthened tests) · catalog {out / 'catalog.duckdb'}", highlight=False, soft_wrap=True)  # fmt: skip
    held_back = [t.instance_id for t, _ in kept if (v := judged.get(t.instance_id)) and v.judge == "scripted" and v.verdict in KEEP]
    if held_back and not scripted_verdicts:  # an arm missing for this reason would look like an empty curation
        _console().print(f"curated arm: {len(held_back)} task(s) accepted only by the scripted judge (a test double) left out; "
                         "--scripted-verdicts admits them", highlight=False, soft_wrap=True)  # fmt: skip
    for drop in selection.dropped if selection else ():
        _console().print(f"  dropped {drop.member} ({drop.reason}): {drop.detail}", highlight=False, soft_wrap=True, markup=False)


@app.command()
def dedup(
    runs: Annotated[list[Path], typer.Argument(help="run folders (`swedeck p1` or `swedeck curate`)")],
    evals: EvalOpt = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="where dedup/ and its catalog go (default: the run, when one)")] = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Clusters of the same fix across existing runs and their contamination by evaluation sets,
    without re-running anything: the catalog's duplicates, clusters, contamination and overlap views."""
    from curation import dedup as dd
    from curation.sources import SourceError

    if len(runs) > 1 and (out is None or out.resolve() in {r.resolve() for r in runs}):  # a run's dedup/ is its own
        _user_error("several runs: say where their joint result goes with --out, a folder that is none of them")
    missing = [r for r in runs if not (r / "p1").is_dir() and not (r / dd.DEDUP_DIR).is_dir()]
    if missing:
        _user_error(f"not a run folder: {', '.join(map(str, missing))}")
    cfg = _with_evals(_config(config, overrides, None), evals)
    try:
        clustering, records, errors = dd.dedup_runs(runs, out or runs[0], cfg.dedup)
    except SourceError as err:
        _user_error(err)
    _print_errors(errors)
    found = dd.summary(clustering, records) | {"overlap": [[a, b, n] for (a, b), n in dd.overlap(clustering.members, records).items()]}
    if as_json:
        print(json.dumps(found, indent=2))
        return
    from rich.table import Table

    console = _stdout()
    console.print(_dedup_line(found), highlight=False)
    table = Table("source", "other source", "fixes shared", title="overlap")
    for a, b, n in found["overlap"]:
        table.add_row(a, b, str(n))
    console.print(table)
    console.print(f"catalog: {(out or runs[0]) / 'catalog.duckdb'}  (views: clusters, duplicates, contamination, overlap)")


@app.command()
def arms(
    deck_dir: Annotated[Path, typer.Argument(help="a deck folder (`swedeck deck`)")],
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="one run folder per arm under it")] = Path("runs/arms"),
    arm: Annotated[list[str] | None, typer.Option("--arm", help="only these arms (default: all)")] = None,
    held_out: Annotated[int, typer.Option("--held-out", min=0, help="tasks every arm trains without, then is scored on")] = 1,
) -> None:
    """Train every arm of a deck with identical settings and seeds (the run config's env must be swe),
    then score each arm's final policy on held-out tasks: as the arm grades them and by the
    strengthened tests (a gap between the two is reward hacking)."""
    from flows.overrides import load_model
    from training.run import RunConfig, check_arms

    cfg = load_model(RunConfig, config, overrides)
    names = check_arms(cfg, deck_dir, arm, held_out)
    _preflight(cfg)
    from flows.supervise import Job
    from harness.names import under
    from training.metrics import updates_done

    updates = cfg.train.updates

    def done() -> int:
        return sum(min(updates_done(under(out, a) / "metrics"), updates) for a in names)

    def progress(event: dict) -> tuple[int, str]:  # arms train one after another
        m = event["update"]
        return names.index(event["arm"]) * updates + m["update"] + 1, f"{event['arm']}: reward {m['reward']:.2f}"

    job = Job(stages=["arms"], out=str(out), config=cfg.model_dump(mode="json"), deck=str(deck_dir.resolve()), arms=names,
              held_out=held_out)  # fmt: skip
    results = supervised(job, "arms", updates * len(names), done, progress)

    def num(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    for name, summary in results.items():
        retired = "" if summary["retired_at"] is None else " (every task was retired: nothing was left to learn from)"
        _console().print(f"{name}: {len(summary['updates'])} of {updates} updates{retired}, last training reward {num(summary['reward'])} · "
                         f"plot {summary['plot']}", highlight=False, soft_wrap=True)  # fmt: skip
        if summary["held_out"]:
            _console().print(f"  held out {', '.join(summary['held_out'])}: own reward {num(summary['own_score'])}, "
                             f"strengthened score {num(summary['strengthened_score'])}", highlight=False, soft_wrap=True)  # fmt: skip


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="SQL over the catalog's views")],
    db: Annotated[list[Path] | None, typer.Option("--db", help="a catalog file, or run and deck folders (repeat --db) read as they are now")] = None,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV output")] = False,
) -> None:
    """Answer SQL over a catalog. Views: tasks, runs, assertions, p1_results, load_errors, probes, probe_counts,
    verdicts, fingerprints, clusters, duplicates, contamination (each with the column run), deck, dropped;
    named: verdict_shares, reject_reasons, probe_survival, overlap."""
    import duckdb

    from curation.decks import DECK_FILE
    from curation.store import connect, open_catalog

    if as_json and as_csv:
        _user_error(ValueError("--json and --csv: choose one output format"))
    paths = db or [Path("runs/curate/catalog.duckdb")]
    for path in paths:
        if not (path.is_file() or (path / "p1").is_dir() or (path / "load_errors").is_dir() or (path / DECK_FILE).exists()):
            _user_error(f"no catalog, run or deck at {path}; run `swedeck curate` or pass --db")
    deck_catalog = paths[0] / "catalog.duckdb"
    if len(paths) == 1 and paths[0].is_file():
        con = connect(paths[0])
    elif len(paths) == 1 and (paths[0] / DECK_FILE).exists() and deck_catalog.exists():
        con = connect(deck_catalog)  # a deck alone: its catalog, every table included (dropped, probes)
    else:  # several runs (and decks) in one in-memory catalog, without copying them
        folders = [p.parent if p.is_file() else p for p in paths]
        decks = [f / DECK_FILE for f in folders if (f / DECK_FILE).exists()]
        con = open_catalog([f for f in folders if not (f / DECK_FILE).exists()], decks)
    try:
        cursor = con.execute(sql)
    except duckdb.Error as err:
        _user_error(err)
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    if as_json:
        print(json.dumps([dict(zip(columns, r)) for r in rows], indent=2, default=str))
    elif as_csv:
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows([[json.dumps(v, default=str) if isinstance(v, list | dict) else v for v in r] for r in rows])
    else:
        from rich.table import Table

        table = Table(*columns)
        for r in rows:
            table.add_row(*("" if v is None else str(v) for v in r))
        _stdout().print(table)
