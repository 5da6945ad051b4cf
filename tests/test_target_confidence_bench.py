"""benchmarks/target_confidence.py: the sidecar's rows split by how sure the target was."""

from __future__ import annotations

import pytest

from repo_scripts import load_script


@pytest.fixture(scope="module")
def module():  # type: ignore[no-untyped-def]
    return load_script("benchmarks", "target_confidence")


TEXT = '<tool_call>\n{"name": "book", "arguments": {"city": "Lima, PE", "people": 4, "tags": ["a", "b"]}}\n</tool_call>'


def test_value_spans_cover_each_value_exactly(module) -> None:  # type: ignore[no-untyped-def]
    arguments = {"city": "Lima, PE", "people": 4, "tags": ["a", "b"]}
    spans = module.value_spans(TEXT, arguments)
    assert {k: TEXT[a:b] for k, (a, b) in spans.items()} == {
        "city": '"Lima, PE"',
        "people": "4",
        "tags": '["a", "b"]',
    }
    # keys the call does not hold are not reported; a text without arguments has none
    assert module.value_spans(TEXT, {"city": "x"}).keys() == {"city"}
    assert module.value_spans("no call here", arguments) == {}


def test_least_sure_drops_a_last_token_that_runs_past_the_value(module) -> None:  # type: ignore[no-untyped-def]
    text = '{"a": "xy"}'
    span = (6, 10)  # '"xy"'
    offsets = [(0, 4), (4, 7), (7, 9), (9, 11)]  # '{"a"', ': "', 'xy', '"}'
    probs = [0.99, 0.95, 0.6, 0.1]
    assert text[span[0] : span[1]] == '"xy"'
    # '"}' also decides that the call ends: not the value's own choice
    assert module.least_sure(offsets, probs, span) == pytest.approx(0.6)
    # a value of one token that also runs past it keeps that token
    assert module.least_sure([(0, 6), (6, 11)], [0.9, 0.3], (6, 10)) == pytest.approx(0.3)
    assert module.least_sure(offsets, probs, (20, 22)) is None


def test_split_counts_hits_per_bin(module) -> None:  # type: ignore[no-untyped-def]
    found = [
        ("r1", "a", "target right", True),
        ("r1", "b", "target right", False),
        ("r2", "a", "target wrong", False),
        ("r2", "c", "target right", True),
        ("r3", "a", "target right", True),
    ]
    sure = {("r1", "a"): 0.97, ("r1", "b"): 0.95, ("r2", "a"): 0.4, ("r3", "a"): 0.7}
    table = module.split(found, sure)
    assert table == {
        module.BINS[0]: {"hits": 1, "n": 2},
        module.BINS[1]: {"hits": 1, "n": 1},
        module.BINS[2]: {"hits": 0, "n": 1},
        module.LEFT_OUT: {"hits": 1, "n": 1},
        "all": {"hits": 3, "n": 5},
    }
    assert module.bin_of(0.9) == module.BINS[0]
    assert module.bin_of(0.5) == module.BINS[1]
    assert module.bin_of(0.49) == module.BINS[2]
