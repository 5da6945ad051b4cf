"""Java and JavaScript argument literals, as BFCL's Java / JavaScript categories carry them.

In those categories every argument is a *string* holding a literal of the language
(``"5L"``, ``"new int[]{1, 2}"``, ``"{key: 'v'}"``). The checker reads such a string as the
parameter's declared type and compares the result with the gold value; when the string is
not a literal of that type it stays a string (and fails the type check), as in BFCL.
:func:`render_literal` writes a value back as such a string (the gold → call direction).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_literal", "render_literal"]

_INT = re.compile(r"-?\d+")
_JAVA_LONG = re.compile(r"-?\d+[lL]")
_JAVA_FLOAT = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]")
_JAVA_DOUBLE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_JS_FLOAT = re.compile(r"-?\d+(\.\d+)?")
_JS_BIGINT = re.compile(r"-?\d+n")
_JAVA_ARRAY = re.compile(r"new\s+[\w.<>]+\s*\[\]\s*\{(?P<body>.*)\}", re.DOTALL)
_JAVA_ASLIST = re.compile(
    r"new\s+ArrayList\s*<[^>]*>\s*\(\s*Arrays\.asList\((?P<body>.*)\)\s*\)", re.DOTALL
)
_JAVA_ADDS = re.compile(
    r"new\s+ArrayList\s*<[^>]*>\s*\(\s*\)\s*\{\s*\{(?P<body>.*)\}\s*\}", re.DOTALL
)
_JAVA_EMPTY_LIST = re.compile(r"new\s+ArrayList\s*<[^>]*>\s*\(\s*\)")
_JAVA_MAP = re.compile(
    r"new\s+HashMap\s*<[^>]*>\s*\(\s*\)\s*(\{\s*\{?(?P<body>.*?)\}?\s*\})?", re.DOTALL
)
_JAVA_PUT = re.compile(
    r"put\(\s*(?P<key>\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^,]+?)\s*,\s*(?P<value>.*?)\)\s*;", re.DOTALL
)


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside quotes and brackets; empty input gives ``[]``."""
    parts: list[str] = []
    depth, quote, start, i = 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    tail = text[start:].strip()
    if tail or parts:
        parts.append(tail)
    return parts


def _unquote(text: str) -> str | None:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1]
    return None


# -- Java -------------------------------------------------------------------------------


def _java_scalar(text: str) -> Any:
    """A Java literal of unknown type: boolean, string, long, float, int, double, or as is."""
    if text in ("true", "false"):
        return text == "true"
    unquoted = _unquote(text)
    if unquoted is not None and text[0] == '"':
        return unquoted
    if _JAVA_LONG.fullmatch(text):
        return int(text[:-1])
    if _JAVA_FLOAT.fullmatch(text):
        return float(text[:-1])
    if _INT.fullmatch(text):
        return int(text)
    if _JAVA_DOUBLE.fullmatch(text):
        return float(text)
    return text


def _java_element(text: str, kind: str | None) -> Any:
    if kind in ("String", "char"):
        unquoted = _unquote(text)
        return unquoted if unquoted is not None else text
    if kind == "any":
        return _java_scalar(text)
    return _java(text, kind) if kind else _java_scalar(text)


def _java(text: str, kind: str | None, items: str | None = None) -> Any:
    text = text.strip()
    if kind in ("byte", "short", "integer"):
        return int(text) if _INT.fullmatch(text) else text
    if kind == "long":
        return int(text[:-1]) if _JAVA_LONG.fullmatch(text) else text
    if kind == "float":
        return float(text[:-1]) if _JAVA_FLOAT.fullmatch(text) else text
    if kind == "double":
        return float(text) if _JAVA_DOUBLE.fullmatch(text) else text
    if kind == "boolean":
        return text == "true" if text in ("true", "false") else text
    if kind == "char":
        unquoted = _unquote(text)
        return unquoted if unquoted is not None and len(unquoted) == 1 else text
    if kind == "Array":
        match = _JAVA_ARRAY.fullmatch(text)
        if match:
            return [_java_element(e, items) for e in split_top_level(match["body"]) if e]
        return text
    if kind == "ArrayList":
        for pattern in (_JAVA_ASLIST, _JAVA_ADDS):
            match = pattern.fullmatch(text)
            if match:
                body = match["body"]
                if pattern is _JAVA_ADDS:
                    elements = [m.strip() for m in re.findall(r"add\((.*?)\)\s*;", body, re.DOTALL)]
                else:
                    elements = split_top_level(body)
                return [_java_element(e, items) for e in elements if e]
        return [] if _JAVA_EMPTY_LIST.fullmatch(text) else text
    if kind == "HashMap":
        match = _JAVA_MAP.fullmatch(text)
        if not match:
            return text
        out: dict[str, Any] = {}
        for put in _JAVA_PUT.finditer(match["body"] or ""):
            key = put["key"].strip()
            out[_unquote(key) or key] = _java_scalar(put["value"].strip())
        return out
    return text  # String, any and the types BFCL does not convert stay strings


# -- JavaScript -------------------------------------------------------------------------


def _js_value(text: str) -> Any:
    """A JavaScript literal: array, object, string, boolean, null, number, or as is."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_js_value(e) for e in split_top_level(text[1:-1])]
    if text.startswith("new Array(") and text.endswith(")"):
        return [_js_value(e) for e in split_top_level(text[len("new Array(") : -1])]
    if text.startswith("{") and text.endswith("}"):
        out: dict[str, Any] = {}
        for pair in split_top_level(text[1:-1]):
            key, colon, value = pair.partition(":")
            if not colon:
                return text
            key = key.strip()
            out[_unquote(key) or key] = _js_value(value)
        return out
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "undefined"):
        return None
    unquoted = _unquote(text)
    if unquoted is not None:
        return unquoted
    if _INT.fullmatch(text):
        return int(text)
    if _JS_FLOAT.fullmatch(text):
        return float(text)
    return text


def _js(text: str, kind: str | None) -> Any:
    if kind == "String":
        unquoted = _unquote(text)
        return unquoted if unquoted is not None else text
    if kind == "integer":
        return int(text) if _INT.fullmatch(text) else text
    if kind == "float":
        return float(text) if _JS_FLOAT.fullmatch(text) else text
    if kind == "Bigint":
        return int(text[:-1]) if _JS_BIGINT.fullmatch(text) else text
    if kind == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if kind in ("array", "dict"):
        value = _js_value(text)
        wanted = list if kind == "array" else dict
        return value if isinstance(value, wanted) else text
    return text


def parse_literal(text: str, language: str, kind: str | None, items: str | None = None) -> Any:
    """Read ``text`` as a ``language`` literal of declared type ``kind`` (else return it as is)."""
    if language == "java":
        return _java(text, kind, items)
    if language == "javascript":
        return _js(text.strip(), kind)
    return text


# -- rendering (gold → call) -------------------------------------------------------------


def _java_render(value: Any, kind: str | None, items: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and kind == "long":
        return f"{value}L"
    if isinstance(value, (int, float)) and kind == "float":
        return f"{float(value)}f"
    if isinstance(value, list):
        elements = ", ".join(_java_element_render(v, items) for v in value)
        if kind == "ArrayList":
            return f"new ArrayList<>(Arrays.asList({elements}))"
        element_type = {"String": "String", "long": "long", "integer": "int"}.get(
            items or "", "Object"
        )
        return f"new {element_type}[]{{{elements}}}"
    if isinstance(value, dict):
        puts = " ".join(
            f"put({json.dumps(str(k))}, {_java_element_render(v, None)});" for k, v in value.items()
        )
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return str(value)


def _java_element_render(value: Any, kind: str | None) -> str:
    if isinstance(value, str):
        return f"'{value}'" if kind == "char" else json.dumps(value)
    return _java_render(value, kind, None)


def _js_render(value: Any, kind: str | None, *, nested: bool = False) -> str:
    if isinstance(value, str):
        # A top-level string is the literal itself (often a variable name); inside an
        # array or object it is a quoted string.
        return json.dumps(value) if nested else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and kind == "Bigint":
        return f"{value}n"
    if isinstance(value, list):
        return "[" + ", ".join(_js_render(v, None, nested=True) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (
            f"{json.dumps(str(k))}: {_js_render(v, None, nested=True)}" for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    if value is None:
        return "null"
    return str(value)


def render_literal(value: Any, language: str, kind: str | None, items: str | None = None) -> Any:
    """``value`` written as the ``language`` literal string BFCL expects (Python: unchanged)."""
    if language == "java":
        return _java_render(value, kind, items)
    if language == "javascript":
        return _js_render(value, kind)
    return value
