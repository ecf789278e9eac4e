"""The one rule for file names made from data: instance ids, repo names, arm names, test ids.

Data is not a path. ``file_name`` turns any string into one safe path component, and ``under`` joins
such components to a root and checks the result stays inside it. A plain name (lower-case letters,
digits, ``.``, ``_``, ``-``; not starting with a dot; at most 100 characters) is kept as it is, so
``OUT/p1/django__django-11099`` reads as the id. Any other string becomes a readable slug plus ``~``
and 16 hex digits of its SHA-256: a plain name never contains ``~``, so no two strings share a name,
not even on a case-insensitive file system (``Foo`` and ``foo`` differ by the hash), and the slug is
cut so the name stays short. The original string always lives in the record, never only in the name.

``id_problem`` says why a string cannot be an instance id at all (a path, a control character): such
corpus rows are load errors rather than tasks, because an id is also what users type and query.

``write_whole`` writes a cache entry that other threads and processes may be writing or reading at once.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path

PLAIN = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SLUG_CHARS = 60


def file_name(value: str) -> str:
    """``value`` as a single, safe path component (see the module docstring for the rule)."""
    if PLAIN.fullmatch(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    slug = _UNSAFE.sub("_", value).lstrip(".-")[:_SLUG_CHARS]
    return f"{slug}~{digest}"


def under(root: Path, *values: str) -> Path:
    """``root / file_name(v1) / file_name(v2) ...``; ValueError when the result would leave ``root``
    (only a symlink planted inside ``root`` can make it)."""
    path = root.joinpath(*(file_name(v) for v in values))
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"{path} resolves outside {root}")
    return path


def id_problem(instance_id: str) -> str:
    """Why ``instance_id`` cannot name a task, or '' when it can."""
    if not instance_id.strip():
        return "is empty"
    if any(ord(c) < 32 or ord(c) == 127 for c in instance_id):
        return f"{instance_id!r} contains a control character"
    if "/" in instance_id or "\\" in instance_id or instance_id in (".", ".."):
        return f"{instance_id!r} is a path, not a name"
    return ""


def write_whole(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole or is absent: written under a name of this thread's own, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    part.write_text(text)
    part.replace(path)
