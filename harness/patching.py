"""Putting patches into a sandbox's tree, and taking the test files back from a candidate.

Applying is a cascade of strategies, each first checked with ``--check``/``--dry-run`` so a failed
attempt never leaves a half-applied tree and nothing needs resetting between attempts.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path, PurePosixPath

from harness.diffs import is_r2e_test_path
from harness.records import Task
from harness.sandbox import IO_DIR, Sandbox

PATCH_FILE = IO_DIR + "/{name}.patch"
APPLY_STRATEGIES: list[tuple[str, str | None, str]] = [
    # (name, check command, apply command); {p} is the patch file. Plain git apply is atomic (all
    # files or none), so it needs no separate check; --3way and GNU patch can stop half-way.
    ("git apply", None, "git apply {p}"),
    (
        "git apply --recount --ignore-whitespace",
        None,
        "git apply --recount --ignore-space-change --ignore-whitespace {p}",
    ),
    # --3way refuses files whose index entry looks stale, and a sandbox's tree is a fresh copy (new
    # inodes and ctimes): refresh the index first or this strategy never applies anything
    (
        "git apply --3way",
        "git update-index -q --refresh >/dev/null; git apply --check --3way {p}",
        "git apply --3way {p}",
    ),
    (
        "patch --fuzz=5",
        "patch --batch --forward --fuzz=5 -p1 --dry-run -i {p}",
        "patch --batch --forward --fuzz=5 -p1 -i {p}",
    ),
]
# files that change how tests are collected or run, whoever adds or edits them
TEST_INFRA_NAMES = {"conftest.py", "pytest.ini", "tox.ini", "sitecustomize.py", "usercustomize.py"}
# Where an added module could shadow another (the workdir is first on sys.path under `python -m
# pytest`; a src/ folder may be on it too): top-level modules and packages, at most a folder deep.
SHADOW_SCAN = [":(glob)*.py", ":(glob)*/*.py", ":(glob)*/__init__.py", ":(glob)*/*/__init__.py"]
_MODULE_SUFFIXES = (".py", ".pyc", ".so")
# Run by the environment's own Python, which knows its sys.path (and must run on old versions): of
# the added files, those that are imported instead of a module the environment already has, such as
# a pytest.py or json.py at the root that would run in place of pytest or the standard library.
SHADOW_CHECK = r"""
import importlib.machinery as m, json, os, sys
here = os.path.realpath(os.getcwd())
def inside(p):
    r = os.path.realpath(p or ".")
    return r == here or r.startswith(here + os.sep)
entries = [os.path.realpath(p or ".") for p in sys.path if inside(p)]
outside = [p for p in sys.path if not inside(p)]
found = []
for path in json.loads(sys.argv[1]):
    full = os.path.realpath(path)
    for entry in entries:
        parts = os.path.relpath(full, entry).split(os.sep)
        if parts[0] == "..":
            continue
        if len(parts) == 1:
            name = parts[0].split(".")[0]
        elif len(parts) == 2 and parts[1].startswith("__init__."):
            name = parts[0]
        else:
            continue
        spec = m.PathFinder.find_spec(name, sys.path)
        if spec and spec.origin and os.path.realpath(spec.origin) == full and m.PathFinder.find_spec(name, outside):
            found.append(path)
            break
print(json.dumps(found))
"""
# GNU patch names everything it would touch in its --dry-run output ("checking file x", "checking
# symbolic link y"); git apply refuses paths inside .git, and paths beyond a symlink, by itself
_PATCH_CHECKED = re.compile(r"^checking (file|symbolic link) (.+)$", re.MULTILINE)
_GIT_DIR = re.compile(r"(?:^|/)\.git(?:/|$)")
IGNORED_SCAN = [f":(glob)**/{name}" for name in sorted(TEST_INFRA_NAMES)] + SHADOW_SCAN
CHANGES_COMMAND = (
    "git status --porcelain=v1 -z --untracked-files=all; "
    # a .gitignore the candidate adds hides what it plants from the scan above, so ignored files are
    # listed too, but only for the names that change how pytest runs: an ignored in-tree venv or
    # build output (its .pth files, its packages' tests) belongs to the environment
    "git status --porcelain=v1 -z --untracked-files=all --ignored -- " + shlex.join(IGNORED_SCAN)
)


def apply_patch(sandbox: Sandbox, patch: str, name: str, *, then: str = "") -> tuple[str, str]:
    """Apply ``patch`` in the workdir. Returns (strategy, "") on success, ("", why) on failure.
    ``then`` runs right after a successful apply in the same command: one engine round trip less."""
    if not patch.strip():
        return "empty", ""
    path = PATCH_FILE.format(name=name)
    sandbox.write_file(path, patch if patch.endswith("\n") else patch + "\n")
    p = shlex.quote(path)
    errors = []
    for strategy, check, apply in APPLY_STRATEGIES:
        command = apply.format(p=p) + (f" && {{ {then}; }}" if then else "")
        if check is None:
            done = sandbox.run(command, timeout=60)
            if done.exit_code == 0:
                return strategy, ""
            errors.append(f"{strategy}: {done.output.strip()[-400:]}")
            continue
        probe = sandbox.run(check.format(p=p), timeout=60)
        unsafe = _unsafe_targets(probe.log_path) if probe.exit_code == 0 else []
        if unsafe:  # a hook or config planted in .git would run during grading's own git commands
            errors.append(f"{strategy}: refused, it writes inside .git or creates a symlink: {', '.join(unsafe)}")
            continue
        if probe.exit_code == 0:
            done = sandbox.run(command, timeout=60)
            if done.exit_code == 0:
                return strategy, ""
            # its check passed, so the failure was mid-way: --3way leaves conflict markers and an
            # unmerged index behind, and no later strategy may run on such a tree
            errors.append(f"{strategy}: passed its check, then failed: {done.output.strip()[-400:]}")
            return "", "\n".join(errors)
        errors.append(f"{strategy}: {probe.output.strip()[-400:]}")
    return "", "\n".join(errors)


def _unsafe_targets(log_path: str) -> list[str]:
    """What a dry run says it would touch inside ``.git``, directly or through a symlink it creates
    (GNU patch creates ``g -> .git`` and then writes ``g/hooks/post-checkout`` through it)."""
    found = _PATCH_CHECKED.findall(Path(log_path).read_text(errors="replace")) if log_path else []
    return [
        name
        for kind, name in found
        if kind == "symbolic link" or _GIT_DIR.search(name.strip().strip("'\""))
    ]


def is_protected(path: str, task: Task) -> bool:
    """A path the task's tests own: a candidate may not add, edit or delete it."""
    p = PurePosixPath(path)
    return path in task.test_paths or is_r2e_test_path(path) or p.name in TEST_INFRA_NAMES or p.suffix == ".pth"


def _may_shadow(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return parts[-1].endswith(_MODULE_SUFFIXES) and (len(parts) <= 2 or (len(parts) == 3 and parts[-1].startswith("__init__.")))


def _shadowing(sandbox: Sandbox, paths: list[str]) -> list[str]:
    """Which of the added ``paths`` shadow a module the environment has; all of them if the
    environment's Python cannot say (it would be the one running the tests)."""
    answer = sandbox.run(f"python -c {shlex.quote(SHADOW_CHECK)} {shlex.quote(json.dumps(paths))}", timeout=60)
    try:
        return [p for p in json.loads(answer.output.strip().splitlines()[-1]) if p in paths]
    except (ValueError, IndexError):
        return paths


def changed_paths(porcelain_z: str) -> list[tuple[str, str]]:
    """(status, path) pairs from ``git status --porcelain=v1 -z``; a rename yields both of its paths."""
    out: list[tuple[str, str]] = []
    fields = porcelain_z.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        out.append((status, path))
        if "R" in status or "C" in status:
            out.append(("D ", fields[i]))  # the rename's source, as if deleted
            i += 1
    return out


def neutralize_tests(sandbox: Sandbox, task: Task, listing: str | None = None) -> list[str]:
    """Undo every change the candidate made to protected paths: restore tracked ones from the base
    commit, delete added ones. ``listing`` is CHANGES_COMMAND's output when the caller already ran it
    (see ``apply_patch(then=...)``). Returns the paths touched (evidence of tampering, or just of an
    over-eager agent)."""
    if listing is None:
        listing = Path(sandbox.run(CHANGES_COMMAND, timeout=60).log_path).read_text(errors="replace")
    restore, delete, modules = [], [], []
    for code, path in dict.fromkeys(changed_paths(listing)):
        # added, or the new side of a rename or copy staged by `git apply --3way`: not in HEAD
        added = code in ("??", "!!") or code[0] in "ARC"
        if is_protected(path, task):
            (delete if added else restore).append(path)
        elif added and _may_shadow(path):
            modules.append(path)
    if modules:
        delete += _shadowing(sandbox, modules)
    if restore:
        sandbox.run("git checkout HEAD -- " + shlex.join(restore), timeout=60)
    if delete:
        sandbox.run("git rm -q --cached --ignore-unmatch -- " + shlex.join(delete) + "; rm -f -- " + shlex.join(delete), timeout=60)
    return sorted(restore + delete)
