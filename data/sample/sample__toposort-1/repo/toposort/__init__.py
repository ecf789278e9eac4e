"""toposort: dependency graphs with deterministic topological ordering.

Typical use::

    from toposort import DependencyGraph, static_order

    graph = DependencyGraph()
    graph.add_dependency("app", "lib")
    graph.add_dependency("lib", "runtime")
    list(static_order(graph))   # ['runtime', 'lib', 'app']
"""

from toposort.errors import CycleError, GraphError, UnknownNodeError
from toposort.graph import DependencyGraph
from toposort.sort import batches, find_cycle, static_order, transitive_dependencies

__all__ = [
    "CycleError",
    "DependencyGraph",
    "GraphError",
    "UnknownNodeError",
    "batches",
    "find_cycle",
    "static_order",
    "transitive_dependencies",
]

__version__ = "0.6.2"
