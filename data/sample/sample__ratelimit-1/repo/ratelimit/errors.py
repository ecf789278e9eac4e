"""Exceptions raised by ratelimit."""

from __future__ import annotations


class RateLimitExceeded(Exception):
    """A request was refused; ``retry_after`` says how many seconds to wait."""

    def __init__(self, retry_after: float, key: object = None) -> None:
        self.retry_after = retry_after
        self.key = key
        where = f" for {key!r}" if key is not None else ""
        super().__init__(f"rate limit exceeded{where}; retry after {retry_after:.3f}s")
