"""intervals: time interval arithmetic on top of :mod:`datetime`."""

from .interval import Interval
from .ops import busy_at, gaps, intersect_all, merge, subtract, total_duration
from .parse import format_duration, format_interval, parse_duration, parse_interval

__version__ = "0.6.0"

__all__ = [
    "Interval",
    "busy_at",
    "format_duration",
    "format_interval",
    "gaps",
    "intersect_all",
    "merge",
    "parse_duration",
    "parse_interval",
    "subtract",
    "total_duration",
]
