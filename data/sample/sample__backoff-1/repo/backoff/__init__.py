"""backoff: retry callables with exponential backoff and jitter.

>>> from backoff import ExponentialBackoff, retry
>>> policy = ExponentialBackoff(base=0.1, factor=2, max_delay=5, jitter="full")
>>> retry(fetch_something, policy=policy, retry_on=(ConnectionError,))   # doctest: +SKIP
"""

from backoff.errors import RetryError
from backoff.policy import ConstantBackoff, ExponentialBackoff, Jitter
from backoff.retry import retry, retrying

__all__ = ["ConstantBackoff", "ExponentialBackoff", "Jitter", "RetryError", "retry", "retrying"]

__version__ = "0.9.0"
