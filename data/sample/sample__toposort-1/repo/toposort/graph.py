"""The :class:`DependencyGraph` container.

A graph maps every node to the nodes it depends on.  Nodes can be any hashable
value.  The graph remembers the order in which nodes were first seen; the sorting
functions in :mod:`toposort.sort` use that order to break ties, so the output is
stable from run to run.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Iterator, Mapping

from toposort.errors import UnknownNodeError


class DependencyGraph:
    """A directed graph of "node depends on dependency" edges."""

    def __init__(self) -> None:
        # node -> dependencies, in the order they were declared
        self._deps: dict[Hashable, list[Hashable]] = {}
        # node -> nodes that depend on it
        self._dependents: dict[Hashable, set[Hashable]] = {}
        # node -> position in which it was first seen (tie breaker for sorting)
        self._order: dict[Hashable, int] = {}

    # ------------------------------------------------------------------ building

    @classmethod
    def from_dict(cls, mapping: Mapping[Hashable, Iterable[Hashable]]) -> "DependencyGraph":
        """Build a graph from ``{node: [dependency, ...]}``.

        Nodes are registered in the mapping's iteration order, then their
        dependencies in list order.
        """
        graph = cls()
        for node, deps in mapping.items():
            graph.add_node(node)
            for dep in deps:
                graph.add_dependency(node, dep)
        return graph

    def add_node(self, node: Hashable) -> None:
        """Register ``node`` without any dependency.  Adding a node twice is a no-op."""
        if node not in self._order:
            self._order[node] = len(self._order)
            self._deps[node] = []
            self._dependents[node] = set()

    def add_dependency(self, node: Hashable, dependency: Hashable) -> None:
        """Declare that ``node`` depends on ``dependency`` (both are added if new)."""
        self.add_node(node)
        self.add_node(dependency)
        self._deps[node].append(dependency)
        self._dependents[dependency].add(node)

    def remove_node(self, node: Hashable) -> None:
        """Remove ``node`` and every edge touching it."""
        self._require(node)
        for dep in self._deps.pop(node):
            self._dependents[dep].discard(node)
        for dependent in self._dependents.pop(node):
            self._deps[dependent] = [d for d in self._deps[dependent] if d != node]
        del self._order[node]

    # ------------------------------------------------------------------ queries

    def __contains__(self, node: object) -> bool:
        return node in self._order

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.nodes())

    def nodes(self) -> list[Hashable]:
        """All nodes, in the order they were first seen."""
        return sorted(self._order, key=self._order.__getitem__)

    def dependencies_of(self, node: Hashable) -> list[Hashable]:
        """Direct dependencies of ``node`` in declaration order."""
        self._require(node)
        return list(self._deps[node])

    def dependents_of(self, node: Hashable) -> list[Hashable]:
        """Nodes that directly depend on ``node``, in first-seen order."""
        self._require(node)
        return sorted(self._dependents[node], key=self._order.__getitem__)

    def position(self, node: Hashable) -> int:
        """The first-seen position of ``node`` (used as the sort tie breaker)."""
        self._require(node)
        return self._order[node]

    def copy(self) -> "DependencyGraph":
        """An independent copy of the graph."""
        other = DependencyGraph()
        other._deps = {n: list(d) for n, d in self._deps.items()}
        other._dependents = {n: set(d) for n, d in self._dependents.items()}
        other._order = dict(self._order)
        return other

    def _require(self, node: Hashable) -> None:
        if node not in self._order:
            raise UnknownNodeError(node)

    def __repr__(self) -> str:
        edges = sum(len(d) for d in self._deps.values())
        return f"<DependencyGraph nodes={len(self)} edges={edges}>"
