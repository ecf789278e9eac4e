"""Exceptions raised by backoff."""

from __future__ import annotations

from typing import Optional


class RetryError(Exception):
    """Every attempt failed.

    ``attempts`` is the number of calls made and ``last_exception`` the error
    raised by the final one (also available as ``__cause__``).
    """

    def __init__(self, attempts: int, last_exception: Optional[BaseException]) -> None:
        super().__init__(f"giving up after {attempts} attempt(s): {last_exception!r}")
        self.attempts = attempts
        self.last_exception = last_exception
