"""Reading a run's canaries: which behaved on gold, their node ids, and the forgery they show."""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from harness.grading.canaries.planting import Canary
from harness.pyast import parse
from harness.records import Status

_FORGED = {Status.PASSED, Status.XPASS}


def validate(planted: list[Canary], statuses: dict[str, Status]) -> list[str]:
    """The keys of the trial's candidates that behaved on gold: copies that passed, and changed copies
    that failed while the test they copy passed (so they fail at the changed value)."""
    keys = []
    for canary in planted:
        ids = find_all(canary.name, canary.path, statuses)
        seen = {statuses[t] for t in ids}
        if canary.must_fail:
            original = {statuses[t] for t in find_all(canary.key.split("::")[-1].split(":")[0], canary.path, statuses)}
            if seen == {Status.FAILED} and original == {Status.PASSED}:
                keys.append(canary.key)
        elif seen == {Status.PASSED}:
            keys.append(canary.key)
    return sorted(keys)


def node_ids(canaries: list[Canary], files: dict[str, bytes]) -> list[str]:
    """pytest node ids of the canaries (for a selection of tests to run; a parametrized canary's id
    without its parameters)."""
    ids = []
    for canary in canaries:
        module = parse(files[canary.path].decode(), canary.path)
        owner = next(
            (
                node.name
                for node in module.body
                if isinstance(node, ast.ClassDef) and any(getattr(i, "name", "") == canary.name for i in node.body)
            ),
            None,
        )
        ids.append("::".join([canary.path, *([owner] if owner else []), canary.name]))
    return ids


def find_all(name: str, path: str, statuses: dict[str, Status]) -> list[str]:
    """The reported ids of a test of the file at ``path`` (several when it is parametrized); both
    pytest's ids and unittest's name the file's stem, and another file may have a test of that name."""
    pattern = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    stem = PurePosixPath(path).stem
    return [test_id for test_id in statuses if pattern.search(test_id) and stem in test_id]


def check(canaries: list[Canary], statuses: dict[str, Status], complete: bool) -> tuple[dict[str, Status], list[str]]:
    """The statuses without the canaries, and the evidence of forgery they show. ``complete`` is
    False when the run may legitimately have stopped early (--maxfail), so absence means nothing."""
    evidence = []
    found = {canary: find_all(canary.name, canary.path, statuses) for canary in canaries}
    planted = {test_id for ids in found.values() for test_id in ids}
    for canary, ids in found.items():
        if not ids:
            stem = PurePosixPath(canary.path).stem
            # the file's own id is its collection error: none of its tests, canaries included, ran
            siblings = [t for t in statuses if stem in t and t not in planted and t != canary.path]
            if complete and siblings:
                evidence.append(f"canary {canary.name} in {canary.path} is missing although {len(siblings)} of its file's tests were reported")
        elif canary.must_fail:
            evidence += [f"canary {t} must fail but was reported {statuses[t]}" for t in ids if statuses[t] in _FORGED]
    kept = {t: s for t, s in statuses.items() if t not in planted}
    return kept, evidence
