"""What every command shares: the common options, the consoles, the config, finding a task, a user's mistake, progress bars."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="override, key.path=value (repeatable)")]
BackendOpt = Annotated[str | None, typer.Option("--backend", "-b", help="sandbox backend: bwrap or docker")]
RunnerOpt = Annotated[str | None, typer.Option("--runner", help="where per-task work runs: local (threads) or ray (runner.address)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output")]
SourceOpt = Annotated[list[Path] | None, typer.Option("--source", "-s", help="task source (default: sample corpus)")]
RepoCacheOpt = Annotated[Path | None, typer.Option("--repo-cache", help="folder of git bundles (owner__name.bundle) or clones "
                         "(owner__name/): rows whose image cannot run here are built from their install spec")]  # fmt: skip
EvalOpt = Annotated[list[str] | None, typer.Option("--eval", help="an evaluation set (hub id, Parquet or JSONL file, task folder; "
                    "repeatable): training tasks that match it get contamination records, and decks apply dedup.policy")]  # fmt: skip


def _console():
    from rich.console import Console

    return Console(stderr=True)


def _stdout():
    """Where tables go: piped, rich would cut every cell to fit 80 columns, ids included."""
    import os

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 100_000)


def _sources(paths: list[Path] | None) -> list[Path]:
    from data import SAMPLE

    return list(paths) if paths else [SAMPLE]


def _config(config: Path | None, overrides: list[str] | None, backend: str | None, runner: str | None = None,
            repo_cache: Path | None = None):  # fmt: skip
    from flows.config import load_config

    cfg = load_config(config, overrides, sandbox__backend=backend, runner__kind=runner,
                      sources__repo_cache=repo_cache and str(repo_cache.resolve()))  # fmt: skip
    if cfg.sources.repo_cache and not Path(cfg.sources.repo_cache).is_dir():
        _user_error(f"repository cache {cfg.sources.repo_cache}: no such folder")
    return cfg


def _with_evals(cfg, evals: list[str] | None):  # noqa: ANN001, ANN202 - a SwedeckConfig
    if not evals:
        return cfg
    return cfg.model_copy(update={"dedup": cfg.dedup.model_copy(update={"eval": [*cfg.dedup.eval, *evals]})})


def _print_errors(errors) -> None:
    console = _console()
    for e in errors:
        console.print(f"[yellow]skipped[/] {e.location}: [bold]{e.field}[/] {e.message}")


def _find(task_id: str, source: list[Path] | None, find_task, repo_cache=None):
    from curation.sources import SourceError

    try:
        return find_task(task_id, _sources(source), repo_cache)
    except KeyError as err:
        _user_error(err.args[0])
    except SourceError as err:
        _user_error(err)


def _user_error(err: Exception | str):  # noqa: ANN202 - never returns
    """A mistake the user can fix: one line however narrow the terminal or pipe (its text is not markup:
    it may quote [brackets]), exit 2."""
    from rich.text import Text

    _console().print(Text.assemble(("error: ", "red"), str(err)), soft_wrap=True, highlight=False)
    raise SystemExit(2)


def _quiet_prefect() -> None:
    """Before Prefect is imported: its per-task INFO lines would drown the progress display (warnings
    still show), and offline it would log failed telemetry."""
    import os

    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def _progress(label: str | None = None):  # noqa: ANN202 - a rich Progress or a LineProgress
    """Progress bars on a terminal; elsewhere (CI logs, nohup) a line per step, since rich would print
    only the final state. ``label`` replaces each task's description in the bars' first column."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = _console()
    if not console.is_terminal:
        return LineProgress(console, label)
    return Progress(TextColumn(label or "{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                    TimeElapsedColumn(), console=console)  # fmt: skip


class LineProgress:
    """The part of rich's Progress the commands use, printing ``label: done/total info (elapsed)`` each
    time a task's count changes."""

    def __init__(self, console, label: str | None) -> None:  # noqa: ANN001 - a rich Console
        import time

        self.console, self.label, self.started = console, label, time.monotonic()
        self.tasks: list[dict] = []

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def add_task(self, description: str, total: int | None = None, completed: int = 0, info: str = "") -> int:
        self.tasks.append({"description": self.label or description, "total": total, "completed": 0, "info": info})
        self.update(len(self.tasks) - 1, completed=completed)  # a resumed task says where it starts
        return len(self.tasks) - 1

    def update(self, task: int, *, completed: int | None = None, advance: int = 0, total: int | None = None,
               info: str | None = None) -> None:  # fmt: skip
        import time

        from rich.text import Text

        state = self.tasks[task]
        before = state["completed"]
        state["completed"] = (state["completed"] if completed is None else completed) + advance
        state["total"] = state["total"] if total is None else total
        state["info"] = state["info"] if info is None else info
        if state["completed"] != before:
            of = f"/{state['total']}" if state["total"] is not None else ""
            line = f"{state['description']}: {state['completed']}{of} {state['info']} ({time.monotonic() - self.started:.0f} s)"
            self.console.print(Text(" ".join(line.split())), soft_wrap=True, highlight=False)
