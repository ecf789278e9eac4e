"""One self-contained HTML page per run: what the run did to its tasks, drawn from its DuckDB catalog.

Every number on the page is a cell of a query's answer and links to that query, shown as the
``swedeck query`` command that prints it. Charts are matplotlib SVG inlined into the page, so it opens
from a file with no server and no network.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

REPORT_FILE = "report.html"
# one colour per meaning, the same in every chart
COLOURS = {
    "bar": "#3b6ea8",
    "accepted": "#4c9a5b",
    "too_loose": "#d08a2e",
    "over_restrictive": "#b8504b",
    "gold_wrong": "#7a5aa6",
    "unjudgeable": "#9a9a9a",
    "survived": "#d08a2e",
    "rejected": "#b8504b",
}
VERDICT_SHARES = ("accepted", "too_loose", "over_restrictive", "gold_wrong", "unjudgeable")


@dataclass(frozen=True)
class Answer:
    """The columns and rows one query gave, and its number on the page (its anchor is ``q<ref>``)."""

    ref: int
    columns: list[str]
    rows: list[tuple]

    def column(self, name: str) -> list:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


@dataclass
class Catalog:
    """A run's catalog, opened read-only; every query it answers is numbered for the page."""

    path: Path
    queries: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.con = duckdb.connect(str(self.path), read_only=True)
        self.views = {r[0] for r in self.con.execute("select table_name from information_schema.tables").fetchall()}

    def ask(self, sql: str) -> Answer:
        cursor = self.con.execute(sql)
        self.queries.append(sql)
        return Answer(len(self.queries), [d[0] for d in cursor.description], cursor.fetchall())

    def close(self) -> None:
        self.con.close()


@dataclass(frozen=True)
class Section:
    title: str
    body: str  # HTML: charts and tables


# ------------------------------------------------------------------------------------------- queries

FUNNEL = """\
select 'corpus rows' as stage, (select count(*) from tasks) + (select count(*) from load_errors) as tasks
union all select 'loaded', count(*) from tasks
union all select 'kept by Pipeline 1', count(*) from p1_results where decision = 'keep'
union all select 'judged', count(*) from verdicts where verdict <> 'unjudgeable'
union all select 'accepted', count(*) from verdicts where verdict in ('accept', 'issue_rewritten')"""
STRENGTHENED = "\nunion all select 'strengthened', count(*) from strengthening where status = 'repaired'"

# reject_reasons, verdict_shares and probe_survival are the catalog's named views (curation.store)
REJECT_REASONS = """\
select source, reason, infrastructure, tasks, round(share_of_source, 3) as share_of_source from reject_reasons
order by source, tasks desc, reason"""

VERDICTS_PER_SOURCE = """\
select source, sum(tasks) as judged,
  round(coalesce(sum(tasks) filter (where verdict in ('accept', 'issue_rewritten')), 0) / sum(tasks), 3) as accepted,
  round(coalesce(sum(tasks) filter (where verdict = 'too_loose'), 0) / sum(tasks), 3) as too_loose,
  round(coalesce(sum(tasks) filter (where verdict = 'over_restrictive'), 0) / sum(tasks), 3) as over_restrictive,
  round(coalesce(sum(tasks) filter (where verdict = 'gold_wrong'), 0) / sum(tasks), 3) as gold_wrong,
  round(coalesce(sum(tasks) filter (where verdict = 'unjudgeable'), 0) / sum(tasks), 3) as unjudgeable
from verdict_shares group by source order by source"""

VERDICTS = "select instance_id, verdict, judge, len(evidence) as cited_probes from verdicts order by verdict, instance_id"

# who gave the verdicts: a judge model (the scripted test double names itself), or none (executed probes alone)
JUDGES = """\
select judge, case when judge = 'none' then 'none: verdicts from the executed probes alone' else judge_model end as judged_by,
  count(*) as tasks from verdicts group by all order by all"""

SURVIVAL_PER_OPERATOR = """\
select kind, operator, sum(probes) as probes, sum(survived) as survived, round(sum(survived) / sum(probes), 3) as survival
from probe_survival group by kind, operator order by kind, survival desc, operator"""

PROBES_PER_TASK = """\
select instance_id,
  count(*) filter (where kind = 'plausible_wrong') as wrong_probes,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1) as wrong_survived,
  count(*) filter (where kind = 'correct_alternative') as correct_probes,
  count(*) filter (where kind = 'correct_alternative' and reward = 0) as correct_rejected
from probes group by instance_id order by instance_id"""

SLOWEST_RUNS = """\
select instance_id, tree, attempt, round(durations['tests'], 2) as seconds from runs
where durations['tests'] is not null order by seconds desc, instance_id limit 10"""

FLAKY_TESTS = """\
select instance_id, unnest(flaky) as test_id from p1_results where len(flaky) > 0 order by all"""

LOAD_ERRORS = "select source, stage, field, location, message from load_errors order by all"

# what the latest run of a schedule (``swedeck serve``) found new, changed, retried or unchanged
LATEST_RUN = """\
select change, count(*) as tasks from increments
where flow_run = (select flow_run from increments order by started desc limit 1) group by change order by change"""

INFRA_ERRORS = """\
select instance_id, reason, stage, detail from p1_results where infrastructure order by instance_id"""


# ------------------------------------------------------------------------------------------- html pieces


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return '<div class="chart">' + text[text.index("<svg") :] + "</div>"


def _figure(rows: int) -> Figure:
    fig = Figure(figsize=(7.5, 0.9 + 0.32 * max(rows, 1)), layout="constrained")
    fig.set_facecolor("white")
    return fig


def _cell(value: object, ref: int) -> str:
    if isinstance(value, bool) or value is None:
        return html.escape("" if value is None else str(value))
    if isinstance(value, (int, float)):
        return f'<a class="n" href="#q{ref}">{value:g}</a>'
    return html.escape(str(value))


def table(answer: Answer) -> str:
    if not answer.rows:
        return f'<p class="none">none (<a href="#q{answer.ref}">query {answer.ref}</a>)</p>'
    head = "".join(f"<th>{html.escape(c)}</th>" for c in answer.columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v, answer.ref)}</td>" for v in row) + "</tr>" for row in answer.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def query_block(ref: int, sql: str, db: Path) -> str:
    command = f'swedeck query "{sql}" --db {db}'
    return (
        f'<div class="sql" id="q{ref}"><div class="sqlhead">query {ref}'
        f'<button onclick="copyQuery({ref})">copy</button></div><pre id="cmd{ref}">{html.escape(command)}</pre></div>'
    )


def bar_chart(labels: Sequence[str], values: Sequence[float], xlabel: str) -> str:
    fig = _figure(len(labels))
    ax = fig.subplots()
    ax.barh(list(labels), list(values), color=COLOURS["bar"])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=all(isinstance(v, int) for v in values)))
    for y, v in enumerate(values):
        ax.annotate(f"{v:g}", (v, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def stacked_chart(labels: Sequence[str], parts: dict[str, Sequence[float]], xlabel: str) -> str:
    fig = _figure(len(labels))
    ax = fig.subplots()
    left = [0.0] * len(labels)
    for name, values in parts.items():
        ax.barh(list(labels), list(values), left=left, label=name.replace("_", " "), color=COLOURS.get(name))
        left = [a + b for a, b in zip(left, values)]
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=min(len(parts), 5), frameon=False, fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


# ------------------------------------------------------------------------------------------- sections


def funnel(cat: Catalog) -> Section:
    answer = cat.ask(FUNNEL + (STRENGTHENED if "strengthening" in cat.views else ""))
    chart = bar_chart(answer.column("stage"), answer.column("tasks"), "tasks")
    return Section("Funnel", chart + table(answer))


def reject_reasons(cat: Catalog) -> Section:
    answer = cat.ask(REJECT_REASONS)
    labels = [f"{s}: {r}" for s, r in zip(answer.column("source"), answer.column("reason"))]
    chart = bar_chart(labels, answer.column("tasks"), "tasks rejected by Pipeline 1") if answer.rows else ""
    return Section("Reject reasons per corpus", chart + table(answer))


def verdicts(cat: Catalog) -> Section:
    shares = cat.ask(VERDICTS_PER_SOURCE)
    chart = ""
    if shares.rows:
        parts = {name: shares.column(name) for name in VERDICT_SHARES}
        chart = stacked_chart(shares.column("source"), parts, "share of judged tasks")
    return Section("Verdicts per corpus", chart + table(cat.ask(JUDGES)) + table(shares) + table(cat.ask(VERDICTS)))


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
        survived = [s / n if n else 0 for s, n in zip(tasks.column("wrong_survived"), tasks.column("wrong_probes"))]
        rejected = [r / n if n else 0 for r, n in zip(tasks.column("correct_rejected"), tasks.column("correct_probes"))]
        ax.barh([i - 0.2 for i in y], survived, height=0.4, color=COLOURS["survived"], label="wrong probes that survived")
        ax.barh([i + 0.2 for i in y], rejected, height=0.4, color=COLOURS["rejected"], label="correct probes rejected")
        ax.set_yticks(list(y), tasks.column("instance_id"))
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the task's probes")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, frameon=False, fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        chart += _svg(fig)
    body = chart + "<h3>Per operator</h3>" + table(operators) + "<h3>Per task</h3>" + table(tasks)
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


SECTIONS: tuple[Callable[[Catalog], Section | None], ...] = (
    latest_run, funnel, reject_reasons, verdicts, probe_survival, slow_and_flaky, errors, duplicates
)

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.meta { color: #666; } .chart svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; }
th, td { border-bottom: 1px solid #eee; padding: 3px 10px; text-align: left; vertical-align: top; }
td:has(a.n) { text-align: right; } a.n { color: #1d4f8a; text-decoration: none; } a.n:hover { text-decoration: underline; }
.none { color: #888; } .sql { margin: 0.6em 0; border: 1px solid #ddd; border-radius: 4px; }
.sql:target { border-color: #1d4f8a; box-shadow: 0 0 0 2px #c9dbf0; }
.sqlhead { background: #f6f6f6; padding: 2px 8px; font-size: 12px; color: #555; }
.sqlhead button { float: right; font-size: 11px; }
pre { margin: 0; padding: 6px 8px; white-space: pre-wrap; font-size: 12px; user-select: all; }
"""

SCRIPT = """
function copyQuery(ref) {
  const text = document.getElementById('cmd' + ref).textContent;
  navigator.clipboard.writeText(text);
}
"""


def render(run_dir: Path) -> str:
    db = (run_dir / "catalog.duckdb").resolve()
    cat = Catalog(db)
    try:
        sections = [section for build in SECTIONS if (section := build(cat)) is not None]
    finally:
        cat.close()
    parts = [f"<section><h2>{html.escape(s.title)}</h2>{s.body}</section>" for s in sections]
    queries = "".join(query_block(i, sql, db) for i, sql in enumerate(cat.queries, start=1))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>swedeck run {html.escape(run_dir.name)}</title>"
        f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>"
        f"<h1>swedeck run {html.escape(run_dir.name)}</h1>"
        f'<p class="meta">{html.escape(str(run_dir.resolve()))} · written {stamp} · every number links to the query '
        f"that gives it</p>{''.join(parts)}<section><h2>Queries</h2>{queries}</section></body></html>"
    )


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    target = out or run_dir / REPORT_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(run_dir))
    return target
