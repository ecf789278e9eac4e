"""swedeck_assertions' state and event log: the JSON lines it writes, and paths relative to the rootdir.

PYTEST_DONT_REWRITE (pytest rewrites the modules a ``python_files`` pattern matches unless their docstring says this)
"""

from __future__ import annotations

import json
import os
import re
import threading

ENV_VAR = "SWEDECK_ASSERT_LOG"

# Frames of this module are hidden from unittest's and pytest's failure reports.
__unittest = True

# the plugin's own files (this module and the plugin's others, side by side): their frames are never a test's
_PLUGIN_FILES = {
    os.path.normcase(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"))
    for name in ("swedeck_assertions", "swedeck_assertions_log", "swedeck_assertions_sites", "swedeck_assertions_wrappers")
}
_RECORDED_TAG = "_swedeck_assert_recorded"


class _State:
    def __init__(self) -> None:
        self.path = os.environ.get(ENV_VAR) or ""
        self.fd: int | None = None
        self.rootdir = os.path.normcase(os.path.abspath(os.getcwd()))
        self.real_rootdir = os.path.normcase(os.path.realpath(self.rootdir))
        self.nodeid = ""
        self.lock = threading.Lock()
        self.index: dict[str, list[tuple[int, int, str, str, str]]] = {}
        self.seen: set[tuple[str, str, int, str, str]] = set()
        self.pass_sites: dict[tuple[str, int, str], tuple[str, str]] = {}
        self.repeats: dict[tuple[str, str, int, str, str], int] = {}


_STATE = _State()


def _write(nodeid: str, file: str, line: int, source: str, outcome: str) -> None:
    """The first event of a (test, site, outcome) is written at once, so a run that dies keeps every
    outcome it reached; repeats (asserts in loops) are only counted, and written when the test ends."""
    if not _STATE.path:
        return
    key = (nodeid, file, line, source, outcome)
    with _STATE.lock:
        if key in _STATE.seen:
            _STATE.repeats[key] = _STATE.repeats.get(key, 0) + 1
            return
        _STATE.seen.add(key)
    _emit(key, 1)


def _emit(key: tuple[str, str, int, str, str], count: int) -> None:
    nodeid, file, line, source, outcome = key
    try:
        row = {"nodeid": nodeid, "file": file, "line": line, "source": source, "outcome": outcome}
        if count != 1:
            row["count"] = count
        data = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        with _STATE.lock:
            _open_log()
            os.write(_STATE.fd, data)
    except Exception:
        pass


ANNOUNCE = b'{"plugin": "swedeck_assertions"}\n'


def _open_log() -> None:
    """Open the event log once (callers hold the lock)."""
    if _STATE.fd is None:
        _STATE.fd = os.open(_STATE.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _flush_repeats() -> None:
    with _STATE.lock:
        repeats, _STATE.repeats = _STATE.repeats, {}
    for key, count in repeats.items():
        _emit(key, count)


def _under_root(filename: str) -> str | None:
    """``filename`` relative to the rootdir (with ``/``), or None when it lies outside."""
    path = os.path.normcase(os.path.abspath(filename))
    for root, candidate in ((_STATE.rootdir, path), (_STATE.real_rootdir, None)):
        if candidate is None:
            candidate = os.path.normcase(os.path.realpath(filename))
        if candidate.startswith(root + os.sep):
            return candidate[len(root) + 1 :].replace(os.sep, "/")
    return None


def _relpath(filename: str) -> str:
    inside = _under_root(filename)
    if inside is not None:
        return inside
    return os.path.abspath(filename).replace(os.sep, "/")


def _in_rootdir(filename: str) -> bool:
    return _under_root(filename) is not None


def normalise(text: str) -> str:
    """Whitespace-normalised source: line continuations and line breaks just inside brackets dropped,
    every other run of whitespace made one space. The plugin and ``curation.assertions`` must agree."""
    text = re.sub(r"\\\r?\n", " ", text)
    text = re.sub(r"([(\[{])[ \t]*\r?\n\s*", r"\1", text)
    text = re.sub(r"\s*\n[ \t]*([)\]}])", r"\1", text)
    return " ".join(text.split())


def _tagged(exc: BaseException) -> bool:
    return bool(getattr(exc, _RECORDED_TAG, False))


def _tag(exc: BaseException) -> None:
    try:
        setattr(exc, _RECORDED_TAG, True)
    except Exception:
        pass
