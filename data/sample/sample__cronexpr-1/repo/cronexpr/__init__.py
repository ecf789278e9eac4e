"""cronexpr: parse classic five-field cron expressions and compute fire times.

>>> from datetime import datetime
>>> from cronexpr import CronExpression
>>> expr = CronExpression("30 9 * * MON-FRI")
>>> expr.next_fire(datetime(2024, 5, 3, 10, 0))   # a Friday
datetime.datetime(2024, 5, 6, 9, 30)
"""

from cronexpr.errors import CronSyntaxError
from cronexpr.fields import FIELDS, FieldSpec, parse_field
from cronexpr.schedule import MACROS, CronExpression

__all__ = ["FIELDS", "MACROS", "CronExpression", "CronSyntaxError", "FieldSpec", "parse_field"]

__version__ = "2.0.3"
