"""How well can code reading a planted test file pick the real test of each twin set? An offline
simulation with the grader's own planting code (no sandbox, no gold run).

For each task (the sample corpus and data/real's development part) it takes the hidden test files as the host ships them
(the tests patch applied to the buggy tree), lets every twinnable test count as validated (a grade
twins a subset of these), draws ``--draws`` plantings, and applies every tell below to every twin set
of every planted file, seen as a candidate's code sees it: the file's text alone. A tell scores each
of a set's k+1 members and bets on the highest (ties broken at random); its success rate is how often
that is the real test. It prints each tell's rate with its standard error beside the printed bound
1/(k+1), the best tell, and per grade (every set right at once) the best tell's rate beside the
product bound. The run fails (exit 1) when any tell, structural (layout, names, direction, order,
length, classes) or content (echo, naturalness, a number's size), beats the bound by more than three
standard errors. The content tells are what the draw's model of real values answers
(``natural.naturalness``), whose weights were fitted with this benchmark: on 2026-12-08 (commit
f774211), 10 draws a task, 4033 twin sets in 350 grades, the best content tell picks the real test in
0.264 of the sets (the value shown most elsewhere), the best structural one in 0.265 (the most
capitals, a tie every set: a random pick), against 1/4 + 3 s.e. = 0.2705; the run took 78 s.

The tells: layout (blank lines above and below, lines to the next test, at the end of the file or
class), name grammar (name parts that are words of the file, name length), the edit's direction
(medoid of the values, most neighbours one edit away, the median number, the one the others look
edited from: most characters in common with the rest), order (first or last of its set in the file,
its index in the scope), literal length (longest, shortest), character classes (most letters, digits,
capitals), echo (how often the value shows elsewhere in the file, most or least), naturalness
(character-bigram likelihood under the file's own text, the file's word frequencies: highest or
lowest), a number's size (largest, smallest).

    python benchmarks/canary_tells.py [--draws 200] [--tasks ID ...]
"""

from __future__ import annotations

import argparse
import ast
import base64
import json
import math
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curation.sources import load_source  # noqa: E402
from data import SAMPLE  # noqa: E402
from data.benchmark import real_tasks  # noqa: E402
from harness.config import Settings  # noqa: E402
from harness.grading import canaries  # noqa: E402
from harness.grading.canaries import twins  # noqa: E402
from harness.records import Task  # noqa: E402
from harness.sandboxes.envs import prepare_tree  # noqa: E402

REAL = ROOT / "data" / "real"


def hidden_files(task: Task, settings: Settings) -> dict[str, bytes]:
    """The hidden test files as the host writes them: the tests patch on a clone of the buggy tree
    (kept in the cache by the task's content hash)."""
    cache = settings.cache_dir / "canary-tells" / f"{task.task_hash()}.json"
    if cache.exists():
        return {p: base64.b64decode(b) for p, b in json.loads(cache.read_text()).items()}
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["git", "clone", "-q", str(prepare_tree(task, settings)), work], check=True)
        subprocess.run(["git", "apply", "-"], input=task.answer.hidden_tests.patch.encode(), cwd=work, check=True)
        for path, content in task.answer.hidden_tests.files.items():
            (Path(work) / path).write_text(content)
        changed = subprocess.run(["git", "status", "--porcelain", "-uall"], cwd=work, capture_output=True, text=True, check=True).stdout
        paths = [line[3:] for line in changed.splitlines() if line[3:].endswith(".py")]
        files = {p: (Path(work) / p).read_bytes() for p in paths if (Path(work) / p).is_file()}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({p: base64.b64encode(b).decode() for p, b in files.items()}))
    return files


class Member:
    """One test of a twin set as the planted file shows it."""

    def __init__(self, name: str, real: bool, node: ast.FunctionDef, index: int, scope_size: int, *, lines: list[str]) -> None:
        self.name, self.real, self.node, self.index, self.scope_size = name, real, node, index, scope_size
        self.start, self.end = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1, node.end_lineno or node.lineno
        self.above = _blank_run(lines, self.start - 1, -1)
        self.below = _blank_run(lines, self.end, 1)
        self.at_end = all(not line.strip() for line in lines[self.end + self.below :])
        self.value = ""


def _blank_run(lines: list[str], at: int, step: int) -> int:
    n = 0
    while 0 <= at < len(lines) and not lines[at].strip():
        n, at = n + 1, at + step
    return n


def _edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def _bigrams(text: str) -> Callable[[str], float]:
    counts, singles = Counter(zip(text, text[1:])), Counter(text)
    return lambda s: sum(math.log((counts[(a, b)] + 0.1) / (singles[a] + 10.0)) for a, b in zip(s, s[1:]))


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


class FileView:
    """What a reader of the planted file knows about it as a whole: its text, character bigrams, words."""

    def __init__(self, text: str) -> None:
        self.text, self.bigram = text, _bigrams(text)
        self.words = Counter(re.findall(r"[A-Za-z]+", text))


def tells(members: list[Member], view: FileView) -> dict[str, list[float]]:
    """Each tell's score of each member (higher: more likely the real test, by that tell)."""
    values = [m.value for m in members]
    rest = view.text
    for v in values:
        rest = rest.replace(v, "")
    bigram, words = view.bigram, view.words
    vocab = set(words)
    dist = [[_edit_distance(a, b) for b in values] for a in values]
    numbers = [_number(v) for v in values]
    median = sorted(numbers)[len(numbers) // 2]
    out = {
        "layout: blank lines above": [m.above for m in members],
        "layout: blank lines below": [m.below for m in members],
        "layout: narrower gap": [-(m.above + m.below) for m in members],
        "layout: at the end": [m.at_end for m in members],
        "name: parts are file words": [sum(p in vocab for p in m.name.split("_")[1:]) for m in members],
        "name: length": [len(m.name) for m in members],
        "direction: medoid": [-sum(row) for row in dist],
        "direction: most one-edit neighbours": [sum(d == 1 for d in row) for row in dist],
        "direction: median number": [-abs(n - median) if n == n else 0.0 for n in numbers],
        "direction: others edited from it": [sum(len(set(a) & set(b)) for b in values) for a in values],
        "order: first of its set": [-m.start for m in members],
        "order: last of its set": [m.start for m in members],
        "order: first of its scope": [-m.index for m in members],
        "order: last of its scope": [m.index for m in members],
        "length: longest": [len(v) for v in values],
        "length: shortest": [-len(v) for v in values],
        "classes: letters": [sum(c.isalpha() for c in v) for v in values],
        "classes: digits": [sum(c.isdigit() for c in v) for v in values],
        "classes: capitals": [sum(c.isupper() for c in v) for v in values],
        "echo: shows elsewhere": [rest.count(v.strip("'\"")) for v in values],
        "natural: bigram likelihood per character": [bigram(v) / max(len(v), 1) for v in values],
        "natural: bigram likelihood": [bigram(v) for v in values],
        "natural: word frequency": [sum(math.log(1 + words[w]) for w in re.findall(r"[A-Za-z]+", v)) for v in values],
    }
    # each content measure read both ways (the original may as well be the least natural), and a number's size
    out |= {tell.replace("natural: ", "natural: least "): [-x for x in out[tell]] for tell in list(out) if tell.startswith("natural: ")}
    out["echo: shows least elsewhere"] = [-x for x in out["echo: shows elsewhere"]]
    out["number: largest"] = [n if n == n else 0.0 for n in numbers]
    out["number: smallest"] = [-n if n == n else 0.0 for n in numbers]
    return out


def sets_of(planting: canaries.Planting) -> list[tuple[str, FileView, list[Member]]]:
    """Every twin set of the planting (its test's key, the file, the members), with each member's
    edited value read from the planted text."""
    found = []
    for path, blob in planting.files.items():
        if not any(key.startswith(f"{path}::") for key in planting.sets):
            continue
        text = blob.decode()
        view = FileView(text)
        module = ast.parse(text)
        lines = text.splitlines(keepends=True)
        scopes = [("", module.body), *((c.name, c.body) for c in module.body if isinstance(c, ast.ClassDef))]
        where: dict[tuple[str, str], tuple[ast.FunctionDef, int, int]] = {}
        for scope, body in scopes:
            tests = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")]
            where |= {(scope, n.name): (n, i, len(tests)) for i, n in enumerate(tests)}  # type: ignore[misc]
        for key, real in planting.sets.items():
            if not key.startswith(f"{path}::"):
                continue
            scope = key.split("::")[1]
            names = [real, *(c.name for c in planting.canaries if c.key == key)]
            members = [Member(n, n == real, *where[(scope, n)], lines=lines) for n in names]
            constants = [[ast.unparse(c) for c in ast.walk(m.node) if isinstance(c, ast.Constant)] for m in members]
            if len({len(c) for c in constants}) > 1:
                raise AssertionError(f"{key}: twins differ in more than one literal: {constants}")
            differ = [i for i in range(len(constants[0])) if len({c[i] for c in constants}) > 1]
            for m, consts in zip(members, constants):
                m.value = consts[differ[0]] if differ else ""
            found.append((key, view, members))
    return found


def simulate(files_by_task: dict[str, dict[str, bytes]], draws: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    hits: Counter[str] = Counter()
    grade_hits: Counter[str] = Counter()
    sets = grades = input_sets = 0
    input_hits: Counter[str] = Counter()  # the same, over the sets twinned at an input alone
    bound_sum = 0.0
    for files in files_by_task.values():
        selected = canaries.runs([])
        trial = canaries.trial(files, random.Random(0), selected)
        keys = list(trial.sets)
        # every value of a test twinned at an input counts as one the trial saw fail
        inputs = {key: [c.value for c in trial.canaries if c.key == key and c.value] for key in keys}
        if not keys:
            continue
        for _ in range(draws):
            planting = canaries.plant(files, random.Random(rng.getrandbits(64)), keys, selected, (), inputs)
            found = sets_of(planting)
            if not found:
                continue
            grades += 1
            bound_sum += (1 / (twins.TWINS + 1)) ** len(found)
            right: Counter[str] = Counter()
            for key, view, members in found:
                at_input = bool(inputs.get(key))
                sets += 1
                input_sets += at_input
                for tell, scores in tells(members, view).items():
                    top = max(scores)
                    pick = rng.choice([m for m, s in zip(members, scores) if s == top])
                    if pick.real:
                        hits[tell] += 1
                        input_hits[tell] += at_input
                        right[tell] += 1
            for tell, n in right.items():
                grade_hits[tell] += n == len(found)
    return {"sets": sets, "grades": grades, "hits": hits, "grade_hits": grade_hits, "grade_bound": bound_sum / max(grades, 1),
            "input_sets": input_sets, "input_hits": input_hits}  # fmt: skip


def load(ids: list[str] | None, settings: Settings) -> dict[str, dict[str, bytes]]:
    """The sample's tasks and data/real's of the development part (the held-out part is never read
    while the draw is developed)."""
    dev = {t.name for t in real_tasks("dev")}
    tasks = [*load_source(SAMPLE).tasks, *(t for t in load_source(REAL).tasks if t.instance_id in dev)]
    return {t.instance_id: hidden_files(t, settings) for t in tasks if not ids or t.instance_id in ids}


CONTENT = ("echo:", "natural:", "number:")


def report(result: dict) -> tuple[str, float, float]:
    """Prints the table; returns the best tell, structural or content, its rate and the bound's
    standard error."""
    bound = 1 / (twins.TWINS + 1)
    n = max(result["sets"], 1)
    se = math.sqrt(bound * (1 - bound) / n)
    print(f"{result['sets']} twin sets in {result['grades']} grades; bound per set 1/(k+1) = {bound:.4f} (k = {twins.TWINS})")
    rows = sorted(((h / n, tell) for tell, h in result["hits"].items()), reverse=True)
    for rate, tell in rows:
        flag = "  OVER THE BOUND" if rate > bound + 3 * se else ""
        print(f"  {tell:42s} {rate:.4f} ± {math.sqrt(rate * (1 - rate) / n):.4f}{flag}")
    for label, kept in (("structural", lambda t: not t.startswith(CONTENT)), ("content", lambda t: t.startswith(CONTENT))):
        best_rate, best = next(((r, t) for r, t in rows if kept(t)), (0.0, "-"))
        grade_rate = result["grade_hits"][best] / max(result["grades"], 1)
        print(f"best {label} tell: {best} {best_rate:.4f} (bound {bound:.4f}, 3 s.e. {3 * se:.4f}); "
              f"every set of a grade at once: {grade_rate:.4f} (mean bound {result['grade_bound']:.4f})")  # fmt: skip
    m = result["input_sets"]
    if m:  # twinned at an input: the same structural tells over those sets alone
        rates = sorted(((h / m, t) for t, h in result["input_hits"].items() if not t.startswith(CONTENT)), reverse=True)
        print(f"of them twinned at an input: {m} sets; best structural tell there: {rates[0][1]} {rates[0][0]:.4f} "
              f"(3 s.e. {3 * math.sqrt(bound * (1 - bound) / m):.4f})")  # fmt: skip
    best_rate, best = rows[0] if rows else (0.0, "-")
    return best, best_rate, se


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--tasks", nargs="*")
    args = parser.parse_args()
    files = load(args.tasks, Settings.from_env())
    _, rate, se = report(simulate(files, args.draws))
    return 1 if rate > 1 / (twins.TWINS + 1) + 3 * se else 0


if __name__ == "__main__":
    sys.exit(main())
