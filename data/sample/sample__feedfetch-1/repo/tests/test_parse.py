from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from feedfetch import FeedParseError, parse_date, parse_feed

DATA = Path(__file__).parent / "data"


def test_rss_channel_and_items():
    feed = parse_feed((DATA / "news.rss").read_bytes())
    assert feed.kind == "rss"
    assert feed.title == "Example News"
    assert feed.link == "https://news.example.org/"
    assert feed.updated == datetime(2024, 5, 6, 9, 30, tzinfo=timezone.utc)
    first, second = feed.entries
    assert first.title == "Release 2.0 is out"
    assert first.id == "tag:news.example.org,2024:42"
    assert first.authors == ["Jane Doe"]
    assert first.summary == "We are happy to announce <b>2.0</b>."
    assert first.published == datetime(2024, 5, 6, 7, 0, tzinfo=timezone.utc)


def test_rss_permalink_guid_is_the_link():
    feed = parse_feed((DATA / "news.rss").read_bytes())
    assert feed.entries[1].link == "https://news.example.org/2024/maintenance"


def test_atom_feed():
    feed = parse_feed((DATA / "releases.atom").read_text(encoding="utf-8").encode())
    assert feed.kind == "atom"
    assert feed.title == "Project releases"
    assert feed.description == "Tagged versions"
    assert feed.link == "https://example.org/releases"
    entry = feed.entries[0]
    assert entry.link == "https://example.org/releases/v1.4.1"
    assert entry.authors == ["Release Bot"]
    assert entry.updated == datetime(2024, 5, 6, 9, 30, 0, 250000, tzinfo=timezone.utc)
    assert feed.entries[1].summary == "<p>New features.</p>"


def test_latest():
    feed = parse_feed((DATA / "releases.atom").read_bytes())
    assert [e.title for e in feed.latest(1)] == ["v1.4.1"]


@pytest.mark.parametrize("doc", [b"<rss", b"<html><body/></html>", b"<rss version='2.0'/>"])
def test_not_a_feed(doc):
    with pytest.raises(FeedParseError):
        parse_feed(doc)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024-05-06T09:30:00Z", datetime(2024, 5, 6, 9, 30, tzinfo=timezone.utc)),
        ("2024-05-06T09:30:00-05:00", datetime(2024, 5, 6, 9, 30, tzinfo=timezone(timedelta(hours=-5)))),
        ("Mon, 06 May 2024 09:30:00 GMT", datetime(2024, 5, 6, 9, 30, tzinfo=timezone.utc)),
        ("06 May 2024 09:30:00", datetime(2024, 5, 6, 9, 30, tzinfo=timezone.utc)),
        ("", None),
        ("yesterday", None),
    ],
)
def test_parse_date(text, expected):
    assert parse_date(text) == expected
