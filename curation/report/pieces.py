"""The report's building blocks: the catalog it asks (numbering every query), answer tables, query blocks and charts."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.names import file_name

# one colour per meaning, the same in every chart
COLOURS = {
    "bar": "#3b6ea8",
    "accepted": "#4c9a5b",
    "too_loose": "#d08a2e",
    "over_restrictive": "#b8504b",
    "gold_wrong": "#7a5aa6",
    "unjudgeable": "#9a9a9a",
    "survived": "#d08a2e",
    "equivalent": "#e8cfa6",
    "rejected": "#b8504b",
    # a task's view: diff lines, a distinguishing input, a test strengthening added
    "diff_add": "#dcf5e1",
    "diff_del": "#fbe1df",
    "input": "#fff1d6",
    "added_test": "#e3ecfa",
}


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


def breakable(text: str) -> str:
    """Escaped text that a narrow column wraps after its separators (``/``, ``::``, ``_``, ``.``, ``-``)
    instead of inside a word: test ids and paths are one long word each."""
    return re.sub(r"([/_.\-]|::)(?=.)", r"\1<wbr>", html.escape(text))


def _text(value: object, tasks: frozenset[str] = frozenset()) -> str:
    """A string, linked to its task's view when it names a task of the run."""
    if value in tasks:
        return f'<a class="t" href="#{task_anchor(str(value))}">{breakable(str(value))}</a>'
    return breakable(str(value))


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
