"""Twins of a hidden test: the test with the expected value of its last assert drawn anew, so that
the original and its twins are exchangeable.

A test is twinned at one literal leaf of its *last* top-level statement, an equality assert against
a literal (or the text an ``in`` assert, ``assertIn``, ``assertRegex`` or ``assertRaisesRegex`` looks
for). Being the last statement matters: on any tree the original and its twins run the same code
up to it, so they fail at the same place with the same message, and at the last statement each shows
the same computed value next to its own expected one. (A twin edited earlier would fail there,
showing what the tree computed, where the original on a tree that gets that value right goes on.)

The values: a hidden root ``r`` is a few random edits from the original value ``v0``, and each twin a
few random edits from ``r``. Each edit keeps the literal's notation, length and character class at
every position (a word for a word of the file of the same length and case, a digit for a digit, a
literal of the file for one of the same pattern) and is reversible with respect to a weight ``w``,
``w(a) P(a -> b) == w(b) P(b -> a)`` (Metropolis), so the joint law of ``(v0, v1, ..., vk)`` is
``pi(v0) / w(v0) * [w(r) P(v0|r) P(v1|r)...P(vk|r)]``: symmetric in the k+1 values but for how much
likelier the original is under the law ``pi`` of real expected values than under ``w``. That ratio is
all any statistic of the values can read, so ``w`` is a model of real values (``naturalness``): how
natural a value is in its place in the planted file, by its character pairs, its words' use in the
file, a number's digits place by place. Draws whose values are not all distinct, or differ in how
often they occur elsewhere in the file or test (the original value often echoes an input of the
test), are redrawn. A redraw divides by the chance that a draw from ``v0`` succeeds, which is lower
for the commonest values (a common digit collides with its twins more often), so the model's weights
are fitted as a whole (``natural._PAIRS_NUMBER`` sharpens numbers) rather than read off the file alone. Where
the original is far more natural than anything near it (a value that is the test's own input), the
draw rarely leaves it and the test goes without twins: a reader of the file would know it.
"""

from __future__ import annotations

import ast
import bisect
import functools
import math
import operator
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from harness.pyast import literal_eval

TWINS = 3  # k: must-fail twins per real test; forging picks the real one with probability 1/(k+1)
_RUN = re.compile(r"[A-Za-z]+|[0-9]+")
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?")
_EQUALITY = {"assertEqual", "assertEquals"}
# unittest asserts whose expected text is one argument: (method, its index)
_PATTERNS = {"assertRaisesRegex": 1, "assertRaisesRegexp": 1, "assertRegex": 1, "assertRegexpMatches": 1, "assertIn": 0}
_TRIES = 128
# unittest asserts on one value (its message after it), and those that call what follows the
# exception (and the pattern): (method, where the call starts)
_TRUTH = {"assertTrue", "assertFalse", "assertIsNone", "assertIsNotNone", "assert_", "failUnless", "failIf"}
_RAISES = {"assertRaises": 1, "assertWarns": 1, "assertRaisesRegex": 2, "assertRaisesRegexp": 2, "assertWarnsRegex": 2}
INPUT_POOL = 4  # the values the trial tries for a test twinned at an input; a grade draws TWINS of those that failed
_STEPS = 3  # edits from the original to the root, and from the root to each twin
_NUMBERS = re.compile(r"(?<![\w.])[0-9]+(?:\.[0-9]+)?(?![\w.])")
_LITERALS = re.compile(r"(?<![\w.])[0-9]+(?:\.[0-9]+)?(?![\w.])|[bru]?'[^'\\\n]*'|[bru]?\"[^\"\\\n]*\"")


@dataclass(frozen=True)
class Leaf:
    """Where a test's twins differ from it: the literal's text and its character offsets in the
    test's segment."""

    text: str
    begin: int
    end: int


def leaf(test: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], start: int, rng: random.Random) -> Leaf | None:
    """One editable literal of the test's last statement when that is ``assert x == L`` or
    ``self.assertEqual(x, L)`` with L a literal; None when there is none."""
    literal = _expected(test.body[-1])
    if literal is None:
        return None
    leaves = [n for n in ast.walk(literal) if isinstance(n, ast.Constant) and _editable(n, _segment(lines, n))]
    if _looked_for(test.body[-1]) and not all(_phrase(_segment(lines, n)) for n in leaves):
        return None
    if not leaves:
        return None
    node = rng.choice(leaves)
    begin = _offset(lines, start, node.lineno, node.col_offset)
    end = _offset(lines, start, node.end_lineno or node.lineno, node.end_col_offset or 0)
    return Leaf(_segment(lines, node), begin, end)


def input_leaves(test: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], start: int, rng: random.Random) -> list[Leaf]:
    """The editable literals among the inputs of the test's last statement, in a random order, when
    it asserts no literal value (``assert f(x)``, ``assert not f(x)``, ``self.assertTrue(f(x))``,
    ``self.assertRaises(E, f, x)``, a helper's call, a ``with pytest.raises(E):`` block). Twins at
    one of them run the same code on another input, so whether one fails is a fact of the trees, not
    of the edit: the canary trial keeps only the values gold and the unfixed tree both fail
    (``checking.input_values``)."""
    last = test.body[-1]
    if _expected(last) is not None:
        return []
    nodes = [(depth, n) for root in _inputs(last) for depth, n in _constants(root) if _editable(n, _segment(lines, n))]
    rng.shuffle(nodes)
    nodes.sort(key=lambda pair: pair[0])  # stable: at random within a depth
    return [
        Leaf(_segment(lines, n), _offset(lines, start, n.lineno, n.col_offset), _offset(lines, start, n.end_lineno or n.lineno, n.end_col_offset or 0))
        for _, n in nodes
    ]


def _constants(root: ast.expr) -> list[tuple[int, ast.Constant]]:
    """The constants under ``root``, each with how many calls deep it is: the outermost calls' own
    arguments first (what the verdict is checked against: ``.endswith("x")``, ``in {...}``), not the
    keys that pick what is checked (``cfg.get("section", "option")``), which another value of makes
    the call raise rather than the assert say no."""
    found, stack = [], [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.Constant):
            found.append((depth, node))
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + (0 if not isinstance(node, ast.Call) else 2 if child is node.func else 1)))
    return found


def _inputs(statement: ast.stmt) -> list[ast.expr]:
    """What a statement that asserts no literal computes its verdict from: an assert's test (not its
    message), the value an assert method checks, the call and arguments ``assertRaises`` makes, a
    helper's arguments, a ``with`` block's last statement."""
    if isinstance(statement, ast.Assert):
        return [statement.test]
    if isinstance(statement, (ast.With, ast.AsyncWith)) and statement.body:
        return _inputs(statement.body[-1])
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return []
    call = statement.value
    keywords = [k.value for k in call.keywords if k.arg != "msg"]
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if name in _TRUTH:
        return call.args[:1]
    if name in _RAISES:
        return call.args[_RAISES[name] :] + keywords
    return [*call.args, *keywords]


def draw(text: str, k: int, rng: random.Random, vocabulary: Words, echoes: Callable[[str], int], natural: Callable[[str], float]) -> list[str] | None:
    """k literals exchangeable with ``text`` (see the module's docstring), walked by edits with
    Metropolis on ``natural`` (``log w``: ``natural.naturalness``); None when no draw of distinct values that
    ``echoes`` as often (``Echoes``: in the file without the literal) came up."""
    weigh, echoes = functools.cache(natural), functools.cache(echoes)  # echoes: a count over the whole file
    for _ in range(_TRIES):
        root = _walk(text, rng, vocabulary, weigh)
        if root is None:
            return None
        values: list[str] = []
        for _ in range(k):  # a try ends at its first twin that fails: the try that succeeds is drawn alike
            value = _walk(root, rng, vocabulary, weigh)
            if value is None or value == text or value in values or not _valid(value) or echoes(value) != echoes(text):
                break
            values.append(value)
        else:
            return values
    return None


def characters(text: str) -> tuple[Counter[str], Counter[str]]:
    return Counter(text), Counter(map(operator.add, text, text[1:]))


def _walk(text: str, rng: random.Random, vocabulary: Words, weigh: Callable[[str], float]) -> str | None:
    for _ in range(_STEPS):
        edited = _edit(text, rng, vocabulary, weigh)
        if edited is None:
            return None
        text = edited
    return text


@dataclass(frozen=True)
class Words:
    """The file's words by length and case pattern (what a word of a literal may become), its number
    and string literals by notation and character pattern (what a whole literal may become), and
    what the model of real values reads of it (``naturalness``): how often each character, pair of
    characters, word and number occurs."""

    groups: dict[tuple[int, str], list[str]]
    characters: Counter[str]
    pairs: Counter[str]
    words: Counter[str]
    numbers: Counter[str]
    digits: Counter[str]  # in the numbers


@functools.lru_cache(maxsize=32)
def vocabulary(text: str) -> Words:
    groups: dict[tuple[int, str], set[str]] = {}
    words = Counter(re.findall(r"[A-Za-z]+", text))
    for word in words:
        groups.setdefault((len(word), _case(word)), set()).add(word)
    for literal in set(_LITERALS.findall(text)):
        if _valid(literal):
            groups.setdefault((-1, pattern(literal)), set()).add(literal)
    numbers = Counter(_NUMBERS.findall(text))
    digits = Counter("".join(n * count for n, count in numbers.items()).replace(".", ""))
    return Words({key: sorted(words) for key, words in groups.items()}, *characters(text), words, numbers, digits)


def _expected(statement: ast.stmt) -> ast.expr | None:
    """The literal side of an equality assert whose other side is not a literal, or the literal text
    an ``in`` assert, ``assertIn``, ``assertRegex`` or ``assertRaisesRegex`` looks for."""
    call = statement.value if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) else None
    if call is not None and isinstance(call.func, ast.Attribute) and call.func.attr in _PATTERNS and len(call.args) > _PATTERNS[call.func.attr]:
        found = call.args[_PATTERNS[call.func.attr]]
        return found if isinstance(found, ast.Constant) and isinstance(found.value, str) else None
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.In) and isinstance(compare.left, ast.Constant) and isinstance(compare.left.value, str):
            return compare.left
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            return None
        sides = [compare.left, compare.comparators[0]]
    elif (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr in _EQUALITY
        and len(statement.value.args) >= 2
    ):
        sides = statement.value.args[:2]
    else:
        return None
    literal = [side for side in sides if _is_literal(side)]
    return literal[0] if len(literal) == 1 else None


@functools.lru_cache(maxsize=1 << 16)  # pure, and asked again for every edit
def _valid(literal: str) -> bool:
    """A literal Python reads as written (no leading zero: ``03`` is a syntax error)."""
    if literal[:1].isdigit():
        return re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]+)?", literal) is not None
    try:
        return isinstance(literal_eval(literal), (str, bytes))
    except (SyntaxError, ValueError):
        return False


def _looked_for(statement: ast.stmt) -> bool:
    """Whether the assert looks for its text inside the value (any text the value holds passes)."""
    return not (isinstance(statement, ast.Assert) and isinstance(statement.test.ops[0], ast.Eq)) and not (  # type: ignore[attr-defined]
        isinstance(statement, ast.Expr) and statement.value.func.attr in _EQUALITY  # type: ignore[attr-defined]
    )


def _phrase(text: str) -> bool:
    """Text whose twins no message holds by chance beside it: three words or numbers or more, and
    nothing a regular expression reads otherwise."""
    quoted = _quoted(text)
    return quoted is not None and len(_RUN.findall(quoted[1])) >= 3 and not re.search(r"[.^$*+?{}\[\]\\|()]", quoted[1])


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(_is_literal(v) for v in node.values)
    return False


def _editable(node: ast.Constant, text: str) -> bool:
    """Plain decimal numbers and simple one-piece strings; never booleans or None (a buggy tree
    returns the flipped value itself)."""
    if type(node.value) in (int, float):
        return _DECIMAL.fullmatch(text) is not None and (type(node.value) is float) == ("." in text)
    if type(node.value) not in (str, bytes):
        return False
    body = _quoted(text)
    return body is not None and _RUN.search(body[1]) is not None


@functools.lru_cache(maxsize=1 << 16)  # pure, and asked again for every edit
def _quoted(text: str) -> tuple[str, str, str] | None:
    """(prefix with opening quote, content, closing quote) of a plain one-line literal."""
    prefix = re.match(r"[a-zA-Z]*", text).group()  # type: ignore[union-attr]
    body = text[len(prefix) :]
    if "f" in prefix.lower() or "\\" in body or len(body) < 2 or body[:3] in ('"""', "'''") or body[0] != body[-1]:
        return None
    if body[0] in body[1:-1]:  # implicit concatenation of several literals
        return None
    return prefix + body[0], body[1:-1], body[0]


def _edit(text: str, rng: random.Random, vocabulary: Words, weigh: Callable[[str], float]) -> str | None:
    """One reversible edit of a literal's text: half the time another literal of the file with the same
    pattern (none where it has no other: the text is kept), else a digit for another, or a word for
    another of the file of the same length and case (kept where the file has fewer than three). Each
    proposal is symmetric (a uniform choice among values that propose each other), and is accepted
    with odds ``exp(weigh(b) - weigh(a))`` (Metropolis), so with ``w = exp(weigh)``, ``w(a) P(a -> b)
    == w(b) P(b -> a)``."""
    head, content, tail, runs = _parts(text)
    if not runs:
        return None
    if rng.random() < 0.5:  # another literal of the file in the same notation and pattern, or none
        same = vocabulary.groups.get((-1, pattern(text)), [])
        if len(same) < 2 or not _among(same, text):
            return text
        new = _other(same, text, rng)
        return new if _accepted(weigh(new) - weigh(text), rng) else text
    start, end = rng.choice(runs)
    word = content[start:end]
    if word.isdigit():
        at = rng.randrange(len(word))
        # a number's leading digit stays non-zero (a string's digits are free)
        digits = "123456789" if not head and at == 0 and start == 0 and len(word) > 1 else "0123456789"
        new = word[:at] + rng.choice([d for d in digits if d != word[at]]) + word[at + 1 :]
    else:
        group = vocabulary.groups.get((len(word), _case(word)), [])
        if len(group) < 3 or not _among(group, word):
            return text
        new = _other(group, word, rng)
    edited = head + content[:start] + new + content[end:] + tail
    return edited if _accepted(weigh(edited) - weigh(text), rng) else text


@functools.lru_cache(maxsize=1 << 16)  # pure, and asked again for every edit
def _parts(text: str) -> tuple[str, str, str, tuple[tuple[int, int], ...]]:
    """A literal's text as (prefix with opening quote, content, closing quote, where the content's
    runs of letters or digits are); a number has no quotes."""
    quoted = _quoted(text) if text[:1] not in "0123456789" else None
    head, content, tail = quoted if quoted is not None else ("", text, "")
    return head, content, tail, tuple(m.span() for m in _RUN.finditer(content))


def _among(choices: list[str], item: str) -> bool:
    """Whether ``item`` is one of the sorted ``choices``."""
    at = bisect.bisect_left(choices, item)
    return at < len(choices) and choices[at] == item


def _other(choices: list[str], mine: str, rng: random.Random) -> str:
    """A uniform choice among ``choices`` other than ``mine`` (which is one of them)."""
    while (other := rng.choice(choices)) == mine:
        pass
    return other


def _accepted(log_odds: float, rng: random.Random) -> bool:
    return log_odds >= 0 or rng.random() < math.exp(log_odds)


@functools.lru_cache(maxsize=1 << 16)  # pure, and asked again for every edit
def _case(word: str) -> str:
    return "".join("U" if c.isupper() else "l" for c in word)


@functools.lru_cache(maxsize=1 << 16)  # pure, and asked again for every edit
def pattern(literal: str) -> str:
    """A literal's notation and character class at every position (what every edit keeps)."""
    return "".join("U" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else c for c in literal)


@functools.lru_cache(maxsize=32)
def echoes(text: str) -> Echoes:
    return Echoes(text)


class Echoes:
    """How often (0, 1, more) a value shows in a file without one literal of it: a number as a
    number and as digits anywhere, a string's text anywhere (one character only as a whole word).
    Counted once per file."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.numbers = Counter(_NUMBERS.findall(text))
        self.words = Counter(re.findall(r"(?<!\w)\w(?!\w)", text))

    def of(self, literal: str) -> Callable[[str], int]:
        def echoes(value: str) -> int:
            quoted, mine = _quoted(value), _quoted(literal)
            if quoted is None:  # as a number, and as digits anywhere
                return min(self.numbers[value] - (value == literal), 2) * 3 + min(self.text.count(value) - literal.count(value), 2)
            inside = mine[1].count(quoted[1]) if mine is not None else 0  # in the literal left out
            if len(quoted[1]) > 1:
                return min(self.text.count(quoted[1]) - inside, 2)
            return min(self.words[quoted[1]] - (quoted[1] == (mine[1] if mine else None)), 2)

        return echoes


def _segment(lines: list[str], node: ast.expr) -> str:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    raw = "".join(lines[first : last + 1]).encode()
    begin = node.col_offset
    stop = len("".join(lines[first:last]).encode()) + (node.end_col_offset or 0)
    return raw[begin:stop].decode()


def _offset(lines: list[str], start: int, lineno: int, col: int) -> int:
    """Character offset into the segment starting at line ``start`` of (1-based line, byte column)."""
    before = sum(len(line) for line in lines[start : lineno - 1])
    return before + len(lines[lineno - 1].encode()[:col].decode())
