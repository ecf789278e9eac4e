"""Build the task folders in this directory from real fix commits of small public Python libraries.

    python data/real/make_real.py MIRRORS [NAME ...]

MIRRORS holds clones named ``owner+name/repo`` (any clone with the commits works); NAMEs (task folder
names) build only those. Each task's buggy tree is the fix commit's parent, bundled as ONE new commit
with that tree (``repo.bundle``: nothing after the base commit is reachable, and a bundle of one
commit stays small); the fix commit's diff is split into ``gold.patch`` (the library's Python files;
changelogs and docs are left out) and ``tests.patch`` (its tests). The issue text is ours, written
from the commit and its diff. Every library is pure Python without dependencies beyond what the base
environment has (pytest, and packaging, which pytest needs), and its tests run with plain pytest on
Python 3.11: src layouts put src/ in front of the PYTHONPATH the harness sets (which carries the
grader's own pytest plugin); ``-o addopts=`` drops coverage options of projects whose pytest
configuration asks for pytest-cov. A rebuild keeps the hand-written ``shortcut.patch`` and
``alternative.patch`` of ``benchmark.toml`` in each folder.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RealTask:
    mirror: str  # owner+name
    fix: str  # the upstream fix commit
    test_cmd: str
    issue: str

    @property
    def name(self) -> str:
        owner, repo = self.mirror.split("+")
        return f"{owner}__{repo}-{self.fix[:7]}"


MORE_ITERTOOLS = [
    RealTask(
        "more-itertools+more-itertools",
        "d64a7d6971bfd31c5719d02f0001e58de85683d1",
        "python -m pytest tests/test_recipes.py::TailTests",
        "`tail` with a negative size quietly returns a wrong result for sized iterables\n\n"
        "`list(more_itertools.tail(-1, 'ABCDEFG'))` does not fail: it returns part of the input. A\n"
        "negative size makes no sense and should raise `ValueError`, as it already does for iterables\n"
        "without a length.\n",
    ),
    RealTask(
        "more-itertools+more-itertools",
        "0e6acdf9b60765ecf9634d6f5c132ac1bebc616b",
        "python -m pytest tests/test_more.py::ChunkedTests",
        "`chunked` with a negative `n` leaks islice's error message\n"
        "\n"
        "`list(more_itertools.chunked('ABCDE', -1))` raises `ValueError: Stop argument for islice() must be\n"
        "None or an integer: 0 <= x <= sys.maxsize.`, which says nothing about `chunked`. A negative `n`\n"
        "should raise `ValueError('n must be at least 0')`, as `sliced` and `tail` do. `n=None` (one chunk)\n"
        "and `n=0` (no chunks: an empty iterator) keep their current behaviour.\n",
    ),
    RealTask(
        "more-itertools+more-itertools",
        "958990e22c4ab6daf434d89cf2b86d7a4a7a9e3c",
        "python -m pytest tests/test_more.py::SlicedTests",
        "`sliced` with a negative size returns a wrong result\n"
        "\n"
        "`list(more_itertools.sliced('ABCDEFG', -1))` returns `['ABCDEF']` instead of failing, and with\n"
        "`strict=True` it raises the misleading \"seq is not divisible by n\". A negative `n` should raise\n"
        "`ValueError` (in both modes). `n=0` keeps returning an empty iterator, and positive sizes are\n"
        "unchanged.\n",
    ),
    RealTask(
        "more-itertools+more-itertools",
        "edb3346f835ca917efbfda5e2d6664ab952da369",
        "python -m pytest tests/test_more.py::NumericRangeTests",
        "`reversed()` of an empty `numeric_range` raises IndexError\n"
        "\n"
        "`list(reversed(more_itertools.numeric_range(0)))` raises `IndexError: numeric range object index out\n"
        "of range` instead of returning `[]`. Reversing any empty range (`numeric_range(0)`,\n"
        "`numeric_range(5, 0)`, `numeric_range(0, 5, -1)`) must give an empty iterator, like `reversed(range(5, 0))`.\n",
    ),
    RealTask(
        "more-itertools+more-itertools",
        "f51a53bfd2fe9504063a33ef5f4a73e30d82d0e2",
        "python -m pytest tests/test_more.py::InterleaveEvenlyTests",
        "`interleave_evenly([])` raises IndexError\n"
        "\n"
        "`list(more_itertools.interleave_evenly([]))` (and with `lengths=[]`) raises `IndexError` instead of\n"
        "returning an empty list. With no iterables there is nothing to interleave: the result must be empty.\n",
    ),
]

BOLTONS = [
    RealTask(
        "mahmoud+boltons",
        "766b5547392fe8d54c1e000098499dc556bb5cb7",
        "python -m pytest tests/test_strutils.py",
        "`bytes2human` does not roll over at exact powers of 1024\n\n"
        "`boltons.strutils.bytes2human(1024)` returns `'1024B'` instead of `'1K'`, and `1048576` gives\n"
        "`'1024K'` instead of `'1M'`. A value exactly at a unit boundary should be shown in the larger\n"
        "unit; values below a boundary, in between, and negative ones should print as they do now.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "1f37cce42f8d3146342ccbd45492d3b3d9c52698",
        "python -m pytest tests/test_timeutils.py",
        "`isoparse` reads fractional seconds as microseconds\n"
        "\n"
        "`boltons.timeutils.isoparse('1970-01-01T00:00:00.851')` gives 851 microseconds instead of 851000,\n"
        "so `isoparse(dt.isoformat(timespec='milliseconds'))` does not round-trip. The fraction is a decimal\n"
        "fraction of a second: `.851` is 851000 µs, `.051` is 51000 µs, `.000001` is 1 µs, and digits past\n"
        "microsecond precision (`.123456789`) are truncated to `123456` instead of raising.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "4aa77cddb5d06def130df6f09aefab4018fa487c",
        "python -m pytest tests/test_iterutils.py",
        "`split(..., maxsplit=0)` wraps the source instead of returning its values\n"
        "\n"
        "`boltons.iterutils.split([1, None, 2], maxsplit=0)` returns `[[[1, None, 2]]]`, and with an\n"
        "iterator the single chunk is the iterator object itself. `split_iter` documents that it yields\n"
        "lists of non-separator values; with `maxsplit=0` nothing is split, so the result must be one chunk:\n"
        "a new list of all the source's values, `[[1, None, 2]]`, whatever the iterable (list, tuple,\n"
        "string, iterator).\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "8c3fc2850693eacd2f2f8c95e7581adbb65b1269",
        "python -m pytest tests/test_strutils.py",
        "`pluralize` adds a bare \"s\" to words ending in \"x\"\n"
        "\n"
        "`boltons.strutils.pluralize('box')` returns `'boxs'` (likewise `'foxs'`, `'taxs'`, `'indexs'`,\n"
        "`'lynxs'`). Every word ending in \"x\" should take \"-es\" like words ending in \"s\", \"ch\" or \"sh\"\n"
        "(`'boxes'`, `'indexes'`, `'lynxes'`), keeping the case pattern of the input; irregular words such as\n"
        "\"ox\" keep their irregular plural.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "c1c25da365cf14878cf5317147e7a09b5d124df5",
        "python -m pytest tests/test_mathutils.py",
        "`Bits(4, 2)` is accepted and gives a 3-bit value\n"
        "\n"
        "`boltons.mathutils.Bits(4, 2)` builds an object whose `as_bin()` is `'100'` although its declared\n"
        "length is 2. The largest value that fits in `len_` bits is `2 ** len_ - 1`; a value that needs more\n"
        "bits than `len_` (including exactly `2 ** len_`, and `Bits(1, 0)`) must raise `ValueError`. Values\n"
        "that fit, such as `Bits(3, 2)`, keep working.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "ec1ff9f6728f5f857402b294c218be731c62af5f",
        "python -m pytest tests/test_setutils.py",
        "`_ComplementSet` comparisons raise AttributeError\n"
        "\n"
        "Comparing two complement sets with `<=` (`complement('ab') <= complement('a')`) raises\n"
        "`AttributeError: 'set' object has no attribute 'issupserset'`, and so does `>=` between two\n"
        "`_ComplementSet`s that hold included values (e.g. built with `complement(complement('ab'))`).\n"
        "`<=` and `>=` should work for every pair of complement sets and included sets, with the usual\n"
        "subset/superset meaning (`comp(X) <= comp(Y)` iff Y is a subset of X).\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "435774ef8b10c1355bf77483a837945034011754",
        "python -m pytest tests/test_strutils.py",
        "`MultiReplace` with an empty substitution map raises KeyError\n"
        "\n"
        "`boltons.strutils.MultiReplace({}).sub('foo bar')` raises `KeyError: None`, and so do\n"
        "`MultiReplace([])` and `multi_replace('foo bar', {})`. With nothing to substitute, `sub` must return\n"
        "its input unchanged, for any text (the empty string included) and any flags.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "25e8d6b18ecba58d358c8f46a5cea554f99bdfb2",
        "python -m pytest tests/test_listutils.py",
        "`BarrelList.insert` before the start raises IndexError\n"
        "\n"
        "`bl = BarrelList(range(100000)); bl.insert(-10**9, 'start')` raises `IndexError`, while\n"
        "`list.insert` puts the item first for any index before the start. `BarrelList.insert` should match\n"
        "`list`: the item becomes `bl[0]` and the length grows by one.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "ebc7a8f776debfa33f0b380b57a444bca75a251b",
        "python -m pytest tests/test_dictutils.py",
        "`copy.copy` and `copy.deepcopy` of an `OrderedMultiDict` keep one value per key\n"
        "\n"
        "`copy.deepcopy(OMD([('a', 1), ('a', 2)]))` gives an OMD whose `getlist('a')` is `[2]`, so the copy\n"
        "is not equal to the original (likewise `copy.copy`). Both must keep every value of every key in\n"
        "order, and a deep copy must not share mutable values with the original.\n",
    ),
    RealTask(
        "mahmoud+boltons",
        "1e61524a798ea73632029a013a7686036d5c126f",
        "python -m pytest tests/test_strutils.py",
        "`singularize` strips the final \"s\" of words ending in \"ss\"\n"
        "\n"
        "`boltons.strutils.singularize('glass')` returns `'glas'` (likewise `'bos'`, `'kis'`, `'addres'`).\n"
        "A word ending in a double \"s\" is already singular and must be returned unchanged, keeping its case\n"
        "(`'Glass'`, `'BOSS'`); plurals ending in \"sses\" keep singularizing to \"ss\" (`'glasses'` -> `'glass'`),\n"
        "so `singularize(singularize('Glasses')) == 'Glass'`.\n",
    ),
]

TOMLI = [
    RealTask(
        "hukkin+tomli",
        "4e245a4bbbefed99e550e196095ea65c851cf31d",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_error.py",
        "`tomli.loads` raises AttributeError for bytes and other non-str input\n\n"
        "`tomli.loads(b\"v = 1\")` fails with `AttributeError: 'bytes' object has no attribute ...`\n"
        "(and `tomli.loads(False)` likewise), which says nothing useful. It should raise `TypeError`\n"
        "with the message `Expected str object, not 'bytes'` (the type's qualified name in quotes).\n",
    ),
]

SEMVER = [
    RealTask(
        "python-semver+python-semver",
        "0309c63ce834b7d35aa3e29b8d5bb0357532b016",
        "python -m pytest -o addopts= test_semver.py",
        "`VersionInfo` accepts negative version numbers\n"
        "\n"
        "`semver.VersionInfo(major=-1)` and `VersionInfo(1, \"-2\", 3)` build versions, although semver.org\n"
        "says major, minor and patch are non-negative integers. Constructing a `VersionInfo` with a negative\n"
        "major, minor or patch (given as an int or as a string that converts to one) should raise\n"
        "`ValueError` with the message `'<part>' is negative. A version can only be positive.`\n",
    ),
    RealTask(
        "python-semver+python-semver",
        "b5317af9a7e99e6a86df98320e73be72d5adf0de",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest -o addopts= tests/test_match.py",
        "`Version.match` rejects a bare version without an operator\n"
        "\n"
        "`semver.Version.parse(\"4.0.4\").match(\"4.0.4\")` raises `ValueError: match_expr parameter should be in\n"
        "format <op><ver>`. A match expression without an operator should mean equality: `match(\"4.0.4\")`\n"
        "is `True` exactly when the version equals 4.0.4 (so `Version.parse(\"2.3.7\").match(\"2.3.6\")` is\n"
        "`False`). Expressions with an operator, empty ones and bare operators behave as before.\n",
    ),
    RealTask(
        "python-semver+python-semver",
        "db55f27cb7c313507e6d46add8c18e5d3f797b13",
        "python -m pytest -o addopts= test_semver.py",
        "Equal versions have different hashes\n"
        "\n"
        "`parse_version_info(\"1.2.3-alpha.1.2+build.11.e0f985a\") == parse_version_info(\"1.2.3-alpha.1.2+build.22.a589f0e\")`\n"
        "is `True` (build metadata does not take part in comparison), but their hashes differ, so a dict or\n"
        "set treats them as two keys. Versions that compare equal must have equal hashes.\n",
    ),
]

PARSE = [
    RealTask(
        "r1chardj0n3s+parse",
        "9c9ec7fe886c195a369446ec5f2a57930b627f8a",
        "python -m pytest -o addopts= tests/test_parse.py",
        "Field names with a hyphen are not recognised\n"
        "\n"
        "`parse.search(\"/local/sub/{user-id}/duration\", \"https://x.com/local/sub/1647222638/duration\")`\n"
        "returns `None`: `{user-id}` is not taken as a field, because a field name may only hold word\n"
        "characters. Hyphens should be allowed in field names (also in dotted parts), and the value read back\n"
        "under the name as written: `result[\"user-id\"] == \"1647222638\"`. A template that mixes `{user-id}`,\n"
        "`{user_id}` and `{user.id}` must keep the three fields apart.\n",
    ),
    RealTask(
        "r1chardj0n3s+parse",
        "b1d2121902a0d3a2e3a58758d24dad1ead9a3c61",
        "python -m pytest -o addopts= tests/test_parse.py",
        "`%f` in a datetime format only matches exactly six digits\n"
        "\n"
        "`parse.parse(\"{dt:%Y-%m-%d %H:%M:%S.%f}\", \"2023-11-21 13:23:27.123\")` returns `None`: the `%f`\n"
        "directive only accepts six fractional digits. Like `datetime.strptime`, it should accept one to six\n"
        "digits (`.1234` is 123400 µs, `.0` is 0). A fraction longer than six digits is not a `%f` value: the\n"
        "pattern must not match it (parse returns `None`), never raise.\n",
    ),
    RealTask(
        "r1chardj0n3s+parse",
        "421c19919fbca4c61ec20c2f8292d19d93eecbc8",
        "python -m pytest -o addopts= test_parse.py",
        "An alignment with a width the value exceeds makes the field fail to match\n"
        "\n"
        "`parse.parse(\"{:^2S}\", \"foo\")` and `parse.parse(\"{:<2S}\", \"foo\")` return `None` (and `search` finds\n"
        "nothing), because centred and left-aligned fields require at least one fill character after the\n"
        "value. The fill after the value is optional: these must give `'foo'`, and `\"{:<},{:<}\"` on\n"
        "`\"12 ,34 \"` keeps giving `'12'` and `'34'`.\n",
    ),
    RealTask(
        "r1chardj0n3s+parse",
        "0477aa58673cd957c19d377e029347ce72c08b1b",
        "python -m pytest -o addopts= test_parse.py",
        "A sign option in a number format is rejected\n"
        "\n"
        "`parse.parse('Pi = {:+.7f}', 'Pi = 3.1415926')` raises `ValueError` for the format spec, although\n"
        "`'{:+.7f}'` is a valid format string. The sign options `+`, `-` and ` ` say how a number is\n"
        "formatted, not what is matched: a format with a sign must parse exactly as the same format without\n"
        "it (here `3.1415926`).\n",
    ),
]

MARKUPSAFE = [
    RealTask(
        "pallets+markupsafe",
        "0b6bee071fbd8d3171fb1ac4fb669baace808438",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_markupsafe.py",
        "`striptags` leaves double spaces where a comment was removed\n"
        "\n"
        "`Markup(\"Foo <!-- c -->\\n Bar\").striptags()` returns `'Foo  Bar'`: whitespace is collapsed before the\n"
        "comments and tags are removed, so the spaces on both sides of a removed comment or tag remain.\n"
        "Whitespace runs must be collapsed to a single space in the final text.\n",
    ),
    RealTask(
        "pallets+markupsafe",
        "391aa07d3c68d4d0888b31fdea62516df9e19cb8",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_markupsafe.py",
        "`Markup.format_map` does not escape its values\n"
        "\n"
        "`Markup(\"<em>{value}</em>\").format_map({\"value\": \"<value>\"})` returns `'<em><value></em>'`: `Markup`\n"
        "overrides `format` to escape the arguments but not `format_map`, which falls through to `str`. It\n"
        "should escape like `format` does and return `Markup`, while keeping `str.format_map`'s meaning:\n"
        "names are looked up in the given mapping itself (not a copy), so a `dict` subclass with\n"
        "`__missing__` or any other mapping type works as with `str.format_map`.\n",
    ),
    RealTask(
        "pallets+markupsafe",
        "3d809aed7b7b6af5c371bab68666857087335af9",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_markupsafe.py",
        "`Markup % value` ignores a value that has no placeholder\n"
        "\n"
        "`Markup(\"<em></em>\") % \"foo\"` returns `Markup('<em></em>')` where `\"<em></em>\" % \"foo\"` raises\n"
        "`TypeError: not all arguments converted during string formatting`. `%` on `Markup` should raise the\n"
        "same `TypeError` as on `str` whenever a single non-mapping argument (a string, a number, `None`, any\n"
        "object that is not a mapping) or a tuple has more values than placeholders; mappings keep working\n"
        "for `%(name)s` placeholders.\n",
    ),
    RealTask(
        "pallets+markupsafe",
        "e49d257126d09937b1bf5e2b2173238df729fb13",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_markupsafe.py",
        "`striptags` leaves comments and tags that span several lines\n"
        "\n"
        "`Markup(\"<!-- a\\nb -->x<meta content='a\\nb'>\").striptags()` keeps the comment and the tag in its\n"
        "result: neither pattern matches across a newline. Comments and tags must be removed whatever\n"
        "newlines they contain, as single-line ones are.\n",
    ),
]

ISO8601 = [
    RealTask(
        "micktwomey+pyiso8601",
        "11270258bfa53f1c45a259058f3db5ac894c7259",
        "python -m pytest iso8601/test_iso8601.py",
        "A comma as decimal separator of the seconds is not accepted\n"
        "\n"
        "ISO 8601 allows a comma as the decimal sign: `iso8601.parse_date(\"1997-08-29T06:14:00,000123Z\")`\n"
        "raises `ParseError` but should give the same datetime as `\"1997-08-29T06:14:00.000123Z\"`. Dates with a\n"
        "dot keep parsing as before.\n",
    ),
    RealTask(
        "micktwomey+pyiso8601",
        "b6ca8b0740a37a344eaa372a451040d287b9f80e",
        "python -m pytest iso8601/test_iso8601.py",
        "Leading zeros of fractional seconds are dropped\n"
        "\n"
        "`iso8601.parse_date(\"1997-08-29T06:14:00.000123Z\")` returns 123000 microseconds instead of 123:\n"
        "the fraction is converted to an integer before it is scaled, which loses its leading zeros. The\n"
        "fraction must be read as a decimal fraction of a second (`.000123` is 123 µs, `.52` is 520000 µs),\n"
        "and digits past microsecond precision (`.1234567`) are truncated, not rejected.\n",
    ),
]

PACKAGING = [
    RealTask(
        "pypa+packaging",
        "07265129295b4b95b9143b50e3ce4709f31a8c49",
        "PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_markers.py",
        "Extra names inside parentheses are not normalized\n"
        "\n"
        "`str(Marker('(extra == \"Foo_Bar\" or extra == \"Baz\") and python_version >= \"3\"'))` keeps `\"Foo_Bar\"`,\n"
        "while the same comparison outside parentheses is normalized to `\"foo-bar\"` (PEP 685), so such a\n"
        "marker does not match the extra `foo-bar`. Extra values must be normalized wherever the comparison\n"
        "appears, in groups nested to any depth. A comparison of `extra` with another variable\n"
        "(`extra == os_name`) is not a literal and stays as written.\n",
    ),
]

TASKS = [*MORE_ITERTOOLS, *BOLTONS, *TOMLI, *SEMVER, *PARSE, *MARKUPSAFE, *ISO8601, *PACKAGING]


def git(args: list[str], cwd: Path) -> str:
    env = {"GIT_AUTHOR_NAME": "swedeck", "GIT_AUTHOR_EMAIL": "swedeck@localhost", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_NAME": "swedeck", "GIT_COMMITTER_EMAIL": "swedeck@localhost",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def is_test(path: str) -> bool:
    """A test module or a conftest, wherever the project keeps them (tests/, the package, the root)."""
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return name.endswith(".py") and ("tests" in parts[:-1] or name.startswith("test_") or name.endswith("_test.py") or name in ("tests.py", "conftest.py"))


GENERATED = ("gold.patch", "tests.patch", "issue.md", "task.toml", "repo.bundle")


def build(task: RealTask, mirrors: Path) -> None:
    source = mirrors / task.mirror / "repo"
    base = git(["rev-parse", f"{task.fix}^"], source).strip()
    changed = git(["diff", "--name-only", base, task.fix], source).split()
    tests = [p for p in changed if is_test(p)]
    code = [p for p in changed if p.endswith(".py") and not is_test(p)]
    folder = HERE / task.name
    folder.mkdir(exist_ok=True)
    for name in GENERATED:  # the hand-written patches of benchmark.toml stay
        (folder / name).unlink(missing_ok=True)
    (folder / "gold.patch").write_text(git(["diff", base, task.fix, "--", *code], source))
    (folder / "tests.patch").write_text(git(["diff", base, task.fix, "--", *tests], source))
    (folder / "issue.md").write_text(task.issue)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", base], cwd=source, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        git(["init", "-q", "-b", "main"], tree)
        git(["add", "-A"], tree)
        git(["commit", "-q", "--no-verify", "-m", f"{task.mirror.replace('+', '/')} at {base} (parent of {task.fix})"], tree)
        ref = git(["rev-parse", "HEAD"], tree).strip()
        git(["bundle", "create", "-q", str(folder / "repo.bundle"), "main"], tree)
    (folder / "task.toml").write_text(
        f'instance_id = "{task.name}"\nrepo = "{task.mirror.replace("+", "/")}"\ntest_cmd = ["{task.test_cmd}"]\n'
        'log_parser = "pytest"\n\n[environment]\nworkdir = "/testbed"\n\n[environment.recipe]\ninstall = []\n\n'
        f'[repo_source]\nkind = "bundle"\npath = "repo.bundle"\nref = "{ref}"\n'
    )


def main() -> None:
    wanted = set(sys.argv[2:])
    for task in TASKS:
        if not wanted or task.name in wanted:
            build(task, Path(sys.argv[1]))


if __name__ == "__main__":
    main()
