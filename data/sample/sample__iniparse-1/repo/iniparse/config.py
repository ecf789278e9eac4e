"""The :class:`Config` object: sections, typed getters and interpolation."""

from __future__ import annotations

import os
from typing import Any, Iterator

from . import interpolation, parser
from .errors import NoOptionError, NoSectionError

DEFAULT_SECTION = parser.DEFAULT_SECTION

_MISSING = object()

BOOLEAN_STATES = {
    "1": True, "yes": True, "true": True, "on": True,
    "0": False, "no": False, "false": False, "off": False,
}


class Config:
    """An INI configuration.

    Values in the ``DEFAULT`` section are visible from every other section. ``get`` expands
    ``${...}`` references unless ``raw=True`` is passed.
    """

    def __init__(self, strict: bool = True):
        self.strict = strict
        self._sections: dict[str, dict[str, str]] = {DEFAULT_SECTION: {}}

    # -- loading -------------------------------------------------------------------------------

    def read_string(self, text: str, source: str = "<string>") -> None:
        """Parse ``text`` and merge it into this configuration."""
        parsed = parser.parse(text, source=source, strict=self.strict)
        for name, options in parsed.items():
            self._sections.setdefault(name, {}).update(options)

    def read_file(self, path: str | os.PathLike, encoding: str = "utf-8") -> None:
        """Read and parse the file at ``path``."""
        with open(path, encoding=encoding) as fh:
            self.read_string(fh.read(), source=os.fspath(path))

    def read_dict(self, data: dict[str, dict[str, Any]]) -> None:
        """Merge a ``{section: {option: value}}`` mapping; values are converted with ``str``."""
        for name, options in data.items():
            section = self._sections.setdefault(name, {})
            for key, value in options.items():
                section[key.lower()] = str(value)

    # -- structure -----------------------------------------------------------------------------

    def sections(self) -> list[str]:
        """Section names in file order, without ``DEFAULT``."""
        return [name for name in self._sections if name != DEFAULT_SECTION]

    def has_section(self, section: str) -> bool:
        return section in self._sections and section != DEFAULT_SECTION

    def options(self, section: str) -> list[str]:
        """Option names of ``section``, including those inherited from ``DEFAULT``."""
        own = self._section(section)
        names = list(own)
        names.extend(k for k in self._sections[DEFAULT_SECTION] if k not in own)
        return names

    def has_option(self, section: str, option: str) -> bool:
        try:
            self._raw(section, option.lower())
        except (NoSectionError, NoOptionError):
            return False
        return True

    def set(self, section: str, option: str, value: Any) -> None:
        self._section(section)[option.lower()] = str(value)

    def _section(self, section: str) -> dict[str, str]:
        try:
            return self._sections[section]
        except KeyError:
            raise NoSectionError(section) from None

    def _raw(self, section: str, option: str) -> str:
        own = self._section(section)
        if option in own:
            return own[option]
        defaults = self._sections[DEFAULT_SECTION]
        if option in defaults:
            return defaults[option]
        raise NoOptionError(section, option)

    # -- getters -------------------------------------------------------------------------------

    def get(self, section: str, option: str, *, raw: bool = False, fallback: Any = _MISSING) -> Any:
        """Return the value of ``option`` in ``section`` as a string.

        ``fallback`` is returned when the option (or the section) does not exist.
        """
        option = option.lower()
        try:
            value = self._raw(section, option)
        except (NoSectionError, NoOptionError):
            if fallback is _MISSING:
                raise
            return fallback
        if raw:
            return value
        return interpolation.expand(value, section, option, self._raw)

    def _convert(self, section, option, convert, fallback, raw=False):
        try:
            value = self.get(section, option, raw=raw)
        except (NoSectionError, NoOptionError):
            if fallback is _MISSING:
                raise
            return fallback
        return convert(value)

    def getint(self, section: str, option: str, *, fallback: Any = _MISSING) -> int:
        return self._convert(section, option, int, fallback)

    def getfloat(self, section: str, option: str, *, fallback: Any = _MISSING) -> float:
        return self._convert(section, option, float, fallback)

    def getboolean(self, section: str, option: str, *, fallback: Any = _MISSING) -> bool:
        def to_bool(value: str) -> bool:
            try:
                return BOOLEAN_STATES[value.strip().lower()]
            except KeyError:
                raise ValueError(f"not a boolean: {value!r}") from None
        return self._convert(section, option, to_bool, fallback)

    def getlist(self, section: str, option: str, *, sep: str | None = ",",
                fallback: Any = _MISSING) -> list[str]:
        """Split the value on ``sep`` (``None``: on newlines, for multi-line values)."""
        def to_list(value: str) -> list[str]:
            parts = value.splitlines() if sep is None else value.split(sep)
            return [p.strip() for p in parts if p.strip()]
        return self._convert(section, option, to_list, fallback)

    # -- mapping-ish helpers -------------------------------------------------------------------

    def items(self, section: str, raw: bool = False) -> list[tuple[str, str]]:
        """``(option, value)`` pairs for ``section``, including ``DEFAULT`` options."""
        return [(name, self.get(section, name, raw=raw)) for name in self.options(section)]

    def as_dict(self, raw: bool = False) -> dict[str, dict[str, str]]:
        return {name: dict(self.items(name, raw=raw)) for name in self.sections()}

    def __iter__(self) -> Iterator[str]:
        return iter(self.sections())

    def __contains__(self, section: str) -> bool:
        return self.has_section(section)
