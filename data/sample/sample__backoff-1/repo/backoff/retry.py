"""Calling a function again until it succeeds."""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, Optional, Tuple, Type, TypeVar

from backoff.errors import RetryError
from backoff.policy import ExponentialBackoff

T = TypeVar("T")
ExcTypes = Tuple[Type[BaseException], ...]


def retry(
    func: Callable[..., T],
    *args: Any,
    policy: Optional[Any] = None,
    retry_on: ExcTypes = (Exception,),
    max_attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
    **kwargs: Any,
) -> T:
    """Call ``func(*args, **kwargs)`` until it returns, at most ``max_attempts`` times.

    Only exceptions in ``retry_on`` are retried; anything else propagates at
    once.  Between attempts ``sleep(policy.delay(n))`` is called, and
    ``on_retry(n, exc, delay)`` first if given.  When all attempts fail,
    :class:`RetryError` is raised from the last exception.
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    policy = policy if policy is not None else ExponentialBackoff()
    last: Optional[BaseException] = None
    for attempt in range(max_attempts):
        try:
            return func(*args, **kwargs)
        except retry_on as exc:
            last = exc
            if attempt == max_attempts - 1:
                break
            wait = policy.delay(attempt)
            if on_retry is not None:
                on_retry(attempt, exc, wait)
            sleep(wait)
    raise RetryError(max_attempts, last) from last


def retrying(
    policy: Optional[Any] = None,
    retry_on: ExcTypes = (Exception,),
    max_attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator form of :func:`retry`."""

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            return retry(
                func,
                *args,
                policy=policy,
                retry_on=retry_on,
                max_attempts=max_attempts,
                sleep=sleep,
                on_retry=on_retry,
                **kwargs,
            )

        return wrapper

    return decorate
