"""How a distinguishing input is written as a test: the candidate, its statements and function, and what it must not pin."""

from __future__ import annotations

import ast
import builtins
import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.pyast import literal_eval, parse
from harness.records import DistinguishingInput
from probes.special_case import find_def


MAX_FLOAT_DIGITS = 12  # significant digits past which a float is gold's arithmetic, not the contract


@dataclass(frozen=True)
class Candidate:
    """A test to try: the file it goes in, the class it goes in (None: module level), its code. With
    ``case``, ``name`` is an existing parametrized test and ``code`` a new entry of its parametrize
    list whose id is ``case``."""

    file: str
    cls: str | None
    name: str
    code: str
    source: str  # model_free or judge
    found_by: str
    cites: tuple[str, ...] = ()  # the issue sentences its assertions follow from (judge-written)
    probe_id: str = ""  # the survivor it came from (model-free)
    case: str = ""
    copied: str = ""  # the original test's checks it repeats first (anchored): the suite's, not its own
    footprint: bool = False  # from the fix's untested footprint: it need not kill a survivor, only fail on buggy
    keeps: bool = False  # what the fix keeps next to what it changes: it must pass on the buggy tree too

    @property
    def test_id(self) -> str:
        node = "::".join([self.file, *([self.cls] if self.cls else []), self.name])
        return f"{node}[{self.case}]" if self.case else node


Form = Literal["case", "function", "anchored"]


def is_unittest_class(source: str, cls: str) -> bool:
    for node in parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return any("TestCase" in ast.unparse(base) for base in node.bases)
    return False


def _imports_pytest(source: str) -> bool:
    return re.search(r"^\s*(import pytest|from pytest import)", source, re.MULTILINE) is not None


def _oneline(text: str) -> str:
    return " ".join(text.split()).replace("\\", "/")[:120]


def split_test_id(test_id: str) -> tuple[str, list[str]]:
    """(file, [class..., function]) of a pytest node id, its parametrize id left out."""
    file, _, rest = test_id.partition("::")
    return file, rest.partition("[")[0].split("::")


def model_free_body(d: DistinguishingInput, *, unittest: bool, pytest_imported: bool) -> list[str] | None:
    """Statements asserting gold's behaviour on the distinguishing input; None when it cannot be stated
    (a value without an evaluable repr, a timeout)."""
    body = list(d.setup)
    raised = d.gold.raised
    if raised in ("timeout", "not reached"):
        return None
    if raised:
        module, _, name = raised.rpartition(".")
        if module:
            body.append(f"from {module} import {name}")
        if unittest:
            return [*body, f"with self.assertRaises({name}):", textwrap.indent(d.call, "    ")]
        return [*body, *([] if pytest_imported else ["import pytest"]), f"with pytest.raises({name}):", textwrap.indent(d.call, "    ")]
    if d.call_is_statement:  # gold runs it; the other patch raised
        return [*body, d.call]
    if d.gold.value == d.other.value and d.gold.stdout != d.other.stdout:
        printed = repr(d.gold.stdout)
        check = f"self.assertEqual(printed.getvalue(), {printed})" if unittest else f"assert printed.getvalue() == {printed}"
        return [*body, "import contextlib", "import io", "with contextlib.redirect_stdout(io.StringIO()) as printed:",
                textwrap.indent(d.call, "    "), check]  # fmt: skip
    stated = ([], d.literal) if d.literal else module_repr(d.gold.value)
    if stated is None:
        return None
    imports, literal = stated
    return [*body, *imports, f"self.assertEqual({d.call}, {literal})" if unittest else f"assert {d.call} == {literal}"]


def module_repr(value: str) -> tuple[list[str], str] | None:
    """Gold's value as source with the imports it needs, where its repr did not evaluate in the test's
    namespace but names only attributes of modules (``_datetime.datetime(2020, 1, 1, tzinfo=
    _datetime.timezone.utc)`` after ``import datetime as _datetime``); None otherwise. ``value`` is the canonical
    JSON of ``probes.diff_driver.canon``: an object without state is ``[type, repr]``. A module that
    does not import fails the test on gold, which ``gold_stable`` rejects."""
    try:
        canon = json.loads(value) if value else None
    except ValueError:
        return None
    if not (isinstance(canon, list) and len(canon) == 2 and all(isinstance(x, str) for x in canon)):
        return None
    text = canon[1]
    try:
        body = parse(text).body
    except (SyntaxError, ValueError):
        return None
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return None
    names = [n for n in ast.walk(body[0]) if isinstance(n, ast.Name)]
    roots = {id(n.value) for n in ast.walk(body[0]) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    if not names or any(id(n) not in roots or not n.id.isidentifier() or n.id in _NOT_MODULES for n in names):
        return None
    for n in names:  # under a name of their own: the test may bind the module's name to something else
        n.id = f"_{n.id}"
    return [f"import {name[1:]} as {name}" for name in sorted({n.id for n in names})], ast.unparse(body[0])


_NOT_MODULES = set(dir(builtins)) | {"self", "cls"}


def function_code(name: str, body: Sequence[str], *, method: bool, why: str, fixtures: Sequence[str] = (),
                  decorators: Sequence[str] = ()) -> str:  # fmt: skip
    params = ", ".join([*(["self"] if method else []), *fixtures])
    lines = [*(f"@{d}" for d in decorators), f"def {name}({params}):", f"    # {why}"]
    lines += [textwrap.indent(statement, "    ") for statement in body]
    return "\n".join(lines) + "\n"


def own_checks(source: str, parts: Sequence[str]) -> str | None:
    """The statements of the test ``parts`` names (its docstring left out), dedented, as written."""
    try:
        fn = find_def(parse(source), parts)
    except SyntaxError:
        return None
    if fn is None:
        return None
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    if not body:
        return None
    lines = source.splitlines(keepends=True)
    return textwrap.dedent("".join(lines[body[0].lineno - 1 : fn.end_lineno])).rstrip("\n")


_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]+")
_MESSAGE_ASSERTS = {"assertRaisesRegex", "assertRaisesRegexp", "assertWarnsRegex", "assertRegex"}


def _significant_digits(x: float) -> int:
    return len(repr(abs(x)).lower().partition("e")[0].replace(".", "").strip("0"))


def implementation_details(code: str, copied: str = "") -> list[str]:
    """What an added test pins beyond the behaviour a fix's contract implies ([] when nothing): an
    exception's message (``match=``, ``assertRaisesRegex``, ``str()`` or ``.args`` of the caught
    exception), an object's address, a value of ``hash()``, ``__hash__`` or ``id()`` (semver db55f27:
    any hash of the compared parts is correct), a float written to full precision (a correct fix that computes
    it another way may differ in the last bits). Set order and hash-dependent output are left to the
    runs themselves (gold passes in several processes, each with its own hash seed). Lines of
    ``copied`` are the original test's own checks, repeated: the suite's, not the candidate's."""
    try:
        tree = parse(code)
    except SyntaxError:
        return []
    lines = code.splitlines()
    theirs = {line.strip() for line in copied.splitlines() if line.strip()}
    found: list[str] = []
    for node in ast.walk(tree):
        lineno = getattr(node, "lineno", 0)
        if 0 < lineno <= len(lines) and lines[lineno - 1].strip() in theirs:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and _significant_digits(node.value) > MAX_FLOAT_DIGITS:
            found.append(f"a float to full precision ({node.value!r})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _ADDRESS.search(node.value):
            found.append("an object's address")
        elif isinstance(node, ast.Call) and _dotted(node.func).rpartition(".")[2] in ("hash", "__hash__", "id"):
            found.append("a hash or identity value")  # per process (hash seeds) and per implementation
        elif isinstance(node, ast.Call):
            name = _dotted(node.func).rpartition(".")[2]
            caught = bool(node.args) and isinstance(node.args[0], ast.Attribute) and node.args[0].attr in ("value", "exception")
            if name in _MESSAGE_ASSERTS or (name in ("raises", "warns") and any(k.arg == "match" for k in node.keywords)) \
                    or (name in ("str", "repr") and caught):  # fmt: skip
                found.append("an exception's message")
        elif isinstance(node, ast.Attribute) and node.attr == "args" and isinstance(node.value, ast.Attribute) and node.value.attr in ("value", "exception"):
            found.append("an exception's message")
    return list(dict.fromkeys(found))


def _dotted(node: ast.expr) -> str:
    return ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""


def _imports_only(statements: Sequence[str]) -> bool:
    try:
        return all(isinstance(node, (ast.Import, ast.ImportFrom)) for line in statements for node in parse(line).body)
    except SyntaxError:
        return False


_NOT_LITERAL = object()


def _literal_source(src: str) -> object:
    try:
        return literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL
