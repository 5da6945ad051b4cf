"""Read a function's summary and parameter descriptions from its docstring.

Three common styles are understood (the style is detected, not configured):

* Google — an ``Args:`` (or ``Arguments:`` / ``Parameters:``) section of ``name (type): text``;
* NumPy — a ``Parameters`` heading underlined with dashes, then ``name : type`` lines with
  indented descriptions;
* Sphinx — ``:param name: text`` / ``:param type name: text`` fields.

The summary is everything before the first section, paragraphs kept, so a tool's
description is what a human would read as "what this function does".
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]


@dataclass(frozen=True)
class ParsedDocstring:
    """The summary of a docstring and the description of each documented parameter."""

    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


_GOOGLE_PARAM_HEADERS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "kwargs",
    "other parameters",
}
_GOOGLE_HEADERS = _GOOGLE_PARAM_HEADERS | {
    "returns",
    "return",
    "yields",
    "yield",
    "raises",
    "raise",
    "examples",
    "example",
    "note",
    "notes",
    "warning",
    "warnings",
    "see also",
    "references",
    "attributes",
    "todo",
}
_GOOGLE_HEADER_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_PARAM_RE = re.compile(r"^\s*\**(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_UNDERLINE_RE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_PARAM_RE = re.compile(r"^\**(\w+)(?:\s*,\s*\**\w+)*\s*(?::\s*(.*))?$")
_SPHINX_FIELD_RE = re.compile(r"^\s*:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    """Join wrapped description lines into one line of text."""
    return " ".join(p.strip() for p in parts if p.strip())


def _summary(lines: list[str]) -> str:
    """Paragraphs of ``lines`` with wrapped lines joined, separated by blank lines."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append(_join(current))
            current = []
    if current:
        paragraphs.append(_join(current))
    return "\n\n".join(paragraphs)


def _parse_numpy(lines: list[str]) -> ParsedDocstring | None:
    """NumPy style, or None when no dash-underlined heading exists."""
    headings = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip() and _NUMPY_UNDERLINE_RE.match(lines[i + 1])
    ]
    if not headings:
        return None
    params: dict[str, str] = {}
    for n, start in enumerate(headings):
        title = lines[start].strip().lower()
        end = headings[n + 1] if n + 1 < len(headings) else len(lines)
        if title not in _GOOGLE_PARAM_HEADERS:
            continue
        body = lines[start + 2 : end]
        base = min((_indent(x) for x in body if x.strip()), default=0)
        names: list[str] = []
        desc: list[str] = []
        for line in body:
            if line.strip() and _indent(line) == base:
                for name in names:
                    params[name] = _join(desc)
                match = _NUMPY_PARAM_RE.match(line.strip())
                names = re.findall(r"\w+", line.split(":")[0]) if match else []
                desc = []
            elif names:
                desc.append(line)
        for name in names:
            params[name] = _join(desc)
    return ParsedDocstring(_summary(lines[: headings[0]]), params)


def _parse_sphinx(lines: list[str]) -> ParsedDocstring | None:
    """Sphinx field lists, or None when there are none."""
    first = next((i for i, x in enumerate(lines) if _SPHINX_FIELD_RE.match(x)), None)
    if first is None:
        return None
    params: dict[str, str] = {}
    current: str | None = None
    for line in lines[first:]:
        match = _SPHINX_FIELD_RE.match(line)
        if match:
            kind, spec, text = match.groups()
            current = None
            if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and spec:
                current = spec.split()[-1]
                params[current] = text.strip()
        elif current is not None and line.strip():
            params[current] = _join([params[current], line])
    return ParsedDocstring(_summary(lines[:first]), params)


def _parse_google(lines: list[str]) -> ParsedDocstring:
    """Google style; with no recognised section the whole text is the summary."""
    sections = [
        i
        for i, line in enumerate(lines)
        if (m := _GOOGLE_HEADER_RE.match(line)) and m.group(1).strip().lower() in _GOOGLE_HEADERS
    ]
    if not sections:
        return ParsedDocstring(_summary(lines), {})
    params: dict[str, str] = {}
    for n, start in enumerate(sections):
        header = lines[start].strip()[:-1].strip().lower()
        end = sections[n + 1] if n + 1 < len(sections) else len(lines)
        if header not in _GOOGLE_PARAM_HEADERS:
            continue
        body = lines[start + 1 : end]
        base = min((_indent(x) for x in body if x.strip()), default=0)
        current: str | None = None
        for line in body:
            if not line.strip():
                continue
            match = _GOOGLE_PARAM_RE.match(line) if _indent(line) == base else None
            if match:
                current = match.group(1)
                params[current] = match.group(3).strip()
            elif current is not None and _indent(line) > base:
                params[current] = _join([params[current], line])
    return ParsedDocstring(_summary(lines[: sections[0]]), params)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split ``doc`` into a summary and per-parameter descriptions.

    >>> d = parse_docstring('''Add numbers.
    ...
    ... Args:
    ...     a: The first one.
    ...     b (int): The second
    ...         one, wrapped.
    ... ''')
    >>> d.summary, d.params["b"]
    ('Add numbers.', 'The second one, wrapped.')
    """
    if not doc or not doc.strip():
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    return _parse_numpy(lines) or _parse_sphinx(lines) or _parse_google(lines)
