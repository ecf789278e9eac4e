"""Assertion helpers shared by the test modules."""

from jsonptr import JsonPointer, exists, resolve


def assert_resolves(doc, pointer, expected):
    """``pointer`` (a string) parses, formats back unchanged and resolves to ``expected``."""
    ptr = JsonPointer.parse(pointer)
    assert str(ptr) == pointer
    assert resolve(doc, pointer) == expected
    assert exists(doc, ptr)


def assert_missing(doc, pointer):
    """``pointer`` is well formed but does not resolve inside ``doc``."""
    assert not exists(doc, pointer)
    assert resolve(doc, pointer, default=None) is None
