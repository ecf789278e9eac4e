"""Date parsing for feeds: RFC 822 (RSS) and RFC 3339 (Atom)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Optional

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_rfc3339(text: str) -> Optional[datetime]:
    """Parse ``2024-05-06T09:30:00Z`` style timestamps (fractions and offsets allowed)."""
    match = _RFC3339.match(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    micro = int(round(float(match.group(7)) * 1_000_000)) if match.group(7) else 0
    offset = match.group(8)
    if offset in ("Z", "z"):
        tz = timezone.utc
    else:
        sign = 1 if offset[0] == "+" else -1
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return datetime(year, month, day, hour, minute, second, min(micro, 999_999), tzinfo=tz)
    except ValueError:
        return None


def parse_rfc822(text: str) -> Optional[datetime]:
    """Parse ``Mon, 06 May 2024 09:30:00 GMT`` style timestamps.

    Timestamps without a zone are taken as UTC.
    """
    try:
        value = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value


def parse_date(text: Optional[str]) -> Optional[datetime]:
    """Parse either format; ``None`` if ``text`` is empty or not a date."""
    if not text or not text.strip():
        return None
    return parse_rfc3339(text) or parse_rfc822(text)
