"""Assertion sites: the static assertion sites of a Python file, found with tree-sitter, and the source normalisation the plugin shares."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import Literal

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor

# assert: an assert statement; unittest: self.assert*/self.fail*; raises: pytest.raises; call: any other
# assert*(...) call, known only from a failure event (a library assertion helper such as numpy's)
SiteKind = Literal["assert", "unittest", "raises", "call"]
MODULE_QUALNAME = "<module>"


@dataclass(frozen=True)
class Site:
    file: str  # path relative to the repository root, "/"-separated
    line: int  # 1-based first line
    end_line: int
    qualname: str  # enclosing function as Python spells __qualname__ ("C.test_x", "f.<locals>.g"), or "<module>"
    kind: SiteKind
    source: str  # whitespace-normalised source text of the statement or call
    source_hash: str
    occurrence: int  # earlier sites of the same function with the same source hash


def normalise(text: str) -> str:
    """Whitespace-normalised source: line continuations and line breaks just inside brackets dropped,
    every other run of whitespace made one space. The plugin and ``curation.assertion_sites`` must agree."""
    text = re.sub(r"\\\r?\n", " ", text)
    text = re.sub(r"([(\[{])[ \t]*\r?\n\s*", r"\1", text)
    text = re.sub(r"\s*\n[ \t]*([)\]}])", r"\1", text)
    return " ".join(text.split())


def source_hash(source: str) -> str:
    return hashlib.sha1(source.encode("utf-8")).hexdigest()[:12]


_QUERY_TEXT = """
(assert_statement) @assert
(call function: (attribute object: (identifier) @object attribute: (identifier) @method)) @call
(call function: (identifier) @name) @bare
"""


@cache
def _language() -> Language:
    return Language(tree_sitter_python.language())


@cache
def _query() -> Query:
    return Query(_language(), _QUERY_TEXT)


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


def _call_kind(obj: str, method: str) -> SiteKind | None:
    if obj == "self" and method.startswith(("assert", "fail")):
        return "unittest"
    if obj == "pytest" and method == "raises":
        return "raises"
    return None


def _qualname(node: Node) -> str:
    """The ``__qualname__`` of the function enclosing ``node`` (``<module>`` at module level)."""
    parts: list[tuple[str, str]] = []
    parent = node.parent
    while parent is not None:
        if parent.type in ("function_definition", "class_definition"):
            parts.append((parent.type, _text(parent.child_by_field_name("name"))))
        parent = parent.parent
    if not any(kind == "function_definition" for kind, _ in parts):
        return MODULE_QUALNAME
    while parts and parts[0][0] == "class_definition":  # a class inside the innermost function
        parts.pop(0)
    names: list[str] = []
    for kind, name in reversed(parts):
        names.append(name)
        if kind == "function_definition":
            names.append("<locals>")
    return ".".join(names[:-1])


def assertion_sites(source: str, path: str) -> list[Site]:
    """Every assertion site of one Python file, in source order.

    ``path`` is stored as the site's file (pass it relative to the repository root). A file that does
    not parse still yields the sites tree-sitter recovers around the error."""
    tree = Parser(_language()).parse(source.encode("utf-8"))
    found: dict[int, tuple[Node, SiteKind]] = {}
    for _, captures in QueryCursor(_query()).matches(tree.root_node):
        if "assert" in captures:
            node = captures["assert"][0]
            found[node.start_byte] = (node, "assert")
            continue
        if "bare" in captures:  # ``from pytest import raises``
            node = captures["bare"][0]
            if _text(captures["name"][0]) == "raises":
                found.setdefault(node.start_byte, (node, "raises"))
            continue
        kind = _call_kind(_text(captures["object"][0]), _text(captures["method"][0]))
        if kind is not None:
            node = captures["call"][0]
            found.setdefault(node.start_byte, (node, kind))
    seen: Counter[tuple[str, str]] = Counter()
    sites = []
    for _, (node, kind) in sorted(found.items()):
        text = normalise(_text(node))
        digest = source_hash(text)
        qualname = _qualname(node)
        sites.append(
            Site(
                file=path,
                line=node.start_point[0] + 1,
                end_line=node.end_point[0] + 1,
                qualname=qualname,
                kind=kind,
                source=text,
                source_hash=digest,
                occurrence=seen[(qualname, digest)],
            )
        )
        seen[(qualname, digest)] += 1
    return sites
