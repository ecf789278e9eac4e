"""What both differential engines share: programs, their run through ``diff_driver.py`` in a sandbox, and the answer."""

from __future__ import annotations

import ast
import builtins
import functools
import json
import re
import shlex
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.grading.patching import apply_patch
from harness.pyast import parse
from harness.records import Behaviour, DistinguishingInput, Task
from harness.sandboxes.sandbox import Backend, EnvError, SandboxError

DRIVER = Path(__file__).with_name("diff_driver.py")
IO = "/tmp/swedeck-differential"
PROGRAM_TIMEOUT_S = 2.0
BUILTINS = set(dir(builtins))


@dataclass(frozen=True)
class Step:
    kind: str  # "exec" (a statement) or "observe" (an expression whose behaviour is recorded)
    src: str
    assertion: bool = False  # an operand of an assert in the test (pure by convention)


@dataclass
class Program:
    key: str
    test_id: str
    test_file: str
    cls: str | None
    method: str
    steps: list[Step]
    how: str = "the test's own literals"
    imports: list[str] = field(default_factory=list)  # `from m import x` lines a name substitution needs
    base_key: str = ""  # the test's own program this variant came from
    renamed: tuple[str, str] | None = None  # the string literal this variant replaced, and its new value
    fixtures: list[str] = field(default_factory=list)  # the test's arguments: pytest's fixtures, run through pytest
    binding: tuple[str, str] | None = None  # a parametrized case's parameter bound otherwise: name, value as source
    decorators: list[str] = field(default_factory=list)  # those that wrap the test's call (a frozen clock), outermost first

    def prelude(self) -> list[str]:
        """The lines run before the test's statements: imports, then the binding."""
        return [*self.imports, *([f"{self.binding[0]} = {self.binding[1]}"] if self.binding else [])]

    def spec(self, names: Sequence[str] = ()) -> dict:
        steps = [{"kind": "exec", "src": line} for line in self.prelude()]
        steps += [{"kind": s.kind, "src": s.src} for s in self.steps]
        return {"key": self.key, "test_id": self.test_id, "test_file": self.test_file, "cls": self.cls, "method": self.method,
                "steps": steps, "names": list(names), "fixtures": list(self.fixtures), "decorators": list(self.decorators)}  # fmt: skip


def free_names(steps: Iterable[Step]) -> list[str]:
    """Names the steps read that they do not bind: the test module's globals."""
    loaded, bound = [], set()
    for step in steps:
        for node in ast.walk(parse(step.src)):
            if isinstance(node, ast.Name):
                (loaded.append(node.id) if isinstance(node.ctx, ast.Load) else bound.add(node.id))
    return [n for n in dict.fromkeys(loaded) if n not in bound and n not in BUILTINS and n != "self"]


@dataclass
class Observed:
    """What the driver recorded for every program on one tree."""

    results: dict[str, list[dict]]
    alternatives: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)
    error: str = ""
    params: dict[str, dict[str, str]] = field(default_factory=dict)  # a parametrized case's values, as source


def run_programs(
    task: Task, backend: Backend, patch: str, progs: Sequence[Program], changed: Sequence[str], *,
    discover: bool = False, timeout_s: float = 120.0, paths: Sequence[str] = (), program_timeout_s: float = PROGRAM_TIMEOUT_S,
) -> Observed:  # fmt: skip
    """Every program on the buggy tree with ``patch`` and the hidden tests applied, in one sandbox."""
    try:
        sandbox = backend.open(task)
    except (EnvError, SandboxError, OSError) as err:
        return Observed({}, error=f"no sandbox: {err}")
    try:
        strategy, why = apply_patch(sandbox, patch, "differential")
        if not strategy:
            return Observed({}, error=f"the patch does not apply: {why}")
        hidden = task.answer.hidden_tests
        strategy, why = apply_patch(sandbox, hidden.patch, "differential-tests")
        if not strategy:
            return Observed({}, error=f"the hidden tests do not apply: {why}")
        for path, content in hidden.files.items():
            sandbox.write_file(path, content)
        spec = {"changed": list(changed), "timeout_s": program_timeout_s, "discover": discover, "paths": list(paths),
                "programs": [p.spec(free_names(p.steps)) for p in progs]}  # fmt: skip
        sandbox.write_file(f"{IO}/driver.py", DRIVER.read_text())
        sandbox.write_file(f"{IO}/spec.json", json.dumps(spec))
        out = f"{IO}/out.json"
        # one hash seed on every tree: a set of strings then iterates (and prints) in the same order on
        # both, so an object whose repr shows a set is no difference (boltons-ec1ff9f's complement sets)
        done = sandbox.run(f"python {shlex.quote(IO + '/driver.py')} {IO}/spec.json {out}", timeout=timeout_s,
                           env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"})  # fmt: skip
        try:
            raw = json.loads(sandbox.read_file(out))
        except (OSError, ValueError) as err:
            return Observed({}, error=f"the driver wrote no result (exit {done.exit_code}): {err}: {done.output[-500:]}")
        return Observed(raw.get("results", {}), raw.get("alternatives", {}), params=raw.get("params", {}))
    except (EnvError, SandboxError, OSError) as err:
        return Observed({}, error=f"the sandbox failed: {err}")
    finally:
        sandbox.close()


def behaviour(obs: dict | None) -> Behaviour:
    if obs is None:
        return Behaviour(raised="not reached")
    value = "" if obs.get("value") is None else json.dumps(obs["value"], ensure_ascii=False)
    return Behaviour(value=value, raised=obs.get("raised", ""), stdout=obs.get("stdout", ""))


def renamed(b: Behaviour, renaming: Mapping[str, str]) -> Behaviour:
    """What a behaviour would be if each string of ``renaming`` were only a name: the same, with each
    renamed (in values as a string's repr, in printed output as a word), all at once."""
    if not renaming:
        return b
    quoted = {json.dumps(repr(old))[1:-1]: json.dumps(repr(new))[1:-1] for old, new in renaming.items()}
    in_value = re.compile("|".join(re.escape(q) for q in sorted(quoted, key=len, reverse=True)))
    in_stdout = re.compile(r"(?<!\w)(" + "|".join(re.escape(o) for o in sorted(renaming, key=len, reverse=True)) + r")(?!\w)")
    return Behaviour(value=in_value.sub(lambda m: quoted[m.group()], b.value), raised=b.raised,
                     stdout=in_stdout.sub(lambda m: renaming[m.group()], b.stdout))  # fmt: skip


@dataclass
class Differential:
    """The engine's answer for one patch: the distinguishing input, or none found with what was tried."""

    found: DistinguishingInput | None
    tried: int  # programs and standalone calls compared
    detail: str = ""
    observed: int = 0  # standalone calls the observation engine took from the tests' own calls
    generated: int = 0  # ... and varied or read from documents (``probes.observe``)


class Engine(Protocol):
    """What tells another patch apart from gold: the program replay, the observed suite, the footprint."""

    def distinguish(self, patch: str) -> Differential: ...


def within_budget(budget_s: float, what: str) -> Callable:
    """An engine's ``distinguish`` that counts its own time on the engine's ``seconds`` and, once those
    reach ``budget_s`` for the task, answers nothing (later survivors get no evidence)."""

    def wrap(method: Callable[[Any, str], Differential]) -> Callable[[Any, str], Differential]:
        @functools.wraps(method)
        def run(self: Any, patch: str) -> Differential:
            if self.seconds >= budget_s:
                return Differential(None, 0, f"{what}: the task's budget ({budget_s:.0f} s) is spent")
            started = time.monotonic()
            try:
                return method(self, patch)
            finally:
                self.seconds += time.monotonic() - started

        return run

    return wrap


def draw(strategy: object, examples: int) -> list[object]:
    """What Hypothesis draws from ``strategy`` in ``examples`` derandomised tries (two runs agree)."""
    from hypothesis import HealthCheck, Phase, given, settings

    drawn: list[object] = []

    @settings(derandomize=True, database=None, max_examples=examples, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)  # fmt: skip
    @given(strategy)
    def collect(x: object) -> None:
        drawn.append(x)

    collect()
    return drawn
