"""Build the task folders in this directory from real fix commits of small public Python libraries.

    python data/real/make_real.py MIRRORS

MIRRORS holds clones named ``owner+name/repo`` (any clone with the commits works). Each task's buggy
tree is the fix commit's parent, bundled as ONE new commit with that tree (``repo.bundle``: nothing
after the base commit is reachable, and a bundle of one commit stays small); the fix commit's diff
is split into ``gold.patch`` (the library) and ``tests.patch`` (its tests). The issue text is ours,
written from the commit message. All three libraries are pure Python without dependencies, and
their tests run with plain pytest on Python 3.11 (tomli is src-layout: its command puts src/ in front
of the PYTHONPATH the harness sets, which carries the grader's own pytest plugin).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RealTask:
    mirror: str  # owner+name
    fix: str  # the upstream fix commit
    test_cmd: str
    issue: str

    @property
    def name(self) -> str:
        owner, repo = self.mirror.split("+")
        return f"{owner}__{repo}-{self.fix[:7]}"


TASKS = [
    RealTask(
        "more-itertools+more-itertools",
        "d64a7d6971bfd31c5719d02f0001e58de85683d1",
        "python -m pytest tests/test_recipes.py::TailTests",
        "`tail` with a negative size quietly returns a wrong result for sized iterables\n\n"
        "`list(more_itertools.tail(-1, 'ABCDEFG'))` does not fail: it returns part of the input. A\n"
        "negative size makes no sense and should raise `ValueError`, as it already does for iterables\n"
        "without a length.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "766b5547392fe8d54c1e000098499dc556bb5cb7",
        "python -m pytest tests/test_strutils.py",
        "`bytes2human` does not roll over at exact powers of 1024\n\n"
        "`boltons.strutils.bytes2human(1024)` returns `'1024B'` instead of `'1K'`, and `1048576` gives\n"
        "`'1024K'` instead of `'1M'`. A value exactly at a unit boundary should be shown in the larger\n"
        "unit; values below a boundary, in between, and negative ones should print as they do now.\n",
    ),
    RealTask(
        "hukkin+tomli",
        "4e245a4bbbefed99e550e196095ea65c851cf31d",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_error.py",
        "`tomli.loads` raises AttributeError for bytes and other non-str input\n\n"
        "`tomli.loads(b\"v = 1\")` fails with `AttributeError: 'bytes' object has no attribute ...`\n"
        "(and `tomli.loads(False)` likewise), which says nothing useful. It should raise `TypeError`\n"
        "with the message `Expected str object, not 'bytes'` (the type's qualified name in quotes).\n",
    ),
]


def git(args: list[str], cwd: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "swedeck", "GIT_AUTHOR_EMAIL": "swedeck@localhost", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_NAME": "swedeck", "GIT_COMMITTER_EMAIL": "swedeck@localhost",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def build(task: RealTask, mirrors: Path) -> None:
    source = mirrors / task.mirror / "repo"
    base = git(["rev-parse", f"{task.fix}^"], source).strip()
    changed = git(["diff", "--name-only", base, task.fix], source).split()
    tests = [p for p in changed if p.startswith("tests/")]
    code = [p for p in changed if not p.startswith("tests/")]
    folder = HERE / task.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "gold.patch").write_text(git(["diff", base, task.fix, "--", *code], source))
    (folder / "tests.patch").write_text(git(["diff", base, task.fix, "--", *tests], source))
    (folder / "issue.md").write_text(task.issue)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", base], cwd=source, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        git(["init", "-q", "-b", "main"], tree)
        git(["add", "-A"], tree)
        git(["commit", "-q", "--no-verify", "-m", f"{task.mirror.replace('+', '/')} at {base} (parent of {task.fix})"], tree)
        ref = git(["rev-parse", "HEAD"], tree).strip()
        git(["bundle", "create", "-q", str(folder / "repo.bundle"), "main"], tree)
    (folder / "task.toml").write_text(
        f'instance_id = "{task.name}"\nrepo = "{task.mirror.replace("+", "/")}"\ntest_cmd = ["{task.test_cmd}"]\n'
        'log_parser = "pytest"\n\n[environment]\nworkdir = "/testbed"\n\n[environment.recipe]\ninstall = []\n\n'
        f'[repo_source]\nkind = "bundle"\npath = "repo.bundle"\nref = "{ref}"\n'
    )


def main() -> None:
    for task in TASKS:
        build(task, Path(sys.argv[1]))


if __name__ == "__main__":
    main()
