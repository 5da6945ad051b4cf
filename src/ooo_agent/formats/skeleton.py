"""The drafting skeleton: likely continuations of a partly written call, from the schema
and (when one has arrived) the sidecar's hint.

Every format here writes a call as ``PREFIX NAME AFTER_NAME {ARGS} SUFFIX`` with JSON
inside (Hermes: ``<tool_call>\\n{"name": "`` … ``", "arguments": `` … ``}\\n</tool_call>``).
:class:`SchemaSkeleton` finds the current call in the output so far, runs a small
string-aware state machine over it and stops at the last *boundary* it passed: the start of
the name, the end of the name, the opening of the arguments, the end of a key, the end of a
value, the end of the arguments, or the end of the call. From a boundary the rest of the call
has a few canonical spellings (the candidates); the text typed since the boundary selects
those it is a prefix of, and what remains of each is a draft.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ooo_agent.formats._common import dump_json
from ooo_agent.formats._scan import (
    INCOMPLETE,
    INVALID,
    SCALAR,
    WS,
    ToolShape,
    TopLevelScan,
    arguments_end,
    decode_string,
    json_value_end,
    nested_end,
    string_end,
    tool_shape,
)
from ooo_agent.formats.base import CallSkeleton, TextDraft, ToolDict
from ooo_agent.hints import Hint

__all__ = ["CallSyntax", "SchemaSkeleton"]

# Boundaries (see the module docstring).
_NAME_START = "name_start"
_NAME_DONE = "name_done"
_OBJ_OPEN = "obj_open"
_KEY_DONE = "key_done"
_AFTER_VALUE = "after_value"
_ARGS_DONE = "args_done"
_CALL_DONE = "call_done"


@dataclass(frozen=True)
class CallSyntax:
    """The fixed text of one format's calls, canonical and tolerant.

    ``prefix`` ends just inside the name's opening quote; ``after_name`` runs from the name's
    closing quote to the arguments' ``{`` (exclusive); ``suffix`` follows the arguments' ``}``.
    The ``*_re`` patterns accept the whitespace variations models write.
    """

    prefix: str
    prefix_re: re.Pattern[str]
    after_name: str
    after_name_re: re.Pattern[str]
    suffix: str
    suffix_re: re.Pattern[str]
    separator: str
    anchor: str | None = None
    """Literal that starts every call (``<tool_call>``); ``None``: find calls by JSON depth."""
    opens_after: str = ""
    """Characters besides whitespace after which a call may start (``[`` of a call list)."""


@dataclass(frozen=True)
class _HintView:
    """A hint as the skeleton uses it: the function and each slot's JSON text."""

    function: str | None
    values: Mapping[str, str]


_NO_HINT = _HintView(None, {})


@dataclass
class _State:
    """Where the scan of the current call stopped."""

    boundary: str
    at: int
    """Index in the call body where the text typed since the boundary starts."""
    tool: ToolShape | None = None
    used: list[str] = field(default_factory=list)
    key: str | None = None
    in_scalar: bool = False
    end: int = -1


class SchemaSkeleton(CallSkeleton):
    """:class:`CallSkeleton` for formats that write calls as ``PREFIX NAME … {ARGS} SUFFIX``.

    Example::

        skel = HermesFormat().skeleton(tools)
        skel.continuations('<tool_call>\\n{"name": "get_w')
        # [TextDraft('eather", "arguments": {"', 'schema')]
    """

    def __init__(self, syntax: CallSyntax, tools: Sequence[ToolDict]) -> None:
        self.syntax = syntax
        self._tools: dict[str, ToolShape] = {}
        for tool in tools:
            shape = tool_shape(tool)
            self._tools.setdefault(shape.name, shape)
        self._hint_cache: tuple[Hint, _HintView] | None = None
        # The incremental scan is per thread: one skeleton may serve concurrent decodes.
        self._local = threading.local()

    # -- public ------------------------------------------------------------------------
    def continuations(self, generated: str, hint: Hint | None = None) -> list[TextDraft]:
        """Likely continuations of ``generated``, best first (hint drafts before schema)."""
        hinted = self._hinted(hint)
        start = self._call_start(generated)
        if start < 0:
            return self._outside(generated, first=True, hinted=hinted)
        body = generated[start:]
        state = self._scan(body)
        if state is None:
            return []
        if state.boundary == _CALL_DONE:
            # The hint describes one call, and the target has written one.
            return self._outside(body[state.end :], first=False, hinted=_NO_HINT)
        typed = body[state.at :]
        return _select(self._candidates(state, hinted, typed), typed)

    def written_function(self, generated: str) -> str | None:
        """The tool named by the first call in ``generated`` once its closing quote is written."""
        start = self._call_start(generated, first=True)
        if start < 0:
            return None
        body = generated[start:]
        name_end = string_end(body, 0)
        if name_end < 0:
            return None
        name = decode_string(body[: name_end - 1])
        return name if name is not None and name in self._tools else None

    def open_name(self, generated: str) -> tuple[str, bool] | None:
        """The last call's name as written so far (JSON string body) and whether it is closed."""
        body = self._last_call(generated)
        if body is None:
            return None
        end = string_end(body, 0)
        return (body, False) if end < 0 else (body[: end - 1], True)

    @property
    def name_texts(self) -> frozenset[str]:
        return frozenset(tool.name_json for tool in self._tools.values())

    def well_formed(self, generated: str) -> bool | None:
        """Whether the last call in ``generated`` is, so far, the beginning of a well-formed
        call: after its name, the format's text up to the arguments, one JSON object (numbers
        and literals checked strictly), then the closing text. Whitespace is free. None
        outside any call. (The name itself is :meth:`open_name`'s business.)"""
        return self._shaped(generated, schema=False)

    def conforms(self, generated: str) -> bool | None:
        """:meth:`well_formed`, with the arguments of a call to an offered tool held to its
        schema as well (:func:`~ooo_agent.formats._scan.arguments_end`: known keys, none
        twice, required ones before the closing brace, top-level values of the declared JSON
        type and enum, array elements as ``items`` / ``maxItems`` / ``uniqueItems`` say, no
        key twice in a nested object, whitespace runs bounded). A call naming no offered tool
        is held to well-formedness only."""
        return self._shaped(generated, schema=True)

    def _shaped(self, generated: str, *, schema: bool) -> bool | None:
        body = self._last_call(generated)
        if body is None:
            return None
        name_end = string_end(body, 0)
        if name_end < 0:
            return True
        opened = self.syntax.after_name_re.match(body, name_end)
        if opened is None:
            typed = _squash(body[name_end:])
            return any(form.startswith(typed) for form in self._after_name_forms)
        tool = self._tools.get(decode_string(body[: name_end - 1]) or "") if schema else None
        if tool is not None:
            end = arguments_end(body, opened.end() - 1, tool)
        else:
            end = json_value_end(body, opened.end() - 1)
        if end == INVALID:
            return False
        if end == INCOMPLETE:
            return True
        rest = body[end:]
        return bool(self.syntax.suffix_re.match(rest)) or _squash(self.syntax.suffix).startswith(
            _squash(rest)
        )

    @property
    def _after_name_forms(self) -> tuple[str, ...]:
        """The text from the name's closing quote to the arguments' ``{``, whitespace removed,
        with either key the formats accept."""
        canonical = _squash(self.syntax.after_name + "{")
        return tuple(
            canonical.replace(f'"{a}"', f'"{b}"')
            for a, b in (
                ("arguments", "arguments"),
                ("arguments", "parameters"),
                ("parameters", "arguments"),
            )
        )

    # -- locating the current call -----------------------------------------------------
    def _last_call(self, generated: str) -> str | None:
        """The last call's text after its prefix (from the name on), or None."""
        start = self._call_start(generated)
        return generated[start:] if start >= 0 else None

    def _call_start(self, generated: str, *, first: bool = False) -> int:
        """Index just after the prefix of the last call started in ``generated`` (the first
        with ``first``), or -1."""
        syntax = self.syntax
        if syntax.anchor is not None:
            if first:
                at = generated.find(syntax.anchor)
                while at >= 0:
                    match = syntax.prefix_re.match(generated, at)
                    if match:
                        return match.end()
                    at = generated.find(syntax.anchor, at + 1)
                return -1
            at = generated.rfind(syntax.anchor)
            while at >= 0:
                match = syntax.prefix_re.match(generated, at)
                if match:
                    return match.end()
                at = generated.rfind(syntax.anchor, 0, at)
            return -1
        top: TopLevelScan | None = getattr(self._local, "top", None)
        if top is None or not generated.startswith(top.text):
            top = self._local.top = TopLevelScan()
        top.feed(generated)
        for at in top.starts if first else reversed(top.starts):
            match = syntax.prefix_re.match(generated, at)
            if match:
                return match.end()
        return -1

    # -- the state machine over one call -----------------------------------------------
    def _scan(self, body: str) -> _State | None:
        """Scan a call body (the text after its prefix); ``None`` when it left the skeleton."""
        name_end = string_end(body, 0)
        if name_end < 0:
            return _State(_NAME_START, 0)
        name = decode_string(body[: name_end - 1])
        if name is None:
            return None
        tool = self._tools.get(name)
        opened = self.syntax.after_name_re.match(body, name_end)
        if opened is None:
            return _State(_NAME_DONE, name_end, tool)
        if tool is None:
            return None
        return self._scan_args(body, opened.end(), tool)

    def _scan_args(self, body: str, i: int, tool: ToolShape) -> _State | None:
        state = _State(_OBJ_OPEN, i, tool)
        expect = "key_or_close"  # key_or_close | key | colon | value | comma_or_close
        n = len(body)
        while True:
            i = WS.match(body, i).end()  # type: ignore[union-attr]
            if i >= n:
                return state
            c = body[i]
            if expect in ("key_or_close", "key") and c == '"':
                end = string_end(body, i + 1)
                if end < 0:
                    return state  # inside a key: the boundary before it selects
                key = decode_string(body[i + 1 : end - 1])
                if key is None:
                    return None
                state = _State(_KEY_DONE, end, tool, [*state.used, key], key)
                expect, i = "colon", end
            elif expect == "colon" and c == ":":
                expect, i = "value", i + 1
            elif expect == "value":
                if c == '"':
                    end = string_end(body, i + 1)
                elif c in "{[":
                    end = nested_end(body, i)
                else:
                    end = SCALAR.match(body, i).end()  # type: ignore[union-attr]
                    if end == i:
                        return None
                    if end == n:
                        state.in_scalar = True
                        return state
                if end < 0:
                    return state  # inside a value
                state = _State(_AFTER_VALUE, end, tool, state.used)
                expect, i = "comma_or_close", end
            elif expect == "comma_or_close" and c == ",":
                expect, i = "key", i + 1
            elif expect in ("key_or_close", "comma_or_close") and c == "}":
                return self._scan_suffix(body, i + 1, state)
            else:
                return None

    def _scan_suffix(self, body: str, i: int, state: _State) -> _State | None:
        done = self.syntax.suffix_re.match(body, i)
        if done:
            return _State(_CALL_DONE, done.end(), state.tool, state.used, end=done.end())
        if self.syntax.suffix.startswith(body[i:]):
            return _State(_ARGS_DONE, i, state.tool, state.used)
        return None

    # -- candidates at each boundary ---------------------------------------------------
    def _hinted(self, hint: Hint | None) -> _HintView:
        """The hint's function and rendered slot values, cached per hint object."""
        if hint is None or hint.function is None or hint.function not in self._tools:
            return _NO_HINT
        cached = self._hint_cache
        if cached is not None and cached[0] is hint:
            return cached[1]
        tool = self._tools[hint.function]
        values: dict[str, str] = {}
        for key, value in hint.slots.items():
            if key in tool.key_json or tool.open_schema:
                try:
                    values[key] = json.dumps(value, ensure_ascii=False)
                except (TypeError, ValueError):
                    continue  # a value the target could not have written
        view = _HintView(hint.function, values)
        self._hint_cache = (hint, view)
        return view

    def _hint_rest(self, tool: ToolShape, hinted: _HintView, used: Sequence[str]) -> str:
        """The hinted keys not yet written, in schema order, then the call's closing text."""
        order = tool.keys if not tool.open_schema else tuple(hinted.values)
        values = hinted.values
        key_json = tool.key_json
        parts = [
            f"{key_json.get(k) or dump_json(k)}: {values[k]}"
            for k in order
            if k in values and k not in used
        ]
        return ", ".join(parts) + "}" + self.syntax.suffix

    def _opening(self, tool: ToolShape) -> str:
        """From the name's closing quote up to the first key (or the end, with no keys)."""
        head = '"' + self.syntax.after_name + "{"
        if tool.keys or tool.open_schema:
            return head + '"'
        return head + "}" + self.syntax.suffix

    def _after_name_candidates(self, hinted: _HintView) -> list[TextDraft]:
        """Candidates from the name's opening quote: the hinted call, then every tool."""
        out: list[TextDraft] = []
        function = hinted.function
        if function is not None:
            tool = self._tools[function]
            if hinted.values or not tool.keys:
                rest = '"' + self.syntax.after_name + "{" + self._hint_rest(tool, hinted, ())
            else:
                rest = self._opening(tool)
            out.append(TextDraft(tool.name_json + rest, "hint"))
        out.extend(
            TextDraft(t.name_json + self._opening(t), "schema") for t in self._tools.values()
        )
        return out

    def _key_candidates(self, tool: ToolShape, used: Sequence[str], lead: str) -> list[str]:
        keys = [k for k in tool.keys if k not in used]
        keys.sort(key=lambda k: k not in tool.required)  # stable: required first
        return [
            f"{lead}{tool.key_json[k]}: {chr(34) if k in tool.string_keys else ''}" for k in keys
        ]

    def _candidates(self, state: _State, hinted: _HintView, typed: str) -> list[TextDraft]:
        tool = state.tool
        if state.boundary == _NAME_START:
            return self._after_name_candidates(hinted)
        if tool is None:
            return [TextDraft('"' + self.syntax.after_name + '{"', "schema")]
        use_hint = hinted.function == tool.name
        close = "}" + self.syntax.suffix
        out: list[TextDraft] = []
        if state.boundary == _NAME_DONE:
            head = self.syntax.after_name + "{"
            if use_hint and (hinted.values or not tool.keys):
                out.append(TextDraft(head + self._hint_rest(tool, hinted, ()), "hint"))
            out.extend(TextDraft(head + k, "schema") for k in self._key_candidates(tool, (), ""))
            if not tool.required:
                out.append(TextDraft(head + close, "schema"))
        elif state.boundary == _OBJ_OPEN:
            if use_hint and (hinted.values or not tool.keys):
                out.append(TextDraft(self._hint_rest(tool, hinted, ()), "hint"))
            out.extend(TextDraft(k, "schema") for k in self._key_candidates(tool, (), ""))
            if not tool.required:
                out.append(TextDraft(close, "schema"))
        elif state.boundary == _KEY_DONE:
            key = state.key or ""
            if use_hint and key in hinted.values:
                rest = self._hint_rest(tool, hinted, state.used)
                sep = "" if rest.startswith("}") else ", "
                out.append(TextDraft(f": {hinted.values[key]}{sep}{rest}", "hint"))
            out.extend(TextDraft(": " + v, "schema") for v in tool.value_drafts.get(key, ()))
            out.append(TextDraft(": " + ('"' if key in tool.string_keys else ""), "schema"))
            if state.in_scalar:
                # The number may be complete: offer what follows a value after it.
                out.extend(
                    TextDraft(typed + d.text, d.source)
                    for d in self._after_value(tool, state.used, hinted, use_hint)
                )
        elif state.boundary == _AFTER_VALUE:
            out.extend(self._after_value(tool, state.used, hinted, use_hint))
        elif state.boundary == _ARGS_DONE:
            out.append(TextDraft(self.syntax.suffix, "schema"))
        return out

    def _after_value(
        self, tool: ToolShape, used: Sequence[str], hinted: _HintView, use_hint: bool
    ) -> list[TextDraft]:
        out: list[TextDraft] = []
        close = "}" + self.syntax.suffix
        if use_hint:
            rest = self._hint_rest(tool, hinted, used)
            out.append(TextDraft(rest if rest.startswith("}") else ", " + rest, "hint"))
        keys = [TextDraft(k, "schema") for k in self._key_candidates(tool, used, ", ")]
        missing_required = any(k in tool.required and k not in used for k in tool.keys)
        closing = [TextDraft(close, "schema")]
        out.extend(keys + closing if missing_required else closing + keys)
        return out

    def _outside(self, text: str, *, first: bool, hinted: _HintView) -> list[TextDraft]:
        """Drafts between calls: the next call's prefix (+ name), when one may start here."""
        if not self._tools:
            return []
        lead = self.syntax.prefix if first else self.syntax.separator + self.syntax.prefix
        typed = _partial_suffix(text, lead)
        if not typed and text and not (text[-1].isspace() or text[-1] in self.syntax.opens_after):
            return []  # mid-sentence: a call does not start here
        heads = self._after_name_candidates(hinted)
        return _select([TextDraft(lead + d.text, d.source) for d in heads], typed)


def _squash(text: str) -> str:
    """``text`` without whitespace."""
    return "".join(text.split())


def _partial_suffix(text: str, lead: str) -> str:
    """The longest end of ``text`` that is a proper beginning of ``lead``."""
    for k in range(min(len(lead) - 1, len(text)), 0, -1):
        if text.endswith(lead[:k]):
            return lead[:k]
    return ""


def _select(candidates: list[TextDraft], typed: str) -> list[TextDraft]:
    """What remains of each candidate that ``typed`` begins, without duplicates or empties."""
    seen: set[str] = set()
    out: list[TextDraft] = []
    n = len(typed)
    for cand in candidates:
        if len(cand.text) > n and cand.text.startswith(typed):
            rest = cand.text[n:]
            if rest not in seen:
                seen.add(rest)
                out.append(TextDraft(rest, cand.source))
    return out
