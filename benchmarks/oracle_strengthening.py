"""The maintainers' own tests as the oracle of test strengthening.

A real fix commit whose tests add three or more FAIL_TO_PASS tests is made into two tasks: the full
one (the maintainers' suite) and a thinned one that keeps one of those tests and drops the others from
the test files (removed, not deselected, so nothing downstream can read them): whole test functions
where three or more fail to pass, else parametrize cases, each cut from its parametrize list where
three or more cases fail to pass. cosmic-ray's mutants of
the lines gold added (its operators used as a library; neither our operators nor mutmut's, which the
engine's own probes use) that pass the thinned suite but fail the full one are real shortcuts of the thinned
task: wrong by the maintainers' own word. Then the thinned tasks go through what a user runs
(``swedeck p1``, ``judge --no-judge``, ``strengthen --all``, ``deck``) and every mutant is graded on
the strengthened arm. It prints:

  thinned confirmed too loose   thinned tasks whose Pipeline 2 confirmed a survivor (and its verdict)
  shortcuts rejected            real shortcuts the strengthened thinned suite gives reward 0
  stricter than maintainers     mutants that pass the full upstream suite, rejected by the strengthened
                                thinned suite (equivalent mutants among them are false alarms; the rest
                                are bugs the maintainers' tests miss)
  cost                          Pipeline 2 + strengthening against Pipeline 1's wall time per task

Everything is built from the commits themselves, mined from clones named in ``oracle_libraries.toml``
(``MIRRORS/owner+name/repo``, a clone or a bare repository of each): commits with one parent that
say they fix something (``FIX``), change one to three library files by at most ``--max-code-lines``
lines and add at least three tests (a new test function with its parametrize cases, or cases added to
a function's parametrize list). The issue text is the commit message. Every stage resumes from ``RUN``;
``RUN/thinning.json`` says how each task Pipeline 1 kept was thinned, or why it was not, and the
report counts why mined tasks were dropped (Pipeline 1's reasons, thinning's).

    python benchmarks/oracle_strengthening.py --mirrors DIR [--out RUN] [--per-library N] [--max-tasks N]
                                              [--mutants N] [--backend bwrap] [--workers 2]
                                              [--no-mining] [--oracle-only] [--report-only]

``--oracle-only`` stops before the engine: what the maintainers' suites say of each mutant does not
depend on swedeck's engine, so it can be computed once and the engine's stages run later (only the
mutants that pass a suite are graded on the strengthened arm).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import itertools
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MIN_TESTS = 3  # FAIL_TO_PASS test functions a commit must add to be thinned
# a fix says so in its message; features and refactors with new tests are left out
FIX = re.compile(r"\b(fix|bug|issue|error|wrong|crash|regression|incorrect|broken)", re.I)


def _make_real():  # noqa: ANN202 - the builder is a script, not a package
    spec = importlib.util.spec_from_file_location("make_real", ROOT / "data" / "real" / "make_real.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["make_real"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


MAKE_REAL = _make_real()
git, is_test = MAKE_REAL.git, MAKE_REAL.is_test


# ------------------------------------------------------------------------------------------- mining


def is_test_module(path: str) -> bool:
    """A file pytest collects tests from (not a conftest or a helper beside the tests)."""
    name = path.rsplit("/", 1)[-1]
    return is_test(path) and (name.startswith("test_") or name.endswith("_test.py") or name == "tests.py")


def added_test_functions(diff: str) -> int:
    return len(re.findall(r"^\+\s*(?:async\s+)?def test\w*\(", diff, flags=re.M))


def test_functions(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualname, node) of every test function of a module's ``body``, in classes too (``C::test_x``)."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield from test_functions(node.body, f"{prefix}{node.name}::")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield f"{prefix}{node.name}", node


def parametrize_lists(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The argvalues of each ``@pytest.mark.parametrize`` (or ``@mark.parametrize``) of a test function."""
    out = []
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) and decorator.func.attr == "parametrize":
            given = decorator.args[1:2] or [k.value for k in decorator.keywords if k.arg == "argvalues"]
            out += given
    return out


def case_counts(source: str) -> dict[str, int]:
    """How many tests pytest makes of each test function of ``source``: the product of its literal
    parametrize lists' lengths (a list built at run time counts as one case)."""
    counts = {}
    for qualname, node in test_functions(ast.parse(source).body):
        n = 1
        for values in parametrize_lists(node):
            n *= len(values.elts) if isinstance(values, (ast.List, ast.Tuple)) else 1
        counts[qualname] = n
    return counts


def added_tests(old: str | None, new: str) -> int:
    """Tests a change of one test module adds: a new function with all its cases, and the cases added to
    a function's parametrize lists."""
    before = case_counts(old) if old is not None else {}
    return sum(max(0, n - before.get(q, 0)) for q, n in case_counts(new).items())


def commit_added_tests(source: Path, parent: str, fix: str, tests: Sequence[str]) -> int:
    """Tests (functions or parametrize cases) the commit adds to its test modules; a module Python 3
    cannot parse counts its added ``def test`` lines."""
    total = 0
    for path in tests:
        new = _show(source, fix, path)
        if new is None:
            continue
        old = _show(source, parent, path)
        try:
            total += added_tests(old, new)
        except SyntaxError:
            total += added_test_functions(git(["diff", parent, fix, "--", path], source))
    return total


def _show(source: Path, commit: str, path: str) -> str | None:
    shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=source, capture_output=True, text=True, errors="replace")
    return shown.stdout if shown.returncode == 0 else None


def fit(numstat: str, max_code_lines: int) -> tuple[list[str], list[str]] | None:
    """(library files, test modules) of a commit's ``git diff --numstat`` when its shape fits: one to
    three library files changed by at most ``max_code_lines`` lines, and a test module changed."""
    code, tests, lines = [], [], 0
    for row in numstat.splitlines():
        added, removed, path = row.split("\t", 2)
        if not path.endswith(".py"):
            continue
        if added == "-":  # binary
            return None
        if is_test(path):
            tests += [path] if is_test_module(path) else []
        else:
            code.append(path)
            lines += int(added) + int(removed)
    if not 1 <= len(code) <= 3 or lines > max_code_lines or not tests:
        return None
    return code, tests


def mine(source: Path, limit: int, max_code_lines: int, scan: int = 800) -> list[tuple[str, list[str]]]:
    """Up to ``limit`` fix commits of ``source`` (newest first) with their test modules."""
    found = []
    for line in git(["log", "--no-merges", "--format=%H %P", f"-n{scan}", "HEAD"], source).splitlines():
        sha, *parents = line.split()
        if len(parents) != 1 or not FIX.search(git(["log", "-1", "--format=%B", sha], source)):
            continue
        shape = fit(git(["diff", "--numstat", parents[0], sha], source), max_code_lines)
        if shape is None:
            continue
        if commit_added_tests(source, parents[0], sha, shape[1]) >= MIN_TESTS:
            found.append((sha, shape[1]))
            if len(found) == limit:
                break
    return found


def test_command(source: Path, fix: str, tests: Sequence[str]) -> str:
    src = git(["ls-tree", "-d", "--name-only", f"{fix}^", "src"], source).strip() == "src"
    return f"{'PYTHONPATH=src:$PYTHONPATH ' if src else ''}python -m pytest -o addopts= {' '.join(tests)}"


def build_tasks(mirrors: Path, libraries: Iterable[str], out: Path, per_library: int, max_code_lines: int) -> list[Path]:
    """Each library's mined task folders, interleaved (every library's first commit before any
    library's second), so that a Pipeline 1 stopped early has covered the libraries evenly."""
    by_library: list[list[Path]] = []
    for repo in libraries:
        source = mirrors / repo.replace("/", "+") / "repo"
        if not source.exists():
            print(f"  {repo}: no clone under {mirrors}; skipped", flush=True)
            continue
        mined = mine(source, per_library, max_code_lines)
        print(f"  {repo}: {len(mined)} commits", flush=True)
        folders: list[Path] = []
        for sha, tests in mined:
            folder = out / f"{repo.replace('/', '__')}-{sha[:7]}"
            if not (folder / "task.toml").exists():
                message = git(["log", "-1", "--format=%B", sha], source)
                MAKE_REAL.build_folder(source, sha, repo, test_command(source, sha, tests), message, folder)
            folders.append(folder)
        by_library.append(folders)
    return [f for rank in itertools.zip_longest(*by_library) for f in rank if f is not None]


# ------------------------------------------------------------------------------------------ thinning


def test_function(node_id: str) -> str:
    """A node id without its parametrize case: ``tests/t.py::C::test_x[1-2]`` -> ``tests/t.py::C::test_x``."""
    return node_id.split("[", 1)[0]


def remove_tests(source: str, qualnames: set[str]) -> str:
    """``source`` without the test functions named (``test_x`` or ``Class::test_x``), decorators
    included; a class left without a body gets ``pass``."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cut: list[tuple[int, int, str]] = []  # first line, last line (0-based, inclusive), what replaces them

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}::")
                kept = [n for n in node.body if not _named(n, f"{prefix}{node.name}::", qualnames)]
                if not kept:  # the whole body goes, its methods' cuts with it
                    first = min([node.body[0].lineno, *(d.lineno for d in getattr(node.body[0], "decorator_list", []))]) - 1
                    last = node.body[-1].end_lineno - 1  # type: ignore[operator]
                    cut[:] = [c for c in cut if not first <= c[0] <= last]
                    cut.append((first, last, f"{' ' * node.body[0].col_offset}pass\n"))
            elif _named(node, prefix, qualnames):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1  # type: ignore[attr-defined]
                cut.append((first, node.end_lineno - 1, ""))  # type: ignore[operator]

    visit(tree.body, "")
    for first, last, replacement in sorted(cut, reverse=True):
        lines[first : last + 1] = [replacement] if replacement else []
    return "".join(lines)


def _named(node: ast.stmt, prefix: str, qualnames: set[str]) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and f"{prefix}{node.name}" in qualnames


def thinning(fail_to_pass: Sequence[str]) -> tuple[str, list[str]]:
    """How a task is thinned and its units: its FAIL_TO_PASS test functions where there are at least
    MIN_TESTS of them ("function"), else its FAIL_TO_PASS tests, a parametrize case being one, where
    there are that many ("case"); ("", []) where neither."""
    functions = sorted({test_function(t) for t in fail_to_pass})
    if len(functions) >= MIN_TESTS:
        return "function", functions
    cases = sorted(set(fail_to_pass))
    return ("case", cases) if len(cases) >= MIN_TESTS else ("", [])


class Unresolved(Exception):
    """A parametrize case to remove is not one this script can name from the source (a list built at
    run time, stacked parametrize decorators, ids from a function)."""


def case_ids(decorator: ast.Call, values: ast.List | ast.Tuple) -> list[str]:
    """The ids pytest gives the cases of one ``parametrize`` whose argvalues are written out, made by
    pytest's own IdMaker: a value that is not a literal stands for an object pytest names by its
    argname and index, which is what it does with every value that is not a number, string, bool,
    None, class or function; such a case can still be removed by the id pytest gives it."""
    from _pytest.mark.structures import ParameterSet
    from _pytest.python import IdMaker

    names_node = decorator.args[0] if decorator.args else next((k.value for k in decorator.keywords if k.arg == "argnames"), None)
    try:
        names = ast.literal_eval(names_node) if names_node is not None else None
    except ValueError as error:
        raise Unresolved("argnames not a literal") from error
    argnames = [n.strip() for n in names.split(",") if n.strip()] if isinstance(names, str) else list(names or [])
    sets = [_parameter_set(element, len(argnames), ParameterSet) for element in values.elts]
    made = IdMaker(argnames, sets, None, None, None, None, None).make_unique_parameterset_ids()
    return [str(i) for i in made]


def _parameter_set(element: ast.expr, arity: int, parameter_set: type):  # noqa: ANN202 - pytest's ParameterSet
    def value(node: ast.expr) -> object:
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return object()  # named by argname and index, as pytest names any such object

    if isinstance(element, ast.Call) and isinstance(element.func, (ast.Attribute, ast.Name)) and getattr(element.func, "attr", getattr(element.func, "id", "")) == "param":
        given = next((k.value for k in element.keywords if k.arg == "id"), None)
        case_id = value(given) if given is not None else None
        if given is not None and not isinstance(case_id, str | None):
            raise Unresolved("pytest.param id not a literal")
        return parameter_set(tuple(value(a) for a in element.args), (), case_id)
    if arity == 1:
        return parameter_set((value(element),), (), None)
    if isinstance(element, (ast.Tuple, ast.List)) and len(element.elts) == arity:
        return parameter_set(tuple(value(e) for e in element.elts), (), None)
    raise Unresolved("a case that is not written as its values")


def remove_cases(source: str, cases: dict[str, set[str]]) -> tuple[str, set[str]]:
    """``source`` without the parametrize cases named (qualname -> case ids), each dropped from its
    function's parametrize list where it is written; and the functions left with no case (to be
    removed whole). Raises Unresolved where a case cannot be found by its id."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found = dict(test_functions(tree.body))
    edits: list[tuple[ast.expr, str]] = []
    emptied = set()
    for qualname, wanted in cases.items():
        node = found.get(qualname)
        lists = [d for d in node.decorator_list if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"] if node else []
        if len(lists) != 1:
            raise Unresolved(f"{qualname}: {len(lists)} parametrize decorators")
        (decorator,) = lists
        values = decorator.args[1] if len(decorator.args) > 1 else next((k.value for k in decorator.keywords if k.arg == "argvalues"), None)
        if not isinstance(values, (ast.List, ast.Tuple)) or any(k.arg == "ids" for k in decorator.keywords):
            raise Unresolved(f"{qualname}: argvalues not written out, or ids given apart")
        ids = case_ids(decorator, values)
        if not wanted <= set(ids):
            raise Unresolved(f"{qualname}: no case {sorted(wanted - set(ids))} among {ids}")
        kept = [e for e, i in zip(values.elts, ids, strict=True) if i not in wanted]
        if not kept:
            emptied.add(qualname)
            continue
        indent = " " * (values.col_offset + 4)
        segments = [ast.get_source_segment(source, e, padded=False) for e in kept]
        edits.append((values, "[\n" + "".join(f"{indent}{seg},\n" for seg in segments) + " " * values.col_offset + "]"))
    for values, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = values.lineno - 1, values.end_lineno - 1  # type: ignore[operator]
        head, tail = lines[first][: values.col_offset], lines[last][values.end_col_offset :]  # type: ignore[index]
        lines[first : last + 1] = [head + text + tail]
    return "".join(lines), emptied


def thin(full: Path, fail_to_pass: Sequence[str], out: Path) -> tuple[str, list[str]] | str:
    """The thinned copy of task folder ``full`` in ``out``: one FAIL_TO_PASS test kept (drawn by the
    task's name), the others removed from the hidden test files: whole test functions, or, where fewer
    than MIN_TESTS functions fail to pass but as many parametrize cases do, the cases from their
    parametrize lists (a function left with none goes whole). (kept, removed), or why it is not thinned:
    "few_fail_to_pass" (fewer than MIN_TESTS tests), "case_ids_unresolved" (a case not named in the
    source as pytest names it), "inherited_tests" (a test to remove is a method a class inherits: its
    one definition is also the tests of the other classes, the kept one's among them)."""
    level, units = thinning(fail_to_pass)
    if not level:
        return "few_fail_to_pass"
    kept = random.Random(full.name).choice(units)
    removed = [u for u in units if u != kept]
    task = tomllib.loads((full / "task.toml").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        git(["clone", "-q", str(full / "repo.bundle"), str(tree)], Path(tmp))
        git(["checkout", "-q", task["repo_source"]["ref"]], tree)
        subprocess.run(["git", "apply", str(full / "tests.patch")], cwd=tree, check=True)
        functions: dict[str, set[str]] = {}
        cases: dict[str, dict[str, set[str]]] = {}
        for node_id in removed:
            path, qualname = node_id.split("::", 1)
            if "[" in qualname:
                name, case = qualname.split("[", 1)
                cases.setdefault(path, {}).setdefault(name, set()).add(case.removesuffix("]"))
            else:
                functions.setdefault(path, set()).add(qualname)
        for path in sorted(set(functions) | set(cases)):
            text = (tree / path).read_text()
            if functions.get(path, set()) - {q for q, _ in test_functions(ast.parse(text).body)}:
                return "inherited_tests"  # collected under a class that does not define it: one definition, several tests
            try:
                text, emptied = remove_cases(text, cases.get(path, {}))
            except Unresolved as why:
                print(f"  {full.name}: not thinned, {why}", flush=True)
                return "case_ids_unresolved"
            (tree / path).write_text(remove_tests(text, functions.get(path, set()) | emptied))
        git(["add", "-A"], tree)
        thinned = git(["diff", "--cached", "HEAD"], tree)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("gold.patch", "issue.md", "repo.bundle"):
        shutil.copy(full / name, out / name)
    (out / "tests.patch").write_text(thinned)
    (out / "task.toml").write_text((full / "task.toml").read_text().replace(f'instance_id = "{full.name}"', f'instance_id = "{out.name}"'))
    return kept, removed


# ------------------------------------------------------------------------------------------ mutants


def cosmic_ray_mutants(code: str, lines: set[int]) -> list[tuple[int, str, str]]:
    """(line, description, mutated code) of every cosmic-ray mutant of ``code`` (its core operators that
    take no arguments, used as a library) whose site starts on one of ``lines``."""
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator, operator_names

    out = []
    module = get_ast(code)
    for name in operator_names():
        operator_class = get_operator(name)
        if operator_class.arguments():
            continue
        operator = operator_class()
        positions = [start for node in ast_nodes(module) for start, _ in operator.mutation_positions(node)]
        for occurrence, (line, column) in enumerate(positions):
            if line in lines and (mutated := mutate_code(code, operator, occurrence)) is not None and mutated != code:
                out.append((line, f"cosmic-ray {name.removeprefix('core/')} at line {line}:{column}", mutated))
    return out


def mutant_patches(task, limit: int) -> list[tuple[str, str]]:  # noqa: ANN001 - a harness.records.Task
    """(description, patch) of up to ``limit`` cosmic-ray mutants of the lines gold added to library
    files, spread over those lines (every line's first mutant before any line's second), each the whole
    gold patch with one mutation, against the buggy tree. cosmic-ray, not mutmut: the engine's own probes
    use mutmut's operators, and an oracle built from them would grade the engine on its own probes."""
    from harness.config import Settings
    from harness.sandboxes.envs import prepare_tree
    from probes.pycst import spread
    from probes.workspace import added_lines, file_lines, workspace

    tree = prepare_tree(task, Settings.from_env())
    with workspace(task, tree) as ws:
        if ws is None:
            return []
        found = []
        for path in ws.paths:
            new, old = ws.new[path], ws.old[path]
            if new is None or not path.endswith(".py") or is_test(path):
                continue
            lines = added_lines(file_lines(old), file_lines(new))
            found += [(path, line, what, code) for line, what, code in cosmic_ray_mutants(new, lines)]
        out = []
        for path, _, what, code in spread(found, lambda f: (f[0], f[1]))[:limit]:
            (ws.root / path).write_text(code)
            out.append((what, git(["diff", "HEAD"], ws.root)))
            (ws.root / path).write_text(ws.new[path])
        return out


# ------------------------------------------------------------------------------------------- stages


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist() if path.exists() else []


def swedeck(args: Sequence[str]) -> None:
    print(f"$ swedeck {' '.join(args)}", flush=True)
    subprocess.run(["swedeck", *args], stdout=subprocess.DEVNULL, check=False)


def grade_all(jobs: Sequence[tuple[str, str]], tasks: dict, backend_name: str, workers: int) -> list[float | None]:
    """Reward of each (task id, patch) job (None: the task is not there, or its gold run gives no pattern)."""
    from harness.config import SandboxConfig
    from harness.grading.grader import grade
    from harness.sandboxes.backends import get_backend
    from harness.sandboxes.sandbox import EnvError

    backend = get_backend(SandboxConfig(backend=backend_name))

    def one(job: tuple[str, str]) -> float | None:
        iid, patch = job
        try:
            return grade(tasks[iid], patch, backend).reward if iid in tasks else None
        except EnvError as error:  # no gold pattern to hold the mutant to (typing_extensions: tamper_suspected)
            print(f"  {iid}: not graded, {str(error)[:160]}", flush=True)
            return None

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, jobs))


def run(args: argparse.Namespace) -> None:
    from curation.deck_files import arm_tasks
    from curation.sources import load_sources

    out: Path = args.out
    full_dir, thin_dir = out / "tasks" / "full", out / "tasks" / "thin"
    libraries = args.libraries or tomllib.loads((HERE / "oracle_libraries.toml").read_text())["libraries"]
    if not args.report_only and not args.no_mining:
        print("mining", flush=True)
        folders = build_tasks(args.mirrors, libraries, full_dir, args.per_library, args.max_code_lines)
        swedeck(["p1", *map(str, folders), "--out", str(out / "full"), "--backend", args.backend, "--workers", str(args.workers)])
    thinning_path = out / "thinning.json"  # each kept task's thinning: level, kept, removed; or why none
    thinnings: dict[str, dict] = json.loads(thinning_path.read_text()) if thinning_path.exists() else {}
    thinned, dropped = {}, Counter()
    for result_path in sorted((out / "full" / "p1").glob("*/result.parquet")):
        (result,) = rows(result_path)
        iid = result["instance_id"]  # the folder's name is harness.names.file_name of it
        if result["decision"] != "keep":
            dropped[f"p1 {result['reason']}"] += 1
            continue
        if len(thinned) == args.max_tasks:
            continue
        target = thin_dir / f"{iid}-thin"
        if iid not in thinnings and not args.report_only:
            made = thin(full_dir / iid, result["fail_to_pass"], target)
            level = thinning(result["fail_to_pass"])[0]
            thinnings[iid] = {"dropped": made} if isinstance(made, str) else {"level": level, "kept": made[0], "removed": made[1]}
            thinning_path.write_text(json.dumps(thinnings, indent=1))
        if "dropped" in thinnings.get(iid, {}):
            dropped[f"thinning {thinnings[iid]['dropped']}"] += 1
        elif (target / "task.toml").exists():
            thinned[iid] = target
    levels = Counter(thinnings[iid]["level"] for iid in thinned if iid in thinnings)
    print(f"{len(thinned)} tasks thinned ({', '.join(f'{n} at {k} level' for k, n in sorted(levels.items()))}); "
          f"mined tasks dropped: {', '.join(f'{k} {n}' for k, n in sorted(dropped.items())) or 'none'}", flush=True)  # fmt: skip
    full_tasks = {t.instance_id: t for t in load_sources([full_dir / iid for iid in thinned]).tasks}
    thin_tasks = {t.instance_id: t for t in load_sources(list(thinned.values())).tasks}
    mutants_path = out / "mutants.json"
    graded: dict[str, list[dict]] = json.loads(mutants_path.read_text()) if mutants_path.exists() else {}
    for iid in thinned:  # the oracle's side: every mutant on the full and the thinned upstream suites
        if iid in graded or args.report_only:
            continue
        made = mutant_patches(full_tasks[iid], args.mutants)
        r_full = grade_all([(iid, patch) for _, patch in made], full_tasks, args.backend, args.workers)
        r_thin = grade_all([(f"{iid}-thin", patch) for _, patch in made], thin_tasks, args.backend, args.workers)
        graded[iid] = [{"what": w, "patch": p, "full": f, "thin": t, "strengthened": None}
                       for (w, p), f, t in zip(made, r_full, r_thin, strict=True)]  # fmt: skip
        mutants_path.write_text(json.dumps(graded, indent=1))
    timing_path = out / "thin" / "evidence_timing.json"  # evidence_real's run_stages keeps it there
    if not args.report_only and not args.oracle_only and thinned:
        sys.path.insert(0, str(HERE))
        from evidence_real import run_stages

        run_stages(out / "thin", [str(p) for p in thinned.values()], args.backend, args.workers)
        swedeck(["deck", str(out / "thin"), "--out", str(out / "thin" / "deck")])
        deck = out / "thin" / "deck"
        strong = {t.instance_id: t for t in arm_tasks(deck, "strengthened")} if deck.exists() else {}
        todo = [(iid, m) for iid in thinned for m in graded.get(iid, []) if m["strengthened"] is None and (m["full"] == 1.0 or m["thin"] == 1.0)]
        rewards = grade_all([(f"{iid}-thin", m["patch"]) for iid, m in todo], strong, args.backend, args.workers)
        for (_, m), reward in zip(todo, rewards, strict=True):
            m["strengthened"] = reward
        mutants_path.write_text(json.dumps(graded, indent=1))
    report(out, thinned, graded, timing_path)


def report(out: Path, thinned: dict[str, Path], graded: dict[str, list[dict]], timing_path: Path) -> None:
    sys.path.insert(0, str(HERE))
    from evidence_real import walls_per_task

    from harness.names import file_name

    print(f"\n{'task':52} {'mut':>4} {'short':>5} {'rej':>4} {'full-pass':>9} {'rej':>4} {'conf':>4} {'verdict':12} {'strengthening':18}")
    totals = {"tasks": 0, "confirmed": 0, "shortcuts": 0, "rejected": 0, "full_pass": 0, "stricter": 0, "with_shortcut": 0}
    for iid in thinned:
        tid = f"{iid}-thin"
        counts = rows(out / "thin" / "p2" / file_name(tid) / "counts.parquet")
        verdict = rows(out / "thin" / "p2" / file_name(tid) / "verdict.parquet")
        strength = rows(out / "thin" / "strengthen" / file_name(tid) / "strengthening.parquet")
        mutants = graded.get(iid, [])
        shortcuts = [m for m in mutants if m["thin"] == 1.0 and m["full"] == 0.0]
        full_pass = [m for m in mutants if m["full"] == 1.0]
        rejected = sum(m["strengthened"] == 0.0 for m in shortcuts)
        stricter = sum(m["strengthened"] == 0.0 for m in full_pass)
        confirmed = counts[0]["confirmed"] if counts else 0
        totals["tasks"] += 1
        totals["confirmed"] += confirmed > 0
        totals["with_shortcut"] += bool(shortcuts)
        totals["shortcuts"] += len(shortcuts)
        totals["rejected"] += rejected
        totals["full_pass"] += len(full_pass)
        totals["stricter"] += stricter
        print(f"{tid:52} {len(mutants):>4} {len(shortcuts):>5} {rejected:>4} {len(full_pass):>9} {stricter:>4} {confirmed:>4} "
              f"{verdict[0]['verdict'] if verdict else '-':12} {strength[0]['status'] if strength else '-':18}")  # fmt: skip

    def frac(n: int, d: int) -> str:
        return f"{n}/{d}" + (f" ({100 * n / d:.0f}%)" if d else "")

    libraries = {iid.rsplit("-", 1)[0] for iid in thinned}
    print(f"\n{totals['tasks']} thinned tasks of {len(libraries)} libraries; {totals['with_shortcut']} with a real shortcut (a mutant "
          "passing the thinned suite and failing the full one)")
    thin_p1 = [r for iid in thinned for r in rows(out / "thin" / "p1" / file_name(f"{iid}-thin") / "result.parquet")]
    one = sum(r["decision"] == "keep" and len(r["fail_to_pass"]) == 1 for r in thin_p1)
    rejected_p1 = Counter(r["reason"] for r in thin_p1 if r["decision"] != "keep")
    print(f"Pipeline 1 on the thinned tasks: {len(thin_p1)} run, {one} kept with one FAIL_TO_PASS test, rejected: "
          f"{', '.join(f'{k} {n}' for k, n in sorted(rejected_p1.items())) or 'none'} (a rejected task's shortcuts are never graded)")
    print(f"thinned tasks confirmed too loose (survivor + distinguishing input): {frac(totals['confirmed'], totals['tasks'])}")
    print(f"real shortcuts rejected by the strengthened thinned suite:          {frac(totals['rejected'], totals['shortcuts'])}  (target: at least 60%)")
    print(f"mutants passing the full suite rejected by the strengthened one:    {frac(totals['stricter'], totals['full_pass'])}  (stricter than the maintainers)")
    timing = json.loads(timing_path.read_text()) if timing_path.exists() else {}
    wall = walls_per_task(timing)
    if wall.get("pipeline1"):
        both = wall.get("pipeline2", 0.0) + wall.get("strengthen", 0.0)
        print(f"cost per task: Pipeline 1 {wall['pipeline1']:.1f} s, Pipeline 2 + strengthening {both:.1f} s = {both / wall['pipeline1']:.1f}x (target: at most 5x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=Path, required=True, help="MIRRORS/owner+name/repo: a clone of each library")
    parser.add_argument("--out", type=Path, default=Path("runs/oracle"), help="run folder (a rerun resumes it)")
    parser.add_argument("--libraries", nargs="*", default=None, help="owner/name of each (default: oracle_libraries.toml)")
    parser.add_argument("--per-library", type=int, default=8, help="commits mined per library")
    parser.add_argument("--max-code-lines", type=int, default=60, help="library lines a mined commit may change")
    parser.add_argument("--max-tasks", type=int, default=200, help="thinned tasks at most")
    parser.add_argument("--mutants", type=int, default=24, help="mutants graded per task")
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-mining", action="store_true", help="take the tasks RUN's Pipeline 1 finished; mine and run none")
    parser.add_argument("--oracle-only", action="store_true", help="mine, thin and grade the mutants on the upstream suites; no engine stage")
    parser.add_argument("--report-only", action="store_true", help="report on RUN as it is; run nothing")
    run(parser.parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
