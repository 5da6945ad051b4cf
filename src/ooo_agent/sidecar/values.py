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

import copy
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import torch

from ooo_agent.decoding.constraint import runner_up
from ooo_agent.formats._scan import INCOMPLETE, INVALID, ValueShape, json_value_end
from ooo_agent.rules.words import (
    dates_stated,
    list_goes_on,
    space_led,
    stated_dates,
    word_rest,
    words_copied_whole,
)
from ooo_agent.sidecar.slots import normalize_schema

__all__ = [
    "ValueConstraint",
    "comma_free_place",
    "copies_words",
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
    is no place (a message, a route), the request's own commas stand (docs/sidecar.md)."""
    if not isinstance(schema, Mapping):
        return False
    description = schema.get("description")
    description = description if isinstance(description, str) else ""
    if "," in description:
        return False
    words = _NAME_PARTS.sub(" ", param)  # start_location, cityName: whole words
    return _PLACE_WORD.search(words) is not None or _PLACE_WORD.search(description) is not None


def copies_words(schema: Any) -> bool:
    """Whether a parameter's value is written from the request's words: a free string (no
    enum, pattern or format), a number without an enum, or an array of either — the rows
    :func:`~ooo_agent.rules.words.words_copied_whole` holds. An enum's options are the
    tool's words, not the request's."""
    shape = normalize_schema(schema)
    if not isinstance(shape, Mapping) or any(key in shape for key in ("enum", "const")):
        return False
    kind = shape.get("type")
    if kind == "array":
        return copies_words(shape.get("items"))
    if kind == "string":
        return not any(key in shape for key in ("pattern", "format"))
    return kind in ("number", "integer")


MAX_LEADING_WS = 4
"""Characters of whitespace an answer may start with (a chat model may write `` "Paris"``)."""


class ValueConstraint:
    """Keeps one argument row's answer a (beginning of a) value its schema accepts; the rules
    and why they hold are in docs/sidecar.md.

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
            writes (case aside), so no "San Francisco, CA" for "in San Francisco".
        words_from: the request's text, for a row :func:`copies_words`: the answer copies the
            request's words whole (:func:`~ooo_agent.rules.words.words_copied_whole`), an
            array its lists whole (:func:`~ooo_agent.rules.words.list_goes_on`), a string
            written as an ISO date is one the request states
            (:func:`~ooo_agent.rules.words.dates_stated`), and no string starts with
            whitespace (:func:`~ooo_agent.rules.words.space_led`).
        date_row: with ``words_from``, the row is a parameter named *date* (``date``,
            ``start_date``…): a string that starts with a digit is held to the stated dates
            from its first digit, not only once a hyphen follows four of them.
        date_form: the numeric form the parameter's description asks dates in
            (:func:`~ooo_agent.rules.words.described_date_form`: ``"mm-dd-yyyy"``): the
            stated dates in that form are allowed too.
        encode: text → token ids, as the sidecar's tokenizer encodes it (no special tokens):
            with ``words_from``, where no token among the ``max_candidates`` best finishes a
            word the answer stops inside, the first token of the rest of that word is taken
            (:func:`~ooo_agent.rules.words.word_rest`).

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
        encode: Callable[[str], Sequence[int]] | None = None,
        date_row: bool = False,
        date_form: str | None = None,
    ) -> None:
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, not {max_candidates}")
        self.shape = ValueShape.of(normalize_schema(schema))
        self.commas_from = commas_from.lower() if commas_from is not None else None
        self.words_from = words_from
        self.dates = (
            stated_dates(words_from, as_written=True, form=date_form)
            if words_from is not None
            else ()
        )
        self.date_row = date_row
        self.decode = decode
        self.encode = encode
        self.stop_ids = frozenset(stop_ids)
        self.null_ok = null_ok
        self.max_candidates = max_candidates
        self.overrides = 0
        self.inside_call = False
        self._memo: tuple[tuple[int, ...], str] | None = None

    @property
    def free_number(self) -> bool:
        """Whether the row's value is a number with no options of its own (no enum)."""
        kinds = self.shape.kinds - {"null"}
        return bool(kinds) and kinds <= {"number", "integer"} and self.shape.enum is None

    def in_call(self, ends: Collection[int]) -> ValueConstraint:
        """The same rules for the row's value written inside a call
        (``WaveOptions.joint_values``): it ends with one of ``ends`` (the tokens that start
        ``,`` or ``}``), not with the end of the turn — where the value is not complete yet
        such a token is part of it ("Boston, MA") — and it is a value, never ``null``."""
        other = copy.copy(self)
        other.stop_ids = frozenset(ends)
        other.inside_call = True
        other.null_ok = False
        other.overrides = 0
        other._memo = None
        return other

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
            token = self._finishing(text, generated)
        if token is None:
            return greedy
        self.overrides += 1
        return token

    def _finishing(self, text: str, generated: Sequence[int]) -> int | None:
        """The first token of the rest of the request's word the answer stops inside, where
        the rule allows it (``encode`` and ``words_from`` given); else None."""
        if self.encode is None or self.words_from is None:
            return None
        rest = word_rest(self.words_from, text.lstrip())
        ids = self.encode(rest) if rest else ()
        if not ids or not self._allowed(text, generated, ids[0]):
            return None
        return int(ids[0])

    def _allowed(self, text: str, generated: Sequence[int], token: int) -> bool:
        if token in self.stop_ids:
            if self.complete(text, since=len(text)):
                return True
            if not self.inside_call:
                return False
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
        ``complete`` one its list; a date it writes is one the request states; no string starts
        with whitespace."""
        if self.words_from is None:
            return True
        if not words_copied_whole(self.words_from, value, final=final, since=since):
            return False
        if space_led(value, since=since):
            return False
        if not dates_stated(self.dates, value, since=since, date_row=self.date_row):
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
