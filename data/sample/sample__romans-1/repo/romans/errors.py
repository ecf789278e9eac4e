"""Exceptions raised by romans."""


class InvalidRomanNumeral(ValueError):
    """The text is not a valid (standard form) Roman numeral."""

    def __init__(self, text: object, reason: str = "") -> None:
        detail = f": {reason}" if reason else ""
        super().__init__(f"invalid Roman numeral {text!r}{detail}")
        self.text = text
