"""Test commands the harness can run inside an interpreter that has imported pytest already."""

from __future__ import annotations

import re
import shlex

_SHELL = re.compile(r"[^\w\s@%+=:,./'\"-]")  # anything but words, blanks and quotes: the shell may interpret it
_INHERITED = re.compile(r"\$PYTHONPATH(?!\w)|\$\{PYTHONPATH\}")
_ASSIGNED = re.compile(r"PYTHONPATH=((?:[\w@%+,./-]|:|\$PYTHONPATH(?!\w)|\$\{PYTHONPATH\})*)\s+")


def pytest_command(command: str, pythonpath: str) -> dict | None:
    """``{"argv": ..., "pythonpath": ..., "python": ...}`` of a plain ``python -m pytest ...`` /
    ``pytest ...`` command (what a process that imported pytest can run in a fork), which may first
    set PYTHONPATH from literal folders and the PYTHONPATH it inherits (``pythonpath``), as src-layout
    repositories' commands do (``PYTHONPATH=src:$PYTHONPATH python -m pytest``): "pythonpath" is then
    the value the shell would give it (the fork puts it on sys.path), else None. "python" is the
    interpreter's word, "" for the ``pytest`` script. None for anything else the shell would have to
    interpret, or a PYTHONPATH with an empty entry (the interpreter reads that as its work directory)."""
    assigned = None
    if found := _ASSIGNED.match(command):
        assigned = _INHERITED.sub(lambda _: pythonpath, found.group(1))
        if "" in assigned.split(":"):
            return None
        command = command[found.end() :]
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if _SHELL.search(command):
        return None
    if words[:3] in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
        return {"argv": words[3:], "pythonpath": assigned, "python": words[0]}
    return {"argv": words[1:], "pythonpath": assigned, "python": ""} if words[:1] == ["pytest"] else None
