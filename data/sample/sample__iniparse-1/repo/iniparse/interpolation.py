"""``${...}`` value interpolation.

* ``${option}`` refers to an option of the same section (or of ``DEFAULT``),
* ``${section:option}`` refers to an option of another section,
* ``$$`` is a literal ``$``.

Referenced values may themselves contain references.
"""

from __future__ import annotations

import re
from typing import Callable

from .errors import InterpolationMissingError, NoOptionError, NoSectionError

_REFERENCE_RE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<ref>[^}]*)\})")

Lookup = Callable[[str, str], str]


def _split_reference(ref: str, section: str) -> tuple[str, str]:
    if ":" in ref:
        sec, _, opt = ref.partition(":")
        return sec.strip(), opt.strip().lower()
    return section, ref.strip().lower()


def expand(value: str, section: str, option: str, lookup: Lookup) -> str:
    """Expand the references in ``value``, which is the raw value of ``option`` in ``section``.

    ``lookup(section, option)`` must return the *raw* value of an option, raising
    :class:`NoSectionError` / :class:`NoOptionError` when it does not exist.
    """
    if "$" not in value:
        return value

    def replace(match: re.Match) -> str:
        if match.group("dollar"):
            return "$"
        ref = match.group("ref")
        target_section, target_option = _split_reference(ref, section)
        try:
            return lookup(target_section, target_option)
        except (NoSectionError, NoOptionError):
            raise InterpolationMissingError(section, option, ref) from None

    return _REFERENCE_RE.sub(replace, value)
