"""The report's run-wide sections: funnel, reject reasons, verdicts, probe survival, slow and flaky runs, errors, schedules, duplicates."""

from __future__ import annotations

from curation.report.pieces import COLOURS, Catalog, Section, _figure, _svg, bar_chart, stacked_chart, table
from curation.report.queries import (
    FLAKY_TESTS,
    FUNNEL,
    INFRA_ERRORS,
    JUDGES,
    LATEST_RUN,
    LOAD_ERRORS,
    PROBES_PER_TASK,
    REJECT_REASONS,
    REJECTED_TASKS,
    SLOWEST_RUNS,
    STRENGTHENED,
    SURVIVAL_PER_OPERATOR,
    VERDICTS,
    VERDICTS_PER_SOURCE,
)

VERDICT_SHARES = ("accepted", "too_loose", "over_restrictive", "gold_wrong", "unjudgeable")


def funnel(cat: Catalog) -> Section:
    answer = cat.ask(FUNNEL + (STRENGTHENED if "strengthening" in cat.views else ""))
    chart = bar_chart(answer.column("stage"), answer.column("tasks"), "tasks")
    return Section("Funnel", chart + table(answer))


def reject_reasons(cat: Catalog) -> Section:
    answer = cat.ask(REJECT_REASONS)
    labels = [f"{s}: {r}" for s, r in zip(answer.column("source"), answer.column("reason"))]
    chart = bar_chart(labels, answer.column("tasks"), "tasks rejected by Pipeline 1") if answer.rows else ""
    held = "<h3>The tasks each reason holds</h3>" + table(cat.ask(REJECTED_TASKS), cat.tasks)
    return Section("Reject reasons per corpus", chart + table(answer) + held)


def verdicts(cat: Catalog) -> Section:
    shares = cat.ask(VERDICTS_PER_SOURCE)
    chart = ""
    if shares.rows:
        parts = {name: shares.column(name) for name in VERDICT_SHARES}
        chart = stacked_chart(shares.column("source"), parts, "share of judged tasks")
    return Section("Verdicts per corpus", chart + table(cat.ask(JUDGES)) + table(shares) + table(cat.ask(VERDICTS), cat.tasks))


def probe_survival(cat: Catalog) -> Section:
    operators = cat.ask(SURVIVAL_PER_OPERATOR)
    chart = ""
    if operators.rows:
        labels = [f"{k.replace('_', ' ')}: {o}" for k, o in zip(operators.column("kind"), operators.column("operator"))]
        chart = bar_chart(labels, operators.column("survival"), "share of probes that earned full reward")
    tasks = cat.ask(PROBES_PER_TASK)
    if tasks.rows:
        fig = _figure(len(tasks.rows))
        ax = fig.subplots()
        y = range(len(tasks.rows))
        # a survivor no input tells from gold (likely equivalent) is no evidence: it is drawn apart, not as looseness
        wrong = tasks.column("wrong_probes")
        confirmed = [c / n if n else 0 for c, n in zip(tasks.column("confirmed"), wrong)]
        equivalent = [e / n if n else 0 for e, n in zip(tasks.column("likely_equivalent"), wrong)]
        rejected = [r / n if n else 0 for r, n in zip(tasks.column("correct_rejected"), tasks.column("correct_probes"))]
        ax.barh([i - 0.2 for i in y], confirmed, height=0.4, color=COLOURS["survived"], label="wrong probes that survived, confirmed")
        ax.barh([i - 0.2 for i in y], equivalent, left=confirmed, height=0.4, color=COLOURS["equivalent"],
                label="survived, likely equivalent (no evidence)")  # fmt: skip
        ax.barh([i + 0.2 for i in y], rejected, height=0.4, color=COLOURS["rejected"], label="correct probes rejected")
        ax.set_yticks(list(y), tasks.column("instance_id"))
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the task's probes")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, frameon=False, fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        chart += _svg(fig)
    body = chart + "<h3>Per operator</h3>" + table(operators) + "<h3>Per task</h3>" + table(tasks, cat.tasks)
    return Section("Probe survival", body)


def slow_and_flaky(cat: Catalog) -> Section:
    slowest = cat.ask(SLOWEST_RUNS)
    labels = [f"{i} · {t} #{a}" for i, t, a in zip(slowest.column("instance_id"), slowest.column("tree"), slowest.column("attempt"))]
    chart = bar_chart(labels, slowest.column("seconds"), "seconds of the test command") if slowest.rows else ""
    flaky = cat.ask(FLAKY_TESTS)
    return Section("Slowest test runs and flaky tests", chart + table(slowest) + "<h3>Flaky tests</h3>" + table(flaky))


def errors(cat: Catalog) -> Section:
    load = cat.ask(LOAD_ERRORS)
    infra = cat.ask(INFRA_ERRORS)
    counts: dict[str, int] = {}
    for stage in load.column("stage"):
        counts[f"load: {stage}"] = counts.get(f"load: {stage}", 0) + 1
    for reason in infra.column("reason"):
        counts[f"infrastructure: {reason}"] = counts.get(f"infrastructure: {reason}", 0) + 1
    chart = bar_chart(list(counts), list(counts.values()), "errors") if counts else ""
    body = chart + "<h3>Rows that did not load</h3>" + table(load) + "<h3>Infrastructure failures</h3>" + table(infra)
    return Section("Load and infrastructure errors", body)


def latest_run(cat: Catalog) -> Section | None:
    """Only for run folders a schedule writes to."""
    if "increments" not in cat.views or not cat.con.execute("select count(*) from increments").fetchone()[0]:
        return None
    answer = cat.ask(LATEST_RUN)
    return Section("The latest scheduled run", bar_chart(answer.column("change"), answer.column("tasks"), "tasks") + table(answer))


def duplicates(cat: Catalog) -> Section | None:
    """Fixes shared between the loaded sources and with the eval sets (``curation.dedup``)."""
    if "clusters" not in cat.views or not cat.con.execute("select count(*) from clusters").fetchone()[0]:
        return None
    fixes = cat.ask("SELECT source, count(*) AS tasks, count(DISTINCT cluster_id) AS fixes FROM clusters GROUP BY source ORDER BY source")
    matrix = cat.ask("PIVOT (SELECT source_a AS source, source_b, fixes FROM overlap) ON source_b USING sum(fixes) GROUP BY source ORDER BY source")
    pairs = cat.ask("SELECT rule, merged, count(*) AS pairs FROM duplicates GROUP BY ALL ORDER BY merged DESC, rule")
    tainted = cat.ask("SELECT eval_source, rule, count(DISTINCT member) AS tasks, count(*) FILTER (WHERE predates_cutoff) AS predating_cutoff "
                      "FROM contamination GROUP BY ALL ORDER BY eval_source, rule")  # fmt: skip
    body = (table(fixes) + "<h3>Overlap: fixes each pair of sources shares (a corpus with itself: fixes it ships twice; "
            "with an eval set: exact contamination)</h3>" + table(matrix) + "<h3>Pairs by rule (merged, or reported only)</h3>"
            + table(pairs) + "<h3>Contamination by the eval sets</h3>" + table(tainted))  # fmt: skip
    return Section("Duplicates and contamination", body)
