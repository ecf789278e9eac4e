"""Cache statistics."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class CacheStats:
    """Counters kept by :class:`ttlcache.TTLCache`.

    * ``hits`` / ``misses``: lookups that found / did not find a live entry,
    * ``evictions``: live entries dropped because the cache was full (least recently used first),
    * ``expirations``: entries dropped because their time to live was over.
    """

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    expirations: int = 0

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_ratio(self) -> float:
        """Fraction of lookups that were hits (0.0 when there were none)."""
        return self.hits / self.lookups if self.lookups else 0.0

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, 0)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
