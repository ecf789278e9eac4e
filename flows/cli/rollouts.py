"""``swedeck rollout`` and ``swedeck audit``: agent rollouts on a task, and a rollout run's cheating report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import BackendOpt, ConfigOpt, JsonOpt, SetOpt, SourceOpt, _config, _console, _find, _stdout, _user_error

app = typer.Typer()  # added to swedeck's app without a name: its commands are top-level ones


@app.command()
def rollout(
    task_id: Annotated[str, typer.Argument(help="instance id, or a task folder path")],
    engine: Annotated[str, typer.Option("--engine", help="'local' (a tiny random model on CPU) or an OpenAI-compatible URL")] = "local",
    model: Annotated[str, typer.Option("--model", help="served model name; for --engine local: tiny-dense or tiny-hybrid")] = "tiny-dense",
    n: Annotated[int, typer.Option("--n", min=1, help="rollouts in the group")] = 1,
    out: Annotated[Path, typer.Option("--out", "-o", help="run folder")] = Path("runs/rollout"),
    seed: Annotated[int, typer.Option("--seed")] = 0,
    source: SourceOpt = None,
    backend: BackendOpt = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run agent rollouts on a task and write their trajectories (tokens, calls, outputs, reward) to Parquet."""
    from curation.sources import find_task
    from harness.sandboxes.backends import get_backend
    from training.engines import engine_from_spec
    from harness.names import under
    from training.rollouts import run_group

    cfg = _config(config, overrides, backend)
    task = _find(task_id, source, find_task)
    with _console().status(f"{n} rollout(s) on {task.instance_id}") as status:
        records = run_group(
            task, engine_from_spec(engine, model, seed=seed), get_backend(cfg.sandbox), n=n, config=cfg.agent,
            config_hash=cfg.hash(), out=out, seed=seed,
            on_done=lambda r: status.update(f"rollout {r.rollout_id[-3:]}: {r.termination}, reward {r.reward:g}"),
        )  # fmt: skip
    if as_json:
        print(json.dumps([{"rollout_id": r.rollout_id, "turns": len(r.turns), "termination": r.termination,
                           "reward": r.reward} for r in records], indent=2))  # fmt: skip
        return
    from rich.table import Table

    table = Table("rollout", "turns", "tokens", "termination", "reward")
    for r in records:
        table.add_row(r.rollout_id, str(len(r.turns)), str(sum(len(t.token_ids) for t in r.turns)), r.termination, f"{r.reward:g}")
    _stdout().print(table)
    _console().print(f"trajectories in {under(out, task.instance_id)}")


@app.command()
def audit(
    run_dir: Annotated[Path, typer.Argument(help="a `swedeck rollout` run folder")],
    as_json: JsonOpt = False,
) -> None:
    """The cheating report of a rollout run: which channels each trajectory tried, and what it earned."""
    if not run_dir.is_dir():
        _user_error(f"{run_dir}: no such folder (a `swedeck rollout ... --out DIR` run folder)")
    from harness.agent.audit import CHANNELS, summarise
    from training.rollouts import audit_run

    rows = audit_run(run_dir)
    if not rows:
        _user_error(f"{run_dir} holds no rollouts; `swedeck rollout ID --out {run_dir}` writes them")
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    from rich.table import Table

    table = Table("task", "rollout", "termination", "reward", *CHANNELS, "first evidence")
    for r in rows:
        counts = summarise(r.findings)
        evidence = r.findings[0].evidence[:60] if r.findings else ""
        table.add_row(r.instance_id, r.rollout_id, r.termination, f"{r.reward:g}", *(str(counts[c]) for c in CHANNELS), evidence)
    _stdout().print(table)
    flagged = [r for r in rows if r.findings]
    rewarded = [r for r in flagged if r.reward > 0]
    _console().print(f"{len(flagged)} of {len(rows)} trajectories used a cheating channel; {len(rewarded)} of them earned reward")
