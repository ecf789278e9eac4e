"""The parsed representation of a feed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import List, Optional


@dataclass
class Entry:
    """One item (RSS) or entry (Atom)."""

    title: str = ""
    link: str = ""
    id: str = ""
    summary: str = ""
    published: Optional[datetime] = None
    updated: Optional[datetime] = None
    authors: List[str] = field(default_factory=list)

    @property
    def date(self) -> Optional[datetime]:
        """The most relevant timestamp: ``updated``, else ``published``."""
        return self.updated or self.published


@dataclass
class Feed:
    """A whole feed. ``kind`` is ``"rss"`` or ``"atom"``."""

    kind: str
    title: str = ""
    link: str = ""
    description: str = ""
    updated: Optional[datetime] = None
    entries: List[Entry] = field(default_factory=list)

    def latest(self, n: int = 5) -> List[Entry]:
        """The ``n`` newest entries that have a date, newest first."""
        dated = [e for e in self.entries if e.date is not None]
        return sorted(dated, key=lambda e: e.date, reverse=True)[:n]
