"""The worker process of a pipeline or training command (see ``flows.supervise``): reads its Job from
stdin, runs each stage's flow and reports each stage's summary (and each training update's metrics) on
the pipe whose descriptor is its argument."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flows.supervise import Job, die_with_parent, emit


@contextmanager
def judge_endpoint(scripted: bool | None, out: Path) -> Iterator[object]:
    """The judge's endpoint: SWEDECK_JUDGE_BASE_URL when set; else the scripted judge (a test double
    shipped for demos and tests) when ``scripted`` is not False and it has a script for every task
    Pipeline 1 kept in ``out``; else none: verdicts from the executed probes alone (judge = "none").
    A test double never answers for a task it was not written for, and one run is judged one way."""
    from judge.config import JudgeSettings

    if os.environ.get("SWEDECK_JUDGE_BASE_URL") and not scripted:
        yield JudgeSettings.from_env()
        return
    if scripted is False:
        yield None
        return
    from curation.pipeline1 import kept_tasks
    from judge.scripted import ScriptedJudge
    from judge.scripted_policies import has_script

    ids = [t.instance_id for t, _ in kept_tasks(out)]
    if missing := [i for i in ids if not has_script(i)]:
        print(f"no judge endpoint configured (SWEDECK_JUDGE_BASE_URL) and the scripted judge has no script for {len(missing)} of "
              f"{len(ids)} tasks (e.g. {missing[0]}): verdicts from the executed probes alone (judge = none)", file=sys.stderr)  # fmt: skip
        yield None
        return
    print("no judge endpoint configured (SWEDECK_JUDGE_BASE_URL): using the scripted judge, a test double", file=sys.stderr)
    with ScriptedJudge("labelled") as base_url:
        yield JudgeSettings(base_url=base_url, model="scripted-judge", scripted=True)


def run_stage(stage: str, job: Job, events) -> dict:  # noqa: ANN001 - the pipe
    out = Path(job.out)
    if stage == "train":
        from flows.training import train_flow

        return train_flow(job.config, job.out, on_update=lambda m: emit(events, {"update": m.model_dump(mode="json")}))
    if stage == "arms":
        from flows.training import arms_flow

        return arms_flow(job.deck, job.config, job.out, only=job.arms or None, held_out=job.held_out,
                         on_update=lambda arm, m: emit(events, {"update": m.model_dump(mode="json"), "arm": arm}))  # fmt: skip
    from flows.config import SwedeckConfig

    cfg = SwedeckConfig.model_validate(job.config)
    if stage == "pipeline1":
        from flows.pipeline1 import run_pipeline1

        return run_pipeline1([Path(s) for s in job.sources], out, cfg, job.workers)
    if stage == "strengthen":
        from flows.strengthen import run_strengthen

        with judge_endpoint(job.judge, out) as settings:  # the judge reviews and proposes tests
            return run_strengthen(out, cfg, job.workers, job.strengthen_all, settings)
    from flows.pipeline2 import run_pipeline2

    with judge_endpoint(job.judge, out) as settings:
        return run_pipeline2(out, cfg, job.workers, settings)


def main() -> None:
    die_with_parent()
    job = Job.model_validate_json(sys.stdin.read())
    with os.fdopen(int(sys.argv[1]), "w") as events:
        for stage in job.stages:
            emit(events, {"stage": stage, "summary": run_stage(stage, job, events)})


if __name__ == "__main__":
    main()
