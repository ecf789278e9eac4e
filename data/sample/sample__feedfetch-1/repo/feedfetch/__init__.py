"""feedfetch: fetch and parse RSS 2.0 and Atom 1.0 feeds with the standard library.

>>> from feedfetch import fetch_feed
>>> result = fetch_feed("https://blog.example.org/atom.xml")   # doctest: +SKIP
>>> [e.title for e in result.feed.entries]                      # doctest: +SKIP
"""

from feedfetch.dates import parse_date
from feedfetch.errors import FeedError, FeedParseError, FetchError
from feedfetch.fetch import FetchResult, fetch_feed
from feedfetch.model import Entry, Feed
from feedfetch.parse import parse_feed

__all__ = [
    "Entry",
    "Feed",
    "FeedError",
    "FeedParseError",
    "FetchError",
    "FetchResult",
    "fetch_feed",
    "parse_date",
    "parse_feed",
]

__version__ = "0.5.2"
