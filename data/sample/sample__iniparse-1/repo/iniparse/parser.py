"""Line-oriented INI parser.

Turns INI text into ``{section: {option: value}}`` (both levels keep file order). Supported syntax:

* ``[section]`` headers; option names are case-insensitive and stored lower-cased,
* ``key = value`` and ``key: value``,
* full-line comments starting with ``#`` or ``;``, and inline comments introduced by ``" #"`` or
  ``" ;"`` (whitespace before the comment character),
* continuation lines: a line indented deeper than its option continues the previous value,
* options before the first header go to the ``DEFAULT`` section.
"""

from __future__ import annotations

import re

from .errors import ParseError

DEFAULT_SECTION = "DEFAULT"

_SECTION_RE = re.compile(r"^\[(?P<name>[^\]]+)\]\s*(?:[#;].*)?$")
_OPTION_RE = re.compile(r"^(?P<key>[^=:\s][^=:]*?)\s*[=:]\s*(?P<value>.*)$")
_INLINE_COMMENT_RE = re.compile(r"\s[#;].*$")


def _strip_inline_comment(value: str) -> str:
    return _INLINE_COMMENT_RE.sub("", value).strip()


def parse(text: str, source: str = "<string>", strict: bool = True) -> dict[str, dict[str, str]]:
    """Parse ``text`` and return the sections.

    With ``strict`` (the default) a section or an option that appears twice is an error; otherwise
    later definitions win.
    """
    sections: dict[str, dict[str, str]] = {DEFAULT_SECTION: {}}
    current = sections[DEFAULT_SECTION]
    current_name = DEFAULT_SECTION
    seen_sections: set[str] = set()
    last_key: str | None = None
    last_indent = 0

    for lineno, raw_line in enumerate(text.splitlines(), start=1):
        stripped = raw_line.strip()
        if not stripped or stripped[0] in "#;":
            # blank lines end a continuation, comment lines do not
            if not stripped:
                last_key = None
            continue
        indent = len(raw_line) - len(raw_line.lstrip())

        if last_key is not None and indent > last_indent:
            extra = _strip_inline_comment(stripped)
            current[last_key] = (current[last_key] + "\n" + extra).strip("\n")
            continue

        m = _SECTION_RE.match(stripped)
        if m:
            name = m.group("name").strip()
            if name in seen_sections and strict:
                raise ParseError(f"section {name!r} already exists", lineno, source)
            seen_sections.add(name)
            current = sections.setdefault(name, {})
            current_name = name
            last_key = None
            continue

        m = _OPTION_RE.match(stripped)
        if not m:
            raise ParseError(f"cannot parse line {stripped!r}", lineno, source)
        key = m.group("key").strip().lower()
        if key in current and strict:
            raise ParseError(f"option {key!r} in section {current_name!r} already exists",
                             lineno, source)
        current[key] = _strip_inline_comment(m.group("value"))
        last_key = key
        last_indent = indent

    return sections
