"""The tree as the grader sees it without running anything of it: the harness's own listing of its
entries, the changes between two listings, and the facts of a task's pristine tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

# Bounds on a listing, so that taking, reading and judging one is bounded however the tree is shaped:
# entries deeper than MAX_DEPTH folders are not listed (the listing shows each chain down to one level
# past the cap, which harness.grading.capabilities refuses), and the listing is cut after LISTING_BYTES.
# No repository comes near either (the sample and data/real trees: at most 8 levels and 912 entries; a
# virtualenv's site-packages some 15 levels and tens of thousands of entries, about 100 bytes each).
MAX_DEPTH = 64
LISTING_BYTES = 64 * 2**20
# One record per entry, NUL-terminated so any file name survives: type, mode, size, mtime, link count, path.
LISTING = (
    f"find . -maxdepth {MAX_DEPTH + 1} -path ./.git -prune -o -printf '%y %m %s %T@ %n %P\\0' | head -c {LISTING_BYTES + 1}"
)


class ListingTooLarge(ValueError):
    """A listing cut at LISTING_BYTES: the tree holds more entries than any repository."""


@dataclass(frozen=True)
class Entry:
    kind: str  # find's %y: f file, d directory, l symlink, ...
    mode: int
    size: int
    mtime: str
    links: int = 1  # names of this inode (find's %n)


def parse_listing(raw: bytes) -> dict[str, Entry]:
    if len(raw) > LISTING_BYTES:
        raise ListingTooLarge(f"the tree lists more than {LISTING_BYTES} bytes of entries")
    entries = {}
    for record in raw.split(b"\0"):
        fields = record.decode("utf-8", "surrogateescape").split(" ", 5)
        if len(fields) == 6 and fields[5]:
            kind, mode, size, mtime, links, path = fields
            entries[path] = Entry(kind, int(mode, 8), int(size), mtime, int(links))
    return entries


@dataclass
class Changes:
    added: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)  # entries whose type, mode, size or mtime changed
    deleted: set[str] = field(default_factory=set)

    @property
    def touched(self) -> set[str]:
        return self.added | self.modified | self.deleted


def tree_changes(before: dict[str, Entry], after: dict[str, Entry]) -> Changes:
    """Patch tools give every file they write a fresh mtime and cannot set an old one, so an entry
    whose stat is unchanged has unchanged content."""
    changes = Changes(added=set(after) - set(before), deleted=set(before) - set(after))
    for path in set(before) & set(after):
        old, new = before[path], after[path]
        if old.kind != new.kind or (new.kind != "d" and old != new):
            changes.modified.add(path)
    return changes


class TaskFacts(BaseModel):
    """What the grader knows of a task without trusting the candidate, gathered in a pristine sandbox.
    Contents are base64 with the file's mode (test data may be binary, scripts executable); a ``None``
    in ``hidden`` is a file the hidden tests delete."""

    model_config = ConfigDict(extra="forbid")

    protected: dict[str, tuple[int, str]]  # protected files of the pristine tree
    hidden: dict[str, tuple[int, str] | None]  # the hidden tests' files, as applied to the pristine tree
    hidden_error: str = ""  # why the hidden tests do not apply to the pristine tree
    tree_path: list[str]  # sys.path entries inside the tree, relative to the workdir ("" is the workdir)
    modules: list[str]  # top-level modules the environment can import from outside the tree
    plugins: list[str]  # pytest plugins the environment installs by entry point
    suffixes: list[str]  # file suffixes the environment's import system loads (importlib.machinery.all_suffixes())
    extension_suffixes: list[str]  # those of native extension modules
