"""What gold's diff says about the inputs worth trying, as Hypothesis strategies: pure functions over a
patch and the changed files' text, nothing run.

The vocabulary of a fix: the string literals of its changed hunks (added and removed lines alike, a
removed literal is the rule the fix replaced), the strings those literals' regexes match, boundary
values around its numeric constants, and the parameters of its changed functions that the tests never
pass. Strategies draw an argument of the type the tests pass there from that vocabulary joined with a
few generic pieces, so Hypothesis tries the fix's own tokens in new contexts, beyond the tests' range.
"""

from __future__ import annotations

import ast
import io
import operator
import re
import tokenize
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.pyast import literal_eval, parse

MAX_LITERAL = 400  # characters: a longer literal is data (a table), whose words are still taken
MAX_STRINGS = 40
GENERIC = ("", " ", "a", "0", "1", "-", ".", "_", "/", "\n", "é", "A")
_REGEX_HINT = re.compile(r"\\[dDwWsSbB]|\(\?|\[[^\]]+\]|[+*?]\)?$|\{\d+(,\d*)?\}|\|")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{1,30}")
_HUNK_FILE = re.compile(r"^\+\+\+ b/(\S+)$")


@dataclass(frozen=True)
class Vocabulary:
    strings: tuple[str, ...] = ()
    regexes: tuple[str, ...] = ()
    numbers: tuple[int | float, ...] = ()
    raised: tuple[str, ...] = ()  # exception types gold's added lines raise
    keywords: Mapping[str, tuple[tuple[str, object], ...]] = field(default_factory=dict)  # qualname -> (param, default)
    params: Mapping[str, tuple[tuple[str, object], ...]] = field(default_factory=dict)  # qualname -> positional (param, default)


def _is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in parts or "test" in parts


def changed_lines(patch: str) -> list[tuple[str, str, str]]:
    """(path, '+' or '-', text) of every changed line of the patch's non-test Python files."""
    out: list[tuple[str, str, str]] = []
    path = ""
    for line in patch.splitlines():
        if m := _HUNK_FILE.match(line):
            path = m.group(1)
        elif line.startswith(("---", "+++", "diff ", "@@")):
            continue
        elif line[:1] in "+-" and path.endswith(".py") and not _is_test_path(path):
            out.append((path, line[0], line[1:]))
    return out


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    """The tokens of one source line, as far as it tokenizes alone (a line of a call spanning lines)."""
    out: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text.strip() + "\n").readline):
            out.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def hunk_literals(patch: str) -> list[str]:
    """The string literals of the changed lines, in order, each once; a literal longer than
    ``MAX_LITERAL`` gives its words instead."""
    out: list[str] = []
    for _, _, text in changed_lines(patch):
        for tok in _tokens(text):
            if tok.type != tokenize.STRING:
                continue
            try:
                value = literal_eval(tok.string)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            if isinstance(value, str):
                out += _WORD.findall(value)[:20] if len(value) > MAX_LITERAL else [value]
    return list(dict.fromkeys(out))


def hunk_numbers(patch: str) -> list[int | float]:
    """The numeric constants of the changed lines."""
    out: list[int | float] = []
    for _, _, text in changed_lines(patch):
        for tok in _tokens(text):
            if tok.type == tokenize.NUMBER:
                try:
                    value = literal_eval(tok.string)
                except (ValueError, SyntaxError):
                    continue
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out.append(value)
    return list(dict.fromkeys(out))


def boundaries(numbers: Iterable[int | float]) -> list[int | float]:
    """Each constant, its neighbours on both sides and its negation; 0 and 1 always."""
    out: list[int | float] = [0, 1, -1]
    for n in numbers:
        step = 1 if isinstance(n, int) else max(abs(n) * 1e-9, 1e-12)
        out += [n - step, n, n + step, -n]
    return list(dict.fromkeys(out))


def regexes(literals: Iterable[str]) -> list[str]:
    """The literals that read as regular expressions (a class, a quantifier, an escape) and compile."""
    out = []
    for text in literals:
        if not _REGEX_HINT.search(text):
            continue
        try:
            with warnings.catch_warnings():  # a literal that merely looks like a pattern ("[[") warns
                warnings.simplefilter("ignore")
                re.compile(text)
        except (re.error, RecursionError, OverflowError):
            continue
        out.append(text)
    return out


def raised_types(patch: str) -> list[str]:
    """The exception types an added line raises (``raise ValueError(...)``)."""
    found = [m.group(1) for _, sign, text in changed_lines(patch) if sign == "+" for m in re.finditer(r"\braise\s+([\w.]+)", text)]
    return list(dict.fromkeys(name.rpartition(".")[2] for name in found))


def _functions(tree: ast.Module) -> Iterable[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


_NO = object()


def _named_functions(source: str, qualnames: Iterable[str]) -> Iterable[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The functions of ``source`` named in ``qualnames`` (none where it does not parse)."""
    wanted = set(qualnames)
    try:
        tree = parse(source)
    except SyntaxError:
        return
    yield from ((name, node) for name, node in _functions(tree) if name in wanted)


def _literal(node: ast.expr, otherwise: object) -> object:
    try:
        return literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return otherwise


def keyword_defaults(source: str, qualnames: Iterable[str]) -> dict[str, tuple[tuple[str, object], ...]]:
    """For each function named, its parameters that take a literal default, with that default: the
    keyword arguments a call may pass (``maxsplit=``, ``strict=``)."""
    out: dict[str, tuple[tuple[str, object], ...]] = {}
    for name, node in _named_functions(source, qualnames):
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        pairs = list(zip([a.arg for a in positional][len(positional) - len(args.defaults) :], args.defaults))
        pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        out[name] = tuple((param, value) for param, default in pairs if (value := _literal(default, _NO)) is not _NO)
    return out


REQUIRED = "<required>"  # a positional parameter without a default


def positional_params(source: str, qualnames: Iterable[str]) -> dict[str, tuple[tuple[str, object], ...]]:
    """For each function named, its positional parameters in order, each with its literal default
    (``REQUIRED`` where it has none or a default that is not a literal)."""
    out: dict[str, tuple[tuple[str, object], ...]] = {}
    for name, node in _named_functions(source, qualnames):
        positional = [*node.args.posonlyargs, *node.args.args]
        defaults = [REQUIRED] * (len(positional) - len(node.args.defaults)) + [_literal(d, REQUIRED) for d in node.args.defaults]
        out[name] = tuple((a.arg, d) for a, d in zip(positional, defaults))
    return out


def spelled(qualname: str, args: Sequence[str], kwargs: Sequence[tuple[str, str]],
            params: Mapping[str, tuple[tuple[str, object], ...]]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None:  # fmt: skip
    """A call's arguments as a test would write them: the required ones by position, the others by
    keyword, and none left at its default (the observation records every parameter a frame holds);
    None where the signature is not known or does not fit."""
    sig = params.get(qualname)
    if sig is None:
        return None
    if qualname.endswith(".__init__"):
        sig = sig[1:]  # the instance is not an argument of the class call
    if len(args) > len(sig):
        return None
    positional, named = [], []
    for (param, default), src in zip(sig, args):
        if default is REQUIRED:
            if named:
                return None
            positional.append(src)
        elif not _equals(src, default):
            named.append((param, src))
    named += [(k, v) for k, v in kwargs if not _equals(v, dict(sig).get(k, _NO))]
    return tuple(positional), tuple(named)


def _equals(src: str, default: object) -> bool:
    if default is _NO or default is REQUIRED:
        return False
    try:
        value = literal_eval(src)
        return type(value) is type(default) and value == default
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def vocabulary(patch: str, changed_sources: Mapping[str, str] = {}, qualnames: Sequence[str] = (),  # noqa: B006 - read only
               stated: Sequence[object] = ()) -> Vocabulary:  # fmt: skip
    """The vocabulary of gold's patch; ``changed_sources``: gold's text of the changed files, read for the
    keyword parameters of the functions ``qualnames`` names; ``stated``: values the issue states (its
    code spans and blocks, its upper-case tokens and numbers), tried beside the diff's own."""
    literals = list(dict.fromkeys([*hunk_literals(patch), *(v for v in stated if isinstance(v, str))]))
    keywords: dict[str, tuple[tuple[str, object], ...]] = {}
    params: dict[str, tuple[tuple[str, object], ...]] = {}
    for text in changed_sources.values():
        keywords |= {k: v for k, v in keyword_defaults(text, qualnames).items() if v}
        params |= positional_params(text, qualnames)
    return Vocabulary(strings=tuple(literals[:MAX_STRINGS]), regexes=tuple(regexes(literals)), numbers=tuple(boundaries([*hunk_numbers(patch), *(v for v in stated if isinstance(v, (int, float)) and not isinstance(v, bool))])),
                      raised=tuple(raised_types(patch)), keywords=keywords, params=params)  # fmt: skip


# ============================================================================================ strategies


def shape(text: str) -> str:
    """A string's shape: each letter, digit and other character by its class (``KWD`` and ``JPY`` alike)."""
    return re.sub(r"[A-Z]", "A", re.sub(r"[a-z]", "a", re.sub(r"[0-9]", "0", text)))


def text_strategy(vocab: Vocabulary, seen: Sequence[str] = ()):  # noqa: ANN201 - a hypothesis SearchStrategy
    """Strings: the first seen string (the tests' own input) with one token edited to a piece, or
    replaced by a piece of its shape, a few pieces (the diff's literals, the issue's values, the tests'
    own strings, generic ones) joined, or a string one of the diff's regexes matches."""
    from hypothesis import strategies as st

    pieces = list(dict.fromkeys([*vocab.strings, *seen, *GENERIC]))
    matched = []
    for rx in vocab.regexes[:6]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                matched.append(st.from_regex(rx, fullmatch=True))
        except Exception:  # noqa: BLE001 - a pattern Hypothesis cannot draw from (a look-behind, a back-reference)
            continue
    piece = st.one_of(st.sampled_from(pieces), *matched)
    options = [edit_strategy(seen[0], piece)] if seen else []
    # a vocabulary value of the input's own shape in its place ('JPY' -> 'KWD', an issue's currency)
    alike = [p for p in pieces if seen and p != seen[0] and shape(p) == shape(seen[0])]
    options += [st.sampled_from(alike)] if alike else []
    options.append(st.lists(piece, min_size=1, max_size=4).map("".join))
    return st.one_of(*options)


_TOKEN = re.compile(r"\d+|[A-Za-z]+|\s+|.", re.DOTALL)


def edit_strategy(value: str, pieces):  # noqa: ANN001, ANN201
    """``value`` with one of its tokens (a run of digits, of letters, one other character) replaced by
    a piece, a piece inserted before it, or the token left out, or one character changed: the tests'
    own input in the shape they give it, with gold's vocabulary in one place."""
    from hypothesis import strategies as st

    tokens = _TOKEN.findall(value)
    if not tokens:
        return pieces

    def edit(at: int, how: str, piece: str) -> str:
        new = {"replace": [piece], "insert": [piece, tokens[at]], "delete": []}[how]
        return "".join([*tokens[:at], *new, *tokens[at + 1 :]])

    def swap(at: int, char: str) -> str:
        return value[:at] + char + value[at + 1 :]

    # one character changed too: inside a word, where a rule reads a letter (an ending, a prefix), by
    # one of its own class (a capital by a capital, a digit by a digit): what a correct fix other than
    # gold must agree with gold on is the tests' kind of input, and 'iOSS' of 'BOSS' or 'G9ass' of
    # 'Glass' is another kind, on which such a fix may answer otherwise
    chars = sorted({c for c in value if c.isalnum()} | set("aeiouxyzAEIOUXYZ09"))
    swaps = [(at, c) for at, old in enumerate(value) if old.isalnum() for c in chars if c != old and shape(c) == shape(old)]
    options = [st.builds(edit, st.integers(0, len(tokens) - 1), st.sampled_from(["replace", "insert", "delete"]), pieces)]
    options += [st.sampled_from(swaps).map(lambda s: swap(*s))] if swaps else []
    return st.one_of(*options)


CLASSES = ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789")


def end_swaps(value: str) -> list[tuple[str, str]]:
    """``value`` with its last, then its first character replaced by every other of its class, in
    turn, each with which end it is: where a rule reads an ending or a prefix, the whole alphabet at
    the boundary, which a few random draws leave mostly unseen (a fix that takes one letter too many
    is told from gold only by that letter)."""
    out: list[tuple[str, str]] = []
    for at in dict.fromkeys([len(value) - 1, 0]) if value else ():
        letters = next((c for c in CLASSES if value[at] in c), "")
        end = "last" if at == len(value) - 1 else "first"
        out += [(value[:at] + c + value[at + 1 :], end) for c in letters if c != value[at]]
    return out


MAX_SWEPT_NUMBERS = 24


def number_sweep(value: int, vocab: Vocabulary) -> list[int]:
    """Every integer boundary of the diff's constants and of ``value`` itself, in order (but ``value``):
    where a guard compares, the value on each side of it, which a few random draws may miss (``n <= 0``
    for gold's ``n < 0`` is told from it only at 0)."""
    near = boundaries([*(n for n in vocab.numbers if isinstance(n, int) and not isinstance(n, bool)), value, value - 1, value + 1])
    return sorted({int(n) for n in near if isinstance(n, int) and n != value})[:MAX_SWEPT_NUMBERS]


def number_strategy(vocab: Vocabulary, seen: Sequence[int | float], kind: type):  # noqa: ANN201
    """Numbers of ``kind``: boundaries of the diff's constants and of the tests' own values, and values
    beyond the tests' range (powers of ten past their largest)."""
    from hypothesis import strategies as st

    top = max([abs(v) for v in seen] or [1])
    far = [10 ** k for k in range(len(str(int(top))), len(str(int(top))) + 3)]
    near = [x for x in boundaries([*vocab.numbers, *seen]) if isinstance(x, int) or kind is float]
    values = [kind(v) for v in [*near, *far, *(-f for f in far)]]
    base = st.integers() if kind is int else st.floats(allow_nan=False, allow_infinity=False)
    return st.one_of(st.sampled_from(list(dict.fromkeys(values))), base)


def strategy_for(value: object, vocab: Vocabulary, seen: Sequence[object] = ()):  # noqa: ANN201
    """A strategy for an argument the tests pass as ``value`` (None: a type not drawn here)."""
    from hypothesis import strategies as st

    same = [v for v in seen if type(v) is type(value)]
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, (int, float)):
        return number_strategy(vocab, [*same, value], type(value))  # type: ignore[list-item]
    if isinstance(value, str):
        return text_strategy(vocab, [value, *same])
    if isinstance(value, bytes):
        return text_strategy(vocab, [value.decode("latin-1")]).map(lambda s: s.encode("utf-8"))
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return st.lists(text_strategy(vocab, list(value)), max_size=4).map(type(value))
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return st.lists(number_strategy(vocab, list(value), int), max_size=5).map(type(value))
    return None


def keyword_strategy(default: object, vocab: Vocabulary):  # noqa: ANN201
    """Values for a keyword parameter the tests never pass, by the type of its default."""
    from hypothesis import strategies as st

    if default is None:
        return st.one_of(st.sampled_from([0, 1, -1, True, False]), text_strategy(vocab))
    if isinstance(default, bool):
        return st.just(not default)
    return strategy_for(default, vocab)


# ============================================================================================ constant folding


MAX_FOLDED = 10_000  # digits or items: ``10**10**10`` is no input
MAX_BITS = 40_000
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor}  # fmt: skip
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


class _TooBig(Exception):
    pass


def _bits(value: object) -> int:
    if isinstance(value, int):
        return value.bit_length()
    return len(value) if isinstance(value, (str, bytes, tuple, list)) else 0


def _eval(node: ast.expr) -> object:
    """A constant expression's value, each step checked for size before it is computed."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_eval(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and (right > 4096 or _bits(left) * max(right, 0) > MAX_BITS):
            raise _TooBig
        if isinstance(node.op, ast.LShift) and isinstance(right, int) and right > MAX_BITS:
            raise _TooBig
        if isinstance(node.op, ast.Mult) and any(isinstance(x, int) and x > MAX_FOLDED for x in (left, right)) \
                and any(isinstance(x, (str, bytes, tuple, list)) for x in (left, right)):  # fmt: skip
            raise _TooBig
        value = _BINARY[type(node.op)](left, right)
        if _bits(value) > MAX_BITS:
            raise _TooBig
        return value
    raise _TooBig


def fold(src: str) -> str | None:
    """``src`` with its constant arithmetic evaluated (``10**34 * 3`` -> ``30000...``), as source; None
    when it is not a constant expression (or too big to be an input)."""
    try:
        tree = parse(src, mode="eval")
        value = _eval(tree.body)  # type: ignore[attr-defined]
    except (SyntaxError, ValueError, _TooBig, ArithmeticError, TypeError, RecursionError):
        return None
    text = repr(value)
    return text if len(text) <= MAX_FOLDED else None
