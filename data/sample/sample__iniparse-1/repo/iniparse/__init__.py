"""iniparse: a small INI reader with typed getters and ``${...}`` interpolation."""

from .config import BOOLEAN_STATES, DEFAULT_SECTION, Config
from .errors import (
    ConfigError,
    InterpolationError,
    InterpolationMissingError,
    NoOptionError,
    NoSectionError,
    ParseError,
)

__version__ = "1.1.0"


def loads(text: str, strict: bool = True) -> Config:
    """Parse INI text and return a :class:`Config`."""
    cfg = Config(strict=strict)
    cfg.read_string(text)
    return cfg


def load(path, encoding: str = "utf-8", strict: bool = True) -> Config:
    """Read the INI file at ``path`` and return a :class:`Config`."""
    cfg = Config(strict=strict)
    cfg.read_file(path, encoding=encoding)
    return cfg


__all__ = [
    "BOOLEAN_STATES",
    "Config",
    "ConfigError",
    "DEFAULT_SECTION",
    "InterpolationError",
    "InterpolationMissingError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
    "load",
    "loads",
]
