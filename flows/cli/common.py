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
        _console().print(f"[red]repository cache {cfg.sources.repo_cache}: no such folder[/]")
        raise typer.Exit(2)
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
        _console().print(f"[red]{err.args[0]}[/]")
        raise typer.Exit(2) from None
    except SourceError as err:
        _user_error(err)


def _user_error(err: Exception):  # noqa: ANN202 - never returns
    """A mistake the user can fix: one line (its text is not markup: it may quote [brackets]), exit 2."""
    from rich.text import Text

    _console().print(Text.assemble(("error: ", "red"), str(err)), soft_wrap=True, highlight=False)
    raise SystemExit(2)


def _quiet_prefect() -> None:
    """Before Prefect is imported: its per-task INFO lines would drown the progress display (warnings
    still show), and offline it would log failed telemetry."""
    import os

    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def _progress(total: int, label: str):  # noqa: ANN202
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                    TimeElapsedColumn(), console=_console())  # fmt: skip
