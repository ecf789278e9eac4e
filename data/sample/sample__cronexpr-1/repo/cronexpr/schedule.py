"""The :class:`CronExpression` type: matching and next-fire-time calculation."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterator, Optional

from cronexpr.errors import CronSyntaxError
from cronexpr.fields import DAY_OF_MONTH, DAY_OF_WEEK, HOUR, MINUTE, MONTH, parse_field

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# give up searching after this many years without a match (e.g. "0 0 31 2 *")
_SEARCH_YEARS = 8


class CronExpression:
    """A parsed five-field cron expression (minute hour day-of-month month day-of-week).

    Day of month and day of week follow the traditional cron rule: when both
    fields are restricted (neither starts with ``*``), a day matches if
    *either* field matches; otherwise both must match.
    """

    def __init__(self, expression: str) -> None:
        self.expression = expression
        text = MACROS.get(expression.strip().lower(), expression)
        parts = text.split()
        if len(parts) != 5:
            raise CronSyntaxError(f"expected 5 fields, got {len(parts)}: {expression!r}")
        self.minutes = parse_field(parts[0], MINUTE)
        self.hours = parse_field(parts[1], HOUR)
        self.days_of_month = parse_field(parts[2], DAY_OF_MONTH)
        self.months = parse_field(parts[3], MONTH)
        self.days_of_week = parse_field(parts[4], DAY_OF_WEEK)
        self._dom_restricted = not parts[2].startswith("*")
        self._dow_restricted = not parts[4].startswith("*")

    def __repr__(self) -> str:
        return f"CronExpression({self.expression!r})"

    # ------------------------------------------------------------------ matching

    def _day_matches(self, when: datetime) -> bool:
        dom = when.day in self.days_of_month
        dow = (when.weekday() + 1) % 7 in self.days_of_week  # cron: Sunday is 0
        if self._dom_restricted and self._dow_restricted:
            return dom or dow
        return dom and dow

    def matches(self, when: datetime) -> bool:
        """True if the expression fires at ``when`` (seconds are ignored)."""
        return (
            when.minute in self.minutes
            and when.hour in self.hours
            and when.month in self.months
            and self._day_matches(when)
        )

    # ------------------------------------------------------------------ searching

    def next_fire(self, after: datetime) -> Optional[datetime]:
        """The first fire time strictly after ``after``, or ``None`` if there is none.

        ``after`` may be naive or aware; the result has the same ``tzinfo`` and
        is computed on wall-clock time.
        """
        when = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = after.year + _SEARCH_YEARS
        while when.year <= limit:
            if when.month not in self.months:
                year, month = (when.year + 1, 1) if when.month == 12 else (when.year, when.month + 1)
                when = when.replace(year=year, month=month, day=1, hour=0, minute=0)
                continue
            if not self._day_matches(when):
                when = (when + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if when.hour not in self.hours:
                when = (when + timedelta(hours=1)).replace(minute=0)
                continue
            if when.minute not in self.minutes:
                when += timedelta(minutes=1)
                continue
            return when
        return None

    def iter_fires(self, after: datetime, count: Optional[int] = None) -> Iterator[datetime]:
        """Yield successive fire times after ``after`` (``count`` of them, or forever)."""
        produced = 0
        current = after
        while count is None or produced < count:
            nxt = self.next_fire(current)
            if nxt is None:
                return
            yield nxt
            produced += 1
            current = nxt
