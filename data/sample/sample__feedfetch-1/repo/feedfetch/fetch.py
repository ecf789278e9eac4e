"""Downloading feeds over HTTP(S) with conditional requests."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Optional

from feedfetch.errors import FetchError
from feedfetch.model import Feed
from feedfetch.parse import parse_feed

USER_AGENT = "feedfetch/0.5 (+https://github.com/swedeck-samples/feedfetch)"
ACCEPT = "application/atom+xml, application/rss+xml;q=0.9, application/xml;q=0.8, text/xml;q=0.7, */*;q=0.1"


@dataclass
class FetchResult:
    """What :func:`fetch_feed` returns.

    ``feed`` is ``None`` when the server answered 304 Not Modified.  Keep
    ``etag`` and ``last_modified`` and pass them to the next call.
    """

    url: str
    status: int
    feed: Optional[Feed]
    etag: Optional[str] = None
    last_modified: Optional[str] = None


def _request(url: str, etag: Optional[str], modified: Optional[str]) -> urllib.request.Request:
    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT, "Accept-Encoding": "gzip"}
    if etag:
        headers["If-None-Match"] = etag
    if modified:
        headers["If-Modified-Since"] = modified
    return urllib.request.Request(url, headers=headers)


def fetch_feed(
    url: str,
    timeout: float = 15.0,
    etag: Optional[str] = None,
    modified: Optional[str] = None,
) -> FetchResult:
    """Download and parse the feed at ``url`` (``http``, ``https`` or ``file``).

    Redirects are followed; ``FetchResult.url`` is the final URL.  Raises
    :class:`FetchError` for network failures and HTTP errors, and
    :class:`~feedfetch.errors.FeedParseError` if the body is not a feed.
    """
    request = _request(url, etag, modified)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return FetchResult(url=url, status=304, feed=None, etag=etag, last_modified=modified)
        raise FetchError(f"HTTP {exc.code} fetching {url}", exc.code) from exc
    except urllib.error.URLError as exc:
        raise FetchError(f"cannot fetch {url}: {exc.reason}") from exc
    with response:
        body = response.read()
        headers = response.headers
        status = getattr(response, "status", None) or 200
        final_url = response.geturl()
    return FetchResult(
        url=final_url,
        status=status,
        feed=parse_feed(body),
        etag=headers.get("ETag"),
        last_modified=headers.get("Last-Modified"),
    )
