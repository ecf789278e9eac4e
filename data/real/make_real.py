"""Build the task folders in this directory from real fix commits of small public Python libraries.

    python data/real/make_real.py MIRRORS [NAME ...]

The tasks are those of ``data/real_libraries/*.toml`` (``data.benchmark``). MIRRORS holds clones
named ``owner+name/repo`` (any clone with the commits works); NAMEs (task folder names) build only those. Each task's buggy tree is the fix commit's parent, bundled as ONE new commit
with that tree (``repo.bundle``: nothing after the base commit is reachable, and a bundle of one
commit stays small); the fix commit's diff is split into ``gold.patch`` (the library's Python files;
changelogs and docs are left out) and ``tests.patch`` (its tests). The issue text is ours, written
from the commit and its diff. Every library is pure Python without dependencies beyond what the base
environment has (pytest, and packaging, which pytest needs), and its tests run with plain pytest on
Python 3.11: src layouts put src/ in front of the PYTHONPATH the harness sets (which carries the
grader's own pytest plugin); ``-o addopts=`` drops coverage options of projects whose pytest
configuration asks for pytest-cov. A rebuild keeps the hand-written ``shortcut.patch`` and
``alternative.patch`` a library file names in each folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

from data.benchmark import RealTask, real_tasks

HERE = Path(__file__).resolve().parent
TASKS = real_tasks()


def git(args: list[str], cwd: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "swedeck", "GIT_AUTHOR_EMAIL": "swedeck@localhost", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_NAME": "swedeck", "GIT_COMMITTER_EMAIL": "swedeck@localhost",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def is_test(path: str) -> bool:
    """A test module or a conftest, wherever the project keeps them (tests/, the package, the root)."""
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return name.endswith(".py") and ("tests" in parts[:-1] or name.startswith("test_") or name.endswith("_test.py") or name in ("tests.py", "conftest.py"))


GENERATED = ("gold.patch", "tests.patch", "issue.md", "task.toml", "repo.bundle")


def build(task: RealTask, mirrors: Path) -> None:
    build_folder(mirrors / task.mirror / "repo", task.fix, task.repo, task.test_cmd, task.issue, HERE / task.name)


def build_folder(source: Path, fix: str, repo: str, test_cmd: str, issue: str, folder: Path) -> None:
    """One task folder from the fix commit ``fix`` of the clone (or bare repository) ``source``."""
    base = git(["rev-parse", f"{fix}^"], source).strip()
    changed = git(["diff", "--name-only", base, fix], source).split()
    tests = [p for p in changed if is_test(p)]
    code = [p for p in changed if p.endswith(".py") and not is_test(p)]
    folder.mkdir(parents=True, exist_ok=True)
    for generated in GENERATED:  # the hand-written patches stay
        (folder / generated).unlink(missing_ok=True)
    (folder / "gold.patch").write_text(git(["diff", base, fix, "--", *code], source))
    (folder / "tests.patch").write_text(git(["diff", base, fix, "--", *tests], source))
    (folder / "issue.md").write_text(issue)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", base], cwd=source, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        git(["init", "-q", "-b", "main"], tree)
        git(["add", "-A"], tree)
        git(["commit", "-q", "--no-verify", "-m", f"{repo} at {base} (parent of {fix})"], tree)
        ref = git(["rev-parse", "HEAD"], tree).strip()
        git(["bundle", "create", "-q", str(folder / "repo.bundle"), "main"], tree)
    (folder / "task.toml").write_text(
        f'instance_id = "{folder.name}"\nrepo = "{repo}"\ntest_cmd = [{json.dumps(test_cmd)}]\n'
        'log_parser = "pytest"\n\n[environment]\nworkdir = "/testbed"\n\n[environment.recipe]\ninstall = []\n\n'
        f'[repo_source]\nkind = "bundle"\npath = "repo.bundle"\nref = "{ref}"\n'
    )


def main() -> None:
    wanted = set(sys.argv[2:])
    for task in TASKS:
        if not wanted or task.name in wanted:
            build(task, Path(sys.argv[1]))


if __name__ == "__main__":
    main()
