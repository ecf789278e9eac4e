"""The grader's trusted path as pure functions: the harness's own listing of a tree, what a candidate
changed, what is deleted and written before the tests run, and the canaries planted among them."""

from __future__ import annotations

import ast
import os
import random
import subprocess
import textwrap
from pathlib import Path

import pytest

from harness.grading import canaries
from harness.records import Status, Task
from harness.grading.tree import LISTING, Entry, TaskFacts, parse_listing, tree_changes
from conftest import TEST_LIMITS
from harness.grading.trusted import File, archive, install_command, plan
from harness.sandboxes.sandbox import IO_DIR

# ------------------------------------------------------------------------------------------ listing


def _list(root: Path) -> dict[str, Entry]:
    return parse_listing(subprocess.run(["bash", "-c", LISTING], cwd=root, capture_output=True, check=True).stdout)


def test_listing_sees_what_git_would_not(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "same.py").write_text("a\n")
    (tmp_path / "gone.py").write_text("b\n")
    before = _list(tmp_path)
    assert set(before) == {"pkg", "pkg/mod.py", "same.py", "gone.py"}  # .git is never listed
    os.utime(tmp_path / "pkg" / "mod.py", (1, 1))  # what a fresh copy of the tree looks like
    before = _list(tmp_path)
    (tmp_path / "pkg" / "mod.py").write_text("x = 2\n")  # same size, new mtime
    (tmp_path / ".gitignore").write_text("*\n")
    (tmp_path / "name with\nnewline.py").write_text("")
    (tmp_path / "gone.py").unlink()
    (tmp_path / "same.py").chmod(0o755)
    (tmp_path / "pkg" / "link").symlink_to("/etc")
    changes = tree_changes(before, _list(tmp_path))
    assert changes.added == {".gitignore", "name with\nnewline.py", "pkg/link"}
    assert changes.modified == {"pkg/mod.py", "same.py"}
    assert changes.deleted == {"gone.py"}


# ------------------------------------------------------------------------------------------ plan

FILE = Entry("f", 0o644, 10, "1.0")
DIR = Entry("d", 0o755, 4096, "1.0")
NEW = Entry("f", 0o644, 10, "2.0")


@pytest.fixture
def task(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks["sample__toposort-1"]


def _facts(**fields: object) -> TaskFacts:
    base = {"protected": {}, "hidden": {}, "tree_path": [""], "modules": ["json", "pytest", "argparse", "toposort"], "plugins": [],
            "suffixes": [".py", ".pyc", ".so"], "extension_suffixes": [".so"]}
    return TaskFacts(**(base | fields))


def test_plan_restores_protected_files_and_keeps_the_fix(task: Task) -> None:
    before = {"tests": DIR, "tests/test_sort.py": FILE, "conftest.py": FILE, "toposort": DIR, "toposort/graph.py": FILE}
    after = {
        "tests": DIR, "tests/test_sort.py": NEW, "toposort": DIR, "toposort/graph.py": NEW,  # conftest.py deleted
        "tests/test_planted.py": NEW, "toposort/conftest.py": NEW, "pyproject.toml": NEW, "toposort/evil.pth": NEW,
    }  # fmt: skip
    facts = _facts(protected={"tests/test_sort.py": (0o644, "b2xk"), "conftest.py": (0o644, "YmFzZQ==")})
    todo = plan(before, after, task, facts, {})
    assert set(todo.write) == {"tests/test_sort.py", "conftest.py"}
    assert todo.write["conftest.py"] == File(0o644, b"base")
    assert todo.delete == ["pyproject.toml", "tests/test_planted.py", "toposort/conftest.py", "toposort/evil.pth"]  # tar replaces test_sort.py
    assert "toposort/graph.py" not in todo.neutralized + todo.delete
    assert todo.neutralized == [
        "conftest.py", "pyproject.toml", "tests/test_planted.py", "tests/test_sort.py", "toposort/conftest.py", "toposort/evil.pth",
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["bwrap", "docker"])
def test_the_install_replaces_whatever_stands_at_a_hidden_tests_path(name: str, task: Task, backend_factory) -> None:  # noqa: ANN001
    """No rm runs before the hidden tests unpack: tar itself replaces a folder (with what it holds),
    a link (never writing through it) and a read-only file at their paths."""
    box = backend_factory(name, TEST_LIMITS).open(task)
    try:
        setup = (
            "rm tests/test_sort.py && mkdir -p tests/test_sort.py/deep && echo x > tests/test_sort.py/deep/f && echo keep > /tmp/outside"
            " && ln -s /tmp/outside tests/test_new.py && echo old > tests/test_ro.py && chmod 444 tests/test_ro.py"
        )
        assert box.run(setup).exit_code == 0
        files = {path: File(0o644, f"# {path}\n".encode()) for path in ("tests/test_sort.py", "tests/test_new.py", "tests/test_ro.py")}
        box.write_file(f"{IO_DIR}/infra.tar", archive(files))
        assert box.run(install_command([], f"{IO_DIR}/infra.tar")).exit_code == 0
        shown = box.run("for f in tests/test_sort.py tests/test_new.py tests/test_ro.py /tmp/outside; do [ -f $f ] && [ ! -L $f ] && cat $f; done")
        assert Path(shown.log_path).read_text() == "# tests/test_sort.py\n# tests/test_new.py\n# tests/test_ro.py\nkeep\n"
    finally:
        box.close()

# What a change may not do at all (links, bytecode, metadata, shadowing modules, test files) never
# reaches the plan: harness.grading.capabilities refuses it first (tests/test_capabilities.py).


# ------------------------------------------------------------------------------------------ canaries

PYTEST_STYLE = b'''import pytest

from toposort import sort


def test_sorts_a_chain():
    assert sort({"b": ["a"]}) == ["a", "b"]


@pytest.mark.parametrize("n", [1, 2])
def test_sizes(n):
    assert n


class TestHelpers:
    def test_nothing(self):
        pass
'''

UNITTEST_STYLE = b'''import unittest


class ParserTests(unittest.TestCase):
    def setUp(self):
        self.x = 1

    def test_reads_sections(self):
        self.assertEqual(self.x, 1)

    @unittest.skip("later")
    def test_later(self):
        pass


if __name__ == "__main__":
    unittest.main()
'''


@pytest.mark.parametrize(("path", "source"), [("tests/test_sort.py", PYTEST_STYLE), ("tests/test_parser.py", UNITTEST_STYLE)])
def test_canaries_are_planted_in_the_files_own_style(path: str, source: bytes) -> None:
    planted, found = canaries.plant({path: source, "tests/data.json": b"{}"}, random.Random(7))
    assert len(found) == 4 and [c.must_fail for c in found].count(True) == 2
    assert planted["tests/data.json"] == b"{}"
    module = ast.parse(planted[path])
    names = {c.name for c in found}
    assert len(names) == 4 and all(name.startswith("test_") for name in names)
    if source is UNITTEST_STYLE:  # methods of the TestCase, nothing at module level
        methods = {f.name for f in ast.walk(module.body[1]) if isinstance(f, ast.FunctionDef)}
        assert names <= methods
    else:  # module-level functions, or methods of the pytest-style class
        helpers = next(n for n in module.body if isinstance(n, ast.ClassDef))
        assert names <= {f.name for f in [*module.body, *helpers.body] if isinstance(f, ast.FunctionDef)}
    assert canaries.strength(found) == "weak"  # nothing validated: arithmetic must fail
    # the real tests are all still there, and a different grade plants different names
    assert all(line in planted[path] for line in source.splitlines())
    assert not names & {c.name for c in canaries.plant({path: source}, random.Random(8))[1]}


def test_canary_check() -> None:
    fail, ok = canaries.Canary("test_a_b_c", "tests/test_x.py", True), canaries.Canary("test_d_e_f", "tests/test_x.py", False)
    honest = {"tests/test_x.py::test_real": Status.PASSED, "tests/test_x.py::test_a_b_c": Status.FAILED, "tests/test_x.py::test_d_e_f": Status.PASSED}
    assert canaries.check([fail, ok], honest, complete=True) == ({"tests/test_x.py::test_real": Status.PASSED}, [])
    forged = honest | {"tests/test_x.py::test_a_b_c": Status.PASSED}
    assert "must fail" in canaries.check([fail, ok], forged, complete=True)[1][0]
    dropped = {"tests/test_x.py::test_real": Status.PASSED}
    assert len(canaries.check([fail, ok], dropped, complete=True)[1]) == 2
    assert canaries.check([fail, ok], dropped, complete=False)[1] == []  # --maxfail may stop early
    assert canaries.check([fail, ok], {}, complete=True)[1] == []  # the file never ran at all
    unittest_ids = {"test_a_b_c (tests.test_x.T)": Status.FAILED, "test_real (tests.test_x.T)": Status.PASSED}
    assert canaries.check([fail], unittest_ids, complete=True) == ({"test_real (tests.test_x.T)": Status.PASSED}, [])


def test_regression_a_collection_error_is_no_missing_canary() -> None:
    """A patch that breaks an import errors the whole test file at collection: pytest reports the file
    itself and none of its tests, canaries included, which is a failing patch and not a forged report
    (a wrong iniparse probe was graded spoofing_suspected). A test of the file reported beside the
    error still makes a missing canary evidence."""
    canary = canaries.Canary("test_a_b_c", "tests/test_x.py", True)
    broken = {"tests/test_x.py": Status.ERROR, "tests/test_y.py": Status.ERROR}
    assert canaries.check([canary], broken, complete=True) == (broken, [])
    forged = broken | {"tests/test_x.py::test_real": Status.PASSED}
    assert len(canaries.check([canary], forged, complete=True)[1]) == 1


def _function(source: str, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)


def _constants(node: ast.AST) -> list[object]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)]


@pytest.mark.parametrize(("path", "source"), [("tests/test_sort.py", PYTEST_STYLE), ("tests/test_parser.py", UNITTEST_STYLE)])
def test_canary_candidates_are_the_files_own_tests(path: str, source: bytes) -> None:
    """A must-pass candidate is the test itself under another name; a must-fail one differs from it
    in exactly one literal of a top-level equality assert, and never in a boolean or None."""
    found = canaries.candidates({path: source})
    originals = {n.name: n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")}
    assert {c.test for c in found if not c.must_fail} == set(originals)
    failing = {c.test for c in found if c.must_fail}
    assert failing == ({"test_sorts_a_chain"} if source is PYTEST_STYLE else {"test_reads_sections"})
    for candidate in found:
        copy = _function(textwrap.dedent(candidate.source.format(name="test_copy")), "test_copy")
        original = originals[candidate.test]
        copy.name = original.name
        same = ast.dump(copy, include_attributes=False) == ast.dump(original, include_attributes=False)
        assert same is not candidate.must_fail
        if candidate.must_fail:
            changed = [(a, b) for a, b in zip(_constants(original), _constants(copy)) if a != b]
            assert len(changed) == 1 and type(changed[0][0]) is type(changed[0][1])
            before, after = changed[0]
            assert not isinstance(before, bool) and not (isinstance(before, int) and abs(before - after) == 1)  # type: ignore[operator]
    # the same file gives the same candidates: a key validated once names the same source
    assert canaries.candidates({path: source}) == found


def test_canary_copies_never_repeat_a_loop() -> None:
    """A copy costs what its test costs: a test with a loop gets no must-pass copy, and a must-fail
    copy only when its changed assert comes before the loop (the copy stops there)."""
    source = b'''from roman import to_roman


def test_round_trip():
    for n in range(1, 4000):
        assert to_roman(n) == to_roman(n)


def test_small_then_everything():
    assert to_roman(4) == "IV"
    for n in range(1, 4000):
        assert to_roman(n)


def test_everything_then_small():
    assert all(to_roman(n) for n in range(1, 4000))
    assert to_roman(9) == "IX"
'''
    found = canaries.candidates({"tests/test_roman.py": source})
    assert [(c.test, c.must_fail) for c in found] == [("test_small_then_everything", True)]


def test_strong_canaries_are_validated_copies_placed_anywhere() -> None:
    """Drawn from the validated candidates only, named from the file's words, at any position among
    the tests of their scope, after the last one included."""
    files = {"tests/test_sort.py": PYTEST_STYLE, "tests/test_parser.py": UNITTEST_STYLE}
    keys = [c.key for c in canaries.candidates(files)]
    last_seen = set()
    for seed in range(40):
        planted, found = canaries.plant(files, random.Random(seed), keys)
        assert canaries.strength(found) == "strong"
        assert sum(c.must_fail for c in found) == 2 and all(c.key in keys for c in found)
        copied = [c.key.split("::")[-1].split(":")[0] for c in found]
        assert len(set(copied)) == len(copied), "a test seen in three versions"
        for canary in found:
            module = ast.parse(planted[canary.path])
            scopes = [module, *(n for n in module.body if isinstance(n, ast.ClassDef))]
            scope = next(s for s in scopes if any(getattr(f, "name", "") == canary.name for f in s.body))
            tests = [f.name for f in scope.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
            if tests[-1] == canary.name:
                last_seen.add(canary.path)
        # the real tests are all still there
        for path, source in files.items():
            assert all(line in planted[path] for line in source.splitlines())
    assert last_seen == set(files), "no canary was ever the last test of its file or class"
    # nothing validated in a file: the grade falls back to arithmetic, and says so
    assert canaries.strength(canaries.plant(files, random.Random(1), [k for k in keys if k.endswith(":pass")])[1]) == "weak"


def test_regression_twin_tell_every_grade_copies_a_fail_to_pass_test() -> None:
    """Code forcing only the tests without a near-twin (a canary is a copy) paid in about 2 % of the
    grades that copied no FAIL_TO_PASS test: the F2P copy was preferred, not required."""
    source = "from slug import slugify\n\n" + "".join(
        f"\ndef test_{word}():\n    assert slugify('{word} {n}') == '{word}-{n}'\n"
        for n, word in enumerate(["title", "spaces", "unicode", "dashes", "digits", "upper", "empty", "long"])
    )  # fmt: skip
    files = {"tests/test_slug.py": source.encode()}
    keys = [c.key for c in canaries.candidates(files)]
    failing = {c.test for c in canaries.candidates(files) if c.must_fail}
    assert len(failing) == 8
    for f2p in sorted(failing):
        for seed in range(30):
            found = canaries.plant(files, random.Random(seed), keys, [f"tests/x.py::{f2p}"])[1]
            assert any(c.must_fail and c.key.split("::")[-1].split(":")[0] == f2p for c in found), (f2p, seed)


def test_canary_validation_keeps_only_what_behaved_on_gold() -> None:
    fail = canaries.Canary("test_a_b", "tests/test_x.py", True, "tests/test_x.py::::test_real:fail")
    fail_early = canaries.Canary("test_c_d", "tests/test_x.py", True, "tests/test_x.py::::test_broken:fail")
    copy = canaries.Canary("test_e_f", "tests/test_x.py", False, "tests/test_x.py::::test_real:pass")
    passed_anyway = canaries.Canary("test_g_h", "tests/test_x.py", True, "tests/test_x.py::::test_other:fail")
    statuses = {
        "tests/test_x.py::test_real[1]": Status.PASSED,
        "tests/test_x.py::test_real[2]": Status.PASSED,
        "tests/test_x.py::test_a_b[1]": Status.FAILED,
        "tests/test_x.py::test_a_b[2]": Status.FAILED,
        "tests/test_x.py::test_broken": Status.FAILED,  # the original fails too: not our changed value
        "tests/test_x.py::test_c_d": Status.FAILED,
        "tests/test_x.py::test_e_f[1]": Status.PASSED,
        "tests/test_x.py::test_e_f[2]": Status.PASSED,
        "tests/test_x.py::test_other": Status.PASSED,
        "tests/test_x.py::test_g_h": Status.PASSED,  # the changed value was never compared
    }
    assert canaries.validate([fail, fail_early, copy, passed_anyway], statuses) == [fail.key, copy.key]
    # a parametrized must-fail canary with one case reported passed is forged, and all its ids go
    forged = statuses | {"tests/test_x.py::test_a_b[2]": Status.PASSED}
    kept, evidence = canaries.check([fail], forged, complete=True)
    assert len(evidence) == 1 and "test_a_b[2]" in evidence[0]
    assert not any("test_a_b" in t for t in kept)


def test_regression_a_canary_named_like_another_files_test_is_that_files_only() -> None:
    """A canary's name is fresh in its own file only: a test of that name in another file is neither
    taken for the canary nor dropped from the statuses."""
    canary = canaries.Canary("test_parse_order", "tests/test_x.py", True, "tests/test_x.py::::test_real:fail")
    statuses = {"tests/test_x.py::test_parse_order": Status.FAILED, "tests/test_y.py::test_parse_order": Status.PASSED}
    assert canaries.check([canary], statuses, complete=True) == ({"tests/test_y.py::test_parse_order": Status.PASSED}, [])


@pytest.mark.parametrize(
    ("command", "usable"),
    [
        ("python -m pytest tests/test_a.py tests/test_b.py", True),
        ("pytest -rA -n 4 tests", True),
        ("./tests/runtests.py --verbosity 2 basic", True),
        ("python -m pytest tests/test_a.py::test_one", False),  # node ids: a planted test never runs
        ("pytest -k 'not slow' tests", False),
        ("python -m pytest -m unit tests", False),
        ("pytest -x tests", False),  # a must-fail canary would stop the run
        ("pytest --maxfail=2 tests", False),
        ("python -O -m pytest tests", False),  # asserts vanish
        ("PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_error.py", True),  # python's -m is not pytest's
        ("env PYTHONPATH=src python -m pytest -m unit tests", False),
    ],
)
def test_canaries_only_where_every_test_of_a_file_runs(command: str, usable: bool) -> None:
    assert canaries.usable([command]) is usable
