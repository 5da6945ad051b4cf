"""The embedded target under a value rule, in every mode: the check the slow tests of
test_conventions, test_percentages and test_mentions share."""

from __future__ import annotations

from typing import Any

#: How the demo decodes: names, named optionals and value conventions held.
DEMO_DECODING = {"constrain_names": True, "constrain_mentioned": True, "constrain_values": True}


def held_in_every_mode(
    embedded: tuple[object, object],
    tool: dict[str, Any],
    text: str,
    *,
    premise: list[tuple[str, dict[str, Any]]],
    expected: list[tuple[str, dict[str, Any]]],
    hints: list[dict[str, Any]],
    held: dict[str, bool] | None = None,
) -> None:
    """The embedded target decodes ``text`` as ``premise`` with names and arguments held to the
    schema only, and as ``expected`` with ``held``'s constraints (default: the demo's) —
    identically in ``vanilla`` and ``toolspec``, and in ``ooo`` under each of ``hints`` (slots
    of the call, right or wrong)."""
    from ooo_agent.formats import HermesFormat
    from ooo_agent.sidecar.base import HintBox
    from ooo_agent.targets.base import TargetRequest
    from ooo_agent.targets.hf import HFTarget

    model, tokenizer = embedded
    fmt = HermesFormat()
    messages = [{"role": "user", "content": text}]

    def run(target: HFTarget, mode: str, box: HintBox | None = None) -> tuple[list[int], Any]:
        request = TargetRequest(messages, [tool], mode=mode, max_new_tokens=64, hint_box=box)  # type: ignore[arg-type]
        out = target.generate_sync(request)
        return out.token_ids, [(c.name, c.arguments) for c in fmt.parse(out.text).calls]

    schema_only = HFTarget(model, tokenizer, fmt, constrain_names=True, constrain_arguments=True)
    _, before = run(schema_only, "vanilla")
    assert before == premise, f"the premise ({before})"
    target = HFTarget(model, tokenizer, fmt, **(DEMO_DECODING if held is None else held))
    assert target.constrain_arguments  # implied by each of the value rules
    (vanilla_ids, vanilla), (toolspec_ids, _) = run(target, "vanilla"), run(target, "toolspec")
    assert toolspec_ids == vanilla_ids  # lossless against constrained greedy
    assert vanilla == expected
    for slots in hints:
        box = HintBox()
        box.set_function(tool["function"]["name"])
        for name, value in slots.items():
            box.set_slot(name, value)
        box.finish()
        assert run(target, "ooo", box)[0] == vanilla_ids, slots
