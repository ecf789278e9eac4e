"""Reading and modifying documents through JSON Pointers.

Documents are plain Python values as produced by :func:`json.loads`: dicts,
lists, strings, numbers, booleans and ``None``.
"""

from __future__ import annotations

from typing import Any, Iterator

from jsonptr.errors import InvalidPointerError, ResolutionError
from jsonptr.pointer import JsonPointer, PointerLike, as_pointer

_MISSING = object()
_SENTINEL = object()


def _index(token: str, size: int, ptr: JsonPointer, depth: int, allow_end: bool = False) -> int:
    """Convert an array reference token to an index (RFC 6901 section 4)."""
    if token == "-":
        if allow_end:
            return size
        raise ResolutionError(f"'-' refers to a nonexistent array element in {str(ptr)!r}", str(ptr), depth)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise ResolutionError(f"invalid array index {token!r} in {str(ptr)!r}", str(ptr), depth)
    index = int(token)
    if index >= size + (1 if allow_end else 0):
        raise ResolutionError(f"array index {index} out of range in {str(ptr)!r}", str(ptr), depth)
    return index


def _step(node: Any, token: str, ptr: JsonPointer, depth: int) -> Any:
    if isinstance(node, dict):
        try:
            return node[token]
        except KeyError:
            raise ResolutionError(f"key {token!r} not found while resolving {str(ptr)!r}", str(ptr), depth) from None
    if isinstance(node, list):
        return node[_index(token, len(node), ptr, depth)]
    raise ResolutionError(
        f"cannot descend into {type(node).__name__} at token {token!r} of {str(ptr)!r}", str(ptr), depth
    )


def resolve(doc: Any, pointer: PointerLike, default: Any = _MISSING) -> Any:
    """Return the value ``pointer`` refers to inside ``doc``.

    If the pointer does not resolve, return ``default`` when given, otherwise
    raise :class:`ResolutionError`.
    """
    ptr = as_pointer(pointer)
    node = doc
    try:
        for depth, token in enumerate(ptr.parts):
            node = _step(node, token, ptr, depth)
    except ResolutionError:
        if default is _MISSING:
            raise
        return default
    return node


def exists(doc: Any, pointer: PointerLike) -> bool:
    """True if ``pointer`` resolves inside ``doc``."""
    return resolve(doc, pointer, _SENTINEL) is not _SENTINEL


def set_value(doc: Any, pointer: PointerLike, value: Any) -> None:
    """Set the value at ``pointer``, in place.

    The parent must exist.  For an object parent the key is created or
    replaced; for an array parent the index must exist (it is replaced) or be
    ``-`` / the array length (the value is appended).  Setting the root pointer
    is not possible in place and raises :class:`InvalidPointerError`.
    """
    ptr = as_pointer(pointer)
    if ptr.is_root:
        raise InvalidPointerError("cannot set the root of a document in place")
    parent = resolve(doc, ptr.parent)
    token = ptr.last
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        index = _index(token, len(parent), ptr, len(ptr) - 1, allow_end=True)
        if index == len(parent):
            parent.append(value)
        else:
            parent[index] = value
    else:
        raise ResolutionError(f"cannot set a member of {type(parent).__name__} at {str(ptr)!r}", str(ptr), len(ptr) - 1)


def remove(doc: Any, pointer: PointerLike) -> Any:
    """Remove the value at ``pointer`` in place and return it."""
    ptr = as_pointer(pointer)
    if ptr.is_root:
        raise InvalidPointerError("cannot remove the root of a document")
    parent = resolve(doc, ptr.parent)
    token = ptr.last
    if isinstance(parent, dict):
        if token not in parent:
            raise ResolutionError(f"key {token!r} not found while removing {str(ptr)!r}", str(ptr), len(ptr) - 1)
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(_index(token, len(parent), ptr, len(ptr) - 1))
    raise ResolutionError(f"cannot remove a member of {type(parent).__name__} at {str(ptr)!r}", str(ptr), len(ptr) - 1)


def walk(doc: Any, prefix: PointerLike = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(pointer_string, value)`` for every scalar leaf of ``doc``.

    Empty containers are yielded as leaves too.  Order follows the document.
    """
    base = as_pointer(prefix)
    if isinstance(doc, dict) and doc:
        for key, value in doc.items():
            yield from walk(value, base.join(key))
    elif isinstance(doc, list) and doc:
        for i, value in enumerate(doc):
            yield from walk(value, base.join(i))
    else:
        yield str(base), doc
