"""The audit's bash reader: a command line split into simple commands with their words and redirections.

Bash commands are split with a small quote-aware scanner in the manner of ``shlex`` (posix
quoting and escapes), which, unlike ``shlex.split``, keeps operators apart from quoted text: it splits
on unquoted ``;``, ``&&``, ``||``, ``|``, ``&``, newlines, parentheses and backticks, and takes ``>``/``<``
redirections out of the word list. Heredoc bodies are cut out first. ``bash -c``/``sh -c``/``eval``
strings are parsed recursively; ``sudo``, ``env``, ``timeout``, ``nohup``, ``xargs`` ... prefixes and
``VAR=value`` assignments are skipped.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field


@dataclass
class Segment:
    text: str
    words: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)  # > and >> targets
    reads: list[str] = field(default_factory=list)  # < sources
    stdin: list[str] = field(default_factory=list)  # heredoc bodies and here-strings


_HEREDOC_RE = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2")


def _strip_heredocs(cmd: str) -> tuple[str, list[str]]:
    """Cut heredoc bodies out of ``cmd``; return the command and the bodies in marker order."""
    bodies: list[str] = []
    out: list[str] = []
    pos = 0
    pending: list[tuple[str, bool]] = []
    i = 0
    while i < len(cmd):
        m = _HEREDOC_RE.match(cmd, i) if cmd.startswith("<<", i) and not cmd.startswith("<<<", i) else None
        if m:
            pending.append((m.group(3), m.group(1) == "-"))
            i = m.end()
            continue
        if cmd[i] == "\n" and pending:
            out.append(cmd[pos:i + 1])
            j = i + 1
            for delim, strip_tabs in pending:
                lines: list[str] = []
                while j < len(cmd):
                    end = cmd.find("\n", j)
                    end = len(cmd) if end == -1 else end
                    line = cmd[j:end]
                    j = end + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delim:
                        break
                    lines.append(line)
                bodies.append("\n".join(lines))
            pending = []
            pos = i = min(j, len(cmd))
            continue
        i += 1
    out.append(cmd[pos:])
    bodies.extend("" for _ in pending)
    return "".join(out), bodies


def _scan(cmd: str, bodies: list[str]) -> list[Segment]:
    """Split a heredoc-free command into simple-command segments (see the module docstring)."""
    segments: list[Segment] = []
    seg = Segment("")
    start = 0
    word: str | None = None
    redirect: str | None = None  # ">", "<", "dup", "heredoc", "herestring"
    n = len(cmd)

    def end_word() -> None:
        nonlocal word, redirect
        if word is None:
            return
        if redirect == ">":
            seg.writes.append(word)
        elif redirect == "<":
            seg.reads.append(word)
        elif redirect == "heredoc":
            seg.stdin.append(bodies.pop(0) if bodies else "")
        elif redirect == "herestring":
            seg.stdin.append(word)
        elif redirect is None:
            seg.words.append(word)
        word, redirect = None, None

    def end_seg(at: int) -> None:
        nonlocal seg, start
        end_word()
        seg.text = cmd[start:at].strip()
        if seg.words or seg.writes or seg.reads:
            segments.append(seg)
        seg = Segment("")
        start = at + 1

    i = 0
    while i < n:
        c = cmd[i]
        if c == "\\" and i + 1 < n:
            if cmd[i + 1] != "\n":
                word = (word or "") + cmd[i + 1]
            i += 2
        elif c == "'":
            j = cmd.find("'", i + 1)
            j = n if j == -1 else j
            word = (word or "") + cmd[i + 1:j]
            i = j + 1
        elif c == '"':
            j, buf = i + 1, []
            while j < n and cmd[j] != '"':
                if cmd[j] == "\\" and j + 1 < n and cmd[j + 1] in '"\\$`\n':
                    buf.append(cmd[j + 1])
                    j += 2
                else:
                    buf.append(cmd[j])
                    j += 1
            word = (word or "") + "".join(buf)
            i = j + 1
        elif c in " \t\r":
            end_word()
            i += 1
        elif c == "#" and word is None:
            nl = cmd.find("\n", i)
            i = n if nl == -1 else nl
        elif c == ">" or (c == "&" and cmd.startswith("&>", i)):
            if word is not None and word.isdigit():
                word = None  # a file-descriptor number, as in 2>
            end_word()
            i += 2 if c == "&" else 1
            if i < n and cmd[i] == ">":
                i += 1
            if i < n and cmd[i] in "&|":
                redirect = "dup" if cmd[i] == "&" else ">"
                i += 1
            else:
                redirect = ">"
        elif c == "<":
            end_word()
            if cmd.startswith("<<<", i):
                redirect, i = "herestring", i + 3
            elif cmd.startswith("<<", i):
                redirect, i = "heredoc", i + (3 if cmd.startswith("<<-", i) else 2)
            elif cmd.startswith("<(", i):
                end_seg(i)
                i += 2
                start = i
            else:
                redirect, i = "<", i + 1
        elif c in ";|&\n()`":
            if c == "(" and word is not None and word.endswith("$"):
                word = word[:-1] or None
            end_seg(i)
            i += 1
        else:
            word = (word or "") + c
            i += 1
    end_seg(n)
    return segments


_PREFIXES = {"sudo", "env", "nohup", "time", "exec", "command", "builtin", "nice", "stdbuf", "xargs", "timeout", "then", "do", "else", "!", "{"}
_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = {"bash", "sh", "zsh", "dash"}


def parse(cmd: str, depth: int = 0) -> list[Segment]:
    """Every simple command in ``cmd`` with prefixes removed; ``sh -c`` strings are parsed as well."""
    text, bodies = _strip_heredocs(cmd)
    result: list[Segment] = []
    for seg in _scan(text, bodies):
        words = list(seg.words)
        while words:
            head = posixpath.basename(words[0])
            if _ASSIGN_RE.match(words[0]):
                words.pop(0)
            elif head in _PREFIXES:
                words.pop(0)
                while words and (words[0].startswith("-") or _ASSIGN_RE.match(words[0])):
                    words.pop(0)
                if head == "timeout" and words and re.fullmatch(r"[\d.]+[smhd]?", words[0]):
                    words.pop(0)
            else:
                break
        seg.words = words
        result.append(seg)
        if not words or depth > 3:
            continue
        head = posixpath.basename(words[0])
        if head in _SHELLS:
            for k, w in enumerate(words[1:], 1):
                if w.startswith("-") and "c" in w[1:] and k + 1 < len(words):
                    result.extend(parse(words[k + 1], depth + 1))
                    break
            for body in seg.stdin:
                result.extend(parse(body, depth + 1))
        elif head == "eval":
            result.extend(parse(" ".join(words[1:]), depth + 1))
    return result
