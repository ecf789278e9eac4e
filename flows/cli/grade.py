"""``swedeck grade``: a patch on one task (or one arm of a deck), or a predictions file on a deck's arms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.common import (
    BackendOpt, ConfigOpt, JsonOpt, SetOpt, SourceOpt, _config, _console, _find, _progress, _stdout, _user_error,
)

app = typer.Typer()  # added to swedeck's app without a name: its commands are top-level ones


def _arm_task(task_id: str, source: list[Path] | None, arm: str):  # noqa: ANN202 - a Task
    from curation.deck_files import DECK_FILE, arm_tasks

    if not source or len(source) != 1 or not (source[0] / DECK_FILE).exists():
        _user_error("--arm needs --source DECK: one deck folder (`swedeck deck`)")
    found = [t for t in arm_tasks(source[0], arm) if t.instance_id == task_id]
    if not found:
        _user_error(f"no task {task_id} in arm {arm!r} of {source[0]}")
    return found[0]


@app.command()
def grade(
    task_id: Annotated[str | None, typer.Argument(help="instance id, or a task folder path (not with --predictions)")] = None,
    patch: Annotated[str, typer.Option("--patch", "-p", help="gold, empty, or a patch file")] = "gold",
    source: SourceOpt = None,
    arm: Annotated[list[str] | None, typer.Option("--arm", help="grade against this arm's version of the task (--source is a deck); "
                   "with --predictions, repeatable")] = None,  # fmt: skip
    predictions: Annotated[Path | None, typer.Option("--predictions", help="a predictions file (SWE-bench's: JSONL or a JSON list of "
                           "instance_id, model_patch, model_name_or_path): every prediction graded on each --arm of the deck")] = None,  # fmt: skip
    workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="with --predictions: grades at a time")] = 2,
    instance_ids: Annotated[list[str] | None, typer.Option("--instance-ids", help="with --predictions: grade only these instances "
                            "(repeatable)")] = None,  # fmt: skip
    run_id: Annotated[str | None, typer.Option("--run-id", help="with --predictions: the run's id in the SWE-bench layout "
                      "(default: the predictions file's name)")] = None,  # fmt: skip
    out: Annotated[Path, typer.Option("--out", "-o", help="with --predictions: one grade per prediction and arm, results.parquet, "
                   "summary.json (a rerun skips what is graded)")] = Path("runs/grade"),  # fmt: skip
    backend: BackendOpt = None,
    config: ConfigOpt = None,
    overrides: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Grade a patch on a task with the one grader (with --arm: the reward an RL run on that arm of a
    deck would give), or a predictions file on the arms of a deck (resolved rate per arm, and the
    predictions only the raw tests accept)."""
    if predictions is None and (task_id is None or len(arm or []) > 1):
        _user_error("grade one task: swedeck grade ID [--arm ARM]; several arms or predictions: --predictions FILE")
    if predictions is None and patch not in ("gold", "empty") and not Path(patch).is_file():
        _user_error(f"--patch {patch}: no such file (a patch file, gold or empty)")
    cfg = _config(config, overrides, backend)
    if predictions is not None:
        _grade_predictions(predictions, source, arm, cfg, workers, out, as_json, instance_ids, run_id or predictions.stem)
        return
    from curation.sources import find_task
    from harness.grading.grader import grade as grade_patch
    from harness.sandboxes.backends import get_backend
    from harness.sandboxes.sandbox import EnvError

    task = _find(task_id, source, find_task) if not arm else _arm_task(task_id, source, arm[0])
    text = {"gold": task.answer.gold_patch, "empty": ""}.get(patch)
    if text is None:
        text = Path(patch).read_text(errors="replace")
    try:
        result = grade_patch(task, text, get_backend(cfg.sandbox))
    except EnvError as err:  # the environment, or a gold run that gave no pattern to grade against
        if as_json:
            print(json.dumps({"instance_id": task.instance_id, "error": "env_error", "message": str(err),
                              "log_tail": err.log[-2000:]}, indent=2))  # fmt: skip
        else:
            _console().print(f"[red]cannot grade:[/] {err}" + (f"\n{err.log[-2000:]}" if err.log else ""), soft_wrap=True, highlight=False)
        raise typer.Exit(3) from None
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    from rich.console import Console

    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=True)
    colour = "green" if result.reward == 1 else "red"
    console.print(f"[{colour}]reward {result.reward:g}[/] ({result.reason}) on {result.backend}: {escape(task.instance_id)}")
    if not result.statuses:  # the tests never ran (the patch did not apply, a forbidden change, ...): why is all there is
        console.print(f"  {escape(result.detail or 'the tests did not run')}")
        return
    for test_id, (want, got) in result.differing.items():
        console.print(f"  {escape(test_id)}: expected {want}, got {got or 'no result'}")
    for line in result.spoof_evidence:
        console.print(f"  [yellow]spoof?[/] {escape(line)}")
    if result.neutralized:
        console.print(f"  restored/removed test paths: {escape(', '.join(result.neutralized))}")
    console.print(f"  {len(result.statuses)} tests · log {escape(result.log_path)}")
    console.print(f"  canaries {result.canaries} · forging unseen: at most {result.forgery_bound:.3g} a grade")


def _grade_predictions(path: Path, source: list[Path] | None, arm: list[str] | None, cfg, workers: int, out: Path,  # noqa: ANN001
                       as_json: bool, instance_ids: list[str] | None, run_id: str) -> None:  # fmt: skip
    from collections import Counter

    from curation import predictions as pr
    from curation.decks import DECK_FILE
    from curation.swebench_layout import write_arm
    from harness.records import content_hash
    from harness.sandboxes.backends import get_backend

    if not source or len(source) != 1 or not (source[0] / DECK_FILE).exists() or not arm:
        _user_error(ValueError("--predictions needs --source DECK (one deck folder, `swedeck deck`) and at least one --arm"))
    arm = list(dict.fromkeys(arm))
    rows = pr.read_predictions(path)
    versions = {a: pr.arm_versions(source[0], a) for a in arm}  # a wrong arm is refused before anything runs
    if instance_ids:
        if unknown := sorted(set(instance_ids) - {i for v in versions.values() for i in v}):
            _user_error(ValueError(f"--instance-ids: {', '.join(unknown)} in no requested arm ({', '.join(arm)}) of {source[0]}"))
        rows = [p for p in rows if p.instance_id in instance_ids]
    unique = list({p.prediction_id(): p for p in rows}.values())
    total = sum(p.instance_id in versions[a] and not pr.is_empty(p) for a in arm for p in unique)
    resolved = Counter()
    with _progress("grading") as bar:
        job = bar.add_task("grading", total=total, info="")

        def done(record, reused: bool) -> None:  # noqa: ANN001 - a PredictionGrade
            resolved[record.arm] += record.resolved
            bar.update(job, advance=1, info=" · ".join(f"{a} resolved {resolved[a]}" for a in arm) + (" (reused)" if reused else ""))

        pr.grade_predictions(source[0], rows, arm, get_backend(cfg.sandbox), content_hash(cfg.sandbox), out, workers=workers, on_done=done)
    records = pr.collect(out, rows, arm)
    found = pr.summary(records, rows, source[0], arm)
    results, summary = pr.write_results(out, records, found)
    reports = [r for a in arm for r in write_arm(out / a, run_id, {i: row for i, (row, _) in versions[a].items()}, unique,
                                                  {g.prediction_id: g for g in records if g.arm == a})]  # fmt: skip
    if as_json:
        print(json.dumps(found, indent=2))
        return
    from rich.table import Table

    table = Table("arm", "predictions", "resolved", "rate", "empty patches", "not in arm", "reasons")
    for name, s in found["arms"].items():
        rate = "n/a" if s["rate"] is None else f"{s['rate']:.1%}"
        table.add_row(name, str(s["predictions"]), str(s["resolved"]), rate, str(s["empty_patches"]), str(s["not_in_arm"]),
                      ", ".join(f"{r} {n}" for r, n in s["reasons"].items()))  # fmt: skip
    _stdout().print(table)
    for name, s in found["arms"].items():
        if s["not_in_arm_ids"]:
            _stdout().print(f"not in arm {name}: {len(s['not_in_arm_ids'])} instance(s), {', '.join(s['not_in_arm_ids'])}", markup=False, highlight=False)
    for pair, s in found["resolved_only_on"].items():
        if pair.startswith("raw_not_"):
            _stdout().print(f"resolved on raw, not on {pair.removeprefix('raw_not_')}: {s['resolved']} of {s['graded_on_both']} predictions "
                            f"graded on both (accepted only by the raw tests)", highlight=False)  # fmt: skip
    _console().print(f"results {results} · summary {summary} · SWE-bench reports {', '.join(map(str, reports))}", highlight=False,
                     soft_wrap=True)  # fmt: skip
