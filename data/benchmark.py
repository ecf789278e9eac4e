"""The real-code benchmark's tasks and labels: one TOML file a library under ``data/real_libraries/``.

Each file names its library's part (``dev``: developed against; ``heldout``: never opened while
developing, run at the end) and its tasks: the upstream fix commit, the test command, the issue text we
wrote from the commit, and our label with the hand-written patches that back it (``shortcut.patch``, a
wrong fix the upstream tests pass; ``alternative.patch``, a correct fix unlike gold), committed before
any engine ran on the task. ``data/real/make_real.py`` builds each task's folder from them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REAL = Path(__file__).parent / "real"
LIBRARIES = Path(__file__).parent / "real_libraries"  # beside data/real, whose every folder is a task
Part = Literal["dev", "heldout"]
Label = Literal["too_loose", "adequate", "over_restrictive"]


@dataclass(frozen=True)
class RealTask:
    mirror: str  # owner+name, the library file's stem
    part: Part
    fix: str  # the upstream fix commit
    test_cmd: str
    issue: str
    label: Label
    patches: tuple[str, ...]
    note: str

    @property
    def name(self) -> str:
        owner, repo = self.mirror.split("+")
        return f"{owner}__{repo}-{self.fix[:7]}"

    @property
    def repo(self) -> str:
        return self.mirror.replace("+", "/")


def real_tasks(part: Part | None = None) -> list[RealTask]:
    """Every task of every library file, or those of one part, in file then file order."""
    tasks = []
    for path in sorted(LIBRARIES.glob("*.toml")):
        doc = tomllib.loads(path.read_text())
        for entry in doc["tasks"]:
            tasks.append(RealTask(mirror=path.stem, part=doc["part"], fix=entry["fix"], test_cmd=entry["test_cmd"],
                                  issue=entry["issue"], label=entry["label"], patches=tuple(entry["patches"]), note=entry["note"]))
    return [t for t in tasks if part is None or t.part == part]
