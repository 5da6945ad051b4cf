"""Argument rows held to their parameter's schema (``WaveOptions(typed_values=True)``).

An argument row answers one JSON value — or ``null``, the row's word for "not in this call".
A small sidecar often writes a value that could never be the target's: ``"1234"`` for an
integer, ``"Microsoft"`` for an array, ``5`` for a string, ``2mm`` that is no JSON at all.
Such a slot is dropped before it reaches the drafter (:mod:`ooo_agent.sidecar.slots`), so the
row's work is lost. :class:`ValueConstraint` steers the row while it is written instead: each
token keeps the answer the beginning of a value the parameter's schema accepts (its declared
JSON type, its enum, its array elements: :class:`~ooo_agent.formats._scan.ValueShape`, the
reading the target's own constrained decoding uses), ``null`` only where the row may answer it,
and the end of turn only once the value is complete; when the sidecar's likeliest token breaks
that, the likeliest one that keeps it is taken. The target verifies every hinted token, so this
changes only which hint arrives, never the target's output.

Example::

    choose = ValueConstraint({"type": "integer"}, tokenizer_decode, stop_ids={2}, null_ok=True)
    token = choose.choose(generated_ids, logits, int(logits.argmax()))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import torch

from ooo_agent.decoding.constraint import runner_up
from ooo_agent.formats._scan import INCOMPLETE, INVALID, ValueShape, json_value_end
from ooo_agent.sidecar.slots import normalize_schema

__all__ = [
    "ValueConstraint",
    "comma_free_place",
    "copies_words",
    "list_goes_on",
    "words_copied_whole",
]

_PLACE_WORD = re.compile(
    r"\b(?:city|cities|location|address|place|destination|town|origin|venue|region|country"
    r"|state)\b",
    re.IGNORECASE,
)
_NAME_PARTS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_.-]")


def comma_free_place(param: str, schema: Any) -> bool:
    """Whether a string parameter is a place whose description shows it without a comma
    ("The city where the hotel is located."): beside a target that holds values to conventions
    such a row answers without any comma (``commas_from=""``), as the target writes "Tokyo"
    for the request's "Tokyo, Japan" there, where a small sidecar copies the request's whole
    "Tokyo, Japan". Where the description writes a comma ("e.g. Boston, MA"), or the parameter
    is no place (a message, a route), the request's own commas stand (docs/benchmarks.md
    §2.0zzzzzzzzzzzzzz)."""
    if not isinstance(schema, Mapping):
        return False
    description = schema.get("description")
    description = description if isinstance(description, str) else ""
    if "," in description:
        return False
    words = _NAME_PARTS.sub(" ", param)  # start_location, cityName: whole words
    return _PLACE_WORD.search(words) is not None or _PLACE_WORD.search(description) is not None


MIN_COPIED_WORD = 3
"""Characters of a request's word an answer must have written before the word holds it
(:func:`words_copied_whole`): shorter beginnings ("di", "20") start too many words to say
which one is being copied."""


def copies_words(schema: Any) -> bool:
    """Whether a parameter's value is written from the request's words: a free string (no
    enum, pattern or format), a number without an enum, or an array of either — the rows
    :func:`words_copied_whole` holds. An enum's options are the tool's words, not the
    request's."""
    shape = normalize_schema(schema)
    if not isinstance(shape, Mapping) or any(key in shape for key in ("enum", "const")):
        return False
    kind = shape.get("type")
    if kind == "array":
        return copies_words(shape.get("items"))
    if kind == "string":
        return not any(key in shape for key in ("pattern", "format"))
    return kind in ("number", "integer")


def _word_starts(text: str, part: str, inside: Callable[[str], bool] = str.isalnum) -> list[int]:
    """Where ``part`` occurs in ``text`` at the start of a word (no character ``inside`` a
    word before it)."""
    found, at = [], text.find(part)
    while at >= 0:
        if at == 0 or not inside(text[at - 1]):
            found.append(at)
        at = text.find(part, at + 1)
    return found


def _copies(request: str, lower: str, written: str, numeric: bool) -> list[int]:
    """Where the request writes ``written`` as a copy would begin: where a word starts (a
    number: no digit before it), letter for letter — a word's first letter in either case
    ("New York" copies "new york"; "EURos" copies nothing of "Euros")."""
    inside = str.isdigit if numeric else str.isalnum
    return [
        at
        for at in _word_starts(lower, written.lower(), inside)
        if all(
            char == request[at + i] or (at + i == 0 or not request[at + i - 1].isalnum())
            for i, char in enumerate(written)
        )
    ]


def _unfinished(request: str, lower: str, written: str, numeric: bool) -> bool:
    """``written`` ends inside a word it copies from ``request`` (:func:`_copies`): it ends with
    at least :data:`MIN_COPIED_WORD` characters of a word (a number: digits), and every place it
    copies goes on with more of that word ("Christian" of "Christianity", ``500`` of "$5000",
    not ``5000`` of "5000m")."""
    goes_on = str.isdigit if numeric else str.isalnum
    tail = 0
    while tail < len(written) and goes_on(written[-1 - tail]):
        tail += 1
    if tail < MIN_COPIED_WORD:
        return False
    places = _copies(request, lower, written, numeric)
    end = len(written)
    return bool(places) and all(
        at + end < len(request) and goes_on(request[at + end]) for at in places
    )


def _runs(value: str, final: bool) -> list[tuple[int, str, bool, bool]]:
    """The strings (their contents) and numbers of a JSON value's text, each with where it
    starts, whether it is closed and whether it is a number; a number at the very end is closed
    when ``final`` (the answer ends there)."""
    runs: list[tuple[int, str, bool, bool]] = []
    i, n = 0, len(value)
    while i < n:
        char = value[i]
        if char == '"':
            j, escaped = i + 1, False
            while j < n and (escaped or value[j] != '"'):
                escaped = not escaped and value[j] == "\\"
                j += 1
            runs.append((i + 1, value[i + 1 : j], j < n, False))
            i = j + 1
        elif char == "-" or char.isdigit():
            j = i + 1
            while j < n and (value[j].isdigit() or value[j] in ".eE+-"):
                j += 1
            runs.append((i, value[i:j], j < n or final, True))
            i = j
        else:
            i += 1
    return runs


def words_copied_whole(request: str, value: str, *, final: bool = False, since: int = 0) -> bool:
    """Whether an answer's text (so far) copies the request's words whole: once a string or a
    number has written :data:`MIN_COPIED_WORD` or more characters of a request's word (case
    aside), it goes on as some place of the request where that word is written (letter for
    letter: :func:`_copies`), until the word ends there too — no closing quote after
    "Christian" when the request says "Christianity", no ``500`` for "$5000", no "rs6034466"
    for "rs6034464", no "dictIONArY" for "dictionary". Once the request's word is written, the
    answer may go on as it likes ("detailed" of "detail"). Text the request does not write (its
    own words, a date it converts, a code in capitals such as "EUR" for "Euros") is free. Only
    the characters from ``since`` on are checked (those before were, as they were
    written; a slip the model was left to make is not held against what follows it)."""
    lower = _lowered(request)
    for start, written, closed, numeric in _runs(value, final):
        if start + len(written) < since:
            continue  # closed before: checked as it was written
        for k in range(max(MIN_COPIED_WORD, since - start), len(written)):
            if _unfinished(request, lower, written[:k], numeric) and not _copies(
                request, lower, written[: k + 1], numeric
            ):
                return False
        if (
            closed
            and (final or start + len(written) >= since)
            and _unfinished(request, lower, written, numeric)
        ):
            return False
    return True


@functools.lru_cache(maxsize=64)
def _lowered(text: str) -> str:
    return text.lower()


_LISTED_ON = re.compile(r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+|\s*&\s*)(?=\w)")
"""What joins an item of a list the request writes to the next: a comma, "and", "or", "&"."""
_LIST_END = re.compile(r"[^.;:!?]*?(?:\s(?:and|or)\s|&)")
"""A comma lists on only where "and", "or" or "&" follows before the sentence ends ("tomatoes,
lettuce and eggs"; not "mushrooms, vegetarian.")."""


def _listed_on(request: str, end: int) -> bool:
    joint = _LISTED_ON.match(request, end)
    if joint is None:
        return False
    return "," not in joint.group() or _LIST_END.match(request, joint.end()) is not None


def list_goes_on(request: str, value: str) -> bool:
    """Whether a complete array answer stops where the request's list goes on: its last element
    is a string the request writes as whole words (case aside) and, everywhere it does, a comma,
    "and", "or" or "&" and another word follow ("chicken and mushrooms", "Microsoft and
    Google"). A small sidecar often closes such a list after its first item; the target writes
    them all."""
    body = value.rstrip()
    if not body.startswith("[") or not body.endswith("]") or not body[:-1].rstrip().endswith('"'):
        return False
    runs = _runs(body, True)
    if not runs or not runs[-1][2]:
        return False
    item = runs[-1][1].strip().lower()
    request = _lowered(request)
    if len(item) < 2:
        return False
    ends = [
        at + len(item)
        for at in _word_starts(request, item)
        if at + len(item) == len(request) or not request[at + len(item)].isalnum()
    ]
    return bool(ends) and all(_listed_on(request, end) for end in ends)


MAX_LEADING_WS = 4
"""Characters of whitespace an answer may start with (a chat model may write `` "Paris"``)."""


class ValueConstraint:
    """Keeps one argument row's answer a (beginning of a) value its schema accepts.

    Args:
        schema: the parameter's JSON schema (BFCL's Python type names are read as JSON
            Schema's).
        decode: token ids → text, as the sidecar's tokenizer decodes an answer.
        stop_ids: the tokens that end a row (allowed once the value is complete).
        null_ok: whether the row may answer ``null`` (an optional parameter; a required one
            unless ``required_values`` asks for a value).
        max_candidates: how far down the ranking to look for an allowed token; past it the
            sidecar's own token is kept (the slot is then dropped, as it would be unsteered).
        commas_from: the request's text, for a free string parameter beside a target that holds
            values to conventions: the answer may hold a comma only inside text the request
            writes (case aside). Such a target writes "City, State" where the tool asks for it
            (the parameter then has a ``pattern`` and gets no ``commas_from``) and otherwise the
            place as the request gives it; a small sidecar adds a state or country of its own
            ("San Francisco, CA" for "in San Francisco"; docs/benchmarks.md §2.0zzz).
        words_from: the request's text, for a row :func:`copies_words`: the answer copies the
            request's words whole (:func:`words_copied_whole`): a small sidecar stops a word
            it copies early ("Christian" for "Christianity", ``500`` for "$5000") or slips
            inside it ("rs6034466"), where the target copies it whole; and an array its lists
            whole (:func:`list_goes_on`: no ``["chicken"]`` for "chicken and mushrooms").

    Implements :class:`~ooo_agent.decoding.constraint.TokenConstraint`.
    """

    def __init__(
        self,
        schema: Any,
        decode: Callable[[Sequence[int]], str],
        *,
        stop_ids: Collection[int],
        null_ok: bool = True,
        max_candidates: int = 512,
        commas_from: str | None = None,
        words_from: str | None = None,
    ) -> None:
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, not {max_candidates}")
        self.shape = ValueShape.of(normalize_schema(schema))
        self.commas_from = commas_from.lower() if commas_from is not None else None
        self.words_from = words_from
        self.decode = decode
        self.stop_ids = frozenset(stop_ids)
        self.null_ok = null_ok
        self.max_candidates = max_candidates
        self.overrides = 0
        self._memo: tuple[tuple[int, ...], str] | None = None

    def _text(self, ids: Sequence[int]) -> str:
        """``decode(ids)``; the last answer is kept, since the text checked for the token
        taken is the next position's answer so far."""
        key = tuple(ids)
        if self._memo is None or self._memo[0] != key:
            self._memo = (key, self.decode(ids))
        return self._memo[1]

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        text = self._text(generated)
        if self._allowed(text, generated, greedy):
            return greedy

        def blank(token: int) -> bool:
            return (
                token not in self.stop_ids
                and not self._text([*generated, token])[len(text) :].strip()
            )

        token = runner_up(
            logits, greedy, lambda t: self._allowed(text, generated, t), blank, self.max_candidates
        )
        if token is None:
            return greedy
        self.overrides += 1
        return token

    def _allowed(self, text: str, generated: Sequence[int], token: int) -> bool:
        if token in self.stop_ids:
            return self.complete(text, since=len(text))
        written = self._text([*generated, token])
        if written == text:  # a token that writes nothing (a special one) is no step of a value
            return False
        return self.admits(written, since=len(text))

    def admits(self, text: str, *, since: int = 0) -> bool:
        """Whether ``text`` is the beginning of an answer this row may give (``since``: where
        the text new to this check starts; the request's words are checked from there)."""
        value = text.lstrip()
        since = max(0, since - (len(text) - len(value)))
        if len(text) - len(value) > MAX_LEADING_WS:
            return False
        if not value:
            return True
        if value[0] == "n":  # the one JSON value that starts with n
            return self.null_ok and "null".startswith(value)
        end = json_value_end(value, 0, strict=True)
        if end == INVALID:
            return False
        if end == INCOMPLETE:
            return (
                self.shape.admits(value, False)
                and self._commas_ok(value)
                and self._words_ok(value, since=since)
            )
        # Complete: nothing may follow it (the row ends with the value).
        return (
            end == len(value)
            and self.shape.admits(value, True)
            and self._commas_ok(value)
            and self._words_ok(value, complete=True, since=since)
        )

    def complete(self, text: str, *, since: int = 0) -> bool:
        """Whether ``text`` is a whole answer this row may give (the row may end here;
        ``since`` as for :meth:`admits`)."""
        value = text.strip()
        since = max(0, since - (len(text) - len(text.lstrip())))
        if not value:
            return False
        if value == "null":
            return self.null_ok
        # A number ends only where something follows it: the sentinel closes it.
        end = json_value_end(value + "\n", 0, strict=True)
        return (
            end == len(value)
            and self.shape.admits(value, True)
            and self._commas_ok(value)
            and self._words_ok(value, complete=True, final=True, since=since)
        )

    def _words_ok(
        self, value: str, *, complete: bool = False, final: bool = False, since: int = 0
    ) -> bool:
        """With ``words_from``: the answer (so far) copies the request's words whole, and a
        ``complete`` one its list."""
        if self.words_from is None:
            return True
        if not words_copied_whole(self.words_from, value, final=final, since=since):
            return False
        # The list is checked where its end is written, not again at the end of the turn.
        return not (complete and since < len(value) and list_goes_on(self.words_from, value))

    def _commas_ok(self, value: str) -> bool:
        """With ``commas_from``: a string answer (so far) holds a comma only inside text the
        request writes."""
        if self.commas_from is None or not value.startswith('"'):
            return True
        content = value[1:]
        if content.endswith('"') and not content.endswith('\\"'):
            content = content[:-1]
        return "," not in content or content.lower() in self.commas_from
