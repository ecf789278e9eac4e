"""One self-contained HTML page per run: what the run did to its tasks, drawn from its DuckDB catalog.

Every number on the page is a cell of a query's answer and links to that query, shown as the
``swedeck query`` command that prints it. Charts are matplotlib SVG inlined into the page, so it opens
from a file with no server and no network.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from curation.report.pieces import COLOURS, Catalog, Section, query_block
from curation.report.sections import duplicates, errors, funnel, latest_run, probe_survival, reject_reasons, slow_and_flaky, verdicts
from curation.report.tasks import task_views

REPORT_FILE = "report.html"


SECTIONS: tuple[Callable[[Catalog], Section | None], ...] = (
    latest_run, funnel, reject_reasons, verdicts, probe_survival, slow_and_flaky, errors, duplicates, task_views
)

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.meta { color: #666; } .chart svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; }
th, td { border-bottom: 1px solid #eee; padding: 3px 10px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
td:has(a.n) { text-align: right; } a.n { color: #1d4f8a; text-decoration: none; } a.n:hover { text-decoration: underline; }
.none { color: #888; } .sql { margin: 0.6em 0; border: 1px solid #ddd; border-radius: 4px; }
.sql:target { border-color: #1d4f8a; box-shadow: 0 0 0 2px #c9dbf0; }
.sqlhead { background: #f6f6f6; padding: 2px 8px; font-size: 12px; color: #555; }
.sqlhead button { float: right; font-size: 11px; }
pre { margin: 0; padding: 6px 8px; white-space: pre-wrap; font-size: 12px; user-select: all; }
details.task { border: 1px solid #ddd; border-radius: 4px; margin: 0.4em 0; padding: 0 10px; }
details.task > summary { padding: 5px 0; cursor: pointer; } details.task[open] > summary { font-weight: 600; }
details.task:target, details.task[open] { border-color: #1d4f8a; }
h4 { margin: 1em 0 0.3em; } h5 { margin: 0.8em 0 0.2em; } 
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
