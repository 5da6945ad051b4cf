"""benchmarks/place_commas.py: does the target stop at the comma the request writes after a value?"""

from __future__ import annotations

from typing import Any

from repo_scripts import load_script


def _label(
    text: str, description: str, value: Any, schema_extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    schema = {"type": "string", "description": description, **(schema_extra or {})}
    return {
        "messages": [{"role": "user", "content": text}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"properties": {"city": schema}}},
            }
        ],
        "target_call": {"name": "f", "arguments": {"city": value}},
    }


def test_cases_split_by_the_descriptions_comma() -> None:
    module = load_script("benchmarks", "place_commas")
    labels = [
        _label("Weather in Tokyo, Japan now", "The city.", "Tokyo"),  # stops
        _label("Weather in Tokyo, Japan now", "The city, e.g. Lima, PE.", "Tokyo, Japan"),  # keeps
        _label("Weather in Tokyo now", "The city.", "Tokyo"),  # no comma after it: not a case
        _label(
            "Weather in Tokyo, Japan now", "The city.", "Tokyo", {"enum": ["Tokyo"]}
        ),  # not free
        _label("Weather in Tokyo, Japan now", "The city.", 3),  # not a string
        {"messages": [], "tools": [], "target_call": None},  # no call
    ]
    found = list(module.cases(labels))
    assert [(described, kept, value) for described, kept, _, _, value in found] == [
        (False, False, "Tokyo"),
        (True, True, "Tokyo, Japan"),
    ]
