"""slugkit: slugify text into URL-friendly identifiers, with transliteration."""

from .slugify import DEFAULT_SEPARATOR, is_slug, slugify
from .translit import GERMAN, TRANSLITERATIONS, transliterate
from .unique import UniqueSlugger

__version__ = "3.0.1"

__all__ = [
    "DEFAULT_SEPARATOR",
    "GERMAN",
    "TRANSLITERATIONS",
    "UniqueSlugger",
    "is_slug",
    "slugify",
    "transliterate",
]
