"""Exceptions raised by toposort."""

from __future__ import annotations

from typing import Hashable, Sequence


class GraphError(Exception):
    """Base class for every error raised by this package."""


class UnknownNodeError(GraphError, KeyError):
    """A node was looked up that was never added to the graph."""

    def __init__(self, node: Hashable) -> None:
        super().__init__(node)
        self.node = node

    def __str__(self) -> str:
        return f"unknown node: {self.node!r}"


class CycleError(GraphError):
    """The graph contains a dependency cycle, so it has no topological order.

    ``cycle`` holds one offending cycle as a list of nodes where the first and last
    element are the same node, e.g. ``['a', 'b', 'a']``.  It may be empty when the
    cycle could not be isolated.
    """

    def __init__(self, message: str, cycle: Sequence[Hashable] = ()) -> None:
        super().__init__(message)
        self.cycle = list(cycle)
