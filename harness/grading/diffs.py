"""Unified diffs and test paths: splitting patches into files, and which paths are tests.

Shared by the grader (which paths to restore before grading) and the corpus adapters (which parts of a
commit are the hidden tests).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath


# ------------------------------------------------------------------------------------------- test paths


def is_r2e_test_path(path: str) -> bool:
    """R2E-Gym's test-file rule (``FileDiff.is_test_file``): ``*_test.py``, a path starting with
    ``test_`` (a top-level ``test_*/`` folder or file), ``test_*`` basename, or a
    ``tests``/``Tests``/``test``/``Test`` directory anywhere in the path. Applies to every extension."""
    parts = PurePosixPath(path).parts
    return (
        path.endswith("_test.py")
        or path.startswith("test_")
        or (bool(parts) and parts[-1].startswith("test_"))
        or any(part in ("tests", "Tests", "test", "Test") for part in parts)
    )


# SWE-bench's get_test_directives drops these from the test command (``csv`` has no dot upstream).
NON_TEST_EXTENSIONS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")


def is_test_directive(path: str) -> bool:
    return not path.endswith(NON_TEST_EXTENSIONS)


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ------------------------------------------------------------------------------------------- diffs

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_GIT_EXTENDED = (
    "old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ", "copy to ",
    "rename from ", "rename to ", "similarity index ", "dissimilarity index ", "index ",
    "Binary files ", "GIT binary patch",
)  # fmt: skip


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a unified diff; a path is None on the /dev/null side."""

    old_path: str | None
    new_path: str | None
    text: str

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> list[str]:
        return unique(p for p in (self.old_path, self.new_path) if p)


def _unquote(name: str) -> str:
    """Git's C-style quoting of unusual file names (``"a/sp ace\\303\\251"``)."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    simple = {
        "n": b"\n",
        "t": b"\t",
        '"': b'"',
        "\\": b"\\",
        "a": b"\a",
        "b": b"\b",
        "f": b"\f",
        "r": b"\r",
        "v": b"\v",
    }
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in simple:
                out += simple[nxt]
                i += 2
                continue
            if body[i + 1 : i + 4].isdigit():
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
        out += ch.encode()
        i += 1
    return out.decode(errors="replace")


def _marker_path(line: str, prefix: str) -> str | None:
    """The path on a ``--- `` / ``+++ `` line, without the a/ or b/ prefix; None for /dev/null."""
    name = line[4:].rstrip("\n").rstrip("\r")
    name = name.split("\t", 1)[0] if not name.startswith('"') else name  # plain diffs append a timestamp
    name = _unquote(name.strip())
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(prefix) else name


def _git_header_paths(line: str) -> tuple[str, str]:
    """Paths from ``diff --git a/X b/Y``; ambiguous with spaces, so prefer the symmetric split."""
    rest = line[len("diff --git ") :].rstrip("\n").rstrip("\r")
    if rest.startswith('"'):
        end = rest.index('"', 1) + 1 if '"' in rest[1:] else len(rest)
        a, b = rest[:end], rest[end:].strip()
        return _strip(_unquote(a), "a/"), _strip(_unquote(b), "b/")
    if (len(rest) - 1) % 2 == 0:
        half = (len(rest) - 1) // 2
        a, b = rest[:half], rest[half + 1 :]
        if a[2:] == b[2:]:
            return _strip(a, "a/"), _strip(b, "b/")
    a, _, b = rest.rpartition(" b/")
    return _strip(a, "a/"), b


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix) :] if name.startswith(prefix) else name


def _section_starts(lines: list[str]) -> list[int]:
    git = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    if git:
        return git
    # plain unified diff: a file starts at "--- " directly followed by "+++ " and a hunk header
    return [
        i
        for i in range(len(lines) - 2)
        if lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ") and _HUNK.match(lines[i + 2])
    ]


def split_diff(patch: str) -> list[FileDiff]:
    """Split a unified diff (git or plain) into per-file chunks; ValueError if it is not one.

    Text before the first file (a format-patch preamble) is dropped. Hunk line counts are not checked:
    corpora ship patches that only apply with ``git apply --recount``.
    """
    if not patch.strip():
        raise ValueError("is empty")
    lines = patch.splitlines(keepends=True)
    starts = _section_starts(lines)
    if not starts:
        raise ValueError("is not a unified diff (no 'diff --git' header and no '---'/'+++'/'@@' file section)")
    out: list[FileDiff] = []
    for n, start in enumerate(starts):
        chunk = lines[start : starts[n + 1] if n + 1 < len(starts) else len(lines)]
        out.append(_parse_section(chunk))
    return out


def _parse_section(chunk: list[str]) -> FileDiff:
    head = chunk[0]
    is_git = head.startswith("diff --git ")
    old = new = None
    if is_git:
        old, new = _git_header_paths(head)
    minus = plus = False
    hunks = 0
    extended = False
    for line in chunk[1:] if is_git else chunk:
        if _HUNK.match(line):
            hunks += 1
        elif hunks:
            continue  # hunk body
        elif line.startswith("--- "):
            minus, old = True, _marker_path(line, "a/")
        elif line.startswith("+++ "):
            plus, new = True, _marker_path(line, "b/")
        elif line.startswith("rename from ") or line.startswith("copy from "):
            old, extended = _unquote(line.split(" ", 2)[2].rstrip("\n")), True
        elif line.startswith("rename to ") or line.startswith("copy to "):
            new, extended = _unquote(line.split(" ", 2)[2].rstrip("\n")), True
        elif line.startswith("new file mode "):
            old, extended = None, True
        elif line.startswith("deleted file mode "):
            new, extended = None, True
        elif line.startswith(_GIT_EXTENDED):
            extended = True
    name = new or old or "?"
    if minus != plus:
        raise ValueError(f"file {name!r} has a '---' line without '+++' (or the reverse)")
    if minus and not hunks:
        raise ValueError(f"file {name!r} has no '@@' hunk")
    if not hunks and not extended:
        raise ValueError(f"file {name!r} has neither a hunk nor a git extended header")
    if not (old or new):
        raise ValueError("a file section names no path")
    return FileDiff(old_path=old, new_path=new, text="".join(chunk))


def patch_paths(files: Iterable[FileDiff]) -> list[str]:
    return unique(p for f in files for p in f.paths)


def file_diff(path: str, old: str | None, new: str | None) -> str:
    """A git-style diff of one file from its two contents (None: the file does not exist on that side)."""
    a = [] if old is None else old.splitlines(keepends=True)
    b = [] if new is None else new.splitlines(keepends=True)
    if old == new:
        return ""
    out = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        out.append("new file mode 100644\n")
    elif new is None:
        out.append("deleted file mode 100644\n")
    body = list(
        difflib.unified_diff(
            a, b, "/dev/null" if old is None else f"a/{path}", "/dev/null" if new is None else f"b/{path}"
        )
    )
    for line in body:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
