import pytest

from slugkit import GERMAN, is_slug, slugify


@pytest.mark.parametrize("text,expected", [
    ("Hello, World!", "hello-world"),
    ("  --Already--slugged--  ", "already-slugged"),
    ("Crème brûlée", "creme-brulee"),
    ("Smörgåsbord", "smorgasbord"),
    ("Straße", "strasse"),
    ("Don't stop", "dont-stop"),
    ("Rock & Roll", "rock-and-roll"),
    ("100% sure", "100-percent-sure"),
])
def test_basic(text, expected):
    assert slugify(text) == expected


def test_separator_and_case():
    assert slugify("Hello World", separator="_") == "hello_world"
    assert slugify("Hello World", lowercase=False) == "Hello-World"
    assert slugify("Hello World", separator="") == "helloworld"


def test_stopwords():
    assert slugify("The Art of War", stopwords={"the", "of"}) == "art-war"
    assert slugify("The Of", stopwords={"the", "of"}) == "the-of"


def test_replacements_and_extra_transliterations():
    assert slugify("C++ tips", replacements=[("++", "pp")]) == "cpp-tips"
    assert slugify("Grüße", transliterations=GERMAN) == "gruesse"


def test_max_length_cuts():
    assert slugify("abcdefghij", max_length=4) == "abcd"
    assert slugify("hello world", max_length=50) == "hello-world"
    with pytest.raises(ValueError):
        slugify("x", max_length=0)


def test_rejects_non_str():
    with pytest.raises(TypeError):
        slugify(None)


def test_is_slug():
    assert is_slug(slugify("Some Title 2"))
    assert not is_slug("some--title")
    assert not is_slug("Some-Title")
