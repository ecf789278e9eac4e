"""What a candidate's change may do, decided before anything of it runs.

A change may add, modify or delete regular files with ordinary content, outside the tests' places,
with mode 644 or 755. Everything else is refused when the change is applied (the grade is 0 with
reason ``forbidden_change``), never cleaned up afterwards: a list of what to clean up is only as
good as its last entry, a list of what is allowed leaves nothing out.

Refused, one rule each (``RULES``):

- links, symbolic or hard, and anything that is neither a regular file nor a folder (FIFO, socket,
  device);
- a mode other than 644 or 755 on a file the change adds or changes the mode of (the apply runs
  under umask 022, so no mode a patch can express falls outside these; a file the tree had keeps
  whatever mode it had);
- anything in the environment's installed packages the tree may hold (a virtualenv, marked by its
  pyvenv.cfg, as R2E-Gym's .venv in the work directory; any site-packages or dist-packages folder):
  editing pytest there is worse than shadowing it;
- anything in the tests' places: the paths ``is_protected`` names (test files,
  conftest.py, pytest's own configuration files, start-up hooks, .pth files), the hidden tests'
  files and the folders they go in. The configuration files pytest shares with packaging
  (``PACKAGING_CONFIG``: a real fix bumps a version or a dependency in them) are the one exception:
  the grader writes the base commit's copy back over them (``harness.grading.trusted.plan``), so the
  candidate's edit never reaches the tests;
- what Python or pytest would load instead of the code under test or before it, whatever its form:
  bytecode (.pyc, __pycache__), package metadata (.dist-info, .egg-info, .egg-link: entry points
  announce plugins), native extension modules (any suffix the environment's Python accepts for one:
  code no reading of the change can check), and any entry named like a module the environment or
  the standard library provides, or a module of the grader's own plugins (``harness.grading.shipping``:
  a folder of the tree can come before theirs on sys.path, the work directory under ``python -m pytest``),
  directly in a folder that is on sys.path when the tests run (a file with any import suffix, a
  package or namespace folder, a link), unless the base commit's tree already had it there (the
  project's own code).

Host work is bounded by construction: every touched path is checked once, in time linear in its
length, and a change deeper than ``MAX_DEPTH`` folders (``harness.grading.tree``), or touching more than
``MAX_CHANGED`` entries, is refused before any path is looked at (``too_deep``, ``too_many``); the
same caps are checked on the paths a patch names before it is applied (``patch_violations``, with a
cap on the patch's own size, ``too_large``), so a patch of 200 000 files is never applied at all.

Gold never needs any of this: ``tests/test_capabilities.py`` runs the rule over the gold patch of
every task in the repository, and Pipeline 1 calls a task whose gold is refused ``ungradeable``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.grading.diffs import is_r2e_test_path
from harness.grading.shipping import plugin_modules
from harness.grading.tree import MAX_DEPTH, Entry, ListingTooLarge, TaskFacts, parse_listing, tree_changes
from harness.records import Task

# No fix touches this many entries (gold patches: a handful of files); past it the change is refused
# before its paths are looked at, whatever their number
MAX_CHANGED = 10_000
MAX_PATCH_BYTES = 64 * 2**20  # the largest gold patch in the corpora is a few MB
RULES = {
    "symlink": "a symbolic link",
    "hard_link": "a file with more than one name (a hard link)",
    "special_file": "neither a regular file nor a folder (a FIFO, socket or device)",
    "mode": "a file mode other than 644 or 755",
    "tests_place": "a path the tests own",
    "environment": "part of the environment's installed packages",
    "bytecode": "bytecode, which Python loads in place of source",
    "package_metadata": "package metadata, whose entry points announce plugins",
    "extension_module": "a native extension module",
    "shadows_module": "imported instead of a module the environment provides",
    "too_deep": f"deeper than {MAX_DEPTH} folders",
    "too_many": f"more than {MAX_CHANGED} entries changed",
    "too_large": f"a patch of more than {MAX_PATCH_BYTES} bytes",
}
MODES = (0o644, 0o755)
# Files that change how tests are collected or run, whoever adds or edits them: pytest's
# configuration files (the whole file: pytest reads its section from any of them), conftest.py, and
# what Python runs at start-up.
TEST_INFRA_NAMES = {
    "conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "pyproject.toml", "tox.ini",
    "setup.cfg", "sitecustomize.py", "usercustomize.py",
}  # fmt: skip
# Of those, the files pytest shares with packaging: a real fix may edit them (a version, a dependency),
# so the candidate's edit is written over with the base commit's copy (harness.grading.trusted.plan)
# rather than refused
PACKAGING_CONFIG = {"pyproject.toml", "setup.cfg", "tox.ini"}
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link")
_BYTECODE_SUFFIXES = (".pyc", ".pyo")
_PYTHONPATH = re.compile(r"^PYTHONPATH=(.*)$")


@dataclass(frozen=True)
class Violation:
    path: str
    rule: str  # a key of RULES
    why: str = ""  # what the rule found, where RULES alone does not say it

    def __str__(self) -> str:
        return f"{self.path}: {RULES[self.rule]}" + (f" ({self.why})" if self.why else "")


def violations(before: Mapping[str, Entry], after: Mapping[str, Entry], task: Task, facts: TaskFacts) -> list[Violation]:
    """Everything the change did that it may not: the tree as the harness listed it right before and
    right after the patch was applied, nothing of the candidate's having run."""
    changes = tree_changes(dict(before), dict(after))
    if len(changes.touched) > MAX_CHANGED:
        return [Violation(CHANGE, "too_many", f"{len(changes.touched)}")]
    deep = sorted(p for p in changes.touched if _depth(p) > MAX_DEPTH)
    if deep:  # the listing stops one level past the cap: each chain shows up once, at that level
        return [Violation(path, "too_deep") for path in deep]
    if own := next((p for p in before if _depth(p) > MAX_DEPTH), None):  # below it no change would be listed
        return [Violation(own, "too_deep", "in the task's own tree: no change below it can be seen")]
    hidden = {p for p, f in facts.hidden.items() if f is not None}
    hidden_folders = {str(a) for p in facts.hidden for a in PurePosixPath(p).parents if str(a) != "."}
    venvs = {_parent(p) for p in before if p.endswith("pyvenv.cfg") and PurePosixPath(p).name == "pyvenv.cfg"}
    found = {}
    for path in sorted(changes.touched):
        if _in_environment(path, venvs):
            rule = "environment"
        else:
            rule = _rule(path, after.get(path), before.get(path), task, facts, hidden_folders)
        if rule:
            found[path] = Violation(path, rule)
    for path, module, folder in sorted(_new_shadows(before, after, task, facts, hidden)):
        found.setdefault(path, Violation(path, "shadows_module", f"`{module}`, from {folder or 'the work directory'} on sys.path"))
    return sorted(found.values(), key=lambda v: v.path)


CHANGE = "(the change)"  # the path of a violation of the change as a whole


def listed_tree(before: Mapping[str, Entry], listed: bytes) -> tuple[dict[str, Entry], list[Violation]]:
    """The tree after the change, from the harness's listing of it (``b""``: the tree as it was); a
    listing cut at its byte cap holds more entries than any repository, a violation of its own."""
    try:
        return (parse_listing(listed) if listed else dict(before)), []
    except ListingTooLarge as err:
        return {}, [Violation(CHANGE, "too_many", str(err))]


def patch_violations(patch: str) -> list[Violation]:
    """The caps, checked on the paths a patch names (its ``diff --git``, ``+++``, rename and copy
    lines) before it is applied: patch tools write only what a patch names, so a patch past a cap is
    refused without writing anything (the listing after the apply stays the check)."""
    if len(patch) > MAX_PATCH_BYTES:
        return [Violation(CHANGE, "too_large", f"{len(patch)} characters")]
    gits = pluses = 0
    deep = []
    for line in patch.split("\n"):
        if line.startswith(("diff --git ", "+++ ", "rename to ", "copy to ")):
            gits, pluses = gits + line.startswith("diff --git "), pluses + line.startswith("+++ ")
            target = line.rsplit(" b/", 1)[-1] if line.startswith("diff --git ") else line.split(" ", 2)[-1]
            if _depth(target) > MAX_DEPTH + 1:  # the path's own folders and git's b/
                deep.append(target)
    if max(gits, pluses) > MAX_CHANGED:  # a git diff names a file on both lines (an empty one on the first only)
        return [Violation(CHANGE, "too_many", f"the patch names {max(gits, pluses)} files")]
    return [Violation(deep[0][:160] + "...", "too_deep", f"{len(deep)} paths")] if deep else []


def describe(found: Iterable[Violation], limit: int = 20) -> str:
    lines = [str(v) for v in found]
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "the change may not do this:\n" + "\n".join(lines[:limit]) + more


def is_protected(path: str, task: Task) -> bool:
    """A path the task's tests own: a candidate may not add, edit or delete it."""
    p = PurePosixPath(path)
    return path in task.test_paths or is_r2e_test_path(path) or p.name in TEST_INFRA_NAMES or p.suffix == ".pth"


def _rule(
    path: str, entry: Entry | None, old: Entry | None, task: Task, facts: TaskFacts, hidden_folders: set[str]
) -> str:
    """The first rule a touched path breaks ("" for none); ``entry`` is None for a deleted path."""
    name = PurePosixPath(path).name
    in_tests = (is_protected(path, task) and name not in PACKAGING_CONFIG) or path in facts.hidden
    if entry is None:  # a folder goes with its files, which say what the change deleted
        return "tests_place" if in_tests and old is not None and old.kind != "d" else ""
    if entry.kind == "l":
        return "symlink"
    if entry.kind not in ("f", "d"):
        return "special_file"
    if entry.kind == "f" and entry.links > 1 and old is None:
        return "hard_link"
    if in_tests or (path in hidden_folders and entry.kind != "d"):
        return "tests_place"
    parts = PurePosixPath(path).parts
    if "__pycache__" in parts or name.endswith(_BYTECODE_SUFFIXES):
        return "bytecode"
    if any(part.endswith(_METADATA_SUFFIXES) for part in parts):
        return "package_metadata"
    if entry.kind == "f" and name.endswith(tuple(facts.extension_suffixes)):
        return "extension_module"
    if entry.kind == "f" and (old is None or old.mode != entry.mode) and entry.mode not in MODES:
        return "mode"
    return ""


def _depth(path: str) -> int:
    return path.count("/") + 1


def _in_environment(path: str, venvs: set[str]) -> bool:
    parts = path.split("/")
    inside = any(path == v or path.startswith(v + "/") for v in venvs)  # a tree holds one or two
    return inside or "site-packages" in parts or "dist-packages" in parts


def _new_shadows(
    before: Mapping[str, Entry], after: Mapping[str, Entry], task: Task, facts: TaskFacts, hidden: set[str]
) -> set[tuple[str, str, str]]:
    """(path, module, folder) for each entry that shadows one of the environment's modules after the
    change and did not before it: a name the change added to a folder on sys.path, or a folder the
    change put on sys.path (a test folder that lost its __init__.py). A module the project itself
    already shadowed at the base commit is its own code (the project installed into the environment,
    or a vendored copy), which the change may edit."""
    modules = environment_modules(before, facts)
    return _shadows(after, task, facts, hidden, modules) - _shadows(before, task, facts, hidden, modules)


def environment_modules(tree: Mapping[str, Entry], facts: TaskFacts) -> set[str]:
    """What the environment provides: what its Python imports from outside the tree, what is
    installed in a site-packages folder inside it (R2E-Gym's .venv, whose pytest is not "outside"),
    and the grader's plugins with their helper modules."""
    installed = {
        import_name(PurePosixPath(path).name, entry.kind, facts.suffixes)
        for path, entry in tree.items()
        if PurePosixPath(path).parent.name in ("site-packages", "dist-packages")
    }
    return set(facts.modules) | plugin_modules() | installed - {""}


def _shadows(
    tree: Mapping[str, Entry], task: Task, facts: TaskFacts, hidden: set[str], modules: set[str]
) -> set[tuple[str, str, str]]:
    folders = sys_path_folders(set(tree) | hidden, task, facts)
    found = set()
    for path, entry in tree.items():
        parent = _parent(path)
        if parent in folders:
            module = import_name(PurePosixPath(path).name, entry.kind, facts.suffixes)
            if module in modules:
                found.add((path, module, parent))
    return found


def import_name(name: str, kind: str, suffixes: Iterable[str]) -> str:
    """The top-level name ``import x`` finds this entry under: a folder (package or namespace) or a
    link by its own name, a file by its name without the longest import suffix it ends with; ""
    when a file has none."""
    if kind != "f":
        return name
    for suffix in sorted(suffixes, key=len, reverse=True):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return ""


def sys_path_folders(paths: set[str], task: Task, facts: TaskFacts) -> set[str]:
    """Folders of the tree that are on sys.path while the tests run: the environment's own entries
    inside the tree, what the test command puts on PYTHONPATH, and for each test file and conftest.py
    the folder pytest's rootdir-insertion puts in front (the first one up without an __init__.py: its
    own folder, or the one above its package). A package's own folder is not on sys.path, so a fix may
    add a ``types.py`` beside a test file in it. ``paths`` is the tree's paths."""
    folders = set(facts.tree_path) | set(pythonpath_folders(task.test_cmd))
    conftests = {p for p in paths if PurePosixPath(p).name == "conftest.py"}
    for test in {*facts.hidden, *task.test_paths, *conftests}:
        if not test.endswith(".py"):
            continue
        folder = _parent(test)
        while folder and f"{folder}/__init__.py" in paths:
            folder = _parent(folder)
        folders.add(folder)
    return folders


def pythonpath_folders(test_cmd: Iterable[str]) -> list[str]:
    """Relative folders a test command puts on PYTHONPATH (``PYTHONPATH=src pytest``); absolute ones
    lie outside the tree."""
    found = []
    for command in test_cmd:
        try:
            words = shlex.split(command)
        except ValueError:  # unbalanced quotes: the command fails to run anyway
            continue
        for word in words:
            match = _PYTHONPATH.match(word)
            for entry in match.group(1).split(":") if match else ():
                folder = posixpath.normpath(entry or ".")
                if not folder.startswith(("/", "$", "..")):
                    found.append("" if folder == "." else folder)
    return found


def _parent(path: str) -> str:
    parent = str(PurePosixPath(path).parent)
    return "" if parent == "." else parent
