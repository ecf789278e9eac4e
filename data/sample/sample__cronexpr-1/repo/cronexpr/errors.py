"""Exceptions raised by cronexpr."""


class CronSyntaxError(ValueError):
    """A cron expression or one of its fields is malformed.

    ``field`` names the offending field (e.g. ``"hour"``) when known.
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field
