import pytest

from toposort import CycleError, DependencyGraph, batches, find_cycle, static_order, transitive_dependencies


def test_simple_chain():
    g = DependencyGraph()
    g.add_dependency("app", "lib")
    g.add_dependency("lib", "runtime")
    assert list(static_order(g)) == ["runtime", "lib", "app"]


def test_ties_follow_first_seen_order():
    g = DependencyGraph.from_dict({"z": [], "y": [], "x": ["z", "y"]})
    assert list(static_order(g)) == ["z", "y", "x"]


def test_diamond():
    g = DependencyGraph.from_dict({"top": ["left", "right"], "left": ["base"], "right": ["base"]})
    order = list(static_order(g))
    assert order == ["base", "left", "right", "top"]


def test_batches_layers():
    g = DependencyGraph.from_dict({"top": ["left", "right"], "left": ["base"], "right": ["base"], "solo": []})
    assert batches(g) == [["base", "solo"], ["left", "right"], ["top"]]


def test_cycle_is_reported():
    g = DependencyGraph.from_dict({"a": ["b"], "b": ["c"], "c": ["a"], "d": []})
    with pytest.raises(CycleError) as info:
        list(static_order(g))
    assert info.value.cycle == ["a", "b", "c", "a"]
    assert "'a'" in str(info.value)


def test_find_cycle_none_when_acyclic():
    g = DependencyGraph.from_dict({"a": ["b"], "b": []})
    assert find_cycle(g) is None


def test_self_loop_is_a_cycle():
    g = DependencyGraph.from_dict({"a": ["a"]})
    assert find_cycle(g) == ["a", "a"]
    with pytest.raises(CycleError):
        batches(g)


def test_transitive_dependencies():
    g = DependencyGraph.from_dict(
        {"app": ["web", "db"], "web": ["http"], "db": ["driver"], "http": [], "driver": [], "cli": ["app"]}
    )
    assert transitive_dependencies(g, "app") == ["http", "web", "driver", "db"]
    assert transitive_dependencies(g, "http") == []
