import pytest

from toposort import DependencyGraph, UnknownNodeError


def test_nodes_keep_first_seen_order():
    g = DependencyGraph()
    g.add_dependency("b", "c")
    g.add_node("a")
    g.add_dependency("a", "b")
    assert g.nodes() == ["b", "c", "a"]
    assert len(g) == 3
    assert "c" in g


def test_dependencies_and_dependents():
    g = DependencyGraph.from_dict({"app": ["lib", "log"], "lib": ["log"]})
    assert g.dependencies_of("app") == ["lib", "log"]
    assert g.dependents_of("log") == ["app", "lib"]
    assert g.dependencies_of("log") == []


def test_unknown_node():
    g = DependencyGraph()
    with pytest.raises(UnknownNodeError) as info:
        g.dependencies_of("nope")
    assert "nope" in str(info.value)


def test_remove_node_drops_edges():
    g = DependencyGraph.from_dict({"app": ["lib", "log"], "lib": ["log"]})
    g.remove_node("lib")
    assert g.nodes() == ["app", "log"]
    assert g.dependencies_of("app") == ["log"]
    assert g.dependents_of("log") == ["app"]


def test_copy_is_independent():
    g = DependencyGraph.from_dict({"a": ["b"]})
    h = g.copy()
    h.add_dependency("b", "c")
    assert "c" not in g
    assert g.dependencies_of("b") == []
