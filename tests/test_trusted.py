"""The grader's trusted path as pure functions: the harness's own listing of a tree, what a candidate
changed, and what is deleted and written before the tests run (the canaries planted among the hidden
tests: tests/test_canaries.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.records import Task
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
