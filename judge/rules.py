"""The judge's rules as pure functions: what a submitted verdict must rest on, which outcome it maps
to, and whether a rewritten issue leaks the gold implementation.

The judge loop (``judge.loop``) calls these on every ``submit_verdict``; a non-empty list of problems
is sent back to the model as the reason its verdict was refused.

Dependency order: Q1 (does gold fix the issue?) comes first; Q2 (do the tests grade what the issue
asks?) only when Q1 holds; Q3 (does the issue state what the tests require?) only when Q1 and Q2 hold.
Answers the order does not ask for are dropped, not refused.

Q2 is never answered by inspection. Each cited probe must have been executed by the one grader —
model-free probes handed to the judge, or judge-written ones graded in this session — and its grade
must point the way the verdict does:

=================  =======================================================================
q2 answer          every cited probe must be                              at least one
=================  =======================================================================
too_loose          plausible_wrong, reward 1, with a distinguishing       such probe
                   input (``differential``: it behaves unlike gold)
over_restrictive   correct_alternative, reward 0 (the tests ran)          such probe
yes                plausible_wrong, reward 0 (the tests ran), or          plausible_wrong
                   correct_alternative, reward 1
=================  =======================================================================

"The tests ran" means the grade failed on test statuses (``pattern_mismatch``, ``tests_errored``), not
because the patch did not apply, the sandbox failed or the output was cut.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.records import ProbeResult, Verdict

Q2Answer = Literal["yes", "too_loose", "over_restrictive"]
TESTS_RAN = ("pattern_mismatch", "tests_errored")  # a zero reward that the tests themselves gave


class VerdictArgs(BaseModel):
    """The arguments of ``submit_verdict``."""

    model_config = ConfigDict(extra="forbid")

    q1_gold_fixes_issue: bool
    q2_tests_grade_issue: Q2Answer | None = None
    q3_issue_states_requirements: bool | None = None
    evidence: list[str] = Field(default_factory=list)
    rewritten_issue: str | None = None
    rationale: str = ""


# ------------------------------------------------------------------------------------------ verdicts


def normalise(args: VerdictArgs) -> VerdictArgs:
    """Drop the answers the dependency order does not ask for, and duplicate citations."""
    update: dict = {"evidence": list(dict.fromkeys(e.strip() for e in args.evidence if e.strip()))}
    if not args.q1_gold_fixes_issue:
        update |= {"q2_tests_grade_issue": None, "q3_issue_states_requirements": None, "rewritten_issue": None}
    elif args.q2_tests_grade_issue != "yes":
        update |= {"q3_issue_states_requirements": None, "rewritten_issue": None}
    elif args.q3_issue_states_requirements is not False:
        update |= {"rewritten_issue": None}
    return args.model_copy(update=update)


def map_verdict(q1: bool, q2: Q2Answer | None, q3: bool | None) -> Verdict:
    """The outcome of a complete set of answers; ValueError when the order left one unanswered."""
    if not q1:
        return "gold_wrong"
    if q2 is None:
        raise ValueError("Q2 is unanswered")
    if q2 != "yes":
        return q2
    if q3 is None:
        raise ValueError("Q3 is unanswered")
    return "accept" if q3 else "issue_rewritten"


def supports(q2: Q2Answer, probe: ProbeResult) -> bool:
    """Whether the executed grade of ``probe`` points the way the answer ``q2`` does (the table above)."""
    ran = probe.reason in TESTS_RAN
    if q2 == "too_loose":  # a survivor that behaves like gold on every input tried is no evidence
        return probe.kind == "plausible_wrong" and probe.reward == 1 and probe.distinguishing is not None
    if q2 == "over_restrictive":
        return probe.kind == "correct_alternative" and probe.reward == 0 and ran
    if probe.kind == "plausible_wrong":
        return probe.reward == 0 and ran
    return probe.reward == 1


_NEEDS = {
    "too_loose": "a plausible_wrong probe that scored reward 1 and that the differential tool told apart from gold",
    "over_restrictive": "a correct_alternative probe that scored reward 0 because the tests rejected it",
    "yes": "plausible_wrong probes that scored reward 0 because the tests rejected them",
}


def check_citations(args: VerdictArgs, known: Mapping[str, ProbeResult], *, executed: int) -> list[str]:
    """Why the (normalised) verdict is not backed by executed grades; empty when it is.

    ``known`` holds every probe whose grade the judge may cite: the model-free ones it was given and
    the ones it graded with ``grade_patch`` in this session. ``executed`` counts the shell commands and
    grades run in this session."""
    problems = []
    for probe_id in args.evidence:
        if probe_id not in known:
            problems.append(
                f"{probe_id!r} is not a probe graded in this session or given to you: grade the patch with "
                "grade_patch first and cite the probe_id it returns"
            )
    if not args.q1_gold_fixes_issue:
        if executed == 0:
            problems.append(
                "Q1 = no must rest on something you executed: reproduce the issue on the gold tree with the "
                "shell tool (or grade a patch) before submitting"
            )
        return problems
    q2 = args.q2_tests_grade_issue
    if q2 is None:
        return [*problems, "Q1 = yes, so answer Q2 (q2_tests_grade_issue: yes, too_loose or over_restrictive)"]
    cited = [known[p] for p in args.evidence if p in known]
    for probe in cited:
        if q2 == "too_loose" and probe.kind == "plausible_wrong" and probe.reward == 1 and probe.distinguishing is None:
            tried = f"no input among {probe.differential_tried} told it apart from gold" if probe.likely_equivalent else "it was not run against gold"
            problems.append(
                f"{probe.probe_id} survived the tests, but {tried}: a survivor that behaves like gold is no "
                "evidence; call differential on it (it must find an input where it behaves unlike gold)"
            )
        elif not supports(q2, probe):
            problems.append(
                f"{probe.probe_id} ({probe.kind}, origin {probe.origin}) scored reward {probe.reward:g} "
                f"({probe.reason}), which does not support Q2 = {q2}"
            )
    wanted = "plausible_wrong" if q2 in ("too_loose", "yes") else "correct_alternative"
    if not any(p.kind == wanted and supports(q2, p) for p in cited):
        problems.append(f"Q2 = {q2} must cite {_NEEDS[q2]}; Q2 is never answered by inspection")
    if q2 == "yes" and args.q3_issue_states_requirements is None:
        problems.append("Q1 and Q2 hold, so answer Q3 (q3_issue_states_requirements: true or false)")
    if args.q3_issue_states_requirements is False and not (args.rewritten_issue or "").strip():
        problems.append("Q3 = no needs rewritten_issue: the issue text restated so it says what the tests require")
    return problems


# ------------------------------------------------------------------------------------------ leaks

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFINED = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w*)|\bself\.([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_MIN_LINE_CHARS, _MIN_LINE_TOKENS = 20, 3


@dataclass(frozen=True)
class DiffLines:
    added: list[str]
    other: list[str]  # removed and context lines: what the buggy tree already had


def diff_lines(patch: str) -> DiffLines:
    added, other = [], []
    in_hunk = False
    for line in patch.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif line.startswith("diff --git") or not in_hunk:
            in_hunk = False
        elif line.startswith("+"):
            added.append(line[1:])
        elif line.startswith(("-", " ")):
            other.append(line[1:])
    return DiffLines(added, other)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> str:
    """Text as a padded run of word tokens: quoting, markup and punctuation do not hide a copy."""
    return " " + " ".join(re.findall(r"\w+", text)) + " "


def _line_text(line: str) -> str:
    """An added line as prose could quote it: no indentation, comment marker or docstring quotes."""
    text = line.strip().removeprefix("#").strip()
    for quotes in ('"""', "'''"):
        text = text.replace(quotes, "")
    return _squash(text)


def _code_like(token: str) -> bool:
    core = token.strip("_")
    return token != core or "_" in core or any(c.isdigit() for c in core) or re.search("[a-z][A-Z]", core) is not None


def nontrivial_added_lines(gold_patch: str) -> list[str]:
    """The lines gold adds that are long enough to carry its implementation (a line it only moves,
    one the buggy tree already had, is not among them)."""
    diff = diff_lines(gold_patch)
    before = {_line_text(line) for line in diff.other}
    lines = []
    for line in diff.added:
        text = _line_text(line)
        if len(text) >= _MIN_LINE_CHARS and len(_IDENT.findall(text)) >= _MIN_LINE_TOKENS and text not in before:
            lines.append(text)
    return list(dict.fromkeys(lines))


def introduced_identifiers(gold_patch: str, existing: str = "") -> set[str]:
    """Names gold brings into the code: code-like identifiers (underscores, digits, camelCase) and the
    functions, classes and attributes its added lines define, less Python's builtins and anything the
    buggy tree had (removed and context lines, plus ``existing``: the buggy text of the files gold
    touches)."""
    lines = diff_lines(gold_patch)
    added = "\n".join(lines.added)
    names = {t for t in _IDENT.findall(added) if _code_like(t)}
    names |= {a or b for a, b in _DEFINED.findall(added)}
    before = set(_IDENT.findall("\n".join(lines.other))) | set(_IDENT.findall(existing)) | set(dir(builtins))
    return names - before


def leak_problems(rewrite: str, *, issue: str, gold_patch: str, hidden_tests: str, existing: str = "") -> list[str]:
    """Why a rewritten issue gives away the gold implementation; empty when it does not.

    Refused: any non-trivial line gold adds (compared as a run of words, so indentation, quoting,
    markup and punctuation do not hide a copy), and any identifier gold introduces that appears
    nowhere in the original issue or the hidden tests. Text the issue or hidden tests already contain
    is never a leak."""
    problems = []
    if not rewrite.strip():
        return ["the rewritten issue is empty"]
    if _squash(rewrite) == _squash(issue):
        problems.append("the rewritten issue is the original issue unchanged")
    public = _words(issue) + _words(hidden_tests)
    words = _words(rewrite)
    for line in nontrivial_added_lines(gold_patch):
        copied = _words(line)
        if copied in words and copied not in public:
            problems.append(f"it copies a line the gold patch adds: {line!r}")
    allowed = set(_IDENT.findall(issue)) | set(_IDENT.findall(hidden_tests))
    named = set(_IDENT.findall(rewrite))
    for name in sorted(introduced_identifiers(gold_patch, existing) & named - allowed):
        problems.append(
            f"it names {name!r}, which the gold patch introduces and neither the issue nor the hidden tests mention"
        )
    return problems


def added_test_leaks(code: str, *, issue: str, gold_patch: str, existing: str = "") -> list[str]:
    """Why an added test is derived from the gold implementation rather than the issue; empty when it is
    not: it names an identifier only gold introduces (a private helper, a new attribute) that the issue
    does not name, or it copies a non-trivial line gold adds."""
    problems = []
    words = _words(code)
    for line in nontrivial_added_lines(gold_patch):
        copied = _words(line)
        if copied in words and copied not in _words(issue):
            problems.append(f"it copies a line the gold patch adds: {line!r}")
    named = set(_IDENT.findall(code)) - set(_IDENT.findall(issue))
    for name in sorted(introduced_identifiers(gold_patch, existing) & named):
        problems.append(f"it names {name!r}, which only the gold patch introduces and the issue does not mention")
    return problems


def touched_files(patch: str) -> list[str]:
    """The paths a unified diff changes that existed before it (its ``--- a/...`` sides)."""
    found = re.findall(r"^--- (?:a/)?(\S+)", patch, re.MULTILINE)
    return list(dict.fromkeys(p for p in found if p != "/dev/null"))


def refusal_message(problems: Sequence[str]) -> str:
    return "Verdict refused. Fix these and submit again:\n" + "\n".join(f"- {p}" for p in problems)
