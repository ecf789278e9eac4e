"""Tests for harness.agent.turns: the three-layer raw-turn check on realistic Qwen3.5 turns."""

from __future__ import annotations

import random

import pytest

from harness.agent.turns import DEFAULT_TOOLS, EOS, check_turn, render_call, render_turn

REASONING = (
    "The traceback shows `KeyError: 'tz'` raised from `parse_timestamp` in src/timeutil/parse.py.\n"
    "The offset branch reads `match['tz']` but the regex names the group `offset`. Let me look at the\n"
    "function first, then fix the group name and rerun tests/test_parse.py."
)
HEAD = f"{REASONING}\n</think>\n\n"

GREP_CALL = (
    "<tool_call>\n<function=execute_bash>\n<parameter=command>\n"
    "grep -n \"match\\['tz'\\]\" src/timeutil/parse.py\n"
    "</parameter>\n</function>\n</tool_call>"
)

OLD_BLOCK = (
    "        if match['tz']:\n"
    "            offset = int(match['tz'][:3]) * 3600\n"
    "\tif legacy:  # tab kept as written\n"
)
NEW_BLOCK = (
    "        if match['offset']:\n"
    "            offset = int(match['offset'][:3]) * 3600\n"
    "\tif legacy:  # tab kept as written\n"
)


def turn(after_think: str, head: str = HEAD) -> str:
    return head + after_think + EOS


def edit_call(path: str, old: str, new: str) -> str:
    return render_call("edit_via_str_replace", {"path": path, "old_str": old, "new_str": new})


def assert_rejected(raw: str, error_class: str, **kw) -> None:
    result = check_turn(raw, **kw)
    assert not result.ok, result
    assert result.error_class == error_class, result.message
    assert result.name is None and result.arguments is None
    assert error_class in result.message


# ------------------------------------------------------------------------------------------ valid turns


def test_valid_bash_call_with_content():
    raw = turn("Let me find the line that reads the wrong group.\n\n" + GREP_CALL)
    result = check_turn(raw)
    assert result.ok and result.error_class is None
    assert result.name == "execute_bash"
    assert result.arguments == {"command": "grep -n \"match\\['tz'\\]\" src/timeutil/parse.py"}
    assert result.content == "Let me find the line that reads the wrong group."
    assert result.reasoning == REASONING


def test_valid_call_without_content():
    result = check_turn(turn(GREP_CALL))
    assert result.ok and result.content == ""


def test_indented_str_replace_passes_untouched():
    raw = turn("Fix the group name.\n\n" + edit_call("/repo/src/timeutil/parse.py", OLD_BLOCK, NEW_BLOCK))
    result = check_turn(raw)
    assert result.ok, result.message
    # Leading indentation, tabs and the trailing newline of the block survive exactly.
    assert result.arguments == {"path": "/repo/src/timeutil/parse.py", "old_str": OLD_BLOCK, "new_str": NEW_BLOCK}


def test_heredoc_command_passes_untouched():
    command = (
        "cat > /tmp/repro.py <<'EOF'\n"
        "from timeutil.parse import parse_timestamp\n"
        "\n"
        "    # indented comment stays\n"
        "print(parse_timestamp('2024-01-01T00:00:00+02:00'))\n"
        "EOF\n"
        "python /tmp/repro.py 2>&1 | tail -n 5"
    )
    result = check_turn(turn(render_call("execute_bash", {"command": command})))
    assert result.ok, result.message
    assert result.arguments == {"command": command}


def test_values_with_angle_brackets_and_xmlish_text_pass():
    command = (
        "python - <<'EOF'\n"
        "import re\n"
        "assert 1 < 2 > 0\n"
        "print('<parameter name=\"x\"> <function> </param> <tool_call_id> </functions>')\n"
        "EOF\n"
        "grep -c '<div class=\"tz\">' templates/index.html > /tmp/n"
    )
    result = check_turn(turn(render_call("execute_bash", {"command": command})))
    assert result.ok, result.message
    assert result.arguments["command"] == command


def test_empty_optional_parameter_passes():
    tools = {**DEFAULT_TOOLS, "execute_bash": (("command",), ("timeout",))}
    raw = turn(render_call("execute_bash", {"command": "python -m pytest tests/test_parse.py -x -q", "timeout": ""}))
    result = check_turn(raw, tools)
    assert result.ok, result.message
    assert result.arguments == {"command": "python -m pytest tests/test_parse.py -x -q", "timeout": ""}
    # Without the optional key in the tool set the same turn is an unknown parameter.
    assert check_turn(raw).error_class == "unknown_parameter"


def test_empty_optional_degenerate_frame_reads_as_empty():
    tools = {**DEFAULT_TOOLS, "execute_bash": (("command",), ("timeout",))}
    raw = turn(
        "<tool_call>\n<function=execute_bash>\n<parameter=command>\nls src\n</parameter>\n"
        "<parameter=timeout>\n</parameter>\n</function>\n</tool_call>"
    )
    result = check_turn(raw, tools)
    assert result.ok and result.arguments == {"command": "ls src", "timeout": ""}


def test_submit_action():
    raw = turn("All tests in tests/test_parse.py pass now; submitting.\n\n" + render_call("submit", {}))
    result = check_turn(raw)
    assert result.ok and result.name == "submit" and result.arguments == {}


def test_thinking_off_turn():
    raw = render_call("execute_bash", {"command": "git diff"}) + EOS
    result = check_turn(raw, thinking=False)
    assert result.ok and result.reasoning is None


def test_extra_newlines_around_value_are_kept():
    raw = turn(render_call("execute_bash", {"command": "\n  ls -la\n"}))
    assert check_turn(raw).arguments == {"command": "\n  ls -la\n"}


# ------------------------------------------------------------------------------- malformed turns (L1)


def test_no_tool_call():
    raw = turn("The fix is to rename the regex group from `tz` to `offset` in parse.py.")
    assert_rejected(raw, "no_tool_call")


def test_truncated_turn_mid_value():
    # max_tokens hit inside the command: public parsers would run the partial `rm`.
    raw = HEAD + "<tool_call>\n<function=execute_bash>\n<parameter=command>\nrm -rf build/ && python -m pyt"
    assert_rejected(raw, "truncated_turn")


def test_truncated_by_finish_reason():
    assert_rejected(turn(GREP_CALL), "truncated_turn", finish_reason="length")


def test_call_inside_reasoning():
    raw = (
        "I need to see where parse_timestamp reads the tz group.\n" + GREP_CALL + EOS
    )
    assert_rejected(raw, "call_in_reasoning")


def test_call_inside_reasoning_before_think_close():
    raw = "Check the group name.\n" + GREP_CALL + "\n</think>\n\n" + GREP_CALL + EOS
    assert_rejected(raw, "call_in_reasoning")


def test_doubled_think_close():
    raw = turn("Actually, also check the tests.\n</think>\n\n" + GREP_CALL)
    assert_rejected(raw, "extra_think_tag")


def test_unclosed_reasoning():
    raw = "The regex group is named offset, so the lookup of tz must fail." + EOS
    assert_rejected(raw, "unclosed_reasoning")


# ------------------------------------------------------------------------------- malformed turns (L2)


def test_unclosed_envelope():
    raw = turn(GREP_CALL.removesuffix("\n</tool_call>"))
    assert_rejected(raw, "unclosed_envelope")


def test_text_after_call():
    raw = turn(GREP_CALL + "\n\nAfter this I will patch the regex and rerun the tests.")
    assert_rejected(raw, "text_after_call")


def test_two_calls_in_one_turn():
    second = render_call("execute_bash", {"command": "python -m pytest tests/test_parse.py -q"})
    assert_rejected(turn(GREP_CALL + "\n" + second), "multiple_calls")


def test_two_functions_in_one_envelope():
    raw = turn(
        "<tool_call>\n<function=execute_bash>\n<parameter=command>\ngit status\n</parameter>\n</function>\n"
        "<function=execute_bash>\n<parameter=command>\ngit stash\n</parameter>\n</function>\n</tool_call>"
    )
    assert_rejected(raw, "multiple_calls")


def test_nested_envelope_opener():
    assert_rejected(turn("<tool_call>\n" + GREP_CALL), "nested_envelope")


def test_json_call_inside_envelope():
    raw = turn(
        '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "pytest tests/test_parse.py -x"}}\n</tool_call>'
    )
    assert_rejected(raw, "json_style_call")


def test_json_call_instead_of_envelope():
    raw = turn('Running the failing test.\n\n{"name": "execute_bash", "arguments": {"command": "pytest -x"}}')
    assert_rejected(raw, "json_style_call")


def test_bare_function_block():
    raw = turn(
        "<function=execute_bash>\n<parameter=command>\nsed -n 40,60p src/timeutil/parse.py\n"
        "</parameter>\n</function>"
    )
    assert_rejected(raw, "bare_function_block")


def test_content_without_blank_line_before_call():
    assert_rejected(turn("Let me grep.\n" + GREP_CALL), "malformed_separator")


# ------------------------------------------------------------------------------- malformed turns (L3)


def test_missing_function_close():
    raw = turn(GREP_CALL.replace("</function>\n", ""))
    assert_rejected(raw, "missing_function_close")


def test_missing_parameter_close():
    raw = turn(GREP_CALL.replace("</parameter>\n", ""))
    assert_rejected(raw, "missing_parameter_close")


def test_missing_parameter_close_before_next_parameter():
    raw = turn(
        edit_call("/repo/src/timeutil/parse.py", OLD_BLOCK, NEW_BLOCK).replace(
            "/repo/src/timeutil/parse.py\n</parameter>\n", "/repo/src/timeutil/parse.py\n", 1
        )
    )
    assert_rejected(raw, "missing_parameter_close")


def test_duplicated_destructive_command_returns_neither_value():
    raw = turn(
        "<tool_call>\n<function=execute_bash>\n"
        "<parameter=command>\nls build/\n</parameter>\n"
        "<parameter=command>\nrm -rf / --no-preserve-root\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    result = check_turn(raw)
    assert not result.ok and result.error_class == "duplicated_parameter"
    assert result.arguments is None and result.name is None
    dumped = result.model_dump_json()
    assert "rm -rf" not in dumped and "ls build/" not in dumped


def test_unknown_function():
    raw = turn(render_call("run_shell", {"command": "pytest tests/test_parse.py"}))
    assert_rejected(raw, "unknown_function")


def test_unknown_parameter():
    raw = turn(render_call("execute_bash", {"cmd": "pytest tests/test_parse.py"}))
    assert_rejected(raw, "unknown_parameter")


def test_missing_required_parameter():
    raw = turn(render_call("edit_via_str_replace", {"path": "/repo/src/timeutil/parse.py", "old_str": OLD_BLOCK}))
    assert_rejected(raw, "missing_required_parameter")


def test_function_without_parameters():
    assert_rejected(turn(render_call("execute_bash", {})), "missing_required_parameter")


def test_empty_required_parameter():
    raw = turn("<tool_call>\n<function=execute_bash>\n<parameter=command>\n</parameter>\n</function>\n</tool_call>")
    assert_rejected(raw, "empty_required_parameter")
    assert_rejected(turn(render_call("execute_bash", {"command": ""})), "empty_required_parameter")


def test_literal_parameter_close_inside_value():
    # A public parser cuts the command at the literal tag and runs `echo '` ... a different command.
    command = "printf '%s\\n' '</parameter>' >> docs/format.md && git diff --stat"
    assert_rejected(turn(render_call("execute_bash", {"command": command})), "literal_tag_in_value")


def test_literal_parameter_close_on_its_own_line():
    old = "FORMAT = '''\n</parameter>\n'''\n"
    raw = turn(edit_call("/repo/src/fmt.py", old, "FORMAT = END_TAG\n"))
    assert_rejected(raw, "literal_tag_in_value")


def test_literal_function_close_inside_value():
    new = "    END = '</function>'\n    return END\n"
    raw = turn(edit_call("/repo/src/fmt.py", "    return None\n", new))
    assert_rejected(raw, "literal_tag_in_value")


def test_parameter_outside_function():
    raw = turn(
        "<tool_call>\n<function=execute_bash>\n</function>\n"
        "<parameter=command>\npytest -x\n</parameter>\n</tool_call>"
    )
    assert_rejected(raw, "parameter_outside_function")


def test_parameter_before_function():
    raw = turn(
        "<tool_call>\n<parameter=command>\npytest -x\n</parameter>\n"
        "<function=execute_bash>\n</function>\n</tool_call>"
    )
    assert_rejected(raw, "parameter_outside_function")


def test_function_tag_missing_gt():
    raw = turn(GREP_CALL.replace("<function=execute_bash>", "<function=execute_bash"))
    assert_rejected(raw, "malformed_tag")


def test_whole_call_on_one_line():
    raw = turn(
        "<tool_call>\n<function=execute_bash>\n<parameter=command>pytest -x</parameter>\n</function>\n</tool_call>"
    )
    assert_rejected(raw, "noncanonical_layout")


def test_capitalised_tags():
    raw = turn(GREP_CALL.replace("<parameter=command>", "<Parameter=command>").replace("</parameter>", "</Parameter>"))
    assert_rejected(raw, "malformed_tag")


def test_text_between_parameters():
    raw = turn(
        edit_call("/repo/src/timeutil/parse.py", OLD_BLOCK, NEW_BLOCK).replace(
            "</parameter>\n<parameter=old_str>", "</parameter>\nnow the old block:\n<parameter=old_str>"
        )
    )
    assert_rejected(raw, "stray_text_in_envelope")


# ---------------------------------------------------------------------------------------- round trip

_ALPHABET = "abcXYZ019 _-./'\"$|&;(){}[]<>=#\\\t\n"


def _random_value(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 40)))


def _roundtrip(reasoning: str, content: str, name: str, args: dict[str, str]) -> None:
    raw = render_turn(reasoning, content, name, args)
    result = check_turn(raw)
    assert result.ok, (result.message, raw)
    assert result.name == name
    assert result.arguments == args
    assert result.reasoning == reasoning


def _fill(tool: str, values: list[str]) -> dict[str, str]:
    required, _ = DEFAULT_TOOLS[tool]
    # Required values must be non-empty.
    return {key: (value or "x") for key, value in zip(required, values)}


def test_roundtrip_seeded():
    rng = random.Random(20240501)
    for _ in range(500):
        tool = rng.choice(sorted(DEFAULT_TOOLS))
        args = _fill(tool, [_random_value(rng) for _ in range(3)])
        _roundtrip("Checking the failing test.", rng.choice(["", "Next step."]), tool, args)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is optional
    st = None

if st is not None:
    _RESERVED_FREE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60).filter(
        lambda s: not any(t in s for t in ("<tool_call>", "</tool_call>", "<function=", "</function>",
                                           "<parameter=", "</parameter>", "<think>", "</think>", EOS))
    )

    @settings(max_examples=300, deadline=None)
    @given(tool=st.sampled_from(sorted(DEFAULT_TOOLS)), values=st.lists(_RESERVED_FREE, min_size=3, max_size=3))
    def test_roundtrip_hypothesis(tool: str, values: list[str]) -> None:
        _roundtrip("Checking the failing test.", "", tool, _fill(tool, values))

else:  # pragma: no cover

    @pytest.mark.skip(reason="hypothesis not installed; the seeded loop covers the round trip")
    def test_roundtrip_hypothesis() -> None:
        pass


def test_mutated_turns_never_raise_and_accepted_ones_are_canonical():
    """Soundness: whatever the check accepts re-renders to exactly the raw text (nothing repaired)."""
    base = turn("Fix the group name.\n\n" + edit_call("/repo/src/timeutil/parse.py", OLD_BLOCK, NEW_BLOCK))
    pieces = ["<tool_call>", "</tool_call>", "<function=execute_bash>", "</function>", "<parameter=command>",
              "</parameter>", "<parameter=path>", "\n", "</think>", '{"name":', " ", ">", "<"]
    rng = random.Random(7)
    accepted = 0
    for _ in range(3000):
        chars = list(base)
        for _ in range(rng.randint(1, 3)):
            j = rng.randrange(len(chars))
            op = rng.random()
            if op < 0.4:
                chars.insert(j, rng.choice(pieces))
            elif op < 0.8:
                del chars[j:j + rng.randint(1, 12)]
            else:
                chars.insert(j, chars[rng.randrange(len(chars))])
        raw = "".join(chars)
        result = check_turn(raw)
        if result.ok:
            accepted += 1
            again = render_turn(result.reasoning, result.content, result.name, result.arguments)
            assert again == raw or again == raw.replace(">\n</parameter>", ">\n\n</parameter>")
    assert accepted > 0
