"""Value-swapped copies of training requests (ooo_agent.train.augment)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from ooo_agent.train.augment import main, swap_values, value_pool
from ooo_agent.train.examples import TrainRequest


def _tool(name: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "",
            "parameters": {"type": "object", "properties": properties},
        },
    }


WEATHER = _tool(
    "weather",
    city={"type": "string"},
    days={"type": "integer"},
    unit={"type": "string", "enum": ["celsius", "fahrenheit"]},
    hourly={"type": "boolean"},
)


def _weather(id_: str, city: str, days: int, unit: str = "celsius") -> TrainRequest:
    text = f"Forecast for {city} over {days} days in {unit}, hourly please"
    return TrainRequest(
        id=id_,
        messages=[{"role": "user", "content": text}],
        tools=[WEATHER],
        calls=[("weather", {"city": city, "days": days, "unit": unit, "hourly": True})],
        source="generated",
    )


REQUESTS = [
    _weather("a", "Palo Alto", 5),
    _weather("b", "Lyon", 3, "fahrenheit"),
    _weather("c", "Osaka", 12),
    _weather("d", "New York City", 7),
]


def test_pool_holds_spelled_strings_by_tool_and_by_name_not_enum_values() -> None:
    pool = value_pool(REQUESTS)
    assert pool["city"] == ["Lyon", "New York City", "Osaka", "Palo Alto"]
    assert pool["weather/city"] == pool["city"]
    assert "unit" not in pool  # an enum's values are never swapped


def test_a_copy_swaps_text_and_call_together_and_keeps_the_rest() -> None:
    original = REQUESTS[0]
    copy = swap_values(original, value_pool(REQUESTS), random.Random(3))
    assert copy is not None
    assert copy.id == "a~swap"
    [(name, arguments)] = copy.calls
    assert name == "weather"
    assert arguments["city"] in {"Lyon", "Osaka", "New York City"}
    assert isinstance(arguments["days"], int) and 1 <= arguments["days"] <= 9
    assert arguments["days"] != 5
    assert arguments["unit"] == "celsius" and arguments["hourly"] is True
    text = copy.messages[0]["content"]
    assert text == (
        f"Forecast for {arguments['city']} over {arguments['days']} days in celsius, hourly please"
    )
    assert copy.tools == original.tools and copy.source == original.source
    # the original is untouched
    assert original.messages[0]["content"].startswith("Forecast for Palo Alto over 5 days")


def test_numbers_keep_their_shape_and_years_stay_years() -> None:
    rng = random.Random(0)
    tool = _tool("f", a={"type": "number"}, b={"type": "integer"}, c={"type": "integer"})
    request = TrainRequest(
        id="n",
        messages=[{"role": "user", "content": "rate 0.05 on 350000 since 1999, not 0.05x"}],
        tools=[tool],
        calls=[("f", {"a": 0.05, "b": 350000, "c": 1999})],
    )
    for _ in range(20):
        copy = swap_values(request, {}, rng)
        assert copy is not None
        arguments = copy.calls[0][1]
        assert re.fullmatch(r"0\.\d[1-9]", repr(arguments["a"]))
        assert 100000 <= arguments["b"] <= 999999 and arguments["b"] != 350000
        assert 1950 <= arguments["c"] <= 2030 and arguments["c"] != 1999
        text = copy.messages[0]["content"]
        # every whole-word occurrence changes; "0.05x" is not the value as a whole word
        assert (
            text == f"rate {arguments['a']} on {arguments['b']} since {arguments['c']}, not 0.05x"
        )


def test_array_elements_swap_one_by_one() -> None:
    tool = _tool("shop", items={"type": "array", "items": {"type": "string"}})

    def make(id_: str, first: str, second: str) -> TrainRequest:
        return TrainRequest(
            id=id_,
            messages=[{"role": "user", "content": f"buy {first} and {second}"}],
            tools=[tool],
            calls=[("shop", {"items": [first, second]})],
        )

    requests = [make("1", "milk", "eggs"), make("2", "bread", "tea"), make("3", "rice", "salt")]
    copy = swap_values(requests[0], value_pool(requests), random.Random(1))
    assert copy is not None
    first, second = copy.calls[0][1]["items"]
    assert {first, second}.isdisjoint({"milk", "eggs"}) and first != second
    assert copy.messages[0]["content"] == f"buy {first} and {second}"


def test_nothing_to_swap_gives_none() -> None:
    tool = _tool("ping", host={"type": "string"}, verbose={"type": "boolean"})
    request = TrainRequest(
        id="p",
        messages=[{"role": "user", "content": "ping the main server verbosely"}],
        tools=[tool],
        calls=[("ping", {"host": "srv-01.internal", "verbose": True})],  # not in the words
    )
    assert swap_values(request, {"host": ["db-02"]}, random.Random(0)) is None


def test_command_line_writes_labelable_copies_deterministically(tmp_path: Path) -> None:
    source = tmp_path / "requests.jsonl"
    source.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in REQUESTS), encoding="utf-8")
    outs = []
    for name in ("one.jsonl", "two.jsonl"):
        out = tmp_path / name
        argv = ["--requests", str(source), "--out", str(out), "--copies", "2", "--seed", "5"]
        assert main(argv) == 0
        outs.append(out.read_text(encoding="utf-8"))
    assert outs[0] == outs[1]
    copies = [TrainRequest.from_dict(json.loads(line)) for line in outs[0].splitlines()]
    assert [c.id for c in copies] == [f"{r.id}~swap{k}" for k in (1, 2) for r in REQUESTS]
    for copy in copies:
        base = next(r for r in REQUESTS if copy.id.startswith(r.id + "~"))
        assert copy.messages != base.messages
        assert copy.calls[0][1]["city"] != base.calls[0][1]["city"]


def test_command_line_refuses_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    from ooo_agent.errors import DatasetError

    with pytest.raises(DatasetError, match="cannot read requests"):
        main(["--requests", str(bad), "--out", str(tmp_path / "o.jsonl")])


def test_one_spelling_for_two_values_swaps_both_alike() -> None:
    tool = _tool("f", n={"type": "integer"}, label={"type": "string"}, rate={"type": "number"})
    request = TrainRequest(
        id="c",
        messages=[{"role": "user", "content": "use 12 as n and label 12"}],
        tools=[tool],
        calls=[("f", {"n": 12, "label": "12"})],
    )
    copy = swap_values(request, {}, random.Random(4))
    assert copy is not None
    new = copy.calls[0][1]
    assert new["label"] == str(new["n"]) and new["n"] != 12
    assert copy.messages[0]["content"] == f"use {new['n']} as n and label {new['n']}"
    # a spelling a value of the other type cannot take: the request is not copied
    clash = TrainRequest(
        id="d",
        messages=[{"role": "user", "content": "rate 0.5, label 0.5"}],
        tools=[tool],
        calls=[("f", {"label": "0.5", "rate": 0.5})],
    )
    assert swap_values(clash, {"label": ["half"]}, random.Random(0)) is None
