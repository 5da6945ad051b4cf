"""Generated entity-toolset conversations: every stage's next move validates and follows the
results before it, answers state the values asked, and no held-out agent-task tool or BFCL
multi-turn function is among them."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from ooo_agent.bench.agent_tasks import held_out_tools
from ooo_agent.bench.datasets import multi_turn_function_names
from ooo_agent.calls import RawCall
from ooo_agent.tools import Toolset
from ooo_agent.tools.validation import validate_calls
from ooo_agent.train.generated_domains import (
    DOMAIN_KINDS,
    domain_tools,
    generate_domain_requests,
    load_domains,
)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _results(messages: list[dict[str, Any]]) -> list[Any]:
    return [
        json.loads(m["content"])
        for m in messages
        if m["role"] == "tool" and not m["content"].startswith("Error:")
    ]


def test_domain_rows_are_deterministic_and_cover_every_kind_and_stage() -> None:
    rows = generate_domain_requests(300, seed=4)
    assert [r.to_dict() for r in rows] == [r.to_dict() for r in generate_domain_requests(300, seed=4)]
    kinds = Counter(r.source.removeprefix("agent+domain_") for r in rows)
    assert set(kinds) == set(DOMAIN_KINDS)
    stages = Counter(sum(m["role"] == "assistant" for m in r.messages) for r in rows)
    assert stages[0] and stages[1] and stages[2]  # first call, after one result, after two


def test_every_next_move_validates_and_uses_the_ids_the_results_gave() -> None:
    for request in generate_domain_requests(400, seed=7):
        assert bool(request.calls) != bool(request.answer)
        assert 2 <= len(request.tools) <= 5
        calls, errors = validate_calls(
            [RawCall(n, json.dumps(a)) for n, a in request.calls],
            Toolset.coerce(request.tools),
            strict=True,
        )
        assert not errors and len(calls) == len(request.calls), (request.id, errors)
        results = _results(request.messages)
        if results and request.calls:  # the step after a look-up acts on the id it returned
            found = results[-1]
            ids = {k: v for k, v in found.items() if k.endswith("_id")}
            for _, arguments in request.calls:
                assert ids.items() <= arguments.items(), (request.id, ids, arguments)


def test_a_mistaken_first_call_is_never_taught_and_its_error_leads_to_the_look_up() -> None:
    seen = 0
    for request in generate_domain_requests(400, seed=2):
        errors = [m for m in request.messages if m["role"] == "tool" and "Error:" in m["content"]]
        if not errors:
            continue
        seen += 1
        assert "use " in errors[0]["content"]
        if request.messages[-1] is errors[0]:  # the move right after the error: the look-up
            assert len(request.calls) == 1 and request.calls[0][0] in errors[0]["content"]
    assert seen
    for request in generate_domain_requests(400, seed=2):  # every id a row's call passes is real
        for _, arguments in request.calls:
            for key, value in arguments.items():
                if key.endswith("_id"):
                    assert re.fullmatch(r"[A-Z]+-\d{4}", value), (request.id, arguments)


def test_final_answers_state_every_value_of_the_last_result() -> None:
    rows = [r for r in generate_domain_requests(400, seed=3) if r.answer]
    assert rows
    for request in rows:
        last = _results(request.messages)
        assert last
        if request.source.endswith("compare"):
            a, b = last
            field = next(k for k in a if a[k] != b[k] and isinstance(a[k], (int, float)))
            assert _shown(a[field]) in request.answer and _shown(b[field]) in request.answer
            continue
        values = list(last[-1].values())
        assert all(_shown(v) in request.answer for v in values), (request.id, request.answer)


def test_no_held_out_agent_tool_or_bfcl_multi_turn_function_is_generated() -> None:
    names = {
        t["function"]["name"]
        for domain in load_domains()["domains"]
        for t in domain_tools(domain).values()
    }
    assert len(names) == 3 * len(load_domains()["domains"])  # every tool name is its own
    assert not names & {t.name for t in held_out_tools()}
    assert not names & multi_turn_function_names()
    for request in generate_domain_requests(200, seed=1):
        assert set(request.tool_names) <= names
