"""Assertion sites, assertion outcomes and binding assertions.

Three steps, all pure:

1. ``assertion_sites`` (``curation.assertion_sites``): the static assertion sites of a Python file, found
   with tree-sitter (the ``tree_sitter_python`` grammar wheel; nothing is downloaded): ``assert`` statements, ``self.assert*``
   / ``self.fail*`` calls (unittest style) and ``pytest.raises`` (as a call or a ``with`` item, spelled
   ``pytest.raises`` or, imported from pytest, ``raises``).
2. ``parse_events`` reads the JSONL written by the ``swedeck_assertions`` pytest plugin
   (``harness/grading/plugins/swedeck_assertions.py``), and ``assertion_outcomes`` joins events and sites into
   one ``SiteOutcome`` per (test, site): how often the site passed and failed in that test, and a
   status: ``passed`` (every event passed), ``failed`` (any event failed) or ``not_reached`` (no event).
3. ``binding_assertions``: the sites of FAIL_TO_PASS tests that fail or are not reached on the buggy
   tree and pass on the gold tree; ``pytest.raises`` sites only where no other site binds (a test whose
   one failing check on buggy is an expected exception, boltons c1c25da's ``with raises(ValueError)``).

A site belongs to a test when it lies in the test function (same file, same qualname, or a function
nested in it) or when the plugin observed it while that test ran (asserts in helper functions and helper
modules). The record key, ``(test file, test id, assert file, line, source hash, occurrence)``, is the
same on both trees because they share the hidden test files.

The plugin records ``pytest.raises`` like a unittest assertion method (at its caller's line, when the
call returns or the ``with`` block exits), and ``self.assertRaises`` like any other unittest assertion.

``records_for_run`` and ``binding_keys`` adapt these functions to Pipeline 1's stored records.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from curation.assertion_sites import Site, SiteKind, assertion_sites, source_hash
from harness import records as rec
from harness.records import Record

AssertionStatus = Literal["passed", "failed", "not_reached"]
Outcome = Literal["passed", "failed"]
Key = tuple[str, str, str, int, str, int]

RUNTIME_KINDS: frozenset[str] = frozenset({"assert", "unittest", "raises"})  # what the plugin records

# ------------------------------------------------------------------------------------------ events


@dataclass(frozen=True)
class Event:
    nodeid: str
    file: str
    line: int
    source: str
    outcome: Outcome
    count: int = 1  # the plugin writes repeats of one (test, site, outcome) as a single counted line


def parse_events(jsonl: str) -> list[Event]:
    """The plugin's events in order. A last line cut short (the run was killed mid-write; the text
    does not end with a newline) is dropped; any other malformed line raises ValueError."""
    lines = jsonl.split("\n")
    events = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if "plugin" in row:  # a process announcing that it loaded the plugin
                continue
            outcome = row["outcome"]
            if outcome not in ("passed", "failed"):
                raise ValueError(f"unknown outcome {outcome!r}")
            event = Event(
                nodeid=str(row["nodeid"]),
                file=str(row["file"]),
                line=int(row["line"]),
                source=str(row.get("source", "")),
                outcome=outcome,
                count=int(row.get("count", 1)),
            )
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):  # no newline after it: truncated
                break
            raise ValueError(f"assertion log line {number} is malformed: {exc}") from exc
        events.append(event)
    return events


# ------------------------------------------------------------------------------------------ records


class SiteOutcome(Record):
    """One site's outcome in one test on one run, before it is stamped and stored as
    ``harness.records.AssertionRecord``; ``key`` is stable across trees."""

    test_file: str
    test_id: str
    assert_file: str
    line: int
    end_line: int
    qualname: str
    kind: SiteKind
    source: str
    source_hash: str
    occurrence: int
    passed: int
    failed: int
    status: AssertionStatus

    @property
    def key(self) -> Key:
        return record_key(self)


class _Keyed(Protocol):
    @property
    def test_id(self) -> str: ...
    @property
    def assert_file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def source_hash(self) -> str: ...
    @property
    def occurrence(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def kind(self) -> str: ...


R = TypeVar("R", bound=_Keyed)


def split_nodeid(nodeid: str) -> tuple[str, str]:
    """``tests/t.py::C::test_x[a::b]`` -> (``tests/t.py``, ``C.test_x``)."""
    path, sep, rest = nodeid.partition("::")
    if not sep:
        return path, ""
    rest = rest.split("[", 1)[0]
    return path, rest.replace("::", ".")


def record_key(record: _Keyed) -> Key:
    """(test file, test id, assert file, line, source hash, occurrence) of any assertion record."""
    return (
        split_nodeid(record.test_id)[0],
        record.test_id,
        record.assert_file,
        record.line,
        record.source_hash,
        record.occurrence,
    )


def _in_test(site: Site, test_file: str, qualname: str) -> bool:
    if not qualname or site.file != test_file:
        return False
    return site.qualname == qualname or site.qualname.startswith(qualname + ".<locals>.")


def _event_kind(source: str) -> SiteKind:
    if source.startswith("assert "):
        return "assert"
    if source.startswith(("pytest.raises(", "raises(")):
        return "raises"
    return "unittest" if source.startswith(("self.assert", "self.fail")) else "call"


def _site_for(event: Event, by_file: Mapping[str, Sequence[Site]], made: dict[tuple[str, int, str], Site]) -> Site:
    """The site an event belongs to: one starting on its line (the one with its source when several do),
    else the smallest one spanning the line, else a site made from the event itself."""
    candidates = by_file.get(event.file, ())
    digest = source_hash(event.source)
    starting = [s for s in candidates if s.line == event.line]
    if starting:
        return next((s for s in starting if s.source_hash == digest), starting[0])
    spanning = [s for s in candidates if s.line <= event.line <= s.end_line]
    if spanning:
        return min(spanning, key=lambda s: (s.end_line - s.line, -s.line))
    ident = (event.file, event.line, digest)
    if ident not in made:
        made[ident] = Site(
            file=event.file,
            line=event.line,
            end_line=event.line,
            qualname="",
            kind=_event_kind(event.source),
            source=event.source,
            source_hash=digest,
            occurrence=0,
        )
    return made[ident]


def assertion_outcomes(
    events: Iterable[Event],
    sites: Iterable[Site],
    test_ids: Iterable[str],
    *,
    kinds: Iterable[str] = RUNTIME_KINDS,
) -> list[SiteOutcome]:
    """One record per (test, site) for every test in ``test_ids`` and every test the events name.

    A test's sites are those inside its function plus every site observed while it ran; counts come
    from the events, and a site without events in that test is ``not_reached``. Sites of other
    ``kinds`` are ignored."""
    wanted = set(kinds)
    site_list = [s for s in sites if s.kind in wanted]
    by_file: dict[str, list[Site]] = defaultdict(list)
    for site in site_list:
        by_file[site.file].append(site)
    made: dict[tuple[str, int, str], Site] = {}
    counts: dict[tuple[str, Site], Counter[str]] = defaultdict(Counter)
    tests: dict[str, None] = dict.fromkeys(test_ids)
    for event in events:
        tests.setdefault(event.nodeid)
        counts[(event.nodeid, _site_for(event, by_file, made))][event.outcome] += event.count
    observed: dict[str, set[Site]] = defaultdict(set)
    for nodeid, site in counts:
        observed[nodeid].add(site)

    records = []
    for nodeid in tests:
        test_file, qualname = split_nodeid(nodeid)
        own = {s for s in by_file.get(test_file, ()) if _in_test(s, test_file, qualname)}
        for site in own | observed[nodeid]:
            tally = counts.get((nodeid, site), Counter())
            status: AssertionStatus = "failed" if tally["failed"] else "passed" if tally["passed"] else "not_reached"
            records.append(
                SiteOutcome(
                    test_file=test_file,
                    test_id=nodeid,
                    assert_file=site.file,
                    line=site.line,
                    end_line=site.end_line,
                    qualname=site.qualname,
                    kind=site.kind,
                    source=site.source,
                    source_hash=site.source_hash,
                    occurrence=site.occurrence,
                    passed=tally["passed"],
                    failed=tally["failed"],
                    status=status,
                )
            )
    return sorted(records, key=record_key)


def binding_assertions(buggy: Sequence[_Keyed], gold: Sequence[R], fail_to_pass: Iterable[str]) -> list[R]:
    """The gold records of FAIL_TO_PASS tests whose site passes on gold and fails or is not reached
    on buggy. A key with no buggy record counts as not reached: a FAIL_TO_PASS test did not pass on
    buggy, so a site it never reached there (say, in a helper first called after the failure) has no
    record on that tree. ``pytest.raises`` sites count only when no other site binds: they are the
    check of last resort (the plugin records them since boltons c1c25da, whose test's only failing check
    was ``with raises(ValueError)``), and the binding sites that tasks were labelled with stay as they
    were."""
    f2p = set(fail_to_pass)
    on_buggy = {record_key(r): r.status for r in buggy}
    binding = sorted(
        (
            r
            for r in gold
            if r.test_id in f2p and r.status == "passed" and on_buggy.get(record_key(r), "not_reached") != "passed"
        ),
        key=record_key,
    )
    checks = [r for r in binding if r.kind != "raises"]
    return checks or binding


def location(record: _Keyed) -> str:
    """``assert_file:line``, the form labels and ``Pipeline1Result.binding_assertions`` use."""
    return f"{record.assert_file}:{record.line}"


# ------------------------------------------------------------------------------------------ Pipeline 1


def sites_of(sources: Mapping[str, str]) -> list[Site]:
    """Every site of every Python file in ``sources`` (path -> text)."""
    return [
        site for path, text in sorted(sources.items()) if path.endswith(".py") for site in assertion_sites(text, path)
    ]


def records_for_run(trial: rec.TestRun, tree: str, attempt: int, stamp: Mapping[str, Any]) -> list[rec.AssertionRecord]:
    """Stored assertion records of one instrumented run (the grader's ``TestRun``)."""
    outcomes = assertion_outcomes(parse_events(trial.assert_events), sites_of(trial.test_sources), trial.statuses)
    fields = rec.AssertionRecord.model_fields
    return [
        rec.AssertionRecord(
            **stamp,
            tree=tree,
            attempt=attempt,
            **{k: v for k, v in outcome.model_dump().items() if k in fields},
        )
        for outcome in outcomes
    ]


def binding_keys(records: Sequence[rec.AssertionRecord], fail_to_pass: Iterable[str]) -> list[str]:
    """``file:line`` of the sites that bind in every pairing of a buggy run with a gold run."""
    runs: dict[tuple[str, int], list[rec.AssertionRecord]] = defaultdict(list)
    for r in records:
        runs[(r.tree, r.attempt)].append(r)
    buggy = [rs for (tree, _), rs in sorted(runs.items()) if tree == "buggy"]
    gold = [rs for (tree, _), rs in sorted(runs.items()) if tree == "gold"]
    if not buggy or not gold:
        return []
    f2p = set(fail_to_pass)
    common: set[Key] | None = None
    for b in buggy:
        for g in gold:
            keys = {record_key(r) for r in binding_assertions(b, g, f2p)}
            common = keys if common is None else common & keys
    by_key = {record_key(r): r for g in gold for r in g}
    return sorted({location(by_key[k]) for k in common or ()})


def explain_no_binding(records: Sequence[rec.AssertionRecord], fail_to_pass: Iterable[str], limit: int = 20) -> str:
    """What a ``no_binding_assertion`` rejection looked at: each FAIL_TO_PASS test with every
    assertion site recorded in it and its status on each tree (first run of each), or that no
    assertion ran in it at all."""
    first = {tree: min((r.attempt for r in records if r.tree == tree), default=0) for tree in ("buggy", "gold")}
    status: dict[str, dict[tuple[str, int, str], dict[str, str]]] = defaultdict(dict)
    sources: dict[tuple[str, int, str], str] = {}
    for r in records:
        if r.tree in first and r.attempt == first[r.tree]:
            site = (r.assert_file, r.line, r.source_hash)
            status[r.test_id].setdefault(site, {})[r.tree] = r.status
            sources[site] = r.source
    tests = sorted(set(fail_to_pass))
    lines = [f"no assertion passes on gold and fails or is not reached on buggy in the {len(tests)} FAIL_TO_PASS test(s):"]
    for test_id in tests[:limit]:
        seen = {site: trees for site, trees in status.get(test_id, {}).items() if set(trees.values()) != {"not_reached"}}
        if not seen:
            lines.append(f"{test_id}: no assertion ran in it on either tree")
            continue
        lines.append(f"{test_id}:")
        for (file, line, digest), trees in sorted(seen.items()):
            on = ", ".join(f"{tree} {trees.get(tree, 'not_reached')}" for tree in ("gold", "buggy"))
            lines.append(f"  {file}:{line} `{sources[(file, line, digest)][:120]}`: {on}")
    if len(tests) > limit:
        lines.append(f"... and {len(tests) - limit} more")
    return "\n".join(lines)

