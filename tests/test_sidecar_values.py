"""Argument rows held to their parameter's schema: ValueConstraint on a character vocabulary."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
import torch

from ooo_agent.rules.words import (
    dates_stated,
    described_date_form,
    in_request_case,
    list_goes_on,
    stated_dates,
    word_rest,
    words_copied_whole,
)
from ooo_agent.sidecar.values import ValueConstraint, comma_free_place, copies_words

VOCAB = [*'"ab12.[], nutrelxL', "<end>"]  # one character a token, then the end of the turn
END = VOCAB.index("<end>")


def _decode(ids: Sequence[int]) -> str:
    return "".join(VOCAB[i] for i in ids if i != END)


def _ids(text: str) -> list[int]:
    return [VOCAB.index(c) for c in text]


def _logits(order: str | list[str]) -> torch.Tensor:
    """Logits ranking the given tokens first (in that order), every other token below."""
    logits = torch.zeros(len(VOCAB))
    for rank, token in enumerate(order):
        logits[VOCAB.index(token)] = 100.0 - rank
    return logits


def _constraint(schema: dict[str, object], *, null_ok: bool = True) -> ValueConstraint:
    return ValueConstraint(schema, _decode, stop_ids={END}, null_ok=null_ok)


def _pick(c: ValueConstraint, written: str, order: str | list[str]) -> str:
    logits = _logits(order)
    return VOCAB[c.choose(_ids(written), logits, int(logits.argmax()))]


def _decode_greedily(c: ValueConstraint, order: list[str], steps: int = 8) -> str:
    """The row's constrained greedy answer when the model always ranks tokens as ``order``."""
    ids: list[int] = []
    for _ in range(steps):
        logits = _logits(order)
        token = c.choose(ids, logits, int(logits.argmax()))
        if token == END:
            break
        ids.append(token)
    return _decode(ids)


def test_an_integer_row_takes_the_likeliest_digits_and_ends_on_a_whole_number() -> None:
    c = _constraint({"type": "integer"})
    assert _pick(c, "", ['"', "1"]) == "1"  # a string can never be an integer
    assert _pick(c, "1", [".", "2"]) == "2"  # nor can a fraction
    assert _pick(c, "12", ["<end>"]) == "<end>"
    assert _pick(c, "", ["<end>", "2"]) == "2"  # an empty answer is no value
    assert c.overrides == 3
    assert _decode_greedily(c, ['"', "a", "<end>", "1"]) == "1"


def test_a_string_row_opens_its_quote_and_closes_only_by_ending() -> None:
    c = _constraint({"type": "string"})
    assert _pick(c, "", ["1", '"']) == '"'
    assert _pick(c, '"a', ["<end>", '"']) == '"'  # an open string is not a whole value
    assert _pick(c, '"a"', [" ", ",", "<end>"]) == "<end>"  # nothing follows a whole value
    assert json.loads(_decode_greedily(c, ["<end>", '"', "a"])) == ""  # '"', '"', then end


def test_enum_array_items_and_python_type_names_follow_the_schema() -> None:
    enum = _constraint({"type": "string", "enum": ["ab", "ba"]})
    assert _pick(enum, '"', ["x", "a"]) == "a"
    assert _pick(enum, '"a', ["a", "b"]) == "b"
    items = _constraint({"type": "array", "items": {"type": "integer"}})
    assert _pick(items, "", ['"', "["]) == "["
    assert _pick(items, "[", ['"', "1"]) == "1"
    assert _pick(items, "[1", [".", ",", "]"]) == ","
    # BFCL writes Python type names; "float" is a JSON number, fractions allowed.
    number = _constraint({"type": "float"})
    assert _pick(number, "1", [".", "<end>"]) == "."


def test_null_only_where_the_row_may_answer_it() -> None:
    optional = _constraint({"type": "integer"}, null_ok=True)
    assert _decode_greedily(optional, ["n", "u", "l", "<end>"]) == "null"
    required = _constraint({"type": "integer"}, null_ok=False)
    assert _pick(required, "", ["n", "1"]) == "1"
    assert not required.complete("null") and optional.complete(" null ")
    assert not optional.admits("nul1")


def test_a_token_that_writes_nothing_is_never_taken() -> None:
    """A special token decodes to nothing: taken in place of a refused token it would only put
    the choice off (and a chat model goes on past it with a new turn's words)."""
    special = len(VOCAB)

    def decode(ids: Sequence[int]) -> str:
        return _decode([i for i in ids if i != special])

    held = ValueConstraint({"type": "integer"}, decode, stop_ids={END})
    logits = torch.cat([_logits(["a", "b"]), torch.tensor([50.0])])  # then the special token
    assert held.choose(_ids("1"), logits, VOCAB.index("a")) != special
    # nothing else allowed among the candidates: the model's own token stays
    few = ValueConstraint({"type": "integer"}, decode, stop_ids={END}, max_candidates=3)
    assert few.choose(_ids("1"), logits, VOCAB.index("a")) == VOCAB.index("a")


def test_whitespace_is_not_taken_in_place_of_a_refused_token() -> None:
    c = _constraint({"type": "integer"})
    # The blank is allowed (a leading space) but would only put the choice off.
    assert _pick(c, "", ['"', " ", "1"]) == "1"
    assert _pick(c, "", [" ", "1"]) == " "  # the model's own blank is kept
    assert not c.admits("     1")  # bounded leading whitespace


def test_nothing_allowed_within_the_candidates_keeps_the_models_token() -> None:
    c = ValueConstraint({"type": "boolean"}, _decode, stop_ids={END}, max_candidates=2)
    assert _pick(c, "", ['"', "1", "t"]) == '"'  # "t" is third: past the two looked at
    assert c.overrides == 0
    with pytest.raises(ValueError, match="max_candidates"):
        ValueConstraint({}, _decode, stop_ids={END}, max_candidates=0)


def test_a_free_schema_takes_any_json_value() -> None:
    c = _constraint({})
    assert _pick(c, "", ["[", '"']) == "["
    assert _pick(c, "", ["x", "1"]) == "1"  # still JSON
    assert c.complete('"a"') and c.complete("12") and not c.complete("[1")


def test_a_free_string_holds_a_comma_only_where_the_request_writes_one() -> None:
    held = ValueConstraint(
        {"type": "string"}, _decode, stop_ids={END}, commas_from="Rain in Bal, or in Ab?"
    )
    # "ab" then a comma and a state of its own: the request never writes "ab, "
    assert _pick(held, '"ab', [",", '"']) == '"'
    assert _pick(held, '"ab"', ["<end>"]) == "<end>"
    # "bal, " is the request's own text (case aside): the comma stays
    assert _pick(held, '"bal', [",", '"']) == ","
    assert held.complete('"bal, or"') and not held.complete('"ab, x"')
    assert held.overrides == 1
    # without the request's text, or on a value that is no string, commas are free
    free = ValueConstraint({"type": "string"}, _decode, stop_ids={END})
    assert _pick(free, '"ab', [",", '"']) == ","
    listed = ValueConstraint(
        {"type": "array", "items": {"type": "number"}}, _decode, stop_ids={END}, commas_from="x"
    )
    assert _pick(listed, "[1", [",", "]"]) == ","


@pytest.mark.parametrize(
    ("param", "description", "bare"),
    [
        ("city", "The city where the hotel is located.", True),
        ("location", "Where the store is.", True),
        ("where", "The destination of the drive.", True),
        ("country", "The country.", True),
        ("location", "The city and state, e.g. Boston, MA.", False),  # the description's comma
        ("location", "Specify it as City, State.", False),
        ("text", "The text to be translated.", False),  # no place: the request's commas stand
        ("route", "The route to take.", False),
        ("states", "Ids of the states of the machine.", False),
        ("start_location", "Where to start.", True),  # a name's parts are words
        ("cityName", "Its name.", True),
        ("company", "The company to report the revenue for.", False),  # not "venue"
        ("original_text", "The original text.", False),  # not "origin"
        ("note", "Free text such as the capacity needed.", False),
    ],
)
def test_a_place_described_without_a_comma_takes_none(
    param: str, description: str, bare: bool
) -> None:
    schema = {"type": "string", "description": description}
    assert comma_free_place(param, schema) is bare
    assert comma_free_place(param, "not a schema") is False


def test_an_empty_commas_from_refuses_every_comma() -> None:
    held = ValueConstraint({"type": "string"}, _decode, stop_ids={END}, commas_from="")
    assert _pick(held, '"ab', [",", '"']) == '"'
    assert held.complete('"ab"') and not held.complete('"a, b"')


@pytest.mark.parametrize(
    ("schema", "copies"),
    [
        ({"type": "string"}, True),
        ({"type": "string", "enum": ["a", "b"]}, False),  # the tool's words, not the request's
        ({"type": "string", "pattern": ",\\s*\\S"}, False),
        ({"type": "string", "format": "date"}, False),
        ({"type": "integer"}, True),
        ({"type": "float"}, True),  # BFCL's Python type names
        ({"type": "number", "enum": [1, 2]}, False),
        ({"type": "array", "items": {"type": "string"}}, True),
        ({"type": "array", "items": {"type": "string", "enum": ["x"]}}, False),
        ({"type": "boolean"}, False),
        ({"type": "dict"}, False),
        ("no schema", False),
    ],
)
def test_the_rows_that_copy_the_requests_words(schema: object, copies: bool) -> None:
    assert copies_words(schema) is copies


def test_a_word_copied_from_the_request_is_copied_whole() -> None:
    held = ValueConstraint({"type": "string"}, _decode, stop_ids={END}, words_from="A Label, x")
    # three letters of the request's "label": no closing quote before the word ends ...
    assert _pick(held, '"lab', ['"', "e"]) == "e"
    # ... and no slip inside it
    assert _pick(held, '"labe', ["x", "l"]) == "l"
    assert _pick(held, '"label', ['"']) == '"'
    assert held.complete('"label"') and not held.complete('"lab"')  # a word's first letter aside
    assert held.overrides == 2
    # a slip the model was left to make (nothing allowed among the candidates) is not held
    # against what follows it: the row is not refused token after token
    assert _pick(held, '"labx', ['"', "e"]) == '"'
    assert not held.complete('"labx"')  # the whole answer, checked from its start
    # two letters start too many words to say which; text the request does not write is free
    assert _pick(held, '"la', ['"']) == '"'
    assert _pick(held, '"tub', ['"']) == '"'
    # the same for a number: no 122 for the request's 1221, nor 1222
    number = ValueConstraint({"type": "integer"}, _decode, stop_ids={END}, words_from="pay 1221")
    assert _pick(number, "122", ["<end>", "1"]) == "1"
    assert _pick(number, "122", ["2", "1"]) == "1"
    assert number.complete("1221") and not number.complete("122")
    assert number.complete("12")  # too short to be a copy of one word
    # a number ends where the request's digits do, letters after them or not ("5000m")
    metres = ValueConstraint({"type": "integer"}, _decode, stop_ids={END}, words_from="at 1221m")
    assert metres.complete("1221") and not metres.complete("122")
    # letter for letter past a word's first letter: "LAB" is a code, no copy of "Label"
    assert held.complete('"LAB"') and held.complete('"LABEL"')
    assert _pick(held, '"labe', ["L", "l"]) == "l"
    # without the request's text the row is free
    free = ValueConstraint({"type": "string"}, _decode, stop_ids={END})
    assert _pick(free, '"lab', ['"', "e"]) == '"'


@pytest.mark.parametrize(
    ("value", "rest"),
    [
        ('"lab', "el"),  # of "Label": the word's first letter in either case
        ('["x", "tab', "le"),  # an array's last item
        ("122", "1"),  # a number: its digits
        ('"label', ""),  # the word is whole
        ('"la', ""),  # too short to say which word
        ('"lab"', ""),  # closed: nothing to finish (the rule refuses it instead)
        ('"xyz', ""),  # no word of the request's
        ("", ""),
    ],
)
def test_the_rest_of_a_word_an_answer_stops_inside(value: str, rest: str) -> None:
    assert word_rest("A Label, a table, 1221", value) == rest


def test_a_word_is_finished_where_no_likely_token_finishes_it() -> None:
    """Where no token among the ``max_candidates`` best finishes a word the answer stops
    inside, the first token of its rest is taken (with ``encode``); without, the model's own."""
    schema = {"type": "string"}
    finishing = ValueConstraint(
        schema, _decode, stop_ids={END}, words_from="A Label, x", max_candidates=1, encode=_ids
    )
    assert _pick(finishing, '"lab', ['"']) == "e"
    assert _pick(finishing, '"labe', ['"']) == "l"
    assert _pick(finishing, '"label', ['"']) == '"'  # whole: the model's own
    assert finishing.overrides == 2
    alone = ValueConstraint(
        schema, _decode, stop_ids={END}, words_from="A Label, x", max_candidates=1
    )
    assert _pick(alone, '"lab', ['"']) == '"'  # gives way, as before
    # the rest's first token must be allowed too (here a comma, in a row that takes none)
    commas = ValueConstraint(
        schema,
        _decode,
        stop_ids={END},
        words_from="A Label, x",
        commas_from="",
        max_candidates=1,
        encode=lambda text: _ids(","),
    )
    assert _pick(commas, '"lab', ['"']) == '"'
    assert commas.overrides == 0


@pytest.mark.parametrize(
    ("value", "keep", "written"),
    [
        ('"Marble"', (), '"marble"'),  # the request writes it in lower case alone
        ('["Tomatoes","Pet food"]', (), '["tomatoes","pet food"]'),  # each item, format kept
        ('"marble"', (), '"marble"'),  # already as the request writes it
        ('"CAN"', (), '"CAN"'),  # capitals alone: a code
        ('"Empire State Building"', (), '"Empire State Building"'),  # a capital in the request
        ('"Sushi"', ("Sushi",), '"Sushi"'),  # the tool's own option, as the tool writes it
        ('"Sushi Bar"', (), '"Sushi Bar"'),  # not written whole by the request
        ('"Tomato"', (), '"Tomato"'),  # "tomatoes": no word end after "tomato"
        ('"Gluten-free"', (), '"Gluten-free"'),  # the request capitalises it (once)
        ("12", (), "12"),
        ('"Ma\\"rble"', (), '"Ma\\"rble"'),  # an escape: left alone
        ('"Marble', (), '"Marble'),  # not closed: left alone
    ],
)
def test_a_string_takes_the_requests_lower_case(
    value: str, keep: tuple[str, ...], written: str
) -> None:
    request = (
        "A sculpture of marble near the Empire State building; sushi, tomatoes and pet food. "
        "Gluten-free, please, gluten-free. Can you?"
    )
    assert in_request_case(request, value, keep) == written


def test_a_capital_whose_lower_case_is_longer_moves_no_place() -> None:
    # "İ".lower() is two characters: places found in the lowered request stay its places
    request = "İİ İstanbul to Ankara, 1221 km"
    assert not words_copied_whole(request, '"Ankar"', final=True)
    assert words_copied_whole(request, '"Ankara"', final=True)
    assert not words_copied_whole(request, "122", final=True)
    assert words_copied_whole(request, "1221", final=True)
    assert not list_goes_on(request, '["Ankara"]')  # "Ankara, 1221": no "and" ends a list
    assert list_goes_on("İİ İzmir and Bursa", '["İzmir"]')


@pytest.mark.parametrize(
    ("request_text", "value", "written"),
    [
        ("chicken and mushrooms, vegetarian.", '["chicken"]', True),
        ("chicken and mushrooms, vegetarian.", '["Chicken", "mushrooms"]', False),  # a clause
        ("tomatoes, lettuce & eggs", '["tomatoes"]', True),
        ("tomatoes, lettuce & eggs", '["tomatoes", "lettuce"]', True),
        ("tomatoes, lettuce & eggs", '["tomatoes", "lettuce", "eggs"]', False),
        ("a, b, and cc or dd", '["a", "b", "cc"]', True),
        ("rice and beans", '["rice", "beans"]', False),
        ("rice and beans", '["beans", "rice"]', True),  # listed again in another order: goes on
        ("rice and beans", '["ric"]', False),  # no item of the request's
        ("rice and beans", '["rice"', False),  # not closed yet
        ("rice and beans", "[1]", False),
        ("rice and beans", "[]", False),
    ],
)
def test_a_list_the_request_writes_goes_on_to_its_end(
    request_text: str, value: str, written: bool
) -> None:
    """``written``: the request lists on from the answer's last item (the array may not close)."""
    assert list_goes_on(request_text.lower(), value) is written


def test_an_array_row_lists_the_requests_items_whole() -> None:
    held = ValueConstraint(
        {"type": "array", "items": {"type": "string"}},
        _decode,
        stop_ids={END},
        words_from="rub, tea and ale. a tub, x",
    )
    assert _pick(held, '["rub"', ["]", ","]) == ","
    assert _pick(held, '["rub", "tea", "ale"', ["]", ","]) == "]"
    assert _pick(held, '["tub"', ["]", ","]) == "]"  # the comma starts no list
    assert held.complete('["tea", "ale"]') and not held.complete('["tea"]')
    assert held.complete('["tea"]', since=len('["tea"]'))  # checked when "]" was written


@pytest.mark.parametrize(
    ("request_text", "dates"),
    [
        ("Einstein's contribution on March 17, 1915?", ("1915-03-17",)),
        ("the price at closing March.11, 2022.", ("2022-03-11",)),
        ("this weekend, Jun.20,2023.", ("2023-06-20",)),
        ("from 2023 April 4th to April 8th?", ("2023-04-04", "2023-04-08")),  # the year before
        ("from July 10 to July 20, 2022", ("2022-07-10", "2022-07-20")),  # the year after
        ("starting from 15th October,2023", ("2023-10-15",)),
        ("from 10th of December 2022", ("2022-12-10",)),
        ("the air in London 2022/08/16?", ("2022-08-16",)),
        ("born 01-01-1980", ("1980-01-01",)),  # month first
        ("It may 5 people, in 2022", ()),  # "may" the verb: no ordinal, "of" or year with it
        ("on April 8th", ()),  # no year written
        ("the 2021 season", ()),
        ("on 2022-13-01", ()),  # no 13th month
        ("walk a March 10 miles in 2022", ()),  # "march" the verb, as "may"
    ],
)
def test_the_dates_a_request_states(request_text: str, dates: tuple[str, ...]) -> None:
    assert stated_dates(request_text) == dates


@pytest.mark.parametrize(
    ("value", "since", "kept"),
    [
        ('"2015', 0, True),  # four digits: a year, a number — not yet a date
        ('"2015-', 0, False),  # a date the request does not state
        ('"1915-03-1', 0, True),
        ('"1915-03-17"', 0, True),
        ('"1915-03-17 10:00"', 0, True),  # a time after the date
        ('"1915-03-171', 0, False),
        ('["1915-03-17", "2015-', 14, False),  # each string of an array
        ('"2015-03-17"', 11, True),  # a slip left to the model before: not held against it
        ("2015", 0, True),  # a number is no date
        ('"Paris"', 0, True),
    ],
)
def test_a_date_written_is_one_the_request_states(value: str, since: int, kept: bool) -> None:
    assert dates_stated(("1915-03-17",), value, since=since) is kept
    assert dates_stated((), value, since=since)  # the request states none: free


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ('"2015', False),  # in a date row the digits say "date" from the first
        ('"20150317"', False),
        ('"19', True),
        ('"1915-03-17"', True),
        ('"March 17, 1915"', True),  # a date written in words: left to the model
    ],
)
def test_a_date_row_is_held_from_its_first_digit(value: str, kept: bool) -> None:
    assert dates_stated(("1915-03-17",), value, date_row=True) is kept


def test_a_date_may_be_copied_as_the_request_writes_it() -> None:
    said = "born 01-01-1980, from 1st June 2022."
    assert stated_dates(said) == ("1980-01-01", "2022-06-01")
    dates = stated_dates(said, as_written=True)
    assert set(dates) == {"1980-01-01", "01-01-1980", "2022-06-01", "1st June 2022"}
    for value in ('"01-01-1980"', '"1980-01-01"', '"1st June 2022"', '"2022-06-01"'):
        assert dates_stated(dates, value, date_row=True)
    assert not dates_stated(dates, '"02-01', date_row=True)
    assert not dates_stated(dates, '"01-06-2022"', date_row=True)  # a form nobody asked for
    # the form the parameter's description asks for
    form = described_date_form("The check-in date, in the format of DD-MM-YYYY.")
    assert form == "dd-mm-yyyy"
    assert "01-06-2022" in stated_dates(said, as_written=True, form=form)
    assert described_date_form("Date (yyyy-mm-dd).") == "yyyy-mm-dd"
    assert described_date_form("A code like mm-mm-yyyy") is None
    assert described_date_form(None) is None


def test_a_date_row_takes_the_stated_date() -> None:
    vocab = [*'"0123456789-', "<end>"]
    end = vocab.index("<end>")

    def decode(ids: Sequence[int]) -> str:
        return "".join(vocab[i] for i in ids if i != end)

    held = ValueConstraint(
        {"type": "string"}, decode, stop_ids={end}, words_from="on March 17, 1915 and May 2nd"
    )
    assert {"1915-03-17", "1915-05-02"} <= set(held.dates)  # and as written: "May 2nd"
    ids = [vocab.index(c) for c in '"201']
    logits = torch.zeros(len(vocab))
    logits[vocab.index("5")] = 3.0  # the sidecar's "2015-03-17" ...
    logits[vocab.index("-")] = 2.0
    logits[vocab.index("9")] = 1.0
    assert vocab[held.choose(ids, logits, int(logits.argmax()))] == "5"  # "2015" may be a year
    ids = [vocab.index(c) for c in '"2015']
    assert vocab[held.choose(ids, logits, int(logits.argmax()))] != "-"  # ... but no date
    ids = [vocab.index(c) for c in '"191']
    assert vocab[held.choose(ids, logits, int(logits.argmax()))] == "5"
    ids = [vocab.index(c) for c in '"1915-0']
    logits = torch.zeros(len(vocab))
    logits[vocab.index("4")], logits[vocab.index("5")] = 2.0, 1.0
    assert vocab[held.choose(ids, logits, int(logits.argmax()))] == "5"  # May, not April


def test_a_copied_string_starts_with_no_space() -> None:
    """A copy of the request's words starts with none (the sidecar's ``" Edinburgh"`` never
    matches the target's ``"Edinburgh"``); inside the text a space is free."""
    held = ValueConstraint({"type": "string"}, _decode, stop_ids={END}, words_from="a b")
    assert _pick(held, '"', [" ", "a"]) == "a"
    assert _pick(held, '"a', [" ", "b"]) == " "
    assert held.complete('""') and not held.complete('" a"')
    listed = ValueConstraint(
        {"type": "array", "items": {"type": "string"}}, _decode, stop_ids={END}, words_from="a b"
    )
    assert _pick(listed, '["a", "', [" ", "b"]) == "b"
    free = ValueConstraint({"type": "string"}, _decode, stop_ids={END})  # no request: free
    assert _pick(free, '"', [" ", "a"]) == " "


def test_a_number_written_inside_a_call_ends_on_a_comma_never_on_null() -> None:
    row = _constraint({"type": "integer"})
    assert row.free_number
    assert not _constraint({"type": "integer", "enum": [1, 2]}).free_number
    assert not _constraint({"type": "string"}).free_number
    assert _constraint({"type": ["number", "null"]}).free_number
    comma = VOCAB.index(",")
    inside = row.in_call({comma})
    # The row's own answer ends with the turn; the same value inside a call with a comma.
    assert _pick(row, "12", [",", "<end>"]) == "<end>"
    assert _pick(inside, "12", ["<end>", ","]) == ","
    assert _pick(inside, "1", [",", "<end>", "2"]) == ","  # 1 is a whole number
    assert _pick(inside, "", ["n", "1"]) == "1"  # null is no value inside a call
    assert _pick(row, "", ["n", "1"]) == "n"  # the row itself may still answer it
    assert inside.stop_ids == {comma} and row.stop_ids == {END}
    # Inside a string the comma is part of the value; after its closing quote it ends it.
    text = _constraint({"type": "string"}).in_call({comma})
    assert _pick(text, '"a', [",", '"']) == ","
    assert _pick(text, '"a,b"', [",", "<end>"]) == ","
    assert _pick(text, '"a,b"', ["<end>", "b", ","]) == ","
