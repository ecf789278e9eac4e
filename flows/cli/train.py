"""``swedeck train`` and ``swedeck train overfit``: async GRPO from a run config, and the overfit stress test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import ConfigOpt, JsonOpt, SetOpt, _console, _progress, _quiet_prefect, _stdout, _user_error


train_app = typer.Typer(invoke_without_command=True)  # its help is the callback's (train)


def _preflight(cfg) -> None:  # noqa: ANN001 - a RunConfig
    """What can be refused before a flow starts is refused here: inside the flow Prefect would log a
    traceback for it first."""
    from training.policy import check_model

    check_model(cfg.train.model)
    _quiet_prefect()


@train_app.callback()
def train(
    ctx: typer.Context,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="run folder (resumes from its checkpoint)")] = Path("runs/train"),
) -> None:
    """Train with async GRPO from a TOML run config (`configs/` has examples).

    With no config: the toy environment (four two-turn tasks: a tool call,
    then the task's secret digit, under the strict format check and gated
    reward) with a tiny random model on CPU, warmed up on demonstrations,
    then 60 updates with the CISPO objective; a few minutes.

    Writes into --out: checkpoint.pt (a rerun resumes from it),
    metrics/update-N.parquet (one row per update: reward, success rate,
    policy lag, mismatch KL, ...) with a TensorBoard log beside them, and
    metrics.png (those curves)."""
    if ctx.invoked_subcommand is not None:
        return
    from flows.overrides import load_model
    from training.run import RunConfig

    cfg = load_model(RunConfig, config, overrides)
    _preflight(cfg)
    summary = _supervised_train(cfg, out)
    if summary["retired_at"] is not None:
        _console().print(f"every task was retired after {summary['retired_at']} of {cfg.train.updates} updates: nothing was left to learn "
                         "from, so the run ended there (eviction: train.eviction)", highlight=False, soft_wrap=True)  # fmt: skip
    _console().print(f"metrics in {summary['metrics']} · plot {summary['plot']} · checkpoint {summary['checkpoint']}", highlight=False, soft_wrap=True)


def _supervised_train(cfg, out: Path) -> dict:  # noqa: ANN001 - a RunConfig
    """One run in a supervised worker (``supervised``)."""
    from flows.supervise import Job
    from training.metrics import updates_done

    def progress(event: dict) -> tuple[int, str]:
        m = event["update"]
        return m["update"] + 1, f"reward {m['reward']:.2f} · lag {m['policy_lag_mean']:.1f} · kl {m['mismatch_kl']:.1e}"

    job = Job(stages=["train"], out=str(out), config=cfg.model_dump(mode="json"))
    return supervised(job, f"training ({cfg.env})", cfg.train.updates, lambda: min(updates_done(out / "metrics"), cfg.train.updates),
                      progress)  # fmt: skip


def supervised(job, label: str, total: int, done: Callable[[], int], progress: Callable[[dict], tuple[int, str]]) -> dict:  # noqa: ANN001
    """Train (``job``: train or arms) in a supervised worker (``flows.supervise``), as the pipelines
    run: SIGINT or SIGTERM stops it at once (the temporary Prefect API included) with one line, exit
    130 / 143; a rerun resumes from the last checkpoint. ``done()`` counts the updates on disk (a
    resumed run starts there), ``progress(event)`` turns an update's event into the bar's count and text."""
    from flows.supervise import Interrupted, WorkerFailed, supervise
    from harness.config import Settings
    from harness.sandboxes.leftovers import RunConflict

    summary: dict = {}
    try:
        with _progress(label) as bar:
            start = done()
            task = bar.add_task(label, total=total, completed=start, info="resumed" if start else "")
            for event in supervise(job, Settings.from_env()):
                if "update" in event:
                    completed, info = progress(event)
                    bar.update(task, completed=completed, info=info)
                summary = event.get("summary", summary)
    except RunConflict as err:
        _user_error(f"{err}; wait for it to end, or use another --out")
    except Interrupted as stop:
        _console().print(f"interrupted after {done()} of {total} updates; rerun the same command to resume from the last checkpoint",
                         highlight=False, soft_wrap=True)  # fmt: skip
        raise typer.Exit(128 + stop.signum) from None
    except WorkerFailed as err:  # the worker printed why
        raise typer.Exit(err.returncode) from None
    return summary


@train_app.command("overfit")
def train_overfit(
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="run folder")] = Path("runs/overfit"),
    as_json: JsonOpt = False,
) -> None:
    """The overfit stress test: the full recipe and a broken one (repaired turns rewarded) on a small pool;
    fits dq/du = g(1-q) - d·q to each curve and reports the ceiling 1-ε, with a plot."""
    from flows.overrides import load_model
    from training.overfit import RECIPES, run_overfit
    from training.run import RunConfig

    cfg = load_model(RunConfig, config, overrides)
    with _progress("overfit") as bar:
        job = bar.add_task("overfit", total=cfg.train.updates * len(RECIPES), info="")
        results = run_overfit(cfg.train, out, n_tasks=cfg.toy.tasks, skill=cfg.toy.skill,
                              on_update=lambda r, m: bar.update(job, advance=1, info=f"{r}: success {m.success_rate:.2f}"))  # fmt: skip
    if as_json:
        print(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
        return
    from rich.table import Table

    table = Table("recipe", "ceiling 1-ε", "ε", "g", "d", "final success", "holds", "fit rmse")
    for r in results:
        table.add_row(r.recipe, f"{r.fit.ceiling:.2f}", f"{r.fit.eps:.2f}", f"{r.fit.g:.3f}", f"{r.fit.d:.3f}",
                      f"{r.final:.2f}", "yes" if r.holds else "[red]no[/]", f"{r.fit.rmse:.3f}")  # fmt: skip
    _stdout().print(table)
    _console().print(f"plot: {out / 'overfit.png'}")
