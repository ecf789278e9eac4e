"""Exceptions raised by feedfetch."""


class FeedError(Exception):
    """Base class of every feedfetch error."""


class FeedParseError(FeedError):
    """The document is not well-formed XML or not an RSS/Atom feed."""


class FetchError(FeedError):
    """The feed could not be downloaded (network error or HTTP error status).

    ``status`` is the HTTP status code when there was one.
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status
