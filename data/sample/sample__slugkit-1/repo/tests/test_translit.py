from slugkit import GERMAN, transliterate


def test_cyrillic_and_greek():
    assert transliterate("Щука") == "Shchuka"
    assert transliterate("Αθήνα") == "Athina"


def test_nfkd_fallback():
    assert transliterate("naïve café") == "naive cafe"
    assert transliterate("ﬁ") == "fi"


def test_extra_table_wins():
    assert transliterate("Müller") == "Muller"
    assert transliterate("Müller", GERMAN) == "Mueller"


def test_unmappable_dropped():
    assert transliterate("a☃b") == "ab"
