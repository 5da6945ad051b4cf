"""benchmarks/tool_choice.py: every choice rule applied to one set of name scores."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ooo_agent.sidecar.relevance import tool_relevance  # noqa: E402
from ooo_agent.train._sidecar_labels import request_fingerprint  # noqa: E402
from ooo_agent.train.examples import TrainRequest  # noqa: E402
from repo_scripts import load_script  # noqa: E402
from sidecar_tiny import make_model, make_tokenizer  # noqa: E402


def _tool(name: str, description: str = "") -> dict[str, Any]:
    properties = {"city": {"type": "string"}}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


TOOLS = [_tool("get_weather", "Weather of a city."), _tool("get_time", "Local time.")]


def _module() -> ModuleType:
    return load_script("benchmarks", "tool_choice")


def test_each_rule_picks_from_the_same_scores() -> None:
    module = _module()
    record = module.Scored(
        id="r",
        names=["a", "b", "c"],
        scored=[-1.0, -2.0, -3.0],  # the sidecar likes a
        prior=[-0.5, -3.0, -3.0],  # ... because it likes a anyway: calibrated picks b
        relevance=[0.0, 0.0, 5.0],  # the request's words point at c
        target="c",
        gold="b",
    )
    picks = module.choose(record, [0.01, 4.0])
    assert picks["scored"] == "a" and picks["calibrated"] == "b" and picks["relevance"] == "c"
    assert picks["scored + 0.01·relevance"] == "a"  # too light to outvote the sidecar
    assert picks["scored + 4·relevance"] == "c" and picks["calibrated + 4·relevance"] == "c"
    rows = {row["rule"]: row for row in module.table([record], [0.01, 4.0])}
    assert list(rows) == module.rules([0.01, 4.0])
    assert rows["relevance"] == {"rule": "relevance", "target": 1, "gold": 0, "gold_n": 1}
    assert rows["calibrated"]["target"] == 0 and rows["calibrated"]["gold"] == 1
    assert "two orders" not in rows  # no record was scored in the reverse order


def test_two_orders_average_each_names_scores_across_listings() -> None:
    module = _module()
    record = module.Scored(
        id="r",
        names=["a", "b"],
        scored=[-1.0, -1.5],  # listed first, a wins by 0.5 ...
        prior=[0.0, 0.0],
        relevance=[0.0, 0.25],
        target="b",
        gold="b",
        reversed=[-2.0, -0.5],  # ... listed second it loses by 1.5: on average b wins
    )
    picks = module.choose(record, [1.0])
    assert picks["scored"] == "a" and picks["two orders"] == "b"
    assert picks["two orders + 1·relevance"] == "b"
    rows = {row["rule"]: row for row in module.table([record], [1.0])}
    assert list(rows) == module.rules([1.0], two_orders=True)
    assert rows["two orders"]["target"] == 1 and rows["scored"]["target"] == 0


def test_labels_keep_choices_with_a_target_call_and_drop_trained_requests(tmp_path: Path) -> None:
    module = _module()
    asked = [{"role": "user", "content": "What time is it in Lima?"}]
    rows = [
        {"id": "one", "messages": asked, "tools": TOOLS, "target_call": {"name": "get_time"}},
        {
            "id": "lone",
            "messages": asked,
            "tools": TOOLS[:1],
            "target_call": {"name": "get_weather"},
        },
        {"id": "none", "messages": asked, "tools": TOOLS, "target_call": None},
        {"id": "other", "messages": asked, "tools": TOOLS, "target_call": {"name": "nope"}},
        {
            "id": "trained",
            "messages": [{"role": "user", "content": "Weather in Oslo?"}],
            "tools": TOOLS,
            "target_call": {"name": "get_weather"},
            "calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
        },
    ]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    listing = tmp_path / "training_requests.txt"
    listing.write_text(f"{module.fingerprint(rows[4])}\tsome-other-id\n")
    # the fingerprint the sidecar's training run writes there
    trained = TrainRequest(id="x", messages=rows[4]["messages"], tools=TOOLS)
    assert module.fingerprint(rows[4]) == request_fingerprint(trained)
    assert [r["id"] for r in module.labelled(labels, set(), None)] == ["one", "trained"]
    kept = module.labelled(labels, module._excluded(listing), None)
    assert [r["id"] for r in kept] == ["one"]  # by fingerprint, whatever its id there
    assert [r["id"] for r in module.labelled(labels, set(), 1)] == ["one"]
    # --select: requests that offer a choice, not excluded, in file order (labels not needed).
    draw = tmp_path / "requests.jsonl"
    draw.write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = tmp_path / "choice" / "requests.jsonl"
    select = ["--select", str(draw), "--select-out", str(written)]
    assert module.main([*select, "--exclude", str(listing)]) == 0
    chosen = [json.loads(line)["id"] for line in written.read_text().splitlines()]
    assert chosen == ["one", "none", "other"]  # "lone" offers one tool, "trained" is excluded
    assert module.main([*select, "--limit", "2"]) == 0
    assert len(written.read_text().splitlines()) == 2
    with pytest.raises(SystemExit):
        module.main(["--select", str(draw)])  # nowhere to write
    with pytest.raises(SystemExit):
        module.main([])  # neither labels nor a draw

    from ooo_agent.sidecar.base import SidecarRequest
    from ooo_agent.sidecar.hf import HFSidecar

    tokenizer = make_tokenizer()
    sidecar = HFSidecar(make_model("qwen3", len(tokenizer), seed=1), tokenizer)
    records = module.score_requests(sidecar, module.labelled(labels, set(), None))
    assert [r.id for r in records] == ["one", "trained"]
    assert records[0].target == "get_time" and records[0].gold is None
    assert records[1].gold == "get_weather"
    assert records[0].relevance == tool_relevance(asked, TOOLS)
    # "city": a parameter of get_weather alone, no word of either tool's name or description.
    zone = _tool("get_time", "Local time.")
    zone["function"]["parameters"]["properties"] = {"zone": {"type": "string"}}
    tools = [_tool("get_weather", "Weather."), zone]
    city = tmp_path / "city.jsonl"
    asked_city = [{"role": "user", "content": "A city?"}]
    city.write_text(json.dumps({**rows[0], "messages": asked_city, "tools": tools}))
    weighted = module.score_requests(sidecar, module.labelled(city, set(), None))
    bare = module.score_requests(sidecar, module.labelled(city, set(), None), parameter_weight=0)
    assert bare[0].relevance == [0.0, 0.0] and weighted[0].relevance[0] > 0
    assert len(records[0].scored) == len(records[0].prior) == 2
    assert records[0].scored != records[0].prior  # the request changes what the model reads
    assert records[0].reversed is None
    both = module.score_requests(sidecar, module.labelled(labels, set(), 1), two_orders=True)
    backwards = sidecar.tool_choice_scores(SidecarRequest(asked, TOOLS[::-1]))
    assert both[0].scored == records[0].scored
    assert both[0].reversed == backwards[::-1]  # back in the listing's own order
    with pytest.raises(ValueError, match="two or more"):
        sidecar.tool_choice_scores(SidecarRequest(asked, TOOLS[:1]))
