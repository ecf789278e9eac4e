"""harness.grading.patching: which paths a candidate may not touch, and the apply cascade, in real sandboxes.
What the grader does with the paths a candidate touched is tested in test_trusted.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import git

from harness.grading.capabilities import is_protected
from harness.grading.patching import APPLY_STRATEGIES, apply_patch
from harness.records import Task
from harness.sandboxes.sandbox import Backend, Sandbox

STRATEGIES = [name for name, _, _ in APPLY_STRATEGIES]


# ------------------------------------------------------------------------------------------ is_protected


@pytest.fixture
def task(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks["sample__toposort-1"]


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_sort.py",  # owned by the task (tests.patch)
        "tests/test_graph.py",
        "tests/helpers.py",  # anything under tests/
        "tests/data/fixture.json",
        "pkg/test/util.py",
        "pkg/Tests/x.py",
        "test_top.py",
        "pkg/test_inner.txt",
        "pkg/thing_test.py",
        "conftest.py",
        "pkg/deep/conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.toml",
        "tox.ini",
        "pyproject.toml",  # pytest reads its configuration from any of these
        "setup.cfg",
        "sitecustomize.py",
        "lib/usercustomize.py",
        "evil.pth",
        "site/packages/x.pth",
    ],
)
def test_protected(path: str, task: Task) -> None:
    assert is_protected(path, task)


@pytest.mark.parametrize(
    "path",
    [
        "toposort/graph.py",
        "toposort/sort.py",
        "README.md",
        "latest_changes.py",
        "contest.py",
        "pkg/testing/x.py",  # "testing" is not a test directory by R2E-Gym's rule
        "attest.py",
        "conftest.py.bak",
        "pth.py",
        "pytest.py",  # not a test file: harness.grading.trusted deletes it as a module shadowing pytest
    ],
)
def test_not_protected(path: str, task: Task) -> None:
    assert not is_protected(path, task)


def test_task_test_paths_are_protected_wherever_they_live(task: Task) -> None:
    odd = task.model_copy(update={"test_paths": ["checks/verify_graph.py"]})
    assert is_protected("checks/verify_graph.py", odd)
    assert not is_protected("checks/verify_graph.py", task)


# ------------------------------------------------------------------------------------------ apply cascade on a sandbox


@pytest.fixture
def box(backend: Backend, task: Task) -> Iterator[Sandbox]:
    sandbox = backend.open(task)
    try:
        yield sandbox
    finally:
        sandbox.close()


def _tree_clean(box: Sandbox) -> bool:
    return box.run("git status --porcelain --untracked-files=all").output.strip() == ""


def _shift_hunks(patch: str, by: int) -> str:
    return re.sub(
        r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@",
        lambda m: f"@@ -{int(m[1]) + by},{m[2]} +{int(m[3]) + by},{m[4]} @@",
        patch,
        flags=re.M,
    )


def _wrong_counts(patch: str) -> str:
    return re.sub(
        r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@",
        lambda m: f"@@ -{m[1]},{int(m[2]) + 3} +{m[3]},{int(m[4]) + 3} @@",
        patch,
        flags=re.M,
    )


def _tabs_for_spaces_in_context(patch: str) -> str:
    """Context lines re-indented with tabs, as an editor or a model might (a changed amount of leading
    whitespace; trailing whitespace that differs is not forgiven by any strategy, see the report)."""
    return "\n".join(
        " " + line[1:].replace("        ", "\t") if line.startswith(" ") and line.strip() else line
        for line in patch.split("\n")
    )


def _fuzzed_context(patch: str) -> str:
    """One context line no longer matches the tree, and no blob id that 3-way merging could use."""
    patch = re.sub(r"^index .*\n", "", patch, flags=re.M)
    return patch.replace(
        " \n     def add_dependency", " # a comment the tree does not have\n     def add_dependency", 1
    )


@pytest.mark.parametrize(
    ("mangle", "strategy"),
    [
        pytest.param(None, "git apply", id="clean"),
        # wrong start lines: git apply itself searches for the context, no later strategy needed
        pytest.param(lambda p: _shift_hunks(p, 7), "git apply", id="wrong-start-lines"),
        pytest.param(lambda p: _shift_hunks(p, -5), "git apply", id="wrong-start-lines-before"),
        # wrong line counts: a corrupt patch for git apply, fine once recounted
        pytest.param(_wrong_counts, "git apply --recount --ignore-whitespace", id="wrong-line-counts"),
        pytest.param(_tabs_for_spaces_in_context, "git apply --recount --ignore-whitespace", id="reindented-context"),
        pytest.param(_fuzzed_context, "patch --fuzz=5", id="fuzzy-context"),
    ],
)
def test_apply_cascade(box: Sandbox, task: Task, mangle: Callable[[str], str] | None, strategy: str) -> None:
    gold = task.answer.gold_patch
    expected_after = _apply_cleanly(box, gold)
    patch = gold if mangle is None else mangle(gold)
    assert (patch == gold) == (mangle is None)
    got, why = apply_patch(box, patch, "candidate")
    assert (got, why) == (strategy, "")
    assert box.read_file("toposort/graph.py") == expected_after


def _apply_cleanly(box: Sandbox, patch: str) -> bytes:
    """graph.py after a plain `git apply` of ``patch`` (then undone, leaving the tree pristine)."""
    box.write_file("/tmp/reference.patch", patch)
    assert box.run("git apply /tmp/reference.patch").exit_code == 0
    after = box.read_file("toposort/graph.py")
    assert box.run("git apply -R /tmp/reference.patch").exit_code == 0
    assert _tree_clean(box)
    return after


@pytest.fixture
def matrix_box(backend: Backend, sample_tasks: dict[str, Task]) -> Iterator[Sandbox]:
    sandbox = backend.open(sample_tasks["sample__matrixlite-1"])
    try:
        yield sandbox
    finally:
        sandbox.close()


def test_regression_three_way_strategy_applies_in_a_fresh_sandbox(
    matrix_box: Sandbox, sample_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """A patch written against an older commit: its context is stale (the version line moved on), but its
    pre-image blob is in the sealed history, so --3way merges it. It used to fall through to GNU patch:
    in a sandbox's freshly copied tree every index entry looks stale (new inodes and ctimes) and
    `git apply --3way` refuses such files ("does not match index") until the index is refreshed."""
    task = sample_tasks["sample__matrixlite-1"]
    clone = tmp_path / "clone"
    git(["clone", "-q", task.repo_source.path, str(clone)], tmp_path)
    older = git(["rev-parse", f"{task.repo_source.ref}~1"], clone).strip()
    git(["checkout", "-q", older], clone)
    init = clone / "matrixlite/__init__.py"
    assert '__version__ = "0.2.0"' in init.read_text()
    init.write_text(
        init.read_text().replace(
            "from .matrix import Matrix\n", "from .matrix import Matrix\nfrom .matrix import Matrix as Mat\n"
        )
    )
    patch = git(["diff"], clone)
    assert '__version__ = "0.2.0"' in patch  # the stale context line
    got, why = apply_patch(matrix_box, patch, "candidate")
    assert (got, why) == ("git apply --3way", "")
    text = matrix_box.read_file("matrixlite/__init__.py").decode()
    assert "from .matrix import Matrix as Mat\n" in text and '__version__ = "0.3.0"' in text


def test_regression_three_way_conflict_stops_the_cascade(
    matrix_box: Sandbox, sample_tasks: dict[str, Task], tmp_path: Path
) -> None:
    """`git apply --check --3way` passes for a patch whose merge conflicts; the apply then leaves
    conflict markers and an unmerged index, and the cascade must not run GNU patch on that tree."""
    task = sample_tasks["sample__matrixlite-1"]
    clone = tmp_path / "clone"
    git(["clone", "-q", task.repo_source.path, str(clone)], tmp_path)
    git(["checkout", "-q", f"{task.repo_source.ref}~1"], clone)
    init = clone / "matrixlite/__init__.py"
    init.write_text(init.read_text().replace('__version__ = "0.2.0"', '__version__ = "0.2.1"'))  # base has 0.3.0
    got, why = apply_patch(matrix_box, git(["diff"], clone), "candidate")
    assert got == ""
    assert "git apply --3way: passed its check, then failed" in why
    assert "patch --fuzz=5" not in why


def test_apply_failure_leaves_the_tree_untouched(box: Sandbox, task: Task, make_patch: Callable) -> None:
    good = make_patch(task, {"toposort/sort.py": lambda s: s + "\n# fine\n"})
    bad = "--- a/toposort/graph.py\n+++ b/toposort/graph.py\n@@ -1,2 +1,2 @@\n-no such line\n-nor this\n+x\n+y\n"
    got, why = apply_patch(box, good + bad, "candidate")
    assert got == ""
    for strategy in STRATEGIES:
        assert f"{strategy}:" in why
    assert _tree_clean(box)


def test_empty_patch(box: Sandbox) -> None:
    assert apply_patch(box, "", "candidate") == ("empty", "")
    assert apply_patch(box, "  \n\n", "candidate") == ("empty", "")
    assert _tree_clean(box)


def test_patch_without_trailing_newline(box: Sandbox, task: Task) -> None:
    assert apply_patch(box, task.answer.gold_patch.rstrip("\n"), "candidate") == ("git apply", "")


# ------------------------------------------------------------------------------------------ .git is off limits


def _git_dir_listing(box: Sandbox) -> str:
    return box.run("find .git -path .git/index -prune -o -printf '%P %s %m\\n' | sort").output


EXCLUDE_PATCH = """--- a/.git/info/exclude
+++ b/.git/info/exclude
@@ -1,1 +1,2 @@
 # git ls-files --others --exclude-from=.git/info/exclude
+conftest.py
"""
HOOK_PATCH = """diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout
new file mode 100755
--- /dev/null
+++ b/.git/hooks/post-checkout
@@ -0,0 +1,2 @@
+#!/bin/sh
+touch /tmp/hook-ran
"""


def _symlink_patch(name: str, target: str) -> str:
    return (
        f"diff --git a/{name} b/{name}\nnew file mode 120000\n--- /dev/null\n+++ b/{name}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


SYMLINK_HOOK_PATCH = _symlink_patch("g", ".git") + HOOK_PATCH.replace(".git/hooks", "g/hooks")
NESTED_PATCH = HOOK_PATCH.replace(".git/hooks/post-checkout", "toposort/.git/config").replace("100755", "100644")


@pytest.mark.parametrize(
    "patch",
    [EXCLUDE_PATCH, HOOK_PATCH, SYMLINK_HOOK_PATCH, NESTED_PATCH],
    ids=["edit-info-exclude", "new-hook", "hook-through-new-symlink", "nested-git-dir"],
)
def test_regression_patch_cannot_write_inside_git_dir(box: Sandbox, patch: str) -> None:
    """GNU patch, the cascade's last strategy, happily wrote into .git (and through a symlink it had
    just created): a planted hook then ran during neutralization. Every strategy must refuse."""
    if patch is EXCLUDE_PATCH:
        assert box.run("head -1 .git/info/exclude").output.startswith("# git ls-files")
    before = _git_dir_listing(box)
    # GNU patch itself would apply it: the dry run passes
    box.write_file("/tmp/probe.patch", patch)
    assert box.run("patch --batch --forward --fuzz=5 -p1 --dry-run -i /tmp/probe.patch").exit_code == 0
    got, why = apply_patch(box, patch, "candidate")
    assert got == "" and "refused" in why, why
    assert _git_dir_listing(box) == before
    assert _tree_clean(box)
    box.run("git checkout HEAD -- toposort/graph.py")
    assert box.run("test -e /tmp/hook-ran").exit_code == 1


def test_symlinks_still_apply_through_git(box: Sandbox, task: Task, make_patch: Callable) -> None:
    """The .git guard only concerns GNU patch: git apply still creates symlinks (it refuses to write
    beyond one by itself)."""
    assert apply_patch(box, _symlink_patch("link", "toposort"), "candidate") == ("git apply", "")
    assert box.run("readlink link").output.strip() == "toposort"
