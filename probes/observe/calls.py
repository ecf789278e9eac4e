"""Standalone calls of a target: the tests' own (observed), those written in documents, in the order tried."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.pyast import literal_eval, parse

# methods whose value is the implementation's own (equal objects' equal hashes, pickle's recipe, a size in
# bytes): a correct alternative returns another (semver-db55f27's hash, boltons-ebc7a8f's __reduce__)
ARBITRARY = {"__hash__", "__reduce__", "__reduce_ex__", "__getstate__", "__sizeof__", "__dir__"}
_CODE_BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
_DOCTEST = re.compile(r"^\s*>>> (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Call:
    """One standalone call of a target: ``func(args..., k=v...)`` after ``imports``."""

    target: str  # module:qualname
    func: str  # the callable's source (``tail``, ``Box``, ``Box.grow``)
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    imports: tuple[str, ...]
    test_id: str  # the test (or document) the seed came from
    source: str  # "observed" or "variant"
    how: str
    consume: bool = False  # the target returns an iterator: the call is ``list(...)``, so its value has a literal

    @property
    def src(self) -> str:
        call = f"{self.func}({', '.join([*self.args, *(f'{k}={v}' for k, v in self.kwargs)])})"
        return f"list({call})" if self.consume else call


def seeds_from_records(rows: Iterable[dict]) -> list[Call]:
    """The observed calls whose arguments all have evaluable source (inside ``list()`` for a target seen
    returning an iterator, even where this call raised), except calls of a method whose value is
    the implementation's own (``ARBITRARY``)."""
    rows = list(rows)
    iterating = iterators(rows)
    out = []
    for row in rows:
        if row.get("call") and row["target"].rpartition(".")[2] not in ARBITRARY:
            out.append(Call(row["target"], row["call"][: row["call"].index("(")], tuple(row["args"]),
                            tuple(sorted(row["kwargs"].items())), tuple(row["imports"]), row["test"], "observed",
                            f"called by {row['test']}", row["target"] in iterating))  # fmt: skip
    return _unique(out)


def prioritised(seeds: Sequence[Call], first: Collection[str]) -> list[Call]:
    """The FAIL_TO_PASS tests' calls first, then one call per target and test in turn, so a suite
    with thousands of calls (packaging's markers) leaves room for every test and for variations."""
    ahead = [s for s in seeds if s.test_id in first]
    rest = [s for s in seeds if s.test_id not in first]
    rounds: dict[tuple[str, str], list[Call]] = {}
    for s in rest:
        rounds.setdefault((s.target, s.test_id), []).append(s)
    queues = list(rounds.values())
    while queues:
        ahead += [q.pop(0) for q in queues]
        queues = [q for q in queues if q]
    return ahead


def iterators(rows: Iterable[Mapping]) -> set[str]:
    """The targets seen returning an iterator."""
    return {row["target"] for row in rows if isinstance(row.get("value"), list) and row["value"][:1] == ["iterator"]}


def _unique(calls: Iterable[Call]) -> list[Call]:
    seen: dict[str, Call] = {}
    for call in calls:
        seen.setdefault(call.src, call)
    return list(seen.values())


def documented_calls(texts: Mapping[str, str], watched: Sequence[dict], iterating: Collection[str] = ()) -> list[Call]:
    """Calls of a target written in the issue's code blocks, doctests or READMEs (``texts``: where -> text).
    ``watched``: one observed record per target, for its callable and imports; ``iterating``: the
    targets that return iterators."""
    by_name = {}
    for row in watched:
        qualname = row["target"].split(":")[1]
        name = qualname.rsplit(".", 1)[0] if qualname.endswith(".__init__") else qualname
        if "." not in name:
            by_name.setdefault(name, row)
    out = []
    for where, text in texts.items():
        blocks = _CODE_BLOCK.findall(text)
        # a block that does not parse whole (a REPL session, output lines) is read line by line
        snippets = _DOCTEST.findall(text) + [line for b in blocks for line in ([b] if _parses(b) else b.splitlines())]
        for snippet in snippets:
            try:
                tree = parse(snippet)
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
                row = by_name.get(name)
                if row is None or any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                    continue
                # constant arithmetic folded: a docstring's ``10**34 * 3`` is an input like any literal
                args = [folded(ast.unparse(a)) for a in node.args]
                kwargs = tuple((k.arg, folded(ast.unparse(k.value))) for k in node.keywords)
                if not all(_literal(a) is not _NO for a in [*args, *(v for _, v in kwargs)]):
                    continue
                func = row["call"][: row["call"].index("(")] if row.get("call") else name
                out.append(Call(row["target"], func, tuple(args), kwargs, tuple(row["imports"][:1]), where, "variant",
                                f"written in {where}", row["target"] in iterating))  # fmt: skip
    return _unique(out)


_NO = object()


def folded(src: str) -> str:
    """``src`` with its constant arithmetic evaluated where it is a constant expression."""
    from probes.footprint.vocabulary import fold  # here: probes.footprint's package imports this one

    return fold(src) or src


def _parses(text: str) -> bool:
    try:
        parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _literal(src: str) -> object:
    try:
        return literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NO


def slot_name(slot: str) -> str:
    return f"argument {int(slot) + 1}" if slot.isdigit() else f"{slot}="
