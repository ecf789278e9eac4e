from pathlib import Path

import pytest

from feedfetch import FetchError, fetch_feed

DATA = Path(__file__).parent / "data"


def test_fetch_local_file_url():
    result = fetch_feed((DATA / "releases.atom").as_uri())
    assert result.status == 200
    assert result.feed.kind == "atom"
    assert len(result.feed.entries) == 2
    assert result.last_modified


def test_fetch_missing_file():
    with pytest.raises(FetchError):
        fetch_feed((DATA / "nope.xml").as_uri())
