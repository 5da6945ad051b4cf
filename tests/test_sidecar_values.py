"""Argument rows held to their parameter's schema: ValueConstraint on a character vocabulary."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
import torch

from ooo_agent.sidecar.values import ValueConstraint, comma_free_place

VOCAB = [*'"ab12.[], nutrelx', "<end>"]  # one character a token, then the end of the turn
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
