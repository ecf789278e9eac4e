"""The report's task views: an index of every loaded task, then one view per task (Pipeline 1, probes, verdict, strengthening, logs)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from curation.report.pieces import Catalog, Section, breakable, table, task_anchor
from curation.report.queries import PROBE_DETAIL, RUN_LOGS, STRENGTHENING_DETAIL, TASK_DETAIL, TASK_INDEX, VERDICT_DETAIL
from harness.names import file_name


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
    shown = [f'<a href="#{prefix}{html.escape(file_name(v))}">{breakable(v)}</a>' if prefix else f"<code>{breakable(v)}</code>"
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


def _confirmed(probes: list[dict]) -> list[dict]:
    """Wrong probes that survived and that an input tells from gold: the too-loose evidence."""
    return [p for p in probes if p["kind"] == "plausible_wrong" and p["reward"] == 1 and p["distinguishing"]]


def _probes(probes: list[dict]) -> str:
    wrong = [p for p in probes if p["kind"] == "plausible_wrong"]
    confirmed = _confirmed(probes)
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
    judge = {"none": "none: the verdict follows from the executed probes alone",
             "scripted": f"{v['judge_model']}, the shipped test double (not a model)"}.get(v["judge"], v["judge_model"])  # fmt: skip
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
    elif verdict and verdict["verdict"] != "too_loose" and (confirmed := _confirmed(probes)):
        body.append(f'<h4>Strengthening</h4><p class="note">not strengthened, although {len(confirmed)} wrong probe(s) survived '
                    f'with an input that tells them from gold: the verdict is {html.escape(verdict["verdict"])}, and strengthening '
                    "runs on the tasks the judge calls too loose (adding tests cannot repair a suite that rejects correct "
                    "alternatives); <code>swedeck strengthen RUN --all</code> strengthens it anyway</p>")  # fmt: skip
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
