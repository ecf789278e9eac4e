"""Run only the pytest node ids listed in the file named by ``SWEDECK_SELECT`` (one per line).

PYTEST_DONT_REWRITE. Loaded into sandboxes with ``-p swedeck_select`` so a probe can be scored on the
tests that matter first; the full suite stays the final word.
"""

import os


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("SWEDECK_SELECT")
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        wanted = {line.rstrip("\n") for line in handle if line.strip()}
    # an id without parameters selects every case of a parametrized test, as on pytest's command
    # line: the grader's canaries copy parametrized tests and know their ids only without parameters
    keep = [item for item in items if item.nodeid in wanted or item.nodeid.partition("[")[0] in wanted]
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
