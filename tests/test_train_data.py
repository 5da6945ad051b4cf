"""Target training data: generated requests, live BFCL requests, decontamination, rows."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ooo_agent.bench.ast_check import check
from ooo_agent.bench.datasets import BenchItem, load_bfcl, multi_turn_function_names
from ooo_agent.formats.hermes import HermesFormat
from ooo_agent.train.data import (
    END_OF_TURN,
    MIX,
    _parse_mix,
    add_distractors,
    build_target_data,
    decontaminate,
    evaluation_function_names,
    live_no_call_requests,
    live_requests,
    main,
    target_row,
    user_text,
)
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated import (
    DOMAINS,
    GENERATED_TOOLS,
    NO_TOOL_ANSWER,
    generate_requests,
)


class FakeTokenizer:
    """ChatML template and one token per whitespace-separated word: fast and predictable."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> str:
        assert kwargs == {"tokenize": False, "add_generation_prompt": True}
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in conversation)
        return text + "<|im_start|>assistant\n"

    def __call__(self, text: str, **kwargs: Any) -> dict[str, list[int]]:
        return {"input_ids": list(range(len(text.split())))}


# -- generated requests ----------------------------------------------------------------------


def test_generation_is_deterministic_per_seed() -> None:
    first = generate_requests(80, seed=3)
    assert first == generate_requests(80, seed=3)
    assert first != generate_requests(80, seed=4)


def test_generated_requests_are_well_formed() -> None:
    requests = generate_requests(400, seed=11)
    assert len(requests) == 400
    kinds = {"none": 0, "one": 0, "two": 0}
    for request in requests:
        assert request.source == "generated"
        assert 2 <= len(request.tools) <= 6
        assert len(set(request.tool_names)) == len(request.tools)
        text = request.messages[-1]["content"]
        if not request.calls:
            kinds["none"] += 1
            assert request.answer
            continue
        kinds["one" if len(request.calls) == 1 else "two"] += 1
        assert request.answer == ""
        for name, args in request.calls:
            assert name in request.tool_names  # the right tool is offered
            params = GENERATED_TOOLS[name]["function"]["parameters"]
            assert set(params["required"]) <= set(args)
            assert set(args) <= set(params["properties"])
            for key, value in args.items():
                _assert_value_in_request(value, text, key)
                enum = params["properties"][key].get("enum")
                assert enum is None or value in enum
    # A real mixture: some no-tool answers, some two-call requests, mostly single calls.
    assert kinds["none"] > 20 and kinds["two"] > 40 and kinds["one"] > 200


def _assert_value_in_request(value: Any, text: str, key: str) -> None:
    """Values are copied from the request (numbers as written, booleans by their phrase)."""
    if isinstance(value, bool):
        return
    if isinstance(value, list):
        for element in value:
            _assert_value_in_request(element, text, key)
    elif isinstance(value, (int, float)):
        written = {str(value), str(int(value)) if value == int(value) else f"{value:.2f}"}
        assert any(
            re.search(rf"(?<![\d.]){re.escape(w.lstrip('-'))}(?![\d])", text) for w in written
        ), (key, text)
    else:
        assert str(value) in text, (key, value, text)


def test_generated_tools_are_valid_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for tool in GENERATED_TOOLS.values():
        jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])
    for request in generate_requests(150, seed=5):
        for name, args in request.calls:
            jsonschema.validate(args, GENERATED_TOOLS[name]["function"]["parameters"])


def test_generated_numbers_are_written_as_the_user_wrote_them() -> None:
    """A whole number is an int in the call (never ``50.0``), and numeric tools are well
    represented: a model taught ``50.0`` writes ``2.0`` into BFCL's ``integer`` slots."""
    numeric_calls = 0
    for request in generate_requests(400, seed=13):
        for name, args in request.calls:
            props = GENERATED_TOOLS[name]["function"]["parameters"]["properties"]
            numbers = [v for k, v in args.items() if props[k]["type"] in ("integer", "number")]
            numeric_calls += bool(numbers)
            for value in numbers:
                assert not (isinstance(value, float) and value.is_integer()), (name, args)
    assert numeric_calls > 120


def test_generate_rejects_bad_shares() -> None:
    with pytest.raises(ValueError):
        generate_requests(10, parallel_share=1.5)


# -- live requests and decontamination ------------------------------------------------------


def test_live_requests_carry_gold_calls_that_pass_the_checker() -> None:
    requests, defective = live_requests(categories=["live_simple", "live_parallel"])
    assert defective == 2  # the two live_simple entries with empty acceptable lists
    items = {i.id: i for c in ("live_simple", "live_parallel") for i in load_bfcl(c)}
    assert len(requests) == len(items) - 2
    for request in requests:
        item: BenchItem = items[request.id]
        assert request.messages == item.messages and request.tools == item.tools
        assert check(request.calls, item).ok


def test_live_requests_refuse_evaluation_categories() -> None:
    with pytest.raises(ValueError, match="evaluation category"):
        live_requests(categories=["simple_python"])


def test_live_no_call_requests_answer_without_a_call() -> None:
    requests = live_no_call_requests()
    items = {i.id: i for i in load_bfcl("live_irrelevance")}
    assert len(requests) == len(items) == 884
    for request in requests:
        item = items[request.id]
        assert request.messages == item.messages and request.tools == item.tools
        assert request.calls == [] and request.answer == NO_TOOL_ANSWER
        assert request.source == "live_irrelevance"
    with pytest.raises(ValueError, match="evaluation category"):
        live_no_call_requests(categories=["irrelevance"])
    with pytest.raises(ValueError, match="expects a call"):
        live_no_call_requests(categories=["live_simple"])


def test_live_irrelevance_rows_are_opt_in_and_decontaminated(
    built: tuple[Path, Any], tmp_path: Path
) -> None:
    out, stats = built
    assert "live_irrelevance" not in stats.by_source
    # The same draw with the live no-call requests added, and a share for them.
    mix = {**MIX, "live_irrelevance": 0.2}
    with_them = build_target_data(
        tmp_path, examples=300, eval_examples=20, generated=200, max_prompt_tokens=400,
        seed=1, tokenizer=FakeTokenizer(), mix=mix, live_irrelevance=True,
    )  # fmt: skip
    assert abs(with_them.by_source["live_irrelevance"] / 300 - 0.2) < 0.05
    banned = evaluation_function_names()
    requests = [
        TrainRequest.from_dict(json.loads(line))
        for line in (tmp_path / "requests.jsonl").read_text().splitlines()
    ]
    no_call = [r for r in requests if r.source == "live_irrelevance"]
    assert no_call and all(not r.calls and r.answer == NO_TOOL_ANSWER for r in no_call)
    assert not {n for r in requests for n in r.tool_names} & banned
    # requests.jsonl lists the training requests first; each no-call one answers in text.
    rows = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    declined = sum(r["completion"] == NO_TOOL_ANSWER + END_OF_TURN for r in rows)
    trained_no_call = sum(r.source == "live_irrelevance" for r in requests[:300])
    assert trained_no_call == with_them.by_source["live_irrelevance"] <= declined
    # Without the flag the draw is the one it always was (the pool only grows at its end).
    again = build_target_data(
        tmp_path / "again", examples=300, eval_examples=20, generated=200,
        max_prompt_tokens=400, seed=1, tokenizer=FakeTokenizer(),
    )  # fmt: skip
    assert (tmp_path / "again" / "train.jsonl").read_text() == (out / "train.jsonl").read_text()
    assert again.by_source == stats.by_source


def test_decontaminate_drops_offered_or_called_banned_names() -> None:
    tool = {"type": "function", "function": {"name": "ok", "parameters": {}}}
    banned_tool = {"type": "function", "function": {"name": "bad", "parameters": {}}}
    keep = TrainRequest("1", [], [tool], [("ok", {})])
    offered = TrainRequest("2", [], [tool, banned_tool], [("ok", {})])
    called = TrainRequest("3", [], [tool], [("bad", {})])
    kept, dropped = decontaminate([keep, offered, called], {"bad"})
    assert kept == [keep] and dropped == 2


# -- rows ------------------------------------------------------------------------------------


def test_target_row_renders_prompt_and_completion() -> None:
    fmt = HermesFormat()
    request = generate_requests(30, seed=2)[0]
    row = target_row(request, fmt, FakeTokenizer())
    assert row["prompt"].startswith("<|im_start|>system\n# Tools")
    assert row["prompt"].endswith(
        f"{request.messages[-1]['content']}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert row["completion"].endswith(END_OF_TURN)
    if request.calls:
        parsed = fmt.parse(row["completion"].removesuffix(END_OF_TURN))
        assert [(c.name, c.arguments) for c in parsed.calls] == request.calls
    answer = TrainRequest("x", [{"role": "user", "content": "hi"}], request.tools, [], "Hello!")
    assert target_row(answer, fmt, FakeTokenizer())["completion"] == "Hello!" + END_OF_TURN


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("target-data")
    stats = build_target_data(
        out, examples=300, eval_examples=20, generated=200, max_prompt_tokens=400,
        seed=1, tokenizer=FakeTokenizer(),
    )  # fmt: skip
    return out, stats


def test_build_writes_rows_requests_and_stats(built: tuple[Path, Any]) -> None:
    out, stats = built
    train = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    evals = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    requests = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    assert len(train) == stats.train_rows == 300
    assert len(evals) == stats.eval_rows == 20
    assert len(requests) == 320
    assert all(set(r) == {"prompt", "completion"} for r in train + evals)
    assert all(r["completion"].endswith(END_OF_TURN) for r in train)
    assert all(len(r["prompt"].split()) <= 400 for r in train + evals)
    assert stats.dropped_too_long > 0 and stats.dropped_contaminated > 0
    # Rows are mixed by source (MIX): each main source gets about its share.
    shares: dict[str, int] = {}
    for source, count in stats.by_source.items():
        shares[source.split("+")[0]] = shares.get(source.split("+")[0], 0) + count
    for source in ("live_multiple", "live_simple", "generated"):
        assert abs(shares[source] / 300 - MIX[source]) < 0.05, (source, shares)
    assert "live_simple+distractors" in stats.by_source
    assert stats.trimmed_tools > 0
    assert sum(stats.by_source.values()) == 300
    saved = json.loads((out / "stats.json").read_text())
    assert saved["train_rows"] == 300 and saved["seed"] == 1
    # Train and eval rows never overlap.
    assert not {r["prompt"] + r["completion"] for r in train} & {
        r["prompt"] + r["completion"] for r in evals
    }


def test_training_data_excludes_every_evaluation_function_name(built: tuple[Path, Any]) -> None:
    out, _ = built
    banned = evaluation_function_names()
    assert len(banned) > 1000
    offered: set[str] = set()
    for line in (out / "requests.jsonl").read_text().splitlines():
        request = TrainRequest.from_dict(json.loads(line))
        offered |= set(request.tool_names) | {n for n, _ in request.calls}
    assert offered and not offered & banned
    # And no prompt or completion names an evaluation function as a tool.
    rows = [
        json.loads(line)
        for name in ("train.jsonl", "eval.jsonl")
        for line in (out / name).read_text().splitlines()
    ]
    text = "".join(r["prompt"] + r["completion"] for r in rows)
    named = set(re.findall(r'"name": "([^"]+)"', text))
    assert named and not named & banned


def test_generated_tool_names_avoid_evaluation_names() -> None:
    # One business tool shares its name with a BFCL multi-turn function: decontamination
    # drops every request offering it (the built data above never holds it).
    assert set(GENERATED_TOOLS) & evaluation_function_names() == {"cancel_order"}
    assert "cancel_order" in multi_turn_function_names()


def test_token_budget_limits_training_rows(tmp_path: Path) -> None:
    stats = build_target_data(
        tmp_path, examples=500, eval_examples=5, generated=50, max_prompt_tokens=400,
        token_budget=20_000, seed=2, tokenizer=FakeTokenizer(),
    )  # fmt: skip
    assert 0 < stats.total_tokens <= 20_000
    assert stats.train_rows < 500 and stats.unused > 0


def test_generated_rows_fill_up_after_live_ones(tmp_path: Path) -> None:
    stats = build_target_data(
        tmp_path, examples=100_000, eval_examples=0, generated=60, max_prompt_tokens=400,
        seed=3, tokenizer=FakeTokenizer(),
    )  # fmt: skip
    assert stats.unused == 0
    assert 0 < stats.by_source["generated"] <= 60
    assert stats.by_call_count["0"] > 0  # no-tool answers are kept


def test_build_rejects_bad_sizes(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        build_target_data(tmp_path, examples=0, tokenizer=FakeTokenizer())


def test_request_round_trips_through_json() -> None:
    for request in generate_requests(20, seed=9):
        assert TrainRequest.from_dict(json.loads(request.to_json())) == request


def test_cli_needs_an_output_folder(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([])
    assert "--out" in capsys.readouterr().err


def test_cli_mix_is_parsed_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert _parse_mix("live_multiple=0.5, generated=0.5") == {
        "live_multiple": 0.5,
        "generated": 0.5,
    }
    for bad in ("generated", "generated=x", "generated=0", "=0.5", ","):
        with pytest.raises(argparse.ArgumentTypeError):
            _parse_mix(bad)
    with pytest.raises(SystemExit):
        main(["--out", "unused", "--mix", "generated=-1"])
    assert "SOURCE=SHARE" in capsys.readouterr().err


# -- multi-tool data: same-domain distractors, similar tools, trimming, mentioned options ------


def test_generated_distractors_come_mostly_from_the_needed_tools_domain() -> None:
    near = {
        n: {m for members in DOMAINS.values() if n in members for m in members}
        for n in GENERATED_TOOLS
    }
    same = total = 0
    for request in generate_requests(400, seed=5):
        needed = {name for name, _ in request.calls}
        if len(needed) != 1:
            continue
        (own,) = needed
        for name in request.tool_names:
            if name != own:
                total += 1
                same += name in near[own]
    # 75 % of requests draw distractors from the domain first; random picks add a few more.
    assert total > 200 and same / total > 0.6
    assert all(set(members) <= set(GENERATED_TOOLS) for members in DOMAINS.values())


def _single(name: str, words: str, index: int) -> TrainRequest:
    tool = {
        "type": "function",
        "function": {"name": name, "description": words, "parameters": {"type": "object"}},
    }
    return TrainRequest(
        f"r{index}", [{"role": "user", "content": "go"}], [tool], [(name, {})], source="live_simple"
    )


def test_add_distractors_offers_similar_tools_and_keeps_the_calls() -> None:
    requests = [
        _single("get_weather", "current weather for a city", 0),
        _single("get_weather_forecast", "weather forecast for a city", 1),
        _single("city_weather_alerts", "weather alerts for a city", 2),
        _single("send_invoice", "email an invoice to a customer", 3),
        _single("refund_invoice", "refund an invoice", 4),
        _single("invoice_status", "status of an invoice", 5),
    ]
    out = add_distractors(requests, share=1.0, max_extra=2, nearest=2, seed=0)
    assert len(out) == len(requests)
    for before, after in zip(requests, out, strict=True):
        assert after.calls == before.calls and after.messages == before.messages
        assert before.tool_names[0] in after.tool_names
        assert 2 <= len(after.tools) <= 3 and len(set(after.tool_names)) == len(after.tools)
        assert after.source == "live_simple+distractors"
        weather = "weather" in before.tool_names[0]
        # The two nearest tools share the request's topic.
        assert all(("weather" in n) == weather for n in after.tool_names)
    assert add_distractors(requests, share=0.0) == requests
    assert add_distractors(requests, share=1.0, seed=3) == add_distractors(
        requests, share=1.0, seed=3
    )
    with pytest.raises(ValueError):
        add_distractors(requests, share=1.5)


def test_optional_arguments_the_user_mentioned_are_kept() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "unit": {"type": "string"},
                        "days": {"type": "integer"},
                        "lang": {"type": "string"},
                    },
                    "required": ["city"],
                },
            },
        }
    ]
    messages = [{"role": "user", "content": "Weather in Paris in celsius for 3 days?"}]
    item = BenchItem(
        id="x",
        category="live_simple",
        messages=messages,
        tools=tools,
        gold=[
            {
                "get_weather": {
                    "city": ["Paris"],
                    "unit": ["celsius", ""],
                    "days": [3, ""],
                    "lang": ["en", ""],
                }
            }
        ],
    )
    from ooo_agent.bench.ast_check import gold_calls

    assert gold_calls(item) == [("get_weather", {"city": "Paris"})]
    kept = gold_calls(item, mentioned_in=user_text(messages))
    assert kept == [("get_weather", {"city": "Paris", "unit": "celsius", "days": 3})]
    assert check([{"name": n, "arguments": a} for n, a in kept], item).ok


def test_rows_can_be_rendered_with_descriptions_first(tmp_path: Path) -> None:
    from ooo_agent.formats import get_format

    build_target_data(
        tmp_path, examples=60, eval_examples=0, generated=60, max_prompt_tokens=400, seed=3,
        tokenizer=FakeTokenizer(), fmt=get_format("hermes-description-first"),
    )  # fmt: skip
    prompts = [json.loads(line)["prompt"] for line in (tmp_path / "train.jsonl").open()]
    tool_lines = [
        [json.loads(ln)["function"] for ln in p.splitlines() if ln.startswith('{"type"')]
        for p in prompts
    ]
    several = [t for t in tool_lines if len(t) > 1 and all("description" in f for f in t)]
    assert several, "the draw has multi-tool rows"
    assert all(list(f)[:2] == ["description", "name"] for t in several for f in t)
    lone = [t for t in tool_lines if len(t) == 1 and "description" in t[0]]
    assert lone and all(next(iter(t[0])) == "name" for t in lone)
