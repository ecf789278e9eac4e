"""What a reviewer reads in ``swedeck report``: likely-equivalent survivors are not drawn as looseness, a
task with confirmed wrong survivors that was not strengthened says why, and long ids wrap at their
separators."""

from __future__ import annotations

import re
from pathlib import Path

import test_report
from conftest import swedeck_cli

from curation.store import commit_folder, read_records, refresh_catalog
from harness.records import ProbeResult, VerdictRecord

LONG_ID = "tests/test_formatting_of_currencies.py::test_format_uses_three_minor_units_for_kuwaiti_dinar"


def _run(out: Path) -> None:
    """The report test's run, with task c (over_restrictive) given a confirmed wrong survivor, and task
    d's wrong probe surviving but likely equivalent."""
    test_report.write_run(out)
    for iid, update in (("c", {"reward": 1.0, "distinguishing": test_report.SURVIVOR_INPUT, "differing": [LONG_ID]}),
                        ("d", {"reward": 1.0, "likely_equivalent": True})):  # fmt: skip
        folder = out / "p2" / iid
        probes = read_records(folder / "probes.parquet", ProbeResult)
        probes = [p.model_copy(update=update) if p.kind == "plausible_wrong" else p for p in probes]
        commit_folder(folder, [("probes", ProbeResult, probes), ("verdict", VerdictRecord, read_records(folder / "verdict.parquet", VerdictRecord))])
    refresh_catalog(out)


def test_regression_the_report_says_why_a_task_was_not_strengthened_and_draws_equivalents_apart(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(out)
    done = swedeck_cli("report", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text()
    assert "not strengthened, although 1 wrong probe(s) survived" in page and "the verdict is over_restrictive" in page
    assert page.count("not strengthened, although") == 1  # task b was strengthened; d's survivor is no evidence
    # the per-task chart: a survivor no input tells from gold is drawn apart from confirmed ones
    assert "survived, likely equivalent (no evidence)" in page and "wrong probes that survived, confirmed" in page
    # a long test id wraps after its separators, not inside a word
    assert re.search(r"tests/<wbr>test_<wbr>formatting_<wbr>of_<wbr>currencies.<wbr>py::<wbr>test_", page), "no break opportunities"
    assert "overflow-wrap: anywhere" not in page
