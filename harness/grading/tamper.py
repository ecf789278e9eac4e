"""The tamper audit: code in a candidate's change that reaches into the test runner or the interpreter.

A second, cheap layer behind the run-time audit hook: read, never run, on the host, before the tests
start. What the change added to the files it touched is checked against what a fix has no business
doing, each a way to make the runner report something other than what the code under test did:

- the runner's internals: importing or naming ``_pytest``, ``pluggy`` or unittest's private modules,
  writing attributes of anything reached from ``pytest``/``unittest`` (``TestCase.run = ...``),
  defining pytest hooks (``pytest_*``) or unittest's ``load_tests``;
- watching or steering execution: profile and trace hooks, ``sys.monitoring``, frames, the heap,
  ``__subclasses__`` walks; the process's end and signals; interpreter state (``builtins``, ``sys``
  attributes, ``sys.modules``, import and audit hooks, ``ctypes.pythonapi``, ``__code__``);
- code the audit cannot read: ``exec``/``eval``/``compile`` of anything but a literal (a literal, also
  one built by concatenation, an f-string of constant parts or ``bytes.decode``, is parsed and audited
  as code), names computed at run time on a sensitive module, code loaded from files (``runpy``,
  loaders, ``zipimport``), unpickling or unmarshalling anything but a constant of plain data.

Names are resolved by a flow-insensitive alias analysis over the whole module
(``harness.grading.bindings``), not by spelling: ``item = pytest.Function; item.runtest = w`` is a
write of ``pytest.Function.runtest`` as much as the plain one. Files are decoded and numbered as
Python does (``harness.grading.codefiles``), and every file the change touched is read, not only
``.py``: an archive's Python members, a pickle that calls, and any text that parses as Python are
audited too. A file the host cannot build an AST of because it nests too deep (an attribute chain of
thousands) is a finding; one in syntax newer than the host's is scanned line by line for the names.
A file too large to read is a finding.

Only what the change added counts: the lines of the after-file whose text is one of the patch's added
lines for it (the whole file when the patch does not show it, or its encoding is not UTF-8), so a fix
in a module that already walks frames is not charged with them. Known false positives by design: a
task whose package is itself a pytest plugin (its fix defines hooks). ``benchmarks/tamper_audit.py``
measures the audit on every gold patch in the repository.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass

from harness.grading import codefiles
from harness.grading.bindings import RUNNER_ROOTS as _RUNNER_ROOTS
from harness.grading.bindings import SENSITIVE_ROOTS as _SENSITIVE_ROOTS
from harness.grading.bindings import Bindings, code_of, fold
from harness.grading.codefiles import added_lines, is_python, named_paths, python_paths  # noqa: F401 - the audit's own API
from harness.pyast import parse

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_AUDIT_BYTES = 64 * 1024 * 1024  # all the files of one change
MAX_EXEC_DEPTH = 4  # literals run by literals run by exec
_RUNNER_MODULES = re.compile(r"^(_pytest|pluggy|unittest\.(case|result|runner|loader|suite|main|signals))(\.|$)")
_FRAMES, _HEAP, _LOADS = "walks frames", "walks the heap", "loads code from a file"
_CALLS = {
    **dict.fromkeys(["sys.setprofile", "threading.setprofile", "threading.setprofile_all_threads"], "installs a profile hook"),
    **dict.fromkeys(["sys.settrace", "threading.settrace", "threading.settrace_all_threads"], "installs a trace hook"),
    "sys.monitoring": "uses the interpreter's monitoring hooks",
    **dict.fromkeys(["sys._getframe", "sys._current_frames", "inspect.currentframe", "inspect.stack", "inspect.trace"], _FRAMES),
    **dict.fromkeys(["inspect.getouterframes", "inspect.getinnerframes", "traceback.walk_stack"], _FRAMES),
    **dict.fromkeys(["gc.get_objects", "gc.get_referrers", "gc.get_referents"], _HEAP),
    **dict.fromkeys(["os._exit", "os.abort"], "ends the process without cleanup"),
    "signal.signal": "installs a signal handler",
    **dict.fromkeys(["signal.setitimer", "signal.alarm"], "sets a timer signal"),
    "signal.pthread_kill": "sends a signal",
    **dict.fromkeys(["sys.meta_path", "sys.path_hooks", "sys.path_importer_cache"], "touches import hooks"),
    "sys.addaudithook": "installs an audit hook",
    "ctypes.pythonapi": "calls into the interpreter's C API",
    "builtins.__import__": "imports by a computed name",
    "runpy": "runs code from a file or module",
    "zipimport": "imports from an archive",
    **dict.fromkeys(["importlib.util.spec_from_file_location", "importlib.util.spec_from_loader", "imp.load_source", "imp.load_module"], _LOADS),
    **dict.fromkeys([f"importlib.machinery.{n}Loader" for n in ("SourceFile", "SourcelessFile", "ExtensionFile", "Source")], _LOADS),
    **dict.fromkeys(["imp.load_compiled", "imp.load_dynamic", "importlib.machinery.FileFinder"], _LOADS),
}
_MODULES = {"atexit": "registers exit handlers", "faulthandler": "uses faulthandler"}
_FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "f_builtins", "f_trace", "tb_frame", "gi_frame", "cr_frame", "ag_frame"}
_SYS_WRITABLE = {"stdout", "stderr", "stdin", "argv", "path"}
_DYNAMIC = {"exec", "eval", "compile"}
# what runs code or writes attributes through its arguments: handed on (``partial(setattr, X)``,
# ``map(exec, ...)``) it is called where no rule sees its arguments
_HIGHER = _DYNAMIC | {"setattr", "delattr", "__import__", "object.__setattr__", "object.__delattr__", "type.__setattr__"}
_UNPICKLERS = {
    *(f"{m}.{f}" for m in ("pickle", "_pickle", "dill", "cloudpickle") for f in ("load", "loads", "Unpickler")),
    "shelve.open", "marshal.load", "marshal.loads", "joblib.load", "jsonpickle.decode",
}  # fmt: skip
# for a file the host cannot parse
_NAMES = re.compile(
    r"\b(_pytest|pluggy|pytest|unittest|setprofile|settrace|_getframe|_current_frames|currentframe|get_objects|get_referrers|"
    r"get_referents|atexit|_exit|faulthandler|meta_path|path_hooks|__import__|__builtins__|__subclasses__|__dict__|"
    r"f_back|f_locals|f_globals|tb_frame|pythonapi|runtest|exec|eval|compile|setattr|getattr|globals|vars|import_module|"
    r"runpy|zipimport|pickle|marshal)\b"
)
_TOO_DEEP = ("too many nested", "too complex", "recursion")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    code: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.code}"


def audit(files: dict[str, bytes | None], patch: str) -> list[Finding]:
    """Findings in the files the change added or modified (``None``: a file too large to read)."""
    added = added_lines(patch)
    findings = []
    for path, blob in sorted(files.items()):
        if blob is None:
            findings.append(Finding(path, 0, "too large to audit", f"over {MAX_FILE_BYTES} bytes"))
        elif is_python(path):
            findings += audit_python(path, blob, added.get(path))
        else:
            findings += _audit_other(path, blob, added.get(path))
    return sorted(set(findings), key=lambda f: (f.path, f.line, f.rule))


def audit_python(path: str, blob: bytes, added: set[str] | None, *, required: bool = True) -> list[Finding]:
    """Findings in one file read as Python (``added``: the patch's added lines for it, None: all of
    it). With ``required`` False (a file that is not Python by its name) a file that does not decode
    or parse is data and has none."""
    source = codefiles.decode(blob)
    if source.error:
        return [Finding(path, 1, f"cannot be read as Python reads it: {source.error}", "")] if required else []
    lines = source.lines
    new = sorted(codefiles.new_lines(blob, source, added))
    if not new:
        return []
    try:
        module = parse(source.text, path)
        visitor = _Visitor(path, lines, new, Bindings(module))
        visitor.walk(module)
        return visitor.findings
    except (RecursionError, MemoryError):
        return [_too_deep(path, new[0], lines)]
    except (SyntaxError, ValueError) as err:
        if any(word in str(err) for word in _TOO_DEEP):
            return [_too_deep(path, new[0], lines)]
        if not required:
            return []
        return [
            Finding(path, n, f"names {m.group()} (the file does not parse here)", lines[n - 1].strip()[:160])
            for n in new
            for m in [_NAMES.search(lines[n - 1])]
            if m
        ]


def _too_deep(path: str, line: int, lines: list[str]) -> Finding:
    return Finding(path, line, "nests too deep to audit (the host cannot build its syntax tree)", lines[line - 1].strip()[:160])


def _audit_other(path: str, blob: bytes, added: set[str] | None) -> list[Finding]:
    """A file that is not Python by its name, when Python could run it all the same."""
    archive = codefiles.members(blob, MAX_FILE_BYTES)
    if archive is not None:
        code, loaded = archive
        found = [Finding(path, 0, "an archive Python can import from holds what it would load", why) for why in loaded]
        for name, data in sorted(code.items()):
            found += audit_python(f"{path}/{name}", data, None)
        return found
    calls = codefiles.pickle_calls(blob)
    found = [Finding(path, 0, "a pickle that imports and calls (loading it runs them)", ", ".join(calls)[:160])] if calls else []
    return found + audit_python(path, blob, added, required=False)


def _root(origin: str) -> str:
    return origin.split(".")[0]


class _Visitor:
    """Flags a node on the first new line (``new``, sorted) of its lines. A node holds the lines of every
    node below it (a decorated definition: its decorators' too), so a subtree none of whose lines is
    new can flag nothing and is not walked: a fix touches a few lines of a long file. The walk keeps
    its own stack (no recursion, however deep the tree). ``at``: code run by exec, whose findings all
    go to the line of the call (``depth``: how many literals deep)."""

    def __init__(self, path: str, lines: list[str], new: list[int], bindings: Bindings, at: tuple[int, str, str] | None = None, depth: int = 0) -> None:
        self.path, self.lines, self.new, self.bindings, self.at, self.depth = path, lines, new, bindings, at, depth
        self.findings: list[Finding] = []

    def walk(self, root: ast.AST) -> None:
        stack: list[tuple[ast.AST, ast.AST | None]] = [(root, None)]
        while stack:
            node, parent = stack.pop()
            inner = (isinstance(parent, ast.Attribute) and isinstance(node, ast.Attribute)) or (isinstance(parent, ast.BinOp) and isinstance(node, ast.BinOp))
            handler = getattr(self, f"visit_{type(node).__name__}", None)
            if handler is not None and not inner:  # a chain is judged once, from its top
                handler(node)
            loaded = isinstance(node, ast.Call) or isinstance(getattr(node, "ctx", None), ast.Load)
            if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and loaded and not inner and not _called_or_aliased(node, parent):
                for value in sorted(self.names(node) & _HIGHER):
                    self.flag(node, f"hands {value} on as a value")
            stack.extend((child, node) for child in ast.iter_child_nodes(node) if self._reaches_new(child))

    def _first_new(self, first: int, last: int) -> int | None:
        i = bisect.bisect_left(self.new, first)
        return self.new[i] if i < len(self.new) and self.new[i] <= last else None

    def _hit(self, node: ast.AST) -> int | None:
        first = getattr(node, "lineno", None) or 1
        return self._first_new(first, getattr(node, "end_lineno", None) or first)

    def flag(self, node: ast.AST, rule: str) -> None:
        if self.at is not None:
            line, text, func = self.at
            self.findings.append(Finding(self.path, line, f"in the code {func} runs: {rule}", text))
        elif (hit := self._hit(node)) is not None:
            self.findings.append(Finding(self.path, hit, rule, self.lines[hit - 1].strip()[:160]))

    def _reaches_new(self, node: ast.AST) -> bool:
        first = getattr(node, "lineno", None)
        if first is None or self.at is not None:  # arguments, comprehensions, ...: their parent's lines hold them
            return True
        first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return self._first_new(first, getattr(node, "end_lineno", None) or first) is not None

    def names(self, node: ast.expr | None) -> frozenset[str]:
        return self.bindings.resolve(node)

    def sensitive(self, node: ast.expr | None, roots: tuple[str, ...] = _SENSITIVE_ROOTS) -> list[str]:
        return sorted(o for o in self.names(node) if _root(o) in roots)

    # names -------------------------------------------------------------------------------------

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
        elif _root(name) in _MODULES:
            self.flag(node, _MODULES[_root(name)])
        elif _root(name) in ("runpy", "zipimport"):
            self.flag(node, f"{_CALLS[_root(name)]} ({name})")

    def _name(self, node: ast.AST, name: str) -> None:
        if _RUNNER_MODULES.match(name):
            self.flag(node, f"reaches the test runner's internals ({name})")
            return
        for prefix, rule in _CALLS.items():
            if name == prefix or name.startswith(prefix + "."):
                self.flag(node, f"{rule} ({prefix})")
                return
        if _root(name) in _MODULES:
            self.flag(node, f"{_MODULES[_root(name)]} ({name})")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain: ast.expr = node
        while isinstance(chain, ast.Attribute):
            if chain.attr in _FRAME_ATTRIBUTES:
                self.flag(chain, f"walks frames (.{chain.attr})")
            elif chain.attr == "__subclasses__":
                self.flag(chain, "walks the class graph (__subclasses__)")
            chain = chain.value
        if isinstance(node.ctx, ast.Load):
            for origin in self.names(node):
                self._name(node, origin)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.flag(node, "touches __builtins__")
        elif node.id == "__import__":
            self.flag(node, "imports by a computed name (__import__)")
        elif isinstance(node.ctx, ast.Load):
            for origin in self.names(node) - {node.id}:  # an alias: what it names
                self._name(node, origin)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _RUNNER_MODULES.match(node.value):
            self.flag(node, f"names the test runner's internals ({node.value!r})")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        text = fold(node)
        if isinstance(text, str) and _RUNNER_MODULES.match(text):
            self.flag(node, f"names the test runner's internals ({text!r})")

    visit_JoinedStr = visit_BinOp  # type: ignore[assignment]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name.startswith("pytest_") or node.name == "load_tests":
            self.flag(node, f"defines a test runner hook ({node.name})")

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    # writes ------------------------------------------------------------------------------------

    def _target(self, target: ast.expr) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element)
        elif isinstance(target, ast.Starred):
            self._target(target.value)
        elif isinstance(target, ast.Attribute):
            if target.attr == "__code__":
                self.flag(target, "replaces a function's code (__code__)")
            for owner in sorted(self.names(target.value)):
                if owner == "sys" and target.attr not in _SYS_WRITABLE:
                    self.flag(target, f"writes interpreter state (sys.{target.attr})")
                elif _root(owner) in ("builtins", *_RUNNER_ROOTS):
                    self.flag(target, f"writes {owner}.{target.attr}")
        elif isinstance(target, ast.Subscript):
            for owner in sorted(self.names(target.value)):
                if owner == "sys.modules" or _root(owner) == "builtins" or owner.startswith(("sys.meta_path", "sys.path_hooks")):
                    self.flag(target, f"writes {owner}[...]")
                elif owner.endswith(".__dict__") and _root(owner) in _SENSITIVE_ROOTS:
                    self.flag(target, f"writes {owner}[...]")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target)

    def visit_AugAssign(self, node: ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor | ast.comprehension) -> None:
        self._target(node.target)

    visit_AnnAssign = visit_For = visit_AsyncFor = visit_comprehension = visit_AugAssign  # type: ignore[assignment]

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._target(node.optional_vars)

    def visit_Call(self, node: ast.Call) -> None:
        first = node.args[0] if node.args else None
        for func in sorted(self.names(node.func)):
            last = func.rsplit(".", 1)[-1]
            if owners := self._written(func, first):
                for owner in owners:
                    self.flag(node, f"{last} on {owner}")
            elif func == "getattr" and first is not None:
                name = fold(node.args[1]) if len(node.args) > 1 else None
                if not isinstance(name, str) and self.sensitive(first):
                    self.flag(node, f"getattr on {self.sensitive(first)[0]} with a computed name")
                elif isinstance(name, str) and name in _FRAME_ATTRIBUTES:
                    self.flag(node, f"walks frames (.{name})")
            elif func in _DYNAMIC:
                self._dynamic(node, func)
            elif func in ("importlib.import_module", "importlib.__import__") and not isinstance(fold(first), str):
                self.flag(node, f"imports by a computed name ({func})")
            elif func in _UNPICKLERS:
                self._unpickle(node, func)
            elif func.startswith("sys.modules.") and last in ("update", "pop", "setdefault", "clear", "popitem", "__setitem__", "__delitem__"):
                self.flag(node, f"writes sys.modules ({func})")
            elif func in ("sys.modules.values", "sys.modules.items", "sys.modules.keys", "sys.modules.copy"):
                self.flag(node, f"walks the loaded modules ({func})")
            elif func == "sys.modules.get" and not isinstance(fold(first), str) and not _is_own_name(first):
                self.flag(node, "reads sys.modules by a computed name")
            elif last == "patch" and isinstance(target := fold(first), str) and _root(target) in (*_RUNNER_ROOTS, "builtins", "sys"):
                self.flag(node, f"patches {target}")
        for origin in self.names(node):  # what the call returns: getattr(sys, "settrace"), import_module("_pytest.x")
            self._name(node, origin)

    def _written(self, func: str, first: ast.expr | None) -> list[str]:
        """What a call writes attributes of: setattr's first argument and its look-alikes
        (``object.__setattr__``, ``monkeypatch.setattr``, ``mock.patch.object``), or the object whose
        own ``__setattr__`` it is."""
        last = func.rsplit(".", 1)[-1]
        if func in ("setattr", "delattr") or func.endswith((".setattr", ".delattr", "patch.object")):
            return self.sensitive(first)
        if last in ("__setattr__", "__delattr__"):
            owner = func.rsplit(".", 1)[0]
            return self.sensitive(first) if owner in ("object", "type") else [owner] if _root(owner) in _SENSITIVE_ROOTS else []
        return []

    def _dynamic(self, node: ast.Call, func: str) -> None:
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Call) and "compile" in self.names(first.func) and fold(first.args[0] if first.args else None) is not None:
            return  # exec(compile(literal, ...)): the inner call is audited itself
        if fold(first) is None:
            self.flag(node, f"{func} of a computed string")
            return
        code = code_of(first)
        if code is None:
            self.flag(node, f"{func} of a literal that does not parse here")
        elif self.depth >= MAX_EXEC_DEPTH:
            self.flag(node, f"{func} of literals nested over {MAX_EXEC_DEPTH} deep")
        else:
            at = self.at or ((hit := self._hit(node) or 1), self.lines[hit - 1].strip()[:160], func)
            inner = _Visitor(self.path, [], [], self.bindings, at, self.depth + 1)
            inner.walk(code)
            self.findings += inner.findings

    def _unpickle(self, node: ast.Call, func: str) -> None:
        data = fold(node.args[0] if node.args else None)
        if data is None:
            self.flag(node, f"loads data computed at run time with {func} (loading calls what the data names)")
        elif func.startswith("marshal."):
            self.flag(node, f"loads marshalled code ({func})")
        elif calls := codefiles.pickle_calls(data if isinstance(data, bytes) else data.encode("latin-1", "replace")):
            self.flag(node, f"loads a pickle that imports and calls ({', '.join(calls)[:80]})")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        computed = not isinstance(fold(key), str) and not _is_own_name(key)
        if isinstance(node.ctx, ast.Load) and "sys.modules" in self.names(node.value) and computed:
            self.flag(node, "reads sys.modules by a computed name")
        if isinstance(node.ctx, ast.Load):
            for origin in self.names(node):
                self._name(node, origin)


def _called_or_aliased(node: ast.expr, parent: ast.AST | None) -> bool:
    """Called where it stands, or bound to a name (which the alias analysis follows to its calls)."""
    if isinstance(parent, ast.Call):
        return node is parent.func
    return isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node is parent.value


def _is_own_name(node: ast.expr | None) -> bool:
    """``__name__`` or ``cls.__module__``: a module looking itself up, which is ordinary."""
    return (isinstance(node, ast.Name) and node.id == "__name__") or (isinstance(node, ast.Attribute) and node.attr == "__module__")
