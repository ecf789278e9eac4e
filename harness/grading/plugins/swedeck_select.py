"""Run only the pytest node ids listed in the file named by ``SWEDECK_SELECT`` (one per line), in the
file's order (tests the file lists together keep pytest's order among themselves).

PYTEST_DONT_REWRITE. Loaded into sandboxes with ``-p swedeck_select`` so a probe can be scored on the
tests that matter first (``probes.runner.grading`` lists the ones that killed the task's earlier probes
first, so a run that stops at its first failure stops sooner); the full suite stays the final word.
"""

import os


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("SWEDECK_SELECT")
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        keep, dropped = chosen(items, [line.rstrip("\n") for line in handle if line.strip()])
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def chosen(items, wanted):
    """(the items ``wanted`` names, in its order; the others). An id without parameters selects every
    case of a parametrized test, as on pytest's command line: the grader's canaries copy parametrized
    tests and know their ids only without parameters."""
    rank = {}
    for test_id in wanted:
        rank.setdefault(test_id, len(rank))
    ranks = {item: rank.get(item.nodeid, rank.get(item.nodeid.partition("[")[0])) for item in items}
    keep = sorted((item for item in items if ranks[item] is not None), key=ranks.__getitem__)
    return keep, [item for item in items if ranks[item] is None]
