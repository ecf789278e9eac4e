"""Data-level probe operators (``probes.data_ops``): each on small snippets, touching only what gold
added, then a task whose fix edits module-level data (a unit table and a regex) probed for real on
bwrap, where the differential engine confirms a survivor the single-example test lets through."""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import TEST_LIMITS, git, staged_diff
from test_probes import applied, make_gold, make_repo, make_task

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources.local import load_task_folder
from harness.records import ProbeResult
from judge.pipeline2 import probe_counts
from probes.data_ops import DATA_OPERATORS, data_mutants
from probes.data_ops.added import added_chars
from probes.data_ops.regexes import regex_edits
from probes.generate import plausible_wrong
from probes.pycst import python_files
from probes.runner import probe_task
from probes.workspace import added_lines, file_lines, importable, workspace

# ================================================================================ the operators on snippets


def mutated(base: dict[str, str], gold: dict[str, str], tmp_path: Path, path: str) -> tuple[str, list[tuple[str, str, str]]]:
    """Gold's text of ``path`` and every data-level mutant of it as (operator, description, text)."""
    tree = make_repo(tmp_path / "r", base)
    task = make_task(make_gold(tree, gold))
    with workspace(task, tree) as ws:
        assert ws is not None
        (py,) = [p for p in python_files(ws) if p.path == path]
        out = [(op, what, text) for op, what, build in data_mutants(py) if (text := build()) is not None]
        return py.new, out


def only_added_lines_change(base: str, gold: str, mutant: str) -> bool:
    added = added_lines(file_lines(textwrap.dedent(base)), file_lines(gold))
    ops = difflib.SequenceMatcher(None, file_lines(gold), file_lines(mutant), autojunk=False).get_opcodes()
    return all(i + 1 in added for tag, i1, i2, _, _ in ops if tag != "equal" for i in range(i1, i2))


REGEX_BASE = """\
    import re

    SIZE = re.compile(r"(\\d+)([BKM])")
    NUMBER = re.compile(r"\\d+")
    KEY = r"[a-z]+"
    WORD = re.compile(r"\\w+")


    def key(text):
        return re.fullmatch(KEY, text)
"""
REGEX_GOLD = (
    REGEX_BASE.replace("[BKM]", "[BKMGT]").replace('NUMBER = re.compile(r"\\d+")', 'NUMBER = re.compile(r"\\d+(?:\\.\\d+)?|0x[0-9a-f]+")')
    .replace('r"[a-z]+"', 'r"[a-z_]+"')
)  # fmt: skip


def test_regex_operators_rewrite_only_the_parts_gold_added(tmp_path: Path) -> None:
    gold, found = mutated({"pkg/__init__.py": "", "pkg/rx.py": REGEX_BASE}, {"pkg/rx.py": REGEX_GOLD}, tmp_path, "pkg/rx.py")
    patterns: dict[str, set[str]] = {}
    for op, _, text in found:
        assert op in DATA_OPERATORS and only_added_lines_change(REGEX_BASE, gold, text), (op, text)
        for line, before in zip(text.splitlines(), gold.splitlines(), strict=True):
            if line != before and op.startswith("regex"):
                pattern = re.search(r'r"(.*)"', line).group(1)  # type: ignore[union-attr]
                re.compile(pattern)  # every rewritten regex still compiles
                patterns.setdefault(op, set()).add(pattern)
    # the class lost only a unit gold added; the old B, K and M stay
    assert {p for p in patterns["regex_class"] if p.startswith("(\\d+)")} == {"(\\d+)([BKMG])", "(\\d+)([BKMT])"}
    assert "[a-z]+" in patterns["regex_class"]  # through the module-level name passed to re.fullmatch
    assert {"\\d+(?:\\.\\d+)?", "0x[0-9a-f]+"} <= patterns["regex_alternative"]
    assert "\\d+(?:\\.\\d+)|0x[0-9a-f]+" in patterns["regex_quantifier"]  # the optional fraction made required
    assert "\\d(?:\\.\\d+)?|0x[0-9a-f]+" not in patterns["regex_quantifier"]  # the old \d+ is not gold's
    assert not any("\\w" in p for ps in patterns.values() for p in ps)  # WORD is untouched by gold


def test_regex_edits_know_groups_classes_escapes_and_quantifiers() -> None:
    def apply(p: str, op: str) -> set[str]:
        return {p[: e.start] + e.text + p[e.end :] for e in regex_edits(p) if e.operator == op}

    p = r"(?P<unit>k|M)[^x\]-]{2,3}\(a*?"
    assert apply(p, "regex_alternative") == {r"(?P<unit>M)[^x\]-]{2,3}\(a*?", r"(?P<unit>k)[^x\]-]{2,3}\(a*?"}
    assert apply(p, "regex_class") == {r"(?P<unit>k|M)[^\]-]{2,3}\(a*?", r"(?P<unit>k|M)[^x-]{2,3}\(a*?", r"(?P<unit>k|M)[^x\]]{2,3}\(a*?"}
    # {2,3} -> {2}; the lazy *? -> +?; an escaped paren is no group
    assert apply(p, "regex_quantifier") == {r"(?P<unit>k|M)[^x\]-]{2}\(a*?", r"(?P<unit>k|M)[^x\]-]{2,3}\(a+?"}
    assert apply(r"(?i)a-z", "regex_quantifier") == set()  # inline flags are no quantified atom
    assert apply(r"[a-z0-9]", "regex_class") == {"[0-9]", "[a-z]"}  # a range is one member


def test_a_string_part_is_added_only_where_the_old_literal_does_not_survive() -> None:
    old = 'X = r"(\\d+)([BKM])"\nY = "size"\n'
    assert added_chars("(\\d+)([BKMGT])", old) == {10, 11}
    assert added_chars("size of ", old) == {4, 5, 6, 7}
    assert added_chars("it", old) == {0, 1}
    assert added_chars("B", 'T = {"B": 1}\n') == set()
    assert added_chars("anything", None) == set()  # not on a line gold added


CONTAINER_BASE = """\
    UNITS = {"B": 1, "K": 1024}
    NAMES = ["alpha", "beta"]
    SEPARATORS = {",", ";"}


    def parse(text):
        try:
            return int(text)
        except (ValueError):
            return None
"""
CONTAINER_GOLD = """\
    UNITS = {"B": 1, "K": 1024, "M": 1024 ** 2}
    NAMES = [
        "alpha",
        "beta",
        "gamma",
    ]
    SEPARATORS = {",", ";", "|"}
    __all__ = ["UNITS", "parse"]


    def parse(text):
        try:
            return int(text)
        except (ValueError, TypeError):
            return None
"""


def test_entries_gold_added_are_dropped_one_at_a_time(tmp_path: Path) -> None:
    gold, found = mutated({"pkg/__init__.py": "", "pkg/t.py": CONTAINER_BASE}, {"pkg/t.py": CONTAINER_GOLD}, tmp_path, "pkg/t.py")
    entries = [(what, text) for op, what, text in found if op == "drop_entry"]
    assert all(only_added_lines_change(CONTAINER_BASE, gold, text) for _, text in entries)
    whats = sorted(what.split("`")[1] for what, _ in entries)
    # never an entry the buggy code had, never __all__ (only star imports read it)
    assert whats == ['"M": 1024 ** 2', '"gamma"', '"|"', "TypeError"], whats
    texts = {what.split("`")[1]: text for what, text in entries}
    assert 'UNITS = {"B": 1, "K": 1024}' in texts['"M": 1024 ** 2']
    assert '"gamma"' not in texts['"gamma"'] and '"beta",\n]' in texts['"gamma"']
    assert "except (ValueError,):" in texts["TypeError"]  # still a tuple, not a parenthesised name


DECORATED_BASE = """\
    import functools


    class Box:
        def size(self):
            return 1
"""
DECORATED_GOLD = """\
    import functools


    class Box:
        @property
        def size(self):
            return 1

        @functools.cache
        @staticmethod
        def unit():
            return "B"
"""


def test_decorators_gold_added_are_dropped(tmp_path: Path) -> None:
    gold, found = mutated({"pkg/__init__.py": "", "pkg/d.py": DECORATED_BASE}, {"pkg/d.py": DECORATED_GOLD}, tmp_path, "pkg/d.py")
    dropped = {what.split("`")[1]: text for op, what, text in found if op == "drop_decorator"}
    assert sorted(dropped) == ["@functools.cache", "@property", "@staticmethod"]
    assert "    def size(self):" in dropped["@property"] and "@property" not in dropped["@property"]
    assert "    @functools.cache\n    def unit():" in dropped["@staticmethod"]
    assert "    @staticmethod\n    def unit():" in dropped["@functools.cache"]
    assert all(only_added_lines_change(DECORATED_BASE, gold, text) for text in dropped.values())


STRING_BASE = """\
    SEP = ","


    def label(n):
        return f"{n} items"
"""
STRING_GOLD = '''\
    SEP = ", "
    UNIT = "items"
    __all__ = ["label"]


    def label(n):
        """The label of ``n`` things."""
        if n < 0:
            raise ValueError("a count is never negative")
        return f"{n} {UNIT}"
'''


def test_string_constants_gold_added_are_changed_then_emptied(tmp_path: Path) -> None:
    gold, found = mutated({"pkg/__init__.py": "", "pkg/s.py": STRING_BASE}, {"pkg/s.py": STRING_GOLD}, tmp_path, "pkg/s.py")
    strings = [(what, text) for op, what, text in found if op == "string_constant"]
    assert [what.rsplit(" at ", 1)[0] for what, _ in strings] == [
        'string ", " -> ","', 'string "items" -> "item"', 'string ", " emptied', 'string "items" emptied',
    ]  # docstrings, raise messages (reworded freely) and __all__ are left alone; f-strings are not rewritten
    assert 'SEP = ","\n' in strings[0][1] and 'UNIT = ""\n' in strings[3][1]
    assert all(only_added_lines_change(STRING_BASE, gold, text) for _, text in strings)


def test_only_files_the_tests_can_import_are_probed(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "i", {"pkg/__init__.py": "", "pkg/data.json": "{}\n", "AUTHORS": "a\n"})
    assert importable("pkg/mod.py", root) and importable("src_mod.py", root) and importable("pkg/data.json", root)
    for path in ("AUTHORS", "CHANGELOG.md", "CHANGES", "docs/conf.py", "doc/source/conf.py", "README.rst", "setup.py",
                 "tests/test_mod.py", "notes.json", "pkg/README.md"):  # fmt: skip
        assert not importable(path, root), path
    base = {"pkg/__init__.py": "", "pkg/m.py": 'NAMES = ("a",)\n', "AUTHORS": "Ann\n", "docs/conf.py": 'project = "p"\n',
            "CHANGELOG.md": "# 1.0\n"}  # fmt: skip
    tree = make_repo(tmp_path / "g", base)
    gold = make_gold(tree, {"pkg/m.py": 'NAMES = ("a", "b")\n', "AUTHORS": "Ann\nBob\n", "docs/conf.py": 'project = "q"\n',
                            "CHANGELOG.md": "# 1.1\n\n- b\n"})  # fmt: skip
    candidates = plausible_wrong(make_task(gold), tree, [])
    assert {c.operator for c in candidates} >= {"drop_entry", "string_constant"}
    for c in candidates:  # a wrong probe only ever differs from gold in the package
        work = applied(tree, c.patch, c.operator)
        assert (work / "AUTHORS").read_text() == "Ann\nBob\n" and (work / "docs/conf.py").read_text() == 'project = "q"\n', c
        assert (work / "CHANGELOG.md").read_text().startswith("# 1.1"), c


def test_generation_includes_the_data_operators(tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "w", {"pkg/__init__.py": "", "pkg/rx.py": REGEX_BASE})
    operators = {c.operator for c in plausible_wrong(make_task(make_gold(tree, {"pkg/rx.py": REGEX_GOLD})), tree, [])}
    assert {"regex_alternative", "regex_class", "regex_quantifier"} <= operators


def test_probe_counts_tell_no_probes_from_all_killed() -> None:
    stamp = {"config_hash": "c", "task_hash": "t", "instance_id": "i"}

    def probe(n: int, reward: float, **extra: object) -> ProbeResult:
        return ProbeResult(**stamp, probe_id=f"p{n}", kind="plausible_wrong", origin="model_free", operator="drop_entry",
                           description="", patch="", reward=reward, reason="ok" if reward else "pattern_mismatch",
                           selected_reward=None, executions=1, differing=[], log_path="", **extra)  # fmt: skip

    none = probe_counts([], stamp)
    killed = probe_counts([probe(1, 0.0), probe(2, 0.0)], stamp)
    assert (none.generated, none.killed) == (0, 0) and (killed.generated, killed.killed, killed.survived) == (2, 2, 0)
    mixed = probe_counts([probe(1, 0.0), probe(2, 1.0, likely_equivalent=True)], stamp)
    assert (mixed.generated, mixed.survived, mixed.confirmed, mixed.likely_equivalent, mixed.killed) == (2, 1, 0, 1, 1)


# ================================================================================ a module-level data fix (bwrap)

SIZES_BASE = """\
import re

UNITS = {"B": 1, "K": 1024, "M": 1024 ** 2}
SIZE = re.compile(r"(\\d+)([BKM])")


def parse_size(text):
    m = SIZE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a size: {text!r}")
    return int(m.group(1)) * UNITS[m.group(2)]
"""
SIZES_GOLD = SIZES_BASE.replace('"M": 1024 ** 2}', '"M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}').replace("[BKM]", "[BKMGT]")
SIZES_TESTS = """\
from pkg.sizes import parse_size


def test_kilobytes():
    assert parse_size("3K") == 3072


def test_gigabytes():
    assert parse_size("2G") == 2 * 1024 ** 3
"""
SIZES_ISSUE = "parse_size() rejects gigabytes and terabytes: `5G` and `2T` raise ValueError instead of giving a byte count.\n"




@pytest.mark.slow
@pytest.mark.bwrap
def test_a_data_level_fix_gets_probes_and_a_confirmed_survivor(tmp_path: Path, backend_factory: Callable) -> None:
    folder = tmp_path / "unit__sizes-1"
    files = {"pkg/__init__.py": "", "pkg/sizes.py": SIZES_BASE, "tests/__init__.py": "", "pytest.ini": "[pytest]\n"}
    for path, text in files.items():
        (folder / "repo" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "repo" / path).write_text(text)
    work = tmp_path / "work"
    git(["init", "-q", "-b", "main", str(work)], tmp_path)
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git(["add", "-A"], work)
    git(["commit", "-q", "-m", "base"], work)
    (folder / "gold.patch").write_text(staged_diff(work, {"pkg/sizes.py": SIZES_GOLD}))
    (folder / "tests.patch").write_text(staged_diff(work, {"tests/test_sizes.py": SIZES_TESTS}))
    (folder / "issue.md").write_text(SIZES_ISSUE)
    (folder / "task.toml").write_text(
        'instance_id = "unit__sizes-1"\ntest_cmd = ["python -m pytest tests/test_sizes.py"]\nlog_parser = "pytest"\n'
        '[environment]\nworkdir = "/testbed"\n[environment.recipe]\ninstall = []\n'
    )
    task = load_task_folder(folder)
    backend = backend_factory("bwrap", TEST_LIMITS)
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path / "out")
    assert p1.decision == "keep" and p1.fail_to_pass == ["tests/test_sizes.py::test_gigabytes"], (p1.reason, p1.detail)
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    probes = probe_task(task, backend, p1, stamp, workers=2, log_dir=tmp_path / "logs")
    data = [p for p in probes if p.operator in DATA_OPERATORS]
    for p in probes:
        print(f"{p.operator:18} reward={p.reward:.0f} confirmed={p.distinguishing is not None} {p.description}")
    assert {p.operator for p in data} >= {"drop_entry", "regex_class", "string_constant"}
    # the test checks one example (G): dropping G is killed, dropping T survives and an input from the issue tells it from gold
    by_what = {p.description.rsplit(" at ", 1)[0]: p for p in data}
    assert by_what['`"G": 1024 ** 3` dropped from a dict'].reward == 0.0
    assert by_what["regex `G` dropped from `[BKMGT]`"].reward == 0.0
    for what in ('`"T": 1024 ** 4` dropped from a dict', "regex `T` dropped from `[BKMGT]`"):
        survivor = by_what[what]
        assert survivor.reward == 1.0 and survivor.distinguishing is not None, survivor
        assert "'2T'" in survivor.distinguishing.call and survivor.distinguishing.literal == str(2 * 1024**4)
    # every data-level probe is killed or run through the engine (evidence or likely equivalent)
    assert all(p.reward == 0.0 or p.distinguishing is not None or p.likely_equivalent for p in data)
    counts = probe_counts(probes, stamp)
    assert counts.generated == sum(p.kind == "plausible_wrong" for p in probes) and counts.confirmed >= 2
