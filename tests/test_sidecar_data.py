"""The sidecar's data pipeline: target labelling, semantic rows, the split, the files, the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ooo_agent.calls import DecodeStats
from ooo_agent.errors import TargetError
from ooo_agent.formats.hermes import HermesFormat
from ooo_agent.sidecar import SidecarRequest, WaveOptions
from ooo_agent.sidecar._wave import WavePlan
from ooo_agent.sidecar.prompts import chatml_prompt, template_from_tokenizer
from ooo_agent.targets.base import Generation, TargetRequest
from ooo_agent.targets.replay import ReplayTarget
from ooo_agent.train import read_rows, sidecar_data
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.sidecar_data import (
    LabelledRequest,
    RowCounts,
    build_sidecar_data,
    label_with_target,
    read_requests,
    request_fingerprint,
    sidecar_rows,
    split_request_files,
    split_requests,
)


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": properties},
        },
    }


TOOLS = [
    _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool("get_time", {"zone": {"type": "string"}}),
]


def _request(
    i: int, text: str = "Weather in Paris?", tools: list[Any] | None = None
) -> TrainRequest:
    return TrainRequest(
        id=f"r{i}",
        messages=[{"role": "user", "content": text}],
        tools=tools if tools is not None else TOOLS,
        calls=[("get_weather", {"city": "Paris", "days": 3})],
        source="test",
    )


def _labelled(i: int, call: tuple[str, dict[str, Any]] | None, text: str = "") -> LabelledRequest:
    return LabelledRequest(_request(i, text or f"Weather in city {i}?"), call)


class ChatMLTokenizer:
    """A ChatML chat template and one token per character: what the row builder needs."""

    chat_template = "chatml"

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> str:
        assert kwargs["add_generation_prompt"] is True and kwargs["tokenize"] is False
        return chatml_prompt(conversation, think=False).replace("<think>\n\n</think>\n\n", "")

    def __call__(self, text: str, **kwargs: Any) -> dict[str, list[int]]:
        return {"input_ids": list(range(len(text)))}


def _call_text(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


# -- rows ------------------------------------------------------------------------------------


def test_golden_rows_of_one_labelled_request() -> None:
    item = LabelledRequest(_request(0), ("get_weather", {"city": "Paris"}))
    rows = sidecar_rows([item], ChatMLTokenizer(), other_null_fraction=1.0)
    assert [r["completion"] for r in rows] == [
        "0<|im_end|>",
        '"Paris"<|im_end|>',
        "null<|im_end|>",
        "null<|im_end|>",
        '{"name": "get_weather", "parameters": {"city": "Paris"}}<|im_end|>',
    ]
    assert rows[0]["prompt"] == (
        "<|im_start|>system\nYou are a helpful assistant. Answer the user's request using the "
        "available tools.<|im_end|>\n"
        "<|im_start|>user\n**Dialogue Records History**\n<user>Weather in Paris?</user>\n\n"
        "Available tools:\n[0] get_weather(city, days)\n[1] get_time(zone)\n\n"
        "Which tool should be called? Respond with only the index number.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert rows[2]["prompt"].endswith(
        "Available tool parameters:\n[0] get_weather param: city\n[0] get_weather param: days\n"
        "[1] get_time param: zone\n\nWhat is the value for parameter 'days' of tool [0] "
        "get_weather? Respond with a compact JSON value, or the literal string null if not "
        "applicable.<|im_end|>\n<|im_start|>assistant\n"
    )


def test_training_prompts_are_the_prompts_the_wave_asks() -> None:
    tokenizer = ChatMLTokenizer()
    item = LabelledRequest(_request(0), ("get_time", {"zone": "CET"}))
    rows = sidecar_rows([item], tokenizer, other_null_fraction=1.0, direct_call=False)
    plan = WavePlan.build(
        SidecarRequest(item.request.messages, item.request.tools),
        template_from_tokenizer(tokenizer),
        WaveOptions(),
    )
    assert [r["prompt"] for r in rows] == plan.prompts
    assert rows[-1]["completion"] == '"CET"<|im_end|>'


def _listed_rows(rows: list[dict[str, str]], question: str) -> list[tuple[list[str], str]]:
    """(listed tool names, answer) of each row asking ``question``."""
    out = []
    for row in rows:
        if question not in row["prompt"]:
            continue
        listing = row["prompt"].split("Available tools:\n")[1].split("\n\n")[0]
        names = [line.split("] ")[1].split("(")[0] for line in listing.splitlines()]
        out.append((names, row["completion"].removesuffix("<|im_end|>")))
    return out


def _index_rows(rows: list[dict[str, str]]) -> list[tuple[list[str], str]]:
    """(listed tool names, answer) of each function-index row."""
    return _listed_rows(rows, "Which tool should be called?")


def test_index_permutations_list_the_tools_in_other_orders() -> None:
    tools = [*TOOLS, _tool("get_news", {"topic": {"type": "string"}})]
    item = LabelledRequest(_request(0, tools=tools), ("get_time", {"zone": "CET"}))
    counts = RowCounts()
    rows = sidecar_rows([item], ChatMLTokenizer(), index_permutations=4, seed=3, counts=counts)
    index_rows = _index_rows(rows)
    assert len(index_rows) == 5 and counts.by_kind["function_index_permuted"] == 4
    orders = [tuple(names) for names, _ in index_rows]
    assert len(set(orders)) == 5  # distinct orders, the request's own among them once
    assert orders.count(("get_weather", "get_time", "get_news")) == 1
    for names, answer in index_rows:
        assert sorted(names) == ["get_news", "get_time", "get_weather"]
        assert names[int(answer)] == "get_time"  # the answer follows the called tool
    # The other rows are untouched: same as without permutations.
    plain = sidecar_rows([item], ChatMLTokenizer(), seed=3)
    assert [r for r in rows if "Which tool" not in r["prompt"]] == [
        r for r in plain if "Which tool" not in r["prompt"]
    ]


def test_index_permutations_stop_at_the_orders_that_exist() -> None:
    two = LabelledRequest(_request(0), ("get_weather", {"city": "Paris"}))
    rows = sidecar_rows([two], ChatMLTokenizer(), index_permutations=5)
    assert _index_rows(rows) == [
        (["get_time", "get_weather"], "1"),
        (["get_weather", "get_time"], "0"),
    ]
    one = LabelledRequest(_request(0, tools=TOOLS[:1]), ("get_weather", {"city": "Paris"}))
    assert _index_rows(sidecar_rows([one], ChatMLTokenizer(), index_permutations=5)) == []


def test_null_rows_of_other_tools_are_subsampled_and_counted() -> None:
    items = [_labelled(i, ("get_time", {"zone": "UTC"})) for i in range(200)]
    counts = RowCounts()
    rows = sidecar_rows(items, ChatMLTokenizer(), other_null_fraction=0.25, seed=1, counts=counts)
    # Every request keeps its index row, its selected tool's slot and its direct call.
    assert counts.by_kind["function_index"] == counts.by_kind["direct_call"] == 200
    kept_other = counts.by_kind["argument_value"] - 200
    assert kept_other + counts.skipped_other_null == 400  # get_weather's two slots each
    assert 60 <= kept_other <= 140  # ~25 % of 400
    assert len(rows) == 600 + kept_other
    again = sidecar_rows(items, ChatMLTokenizer(), other_null_fraction=0.25, seed=1)
    assert again == rows  # seeded
    none = sidecar_rows(items[:3], ChatMLTokenizer(), other_null_fraction=0.0, direct_call=False)
    assert [r["completion"] for r in none] == ["1<|im_end|>", '"UTC"<|im_end|>'] * 3


def test_rows_skip_unlabelled_requests_and_reject_bad_fractions() -> None:
    assert sidecar_rows([_labelled(0, None)], ChatMLTokenizer()) == []
    with pytest.raises(ValueError, match="other_null_fraction"):
        sidecar_rows([], ChatMLTokenizer(), other_null_fraction=1.5)


# -- labelling -------------------------------------------------------------------------------

OUTPUTS = {
    "ok": _call_text("get_weather", '{"city": "Paris", "days": 3}'),
    "prose": "I cannot help with that.",
    "unknown": _call_text("get_news", '{"topic": "x"}'),
    "wrong_type": _call_text("get_weather", '{"city": "Paris", "days": "3"}'),
    "broken_first": '<tool_call>\n{"name": "get_weather", "arguments": {"city": \n</tool_call>'
    + _call_text("get_time", '{"zone": "UTC"}'),
    "truncated_second": _call_text("get_time", '{"zone": "UTC"}') + '<tool_call>\n{"name": "get',
    "second_valid": _call_text("get_news", "{}") + _call_text("get_time", '{"zone": "UTC"}'),
}


def _replay() -> ReplayTarget:
    return ReplayTarget(lambda request: OUTPUTS[request.messages[-1]["content"]])


def test_labeller_keeps_only_valid_first_calls() -> None:
    requests = [_request(i, key) for i, key in enumerate(OUTPUTS)]
    seen: list[LabelledRequest] = []
    kept = label_with_target(_replay(), requests, on_result=seen.append)
    assert [(k.request.messages[0]["content"], k.call) for k in kept] == [
        ("ok", ("get_weather", {"city": "Paris", "days": 3})),
        ("truncated_second", ("get_time", {"zone": "UTC"})),
    ]
    problems = {s.request.messages[0]["content"]: s.problem for s in seen}
    assert problems["prose"] == "no call"
    assert problems["unknown"].startswith("invalid call")
    assert problems["wrong_type"].startswith("invalid call")
    assert problems["broken_first"].startswith("unparseable")
    assert problems["second_valid"].startswith("invalid call")  # the first call decides
    assert kept[0].text == OUTPUTS["ok"]


def test_lenient_labels_keep_what_the_target_wrote() -> None:
    kept = label_with_target(_replay(), [_request(0, "wrong_type")], strict=False)
    assert kept[0].call == ("get_weather", {"city": "Paris", "days": "3"})  # not coerced


def test_labeller_keeps_failures_on_request_and_survives_target_errors() -> None:
    class Failing:
        format = HermesFormat()

        def generate_sync(self, request: TargetRequest) -> Generation:
            if request.messages[-1]["content"] == "boom":
                raise TargetError("decoding failed")
            assert request.mode == "vanilla" and request.max_new_tokens == 50
            return Generation(OUTPUTS["ok"], stats=DecodeStats())

        async def generate(self, request: TargetRequest) -> Generation:
            raise AssertionError("the blocking path is used when there is one")

    requests = [_request(0, "boom"), _request(1, "fine")]
    out = label_with_target(
        Failing(), requests, mode="vanilla", max_new_tokens=50, keep_failed=True
    )
    assert out[0].call is None and out[0].problem == "target failed: decoding failed"
    assert out[1].call == ("get_weather", {"city": "Paris", "days": 3})


def test_labelled_request_round_trips_through_json() -> None:
    item = LabelledRequest(_request(3), ("get_time", {"zone": "UTC"}), "text", "")
    again = LabelledRequest.from_dict(json.loads(json.dumps(item.to_dict())))
    assert again == item
    plain = LabelledRequest.from_dict(_request(4).to_dict())
    assert plain.call is None and plain.gold_call == ("get_weather", {"city": "Paris", "days": 3})


# -- split, files, command line ------------------------------------------------------------


def _write_requests(folder: Path, n: int, eval_rows: int | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "requests.jsonl"
    path.write_text("".join(_request(i, f"q{i}").to_json() + "\n" for i in range(n)))
    if eval_rows is not None:
        (folder / "stats.json").write_text(
            json.dumps({"train_rows": n - eval_rows, "eval_rows": eval_rows})
        )
    return path


def test_held_out_tail_from_stats_and_no_eval_request_in_training(tmp_path: Path) -> None:
    items, held_out = read_requests(_write_requests(tmp_path / "a", 10, 3))
    assert held_out == 3
    duplicate = LabelledRequest(replace(items[8].request, id="dup"), None)
    pool = [*items[:7], duplicate, *items[7:]]
    train, evaluation = split_requests(pool, held_out=3, eval_examples=5, seed=0)
    assert [i.request.id for i in evaluation] == ["r7", "r8", "r9"]
    assert [i.request.id for i in train] == [f"r{i}" for i in range(7)]  # "dup" equals r8
    # Without a held-out count: a seeded random split.
    train, evaluation = split_requests(items, held_out=None, eval_examples=4, seed=1)
    assert len(evaluation) == 4 and len(train) == 6
    assert not {request_fingerprint(i.request) for i in train} & {
        request_fingerprint(i.request) for i in evaluation
    }


def test_several_request_files_keep_the_first_files_held_out_set(tmp_path: Path) -> None:
    first = _write_requests(tmp_path / "a", 6, 2)  # r0..r3 train, r4 r5 held out
    second = tmp_path / "b" / "requests.jsonl"
    second.parent.mkdir()
    # r0 again (the same request), r4 again (held out by the first file), r1 with another
    # request under its id, a new one, and its own held-out tail r9
    lines = [_request(0, "q0"), _request(4, "q4"), _request(1, "other"), _request(7, "q7"),
             _request(9, "q9")]  # fmt: skip
    second.write_text("".join(r.to_json() + "\n" for r in lines))
    (second.parent / "stats.json").write_text('{"train_rows": 4, "eval_rows": 1}')
    train, evaluation = split_request_files([first, second], eval_examples=40, seed=0)
    assert [i.request.id for i in evaluation] == ["r4", "r5", "r9"]
    assert [i.request.id for i in train] == ["r0", "r1", "r2", "r3", "r1~1", "r7"]
    assert [i.request.messages[0]["content"] for i in train][4] == "other"
    # One file: exactly split_requests.
    items, held_out = read_requests(first)
    assert split_request_files([first], eval_examples=40, seed=0) == split_requests(
        items, held_out=held_out, eval_examples=40, seed=0
    )


def test_mismatched_stats_and_bad_files(tmp_path: Path) -> None:
    path = _write_requests(tmp_path, 5, 2)
    (tmp_path / "stats.json").write_text('{"train_rows": 7, "eval_rows": 2}')  # not 5 lines
    assert read_requests(path)[1] is None
    path.write_text("{not json\n")
    with pytest.raises(Exception, match="cannot read requests"):
        read_requests(path)


def test_build_writes_rows_requests_and_stats(tmp_path: Path) -> None:
    train = [_labelled(i, ("get_time", {"zone": f"Z{i}"})) for i in range(4)] + [_labelled(9, None)]
    evaluation = [_labelled(20, ("get_weather", {"city": "Rome"})), _labelled(21, None)]
    stats = build_sidecar_data(
        tmp_path, train, evaluation, ChatMLTokenizer(), other_null_fraction=0.0
    )
    assert stats["train_requests"] == 4 and stats["eval_requests_labelled"] == 1
    assert stats["rows_by_kind"] == {"function_index": 4, "argument_value": 4, "direct_call": 4}
    assert len(read_rows(tmp_path / "train.jsonl")) == stats["train_rows"] == 12
    assert (
        len(read_rows(tmp_path / "eval.jsonl")) == stats["eval_rows"] == 4
    )  # index, 2 slots, direct
    kept = [
        json.loads(line) for line in (tmp_path / "eval_requests.jsonl").read_text().splitlines()
    ]
    assert [k["target_call"] for k in kept] == [
        {"name": "get_weather", "arguments": {"city": "Rome"}},
        None,
    ]
    listing = (tmp_path / "training_requests.txt").read_text().splitlines()
    assert [line.split("\t")[1] for line in listing] == ["r0", "r1", "r2", "r3"]
    assert stats["target_vs_gold"]["eval"] == {"n": 1, "name": 1.0, "exact": 0.0}
    # A token budget stops adding whole requests.
    one = (
        sum(len(r["prompt"]) + len(r["completion"]) for r in read_rows(tmp_path / "train.jsonl"))
        // 4
    )
    small = build_sidecar_data(
        tmp_path / "small", train, evaluation, ChatMLTokenizer(), other_null_fraction=0.0,
        token_budget=one * 2 + 10,
    )  # fmt: skip
    assert small["train_requests"] == 2 and small["train_requests_unused"] == 2


def test_index_rows_first_spends_the_budget_on_every_requests_tool_choice(tmp_path: Path) -> None:
    train = [_labelled(i, ("get_time", {"zone": f"Z{i}"})) for i in range(6)]
    evaluation = [_labelled(20, ("get_weather", {"city": "Rome"}))]
    tokenizer = ChatMLTokenizer()

    def cost(rows: list[dict[str, str]]) -> int:
        return sum(len(r["prompt"]) + len(r["completion"]) for r in rows)

    every = [
        sidecar_rows([item], tokenizer, other_null_fraction=0.0, seed=i)
        for i, item in enumerate(train)
    ]
    index_cost = sum(cost(_index_only(rows)) for rows in every)
    rest = [cost(rows) - cost(_index_only(rows)) for rows in every]
    budget = index_cost + rest[0] + rest[1] + 5  # room for two requests' other rows
    stats = build_sidecar_data(
        tmp_path, train, evaluation, tokenizer, other_null_fraction=0.0,
        token_budget=budget, index_rows_first=True,
    )  # fmt: skip
    assert stats["train_requests"] == 6 and stats["train_requests_all_rows"] == 2
    assert stats["rows_by_kind"] == {"function_index": 6, "argument_value": 2, "direct_call": 2}
    assert stats["train_tokens"] == index_cost + rest[0] + rest[1] <= budget
    rows = read_rows(tmp_path / "train.jsonl")
    assert sorted(c for _, c in _index_rows(rows)) == ["1"] * 6  # get_time is tool [1]
    listing = (tmp_path / "training_requests.txt").read_text().splitlines()
    assert sorted(line.split("\t")[1] for line in listing) == [f"r{i}" for i in range(6)]
    # The same budget without the option: whole requests in order, index rows only with them.
    plain = build_sidecar_data(
        tmp_path / "plain", train, evaluation, tokenizer, other_null_fraction=0.0,
        token_budget=budget,
    )  # fmt: skip
    assert plain["rows_by_kind"]["function_index"] == plain["train_requests"] < 6
    assert plain["train_requests_all_rows"] == plain["train_requests"]


def test_index_only_keeps_the_tool_choice_rows_alone(tmp_path: Path) -> None:
    train = [_labelled(i, ("get_time", {"zone": f"Z{i}"})) for i in range(4)]
    single = LabelledRequest(_request(7, tools=TOOLS[:1]), ("get_weather", {"city": "Oslo"}))
    evaluation = [_labelled(20, ("get_weather", {"city": "Rome"}))]
    stats = build_sidecar_data(
        tmp_path, [*train, single], evaluation, ChatMLTokenizer(), other_null_fraction=1.0,
        index_permutations=1, index_only=True,
    )  # fmt: skip
    assert stats["index_only"] is True
    assert stats["rows_by_kind"] == {"function_index": 4, "function_index_permuted": 4}
    rows = read_rows(tmp_path / "train.jsonl")
    assert len(rows) == stats["train_rows"] == 8 and _index_only(rows) == rows
    # get_time is [1] in the request's order and [0] in the only other one.
    assert sorted(c for _, c in _index_rows(rows)) == ["0"] * 4 + ["1"] * 4
    eval_rows = read_rows(tmp_path / "eval.jsonl")
    assert len(eval_rows) == stats["eval_rows"] == 1 and _index_only(eval_rows) == eval_rows
    # The single-tool request gave no row, so it is not listed as trained on.
    listing = (tmp_path / "training_requests.txt").read_text().splitlines()
    assert sorted(line.split("\t")[1] for line in listing) == ["r0", "r1", "r2", "r3"]


def _index_only(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if "Which tool should be called?" in r["prompt"]]


def test_cli_labels_writes_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "data"
    source.mkdir()
    texts = ["ok", "prose", "ok ", "second_valid", "ok  ", "truncated_second"]
    lines = [_request(i, text).to_json() for i, text in enumerate(texts)]
    (source / "requests.jsonl").write_text("\n".join(lines) + "\n")
    (source / "stats.json").write_text(json.dumps({"train_rows": 4, "eval_rows": 2}))
    targets: list[ReplayTarget] = []

    def load(args: Any) -> tuple[ReplayTarget, ChatMLTokenizer]:
        assert args.format == "hermes-description-first"  # the embedded target's preset
        targets.append(ReplayTarget(lambda r: OUTPUTS[r.messages[-1]["content"].strip()]))
        return targets[-1], ChatMLTokenizer()

    monkeypatch.setattr(sidecar_data, "_load_target", load)
    out = tmp_path / "out"
    argv = ["--requests", str(source / "requests.jsonl"), "--target-adapter", "unused",
            "--out", str(out), "--no-decontaminate", "--other-null-fraction", "0"]  # fmt: skip
    assert sidecar_data.main(argv) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["train_requests"] == 2 and stats["eval_requests_labelled"] == 2
    assert stats["dropped"] == {"no call": 1, "invalid call": 1}
    assert stats["target_format"] == "hermes-description-first"
    assert stats["target_decoding"] == {
        "constrain_names": False, "constrain_json": False, "constrain_arguments": False,
        "rules": [],
    }  # fmt: skip
    assert len(targets[0].requests) == 6
    # Run again: every label comes from labels.jsonl, the target is not asked.
    assert sidecar_data.main(argv) == 0
    assert len(targets[1].requests) == 0
    assert json.loads((out / "stats.json").read_text()) == stats


def test_cli_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = sidecar_data.main(
        [
            "--requests",
            str(tmp_path / "missing.jsonl"),
            "--target-adapter",
            "x",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 1 and "cannot read requests" in capsys.readouterr().err
    path = _write_requests(tmp_path / "d", 3, None)
    code = sidecar_data.main(
        ["--requests", str(path), "--target-adapter", str(tmp_path), "--out", str(tmp_path / "o"),
         "--no-decontaminate"]
    )  # fmt: skip
    assert code == 1 and "not a LoRA adapter folder" in capsys.readouterr().err


def test_cli_drops_requests_offering_evaluation_functions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [_request(i, f"q{i}", tools=TOOLS if i % 2 else TOOLS[:1]).to_json() for i in range(6)]
    (tmp_path / "requests.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "stats.json").write_text(json.dumps({"train_rows": 4, "eval_rows": 2}))
    monkeypatch.setattr(
        "ooo_agent.train.data.evaluation_function_names", lambda _cache: frozenset({"get_time"})
    )
    target = ReplayTarget([OUTPUTS["ok"]], cycle=True)
    monkeypatch.setattr(sidecar_data, "_load_target", lambda _a: (target, ChatMLTokenizer()))
    out = tmp_path / "out"
    argv = ["--requests", str(tmp_path / "requests.jsonl"), "--target-adapter", "unused",
            "--out", str(out)]  # fmt: skip
    assert sidecar_data.main(argv) == 0
    stats = json.loads((out / "stats.json").read_text())
    # Only requests offering get_weather alone survive: r0, r2 train; r4 held out.
    assert (stats["train_requests"], stats["eval_requests"]) == (2, 1)
    assert (out / "training_requests.txt").read_text().count("\t") == 2


def test_single_tool_requests_get_no_function_index_row() -> None:
    # The wave never asks the index when one tool is offered; training on it only teaches "0".
    single = LabelledRequest(_request(0, tools=TOOLS[:1]), ("get_weather", {"city": "Paris"}))
    counts = RowCounts()
    rows = sidecar_rows([single], ChatMLTokenizer(), direct_call=False, counts=counts)
    assert counts.by_kind["function_index"] == 0 and counts.skipped_single_tool_index == 1
    plan = WavePlan.build(
        SidecarRequest(single.request.messages, single.request.tools),
        template_from_tokenizer(ChatMLTokenizer()),
        WaveOptions(),
    )
    assert [r["prompt"] for r in rows] == plan.prompts  # exactly what the wave asks
    kept = sidecar_rows([single], ChatMLTokenizer(), direct_call=False, single_tool_index=True)
    assert len(kept) == len(rows) + 1 and kept[0]["completion"] == "0<|im_end|>"


def _direct_rows(rows: list[dict[str, str]]) -> list[tuple[list[str], str]]:
    """(listed tool names, answer) of each direct-call row."""
    return _listed_rows(rows, "What is the complete tool call?")


def test_permuted_direct_rows_list_the_tools_in_the_index_rows_orders() -> None:
    tools = [*TOOLS, _tool("get_news", {"topic": {"type": "string"}})]
    item = LabelledRequest(_request(0, tools=tools), ("get_time", {"zone": "CET"}))
    counts = RowCounts()
    rows = sidecar_rows(
        [item], ChatMLTokenizer(), index_permutations=3, permuted_direct=True, counts=counts
    )
    direct = _direct_rows(rows)
    assert counts.by_kind["direct_call_permuted"] == 3 and len(direct) == 4
    assert [names for names, _ in direct] == [names for names, _ in _index_rows(rows)]
    answer = '{"name": "get_time", "parameters": {"zone": "CET"}}'
    assert {a for _, a in direct} == {answer}  # the call does not depend on the order
    plain = sidecar_rows([item], ChatMLTokenizer(), index_permutations=3)
    assert len(_direct_rows(plain)) == 1  # without the flag only the request's own order


def test_choice_only_keeps_the_rows_that_choose_the_tool(tmp_path: Path) -> None:
    train = [_labelled(i, ("get_weather", {"city": "Paris"})) for i in range(4)]
    evaluation = [_labelled(9, ("get_time", {"zone": "UTC"}))]
    stats = build_sidecar_data(
        tmp_path,
        train,
        evaluation,
        ChatMLTokenizer(),
        index_permutations=1,
        permuted_direct=True,
        choice_only=True,
    )
    assert set(stats["rows_by_kind"]) == {
        "function_index",
        "function_index_permuted",
        "direct_call",
        "direct_call_permuted",
    }
    assert stats["choice_only"] and stats["permuted_direct"]
    for name in ("train.jsonl", "eval.jsonl"):
        prompts = [json.loads(line)["prompt"] for line in (tmp_path / name).open()]
        assert prompts and not any("Available tool parameters" in p for p in prompts)
    with pytest.raises(ValueError, match="exclude each other"):
        build_sidecar_data(
            tmp_path, train, evaluation, ChatMLTokenizer(), index_only=True, choice_only=True
        )


def test_cli_labels_with_the_constrained_target_it_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--constrain-*`` reach the labelling ``HFTarget``: the labels are then the calls the
    target writes under the decoding it runs with (the demo's)."""
    from ooo_agent.models import presets
    from ooo_agent.targets import hf

    built: list[dict[str, Any]] = []

    class Recording:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built.append(kwargs)

    monkeypatch.setattr(presets, "load_base", lambda *a, **k: ("model", "tokenizer"))
    monkeypatch.setattr(presets, "attach_adapter", lambda model, *a, **k: model)
    monkeypatch.setattr(hf, "HFTarget", Recording)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    flags = ["--constrain-names", "--constrain-mentioned", "--constrain-values"]
    for argv in ([], flags):
        parser_args = ["--target-adapter", str(adapter), "--out", str(tmp_path / "o"), *argv]
        args = sidecar_data.build_parser().parse_args(parser_args)
        target, tokenizer = sidecar_data._load_target(args)
        assert isinstance(target, Recording) and tokenizer == "tokenizer"
    assert [b["rules"] for b in built] == [(), ("mentioned", "values")]
    assert built[1]["constrain_names"]
    assert not built[1]["constrain_json"] and not built[1]["constrain_arguments"]
