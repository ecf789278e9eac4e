"""ISO 8601 interval parsing and formatting.

Supports ``<start>/<end>``, ``<start>/<duration>`` and ``<duration>/<end>``, where durations use
the ``PnDTnHnMnS`` / ``PnW`` subset (no years or months, whose length is not fixed).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from .interval import Interval

__all__ = ["parse_duration", "format_duration", "parse_interval", "format_interval"]

_DURATION_RE = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str) -> timedelta:
    """Parse an ISO 8601 duration such as ``PT1H30M`` or ``P2DT12H``."""
    m = _DURATION_RE.match(text.strip().upper())
    if not m or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        raise ValueError(f"invalid ISO 8601 duration: {text!r}")
    parts = {k: float(v) for k, v in m.groupdict().items() if v is not None}
    return timedelta(**parts)


def format_duration(delta: timedelta) -> str:
    """Format a non-negative timedelta as an ISO 8601 duration (``PT0S`` for zero)."""
    if delta < timedelta(0):
        raise ValueError("negative durations cannot be formatted")
    total = delta.total_seconds()
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    out = "P"
    if days:
        out += f"{int(days)}D"
    time = ""
    if hours:
        time += f"{int(hours)}H"
    if minutes:
        time += f"{int(minutes)}M"
    if seconds:
        time += f"{seconds:g}S"
    if time:
        out += "T" + time
    return out if out != "P" else "PT0S"


def parse_interval(text: str) -> Interval:
    """Parse ``start/end``, ``start/duration`` or ``duration/end``."""
    try:
        left, right = text.strip().split("/")
    except ValueError:
        raise ValueError(f"invalid ISO 8601 interval: {text!r}") from None
    if left.upper().startswith("P"):
        end = datetime.fromisoformat(right)
        return Interval(end - parse_duration(left), end)
    start = datetime.fromisoformat(left)
    if right.upper().startswith("P"):
        return Interval(start, start + parse_duration(right))
    return Interval(start, datetime.fromisoformat(right))


def format_interval(interval: Interval) -> str:
    """Format as ``start/end`` with ISO 8601 timestamps."""
    return f"{interval.start.isoformat()}/{interval.end.isoformat()}"
