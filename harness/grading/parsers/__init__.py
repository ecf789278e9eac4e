"""Turn the output of a test run into ``{test id: Status}``, and name the parser a task asks for.

Grading compares these maps with a task's expected statuses, so a parser decides what an agent is
rewarded for. Every parser reads only what the test runner itself writes and, when one id is reported
twice, keeps the worse outcome, so that text printed by the code under test can add noise but never
turn a real failure into a pass. Ids are spelled as the corpus parser of the same name spells them,
because a corpus's expected statuses were recorded with its own parser.

``PARSERS`` holds one implementation per runner output format (the modules beside this one, by
language); ``_CORPUS_NAMES`` maps every parser name the corpora use to the implementation that reads
the same output.
"""

from __future__ import annotations

from harness.grading.parsers import functional, js, jvm, native, others
from harness.grading.parsers.common import Parser, decolor, junit_in_log
from harness.grading.parsers.js import (
    parse_jest,
    parse_jest_json,
    parse_mocha_json,
    tap,
    tree_reporter,
)
from harness.grading.parsers.jvm import parse_maven
from harness.grading.parsers.native import parse_cargo, parse_gotest
from harness.grading.parsers.python import (
    parse_junit,
    parse_pytest,
    parse_pytest_names,
    parse_r2e,
    parse_sympy,
    parse_unittest,
    r2e_keys,
)

__all__ = [
    "PARSERS",
    "Parser",
    "UnsupportedParser",
    "check_parser",
    "decolor",
    "parse_cargo",
    "parse_gotest",
    "parse_jest",
    "parse_jest_json",
    "parse_junit",
    "parse_maven",
    "parse_mocha_json",
    "parse_pytest",
    "parse_r2e",
    "parse_sympy",
    "parse_unittest",
    "r2e_keys",
    "resolve_parser",
    "uses_junit",
]


class UnsupportedParser(ValueError):
    """A task names a log parser nothing here implements: it cannot be graded, whatever runs."""


PARSERS: dict[str, Parser] = {
    # Python
    "pytest": parse_pytest,
    "junit": parse_junit,
    "unittest": parse_unittest,
    "django": parse_unittest,
    "sympy": parse_sympy,
    "r2e": parse_r2e,
    "pytest_names": parse_pytest_names,
    # JavaScript: result trees keyed by title, or by describe path and title joined as named
    "tree": parse_jest,
    "tree_dash": tree_reporter(" - "),
    "tree_dot": tree_reporter("."),
    "tree_gt": tree_reporter(" > "),
    "tree_colon": tree_reporter(":"),
    "tree_space": tree_reporter(" "),
    "jest_files": js.parse_jest_files,
    "jest_json": parse_jest_json,
    "mocha_json": parse_mocha_json,
    "karma_failures": js.parse_karma_failures,
    "tap": tap(nested=False),
    "tap_nested": tap(nested=True),
    "quarto_deno": js.parse_quarto_deno,
    # Go, Rust, C, C++, Swift, C#
    "gotest": parse_gotest,
    "cargo": parse_cargo,
    "googletest": native.parse_googletest,
    "doctest": native.parse_doctest,
    "ctest": native.parse_ctest,
    "test_word": native.parse_test_word,
    "dots_result": native.parse_dots_result,
    "redis": native.parse_redis,
    "automake": native.parse_automake,
    "micropython": native.parse_micropython,
    "xctest": native.parse_xctest,
    "dotnet": native.parse_dotnet,
    # JVM
    "maven": parse_maven,
    "junit_reports": junit_in_log("{classname}::{name}"),
    "junit_text": jvm.parse_sbt_junit,
    "junit_gradle": junit_in_log("{name} ({classname})"),
    "gradle": jvm.parse_gradle,
    "ant": jvm.parse_ant,
    "scalatest": jvm.scalatest(with_suite=False),
    "scalatest_suites": jvm.scalatest(with_suite=True),
    "plus_cross": jvm.parse_plus_cross,
    "lein": jvm.parse_lein,
    # Ruby, PHP, Elixir, Haskell, Julia, R, Dart, OCaml, Lua
    "minitest": others.minitest(shoulda=False),
    "minitest_shoulda": others.minitest(shoulda=True),
    "minitest_spec": others.parse_minitest_spec_reporter,
    "test_unit": others.parse_test_unit,
    "rspec": others.parse_rspec_lines,
    "cucumber": others.parse_cucumber,
    "phpunit": others.parse_phpunit_testdox,
    "pest": others.parse_pest,
    "exunit": functional.parse_exunit,
    "haskell": functional.parse_haskell,
    "hspec": functional.parse_hspec_tree,
    "julia": others.parse_julia,
    "testthat": others.parse_testthat,
    "r_check": others.parse_r_check,
    "dart_json": others.parse_dart_json,
    "dart": others.parse_dart_expanded,
    "alcotest": functional.parse_alcotest,
    "bracket_word": functional.parse_bracket_word,
    "word_first": functional.parse_word_first,
    "dune": functional.parse_dune,
    "plenary": others.parse_plenary,
}

# Parser names as the corpora spell them: SWE-bench 5's PARSER_REGISTRY (and the functions its
# MAP_REPO_TO_PARSER maps to), SWE-rebench V2's NAME_TO_PARSER, R2E-Gym, swedeck's own short names.
# The pytest family is one entry: JUnit is the truth there, the text only a cross-check. Where a
# corpus parser reads only failures from a format that names every test (Karma's failure lines aside),
# the implementation reads them all under the same key spelling.
_CORPUS_NAMES = {
    **dict.fromkeys(
        [
            "parse_log_pytest", "parse_log_pytest_options", "parse_log_pytest_v2", "parse_log_pytest_nebo",
            "parse_log_seaborn", "parse_log_matplotlib", "parse_log_astroid", "parse_log_flask",
            "parse_log_marshmallow", "parse_log_pvlib", "parse_log_pyvista", "parse_log_sqlfluff",
            "parse_log_xarray", "parse_log_pydicom", "parse_log_requests", "parse_log_pylint",
            "parse_log_astropy", "parse_log_scikit", "parse_log_sphinx", "parse_log_pydantic", "parse_log_dvc",
        ],
        "pytest",
    ),
    "parse_log_django": "django",
    "parse_log_sympy": "sympy",
    "parse_log_r2e": "r2e",
    "parse_log_cpp": "pytest_names",
    # JavaScript
    **dict.fromkeys(["jest", "mocha", "vitest", "parse_log_jest", "parse_log_vitest", "parse_log_js",
                     "parse_log_js_2", "parse_log_js_4", "parse_log_npx", "parse_log_marked",
                     "parse_log_immutable_js"], "tree"),
    **dict.fromkeys(["parse_log_calypso", "parse_log_next", "parse_log_lighthouse"], "tree_dash"),
    "parse_log_highlightjs": "tree_dot",
    "parse_log_karma": "tree_gt",
    "parse_log_p5js": "tree_colon",
    "parse_log_eslint": "tree_space",
    **dict.fromkeys(["parse_log_react_pdf", "parse_log_carbon", "parse_log_grommet", "parse_log_emotion",
                     "parse_log_prettier", "parse_log_scratch_gui"], "jest_files"),
    "parse_log_jest_json": "jest_json",
    **dict.fromkeys(["parse_log_prismjs", "parse_log_cypress"], "mocha_json"),
    **dict.fromkeys(["parse_log_chart_js", "parse_log_bpmn_js", "parse_log_openlayers"], "karma_failures"),
    "parse_log_tap": "tap",
    "parse_log_js_3": "tap_nested",
    "parse_log_quarto_cli": "quarto_deno",
    # Go, Rust, C, C++, Swift, C#
    "parse_log_gotest": "gotest",
    "parse_log_cargo": "cargo",
    "parse_log_googletest": "googletest",
    "parse_log_doctest": "doctest",
    "parse_log_cpp_v4": "ctest",
    "parse_log_cpp_v2": "test_word",
    "parse_log_cpp_v3": "dots_result",
    "parse_log_redis": "redis",
    "parse_log_jq": "automake",
    "parse_log_micropython_test": "micropython",
    "parse_log_swift": "xctest",
    "parse_log_csharp": "dotnet",
    # JVM
    **dict.fromkeys(["parse_java_mvn", "parse_log_java_mvn", "parse_java_mvn_v2", "parse_log_java_mvn_v2",
                     "parse_log_maven", "parse_logs_kotlin_junit", "parse_log_kotlin_junit"], "maven"),
    **dict.fromkeys(["parse_combined_test_reports", "parse_logs_r_junit", "parse_log_r_junit"], "junit_reports"),
    **dict.fromkeys(["parse_log_junit", "parse_log_sbt"], "junit_text"),
    "parse_log_gradlew_v1": "junit_gradle",
    "parse_log_gradle_custom": "gradle",
    "parse_log_ant": "ant",
    "parse_log_scala": "scalatest",
    "parse_log_scala_v3": "scalatest_suites",
    "parse_log_scala_v2": "plus_cross",
    "parse_log_lein": "lein",
    # Ruby, PHP, Elixir, Haskell, Julia, R, Dart, OCaml, Lua
    "parse_log_ruby_v2": "minitest",
    **dict.fromkeys(["parse_log_minitest", "parse_log_jekyll"], "minitest_shoulda"),
    "parse_log_ruby_v1": "minitest_spec",
    "parse_log_ruby_unit": "test_unit",
    "parse_log_rspec_transformed_json": "rspec",
    "parse_log_cucumber": "cucumber",
    "parse_log_phpunit": "phpunit",
    "parse_log_php_v1": "pest",
    "parse_log_elixir": "exunit",
    "parse_log_haskell": "haskell",
    "parse_log_haskell_v2": "hspec",
    "parse_log_julia": "julia",
    "parse_log_r": "testthat",
    "parse_log_r_v2": "r_check",
    "parse_log_dart": "dart_json",
    **dict.fromkeys(["parse_log_dart_v2", "parse_log_dart_v3"], "dart"),
    "parse_log_ocaml": "alcotest",
    "parse_log_ocaml_v2": "dune",
    "parse_log_ocaml_v3": "bracket_word",
    **dict.fromkeys(["parse_log_ocaml_v4", "parse_log_ocaml_v5"], "word_first"),
    **dict.fromkeys(["parse_lue_nvim", "parse_lua_nvim", "parse_log_lua_nvim"], "plenary"),
}  # fmt: skip


def check_parser(name: str) -> str:
    """The ``PARSERS`` key for a parser or corpus name; UnsupportedParser naming the accepted ones
    otherwise. Adapters call it when a task is loaded, so the task is recorded as unsupported once
    instead of failing in every grading run."""
    key = _CORPUS_NAMES.get(name, name)
    if key not in PARSERS:
        known = ", ".join(sorted([*PARSERS, *_CORPUS_NAMES]))
        raise UnsupportedParser(
            f"log parser {name!r} is not implemented; supported: {known}"
        )
    return key


def resolve_parser(name: str) -> Parser:
    """The parser for a task's ``log_parser``, accepting the corpora's own parser names."""
    return PARSERS[check_parser(name)]


def uses_junit(name: str) -> bool:
    """Whether the runner should also ask pytest for a JUnit report, which is then preferred.

    Only for the pytest family: R2E-Gym keys must come from its text parser, and unittest has no report.
    """
    return check_parser(name) == "pytest"
