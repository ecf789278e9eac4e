"""What of a change is code, read as the interpreter reads it, for the tamper audit.

A Python file is decoded as Python decodes it (its BOM and PEP 263 coding cookie, through
``tokenize.detect_encoding``: a file declaring ``utf-7`` is audited as UTF-7, where a "comment" can
hold a line of code) and numbered as the AST numbers it: lines end only at ``\\n``, ``\\r\\n`` and
``\\r``, never at a form feed, ``\\x1c``-``\\x1e``, ``\\x85`` or ``\\u2028`` as ``str.splitlines`` has
it. Which of those lines the change added is read from the patch by the same rule (a patch's lines
end at ``\\n`` alone; an added line holding a lone ``\\r`` is several lines of Python, all new). In a
file whose encoding is not UTF-8 a patch's text says nothing about the decoded lines, so all of them
count as new.

Any other file the change adds or edits is code when Python could run it: an archive (zip, egg,
wheel: whatever its name, zipimport reads it on ``sys.path``), whose Python members are audited and
whose bytecode or native members are findings; a pickle that imports and calls (its reduce calls
whatever it names, ``exec`` included); any text that parses as Python (a ``.txt`` run with ``runpy``
or ``exec(open(...).read())``), audited as Python. Data (JSON parses as Python too) has nothing for
the audit to find.
"""

from __future__ import annotations

import io
import pickletools
import re
import tokenize
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

UTF8 = ("utf-8", "utf-8-sig")
_PY_BREAK = re.compile(r"\r\n|\r|\n")
_GIT_TARGET = re.compile(r"^(?:rename|copy) to (.+)$", re.MULTILINE)
MAX_MEMBERS = 1000  # of an archive; past it the archive itself is the finding
_CODE_MEMBERS = (".py", ".pyw")
_LOADED_MEMBERS = (".pyc", ".pyo", ".so", ".pyd", ".pth", ".zip", ".egg", ".whl")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")  # what find_class can import: GLOBAL's and INST's "module name"
_PICKLE_IMPORTS = {"GLOBAL", "STACK_GLOBAL", "INST", "EXT1", "EXT2", "EXT4"}
_PICKLE_CALLS = {"REDUCE", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "BUILD"}


@dataclass(frozen=True)
class Source:
    """A file's text as Python reads it; ``error`` says why Python could not (then ``text`` is "")."""

    text: str
    encoding: str
    error: str = ""

    @property
    def lines(self) -> list[str]:
        """The lines as the AST numbers them (``lines[n - 1]`` is line ``n``)."""
        return _PY_BREAK.split(self.text)


def decode(blob: bytes) -> Source:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(blob).readline)
    except SyntaxError as err:  # an unknown codec, a cookie that contradicts the BOM
        return Source("", "", f"its encoding declaration is refused: {err}")
    try:
        return Source(blob.decode(encoding), encoding)
    except (UnicodeDecodeError, LookupError) as err:
        return Source("", encoding, f"it does not decode as its declared {encoding}: {err}")


def new_lines(blob: bytes, source: Source, added: set[str] | None) -> set[int]:
    """The AST's line numbers of the lines the change added: those whose text is one of the patch's
    added lines for the file (``added``; None where the patch does not show the file: all of them)."""
    count = len(source.lines)
    if added is None or source.encoding not in UTF8:
        return set(range(1, count + 1))
    new, line = set(), 1
    for raw in blob.split(b"\n"):
        text = raw.decode("utf-8", "replace")
        spans = 1 + text.count("\r") - text.endswith("\r")  # a lone \r ends a line of Python too
        if text.strip() in added:
            new.update(range(line, line + spans))
        line += spans
    return {n for n in new if n <= count}


def added_lines(patch: str) -> dict[str, set[str]]:
    """Per file the patch writes (its path after the change, without git's ``b/``), the stripped text
    of every line it adds; lines end at ``\\n`` alone, as patch tools have them."""
    added: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in patch_lines(patch):
        if line.startswith("+++ "):
            target = line[4:].split("\t")[0].strip()
            current = None if target == "/dev/null" else added.setdefault(target[2:] if target.startswith("b/") else target, set())
        elif line.startswith("+") and current is not None:
            current.add(line[1:].strip())
    return added


def python_paths(paths: Iterable[str]) -> list[str]:
    """The changed files that are Python source by their name."""
    return sorted(p for p in paths if is_python(p))


def is_python(path: str) -> bool:
    return PurePosixPath(path).suffix in (".py", ".pyw")


def named_paths(patch: str) -> set[str]:
    """The paths a patch says it writes: its ``+++`` targets and git's rename and copy targets. Only
    a guess at what the audit will read (a quoted name, a strategy that strips differently), which
    lets the grader read those files in the same command that applies the patch."""
    named = set(added_lines(patch))
    named |= {m.group(1) for m in _GIT_TARGET.finditer(patch)}
    return named


def patch_lines(patch: str) -> list[str]:
    """A patch's lines as patch tools split them: at ``\\n`` alone."""
    return patch.split("\n")


def members(blob: bytes, limit: int) -> tuple[dict[str, bytes], list[str]] | None:
    """An archive's Python members and what else in it Python would load (None: not an archive);
    at most ``limit`` bytes of members are read, past it the archive is too large to audit."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError):
        return None
    if len(infos) > MAX_MEMBERS:
        return {}, [f"holds {len(infos)} members, over {MAX_MEMBERS}"]
    code, loaded, left = {}, [], limit
    for info in infos:
        name = info.filename
        if name.endswith(_LOADED_MEMBERS):
            loaded.append(f"{name}: Python would load it from the archive")
        elif name.endswith(_CODE_MEMBERS):
            try:
                with archive.open(info) as member:
                    data = member.read(left + 1)
            except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError, RuntimeError) as err:
                loaded.append(f"{name}: unreadable ({err})")
                continue
            if len(data) > left:
                return code, [*loaded, f"its members hold over {limit} bytes"]
            left -= len(data)
            code[name] = data
    return code, loaded


def pickle_calls(blob: bytes) -> list[str]:
    """What a pickle imports, when it also calls something (empty: not a pickle, or one of plain
    data), read opcode by opcode, never loaded. Loading runs each opcode as it comes, up to the first
    bad one or STOP, and trailing bytes are never read: so is this."""
    imports, calls = [], False
    try:
        for opcode, arg, _ in pickletools.genops(blob):
            if opcode.name in _PICKLE_IMPORTS and (not isinstance(arg, str) or all(map(_DOTTED.fullmatch, arg.split(" ", 1)))):
                imports.append(f"{opcode.name} {arg}" if arg is not None else opcode.name)
            calls = calls or opcode.name in _PICKLE_CALLS
    except Exception:  # noqa: BLE001 - where genops stops, so does a load
        pass
    return imports if calls else []
