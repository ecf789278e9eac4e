"""Topological sorting with stable tie breaking and cycle reporting.

All functions are deterministic: when several nodes are ready at the same time,
the one that was first seen by the graph comes first.
"""

from __future__ import annotations

import heapq
from typing import Hashable, Iterable, Iterator

from toposort.errors import CycleError
from toposort.graph import DependencyGraph


def _indegrees(graph: DependencyGraph) -> dict[Hashable, int]:
    """Number of unsatisfied dependencies of each node."""
    return {node: len(graph._deps[node]) for node in graph.nodes()}


def _raise_cycle(graph: DependencyGraph, remaining: Iterable[Hashable]) -> None:
    remaining = sorted(remaining, key=graph.position)
    cycle = find_cycle(graph) or []
    shown = ", ".join(repr(n) for n in remaining)
    raise CycleError(f"dependency cycle detected among: {shown}", cycle)


def static_order(graph: DependencyGraph) -> Iterator[Hashable]:
    """Yield every node after all of its dependencies.

    Ties are broken by first-seen order.  Raises :class:`CycleError` if the
    graph has a cycle (before yielding anything).
    """
    return iter(list(_kahn(graph)))


def _kahn(graph: DependencyGraph) -> list[Hashable]:
    indegree = _indegrees(graph)
    ready = [(graph.position(n), n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out: list[Hashable] = []
    while ready:
        _, node = heapq.heappop(ready)
        out.append(node)
        for dependent in graph._dependents[node]:
            indegree[dependent] -= 1
            if indegree[dependent] == 0:
                heapq.heappush(ready, (graph.position(dependent), dependent))
    if len(out) != len(graph):
        _raise_cycle(graph, [n for n, d in indegree.items() if d > 0])
    return out


def batches(graph: DependencyGraph) -> list[list[Hashable]]:
    """Group nodes into layers that can be processed in parallel.

    Every node of layer ``k`` depends only on nodes of layers ``< k``.  Each
    layer is in first-seen order.
    """
    indegree = _indegrees(graph)
    layer = sorted((n for n, d in indegree.items() if d == 0), key=graph.position)
    result: list[list[Hashable]] = []
    seen = 0
    while layer:
        result.append(layer)
        seen += len(layer)
        following: list[Hashable] = []
        for node in layer:
            for dependent in graph._dependents[node]:
                indegree[dependent] -= 1
                if indegree[dependent] == 0:
                    following.append(dependent)
        layer = sorted(following, key=graph.position)
    if seen != len(graph):
        _raise_cycle(graph, [n for n, d in indegree.items() if d > 0])
    return result


def find_cycle(graph: DependencyGraph) -> list[Hashable] | None:
    """Return one cycle as ``[a, b, ..., a]``, or ``None`` if the graph is acyclic."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {n: WHITE for n in graph.nodes()}
    for start in graph.nodes():
        if colour[start] != WHITE:
            continue
        path: list[Hashable] = [start]
        stack = [iter(graph.dependencies_of(start))]
        colour[start] = GREY
        while stack:
            for dep in stack[-1]:
                if colour[dep] == GREY:
                    return path[path.index(dep):] + [dep]
                if colour[dep] == WHITE:
                    colour[dep] = GREY
                    path.append(dep)
                    stack.append(iter(graph.dependencies_of(dep)))
                    break
            else:
                colour[path.pop()] = BLACK
                stack.pop()
    return None


def transitive_dependencies(graph: DependencyGraph, node: Hashable) -> list[Hashable]:
    """Every node that ``node`` needs, directly or indirectly, in build order.

    ``node`` itself is not included.
    """
    needed: set[Hashable] = set()
    todo = list(graph.dependencies_of(node))
    while todo:
        dep = todo.pop()
        if dep not in needed:
            needed.add(dep)
            todo.extend(graph.dependencies_of(dep))
    sub = DependencyGraph()
    for n in graph.nodes():
        if n in needed:
            sub.add_node(n)
            for dep in graph.dependencies_of(n):
                sub.add_dependency(n, dep)
    return list(static_order(sub))
