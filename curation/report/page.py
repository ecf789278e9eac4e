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

from harness.names import file_name

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
    # a task's view: diff lines, a distinguishing input, a test strengthening added
    "diff_add": "#dcf5e1",
    "diff_del": "#fbe1df",
    "input": "#fff1d6",
    "added_test": "#e3ecfa",
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
        self.tasks = frozenset(r[0] for r in self.con.execute("select instance_id from tasks").fetchall())

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

# a survivor is confirmed (an input tells it from gold: too-loose evidence) or likely equivalent (none found: no evidence)
PROBES_PER_TASK = """\
select instance_id,
  count(*) filter (where kind = 'plausible_wrong') as wrong_probes,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1) as wrong_survived,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1 and distinguishing is not null) as confirmed,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1 and likely_equivalent) as likely_equivalent,
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

REJECTED_TASKS = """\
select reason, count(*) as tasks, list(instance_id order by instance_id) as instance_ids from p1_results
where decision = 'reject' group by reason order by tasks desc, reason"""

# one row per loaded task: where it ended, and what each later stage found
TASK_INDEX = """\
select t.instance_id, t.source, r.decision, r.reason, v.verdict,
  count(p.probe_id) filter (where p.kind = 'plausible_wrong' and p.reward < 1) as wrong_killed,
  count(p.probe_id) filter (where p.kind = 'plausible_wrong' and p.reward = 1 and p.distinguishing is not null) as confirmed,
  count(p.probe_id) filter (where p.kind = 'plausible_wrong' and p.reward = 1 and p.likely_equivalent) as likely_equivalent,
  count(p.probe_id) filter (where p.kind = 'correct_alternative' and p.reward < 1) as alternatives_rejected{strengthening}
from tasks t left join p1_results r using (run, instance_id) left join verdicts v using (run, instance_id)
  left join probes p using (run, instance_id){strengthening_join}
group by all order by t.instance_id"""

# what each task's view reads (text columns, one query per table for the whole run)
TASK_DETAIL = """\
select t.instance_id, t.source, t.repo, t.problem_statement, r.decision, r.reason, r.stage, r.detail, r.fail_to_pass,
  len(r.pass_to_pass) as pass_to_pass, r.flaky, r.gold_failing, r.binding_assertions, r.label_disagreements, r.runs
from tasks t left join p1_results r using (run, instance_id) order by t.instance_id"""
RUN_LOGS = "select instance_id, tree, attempt, outcome, log_path from runs order by instance_id, tree, attempt"
PROBE_DETAIL = """\
select instance_id, probe_id, kind, origin, operator, description, patch, reward, reason, decided_by, differing,
  distinguishing, likely_equivalent, differential_tried, log_path from probes order by instance_id, kind desc, reward desc, probe_id"""
VERDICT_DETAIL = """\
select instance_id, verdict, q1_gold_fixes_issue, q2_tests_grade_issue, q3_issue_states_requirements, evidence, rewritten_issue,
  rationale, judge, judge_model, transcript_path, detail from verdicts"""
STRENGTHENING_DETAIL = "select instance_id, status, reason, survivors, killed, tests, judge_session from strengthening"


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


def task_anchor(instance_id: str) -> str:
    return f"task-{file_name(instance_id)}"


def _text(value: object, tasks: frozenset[str] = frozenset()) -> str:
    """A string, linked to its task's view when it names a task of the run."""
    if value in tasks:
        return f'<a class="t" href="#{task_anchor(str(value))}">{html.escape(str(value))}</a>'
    return html.escape(str(value))


def _cell(value: object, ref: int, tasks: frozenset[str] = frozenset()) -> str:
    if isinstance(value, bool) or value is None:
        return html.escape("" if value is None else str(value))
    if isinstance(value, (int, float)):
        return f'<a class="n" href="#q{ref}">{value:g}</a>'
    if isinstance(value, list):
        return ", ".join(_text(v, tasks) for v in value)
    return _text(value, tasks)


def table(answer: Answer, tasks: frozenset[str] = frozenset()) -> str:
    """The answer as a table: numbers link to its query, and strings that name a task to the task's view."""
    if not answer.rows:
        return f'<p class="none">none (<a href="#q{answer.ref}">query {answer.ref}</a>)</p>'
    head = "".join(f"<th>{html.escape(c)}</th>" for c in answer.columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v, answer.ref, tasks)}</td>" for v in row) + "</tr>" for row in answer.rows)
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


# ------------------------------------------------------------------------------------------- each task's view


def _rows(cat: Catalog, sql: str) -> tuple[int, dict[str, list[dict]]]:
    """A detail query's rows as dicts, grouped by instance id, and its number on the page."""
    answer = cat.ask(sql)
    grouped: dict[str, list[dict]] = {}
    for row in answer.rows:
        record = dict(zip(answer.columns, row))
        grouped.setdefault(record["instance_id"], []).append(record)
    return answer.ref, grouped


def _log(path: str, label: str) -> str:
    if not path:
        return ""
    href = Path(path).as_uri() if Path(path).is_absolute() else path
    return f'<a class="log" href="{html.escape(href)}">{html.escape(label)}</a>'


def _diff(patch: str) -> str:
    """A unified diff with its added and removed lines coloured."""
    lines = []
    for line in patch.splitlines():
        kind = ("hunk" if line.startswith("@@") else "file" if line.startswith(("diff ", "--- ", "+++ "))
                else "add" if line.startswith("+") else "del" if line.startswith("-") else "")  # fmt: skip
        lines.append(f'<span class="{kind}">{html.escape(line)}</span>' if kind else html.escape(line))
    return f'<pre class="diff">{chr(10).join(lines)}</pre>' if lines else '<p class="none">empty patch</p>'


def _ids(values: Sequence[str], prefix: str = "", limit: int = 50) -> str:
    """Ids as a list, each linked to its anchor on the page when ``prefix`` is given."""
    shown = [f'<a href="#{prefix}{html.escape(file_name(v))}">{html.escape(v)}</a>' if prefix else f"<code>{html.escape(v)}</code>"
             for v in values[:limit]]  # fmt: skip
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return (", ".join(shown) + more) if shown else '<span class="none">none</span>'


def _behaviour(b: dict) -> str:
    if b["raised"]:
        return f"raises <code>{html.escape(b['raised'])}</code>"
    return f"returns <code>{html.escape(b['value'])}</code>" + (f", prints <code>{html.escape(b['stdout'])}</code>" if b["stdout"] else "")


def _input(d: dict) -> str:
    """A distinguishing input: where it came from, the call, and what gold and the probe do on it."""
    setup = "\n".join(d["setup"])
    return (f'<div class="input"><b>distinguishing input</b> ({html.escape(d["source"])}, from <code>{html.escape(d["test_id"])}</code>: '
            f'{html.escape(d["how"])})<pre>{html.escape(setup + chr(10) if setup else "")}{html.escape(d["call"])}</pre>'
            f'gold {_behaviour(d["gold"])}; this patch {_behaviour(d["other"])}</div>')  # fmt: skip


def _probe(p: dict, label: str) -> str:
    head = (f'<div class="probe" id="probe-{html.escape(file_name(p["probe_id"]))}"><div class="head"><b>{label}</b> · '
            f'<code>{html.escape(p["probe_id"])}</code> · {html.escape(p["kind"].replace("_", " "))} · {html.escape(p["operator"])} '
            f'({html.escape(p["origin"])}) · reward {p["reward"]:g} ({html.escape(p["reason"])}, {html.escape(p["decided_by"])} grade) '
            f'{_log(p["log_path"], "log")}</div><p>{html.escape(p["description"])}</p>')  # fmt: skip
    differing = f'<p>tests that differ from gold: {_ids(p["differing"])}</p>' if p["differing"] else ""
    return head + (_input(p["distinguishing"]) if p["distinguishing"] else "") + differing + _diff(p["patch"]) + "</div>"


def _probes(probes: list[dict]) -> str:
    wrong = [p for p in probes if p["kind"] == "plausible_wrong"]
    confirmed = [p for p in wrong if p["reward"] == 1 and p["distinguishing"]]
    equivalent = [p for p in wrong if p["reward"] == 1 and p["likely_equivalent"]]
    unexamined = [p for p in wrong if p["reward"] == 1 and not p["distinguishing"] and not p["likely_equivalent"]]
    killed = [p for p in wrong if p["reward"] < 1]
    alternatives = [p for p in probes if p["kind"] == "correct_alternative"]
    rejected = [p for p in alternatives if p["reward"] < 1]
    summary = (f"<p>{len(wrong)} plausible-but-wrong probes: {len(killed)} killed by the tests, {len(confirmed)} survived and "
               f"confirmed (an input tells them from gold: too-loose evidence), {len(equivalent)} survived and likely equivalent "
               f"(no input tried tells them from gold: no evidence)"
               + (f", {len(unexamined)} survived, not examined" if unexamined else "")
               + f". {len(alternatives)} correct alternatives, {len(rejected)} rejected by the tests (over-restrictive evidence).</p>")  # fmt: skip
    blocks = [_probe(p, "confirmed survivor") for p in confirmed] + [_probe(p, "likely equivalent survivor") for p in equivalent]
    blocks += [_probe(p, "survivor, not examined") for p in unexamined] + [_probe(p, "rejected correct alternative") for p in rejected]
    rows = "".join(
        f'<tr id="probe-{html.escape(file_name(p["probe_id"]))}"><td><code>{html.escape(p["probe_id"])}</code></td><td>{html.escape(p["operator"])}</td>'
        f'<td>{html.escape(p["description"])}</td><td>{html.escape(p["reason"])}, {html.escape(p["decided_by"])}</td>'
        f'<td>{_ids(p["differing"], limit=3)}</td><td>{_log(p["log_path"], "log")}</td></tr>'
        for p in killed
    )  # fmt: skip
    killed_table = ("<h5>Killed</h5><table><thead><tr><th>probe</th><th>operator</th><th>what it does</th><th>grade</th>"
                    f"<th>tests that caught it</th><th></th></tr></thead><tbody>{rows}</tbody></table>") if killed else ""  # fmt: skip
    return summary + "".join(blocks) + killed_table


def _verdict(v: dict) -> str:
    answers = (f"Q1 gold fixes the issue: <b>{html.escape(str(v['q1_gold_fixes_issue']))}</b> · Q2 the tests grade it: "
               f"<b>{html.escape(str(v['q2_tests_grade_issue']))}</b> · Q3 the issue states what the tests require: "
               f"<b>{html.escape(str(v['q3_issue_states_requirements']))}</b>")  # fmt: skip
    judge = "none: the verdict follows from the executed probes alone" if v["judge"] == "none" else v["judge_model"]
    return (f'<p>verdict <b>{html.escape(v["verdict"])}</b> by {html.escape(judge)} {_log(v["transcript_path"], "transcript")}</p>'
            f'<p>{answers}</p><p>cited probes: {_ids(v["evidence"], "probe-")}</p>'
            f'<div class="rationale"><b>rationale</b><pre>{html.escape(v["rationale"] or "(none given)")}</pre></div>'
            + (f'<p class="note">{html.escape(v["detail"])}</p>' if v["detail"] else ""))  # fmt: skip


def _added(t: dict) -> str:
    checks = " ".join(f'<span class="{"ok" if c["passed"] else "bad"}" title="{html.escape(c["detail"])}">{html.escape(c["step"])} '
                      f'{"✓" if c["passed"] else "✗"}</span>' for c in t["checks"])  # fmt: skip
    state = f"rejected at {t['rejected_at']}" if t["rejected_at"] else "kept"
    quote = f'<p>from the issue: <q>{html.escape(t["issue_quote"])}</q></p>' if t["issue_quote"] else ""
    return (f'<div class="added"><div class="head"><b>{html.escape(state)}</b> · <code>{html.escape(t["test_id"])}</code> '
            f'({html.escape(t["source"])}) · found by {html.escape(t["found_by"])}</div>{quote}<p>kills: {_ids(t["kills"], "probe-")} · '
            f'checks: {checks}</p><pre class="code">{html.escape(t["code"])}</pre></div>')  # fmt: skip


def _strengthening(s: dict) -> str:
    return (f'<p>status <b>{html.escape(s["status"])}</b>{": " + html.escape(s["reason"]) if s["reason"] else ""}'
            f'{" · judge session " + html.escape(s["judge_session"]) if s["judge_session"] else ""}</p>'
            f'<p>confirmed survivors: {_ids(s["survivors"], "probe-")} · killed by the strengthened tests: {_ids(s["killed"], "probe-")}</p>'
            + "".join(_added(t) for t in s["tests"]))  # fmt: skip


def _task(t: dict, runs: list[dict], probes: list[dict], verdict: dict | None, strengthening: dict | None, refs: str) -> str:
    outcome = "kept" if t["decision"] == "keep" else f"rejected: {t['reason']}" if t["decision"] else "not run by Pipeline 1"
    title = " · ".join(html.escape(x) for x in (t["instance_id"], t["source"], t["repo"], f"Pipeline 1 {outcome}",
                                                 f"verdict {verdict['verdict']}" if verdict else "",
                                                 f"strengthening {strengthening['status']}" if strengthening else "") if x)  # fmt: skip
    p1 = f'<p>{html.escape(outcome)}{" at " + html.escape(t["stage"]) if t["stage"] else ""}</p>'
    if t["detail"]:
        p1 += f'<pre class="detail">{html.escape(t["detail"])}</pre>'
    if t["decision"]:
        p1 += (f'<ul><li>FAIL_TO_PASS ({len(t["fail_to_pass"])}): {_ids(t["fail_to_pass"])}</li><li>PASS_TO_PASS: {t["pass_to_pass"]}</li>'
               f'<li>flaky: {_ids(t["flaky"])}</li><li>failing on gold: {_ids(t["gold_failing"])}</li>'
               f'<li>binding assertions: {_ids(t["binding_assertions"])}</li><li>label disagreements: {_ids(t["label_disagreements"])}</li>'
               f'<li>runs per tree: {t["runs"]}</li></ul>')  # fmt: skip
    logs = " ".join(_log(r["log_path"], f"{r['tree']} #{r['attempt']} ({r['outcome']})") for r in runs if r["log_path"])
    body = [f"<h4>Pipeline 1</h4>{p1}" + (f"<p>logs: {logs}</p>" if logs else "")]
    if probes:
        body.append(f"<h4>Probes</h4>{_probes(probes)}")
    if verdict:
        body.append(f"<h4>Verdict</h4>{_verdict(verdict)}")
        if verdict["rewritten_issue"]:
            body.append(f'<h4>Rewritten issue</h4><pre class="issue">{html.escape(verdict["rewritten_issue"])}</pre>')
    if strengthening:
        body.append(f"<h4>Strengthening</h4>{_strengthening(strengthening)}")
    issue = f'<details class="issue"><summary>the issue as the corpus states it</summary><pre class="issue">{html.escape(t["problem_statement"])}</pre></details>'
    return (f'<details class="task" id="{task_anchor(t["instance_id"])}"><summary>{title}</summary>{issue}{"".join(body)}'
            f'<p class="meta">from {refs}</p></details>')


def task_views(cat: Catalog) -> Section:
    """An index of every loaded task, then one view per task a reviewer reads top to bottom: Pipeline 1's
    outcome and why, the probes (survivors with their diffs and distinguishing inputs), the verdict and
    its rationale and citations, the rewritten issue, the strengthening, and links to the logs."""
    strengthened = "strengthening" in cat.views  # a catalog written before the stage existed has no such view
    index = cat.ask(TASK_INDEX.format(strengthening=",\n  s.status as strengthening" if strengthened else "",
                                      strengthening_join=" left join strengthening s using (run, instance_id)" if strengthened else ""))  # fmt: skip
    details = [_rows(cat, sql) for sql in (TASK_DETAIL, RUN_LOGS, PROBE_DETAIL, VERDICT_DETAIL, *[STRENGTHENING_DETAIL] * strengthened)]
    refs = ", ".join(f'<a href="#q{ref}">query {ref}</a>' for ref, _ in details)
    (_, tasks), (_, runs), (_, probes), (_, judged) = details[:4]
    strong = details[4][1] if strengthened else {}
    views = "".join(
        _task(t, runs.get(iid, []), probes.get(iid, []), (judged.get(iid) or [None])[0], (strong.get(iid) or [None])[0], refs)
        for iid, (t,) in tasks.items()
    )
    return Section("Tasks", table(index, cat.tasks) + "<h3>Each task</h3>" + views)


SECTIONS: tuple[Callable[[Catalog], Section | None], ...] = (
    latest_run, funnel, reject_reasons, verdicts, probe_survival, slow_and_flaky, errors, duplicates, task_views
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
details.task { border: 1px solid #ddd; border-radius: 4px; margin: 0.4em 0; padding: 0 10px; }
details.task > summary { padding: 5px 0; cursor: pointer; } details.task[open] > summary { font-weight: 600; }
details.task:target, details.task[open] { border-color: #1d4f8a; }
h4 { margin: 1em 0 0.3em; } h5 { margin: 0.8em 0 0.2em; } details.task td { overflow-wrap: anywhere; }
.probe, .added { border: 1px solid #e3e3e3; border-radius: 4px; margin: 0.6em 0; padding: 4px 8px; }
.probe .head, .added .head { font-size: 13px; } .probe p, .added p { margin: 0.3em 0; }
pre.diff { font: 12px/1.35 ui-monospace, monospace; background: #fafafa; user-select: text; }
pre.diff .hunk { color: #6a4fa0; } pre.diff .file { color: #555; font-weight: 600; }
.input { border-radius: 4px; padding: 4px 8px; margin: 0.4em 0; } .input pre { background: transparent; user-select: text; }
pre.code { user-select: text; } pre.issue, pre.detail, .rationale pre { background: #f7f7f7; user-select: text; }
.ok { color: #2f7a3f; } .bad { color: #b8504b; } a.log { font-size: 12px; margin-right: 0.6em; } .note { color: #666; }
""" + f"""pre.diff .add, pre.diff .del {{ display: inline-block; width: 100%; }}
pre.diff .add {{ background: {COLOURS["diff_add"]}; }} pre.diff .del {{ background: {COLOURS["diff_del"]}; }}
.input {{ background: {COLOURS["input"]}; }} pre.code {{ background: {COLOURS["added_test"]}; }}
"""

SCRIPT = """
function copyQuery(ref) {
  const text = document.getElementById('cmd' + ref).textContent;
  navigator.clipboard.writeText(text);
}
// a link to a task's view (or to a probe inside it) opens the view, then shows it
function openTarget() {
  const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (!target) return;
  const view = target.closest('details.task');
  if (view) view.open = true;
  target.scrollIntoView();
}
window.addEventListener('hashchange', openTarget);
document.addEventListener('DOMContentLoaded', openTarget);
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
