"""The tamper audit: code in a candidate's change that reaches into the test runner or the interpreter.

Read, never run: the changed and added Python files of the after-tree are parsed on the host (``ast``
only) and what the change added to them is checked against a list of things a fix has no business
doing, because each is a way to make the runner report something other than what the code under
test did:

- the runner's internals: importing ``_pytest``, ``pluggy`` or unittest's private modules, naming
  them in a string (``sys.modules["_pytest.python"]``), writing attributes of anything reached from
  ``pytest``/``unittest`` (``TestCase.run = ...``), defining pytest hooks (``pytest_*``) or
  unittest's ``load_tests``;
- watching or steering execution: ``sys.setprofile``/``settrace`` (and threading's), ``sys.monitoring``,
  frames (``sys._getframe``, ``inspect.currentframe``/``stack``, ``f_back``, ``f_locals``, ``tb_frame``...),
  the heap (``gc.get_objects``/``get_referrers``), ``__subclasses__`` walks;
- the process's end and signals: ``atexit``, ``os._exit``, ``os.abort``, ``faulthandler``,
  ``signal.signal``/``setitimer``/``alarm``;
- interpreter state: writes to ``builtins`` or ``__builtins__``, to ``sys`` attributes (other than the
  standard streams, ``argv`` and ``path``), to ``sys.modules``; import hooks (``sys.meta_path``,
  ``sys.path_hooks``, ``sys.path_importer_cache``), audit hooks, ``ctypes.pythonapi``, ``__code__``
  replaced;
- hiding any of the above: ``__import__``, ``importlib.import_module``/``getattr``/``setattr`` with a
  name computed at run time on a sensitive module, ``exec``/``eval``/``compile`` of anything but a
  literal.

Only what the change added counts: a line of the after-file whose text is one of the patch's added
lines for that file (the whole file when the patch does not show it), so a fix in a module that
already walks frames is not charged with them. A file the host cannot parse (newer syntax than its
own Python) is scanned line by line for the same names. A file too large to read is itself a finding.

Known false positives by design: a task whose package is itself a pytest plugin (its fix defines
hooks). ``benchmarks/tamper_audit.py`` measures the audit on every gold patch in the repository.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness.pyast import parse

MAX_FILE_BYTES = 2 * 1024 * 1024
_RUNNER_MODULES = re.compile(r"^(_pytest|pluggy|unittest\.(case|result|runner|loader|suite|main|signals))(\.|$)")
_RUNNER_ROOTS = ("unittest", "_pytest", "pytest", "pluggy")
_SENSITIVE_ROOTS = ("sys", "builtins", "gc", "inspect", "os", "importlib", "threading", "atexit", "signal", "faulthandler", "ctypes", *_RUNNER_ROOTS)
_CALLS = {
    "sys.setprofile": "installs a profile hook",
    "sys.settrace": "installs a trace hook",
    "threading.setprofile": "installs a profile hook",
    "threading.settrace": "installs a trace hook",
    "threading.setprofile_all_threads": "installs a profile hook",
    "threading.settrace_all_threads": "installs a trace hook",
    "sys.monitoring": "uses the interpreter's monitoring hooks",
    "sys._getframe": "walks frames",
    "sys._current_frames": "walks frames",
    "inspect.currentframe": "walks frames",
    "inspect.stack": "walks frames",
    "inspect.trace": "walks frames",
    "inspect.getouterframes": "walks frames",
    "inspect.getinnerframes": "walks frames",
    "traceback.walk_stack": "walks frames",
    "gc.get_objects": "walks the heap",
    "gc.get_referrers": "walks the heap",
    "gc.get_referents": "walks the heap",
    "os._exit": "ends the process without cleanup",
    "os.abort": "ends the process without cleanup",
    "signal.signal": "installs a signal handler",
    "signal.setitimer": "sets a timer signal",
    "signal.alarm": "sets a timer signal",
    "signal.pthread_kill": "sends a signal",
    "sys.meta_path": "touches import hooks",
    "sys.path_hooks": "touches import hooks",
    "sys.path_importer_cache": "touches import hooks",
    "sys.addaudithook": "installs an audit hook",
    "ctypes.pythonapi": "calls into the interpreter's C API",
    "builtins.__import__": "imports by a computed name",
}
_MODULES = {"atexit": "registers exit handlers", "faulthandler": "uses faulthandler"}
_FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "f_builtins", "f_trace", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}
_SYS_WRITABLE = {"stdout", "stderr", "stdin", "argv", "path"}
_DYNAMIC = {"exec", "eval", "compile"}
# for a file the host cannot parse
_NAMES = re.compile(
    r"\b(_pytest|pluggy|setprofile|settrace|_getframe|_current_frames|currentframe|get_objects|get_referrers|"
    r"get_referents|atexit|_exit|faulthandler|meta_path|path_hooks|__import__|__builtins__|__subclasses__|"
    r"f_back|f_locals|f_globals|tb_frame|pythonapi|runtest|exec|eval)\b"
)


_GIT_TARGET = re.compile(r"^(?:rename|copy) to (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    code: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.code}"


def added_lines(patch: str) -> dict[str, set[str]]:
    """Per file the patch writes (its path after the change, without git's ``b/``), the stripped text
    of every line it adds."""
    added: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            target = line[4:].split("\t")[0].strip()
            current = None if target == "/dev/null" else added.setdefault(target[2:] if target.startswith("b/") else target, set())
        elif line.startswith("+") and current is not None:
            current.add(line[1:].strip())
    return added


def python_paths(paths: set[str]) -> list[str]:
    """The changed files the audit reads."""
    return sorted(p for p in paths if PurePosixPath(p).suffix in (".py", ".pyw"))


def named_paths(patch: str) -> set[str]:
    """The paths a patch says it writes: its ``+++`` targets and git's rename and copy targets. Only
    a guess at what the audit will read (a quoted name, a strategy that strips differently), which
    lets the grader read those files in the same command that applies the patch."""
    named = set(added_lines(patch))
    named |= {m.group(1) for m in _GIT_TARGET.finditer(patch)}
    return named


def audit(files: dict[str, bytes | None], patch: str) -> list[Finding]:
    """Findings in the changed Python files (``None``: a file too large to read)."""
    added = added_lines(patch)
    findings = []
    for path, blob in sorted(files.items()):
        if blob is None:
            findings.append(Finding(path, 0, "too large to audit", f"over {MAX_FILE_BYTES} bytes"))
            continue
        text = blob.decode(errors="replace")
        lines = text.splitlines()
        wanted = added.get(path)
        new = {i + 1 for i, line in enumerate(lines) if wanted is None or line.strip() in wanted}
        try:
            module = parse(text, path)
        except (SyntaxError, ValueError):
            findings += [
                Finding(path, n, f"names {m.group()} (the file does not parse here)", lines[n - 1].strip()[:160])
                for n in sorted(new)
                for m in [_NAMES.search(lines[n - 1])]
                if m
            ]
            continue
        visitor = _Visitor(path, lines, sorted(new), _aliases(module))
        visitor.visit(module)
        findings += visitor.findings
    return sorted(set(findings), key=lambda f: (f.path, f.line, f.rule))


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every statement under ``node``, nested ones too, without walking into expressions (an import
    is a statement, and no expression holds one)."""
    for _, value in ast.iter_fields(node):
        for child in value if isinstance(value, list) else ():
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                yield child
                yield from _statements(child)


def _aliases(module: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as, from every import in the file."""
    names = {}
    for node in _statements(module):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


class _Visitor(ast.NodeVisitor):
    """Flags a node on the first new line (``new``, sorted) of its lines. A node holds the lines of every
    node below it (a decorated definition: its decorators' too), so a subtree none of whose lines is
    new can flag nothing and is not walked: a fix touches a few lines of a long file."""

    def __init__(self, path: str, lines: list[str], new: list[int], aliases: dict[str, str]) -> None:
        self.path, self.lines, self.new, self.aliases = path, lines, new, aliases
        self.findings: list[Finding] = []

    def _first_new(self, first: int, last: int) -> int | None:
        i = bisect.bisect_left(self.new, first)
        return self.new[i] if i < len(self.new) and self.new[i] <= last else None

    def flag(self, node: ast.AST, rule: str) -> None:
        first = node.lineno  # type: ignore[attr-defined]
        hit = self._first_new(first, getattr(node, "end_lineno", None) or first)
        if hit is not None:
            self.findings.append(Finding(self.path, hit, rule, self.lines[hit - 1].strip()[:160]))

    def generic_visit(self, node: ast.AST) -> None:
        for _, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST) and self._reaches_new(child):
                    self.visit(child)

    def _reaches_new(self, node: ast.AST) -> bool:
        first = getattr(node, "lineno", None)
        if first is None:  # arguments, comprehensions, ...: their parent's lines hold them
            return True
        first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return self._first_new(first, getattr(node, "end_lineno", None) or first) is not None

    def dotted(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else ""
        return ""

    def under(self, node: ast.expr, roots: tuple[str, ...]) -> bool:
        name = self.dotted(node)
        return bool(name) and name.split(".")[0] in roots

    # imports and names -------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._module(node, node.module)
            for alias in node.names:
                self._name(node, f"{node.module}.{alias.name}")

    def _module(self, node: ast.AST, name: str) -> None:
        if _RUNNER_MODULES.match(name):
            self.flag(node, f"imports the test runner's internals ({name})")
        elif name.split(".")[0] in _MODULES:
            self.flag(node, _MODULES[name.split(".")[0]])

    def _name(self, node: ast.AST, name: str) -> None:
        for prefix, rule in _CALLS.items():
            if name == prefix or name.startswith(prefix + "."):
                self.flag(node, f"{rule} ({prefix})")
                return
        if name.split(".")[0] in _MODULES:
            self.flag(node, f"{_MODULES[name.split('.')[0]]} ({name})")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAME_ATTRIBUTES:
            self.flag(node, f"walks frames (.{node.attr})")
        elif node.attr == "__subclasses__":
            self.flag(node, "walks the class graph (__subclasses__)")
        if isinstance(node.ctx, ast.Load):
            self._name(node, self.dotted(node))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.flag(node, "touches __builtins__")
        elif node.id == "__import__":
            self.flag(node, "imports by a computed name (__import__)")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _RUNNER_MODULES.match(node.value):
            self.flag(node, f"names the test runner's internals ({node.value!r})")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("pytest_") or node.name == "load_tests":
            self.flag(node, f"defines a test runner hook ({node.name})")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    # writes ------------------------------------------------------------------------------------

    def _target(self, target: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element)
            return
        if isinstance(target, ast.Attribute):
            owner = self.dotted(target.value)
            if target.attr == "__code__":
                self.flag(target, "replaces a function's code (__code__)")
            elif owner == "sys" and target.attr not in _SYS_WRITABLE:
                self.flag(target, f"writes interpreter state (sys.{target.attr})")
            elif owner.split(".")[0] in ("builtins", *_RUNNER_ROOTS):
                self.flag(target, f"writes {owner}.{target.attr}")
        elif isinstance(target, ast.Subscript):
            owner = self.dotted(target.value)
            if owner == "sys.modules" or owner.split(".")[0] == "builtins" or owner.startswith(("sys.meta_path", "sys.path_hooks")):
                self.flag(target, f"writes {owner}[...]")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = self.dotted(node.func)
        first = node.args[0] if node.args else None
        literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
        if func in ("setattr", "delattr") and first is not None and self.under(first, _SENSITIVE_ROOTS):
            self.flag(node, f"{func} on {self.dotted(first)}")
        elif func == "getattr" and first is not None and self.under(first, _SENSITIVE_ROOTS):
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.flag(node, f"getattr on {self.dotted(first)} with a computed name")
        elif func in _DYNAMIC and not literal:
            self.flag(node, f"{func} of a computed string")
        elif func in ("importlib.import_module", "importlib.__import__") and not literal:
            self.flag(node, f"imports by a computed name ({func})")
        elif func.startswith("sys.modules.") and func.rsplit(".", 1)[1] in ("update", "pop", "setdefault", "clear", "popitem", "__setitem__", "__delitem__"):
            self.flag(node, f"writes sys.modules ({func})")
        elif func in ("sys.modules.values", "sys.modules.items", "sys.modules.keys", "sys.modules.copy"):
            self.flag(node, f"walks the loaded modules ({func})")
        elif func == "sys.modules.get" and not literal and not _is_own_name(first):
            self.flag(node, "reads sys.modules by a computed name")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        computed = not (isinstance(key, ast.Constant) and isinstance(key.value, str)) and not _is_own_name(key)
        if isinstance(node.ctx, ast.Load) and self.dotted(node.value) == "sys.modules" and computed:
            self.flag(node, "reads sys.modules by a computed name")
        self.generic_visit(node)


def _is_own_name(node: ast.expr | None) -> bool:
    """``__name__`` or ``cls.__module__``: a module looking itself up, which is ordinary."""
    return (isinstance(node, ast.Name) and node.id == "__name__") or (isinstance(node, ast.Attribute) and node.attr == "__module__")
