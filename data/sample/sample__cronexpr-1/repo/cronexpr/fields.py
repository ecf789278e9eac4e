"""Parsing of the individual cron fields.

Each field accepts a comma separated list of items, where an item is one of

* ``*`` - every value of the field;
* ``N`` - a single value (names such as ``JAN`` or ``MON`` are accepted where
  they make sense, case-insensitively);
* ``A-B`` - an inclusive range;
* ``*/S``, ``A-B/S``, ``A/S`` - every ``S``-th value of ``*``, of the range, or
  from ``A`` to the end of the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Tuple

from cronexpr.errors import CronSyntaxError


@dataclass(frozen=True)
class FieldSpec:
    """The legal values of one cron field."""

    name: str
    minimum: int
    maximum: int
    names: Dict[str, int] = field(default_factory=dict)
    # values that are accepted and mapped to another value (7 -> 0 for Sunday)
    aliases: Dict[int, int] = field(default_factory=dict)

    @property
    def all_values(self) -> FrozenSet[int]:
        return frozenset(range(self.minimum, self.maximum + 1))


_MONTH_NAMES = {m: i for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split(), start=1)}
_DAY_NAMES = {d: i for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}

MINUTE = FieldSpec("minute", 0, 59)
HOUR = FieldSpec("hour", 0, 23)
DAY_OF_MONTH = FieldSpec("day of month", 1, 31)
MONTH = FieldSpec("month", 1, 12, _MONTH_NAMES)
DAY_OF_WEEK = FieldSpec("day of week", 0, 6, _DAY_NAMES, {7: 0})

FIELDS: Tuple[FieldSpec, ...] = (MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK)


def _value(text: str, spec: FieldSpec) -> int:
    """Parse a single number or name, without range checking aliases away."""
    upper = text.upper()
    if upper in spec.names:
        return spec.names[upper]
    if not text.isdigit():
        raise CronSyntaxError(f"invalid {spec.name} value {text!r}", spec.name)
    number = int(text)
    if number in spec.aliases:
        return number
    if not spec.minimum <= number <= spec.maximum:
        raise CronSyntaxError(
            f"{spec.name} value {number} out of range {spec.minimum}-{spec.maximum}", spec.name
        )
    return number


def _expand(item: str, spec: FieldSpec) -> set:
    body, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise CronSyntaxError(f"invalid step {step_text!r} in {spec.name} field", spec.name)
        step = int(step_text)
    if body == "*":
        if not slash:
            return set(spec.all_values)
        lo, hi = 0, spec.maximum
    elif "-" in body:
        first, _, last = body.partition("-")
        lo, hi = _value(first, spec), _value(last, spec)
        if lo > hi:
            raise CronSyntaxError(f"descending range {body!r} in {spec.name} field", spec.name)
    else:
        lo = _value(body, spec)
        hi = spec.maximum if slash else lo
    values = set()
    for v in range(lo, hi + 1, step):
        v = spec.aliases.get(v, v)
        if spec.minimum <= v <= spec.maximum:
            values.add(v)
    return values


def parse_field(text: str, spec: FieldSpec) -> FrozenSet[int]:
    """Return the set of values that field ``text`` selects."""
    if not text:
        raise CronSyntaxError(f"empty {spec.name} field", spec.name)
    values: set = set()
    for item in text.split(","):
        if not item:
            raise CronSyntaxError(f"empty item in {spec.name} field {text!r}", spec.name)
        values |= _expand(item, spec)
    return frozenset(values)
