"""The semantic rows of one sidecar wave, and the assembly of their answers into a :class:`Hint`.

The prompts are the adapter's training format, byte for byte (see ``docs/sidecar.md``):

* one **function-index** row — "Which tool should be called? Respond with only the index number."
* one **argument-value-or-null** row per (function, parameter) of every offered tool;
* a **direct-call** row, used as a training auxiliary only.

All rows share one system message and start with the same dialogue text, so a backend can
compute that shared prefix once. The ``tools-first`` layout (:data:`PromptLayout`) puts one
tool listing before the dialogue instead, so every request on the same tools, and every turn
of one conversation, starts with the same text too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ooo_agent._json import reject_duplicate_keys
from ooo_agent.offered import ToolLike, offer
from ooo_agent.sidecar.base import Hint, clean_hint_value

__all__ = [
    "PROMPT_LAYOUTS",
    "SIDECAR_SYSTEM",
    "PromptLayout",
    "SemanticRow",
    "assemble_hint",
    "build_wave_rows",
    "direct_call_prompt",
    "direct_call_start",
    "function_index_prompt",
    "label_rows",
    "parse_function_index",
    "parse_slot_value",
    "render_dialogue",
    "tool_signatures",
]

SIDECAR_SYSTEM = "You are a helpful assistant. Answer the user's request using the available tools."

RowKind = Literal["function_index", "argument_value", "direct_call"]

PromptLayout = Literal["dialogue-first", "tools-first"]
"""Where a row's prompt puts the conversation. ``dialogue-first``: the dialogue, then the
row's own listing (tools, or tool parameters), then its question — the published format, what
the shipped adapters read. ``tools-first``: one listing of the tools (``[0] name(p1, p2)``),
the dialogue, then the question — every row of a wave, every request on the same tools and
every turn of one conversation share the prompt up to the newest turn, so a prefix cache
serves it (docs/sidecar.md). The answers are the same in both."""

PROMPT_LAYOUTS: tuple[PromptLayout, ...] = ("dialogue-first", "tools-first")

@dataclass(frozen=True)
class SemanticRow:
    """One prompt of a wave: its kind, which slot it asks about, and its chat messages."""

    kind: RowKind
    messages: tuple[Mapping[str, str], ...]
    function_index: int | None = None
    param: str | None = None

    @property
    def key(self) -> str:
        """``function`` for the index row, ``<index>.<param>`` for a slot row."""
        if self.kind == "function_index":
            return "function"
        if self.kind == "direct_call":
            return "direct_call"
        return f"{self.function_index}.{self.param}"


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content)


def render_dialogue(messages: Sequence[Mapping[str, Any]]) -> str:
    """The conversation as the sidecar reads it: user turns, responses, tool observations.

    System messages are left out (the sidecar has its own); an assistant turn's tool calls are
    shown as their JSON so a follow-up request sees what was already called.
    """
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        content = _text(message.get("content")).strip()
        if role == "user":
            parts.append(f"<user>{content}</user>")
        elif role == "assistant":
            calls = [
                json.dumps(
                    {"name": c["function"]["name"], "parameters": _loads(c["function"].get("arguments"))},
                    ensure_ascii=False,
                )
                for c in message.get("tool_calls") or []
                if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping)
            ]
            body = "\n".join([content, *calls]).strip()
            parts.append(f"<response>{body}</response>")
        elif role == "tool":
            parts.append(f"<obs>{content}</obs>")
    # The adapter was trained on "**Dialogue Records History**\n<user>...</user>": one newline
    # after the header, content stripped; later turns are separated by a blank line.
    return "**Dialogue Records History**\n" + "\n\n".join(parts)


def _loads(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments if arguments is not None else {}


def tool_signatures(tools: Sequence[ToolLike]) -> list[tuple[str, list[str]]]:
    """``(name, parameter names in schema order)`` for each tool (offered or an OpenAI dict)."""
    return [(tool.name, list(tool.properties)) for tool in offer(tools)]


def _indexed_tools(signatures: Sequence[tuple[str, list[str]]]) -> str:
    return "\n".join(f"[{i}] {name}({', '.join(params)})" for i, (name, params) in enumerate(signatures))


def _indexed_params(signatures: Sequence[tuple[str, list[str]]]) -> str:
    return "\n".join(
        f"[{i}] {name} param: {param}"
        for i, (name, params) in enumerate(signatures)
        for param in params
    )


def function_index_prompt(dialogue: str, signatures: Sequence[tuple[str, list[str]]]) -> str:
    return (
        f"{dialogue}\n\nAvailable tools:\n{_indexed_tools(signatures)}\n\n"
        "Which tool should be called? Respond with only the index number."
    )


def argument_prompt(
    dialogue: str,
    signatures: Sequence[tuple[str, list[str]]],
    index: int,
    param: str,
) -> str:
    name = signatures[index][0]
    return (
        f"{dialogue}\n\nAvailable tool parameters:\n{_indexed_params(signatures)}\n\n"
        f"What is the value for parameter '{param}' of tool [{index}] {name}? "
        "Respond with a compact JSON value, or the literal string null if not applicable."
    )


def direct_call_prompt(dialogue: str, signatures: Sequence[tuple[str, list[str]]]) -> str:
    return (
        f"{dialogue}\n\nAvailable tools:\n{_indexed_tools(signatures)}\n\n"
        "What is the complete tool call? Respond with a JSON object."
    )


def _tools_first(listing: str, dialogue: str, question: str) -> str:
    """A ``tools-first`` prompt: the listing, the dialogue, the row's question."""
    return f"Available tools:\n{listing}\n\n{dialogue}\n\n{question}"


def direct_call_start(name: str) -> str:
    """The start of a direct-call row's answer naming ``name``, up to the next key's quote:
    ``{"name": "get_weather", "`` (answers are ``{"name": ..., "parameters": {...}}``)."""
    return '{"name": ' + json.dumps(name, ensure_ascii=False) + ', "'


def _row(kind: RowKind, user: str, index: int | None = None, param: str | None = None) -> SemanticRow:
    messages = ({"role": "system", "content": SIDECAR_SYSTEM}, {"role": "user", "content": user})
    return SemanticRow(kind, messages, index, param)


def build_wave_rows(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolLike],
    *,
    direct_call: bool = False,
    layout: PromptLayout = "dialogue-first",
) -> list[SemanticRow]:
    """The rows of one wave: the function-index row, then one row per (function, parameter)
    (``layout``: where the dialogue goes, :data:`PromptLayout`)."""
    if layout not in PROMPT_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} ({', '.join(PROMPT_LAYOUTS)})")
    dialogue = render_dialogue(messages)
    signatures = tool_signatures(tools)
    if layout == "tools-first":
        return _tools_first_rows(dialogue, signatures, direct_call)
    rows = [_row("function_index", function_index_prompt(dialogue, signatures))]
    for index, (_, params) in enumerate(signatures):
        for param in params:
            prompt = argument_prompt(dialogue, signatures, index, param)
            rows.append(_row("argument_value", prompt, index, param))
    if direct_call:
        rows.append(_row("direct_call", direct_call_prompt(dialogue, signatures)))
    return rows


def _tools_first_rows(
    dialogue: str, signatures: Sequence[tuple[str, list[str]]], direct_call: bool
) -> list[SemanticRow]:
    """:func:`build_wave_rows` in the ``tools-first`` layout: the questions and answers of
    ``dialogue-first``, after one listing and the dialogue."""
    listing = _indexed_tools(signatures)
    rows = [_row("function_index", _tools_first(listing, dialogue, _WHICH_TOOL))]
    for index, (name, params) in enumerate(signatures):
        for param in params:
            question = _VALUE_QUESTION.format(param=param, index=index, name=name)
            rows.append(
                _row("argument_value", _tools_first(listing, dialogue, question), index, param)
            )
    if direct_call:
        rows.append(_row("direct_call", _tools_first(listing, dialogue, _WHOLE_CALL)))
    return rows


_WHICH_TOOL = "Which tool should be called? Respond with only the index number."
_VALUE_QUESTION = (
    "What is the value for parameter '{param}' of tool [{index}] {name}? "
    "Respond with a compact JSON value, or the literal string null if not applicable."
)
_WHOLE_CALL = "What is the complete tool call? Respond with a JSON object."


def label_rows(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolLike],
    call: tuple[str, Mapping[str, Any]],
    *,
    layout: PromptLayout = "dialogue-first",
) -> list[tuple[SemanticRow, str]]:
    """Training pairs ``(row, answer)`` for a request whose correct call is ``call``
    (``layout``: :data:`PromptLayout`; the answers do not depend on it)."""
    name, arguments = call
    signatures = tool_signatures(tools)
    selected = next((i for i, (n, _) in enumerate(signatures) if n == name), None)
    if selected is None:
        return []
    labelled: list[tuple[SemanticRow, str]] = []
    rows = build_wave_rows(messages, tools, direct_call=True, layout=layout)
    for row in rows:
        if row.kind == "function_index":
            answer = str(selected)
        elif row.kind == "argument_value":
            if row.function_index == selected and row.param is not None and row.param in arguments:
                answer = json.dumps(arguments[row.param], ensure_ascii=False, separators=(",", ":"))
            else:
                answer = "null"
        else:
            answer = json.dumps({"name": name, "parameters": dict(arguments)}, ensure_ascii=False)
        labelled.append((row, answer))
    return labelled


def parse_function_index(answer: str, n_tools: int) -> int | None:
    """The tool index in a function-index answer, or None when it is not a valid index."""
    text = answer.strip().strip("[]").strip()
    if not text.isdigit():
        return None
    index = int(text)
    return index if 0 <= index < n_tools else None


_MISSING = object()


def parse_slot_value(answer: str) -> Any:
    """The JSON value of a slot answer; ``None`` for ``null``; raises ``ValueError`` on garbage,
    which includes what no call could hold: ``NaN`` / ``Infinity``, a number out of float range,
    a lone UTF-16 surrogate (``"\\ud800"``), a key written twice."""
    text = answer.strip()
    if text == "null" or not text:
        return None
    try:
        value = json.loads(text, object_pairs_hook=reject_duplicate_keys)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc
    return clean_hint_value(value)


def assemble_hint(
    tools: Sequence[ToolLike],
    function_answer: str | None,
    slot_answers: Mapping[str, str],
    *,
    check: Any = None,
    complete: bool = True,
) -> tuple[Hint, dict[str, str]]:
    """Turn raw row answers into a :class:`Hint` and the slots dropped (with reasons).

    ``slot_answers`` maps ``"<index>.<param>"`` to the row's raw answer. Only the predicted
    function's slots are kept; a value is kept when it parses as JSON and, if ``check`` is
    given (``check(tool_index, param, value) -> str | None`` returning an error), passes it.
    """
    signatures = tool_signatures(tools)
    dropped: dict[str, str] = {}
    index = None if function_answer is None else parse_function_index(function_answer, len(signatures))
    if function_answer is not None and index is None:
        dropped["function"] = f"not a tool index: {function_answer!r}"
    if index is None:
        return Hint(None, {}, complete), dropped
    name, params = signatures[index]
    slots: dict[str, Any] = {}
    for param in params:
        raw = slot_answers.get(f"{index}.{param}")
        if raw is None:
            continue
        try:
            value = parse_slot_value(raw)
        except ValueError as exc:
            dropped[param] = f"not JSON: {exc}"
            continue
        if value is None:
            continue
        problem = check(index, param, value) if check is not None else None
        if problem:
            dropped[param] = problem
            continue
        slots[param] = value
    return Hint(name, slots, complete), dropped
