from querybuild import merge_url, query_params, remove_params


def test_merge_into_url_without_query():
    assert merge_url("https://example.com/items", {"page": 2}) == "https://example.com/items?page=2"


def test_merge_keeps_existing_params_and_fragment():
    url = "https://example.com/items?sort=price#results"
    assert merge_url(url, {"page": 2}) == "https://example.com/items?sort=price&page=2#results"


def test_merge_reencodes_existing_values():
    url = "https://example.com/s?q=red+shoes&x=a%2Fb"
    assert merge_url(url, {"page": 1}) == "https://example.com/s?q=red%20shoes&x=a%2Fb&page=1"
    assert merge_url(url, {"page": 1}, space_as_plus=True) == "https://example.com/s?q=red+shoes&x=a%2Fb&page=1"


def test_merge_sorted():
    assert merge_url("https://e.org/?z=1", {"a": 2}, sort=True) == "https://e.org/?a=2&z=1"


def test_remove_params():
    url = "https://e.org/p?a=1&b=2&a=3&c=#frag"
    assert remove_params(url, "a") == "https://e.org/p?b=2&c=#frag"
    assert remove_params(url, "a", "b", "c") == "https://e.org/p#frag"


def test_query_params():
    assert query_params("https://e.org/?a=1&b=&a=2") == [("a", "1"), ("b", ""), ("a", "2")]
