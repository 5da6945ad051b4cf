"""The lexical prior on a sidecar's tool choice (``ooo_agent.sidecar.relevance``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ooo_agent.sidecar._wave import WaveOptions
from ooo_agent.sidecar.relevance import (
    NAME_WEIGHT,
    PARAMETER_WEIGHT,
    log_softmax,
    relevance_terms,
    tool_relevance,
    with_relevance,
)


def _tool(name: str, description: str = "") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object"}},
    }


def test_terms_split_names_drop_stopwords_and_strip_suffixes() -> None:
    assert relevance_terms("geometry.circle_area") == {"geometry", "circle", "area"}
    assert relevance_terms("getOrderStatus") == {"order", "statu"}  # "get": nothing; stems
    assert relevance_terms("Find the orders of Bob") == {"order", "bob"}
    assert relevance_terms("booking books") == {"book"}
    assert relevance_terms("is it ok to go") == set()  # two letters or fewer


def test_a_name_word_counts_twice_a_description_word_once_weighted_by_rarity() -> None:
    tools = [
        _tool("weather.forecast", "Forecast for a city."),
        _tool("calendar.add_event", "Adds an event to the calendar of a city office."),
        _tool("currency.convert", "Converts an amount between currencies."),
    ]
    messages = [{"role": "user", "content": "What is the weather forecast in Lyon?"}]
    scores = tool_relevance(messages, tools)
    n = len(tools)
    # "weather": the first name only; "forecast": its name and its description.
    idf1 = math.log((n + 1) / (1 + 0.5))
    assert scores[0] == pytest.approx(NAME_WEIGHT * 2 * idf1 + idf1)
    assert scores[1] == 0.0 and scores[2] == 0.0
    # A word every tool shares is worth less than a word one tool has.
    shared = [{"role": "user", "content": "city weather"}]
    both = tool_relevance(shared, tools[:2])
    idf_one, idf_all = math.log(3 / 1.5), math.log(3 / 2.5)
    assert both == pytest.approx([NAME_WEIGHT * idf_one + idf_all, idf_all])


def test_a_parameter_word_counts_half_and_weight_zero_leaves_parameters_out() -> None:
    loan = _tool("finance.loan_payment", "Monthly payment of a loan.")
    loan["function"]["parameters"] = {
        "type": "object",
        "properties": {
            "principal": {"type": "number", "description": "Amount borrowed."},
            "annual_rate": {"type": "number", "description": "Yearly interest, a fraction."},
        },
    }
    growth = _tool("finance.compound_growth", "What a deposit is worth after some years.")
    tools = [loan, growth]
    content = "A principal of 10000 at 5% interest: what will my deposit be worth?"
    messages = [{"role": "user", "content": content}]
    idf = math.log(3 / 1.5)  # "principal", "interest", "deposit", "worth": one tool each
    with_parameters = tool_relevance(messages, tools)
    assert PARAMETER_WEIGHT == 0.5
    assert with_parameters == pytest.approx([2 * PARAMETER_WEIGHT * idf, 2 * idf])
    assert max(range(2), key=with_parameters.__getitem__) == 1  # the description outweighs
    heavier = tool_relevance(messages, tools, parameter_weight=2.0)
    assert heavier == pytest.approx([4 * idf, 2 * idf])  # and here the parameters decide
    # 0: the parameters neither score nor count towards a word's rarity (the rule before).
    assert tool_relevance(messages, tools, parameter_weight=0) == pytest.approx([0.0, 2 * idf])
    shared = [{"role": "user", "content": "the amount"}]
    described = [_tool("a.pay", "Pay an amount."), loan]
    plain = tool_relevance(shared, described, parameter_weight=0)
    assert plain == pytest.approx([math.log(3 / 1.5), 0.0])
    both = tool_relevance(shared, described)  # "amount" now in both tools: rarer no more
    assert both == pytest.approx([math.log(3 / 2.5), PARAMETER_WEIGHT * math.log(3 / 2.5)])
    with pytest.raises(ValueError, match="at least 0"):
        tool_relevance(messages, tools, parameter_weight=-1)
    # A property schema that is no object still gives its name; odd "properties" give nothing.
    odd = _tool("odd.tool")
    odd["function"]["parameters"] = {"type": "object", "properties": {"amount": True}}
    asked = [{"role": "user", "content": "amount"}]
    assert tool_relevance(asked, [odd, growth]) == pytest.approx([0.5 * idf, 0.0])
    odd["function"]["parameters"] = {"type": "object", "properties": ["amount"]}
    assert tool_relevance(asked, [odd, growth]) == [0.0, 0.0]


def test_only_the_users_words_count() -> None:
    tools = [_tool("weather.forecast"), _tool("currency.convert")]
    messages = [
        {"role": "system", "content": "You can convert currency."},
        {"role": "user", "content": [{"type": "text", "text": "The forecast, please"}]},
        {"role": "assistant", "content": "convert"},
    ]
    scores = tool_relevance(messages, tools)
    assert scores[0] > 0 and scores[1] == 0.0
    assert tool_relevance([{"role": "user", "content": "Hello"}], tools) == [0.0, 0.0]


def test_with_relevance_is_a_product_of_the_two_distributions() -> None:
    scores, relevance = [-3.0, -1.0, -2.0], [4.0, 0.0, 1.0]
    combined = with_relevance(scores, relevance, 2.0)
    expected = [s + 2 * r for s, r in zip(log_softmax(scores), log_softmax(relevance), strict=True)]
    assert combined == pytest.approx(expected)
    assert max(range(3), key=combined.__getitem__) == 0  # relevance outvotes the scores
    assert max(range(3), key=with_relevance(scores, relevance, 0.1).__getitem__) == 1
    # No word shared with any tool: the sidecar's order stands.
    flat = with_relevance(scores, [0.0, 0.0, 0.0], 5.0)
    assert sorted(range(3), key=flat.__getitem__) == sorted(range(3), key=scores.__getitem__)
    assert sum(math.exp(x) for x in log_softmax([1e4, 0.0])) == pytest.approx(1.0)
    assert with_relevance([], [], 1.0) == []
    with pytest.raises(ValueError, match="2 scores but 1"):
        with_relevance([0.0, 1.0], [0.0], 1.0)


def test_wave_options_refuse_a_weight_they_cannot_use() -> None:
    assert WaveOptions(function_choice="scored", relevance_weight=2.0).relevance_weight == 2.0
    with pytest.raises(ValueError, match="at least 0"):
        WaveOptions(function_choice="scored", relevance_weight=-1.0)
    with pytest.raises(ValueError, match="at least 0"):
        WaveOptions(function_choice="scored", relevance_weight=float("nan"))
    with pytest.raises(ValueError, match="needs function_choice"):
        WaveOptions(function_choice="index", relevance_weight=1.0)
    assert WaveOptions().relevance_parameter_weight == PARAMETER_WEIGHT
    assert WaveOptions(relevance_parameter_weight=0).relevance_parameter_weight == 0
    with pytest.raises(ValueError, match="relevance_parameter_weight must be at least 0"):
        WaveOptions(relevance_parameter_weight=float("nan"))


def test_eval_sidecar_flags_resolve_the_weight_against_the_choice() -> None:
    from argparse import Namespace

    from ooo_agent.train.eval_sidecar import wave_fields

    def fields(sidecar: str, choice: str = "auto", weight: float | None = None) -> Any:
        auto = {"required_values": "auto", "typed_values": "auto"}
        auto["mentioned_values"] = auto["unnamed_nulls"] = auto["whole_words"] = "auto"
        auto["request_case"] = auto["joint_values"] = "auto"
        args = Namespace(sidecar=sidecar, function_choice=choice, relevance_weight=weight, **auto)
        return wave_fields(args)

    assert fields("smollm2-135m-sidecar")["relevance_weight"] == 2.0  # the preset's own
    assert fields("smollm2-135m-sidecar", weight=0.0)["relevance_weight"] == 0.0
    assert fields("smollm2-135m-sidecar", "scored")["relevance_weight"] == 2.0
    # The function-index row gives no scores: asking for it drops the preset's weight.
    assert fields("smollm2-135m-sidecar", "index")["relevance_weight"] == 0.0
    assert fields("some/folder", "scored")["relevance_weight"] == 0.0
    assert fields("some/folder", "scored", 1.5)["relevance_weight"] == 1.5
    WaveOptions(**fields("smollm2-135m-sidecar", "index"))  # a valid combination
