"""ratelimit: token-bucket rate limiting with an injectable clock.

>>> from ratelimit import TokenBucket
>>> bucket = TokenBucket(capacity=10, rate=5)     # bursts of 10, 5 per second sustained
>>> bucket.try_acquire()
True
"""

from ratelimit.bucket import TokenBucket
from ratelimit.clock import ManualClock, monotonic
from ratelimit.errors import RateLimitExceeded
from ratelimit.limiter import KeyedLimiter, rate_limited

__all__ = ["KeyedLimiter", "ManualClock", "RateLimitExceeded", "TokenBucket", "monotonic", "rate_limited"]

__version__ = "1.1.0"
