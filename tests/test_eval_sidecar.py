"""Scoring a sidecar: the metrics on hand-made answers, a scripted sidecar, the CLI end to end."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ooo_agent.cli import main
from ooo_agent.errors import SidecarError
from ooo_agent.sidecar import Hint, HintBox, SidecarRequest, WaveOptions
from ooo_agent.sidecar._wave import WaveAssembler, WavePlan, WaveReport
from ooo_agent.sidecar.prompts import chatml_prompt
from ooo_agent.sidecar.rows import SemanticRow
from ooo_agent.train.eval_sidecar import (
    SidecarEvalReport,
    SidecarPrediction,
    evaluate_sidecar,
    predict,
    render_table,
    score_predictions,
)
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.sidecar_data import LabelledRequest, request_fingerprint


def _tool(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
    }


WEATHER = _tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})
TIME = _tool("get_time", {"zone": {"type": "string"}})


def _request(
    rid: str, tools: list[Any], gold: tuple[str, dict[str, Any]] | None = None
) -> TrainRequest:
    return TrainRequest(
        id=rid,
        messages=[{"role": "user", "content": f"question {rid}"}],
        tools=tools,
        calls=[gold] if gold else [],
    )


# -- metrics on hand-made predictions --------------------------------------------------------


def test_metrics_on_hand_made_predictions() -> None:
    requests = {
        "a": _request("a", [WEATHER, TIME]),
        "b": _request("b", [WEATHER, TIME]),
        "c": _request("c", [TIME]),
    }
    labels = {
        "a": ("get_weather", {"city": "Paris", "days": 3}),
        "b": ("get_time", {"zone": "UTC"}),
        "c": ("get_time", {}),
    }
    predictions = [
        SidecarPrediction(  # all right; 3.0 is the same JSON number as 3
            "a",
            {"function": "0", "0.city": '"Paris"', "0.days": "3.0", "1.zone": "null"},
            Hint("get_weather", {"city": "Paris", "days": 3}),
            '{"name": "get_weather", "parameters": {"days": 3, "city": "Paris"}}',
            seconds=0.5,
        ),
        SidecarPrediction(  # wrong tool, a missed value, garbage, an unparseable direct call
            "b",
            {"function": "[0]", "0.city": "null", "0.days": "three", "1.zone": "null"},
            Hint("get_weather", {}),
            "not json",
            seconds=1.5,
        ),
        SidecarPrediction("c", {"function": "0", "0.zone": "null"}, Hint("get_time", {})),
        SidecarPrediction("unlabelled", {"function": "0"}, Hint()),
    ]
    scores = score_predictions(predictions, requests, labels)
    rates = {name: (getattr(scores, name).hits, getattr(scores, name).n) for name in scores.RATES}
    assert scores.requests == 3
    assert rates == {
        "function_index": (1, 2),  # the single-tool request is not asked
        "argument_exact": (3, 4),  # a: city, days; b: zone (missed); c: zone (null = null)
        "argument_value_exact": (2, 3),
        "null_precision": (3, 4),  # b predicted null for zone, whose label is "UTC"
        "null_recall": (3, 4),  # b answered garbage for days, whose label is null
        "direct_call_exact": (1, 2),  # c did not ask it
        "hint_exact": (2, 3),
    }
    assert scores.function_index.value == 0.5 and scores.mean_wave_seconds == pytest.approx(0.667)
    assert [i.function for i in scores.items] == [True, False, None]
    assert [(i.argument_hits, i.argument_n) for i in scores.items] == [(2, 2), (0, 1), (1, 1)]
    data = scores.to_dict()
    assert data["null_recall"] == {"value": 0.75, "hits": 3, "n": 4}
    # Both function-index rows were answered "0" (b's "[0]" parses to 0): the position is
    # visible, and so is the rate of always answering the commonest labelled position.
    assert data["function_index_positions"] == {
        "label": {"0": 1, "1": 1},
        "answer": {"0": 2},
        "baseline": {"value": 0.5, "hits": 1, "n": 2},
    }
    assert score_predictions(predictions, requests, {}).function_index.value is None


def test_each_argument_miss_gets_one_class() -> None:
    tool = _tool(
        "book",
        {
            "city": {"type": "string"},
            "nights": {"type": "integer"},
            "guests": {"type": "integer"},
            "note": {"type": "string"},
            "pets": {"type": "boolean"},
            "rooms": {"type": "integer"},
            "floor": {"type": "integer"},
        },
    )
    label = ("book", {"city": "Paris", "nights": 2, "guests": 3, "rooms": 1, "floor": 4})
    answers = {
        "0.city": '"paris"',  # case only
        "0.nights": '"2"',  # a string where the schema says integer
        "0.guests": "null",  # null where the target wrote a value
        "0.note": '"late"',  # a value the target left out
        "0.pets": "yes",  # not JSON
        "0.rooms": "2",  # another value of the right type
        "0.floor": "4",  # a hit
    }
    prediction = SidecarPrediction("r", {"function": "0", **answers}, Hint("book", {}))
    scores = score_predictions([prediction], {"r": _request("r", [tool])}, {"r": label})
    assert (scores.argument_exact.hits, scores.argument_exact.n) == (1, 7)
    assert scores.to_dict()["argument_misses"] == {
        "not_json": 1,
        "null_for_value": 1,
        "value_for_null": 1,
        "wrong_type": 1,
        "case_only": 1,
        "other_value": 1,
    }
    report = SidecarEvalReport(scores={"target": scores})
    printed = Console(record=True, width=120)
    printed.print(render_table(report))
    assert "miss: wrong type" in printed.export_text()


# -- a scripted sidecar ----------------------------------------------------------------------


class ScriptedSidecar:
    """Answers each row from a table keyed by request id and row key, through the real
    WavePlan and WaveAssembler (so slot checks and hint assembly run as in HFSidecar)."""

    def __init__(self, answers: dict[str, dict[str, str]], fail: set[str] = frozenset()) -> None:
        self.answers = answers
        self.fail = fail

    def run_wave_sync(
        self, request: SidecarRequest, box: HintBox, cancel: threading.Event | None = None
    ) -> WaveReport:
        rid = request.messages[-1]["content"].split()[-1]
        if rid in self.fail:
            raise SidecarError("sidecar generation failed")
        plan = WavePlan.build(request, chatml_prompt, WaveOptions())
        assembler = WaveAssembler.start(plan, box, WaveOptions())
        for index, row in enumerate(plan.rows):
            assembler.answer(index, self.answers[rid].get(row.key, "null"))
        return assembler.finish()


def test_scripted_sidecar_scored_against_target_and_gold() -> None:
    gold = ("get_weather", {"city": "Paris", "days": 3})
    items = [
        LabelledRequest(_request("x", [WEATHER, TIME], gold), ("get_weather", {"city": "Paris"})),
        LabelledRequest(_request("y", [WEATHER, TIME], gold), None),  # no valid target call
        LabelledRequest(_request("z", [WEATHER, TIME]), None),  # nothing to score: no wave
    ]
    sidecar = ScriptedSidecar(
        {
            "x": {"function": "0", "0.city": '"Paris"', "0.days": "null"},
            "y": {"function": "0", "0.city": '"Paris"', "0.days": '"three"'},  # fails the check
        }
    )
    asked: list[SemanticRow] = []

    def direct(row: SemanticRow) -> str:
        asked.append(row)
        return '{"name": "get_weather", "parameters": {"city": "Paris"}}'

    report = evaluate_sidecar(sidecar, items, direct=direct)
    assert [p.id for p in report.predictions] == ["x", "y"]
    assert [r.kind for r in asked] == ["direct_call", "direct_call"]
    assert report.predictions[1].hint == Hint("get_weather", {"city": "Paris"}, True)
    target, vs_gold = report.scores["target"], report.scores["gold"]
    assert target.requests == 1 and vs_gold.requests == 2
    assert target.hint_exact.value == 1.0 and target.direct_call_exact.value == 1.0
    assert vs_gold.hint_exact.value == 0.0 and vs_gold.argument_exact.hits == 2  # city twice
    assert vs_gold.argument_exact.n == 4
    table = render_table(report)
    assert [c.header for c in table.columns] == ["metric", "vs target", "vs gold"]
    rows = list(table.columns[0].cells)
    baseline_row = rows.index("  always the commonest position")
    assert rows[baseline_row - 1] == "function index"
    json.dumps(report.to_dict())  # the JSON report is serialisable


def test_a_failing_wave_scores_as_an_empty_prediction() -> None:
    item = LabelledRequest(_request("w", [WEATHER]), ("get_weather", {"city": "Oslo"}))
    prediction = predict(ScriptedSidecar({}, fail={"w"}), item)
    assert prediction == SidecarPrediction("w", {}, Hint())
    scores = score_predictions([prediction], {"w": item.request}, {"w": item.call})  # type: ignore[dict-item]
    assert scores.hint_exact.value == 0.0 and scores.argument_exact.n == 0


# -- the command line on a tiny model --------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_sidecar(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny random Llama + ChatML tokenizer saved as a base, and a LoRA adapter on it."""
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model

    from sidecar_tiny import make_model, make_tokenizer

    root = tmp_path_factory.mktemp("tiny")
    tokenizer = make_tokenizer()
    model = make_model("llama", len(tokenizer))
    model.save_pretrained(root / "base")
    tokenizer.save_pretrained(root / "base")
    config = LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"])
    get_peft_model(model, config).save_pretrained(root / "adapter")
    return root / "base", root / "adapter"


def _requests_file(folder: Path) -> tuple[Path, list[LabelledRequest]]:
    gold = ("get_weather", {"city": "Paris", "days": 3})
    items = [
        LabelledRequest(_request("p", [WEATHER, TIME], gold), ("get_weather", {"city": "Paris"})),
        LabelledRequest(_request("q", [TIME], ("get_time", {"zone": "UTC"})), None),
    ]
    path = folder / "eval_requests.jsonl"
    path.write_text("".join(json.dumps(i.to_dict()) + "\n" for i in items))
    return path, items


def test_cli_end_to_end_on_a_tiny_model(
    tiny_sidecar: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, adapter = tiny_sidecar
    requests, _ = _requests_file(tmp_path)
    out = tmp_path / "report" / "eval.json"
    argv = ["eval-sidecar", "--sidecar", str(adapter), "--base", str(base), "--requests",
            str(requests), "--out", str(out), "--max-new-tokens", "3",
            "--direct-max-new-tokens", "4", "--threads", "1"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "function index" in printed and "vs target" in printed
    report = json.loads(out.read_text())
    assert report["scores"]["target"]["requests"] == 1
    assert report["scores"]["gold"]["requests"] == 2
    assert report["scores"]["target"]["argument_exact"]["n"] == 2  # city, days of get_weather
    assert report["scores"]["gold"]["function_index"]["n"] == 1  # only "p" offers two tools
    assert [p["id"] for p in report["predictions"]] == ["p", "q"]
    assert all(isinstance(p["direct"], str) for p in report["predictions"])
    assert report["config"]["labels"] == ["target", "gold"]
    assert report["config"]["required_values"] is False  # an adapter folder is no preset
    assert report["config"]["typed_values"] is False
    assert report["config"]["mentioned_values"] is False
    assert report["config"]["unnamed_nulls"] is False
    assert report["config"]["whole_words"] is False
    assert report["config"]["request_case"] is False
    assert report["config"]["joint_values"] is False
    assert report["config"]["relevance_parameter_weight"] == 0.5  # WaveOptions' default
    steered = ["--required-values", "on", "--typed-values", "on", "--mentioned-values", "on",
               "--unnamed-nulls", "on", "--whole-words", "on", "--request-case", "on",
               "--joint-values", "on", "--relevance-parameter-weight", "0"]  # fmt: skip
    assert main([*argv, *steered, "--no-direct"]) == 0
    report = json.loads(out.read_text())
    config = report["config"]
    assert config["required_values"] is True and config["typed_values"] is True
    assert config["mentioned_values"] is True and config["unnamed_nulls"] is True
    assert config["whole_words"] is True and config["request_case"] is True
    assert config["joint_values"] is True
    assert config["relevance_parameter_weight"] == 0.0
    # The rows left out still count: answered null without asking, scored like any other.
    assert report["scores"]["target"]["argument_exact"]["n"] == 2


def test_cli_refuses_training_requests_and_bad_input(
    tiny_sidecar: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, adapter = tiny_sidecar
    requests, items = _requests_file(tmp_path)
    trained = tmp_path / "trained-adapter"
    trained.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (trained / name).write_bytes((adapter / name).read_bytes())
    (trained / "training_requests.txt").write_text(f"{request_fingerprint(items[1].request)}\tq\n")
    common = ["--base", str(base), "--requests", str(requests), "--out", str(tmp_path / "r.json")]
    assert main(["eval-sidecar", "--sidecar", str(trained), *common, "--no-direct"]) == 1
    assert "trained this sidecar" in capsys.readouterr().err
    # --exclude-trained scores the rest and records how many it left out.
    argv = ["eval-sidecar", "--sidecar", str(trained), *common, "--no-direct", "--exclude-trained"]
    assert main(argv) == 0
    assert "left out 1 request" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert [p["id"] for p in report["predictions"]] == [items[0].request.id]
    assert report["config"]["excluded_trained"] == 1
    assert report["config"]["only_trained"] is False
    # --only-trained scores just those (a fit-to-training figure), and says so.
    argv[-1] = "--only-trained"
    assert main(argv) == 0
    assert "scoring only the 1 request(s) this sidecar trained on" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert [p["id"] for p in report["predictions"]] == [items[1].request.id]
    assert report["config"]["only_trained"] is True
    with pytest.raises(SystemExit) as refused:  # one or the other
        main([*argv, "--exclude-trained"])
    assert refused.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
    assert main(["eval-sidecar", "--sidecar", str(adapter), *common, "--only-trained"]) == 1
    assert "no request" in capsys.readouterr().err
    (tmp_path / "r.json").unlink()
    assert main(["eval-sidecar", "--sidecar", str(tmp_path / "nothing"), *common]) == 1
    assert "neither a LoRA adapter folder" in capsys.readouterr().err
    # A relevance weight needs scores to add it to; refused before anything loads.
    weighted = ["--sidecar", str(adapter), *common, "--relevance-weight", "2"]
    assert main(["eval-sidecar", *weighted]) == 1  # a folder's choice is the index row
    assert "needs function_choice" in capsys.readouterr().err
    assert main(["eval-sidecar", *weighted[:-1], "-1", "--function-choice", "scored"]) == 1
    assert "at least 0" in capsys.readouterr().err
    negative = ["--relevance-parameter-weight", "-0.5"]
    assert main(["eval-sidecar", "--sidecar", str(adapter), *common, *negative]) == 1
    assert "relevance_parameter_weight must be at least 0" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps(items[1].request.to_dict()) + "\n")
    argv = ["eval-sidecar", "--sidecar", str(adapter), "--base", str(base), "--requests",
            str(plain), "--labels", "target", "--out", str(tmp_path / "r.json")]  # fmt: skip
    assert main(argv) == 1
    assert "no request" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_waves_can_run_as_beside_a_target_that_holds_values_to_conventions() -> None:
    seen: list[bool] = []

    class Recording(ScriptedSidecar):
        def run_wave_sync(
            self, request: SidecarRequest, box: HintBox, cancel: threading.Event | None = None
        ) -> WaveReport:
            seen.append(request.value_conventions)
            return super().run_wave_sync(request, box, cancel)

    item = LabelledRequest(_request("v", [WEATHER]), ("get_weather", {"city": "Oslo"}))
    sidecar = Recording({"v": {"function": "0", "0.city": '"Oslo"'}})
    evaluate_sidecar(sidecar, [item], labels=["target"])
    evaluate_sidecar(sidecar, [item], labels=["target"], value_conventions=True)
    assert seen == [False, True]
