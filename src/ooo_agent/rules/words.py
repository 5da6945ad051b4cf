"""The request's own words in an argument row's answer: pure text rules, no model.

A small sidecar copies the words of the request into its answers less faithfully than the
target does. These rules say where it slips — a word stopped early ("Christian" of
"Christianity": :func:`words_copied_whole`), a list closed after its first item
(:func:`list_goes_on`), a common noun capitalised that the request writes in lower case
(:func:`in_request_case`), a date made up where the request states one
(:func:`dates_stated`), a space before a copied string (:func:`space_led`) — for
:class:`~ooo_agent.sidecar.values.ValueConstraint` (token by token, in-process sidecars) and
for the wave's assembler (an answer as it lands, any backend).
No torch: a remote sidecar's waves use them too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ooo_agent.rules._parameters import free_string, options
from ooo_agent.rules.text import relevance_terms

__all__ = [
    "MIN_COPIED_WORD",
    "case_kept",
    "dates_stated",
    "described_date_form",
    "in_request_case",
    "list_goes_on",
    "names_a_date",
    "space_led",
    "stated_dates",
    "word_rest",
    "words_copied_whole",
]

MIN_COPIED_WORD = 3
"""Characters of a request's word an answer must have written before the word holds it
(:func:`words_copied_whole`): shorter beginnings ("di", "20") start too many words to say
which one is being copied."""


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
        for at in _word_starts(lower, _fold(written), inside)
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


def space_led(value: str, *, since: int = 0) -> bool:
    """Whether a string of an answer's text (so far) whose first character is written from
    ``since`` on starts with whitespace: a small sidecar writes ``" Edinburgh"`` after a
    tokenizer's word-initial space where the target writes ``"Edinburgh"``, and a copy of the
    request's words starts with none."""
    return any(
        not numeric and start >= since and written[:1].isspace()
        for start, written, _, numeric in _runs(value, False)
    )


def word_rest(request: str, value: str) -> str:
    """The rest of the request's word an answer's text (so far) stops inside: where its last
    string or number, still open, has written :data:`MIN_COPIED_WORD` or more characters of a
    word the request writes and every place it copies goes on (:func:`words_copied_whole`
    would refuse to end it there), the characters from there to that word's end at the first
    such place (``"s"`` for ``"unit`` and "10 units"); else ``""``."""
    runs = _runs(value, False)
    if not runs or runs[-1][2]:
        return ""
    _, written, _, numeric = runs[-1]
    lower = _lowered(request)
    if not _unfinished(request, lower, written, numeric):
        return ""
    goes_on = str.isdigit if numeric else str.isalnum
    start = end = _copies(request, lower, written, numeric)[0] + len(written)
    while end < len(request) and goes_on(request[end]):
        end += 1
    return request[start:end]


@functools.lru_cache(maxsize=64)
def _lowered(text: str) -> str:
    return _fold(text)


def _fold(text: str) -> str:
    """``text`` in lower case, one character for one: a character whose lower case is longer
    (the dotted capital I, "İ" → "i̇") stays as it is, so that places found in the folded text
    are places in ``text``."""
    folded = text.lower()
    if len(folded) == len(text):
        return folded
    return "".join(low if len(low := char.lower()) == 1 else char for char in text)


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
    item = _fold(runs[-1][1].strip())
    request = _lowered(request)
    if len(item) < 2:
        return False
    ends = [at + len(item) for at in _whole_words(request, item)]
    return bool(ends) and all(_listed_on(request, end) for end in ends)


def _whole_words(text: str, part: str) -> list[int]:
    """Where ``part`` stands in ``text`` as whole words (a word starts there and ends after it)."""
    end = len(part)
    return [
        at
        for at in _word_starts(text, part)
        if at + end == len(text) or not text[at + end].isalnum()
    ]


def case_kept(schema: Any) -> tuple[str, ...] | None:
    """For a parameter whose answers take the request's case (:func:`in_request_case`: a free
    string or an array of free strings), the options its schema writes, kept as the tool writes
    them; ``None`` for any other parameter."""
    items = schema.get("items") if isinstance(schema, Mapping) else None
    if not (free_string(schema) or free_string(items)):
        return None
    return (*options(schema), *options(items))


def in_request_case(request: str, value: str, keep: Collection[str] = ()) -> str:
    """An answer's text with each string it writes with a capital where the request writes the
    same words whole and only in lower case, written as the request does: ``"marble"`` for the
    sidecar's ``"Marble"`` of "a sculpture made of marble", ``["tomatoes", "pet food"]`` for
    ``["Tomatoes","Pet food"]``. A small sidecar capitalises the common nouns it copies; the
    target copies them as written (docs/sidecar.md). Left as they are: a string in capitals
    alone (a code: ``"CAN"``, ``"USD"``), one the request writes with a capital somewhere
    ("Empire State building", a sentence's first word), one it does not write whole, and one
    of ``keep`` (the parameter's options as the tool writes them: "Type of food like Sushi.").
    Only the case changes, so the text keeps its length and its JSON."""
    request_lower = _lowered(request)
    out = list(value)
    for start, written, closed, numeric in _runs(value, True):
        if numeric or not closed or "\\" in written or written in keep:
            continue
        if written == written.lower() or not any(c.islower() for c in written):
            continue  # nothing in capitals, or capitals alone
        folded = _fold(written)
        places = _whole_words(request_lower, folded)
        if places and all(request[at : at + len(folded)] == folded for at in places):
            out[start : start + len(written)] = folded
    return "".join(out)


_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(\d{1,2})(st|nd|rd|th)?"
_YEAR = r"((?:1\d|20)\d\d)"
_DATE_FORMS = (
    # 2022-03-11, 2022/08/16
    ("ymd", re.compile(r"(?<![\d.])" + _YEAR + r"([-/.])(\d{1,2})\2(\d{1,2})(?!\d)")),
    # 03/11/2022, 01-01-1980 (month first)
    ("mdy", re.compile(r"(?<![\d.])(\d{1,2})([-/])(\d{1,2})\2" + _YEAR + r"(?!\d)")),
    # March 17, 1915; Jun.20,2023; April 8th
    (
        "md",
        re.compile(r"\b" + _MONTH + r"\.?\s*" + _DAY + r"\b(?:\s*,?\s*" + _YEAR + r"\b)?", re.I),
    ),
    # 10th December 2022; 15th of October,2023
    (
        "dm",
        re.compile(
            r"\b" + _DAY + r"\s+(of\s+)?" + _MONTH + r"\b\.?(?:\s*,?\s*" + _YEAR + r"\b)?", re.I
        ),
    ),
)
_ANY_YEAR = re.compile(r"(?<![\d.])" + _YEAR + r"(?![\d])")
_DESCRIBED_FORM = re.compile(r"\b(dd|mm|yyyy)([-/.])(dd|mm|yyyy)\2(dd|mm|yyyy)\b", re.I)


def described_date_form(description: Any) -> str | None:
    """The numeric date form a parameter's description asks for (``"MM-DD-YYYY"``,
    ``"dd/mm/yyyy"``: day, month and a four-digit year, in lower case), else ``None``."""
    if not isinstance(description, str):
        return None
    match = _DESCRIBED_FORM.search(description)
    if match is None or {match.group(i).lower() for i in (1, 3, 4)} != {"dd", "mm", "yyyy"}:
        return None
    return match.group().lower()


def names_a_date(param: str) -> bool:
    """Whether a parameter is named as a date (``date``, ``start_date``, ``birthDate``; not
    ``update``): a word of its name is *date*."""
    return "date" in relevance_terms(param)


def _in_form(form: str, year: str, month: int, day: int) -> str:
    return form.replace("yyyy", year).replace("mm", f"{month:02d}").replace("dd", f"{day:02d}")


_VERBS = frozenset({"may", "march"})
"""Months' names that are also verbs: a bare number beside one is no date."""
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


@functools.lru_cache(maxsize=64)
def stated_dates(
    request: str, *, as_written: bool = False, form: str | None = None
) -> tuple[str, ...]:
    """The dates ``request`` states, as ISO dates (``YYYY-MM-DD``), in the order written:
    "2022-03-11" or "2022/03/11", "03/11/2022" (month first), "March 17, 1915", "Jun.20,2023",
    "10th December 2022", "15th of October,2023". A month and day without a year take the
    year written next after them, else the last one before ("from 2023 April 4th to April
    8th"); none written: no date. A month's name written short ("Jun") or one that is also a
    verb ("May", "March") beside a bare number ("May 5", "5 May") is taken only with an
    ordinal ending, an "of" or a year ("it may 5 people"). ``as_written``: each date also as
    the request writes it ("March 17, 1915"); ``form``: also in that form (a parameter's
    described form, :func:`described_date_form`: ``"mm-dd-yyyy"``), beside its ISO form."""
    years = [(m.start(), m.group(1)) for m in _ANY_YEAR.finditer(request)]
    found: list[tuple[int, str]] = []
    for kind, pattern in _DATE_FORMS:
        for match in pattern.finditer(request):
            groups = match.groups()
            if kind == "ymd":
                year, month, day = groups[0], int(groups[2]), int(groups[3])
            elif kind == "mdy":
                month, day, year = int(groups[0]), int(groups[2]), groups[3]
            else:
                if kind == "md":
                    name, day_text, ordinal, year = groups
                    marked = ordinal or year
                else:
                    day_text, ordinal, of, name, year = groups
                    marked = ordinal or of or year
                if not (marked or (len(name) > 3 and name.lower() not in _VERBS)):
                    continue
                month, day = _MONTHS.index(name[:3].lower()) + 1, int(day_text)
            if year is None:
                after = [y for at, y in years if at > match.start()]
                before = [y for at, y in years if at < match.start()]
                year = after[0] if after else before[-1] if before else None
            if year is not None and 1 <= month <= 12 and 1 <= day <= 31:
                found.append((match.start(), f"{year}-{month:02d}-{day:02d}"))
                if as_written:
                    found.append((match.start(), match.group().rstrip(" ,.")))
                if form is not None:
                    found.append((match.start(), _in_form(form, year, month, day)))
    return tuple(dict.fromkeys(date for _, date in sorted(found)))


_ISO_START = re.compile(r"\d{4}-")
_DIGIT_START = re.compile(r"\d")


def dates_stated(
    dates: Collection[str], value: str, *, since: int = 0, date_row: bool = False
) -> bool:
    """Whether each string of an answer's text (so far) written as an ISO date (four digits and
    a hyphen) is, or begins, one of ``dates`` (those the request states:
    :func:`stated_dates`), where there are any: a small sidecar writes "2015-03-17" for
    "March 17, 1915", "2022-03-01" for "March.11, 2022" or the first date of a stay for its
    end, where the target writes the date stated. In a ``date_row`` (a parameter named
    *date*) a string that starts with a digit is held from its first digit ("2015" is no
    beginning of "1915-03-17"; elsewhere four digits may be a year or a number and only the
    hyphen after them says "date"); ``dates`` may hold the dates as the request writes them
    too (``stated_dates(..., as_written=True)``: "01-01-1980", "1st June 2022"), which a
    target may copy as they are. A string closed after the date may go on past it
    ("2022-03-11 10:00"). Only strings written from ``since`` on are checked, and one that
    broke the rule before ``since`` is left to go on."""
    if not dates:
        return True
    dated = _DIGIT_START if date_row else _ISO_START
    for start, written, closed, numeric in _runs(value, False):
        if numeric or start + len(written) < since or not dated.match(written):
            continue
        before = written[: max(0, since - start)]
        if dated.match(before) and not _begins_date(dates, before, closed=False):
            continue  # a slip the model was left to make
        if not _begins_date(dates, written, closed=closed):
            return False
    return True


def _begins_date(dates: Collection[str], written: str, *, closed: bool) -> bool:
    for date in dates:
        if written.startswith(date):
            rest = written[len(date) :]
            if not rest or not rest[0].isdigit():
                return True
        elif not closed and date.startswith(written):
            return True
    return False
