"""Raw-turn check: validate one assistant turn against the Qwen3.5 (Qwen3-Coder) tool-call grammar.

The check runs on the raw sampled text, before anything is parsed into a call or executed. It works in
three layers (reference ``harness.md`` §1.4 and §2.4):

1. reasoning block: the chat template already emitted ``<think>\\n``, so the turn is
   ``REASONING "\\n</think>\\n\\n" CONTENT? CALL? "<|im_end|>"``;
2. tool-call envelope: at most one ``<tool_call>\\n ... \\n</tool_call>``, nothing after it;
3. inner tags: ``<function=NAME>\\n`` then ``<parameter=KEY>\\nVALUE\\n</parameter>\\n`` lines, then
   ``</function>``.

Turns that public parsers would silently repair (unclosed envelope, missing closers, duplicated keys,
prose after the call, ...) are rejected with a stable ``error_class``. The raw text must be decoded
with special tokens kept: a turn that does not end with ``<|im_end|>`` counts as truncated.

Grammar decisions taken here (not fixed by the template):

- Values are returned exactly as written. Only the single newline after ``<parameter=KEY>`` and the
  single newline before ``</parameter>`` are removed. The degenerate frame ``<parameter=KEY>\\n</parameter>``
  (one newline serving both sides) reads as the empty value.
- A value may contain ``<`` and ``>`` and any XML-ish text, but none of the reserved tags
  (``<tool_call>``, ``</tool_call>``, ``<function=``, ``</function>``, ``<parameter=``,
  ``</parameter>``, ``<think>``, ``</think>``, ``<|im_end|>``): a literal reserved tag makes the
  structure ambiguous between parsers, so the turn is rejected (reference §2.4 option (a)). Such
  files can still be written with a heredoc whose text builds the tag from pieces.
- "Empty" means the empty string. A whitespace-only value is kept as written.
- Free text before the call is either absent or non-blank and followed by exactly one blank line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

EOS = "<|im_end|>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
FUNC_OPEN = "<function="
FUNC_CLOSE = "</function>"
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"

#: Tags that may only appear in structural positions.
RESERVED_TAGS: tuple[str, ...] = (
    CALL_OPEN, CALL_CLOSE, FUNC_OPEN, FUNC_CLOSE, PARAM_OPEN, PARAM_CLOSE, THINK_OPEN, THINK_CLOSE, EOS,
)
_CALL_TAGS: tuple[str, ...] = (CALL_OPEN, CALL_CLOSE, FUNC_OPEN, FUNC_CLOSE, PARAM_OPEN, PARAM_CLOSE)

ToolSpec = tuple[tuple[str, ...], tuple[str, ...]]
"""(required parameter names, optional parameter names) of one tool."""

DEFAULT_TOOLS: Mapping[str, ToolSpec] = {
    "execute_bash": (("command",), ()),
    "edit_via_str_replace": (("path", "old_str", "new_str"), ()),
    # Our choice: the explicit submit action is modelled as a third function with no parameters, so a
    # submit turn goes through the same grammar and the same check as a tool call.
    "submit": ((), ()),
}

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_LOOSE_TAG_RE = re.compile(r"<\s*/?\s*(tool_call|function|parameter|think)\b", re.IGNORECASE)
_JSON_CALL_START_RE = re.compile(r'\{\s*"name"\s*:')


class TurnCheck(BaseModel):
    """Verdict on one raw assistant turn. On success ``name``/``arguments`` hold the single call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    error_class: str | None = None
    message: str
    name: str | None = None
    arguments: dict[str, str] | None = None
    content: str | None = None
    reasoning: str | None = None


class _Reject(Exception):
    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.message = message


def _fail(error_class: str, message: str) -> TurnCheck:
    return TurnCheck(ok=False, error_class=error_class, message=f"malformed turn ({error_class}): {message}")


def render_call(name: str, args: Mapping[str, str]) -> str:
    """Render one call in the canonical grammar, from ``<tool_call>`` to ``</tool_call>`` inclusive."""
    parts = [f"{CALL_OPEN}\n{FUNC_OPEN}{name}>\n"]
    for key, value in args.items():
        parts.append(f"{PARAM_OPEN}{key}>\n{value}\n{PARAM_CLOSE}\n")
    parts.append(f"{FUNC_CLOSE}\n{CALL_CLOSE}")
    return "".join(parts)


def render_turn(reasoning: str, content: str, name: str, args: Mapping[str, str]) -> str:
    """Render a whole sampled turn (after the template's ``<think>\\n``), ending with ``<|im_end|>``."""
    sep = "\n\n" if content.strip() else ""
    return f"{reasoning}\n{THINK_CLOSE}\n\n{content}{sep}{render_call(name, args)}{EOS}"


def _has_json_call(text: str) -> bool:
    """True when ``text`` holds a Hermes-style ``{"name": ..., "arguments": ...}`` object."""
    decoder = json.JSONDecoder()
    for m in _JSON_CALL_START_RE.finditer(text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            # A JSON-ish call that does not even decode is still a JSON-style call attempt.
            if '"arguments"' in text[m.start():] or '"parameters"' in text[m.start():]:
                return True
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str) and (
            "arguments" in obj or "parameters" in obj
        ):
            return True
    return False


def _inside_open_parameter(text: str, idx: int) -> bool:
    head = text[:idx]
    return head.count(PARAM_OPEN) > head.count(PARAM_CLOSE)


def _read_tag_name(text: str, p: int, prefix: str) -> tuple[str, int]:
    """Read ``prefix NAME >`` at ``p``; return (NAME, position after ``>``)."""
    q = p + len(prefix)
    line_end = text.find("\n", q)
    gt = text.find(">", q)
    if gt == -1 or (line_end != -1 and line_end < gt):
        raise _Reject("malformed_tag", f"{prefix!r} tag is not closed by '>' on its line")
    name = text[q:gt]
    if not _NAME_RE.fullmatch(name):
        raise _Reject("malformed_tag", f"bad name {name!r} in {prefix!r} tag")
    return name, gt + 1


def _unexpected(text: str, p: int, where: str) -> _Reject:
    if _LOOSE_TAG_RE.match(text, p):
        return _Reject("malformed_tag", f"misspelled or spaced tag {text[p:p + 20]!r} {where}")
    return _Reject("stray_text_in_envelope", f"unexpected text {text[p:p + 30]!r} {where}")


def _check_reasoning(body: str) -> tuple[str, str]:
    """Layer 1. Return (reasoning, rest after the separator)."""
    n_close = body.count(THINK_CLOSE)
    if n_close == 0:
        if any(tag in body for tag in _CALL_TAGS) or _has_json_call(body):
            raise _Reject("call_in_reasoning", "tool call written inside the reasoning block (no </think>)")
        raise _Reject("unclosed_reasoning", "reasoning block never closed with </think>")
    if n_close > 1 or THINK_OPEN in body:
        raise _Reject("extra_think_tag", "the turn must hold exactly one </think> and no <think>")
    idx = body.index(THINK_CLOSE)
    reasoning_raw = body[:idx]
    if any(tag in reasoning_raw for tag in _CALL_TAGS):
        raise _Reject("call_in_reasoning", "tool-call tags inside the reasoning block")
    if not reasoning_raw.endswith("\n"):
        raise _Reject("malformed_separator", "</think> must start its own line")
    after = body[idx + len(THINK_CLOSE):]
    if not after.startswith("\n\n"):
        raise _Reject("malformed_separator", "</think> must be followed by exactly one blank line")
    return reasoning_raw[:-1], after[2:]


def _check_calls(rest: str, tools: Mapping[str, ToolSpec]) -> tuple[str, str, dict[str, str]]:
    """Layers 2 and 3 on the text after the reasoning block. Return (content, name, arguments)."""
    n_open = rest.count(CALL_OPEN)
    if n_open == 0:
        if FUNC_OPEN in rest or PARAM_OPEN in rest or FUNC_CLOSE in rest or PARAM_CLOSE in rest:
            raise _Reject("bare_function_block", "function/parameter tags without a <tool_call> envelope")
        if CALL_CLOSE in rest:
            raise _Reject("malformed_envelope", "</tool_call> without <tool_call>")
        if _has_json_call(rest):
            raise _Reject("json_style_call", 'JSON {"name": ..., "arguments": ...} call instead of the XML grammar')
        raise _Reject("no_tool_call", "the turn contains no tool call")

    start = rest.index(CALL_OPEN)
    if n_open > 1:
        second = rest.index(CALL_OPEN, start + 1)
        if _inside_open_parameter(rest, second):
            raise _Reject("literal_tag_in_value", "a parameter value contains a literal <tool_call>")
        if rest.count(FUNC_OPEN) <= 1:
            raise _Reject("nested_envelope", "<tool_call> opened twice for one function")
        raise _Reject("multiple_calls", f"{n_open} tool calls in one turn; exactly one is allowed")

    content = rest[:start]
    if FUNC_OPEN in content:
        raise _Reject("multiple_calls", "a bare function block before the tool call; exactly one call is allowed")
    if CALL_CLOSE in content:
        raise _Reject("malformed_envelope", "</tool_call> before <tool_call>")
    if any(tag in content for tag in _CALL_TAGS):
        raise _Reject("bare_function_block", "function/parameter tags outside the <tool_call> envelope")
    if _has_json_call(content):
        raise _Reject("json_style_call", "a JSON-style call before the tool call")
    if content:
        if not content.strip() or not content.endswith("\n\n") or content.endswith("\n\n\n"):
            raise _Reject("malformed_separator", "text before <tool_call> must be followed by exactly one blank line")
        content = content[:-2]

    last_close = rest.rfind(CALL_CLOSE)
    if last_close < start:
        raise _Reject("unclosed_envelope", "<tool_call> is never closed by </tool_call>")
    if rest[last_close + len(CALL_CLOSE):]:
        raise _Reject("text_after_call", "text after </tool_call>; nothing may follow the call")

    # Layer 3: inner tags, read strictly from left to right.
    p = start + len(CALL_OPEN)
    if not rest.startswith("\n", p):
        raise _Reject("noncanonical_layout", "<tool_call> must be followed by a newline")
    p += 1
    if not rest.startswith(FUNC_OPEN, p):
        tail = rest[p:last_close]
        if FUNC_OPEN not in tail and tail.lstrip().startswith("{"):
            raise _Reject("json_style_call", "JSON object inside <tool_call> instead of <function=...>")
        if rest.startswith(PARAM_OPEN, p):
            raise _Reject("parameter_outside_function", "<parameter=...> before <function=...>")
        raise _unexpected(rest, p, "where <function=NAME> was expected")

    func_at = p
    if rest.count(FUNC_OPEN, func_at + 1) > 0:
        second = rest.index(FUNC_OPEN, func_at + 1)
        if _inside_open_parameter(rest, second):
            raise _Reject("literal_tag_in_value", "a parameter value contains a literal <function=")
        raise _Reject("multiple_calls", "two function blocks in one <tool_call>; exactly one call is allowed")
    name, p = _read_tag_name(rest, p, FUNC_OPEN)
    if name not in tools:
        raise _Reject("unknown_function", f"unknown function {name!r}; allowed: {sorted(tools)}")
    required, optional = tools[name]
    allowed = set(required) | set(optional)
    if not rest.startswith("\n", p):
        raise _Reject("noncanonical_layout", "<function=NAME> must be followed by a newline")
    p += 1

    body = rest[p:]
    n_po, n_pc = body.count(PARAM_OPEN), body.count(PARAM_CLOSE)
    if n_pc > n_po:
        raise _Reject(
            "literal_tag_in_value", "more </parameter> than <parameter=...>: a value holds a literal </parameter>"
        )
    if n_pc < n_po:
        raise _Reject("missing_parameter_close", "a <parameter=...> is never closed by </parameter>")
    n_fc = body.count(FUNC_CLOSE)
    if n_fc == 0:
        raise _Reject("missing_function_close", "<function=...> is never closed by </function>")
    if n_fc > 1 and _inside_open_parameter(rest, rest.index(FUNC_CLOSE, p)):
        raise _Reject("literal_tag_in_value", "a parameter value contains a literal </function>")

    args: dict[str, str] = {}
    while True:
        if rest.startswith(FUNC_CLOSE, p):
            break
        if not rest.startswith(PARAM_OPEN, p):
            if rest.startswith(CALL_CLOSE, p):
                raise _Reject("missing_function_close", "</tool_call> reached before </function>")
            raise _unexpected(rest, p, f"inside function {name!r}")
        key, p = _read_tag_name(rest, p, PARAM_OPEN)
        if key not in allowed:
            raise _Reject("unknown_parameter", f"unknown parameter {key!r} for {name!r}; allowed: {sorted(allowed)}")
        if key in args:
            # Never report either value: the whole call is void.
            raise _Reject("duplicated_parameter", f"parameter {key!r} given more than once; neither value is used")
        close = rest.find(PARAM_CLOSE, p)
        if close == -1:
            raise _Reject("missing_parameter_close", f"parameter {key!r} is never closed")
        frame = rest[p:close]
        if any(tag in frame for tag in RESERVED_TAGS):
            raise _Reject("literal_tag_in_value", f"value of {key!r} contains a reserved tag")
        if frame == "\n":
            value = ""
        elif len(frame) >= 2 and frame[0] == "\n" and frame[-1] == "\n":
            value = frame[1:-1]
        else:
            raise _Reject("noncanonical_layout", f"value of {key!r} must sit between newline-framed tags")
        args[key] = value
        p = close + len(PARAM_CLOSE)
        if not rest.startswith("\n", p):
            raise _Reject("noncanonical_layout", "</parameter> must be followed by a newline")
        p += 1

    p += len(FUNC_CLOSE)
    if p != last_close - 1 or rest[p] != "\n":
        between = rest[p:rest.find(CALL_CLOSE, p)] if rest.find(CALL_CLOSE, p) != -1 else rest[p:]
        if PARAM_OPEN in between:
            raise _Reject("parameter_outside_function", "<parameter=...> after </function>")
        if rest.startswith("\n" + CALL_CLOSE, p):
            raise _Reject("text_after_call", "text after </tool_call>; nothing may follow the call")
        if between == "":
            raise _Reject("noncanonical_layout", "</function> and </tool_call> must be on separate lines")
        raise _Reject("stray_text_in_envelope", "text between </function> and </tool_call>")

    for key in required:
        if key not in args:
            raise _Reject("missing_required_parameter", f"{name!r} needs parameter {key!r}")
    for key in required:
        if args[key] == "":
            raise _Reject("empty_required_parameter", f"required parameter {key!r} of {name!r} is empty")
    return content, name, args


def check_turn(
    raw: str,
    tools: Mapping[str, ToolSpec] = DEFAULT_TOOLS,
    *,
    thinking: bool = True,
    finish_reason: str | None = None,
) -> TurnCheck:
    """Check one raw assistant turn (the sampled text, special tokens kept, ending with ``<|im_end|>``).

    ``thinking=False`` is for prompts whose template pre-filled an empty think block: then the turn is
    content and call only. ``finish_reason="length"`` marks the turn truncated whatever its text.
    ``ok=False`` with ``error_class="no_tool_call"`` is a well-formed turn without a call; the harness
    decides what that means.
    """
    if finish_reason == "length" or not raw.endswith(EOS):
        return _fail("truncated_turn", "generation stopped before <|im_end|> (max tokens reached?)")
    body = raw[: -len(EOS)]
    if EOS in body:
        return _fail("stray_eos", "<|im_end|> inside the turn")
    try:
        if thinking:
            reasoning, rest = _check_reasoning(body)
        else:
            if THINK_OPEN in body or THINK_CLOSE in body:
                raise _Reject("extra_think_tag", "think tags in a turn whose think block was pre-filled")
            reasoning, rest = None, body
        content, name, args = _check_calls(rest, tools)
    except _Reject as exc:
        return _fail(exc.error_class, exc.message)
    return TurnCheck(
        ok=True, message=f"call {name}", name=name, arguments=args, content=content, reasoning=reasoning,
    )
