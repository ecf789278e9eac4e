"""Mutant schemata (probes.schema, harness/grading/plugins/swedeck_schema.py): a schema runs each probe
exactly as the probe's own tree would, refuses what it could not switch transparently, and a probe it
cannot vouch for goes back to a run of its own; in probe sessions on both backends the rewards equal
those of runs of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grading.parsers import parse_junit
from harness.grading.shipping import PLUGINS
from probes.schema import Schema

GOLD = '''\
import math

SCALE = 3


class Box:
    def area(self, w, h):
        """The area."""
        total = w * h
        return total * SCALE

    @property
    def side(self):
        return self._side

    @side.setter
    def side(self, value):
        self._side = value


def norm(xs):
    acc = 0
    for x in xs:
        acc += x * x
    return math.sqrt(acc)


def evens(n):
    for i in range(n):
        if i % 2 == 0:
            yield i
'''


def files(text: str, path: str = "m.py") -> dict:
    return {path: (0o644, text.encode())}


def load(text: str) -> dict:
    namespace: dict = {}
    exec(compile(text, "m.py", "exec"), namespace)
    return namespace


def behaviour(namespace: dict) -> tuple:
    box = namespace["Box"]()
    box.side = 4
    return box.area(2, 5), box.side, namespace["norm"]([3, 4]), list(namespace["evens"](7))


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - the switch module
    """The switch the schema's bodies import, from the plugins' folder, as a sandbox has it."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    import swedeck_schema_switch

    yield swedeck_schema_switch
    swedeck_schema_switch.ACTIVE[0] = 0


MUTANTS = {
    1: GOLD.replace("total = w * h", "total = w + h"),
    2: GOLD.replace("return total * SCALE", "return total * SCALE - 1"),
    3: GOLD.replace("        self._side = value\n", "        self._side = value * 2\n"),
    4: GOLD.replace("        acc += x * x\n    return", "        acc += x\n    return"),
    5: GOLD.replace("        if i % 2 == 0:\n", "        if i % 3 == 0:\n"),
    6: GOLD.replace("        return total * SCALE\n", "        return total * SCALE\n        return 0\n"),
}


def test_a_schema_runs_each_probes_body_while_it_is_switched_on_and_gold_otherwise(switch) -> None:  # noqa: ANN001
    schema = Schema(files(GOLD))
    assert all(schema.add(n, files(text)) for n, text in MUTANTS.items())
    text = schema.files()["m.py"][1].decode()
    module = load(text)
    for number, mutant in MUTANTS.items():
        switch.ACTIVE[0] = number
        assert behaviour(module) == behaviour(load(mutant)), number
    switch.ACTIVE[0] = 0
    assert behaviour(module) == behaviour(load(GOLD)) == (30, 4, 5.0, [0, 2, 4, 6])
    assert len({m for m in schema.numbers.values()}) == 4  # area, the setter, norm, evens


@pytest.mark.parametrize(
    "change",
    [
        ('"""The area."""', '"""An area."""'),  # the docstring
        ("def area(self, w, h):", "def area(self, w, h=1):"),  # the signature
        ("SCALE = 3", "SCALE = 4"),  # module code
        ("    @property\n", "    @staticmethod\n"),  # a decorator
        ("total = w * h\n        return total * SCALE", "total = w * h\n        return total * SCALE\n\nSCALE = 5"),
        ("    return math.sqrt(acc)\n", "    return math.sqrt(acc) + 1\nSCALE = 9\n"),  # module code right below the body
    ],
)
def test_a_change_beyond_one_functions_body_is_refused(change: tuple[str, str]) -> None:
    assert change[0] in GOLD
    assert not Schema(files(GOLD)).add(1, files(GOLD.replace(*change, 1)))


def test_two_functions_changed_at_once_or_a_second_file_are_refused() -> None:
    both = MUTANTS[1].replace("        acc += x * x\n", "        acc += x\n")
    assert not Schema(files(GOLD)).add(1, files(both))
    two = {**files(GOLD), "n.py": (0o644, b"X = 1\n")}
    assert not Schema(two).add(1, {**files(MUTANTS[1]), "n.py": (0o644, b"X = 2\n")})


@pytest.mark.parametrize(
    "old, new",
    [
        ("        return total * SCALE\n", "        SCALE = 2\n        return total * SCALE\n"),  # global -> local
        ("        return total * SCALE\n", "        return [total * SCALE for SCALE in (1,)][0] + SCALE\n"),
        ("    return math.sqrt(acc)\n", "    global acc\n    return math.sqrt(acc)\n"),
    ],
)
def test_a_name_bound_otherwise_than_in_the_other_variants_is_refused(old: str, new: str) -> None:
    """SCALE local in one variant would be local in the schema, and gold's branch would raise
    UnboundLocalError; a declared global would send gold's ``acc`` to the module."""
    assert old in GOLD
    mutant = GOLD.replace(old, new)
    if "for SCALE in" in new:  # a comprehension's own name: no conflict, it is the comprehension's
        assert Schema(files(GOLD)).add(1, files(mutant))
        return
    assert not Schema(files(GOLD)).add(1, files(mutant))


def test_a_body_a_switch_cannot_move_in_unchanged_is_refused() -> None:
    multiline = GOLD.replace("        total = w * h\n", '        total = w * h\n        note = """a\nb"""\n')
    schema = Schema(files(multiline))
    assert not schema.add(1, files(multiline.replace("w * h", "w + h")))
    assert not Schema(files(GOLD)).add(1, files(GOLD.replace("        if i % 2 == 0:\n            yield i\n", "        if i % 2 == 0:\n            return\n")))
    tabs = GOLD.replace("    acc = 0\n", "\tacc = 0\n").replace("    for x in xs:\n        acc += x * x\n    return", "\tfor x in xs:\n\t\tacc += x * x\n\treturn")
    assert not Schema(files(tabs)).add(1, files(tabs.replace("x * x", "x")))


# ------------------------------------------------------------------------------------ the plugin

TESTS = '''\
import m

def test_area():
    assert m.Box().area(2, 5) == 30

def test_norm():
    assert m.norm([3, 4]) == 5.0

def test_slow():
    assert m.slow() == 1
'''
SLOW = '\n\ndef slow():\n    return 1\n'


def run_plugin(tmp_path: Path, tree: dict[str, str], mutants: list[dict], timeout: float = 20, output_bytes: int = 10**6) -> tuple[dict, dict]:
    """The schema plugin in a plain pytest run on ``tree``: (its answers, each run's statuses)."""
    root = tmp_path / "tree"
    root.mkdir()
    for path, text in tree.items():
        (root / path).write_text(text)
    io = tmp_path / ".swedeck-io"  # as in a sandbox, where HOME is /tmp and the IO folder in it
    io.mkdir()
    (tmp_path / "tmp").mkdir()
    for m in mutants:
        m.setdefault("tests", None)
        m.setdefault("maxfail", None)
        m["junit"], m["log"] = str(io / f"junit-{m['number']}.xml"), str(io / f"log-{m['number']}")
        Path(m["log"]).write_text("")
    log = io / "command.log"
    job = {"mutants": mutants, "timeout": timeout, "output_bytes": output_bytes, "answer": str(io / "answer.json"), "log": str(log)}
    (io / "job.json").write_text(json.dumps(job))
    env = {
        **os.environ, "PYTHONPATH": str(PLUGINS), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "SWEDECK_SCHEMA": str(io / "job.json"),
        "TMPDIR": str(tmp_path / "tmp"), "HOME": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_ADDOPTS": f"-p swedeck_schema -p no:cacheprovider -o junit_family=xunit1 --junitxml={io / 'parent.xml'}",
    }  # fmt: skip
    with log.open("wb") as out:
        subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=120)
    answers = json.loads((io / "answer.json").read_text())
    statuses = {}
    for m in mutants:
        junit = Path(m["junit"])
        statuses[m["number"]] = parse_junit(junit.read_text()) if junit.exists() else None
    return answers, statuses


def schema_tree(gold: str, mutants: dict[int, str], tests: str = TESTS) -> tuple[dict[str, str], dict[int, str]]:
    schema = Schema(files(gold))
    assert all(schema.add(n, files(text)) for n, text in mutants.items())
    return {"m.py": schema.files()["m.py"][1].decode(), "test_m.py": tests}, schema.numbers


def test_each_run_of_the_plugin_reports_its_own_probes_tests(tmp_path: Path) -> None:
    tree, keys = schema_tree(GOLD + SLOW, {1: MUTANTS[1] + SLOW, 4: MUTANTS[4] + SLOW, 6: MUTANTS[6] + SLOW})
    mutants = [
        {"number": 1, "key": keys[1], "tests": ["test_m.py::test_area", "test_m.py::test_norm"]},
        {"number": 4, "key": keys[4], "tests": ["test_m.py::test_norm"], "maxfail": 1},
        {"number": 6, "key": keys[6]},
    ]
    answers, statuses = run_plugin(tmp_path, tree, mutants)
    assert {n: answers[n]["exit"] for n in ("1", "4", "6")} == {"1": 1, "4": 1, "6": 0} and answers["collection_s"] > 0
    assert statuses[1] == {"test_m.py::test_area": "FAILED", "test_m.py::test_norm": "PASSED"}
    assert statuses[4] == {"test_m.py::test_norm": "FAILED"}
    assert statuses[6] == {"test_m.py::test_area": "PASSED", "test_m.py::test_norm": "PASSED", "test_m.py::test_slow": "PASSED"}
    assert "test_area" in (tmp_path / ".swedeck-io" / "log-1").read_text()  # each run's own output
    assert "FAILED" not in (tmp_path / ".swedeck-io" / "log-6").read_text()


def test_a_function_entered_during_collection_sends_its_probes_back(tmp_path: Path) -> None:
    """At collection no probe is switched on: a parametrize list computed by calling ``area`` ran
    gold's body where probe 1's own tree would have run probe 1's."""
    tests = TESTS + "\nimport pytest\n\n@pytest.mark.parametrize('a', [m.Box().area(1, 1)])\ndef test_param(a):\n    assert a == 3\n"
    tree, keys = schema_tree(GOLD + SLOW, {1: MUTANTS[1] + SLOW, 4: MUTANTS[4] + SLOW}, tests)
    answers, statuses = run_plugin(tmp_path, tree, [{"number": 1, "key": keys[1]}, {"number": 4, "key": keys[4]}])
    assert answers["1"] == {"skipped": "early"} and statuses[1] is None
    assert answers["4"]["exit"] == 1 and statuses[4]["test_m.py::test_norm"] == "FAILED"


def test_a_run_that_changes_the_tree_sends_the_probes_after_it_back(tmp_path: Path) -> None:
    dirty = GOLD + SLOW.replace("    return 1\n", "    open('left-behind', 'w').close()\n    return 1\n")
    mutant = dirty.replace("total = w * h", "total = w + h")
    tree, keys = schema_tree(dirty, {1: mutant, 4: dirty.replace("        acc += x * x\n", "        acc += x\n")})
    answers, _ = run_plugin(tmp_path, tree, [{"number": 1, "key": keys[1]}, {"number": 4, "key": keys[4]}])
    assert answers["1"]["exit"] == 1 and answers["4"] == {"skipped": "dirty"}


def test_a_run_that_leaves_a_process_behind_sends_the_probes_after_it_back(tmp_path: Path) -> None:
    """A daemon that left the run's process group (a fork: no program started) would still be running
    in the next probe's run. It is killed."""
    pid_file = tmp_path / "daemon.pid"
    daemon = (
        "    import os, time\n    if os.fork() == 0:\n        os.setsid()\n"
        f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n        time.sleep(60)\n        os._exit(0)\n    return 1\n"
    )
    spawns = GOLD + SLOW.replace("    return 1\n", daemon)
    tree, keys = schema_tree(spawns, {1: spawns.replace("total = w * h", "total = w + h"), 4: spawns.replace("        acc += x * x\n", "        acc += x\n")})
    answers, _ = run_plugin(tmp_path, tree, [{"number": 1, "key": keys[1]}, {"number": 4, "key": keys[4]}])
    assert answers["1"]["exit"] == 1 and answers["4"] == {"skipped": "dirty"}
    assert not Path(f"/proc/{pid_file.read_text()}").exists()


def test_a_run_that_starts_a_program_is_answered_spawned(tmp_path: Path) -> None:
    """Another interpreter a test starts imports the tree's modules itself: a probe whose run starts a
    program is graded on its own. The runs after it are not affected."""
    spawns = GOLD + SLOW.replace("    return 1\n", "    import subprocess\n    subprocess.run(['true'])\n    return 1\n")
    mutant = spawns.replace("total = w * h", "total = w + h")
    tree, keys = schema_tree(spawns, {1: mutant, 4: spawns.replace("        acc += x * x\n", "        acc += x\n")})
    tests = [{"number": 1, "key": keys[1]}, {"number": 4, "key": keys[4], "tests": ["test_m.py::test_norm"]}]
    answers, statuses = run_plugin(tmp_path, tree, tests)
    assert answers["1"] == {"skipped": "spawned"}
    assert answers["4"]["exit"] == 1 and statuses[4] == {"test_m.py::test_norm": "FAILED"}


def test_a_run_that_hangs_or_floods_is_cut_alone(tmp_path: Path) -> None:
    hangs = GOLD + SLOW.replace("    return 1\n", "    import time\n    time.sleep(60)\n    return 1\n")
    floods = GOLD + SLOW.replace("    return 1\n", "    print('x' * 10**6)\n    assert False\n")
    slow_collection = "import time\ntime.sleep(1)\n" + TESTS
    tree, keys = schema_tree(GOLD + SLOW, {1: hangs, 2: floods, 4: MUTANTS[4] + SLOW}, slow_collection)
    answers, statuses = run_plugin(tmp_path, tree, [{"number": n, "key": keys[n]} for n in (1, 2, 4)], timeout=3, output_bytes=10**5)
    assert answers["1"]["timed_out"] and answers["1"]["exit"] is None
    # its deadline is its own run's: the collection it shares (over a second here) counts against it
    assert answers["collection_s"] > 1 and answers["collection_s"] + answers["1"]["seconds"] < 3 + 0.5
    assert answers["2"]["limited"] and answers["2"]["exit"] is None
    assert answers["4"]["exit"] == 1 and statuses[4]["test_m.py::test_norm"] == "FAILED"


# ------------------------------------------------------------------------------- in probe sessions


def graded_both_ways(task, backend, tmp_path: Path) -> tuple:  # noqa: ANN001
    """Pipeline 1's result for ``task``, and its probes graded in probe sessions with and without
    schemata: {schemata: (results, stats)}."""
    from curation.pipeline1 import Pipeline1Config, process_task
    from harness.sandboxes.envs import prepare_tree
    from probes.runner import generate, run_probes
    from probes.session import Stats

    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path / "p1")
    tree = prepare_tree(task, backend.settings)
    candidates = generate(task, tree, p1)
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    graded = {}
    for schemata in (True, False):
        stats = Stats()
        graded[schemata] = run_probes(task, candidates, backend, p1, stamp, tree=tree, stats=stats, schemata=schemata, log_dir=tmp_path), stats
    return p1, graded


def test_schema_runs_give_every_probe_the_grade_its_own_runs_give(backend, sample_tasks, tmp_path: Path) -> None:  # noqa: ANN001
    """Real probes of a sample task (each rewrites one function of gold's), graded in probe sessions
    with and without schemata: the same reward, reason, tests run and differing tests, and the
    schemata answered most of them."""
    _, graded = graded_both_ways(sample_tasks["sample__toposort-1"], backend, tmp_path)
    seen = {}
    for schemata, (results, stats) in graded.items():
        seen[schemata] = [(r.probe_id, r.reward, r.reason, r.tests_run, r.differing) for r in results]
        assert (stats.schema_runs >= len(results) - 1) == schemata, stats
    assert seen[True] == seen[False]
    assert {reward for _, reward, *_ in seen[True]} == {0.0, 1.0}


def test_what_reads_source_text_or_line_numbers_is_recognised() -> None:
    from probes.schema import reads_source

    assert reads_source([b"x = 1\n", b"import inspect\nsrc = inspect.getsource(f)\n"])
    assert reads_source([b"line = sys._getframe().f_lineno\n"]) and reads_source([b"import linecache\n"])
    assert not reads_source([b"import inspect\nsig = inspect.signature(f)\n", b"# getsourcefile\n"])


SOURCE_TEST = """\
import inspect

import toposort.graph


def test_the_module_reads_as_written():
    assert "swedeck_schema_switch" not in inspect.getsource(toposort.graph)
"""


def test_a_task_whose_tests_read_source_gets_no_schema(backend, sample_tasks, tmp_path: Path) -> None:  # noqa: ANN001
    """A schema's switched module is not the probe's text: a test that reads the module's source fails
    in every schema run where the probe's own run passes it. Such a task's probes run on their own, with
    the rewards of their own runs."""
    base = sample_tasks["sample__toposort-1"]
    lines = SOURCE_TEST.splitlines(keepends=True)
    added = "diff --git a/tests/test_zz_source.py b/tests/test_zz_source.py\nnew file mode 100644\n--- /dev/null\n"
    added += f"+++ b/tests/test_zz_source.py\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}" for line in lines)
    hidden = base.answer.hidden_tests.model_copy(update={"patch": base.answer.hidden_tests.patch + added})
    task = base.model_copy(update={
        "answer": base.answer.model_copy(update={"hidden_tests": hidden}),
        "test_cmd": [f"{base.test_cmd[0]} tests/test_zz_source.py"],
    })  # fmt: skip
    p1, graded = graded_both_ways(task, backend, tmp_path)
    assert p1.expected_status["tests/test_zz_source.py::test_the_module_reads_as_written"] == "PASSED"
    rewards = {schemata: [r.reward for r in results] for schemata, (results, _) in graded.items()}
    assert all(stats.schemata == 0 for _, stats in graded.values())
    assert rewards[True] == rewards[False] and 1.0 in rewards[True]
