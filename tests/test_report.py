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
from harness.records import (
    AddedTest,
    Behaviour,
    DistinguishingInput,
    LoadError,
    Pipeline1Result,
    ProbeResult,
    RunRecord,
    Strengthening,
    TaskRow,
    ValidationCheck,
    VerdictRecord,
)

# instance id -> (source, Pipeline 1 reason ("" = kept), infrastructure, flaky tests, verdict, probes as (kind, reward))
RUN = {
    "a": ("r2e_gym", "", False, [], "accept", [("plausible_wrong", 0.0), ("correct_alternative", 1.0)]),
    "b": ("r2e_gym", "", False, ["t::flaky"], "too_loose", [("plausible_wrong", 1.0), ("plausible_wrong", 0.0)]),
    "c": ("local", "", False, [], "over_restrictive", [("correct_alternative", 0.0), ("plausible_wrong", 0.0)]),
    "d": ("local", "", False, [], "issue_rewritten", [("plausible_wrong", 0.0)]),
    "e": ("local", "gold_fails", False, [], None, []),
    "f": ("r2e_gym", "env_error", True, [], None, []),
}


# the too-loose task b: its surviving probe b0, the input that tells it from gold, and the test strengthening added to kill it
SURVIVOR_DIFF = """diff --git a/pkg/fmt.py b/pkg/fmt.py
--- a/pkg/fmt.py
+++ b/pkg/fmt.py
@@ -1,2 +1,2 @@
 def places(currency):
-    return 2
+    return 0 if currency == "JPY" else 2
"""
SURVIVOR_INPUT = DistinguishingInput(
    test_id="tests/test_fmt.py::test_jpy", how="'JPY' replaced by 'KWD', a currency the issue names", setup=["from pkg.fmt import places"],
    call="places('KWD')", gold=Behaviour(value="3"), other=Behaviour(value="2"), source="variant", target="pkg.fmt:places",
)  # fmt: skip
ADDED_TEST = AddedTest(
    file="tests/test_fmt.py", test_id="tests/test_fmt.py::test_kwd_has_three_places", source="model_free",
    found_by="b0: places('KWD')", code="def test_kwd_has_three_places():\n    assert places('KWD') == 3\n", kills=["b0"],
    checks=[ValidationCheck(step="gold_stable", passed=True), ValidationCheck(step="kills_survivor", passed=True, rewards=[0.0])],
)  # fmt: skip
RATIONALE = "b0 drops the KWD case the issue names and still earns full reward: the tests are too loose."


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
        if iid == "b":
            probe_rows[0] = probe_rows[0].model_copy(update={"patch": SURVIVOR_DIFF, "distinguishing": SURVIVOR_INPUT, "log_path": str(out / "b0.log")})
        v = VerdictRecord(**_stamp(iid), verdict=verdict, q1_gold_fixes_issue=True, q2_tests_grade_issue="yes",
                          q3_issue_states_requirements=True, evidence=[p.probe_id for p in probe_rows[:1]],
                          rewritten_issue="", rationale=RATIONALE if iid == "b" else "", judge_model="scripted", transcript_path="",
                          tokens=0, detail="")  # fmt: skip
        commit_folder(out / "p2" / iid, [("probes", ProbeResult, probe_rows), ("verdict", VerdictRecord, [v])])
    repaired = Strengthening(**_stamp("b"), status="repaired", reason="", survivors=["b0"], killed=["b0"], tests=[ADDED_TEST], tests_patch="")
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
        self.links: list[str] = []
        self._link: str | None = None
        self._pre: str | None = None
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("class") == "n":
            self._link = a["href"]
        if tag == "pre" and a.get("id", "").startswith("cmd"):
            self._pre = a["id"].replace("cmd", "q")
            self.commands[self._pre] = ""
        if tag == "svg":
            self.svgs += 1
        # what a browser fetches to draw the page; links a reader follows (logs) are not loads
        self.loads += [v for k, v in a.items() if (k == "src" or (k == "href" and tag != "a")) and v and not v.startswith("#")]
        if tag == "a" and not a.get("href", "#").startswith("#"):
            self.links.append(a["href"])

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
    shares = {row["source"]: row for row in _query(_command(page, "from verdict_shares group by source"))}
    assert (shares["local"]["accepted"], shares["local"]["over_restrictive"]) == (0.5, 0.5)
    assert (shares["r2e_gym"]["accepted"], shares["r2e_gym"]["too_loose"]) == (0.5, 0.5)


def _command(page: Page, text: str) -> str:
    (found,) = [command for command in page.commands.values() if text in command]
    return found


def test_a_query_runs_as_copied_from_the_page(report: tuple[Path, Page]) -> None:
    _, page = report
    command = page.commands["q1"].replace("swedeck query", f"{sys.executable} -m flows.cli query", 1) + " --json"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == _query(page.commands["q1"])


def test_the_page_loads_nothing(report: tuple[Path, Page]) -> None:
    path, page = report
    assert page.loads == []  # every link is an anchor on the page; charts are inline SVG
    assert page.links == [(path.parent / "b0.log").as_uri()]  # the logs a reader can open
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


def _chromium_at(url: str, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """Chromium at ``url``, its window taller than the page: headless Chromium paints only the first
    screen of a page it scrolled (to the link's anchor), so nothing may need scrolling."""
    return subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1200,12000", *flags, url],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip


class TaskView(HTMLParser):
    """The text of one task's view as the browser left it, and whether it is open."""

    def __init__(self, anchor: str) -> None:
        super().__init__()
        self.anchor, self.depth, self.text, self.open, self.others_open = anchor, 0, [], False, 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "details" and a.get("class") == "task":
            if a.get("id") == self.anchor:
                self.open, self.depth = "open" in a, 1
                return
            self.others_open += "open" in a
        if self.depth and tag == "details":
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag == "details":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.text.append(data)


def test_regression_a_reviewer_reads_why_a_too_loose_task_was_repaired(report: tuple[Path, Page], tmp_path: Path) -> None:
    """Issue 25: the report did not say why. Opened at a too-loose task's link, Chromium shows its view,
    top to bottom: Pipeline 1, the surviving probe with the input that tells it from gold and its diff,
    the verdict's rationale, and the test strengthening added to kill it."""
    from PIL import Image

    path, _ = report
    url = path.resolve().as_uri() + "#task-b"
    dom = _chromium_at(url, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    view = TaskView("task-b")
    view.feed(dom.stdout)
    assert view.open and view.others_open == 0  # the link opened this view and no other
    text = "".join(view.text)
    in_order = ["Pipeline 1", "kept", "1 survived and confirmed", "confirmed survivor", "places('KWD')",
                "gold returns 3; this patch returns 2", '+    return 0 if currency == "JPY" else 2', "Verdict", "too_loose", RATIONALE,
                "Strengthening", "repaired", "tests/test_fmt.py::test_kwd_has_three_places", "kills: b0", "assert places('KWD') == 3"]  # fmt: skip
    at = text.index("Pipeline 1", text.index("the issue as the corpus states it"))  # past the view's title line
    for needle in in_order:
        assert needle in text[at:], (needle, text[at:])
        at = text.index(needle, at) + len(needle)

    shot = tmp_path / "task.png"
    done = _chromium_at(url, tmp_path, f"--screenshot={shot}")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    counts = {colour: n for n, colour in Image.open(shot).convert("RGB").getcolors(1 << 24)}
    # drawn: the input's box, the diff's added and removed lines, the added test's code (inside task b's view, which alone is open)
    for name in ("input", "diff_add", "diff_del", "added_test"):
        colour = tuple(int(COLOURS[name][i : i + 2], 16) for i in (1, 3, 5))
        assert counts.get(colour, 0) > 2000, name


def test_each_reject_reason_names_its_tasks_and_links_their_views(report: tuple[Path, Page]) -> None:
    path, page = report
    rows = _query(_command(page, "list(instance_id order by instance_id) as instance_ids"))
    assert {r["reason"]: r["instance_ids"] for r in rows} == {"gold_fails": ["e"], "env_error": ["f"]}
    html_text = path.read_text()
    assert '<a class="t" href="#task-e">e</a>' in html_text and 'id="task-e"' in html_text
