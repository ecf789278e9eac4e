"""jsonptr: RFC 6901 JSON Pointers for plain Python data.

>>> from jsonptr import resolve, set_value
>>> doc = {"a": {"b": [10, 20]}}
>>> resolve(doc, "/a/b/1")
20
>>> set_value(doc, "/a/b/-", 30)
>>> doc["a"]["b"]
[10, 20, 30]
"""

from jsonptr.errors import InvalidPointerError, PointerError, ResolutionError
from jsonptr.ops import exists, remove, resolve, set_value, walk
from jsonptr.pointer import JsonPointer, escape, unescape

__all__ = [
    "InvalidPointerError",
    "JsonPointer",
    "PointerError",
    "ResolutionError",
    "escape",
    "exists",
    "remove",
    "resolve",
    "set_value",
    "unescape",
    "walk",
]

__version__ = "1.3.0"
