"""``swedeck p1``, ``curate``, ``report``, ``serve``, ``strengthen``, ``judge``, ``probe``: the pipelines and their summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import (
    BackendOpt, ConfigOpt, EvalOpt, JsonOpt, RepoCacheOpt, RunnerOpt, SetOpt, SourceOpt, _config, _console, _find,
    _progress, _quiet_prefect, _sources, _stdout, _user_error, _with_evals,
)
from flows.cli.decks import _dedup_line

app = typer.Typer()  # added to swedeck's app without a name: its commands are top-level ones


def _run_pipelines(stages: list[str], out: Path, cfg, workers: int, *, sources: list[Path] | None = None,
                   judge: bool | None = None, strengthen_all: bool = False, as_json: bool = False) -> None:  # fmt: skip
    """Run the stages in a supervised worker process (``flows.supervise``), drawing progress from the
    results landing on disk and printing each stage's summary as it ends (its ``seconds``: the wall
    time it took). Ctrl-C or SIGTERM stops the run cleanly (exit 130 / 143); a rerun of the same
    command resumes it."""
    import os
    import time

    from curation.sources import check_local
    from flows.supervise import Interrupted, Job, WorkerFailed, done, supervise
    from harness.config import Settings
    from harness.sandboxes.leftovers import RunConflict

    check_local(sources or [])

    job = Job(stages=stages, out=str(out), config=cfg.model_dump(mode="json"), workers=workers,
              sources=[str(s) for s in sources or []], judge=judge, strengthen_all=strengthen_all)  # fmt: skip
    settings = Settings.from_env()
    # a run writes into its folder and the cache only: matplotlib's font cache (the report's charts)
    # would otherwise land in $HOME
    os.environ.setdefault("MPLCONFIGDIR", str(settings.cache_dir / "matplotlib"))
    labels = {"pipeline1": "pipeline 1", "pipeline2": "pipeline 2: probes and the judge", "strengthen": "test strengthening"}
    folders = {"pipeline1": ("p1", "result.parquet"), "pipeline2": ("p2", "verdict.parquet"),
               "strengthen": ("strengthen", "strengthening.parquet")}  # fmt: skip
    printers = {"pipeline1": _print_summary, "pipeline2": _print_p2, "strengthen": _print_strengthen}
    totals: dict[str, int | None] = dict.fromkeys(stages)
    remaining = list(stages)
    progress = _progress()
    bars: dict[str, int] = {}

    def finished() -> int:
        return done(out / folders[remaining[0]][0], folders[remaining[0]][1])

    stage_started = time.monotonic()
    try:
        with progress:
            for event in supervise(job, settings):
                if "started" in event:
                    if event["started"]:
                        progress.console.print(f"swept what an earlier run left: {event['started']}")
                    totals = _totals(stages, sources, out)
                if "summary" in event:
                    # wall time, as the user waited: the worker's and Prefect's start included
                    event["summary"]["seconds"] = round(time.monotonic() - stage_started, 1)
                    stage_started = time.monotonic()
                    progress.stop()
                    printers[event["stage"]](event["summary"], as_json)
                    remaining.pop(0)
                    if remaining:
                        totals[remaining[0]] = event["summary"].get("kept")  # strengthening's share is known only as it runs
                        progress.start()
                if remaining:
                    stage = remaining[0]
                    if stage not in bars:
                        bars[stage] = progress.add_task(labels[stage], total=totals[stage], info="")
                    progress.update(bars[stage], completed=finished(), total=totals[stage])  # type: ignore[arg-type]
    except RunConflict as err:
        _user_error(f"{err}; wait for it to end, or use another --out")
    except Interrupted as stop:
        _console().print(_interrupted(finished() if remaining else 0, totals[remaining[0]] if remaining else None, bool(remaining)))
        raise typer.Exit(128 + stop.signum) from None
    except WorkerFailed as err:  # the worker printed why
        raise typer.Exit(err.returncode) from None


def _interrupted(done: int, total: int | None, unfinished: bool) -> str:
    if not unfinished:  # stopped while the worker was exiting: nothing is left to resume
        return "interrupted after every stage had finished: the run's results are complete"
    of = f" of {total}" if total is not None else " (the total was not known yet)"
    return f"interrupted: {done}{of} done; rerun the same command to resume"


def _totals(stages: list[str], sources: list[Path] | None, out: Path) -> dict[str, int | None]:
    """Tasks per stage, as far as known before it starts: Pipeline 2's is Pipeline 1's kept count."""
    from curation.pipeline1 import kept_tasks
    from curation.sources import load_sources

    totals: dict[str, int | None] = dict.fromkeys(stages)
    if "pipeline1" in totals:
        totals["pipeline1"] = len({t.instance_id for t in load_sources(sources or []).tasks})
    elif "pipeline2" in totals:
        totals["pipeline2"] = len(kept_tasks(out))
    return totals


def _print_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    from rich.table import Table

    title = f"Pipeline 1: {summary['tasks']} tasks in {summary['seconds']} s"
    table = Table("outcome", "tasks", title=title, min_width=len(title))  # a narrow table would wrap its title
    table.add_row("[green]kept[/]", str(summary["kept"]))
    for reason, n in summary["rejected"].items():
        table.add_row(f"rejected: {reason}", str(n))
    table.add_row(f"with flaky tests ({summary['flaky_tests']} tests)", str(summary["flaky_tasks"]))
    table.add_row("unloadable rows", str(summary["load_errors"]))
    console = _stdout()  # piped, a plain Console would cut ids and wrap lines at 80 columns
    console.print(table)
    if summary["reused"] == summary["tasks"]:
        console.print(f"every task already had its result for this content and config: reused all {summary['reused']}")
    elif summary["reused"]:
        console.print(f"resumed: {summary['reused']} of {summary['tasks']} tasks already had their results (reused), "
                      f"{summary['tasks'] - summary['reused']} ran now")  # fmt: skip
    if "dedup" in summary:
        console.print(_dedup_line(summary["dedup"]))
    console.print(f"catalog: {summary['catalog']}  (try: swedeck query \"select * from p1_results\" --db {summary['catalog']})")


@app.command()
def p1(
    sources: Annotated[list[Path], typer.Argument(help="task sources: corpus files, hub ids, task folders")],
    out: Annotated[Path, typer.Option("--out", "-o", help="run directory")] = Path("runs/p1"),
    backend: BackendOpt = None,
    runner: RunnerOpt = None,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="tasks processed at once")] = 2,
    repo_cache: RepoCacheOpt = None,
    evals: EvalOpt = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pipeline 1: two-tree fail-to-pass with binding assertions, into Parquet and a DuckDB catalog."""
    cfg = _with_evals(_config(config, overrides, backend, runner, repo_cache), evals)
    _run_pipelines(["pipeline1"], out, cfg, workers, sources=list(sources), as_json=as_json)


@app.command()
def curate(
    sources: Annotated[list[Path] | None, typer.Argument(help="sources (default: the sample corpus)")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="run directory")] = Path("runs/curate"),
    backend: BackendOpt = None,
    runner: RunnerOpt = None,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1)] = 2,
    repo_cache: RepoCacheOpt = None,
    evals: EvalOpt = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
) -> None:
    """The main job, end to end with embedded defaults: Pipeline 1, then probes and the judge, then test
    strengthening of the tasks the judge called too loose. Every task's fingerprint is taken as it
    loads: duplicates across the corpora and matches of the --eval sets land in the catalog."""
    cfg = _with_evals(_config(config, overrides, backend, runner, repo_cache), evals)
    _run_pipelines(["pipeline1", "pipeline2", "strengthen"], out, cfg, workers, sources=_sources(sources))
    from curation.report import write_report

    page = write_report(out)
    _console().print(f"run directory: {out.resolve()}\ncatalog: {(out / 'catalog.duckdb').resolve()}\nreport: {page.resolve()}")


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="a run directory written by `swedeck curate` or `swedeck p1`")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="HTML file (default: RUN_DIR/report.html)")] = None,
) -> None:
    """One self-contained HTML page of a run (funnel, reject reasons, verdicts per corpus, probe survival,
    slow and flaky tests, errors); every number links to the SQL that gives it."""
    if not (run_dir / "catalog.duckdb").exists():
        _user_error(f"{run_dir} has no catalog; run `swedeck curate --out {run_dir}` first")
    from curation.report import write_report

    print(write_report(run_dir, out).resolve())


@app.command()
def serve(
    config: Annotated[Path, typer.Option("--config", "-c", help="run config with \\[schedules.NAME] tables")] = Path("swedeck.toml"),
    overrides: SetOpt = None,
    runner: RunnerOpt = None,
) -> None:
    """Register one Prefect deployment per schedule of the config on the Prefect API (PREFECT_API_URL)
    and serve them: each runs on its cron, incrementally, and can be triggered from the Prefect UI."""
    import os

    cfg = _config(config, overrides, None, runner)
    if not cfg.schedules:
        _user_error(f"{config} has no [schedules.NAME] table (sources, cron, out)")
    if not os.environ.get("PREFECT_API_URL"):
        _user_error("no Prefect server: start one (`prefect server start`) and set PREFECT_API_URL "
                    "(e.g. http://127.0.0.1:4200/api); a temporary API would not run the schedules")  # fmt: skip
    _quiet_prefect()
    # a service's flow runs report what they did, to the console and to the API (the run's logs in the
    # UI); per-task lines stay at warnings
    os.environ.setdefault("PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL", "INFO")
    from flows.serve import serve as serve_deployments

    serve_deployments(cfg)


def _print_p2(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    from rich.table import Table

    title = f"Pipeline 2: {summary['tasks']} kept tasks in {summary['seconds']} s"
    table = Table("verdict", "tasks", title=title, min_width=len(title))
    for verdict, n in summary["verdicts"].items():
        table.add_row(verdict, str(n))
    console = _stdout()
    console.print(table)
    probes = Table("task", "generated", "survived", "confirmed", "likely equivalent", "killed", title="wrong probes per task")
    for iid, counts in summary["probe_counts"].items():
        probes.add_row(iid, *(str(counts[k]) for k in ("generated", "survived", "confirmed", "likely_equivalent", "killed")))
    console.print(probes)
    console.print(f"a wrong probe passed and an input tells it from gold (too-loose evidence): {', '.join(summary['too_loose_evidence']) or '-'}")
    console.print(f"a correct probe failed (over-restrictive evidence): {', '.join(summary['over_restrictive_evidence']) or '-'}")


def _print_strengthen(summary: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    from rich.table import Table
    from rich.text import Text

    table = Table("task", "status", "survivors killed", "tests kept / tried", "test runs", "seconds",
                  title=f"Test strengthening: {summary['tasks']} tasks in {summary['seconds']} s")  # fmt: skip
    for iid, row in summary["per_task"].items():
        if row["status"] == "failed":
            table.add_row(iid, Text.assemble(("failed ", "red"), row["reason"][:80]), "", "", "", "")
            continue
        table.add_row(iid, row["status"], f"{row['killed']} / {row['survivors']}", f"{row['tests_kept']} / {row['tests_tried']}",
                      str(row["executions"]), str(row["seconds"]))  # fmt: skip
    _stdout().print(table)


@app.command()
def strengthen(
    run_dir: Annotated[Path, typer.Argument(help="a run directory with Pipeline 2 results (`swedeck curate` or `swedeck judge`)")],
    every: Annotated[bool, typer.Option("--all", help="also tasks with a confirmed survivor that the judge did not call too loose")] = False,
    backend: BackendOpt = None,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1)] = 2,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Strengthen the hidden tests of every task the judge called too loose: tests from the confirmed
    survivors' distinguishing inputs, each validated by the grader; the original tests stay untouched."""
    if not (run_dir / "p2").is_dir():
        _user_error(f"{run_dir} has no Pipeline 2 results; run `swedeck judge {run_dir}` first")
    cfg = _config(config, overrides, backend)
    _run_pipelines(["strengthen"], run_dir, cfg, workers, strengthen_all=every, as_json=as_json)


@app.command()
def judge(
    run_dir: Annotated[Path, typer.Argument(help="a run directory written by `swedeck p1` or `swedeck curate`")],
    backend: BackendOpt = None,
    runner: RunnerOpt = None,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1)] = 2,
    scripted: Annotated[bool | None, typer.Option("--scripted/--no-judge", help="scripted judge / probes only")] = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Pipeline 2 over a run's kept tasks: model-free probes, then the judge (endpoint from settings)."""
    if not (run_dir / "p1").is_dir():
        _user_error(f"{run_dir} has no Pipeline 1 results; run `swedeck p1 SOURCE --out {run_dir}` first")
    cfg = _config(config, overrides, backend, runner)
    _run_pipelines(["pipeline2"], run_dir, cfg, workers, judge=scripted, as_json=as_json)


@app.command()
def probe(
    task_id: Annotated[str, typer.Argument(help="instance id, or a task folder path")],
    source: SourceOpt = None,
    backend: BackendOpt = None,
    no_selection: Annotated[bool, typer.Option("--no-selection", help="run the full suite for every probe")] = False,
    repo_cache: RepoCacheOpt = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the model-free counterfactual probes of one task and show how the grader scored each."""
    import tempfile

    from curation.pipeline1 import process_task as p1_task
    from curation.sources import find_task
    from harness.sandboxes.backends import get_backend
    from probes.runner import probe_task

    cfg = _config(config, overrides, backend, repo_cache=repo_cache)
    task = _find(task_id, source, find_task, cfg.repo_cache())
    sandbox_backend = get_backend(cfg.sandbox)
    with tempfile.TemporaryDirectory() as tmp, _console().status(f"pipeline 1 on {task.instance_id}"):
        p1_result = p1_task(task, sandbox_backend, cfg.pipeline1, cfg.hash(), Path(tmp))
    if p1_result.decision != "keep":
        _console().print(f"[red]Pipeline 1 rejects {task.instance_id}: {p1_result.reason}[/]; nothing to probe")
        raise typer.Exit(1)
    stamp = {"config_hash": cfg.hash(), "task_hash": task.task_hash(), "instance_id": task.instance_id}
    with _console().status("probing"):
        results = probe_task(task, sandbox_backend, p1_result, stamp, selection=not no_selection)
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
        return
    from rich.table import Table

    table = Table("probe", "kind", "operator", "what it does", "reward", "reason", "tests run")
    for r in results:
        alarm = (r.kind == "plausible_wrong") == (r.reward == 1)
        reward = f"[red]{r.reward:g}[/]" if alarm else f"{r.reward:g}"
        table.add_row(r.probe_id[:8], r.kind, r.operator, r.description, reward, r.reason, str(r.executions))
    _stdout().print(table)
