"""Where model-free probes are built: a host clone of the buggy tree with gold applied, and the
line-level view of what gold changed.

A candidate is always a real unified diff against the sealed buggy tree: gold is applied in a
temporary clone, the post-gold files are transformed, and ``git diff`` produces the patch. The tree
itself is never modified.
"""

from __future__ import annotations

import ast
import difflib
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from harness.grading.diffs import is_r2e_test_path
from harness.sandboxes.envs import GIT_IDENTITY
from harness.pyast import parse
from harness.records import ProbeKind, Task

MAX_PER_OPERATOR = 4  # candidates kept per operator and per task
CONTEXT = 3  # lines of context that group change blocks into hunks, as in `git diff`

Contents = dict[str, "str | None"]  # path -> file text (None: the file does not exist)
Lazy = Callable[[], "Contents | None"]  # a candidate built only when its operator still needs one


@dataclass(frozen=True)
class Candidate:
    kind: ProbeKind
    operator: str
    description: str
    patch: str

def git(args: Sequence[str], cwd: Path, *, check: bool = True, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "core.quotepath=false", "-c", "core.autocrlf=false", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, env={**os.environ, **GIT_IDENTITY},
    )  # fmt: skip
    if check and done.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def apply_trusted(patch: str, cwd: Path) -> bool:
    """Apply a trusted patch (gold, hidden tests) on the host clone; only git's strategies, which
    refuse paths inside .git."""
    if not patch.strip():
        return True
    path = cwd.parent / f".probe-{os.getpid()}-{id(patch)}.patch"
    path.write_text(patch if patch.endswith("\n") else patch + "\n")
    try:
        for extra in ([], ["--recount", "--ignore-space-change", "--ignore-whitespace"]):
            if subprocess.run(["git", "apply", *extra, str(path)], cwd=cwd, capture_output=True).returncode == 0:
                return True
        return False
    finally:
        path.unlink(missing_ok=True)


def read_text(path: Path) -> str | None:
    if not path.is_file():
        return None
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


@dataclass
class Workspace:
    """A clone of the buggy tree with gold applied; ``diff`` turns file contents into a patch."""

    root: Path
    paths: list[str]  # files gold touched
    old: Contents
    new: Contents
    tree: Path  # the sealed buggy tree it was cloned from

    def diff(self, contents: Mapping[str, str | None]) -> str:
        for path in self.paths:
            text = contents.get(path, self.new[path])
            target = self.root / path
            if text is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        git(["add", "-A", "--force", "--", *self.paths], self.root)
        patch = git(["diff", "--cached", "--no-renames", "--no-color", "HEAD", "--", *self.paths], self.root)
        changed = {p: contents.get(p, self.new[p]) for p in self.paths}
        remember(self.tree, patch, {p: text for p, text in changed.items() if text != self.old[p]})
        return patch


@contextmanager
def workspace(task: Task, tree: Path) -> Iterator[Workspace | None]:
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-probes-"))
    try:
        root = tmp / "repo"
        git(["clone", "-q", str(tree), str(root)], tmp)
        if not apply_trusted(task.answer.gold_patch, root):
            yield None
            return
        git(["add", "-A", "--force"], root)
        status = git(["diff", "--cached", "--no-renames", "--name-only", "-z", "HEAD"], root)
        paths = [p for p in status.split("\0") if p]
        new = {p: read_text(root / p) for p in paths}
        old = {}
        for p in paths:
            shown = subprocess.run(["git", "show", f"HEAD:{p}"], cwd=root, capture_output=True)
            old[p] = shown.stdout.decode("utf-8", errors="surrogateescape") if shown.returncode == 0 else None
        yield Workspace(root, paths, old, new, tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_sources(task: Task, tree: Path, files: Iterable[str]) -> dict[str, str]:
    """The hidden test files as they run: the buggy tree plus the hidden tests."""
    wanted = sorted(set(files))
    if not wanted:
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-probe-tests-"))
    try:
        root = tmp / "repo"
        git(["clone", "-q", str(tree), str(root)], tmp)
        apply_trusted(task.answer.hidden_tests.patch, root)
        out = {}
        for path in wanted:
            if path in task.answer.hidden_tests.files:
                out[path] = task.answer.hidden_tests.files[path]
            elif (text := read_text(root / path)) is not None:
                out[path] = text
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


CONTENTS_KEPT = 1024
_CONTENTS: dict[tuple[str, str], dict[str, str | None] | None] = {}  # (tree, patch) -> Trees.contents


def remember(tree: Path, patch: str, files: Contents | None) -> None:
    """What ``Trees.contents`` finds for ``patch`` on ``tree`` (None: it does not apply), known where
    the patch was made or once found."""
    _CONTENTS[(str(tree), patch)] = None if files is None else dict(files)
    while len(_CONTENTS) > CONTENTS_KEPT:
        _CONTENTS.pop(next(iter(_CONTENTS)), None)


def recall(tree: Path, patch: str) -> tuple[bool, Contents | None]:
    """(whether ``patch`` on ``tree`` is remembered, what ``Trees.contents`` found for it)."""
    found = _CONTENTS.get((str(tree), patch), _CONTENTS)
    if found is _CONTENTS:
        return False, None
    return True, None if found is None else dict(found)


class Trees:
    """A host clone of the buggy tree: gold's file contents, and each probe's, file by file."""

    def __init__(self, task: Task, tree: Path) -> None:
        self.task, self.tree = task, tree
        self.tmp = Path(tempfile.mkdtemp(prefix="swedeck-impact-"))
        self.root = self.tmp / "repo"
        self.ok = False
        self.gold: dict[str, str | None] = {}

    def __enter__(self) -> Trees:
        git(["clone", "-q", str(self.tree), str(self.root)], self.tmp)
        self.gold = self.contents(self.task.answer.gold_patch) or {}
        self.ok = bool(self.gold) or not self.task.answer.gold_patch.strip()
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def contents(self, patch: str) -> dict[str, str | None] | None:
        """Every path ``patch`` changes with its new text (None: deleted); None when it does not apply.
        Remembered for the last CONTENTS_KEPT patches: planning and a probe session both need them."""
        known, found = recall(self.tree, patch)
        if known:
            return found
        found = self._apply(patch)
        remember(self.tree, patch, found)
        return None if found is None else dict(found)

    def _apply(self, patch: str) -> dict[str, str | None] | None:
        git(["reset", "-q", "--hard", "HEAD"], self.root)
        git(["clean", "-q", "-fdx"], self.root)
        if not apply_trusted(patch, self.root):
            return None
        git(["add", "-A", "--force"], self.root)
        listing = git(["diff", "--cached", "--no-renames", "--name-only", "-z", "HEAD"], self.root)
        return {p: read_text(self.root / p) for p in listing.split("\0") if p}

    def against_gold(self, patch: str) -> tuple[dict[str, str | None], dict[str, str | None]] | None:
        """(gold's text, the probe's text) of every path where they may differ; None when the probe does
        not apply on the host."""
        if not self.ok:
            return None
        probe = self.contents(patch)
        if probe is None:
            return None
        paths = set(self.gold) | set(probe)
        buggy = {}
        for path in paths - set(self.gold):
            shown = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=self.root, capture_output=True)
            buggy[path] = shown.stdout.decode("utf-8", errors="surrogateescape") if shown.returncode == 0 else None
        for path in paths - set(probe):
            if path in self.gold:  # the probe leaves it as in the buggy tree
                shown = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=self.root, capture_output=True)
                probe[path] = shown.stdout.decode("utf-8", errors="surrogateescape") if shown.returncode == 0 else None
        gold = {p: self.gold.get(p, buggy.get(p)) for p in paths}
        return gold, {p: probe[p] for p in paths}


# ============================================================================================ line level


def file_lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def _opcodes(old: list[str], new: list[str]) -> tuple[tuple[str, int, int, int, int], ...]:
    return _cached_opcodes(tuple(old), tuple(new))


@functools.lru_cache(maxsize=64)
def _cached_opcodes(old: tuple[str, ...], new: tuple[str, ...]) -> tuple[tuple[str, int, int, int, int], ...]:
    """Every operator asks for gold's change blocks of the same files, and the line diff of a large
    module takes a second or more: matched once per pair of texts (a tuple: no caller can alter it)."""
    return tuple(difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes())


def change_blocks(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """Non-equal blocks (i1, i2, j1, j2), 0-based half-open, old -> new."""
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in _opcodes(old, new) if tag != "equal"]


def revert_blocks(old: list[str], new: list[str], blocks: set[tuple[int, int, int, int]]) -> str:
    """The new file with the given change blocks put back to their old lines."""
    out: list[str] = []
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        out += old[i1:i2] if tag != "equal" and (i1, i2, j1, j2) in blocks else new[j1:j2]
    return "".join(out)


def hunk_groups(old: list[str], new: list[str]) -> list[set[tuple[int, int, int, int]]]:
    """Change blocks grouped into hunks the way a unified diff with CONTEXT lines of context groups
    them: a run of more than twice CONTEXT equal lines between two blocks starts a new hunk."""
    groups: list[set[tuple[int, int, int, int]]] = []
    last = None
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        if tag == "equal":
            continue
        if last is None or i1 - last > 2 * CONTEXT:
            groups.append(set())
        groups[-1].add((i1, i2, j1, j2))
        last = i2
    return groups


def added_lines(old: list[str], new: list[str]) -> set[int]:
    """1-based line numbers of the new file that gold added or changed."""
    return {j + 1 for _, _, j1, j2 in change_blocks(old, new) for j in range(j1, j2)}


def touched_lines(old: list[str], new: list[str]) -> set[int]:
    """Added lines, plus the line next to each pure deletion (so a function where gold only deleted
    code counts as touched)."""
    out = set()
    for _, _, j1, j2 in change_blocks(old, new):
        out |= set(range(j1 + 1, j2 + 1)) if j2 > j1 else {max(j1, 1)}
    return out


DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc", ".html")
DOC_FOLDERS = ("docs", "doc")
NOT_IMPORTED = ("setup.py",)  # Python files at a repository's root that no test imports
PROSE = ("CHANGELOG", "CHANGES", "NEWS", "README", "AUTHORS", "CONTRIBUTORS", "HISTORY", "LICENSE")


def importable(path: str, root: Path) -> bool:
    """A file the tests can import (a Python module) or read as package data (a file inside a package
    of the gold tree ``root``): the only files whose change can alter what the tests see. Tests,
    documentation, changelogs and AUTHORS files never are."""
    p = PurePosixPath(path)
    if is_r2e_test_path(path) or any(part in DOC_FOLDERS for part in p.parts[:-1]) or p.name.upper().startswith(PROSE):
        return False
    if p.suffix == ".py":
        return path not in NOT_IMPORTED
    return p.suffix.lower() not in DOC_SUFFIXES and (root / p.parent / "__init__.py").is_file()


def ast_dump(text: str | None) -> str | None:
    """The code's AST without docstrings (comments are not in it either): two texts with the same
    dump behave the same, so a probe that only differs from gold (or from the buggy tree) there is
    not a probe."""
    if text is None:
        return None
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return text
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def parses(text: str) -> bool:
    try:
        parse(text)
    except (SyntaxError, ValueError):
        return False
    return True
