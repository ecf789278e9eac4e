"""``swedeck tasks list`` and ``swedeck tasks show``: read task sources and show one task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import JsonOpt, SourceOpt, _console, _find, _print_errors, _sources, _stdout


tasks_app = typer.Typer(help="Read task sources: corpus files, hub ids, task folders.", no_args_is_help=True)


@tasks_app.command("list")
def tasks_list(paths: Annotated[list[Path] | None, typer.Argument(help="sources")] = None, as_json: JsonOpt = False) -> None:
    """List the tasks in one or more sources (default: the bundled sample corpus), and which corpus and
    schema version each source was read as."""
    from curation.sources import load_sources

    result = load_sources(_sources(paths))
    if as_json:
        rows = [
            {"instance_id": t.instance_id, "source": t.source, "repo": t.repo, "base_commit": t.base_commit,
             "log_parser": t.log_parser, "environment": t.environment.image or "recipe"}
            for t in result.tasks
        ]  # fmt: skip
        print(json.dumps(rows, indent=2))
    else:
        from rich.table import Table

        table = Table("instance_id", "source", "repo", "environment", "parser")
        for t in result.tasks:
            table.add_row(t.instance_id, t.source, t.repo, t.environment.image or "recipe", t.log_parser)
        _stdout().print(table)
    for d in result.detected:
        _console().print(f"{d.location}: read as {d.corpus} ({d.version}), {d.rows} rows: {d.reason}", highlight=False, soft_wrap=True)
    _print_errors(result.errors)


@tasks_app.command("show")
def tasks_show(task_id: str, source: SourceOpt = None, as_json: JsonOpt = False) -> None:
    """Show one task (what the agent sees, and the private answer separately)."""
    from curation.sources import find_task

    task = _find(task_id, source, find_task)
    if as_json:
        print(task.model_dump_json(indent=2))
        return
    from rich.console import Console
    from rich.panel import Panel

    console = Console()
    view = task.agent_view()
    console.print(Panel(view.problem_statement, title=f"{view.instance_id} · {view.repo} · {view.workdir}"))
    console.print(f"test command: {' && '.join(task.test_cmd)}   parser: {task.log_parser}")
    console.print(f"hidden test paths: {', '.join(task.test_paths) or '-'}")
    console.print(f"gold patch: {len(task.answer.gold_patch.splitlines())} lines (private)")
