"""Turning feed XML into :class:`~feedfetch.model.Feed` objects."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Optional, Union

from feedfetch.dates import parse_date
from feedfetch.errors import FeedParseError
from feedfetch.model import Entry, Feed

ATOM = "{http://www.w3.org/2005/Atom}"
DC = "{http://purl.org/dc/elements/1.1/}"
CONTENT = "{http://purl.org/rss/1.0/modules/content/}"


def _text(element: Optional[ET.Element]) -> str:
    if element is None:
        return ""
    return "".join(element.itertext()).strip()


def parse_feed(document: Union[bytes, str]) -> Feed:
    """Parse an RSS 2.0 or Atom 1.0 document.

    Raises :class:`FeedParseError` for malformed XML or an unknown root element.
    """
    try:
        root = ET.fromstring(document)
    except ET.ParseError as exc:
        raise FeedParseError(f"not well-formed XML: {exc}") from exc
    if root.tag == "rss":
        return _parse_rss(root)
    if root.tag == f"{ATOM}feed":
        return _parse_atom(root)
    raise FeedParseError(f"unsupported feed root element {root.tag!r}")


# --------------------------------------------------------------------------------------- RSS 2.0


def _parse_rss(root: ET.Element) -> Feed:
    channel = root.find("channel")
    if channel is None:
        raise FeedParseError("RSS document without a <channel>")
    feed = Feed(
        kind="rss",
        title=_text(channel.find("title")),
        link=_text(channel.find("link")),
        description=_text(channel.find("description")),
        updated=parse_date(_text(channel.find("lastBuildDate")) or _text(channel.find("pubDate"))),
    )
    for item in channel.findall("item"):
        guid = _text(item.find("guid"))
        link = _text(item.find("link"))
        guid_el = item.find("guid")
        if not link and guid_el is not None and guid_el.get("isPermaLink", "true") == "true":
            link = guid
        authors = [_text(a) for a in item.findall("author") + item.findall(f"{DC}creator") if _text(a)]
        feed.entries.append(
            Entry(
                title=_text(item.find("title")),
                link=link,
                id=guid or link,
                summary=_text(item.find("description")) or _text(item.find(f"{CONTENT}encoded")),
                published=parse_date(_text(item.find("pubDate")) or _text(item.find(f"{DC}date"))),
                authors=authors,
            )
        )
    return feed


# --------------------------------------------------------------------------------------- Atom 1.0


def _atom_link(element: ET.Element) -> str:
    """The ``alternate`` link (a link without ``rel`` is an alternate link)."""
    for link in element.findall(f"{ATOM}link"):
        if link.get("rel", "alternate") == "alternate":
            return link.get("href", "")
    return ""


def _parse_atom(root: ET.Element) -> Feed:
    feed = Feed(
        kind="atom",
        title=_text(root.find(f"{ATOM}title")),
        link=_atom_link(root),
        description=_text(root.find(f"{ATOM}subtitle")),
        updated=parse_date(_text(root.find(f"{ATOM}updated"))),
    )
    for entry in root.findall(f"{ATOM}entry"):
        authors = [_text(a.find(f"{ATOM}name")) for a in entry.findall(f"{ATOM}author")]
        feed.entries.append(
            Entry(
                title=_text(entry.find(f"{ATOM}title")),
                link=_atom_link(entry),
                id=_text(entry.find(f"{ATOM}id")),
                summary=_text(entry.find(f"{ATOM}summary")) or _text(entry.find(f"{ATOM}content")),
                published=parse_date(_text(entry.find(f"{ATOM}published"))),
                updated=parse_date(_text(entry.find(f"{ATOM}updated"))),
                authors=[a for a in authors if a],
            )
        )
    return feed
