"""The run report: numbers that are exactly their queries' answers, a page with nothing to fetch, and a
real headless Chromium that draws its charts."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest

from curation.report import COLOURS, write_report
from curation.store import commit_folder, refresh_catalog
from harness.records import LoadError, Pipeline1Result, ProbeResult, RunRecord, Strengthening, TaskRow, VerdictRecord

# instance id -> (source, Pipeline 1 reason ("" = kept), infrastructure, flaky tests, verdict, probes as (kind, reward))
RUN = {
    "a": ("r2e_gym", "", False, [], "accept", [("plausible_wrong", 0.0), ("correct_alternative", 1.0)]),
    "b": ("r2e_gym", "", False, ["t::flaky"], "too_loose", [("plausible_wrong", 1.0), ("plausible_wrong", 0.0)]),
    "c": ("local", "", False, [], "over_restrictive", [("correct_alternative", 0.0), ("plausible_wrong", 0.0)]),
    "d": ("local", "", False, [], "issue_rewritten", [("plausible_wrong", 0.0)]),
    "e": ("local", "gold_fails", False, [], None, []),
    "f": ("r2e_gym", "env_error", True, [], None, []),
}


def _stamp(iid: str) -> dict:
    return {"config_hash": "cfg", "task_hash": f"h{iid}", "instance_id": iid}


def write_run(out: Path) -> None:
    """A run's records written by the store's own functions, one folder per task, then its catalog."""
    for n, (iid, (source, reason, infra, flaky, verdict, probes)) in enumerate(RUN.items()):
        task = TaskRow(**_stamp(iid), source=source, repo=f"org/{iid}", base_commit="", problem_statement="x",
                       test_cmd=["pytest"], log_parser="pytest", environment="recipe", test_paths=[],
                       claimed_fail_to_pass=[], claimed_pass_to_pass=[])  # fmt: skip
        runs = [
            RunRecord(**_stamp(iid), tree=tree, attempt=0, backend="bwrap", outcome="ok", statuses={}, exit_codes=[0],
                      apply_strategy="", spoof_evidence=[], durations={"tests": 1.0 + n + (tree == "gold")},
                      log_path="", detail="")  # fmt: skip
            for tree in ("buggy", "gold")
        ]
        result = Pipeline1Result(**_stamp(iid), source=source, repo=f"org/{iid}", decision="reject" if reason else "keep",
                                 reason=reason, infrastructure=infra, stage="environment" if infra else "",
                                 fail_to_pass=[], pass_to_pass=[], flaky=flaky, gold_failing=[], binding_assertions=[],
                                 label_disagreements=[], expected_status={}, runs=1, duration_s=1.0,
                                 detail="build failed" if infra else "")  # fmt: skip
        commit_folder(out / "p1" / iid, [("task", TaskRow, [task]), ("runs", RunRecord, runs), ("result", Pipeline1Result, [result])])
        if verdict is None:
            continue
        probe_rows = [
            ProbeResult(**_stamp(iid), probe_id=f"{iid}{k}", kind=kind, origin="model_free", operator="op", description="",
                        patch="", reward=reward, reason="ok", selected_reward=None, executions=1, differing=[], log_path="")  # fmt: skip
            for k, (kind, reward) in enumerate(probes)
        ]
        v = VerdictRecord(**_stamp(iid), verdict=verdict, q1_gold_fixes_issue=True, q2_tests_grade_issue="yes",
                          q3_issue_states_requirements=True, evidence=[p.probe_id for p in probe_rows[:1]],
                          rewritten_issue="", rationale="", judge_model="scripted", transcript_path="", tokens=0, detail="")  # fmt: skip
        commit_folder(out / "p2" / iid, [("probes", ProbeResult, probe_rows), ("verdict", VerdictRecord, [v])])
    repaired = Strengthening(**_stamp("b"), status="repaired", reason="", survivors=["b0"], killed=["b0"], tests=[], tests_patch="")
    commit_folder(out / "strengthen" / "b", [("strengthening", Strengthening, [repaired])])
    bad = LoadError(source="r2e_gym", location="rows.jsonl:7", field="patch", message="missing")
    commit_folder(out / "load_errors", [("errors", LoadError, [bad])])
    refresh_catalog(out)


class Page(HTMLParser):
    """The numbers (text and link target), the query command lines by anchor, and what the page loads."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: list[tuple[str, str]] = []
        self.commands: dict[str, str] = {}
        self.loads: list[str] = []
        self._link: str | None = None
        self._pre: str | None = None
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("class") == "n":
            self._link = a["href"]
        if tag == "pre":
            self._pre = a["id"].replace("cmd", "q")
            self.commands[self._pre] = ""
        if tag == "svg":
            self.svgs += 1
        self.loads += [v for k, v in a.items() if k in ("src", "href") and v and not v.startswith("#")]

    def handle_endtag(self, tag: str) -> None:
        self._link = None if tag == "a" else self._link
        self._pre = None if tag == "pre" else self._pre

    def handle_data(self, data: str) -> None:
        if self._link:
            self.numbers.append((data, self._link))
        if self._pre:
            self.commands[self._pre] += data


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Page]:
    out = tmp_path_factory.mktemp("run")
    write_run(out)
    page_path = write_report(out)
    page = Page()
    page.feed(page_path.read_text())
    return page_path, page


def _query(command: str) -> list[dict]:
    """The rows a command line as the page shows it prints, read the way a shell splits it."""
    program, sub, sql, flag, db = shlex.split(command)
    assert (program, sub, flag) == ("swedeck", "query", "--db")
    con = duckdb.connect(db, read_only=True)
    try:
        cursor = con.execute(sql)
        return [dict(zip([d[0] for d in cursor.description], row)) for row in cursor.fetchall()]
    finally:
        con.close()


def test_every_number_is_a_value_of_the_query_it_links_to(report: tuple[Path, Page]) -> None:
    _, page = report
    assert len(page.numbers) > 40
    answers = {ref: _query(cmd) for ref, cmd in page.commands.items()}
    for text, href in page.numbers:
        values = {f"{v:g}" for row in answers[href.lstrip("#")] for v in row.values() if isinstance(v, (int, float))}
        assert text in values, (text, href)


def test_funnel_and_audit_table_count_what_the_run_did(report: tuple[Path, Page]) -> None:
    _, page = report
    funnel = {row["stage"]: row["tasks"] for row in _query(page.commands["q1"])}
    # one row did not load; e and f were rejected; every kept task was judged; a and d were accepted;
    # the too-loose b was repaired
    assert funnel == {"corpus rows": 7, "loaded": 6, "kept by Pipeline 1": 4, "judged": 4, "accepted": 2, "strengthened": 1}
    reasons = {(row["source"], row["reason"]): row["infrastructure"] for row in _query(page.commands["q2"])}
    assert reasons == {("local", "gold_fails"): False, ("r2e_gym", "env_error"): True}
    shares = {row["source"]: row for row in _query(page.commands["q3"])}
    assert (shares["local"]["accepted"], shares["local"]["over_restrictive"]) == (0.5, 0.5)
    assert (shares["r2e_gym"]["accepted"], shares["r2e_gym"]["too_loose"]) == (0.5, 0.5)


def test_a_query_runs_as_copied_from_the_page(report: tuple[Path, Page]) -> None:
    _, page = report
    command = page.commands["q1"].replace("swedeck query", f"{sys.executable} -m flows.cli query", 1) + " --json"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == _query(page.commands["q1"])


def test_the_page_loads_nothing(report: tuple[Path, Page]) -> None:
    path, page = report
    assert page.loads == []  # every link is an anchor on the page; charts are inline SVG
    assert page.svgs >= 7  # funnel, reject reasons, verdicts, probe survival (2), slowest runs, errors


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("Debian's chromium is not installed: apt-get install chromium, or run ./install.sh", pytrace=False)
    return found


def test_chromium_draws_the_page_with_its_charts(report: tuple[Path, Page], tmp_path: Path) -> None:
    from PIL import Image

    path, _ = report
    shot = tmp_path / "report.png"
    done = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1200,4000", f"--screenshot={shot}", path.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    pixels = Image.open(shot).convert("RGB").getdata()
    counts: dict[tuple[int, int, int], int] = {}
    for p in pixels:
        counts[p] = counts.get(p, 0) + 1

    def drawn(colour: str) -> int:
        return counts.get(tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5)), 0)  # type: ignore[arg-type]

    # bars of each chart's colours, each more than a thin line's worth of pixels
    for name in ("bar", "accepted", "too_loose", "over_restrictive", "survived", "rejected"):
        assert drawn(COLOURS[name]) > 500, name


def test_report_command_writes_where_asked(report: tuple[Path, Page], tmp_path: Path) -> None:
    path, _ = report
    target = tmp_path / "elsewhere" / "r.html"
    done = subprocess.run([sys.executable, "-m", "flows.cli", "report", str(path.parent), "--out", str(target)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(target.resolve()) and "<svg" in target.read_text()
    missing = subprocess.run([sys.executable, "-m", "flows.cli", "report", str(tmp_path / "nothing")], capture_output=True,
                             text=True, env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    assert missing.returncode == 2 and "has no catalog" in missing.stderr
