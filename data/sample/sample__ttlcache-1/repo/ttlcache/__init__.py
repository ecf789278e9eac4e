"""ttlcache: an LRU cache with time-to-live expiry, and a memoizing decorator."""

from .cache import TTLCache
from .decorators import cached, make_key
from .stats import CacheStats

__version__ = "1.2.0"

__all__ = ["CacheStats", "TTLCache", "cached", "make_key"]
