"""Constrained decoding: only offered tool names, and still the same tokens in every mode."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from ooo_agent.decoding.constraint import CallConstraint  # noqa: E402
from ooo_agent.decoding.drafts.base import DraftContext, TokenDraft  # noqa: E402
from ooo_agent.decoding.loop import DecodeEngine  # noqa: E402
from ooo_agent.decoding.planner import DraftPlanner  # noqa: E402
from ooo_agent.decoding.stopping import StopCondition  # noqa: E402
from ooo_agent.formats import HermesFormat, JsonFormat  # noqa: E402
from ooo_agent.formats._scan import (  # noqa: E402
    INCOMPLETE,
    INVALID,
    json_value_end,
    value_kinds,
)
from test_decoding_support import tiny_model  # noqa: E402


def _tool(name: str) -> dict[str, object]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
    }


TOOLS = [_tool("math_roots.quadratic"), _tool("math.roots.cubic"), _tool("get")]
PIECES = [
    '<tool_call>\n{"name": "',
    "math",
    "_",
    ".",
    "roots",
    ".quadratic",
    "quadratic",
    "cubic",
    '", "arguments": {"a": 1}}\n</tool_call>',
    "ge",
    "t",
    "get",
    "x",
    "hello",
]
"""The names tests' vocabulary."""


class Toy:
    """A toy vocabulary: token id i is ``pieces[i]``."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = list(pieces)

    def ids(self, *pieces: str) -> list[int]:
        return [self.pieces.index(p) for p in pieces]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    def logits(self, order: Sequence[str]) -> torch.Tensor:
        """Logits ranking the given pieces first, in that order, the rest below."""
        logits = torch.zeros(len(self.pieces))
        for rank, piece in enumerate(order):
            logits[self.pieces.index(piece)] = 10.0 - rank
        return logits


NAMES = Toy(PIECES)
_ids, _decode, _logits = NAMES.ids, NAMES.decode, NAMES.logits


@pytest.fixture
def constraint() -> CallConstraint:
    return CallConstraint(HermesFormat().skeleton(TOOLS), _decode)


def test_an_invented_name_is_turned_into_an_offered_one(constraint: CallConstraint) -> None:
    generated = _ids('<tool_call>\n{"name": "', "math", ".", "roots")
    # The model wants ".quadratic" (math.roots.quadratic is not offered); the best allowed
    # continuation in its ranking is "." (toward math.roots.cubic).
    logits = _logits([".quadratic", "x", ".", "cubic"])
    greedy = int(logits.argmax())
    assert constraint.choose(generated, logits, greedy) == PIECES.index(".")
    assert constraint.overrides == 1


def test_the_argmax_stands_when_it_is_allowed(constraint: CallConstraint) -> None:
    generated = _ids('<tool_call>\n{"name": "', "math")
    logits = _logits(["_", "."])
    assert constraint.choose(generated, logits, PIECES.index("_")) == PIECES.index("_")
    assert constraint.overrides == 0


def test_closing_the_name_needs_an_offered_name(constraint: CallConstraint) -> None:
    closing = '", "arguments": {"a": 1}}\n</tool_call>'
    # "ge" is a prefix of "get" but not a tool: the closing quote is refused after it.
    generated = _ids('<tool_call>\n{"name": "', "ge")
    logits = _logits([closing, "t"])
    assert constraint.choose(generated, logits, PIECES.index(closing)) == PIECES.index("t")
    # After "get" (an offered name, and a prefix of none other) it is the only choice.
    generated = _ids('<tool_call>\n{"name": "', "get")
    logits = _logits([closing])
    assert constraint.choose(generated, logits, PIECES.index(closing)) == PIECES.index(closing)


def test_text_outside_a_name_is_left_alone(constraint: CallConstraint) -> None:
    assert constraint.choose([], _logits(["hello"]), PIECES.index("hello")) == PIECES.index("hello")
    done = _ids('<tool_call>\n{"name": "', "get", '", "arguments": {"a": 1}}\n</tool_call>')
    assert constraint.choose(done, _logits(["x"]), PIECES.index("x")) == PIECES.index("x")
    assert constraint.overrides == 0


def test_no_allowed_token_in_reach_keeps_the_argmax() -> None:
    constraint = CallConstraint(HermesFormat().skeleton(TOOLS), _decode, max_candidates=1)
    generated = _ids('<tool_call>\n{"name": "', "math", ".", "roots")
    logits = _logits([".quadratic", "."])
    assert constraint.choose(generated, logits, PIECES.index(".quadratic")) == PIECES.index(
        ".quadratic"
    )
    with pytest.raises(ValueError, match="max_candidates"):
        CallConstraint(HermesFormat().skeleton(TOOLS), _decode, max_candidates=0)


# -- well-formed calls ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('{"a": 1}', 8),
        ('{"a": {"b": [1, 2.5e-3, "x", true, null]}}', 42),
        ('[] tail', 2),
        ('{"a": 1', INCOMPLETE),
        ('{"a": tr', INCOMPLETE),
        ('{"a": 1.', INCOMPLETE),
        ('{"a": -', INCOMPLETE),
        ('{"a": "unterminated', INCOMPLETE),
        ('{"a": 5ft', INVALID),
        ('{"a": 01}', INVALID),
        ('{"a": 1.}', INVALID),
        ('{"a" 1}', INVALID),
        ('{"a": 1,}', INVALID),
        ("{'a': 1}", INVALID),
    ],
)
def test_json_value_end(text: str, end: int) -> None:
    assert json_value_end(text) == end


def test_well_formed_follows_the_whole_call() -> None:
    skeleton = HermesFormat().skeleton(TOOLS)
    head = '<tool_call>\n{"name": "get'
    assert skeleton.well_formed("plain text") is None
    for good in ("", '", "argu', '", "parameters": {"a": [1', '", "arguments": {"a": 1}}\n</to',
                 '", "arguments": {"a": 1} }\n</tool_call>\nanything after the call'):
        assert skeleton.well_formed(head + good) is True, good
    for bad in ('", "foo"', '", "arguments": {"a": 5ft', '", "arguments": {"a": {"b": 1}}\n<'):
        assert skeleton.well_formed(head + bad) is False, bad
    assert JsonFormat().skeleton(TOOLS).well_formed('{"name": "get", "parameters": {"a": 1}}')


SHAPE_PIECES = [
    '<tool_call>\n{"name": "get", "arguments": {"a": {"b": 1',
    "}}",
    "}",
    "\n</tool_call>",
    "ft",
    ",",
    " 10",
]
SHAPES = Toy(SHAPE_PIECES)
_shape_decode, _shape_logits = SHAPES.decode, SHAPES.logits


def test_a_call_closed_too_early_gets_its_last_brace() -> None:
    skeleton = HermesFormat().skeleton(TOOLS)
    constraint = CallConstraint(skeleton, _shape_decode, names=False, well_formed=True)
    generated = [0, SHAPE_PIECES.index("}}")]
    logits = _shape_logits(["\n</tool_call>", "}"])
    assert constraint.choose(generated, logits, 3) == SHAPE_PIECES.index("}")
    # Where the argmax keeps the call well-formed, it stands.
    assert constraint.choose([0], _shape_logits(["}}", "ft"]), 1) == 1
    # "1ft" is no JSON number: the next best that keeps the number a number.
    assert constraint.choose([0], _shape_logits(["ft", " 10", ","]), 4) == SHAPE_PIECES.index(",")
    assert constraint.overrides == 2
    # Without well_formed (names only) malformed JSON is left alone.
    names_only = CallConstraint(skeleton, _shape_decode)
    assert names_only.choose(generated, logits, 3) == 3


# -- the engine: a constraint is applied the same way in the plain loop and the tree walk ----

VOCAB = 64


class EveryThird:
    """A toy constraint: only token ids divisible by 3 (the best of them by the logits)."""

    def __init__(self) -> None:
        self.overrides = 0
        self.seen: list[list[int]] = []

    def choose(self, generated: Sequence[int], logits: torch.Tensor, greedy: int) -> int:
        self.seen.append(list(generated))
        if greedy % 3 == 0:
            return greedy
        self.overrides += 1
        allowed = torch.arange(0, logits.shape[-1], 3)
        return int(allowed[int(logits[allowed].argmax())])


class TruthDrafter:
    """Drafts the true continuation, sometimes with a wrong token in it."""

    def __init__(self, truth: Sequence[int], rng: random.Random) -> None:
        self.truth = list(truth)
        self.rng = rng

    def draft(self, context: DraftContext) -> list[TokenDraft]:
        at = len(context.generated_ids)
        right = tuple(self.truth[at : at + self.rng.randint(1, 8)])
        wrong = tuple(t if self.rng.random() < 0.7 else self.rng.randrange(VOCAB) for t in right)
        return [TokenDraft(right, "schema", 0.9), TokenDraft(wrong, "ngram", 0.5)]

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_speculation_equals_constrained_greedy(seed: int) -> None:
    model = tiny_model("llama", "sdpa", vocab_size=VOCAB, seed=seed)
    rng = random.Random(seed)
    prompt = [rng.randrange(VOCAB) for _ in range(rng.randint(3, 12))]
    reference = DecodeEngine(model, prefix_reuse=False)
    plain = EveryThird()
    truth = reference.decode(prompt, max_new_tokens=24, stop=StopCondition.of([]), constraint=plain)
    assert all(t % 3 == 0 for t in truth.token_ids)
    assert plain.overrides > 0  # the constraint changed the output: a real test of the plumbing
    assert truth.stats.constrained_tokens == plain.overrides
    unconstrained = reference.decode(prompt, max_new_tokens=24, stop=StopCondition.of([]))
    assert unconstrained.token_ids != truth.token_ids

    speculative = DecodeEngine(model, prefix_reuse=True)
    spec_constraint = EveryThird()
    planner = DraftPlanner([TruthDrafter(truth.token_ids, rng)], budget=16, min_gain=0.0)
    spec = speculative.decode(
        prompt,
        max_new_tokens=24,
        stop=StopCondition.of([]),
        planner=planner,
        constraint=spec_constraint,
    )
    assert spec.token_ids == truth.token_ids
    assert spec.stats.forward_passes < truth.stats.forward_passes
    # The walk asks the constraint with each node's own output so far.
    assert all(seen == truth.token_ids[: len(seen)] for seen in spec_constraint.seen)


# -- the embedded target: a name it would invent becomes an offered one -------------------


def _math_tool(name: str, what: str, params: dict[str, str], kind: str) -> dict[str, object]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Calculate the roots of a {what} equation.",
            "parameters": {
                "type": "object",
                "properties": {p: {"type": kind, "description": d} for p, d in params.items()},
                "required": list(params),
            },
        },
    }


ROOT_TOOLS = [
    _math_tool(
        "math_roots.quadratic",
        "quadratic",
        {"a": "Coefficient of the second-degree term.", "b": "Coefficient of the first-degree "
         "term.", "c": "Constant term."},
        "integer",
    ),
    _math_tool(
        "math.roots.cubic",
        "cubic",
        {"a": "Coefficient of the third-degree term.", "b": "Coefficient of the second-degree "
         "term.", "c": "Coefficient of the first-degree term.", "d": "Constant term."},
        "number",
    ),
    {
        "type": "function",
        "function": {
            "name": "math.roots.polynomial",
            "description": "Calculate the roots of a polynomial equation.",
            "parameters": {
                "type": "object",
                "properties": {
                    "coefficients": {
                        "type": "array",
                        "items": {"type": "number"},
                        "description": "Coefficients from the highest degree term.",
                    },
                    "degree": {"type": "integer", "description": "Degree of the polynomial."},
                },
                "required": ["coefficients"],
            },
        },
    },
]
"""Three similar names: unconstrained, the embedded target writes ``math.roots.quadratic``."""


@pytest.mark.slow
def test_the_embedded_target_names_only_offered_tools_in_every_mode(
    embedded: tuple[object, object],
) -> None:
    from ooo_agent.targets.base import TargetRequest
    from ooo_agent.targets.hf import HFTarget

    model, tokenizer = embedded
    fmt = HermesFormat()
    offered = {t["function"]["name"] for t in ROOT_TOOLS}  # type: ignore[index]
    messages = [
        {"role": "user", "content": "Calculate the roots of a quadratic equation with "
         "coefficients 5, 20, and -25"}
    ]
    plain = HFTarget(model, tokenizer, fmt)
    free = plain.generate_sync(TargetRequest(messages, ROOT_TOOLS, mode="vanilla", max_new_tokens=64))
    invented = [c.name for c in fmt.parse(free.text).calls if c.name not in offered]
    assert invented, f"the premise: unconstrained, the model invents a name ({free.text!r})"

    constrained = HFTarget(model, tokenizer, fmt, constrain_names=True, constrain_json=True)
    outputs = {
        mode: constrained.generate_sync(
            TargetRequest(messages, ROOT_TOOLS, mode=mode, max_new_tokens=64)
        )
        for mode in ("vanilla", "toolspec")
    }
    assert outputs["toolspec"].token_ids == outputs["vanilla"].token_ids
    calls = fmt.parse(outputs["vanilla"].text).calls
    assert calls and all(c.name in offered for c in calls), outputs["vanilla"].text
    assert outputs["vanilla"].stats.constrained_tokens >= 1
    assert outputs["toolspec"].stats.constrained_tokens == outputs["vanilla"].stats.constrained_tokens


# -- arguments held to the tool's schema ----------------------------------------------------

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "rate": {"type": "number"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "extra": {"description": "no type: anything goes"},
                "years": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["city"],
        },
    },
}
OPEN = {"type": "function", "function": {"name": "anything", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("{", True),
        ('{"ci', True),
        ('{"co', False),  # no parameter starts so
        ('{"city": "Paris"', True),
        ('{"city": "Paris"}', True),
        ('{"city": "Paris", "days": 3}', True),
        ("{}", False),  # the required city is missing
        ('{"days": 3}', False),
        ('{"days": 3, ', True),  # a comma: the city can still come
        ('{"days": 3.5', False),  # an integer
        ('{"days": 3e', False),
        ('{"days": "3', False),  # not a string
        ('{"rate": 3.5, "city": "x"}', True),
        ('{"rate": 3, "city": "x"}', True),  # an integer is a number
        ('{"rate": true', False),
        ('{"unit": "cel', True),
        ('{"unit": "kel', False),  # not in the enum
        ('{"unit": "celsius", "city": "x"}', True),
        ('{"unit": "Celsius"', False),
        ('{"note": null, "city": "x"}', True),
        ('{"city": null', False),
        ('{"extra": {"any": [1, "thing"]}, "city": "x"}', True),
        ('{"city": "P", "city"', False),  # twice
        ('{"years": [2015, 20', True),
        ('{"years": [2015, "20', False),  # elements of the declared type
        ('{"years": [2015.5', False),
        ('{"years": [], "city": "x"}', True),
        ('{"years": [1, 2], "city": "x"}', True),
        ('{"city": "x", "days": 1, "unit": "celsius", "rate": 1, "note": "n", "extra": 0, '
         '"years": [],', False),  # no parameter left after the comma
        ('{"city": "x", "days": 1, "unit": "celsius", "rate": 1, "note": "n", "extra": 0}', True),
        ('{"city": 5', False),
        ('{"city": "x"} ', True),
        ('{"city": "x" ', True),
        ('{ "city" : "x",  "days":3}', True),
    ],
)
def test_arguments_follow_the_schema(arguments: str, expected: bool) -> None:
    skeleton = HermesFormat().skeleton([WEATHER, OPEN])
    head = '<tool_call>\n{"name": "get_weather", "arguments": '
    assert skeleton.conforms(head + arguments) is expected
    # Every one of them is well-formed JSON so far: the schema is what decides.
    assert skeleton.well_formed(head + arguments) is True


def test_a_required_name_the_schema_does_not_define_is_not_waited_for() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "required": ["a", "ghost"],
            },
        },
    }
    skeleton = HermesFormat().skeleton([tool])
    assert skeleton.conforms('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>')
    assert skeleton.conforms('<tool_call>\n{"name": "f", "arguments": {}') is False


def test_arguments_of_an_open_schema_or_unknown_tool_are_only_well_formed() -> None:
    skeleton = HermesFormat().skeleton([WEATHER, OPEN])
    assert skeleton.conforms('<tool_call>\n{"name": "anything", "arguments": {"x": [1], "y": ')
    assert skeleton.conforms('<tool_call>\n{"name": "anything", "arguments": {"x": 1, "x"') is False
    assert skeleton.conforms('<tool_call>\n{"name": "nope", "arguments": {"q": 1}}\n</tool_call>')
    assert skeleton.conforms('<tool_call>\n{"name": "nope", "arguments": {"q": 1q') is False
    assert skeleton.conforms("no call here") is None
    whole = '{"name": "get_weather", "parameters": {"city": "Oslo", "days": 2}}'
    assert JsonFormat().skeleton([WEATHER]).conforms(whole) is True
    assert JsonFormat().skeleton([WEATHER]).conforms(whole.replace('"days"', '"weeks"')) is False


@pytest.mark.parametrize(
    ("schema", "kinds"),
    [
        ({"type": "integer"}, {"integer"}),
        ({"type": "number"}, {"number", "integer"}),
        ({"type": ["string", "null"]}, {"string", "null"}),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, {"integer", "null"}),
        ({"anyOf": [{"type": "integer"}, {"$ref": "#/x"}]}, set()),  # one branch unknown
        ({"enum": ["a", 1]}, {"string", "integer"}),
        ({"const": True}, {"boolean"}),
        ({"type": "float"}, set()),  # not a JSON Schema type name: left free
        ({"type": "string", "nullable": True}, {"string", "null"}),
        ({"description": "x"}, set()),
    ],
)
def test_value_kinds(schema: dict[str, object], kinds: set[str]) -> None:
    assert value_kinds(schema) == kinds


ARG_PIECES = [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"',
    "}}",
    ", ",
    '"',
    "days",
    "weeks",
    '": ',
    "3",
    ".5",
    '"3"',
    "   ",
]
ARGS = Toy(ARG_PIECES)


def test_the_constraint_steers_keys_types_and_the_close() -> None:
    skeleton = HermesFormat().skeleton([WEATHER])
    constraint = CallConstraint(skeleton, ARGS.decode, names=False, arguments=True)
    assert constraint.well_formed  # arguments imply well-formed JSON
    head = ARGS.ids(ARG_PIECES[0], ", ", '"')
    # A key of another tool ("weeks") gives way to the tool's own.
    assert constraint.choose(head, ARGS.logits(["weeks", "days"]), ARGS.ids("weeks")[0]) == (
        ARGS.ids("days")[0]
    )
    after_key = head + ARGS.ids("days", '": ')
    # A string where an integer is declared, then a fraction, give way to the integer.
    assert constraint.choose(after_key, ARGS.logits(['"3"', "3"]), ARGS.ids('"3"')[0]) == (
        ARGS.ids("3")[0]
    )
    with_value = after_key + ARGS.ids("3")
    assert constraint.choose(with_value, ARGS.logits([".5", "}}"]), ARGS.ids(".5")[0]) == (
        ARGS.ids("}}")[0]
    )
    assert constraint.overrides == 3
    # Without the schema, the same choices stand.
    loose = CallConstraint(skeleton, ARGS.decode, names=False, well_formed=True)
    assert loose.choose(head, ARGS.logits(["weeks"]), ARGS.ids("weeks")[0]) == ARGS.ids("weeks")[0]


def test_the_constraint_keeps_the_call_open_for_a_required_argument() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city", "days"],
            },
        },
    }
    constraint = CallConstraint(HermesFormat().skeleton([tool]), ARGS.decode, arguments=True)
    closing = ARGS.ids(ARG_PIECES[0])
    # The model would close after the city; "days" is required, so the comma comes first —
    # not padding, which the JSON allows but which only puts the choice off.
    ranking = ARGS.logits(["}}", "   ", ", "])
    assert constraint.choose(closing, ranking, ARGS.ids("}}")[0]) == ARGS.ids(", ")[0]
    # Padding the model chose itself stands.
    assert constraint.choose(closing, ARGS.logits(["   "]), ARGS.ids("   ")[0]) == (
        ARGS.ids("   ")[0]
    )


@pytest.mark.slow
def test_the_embedded_target_writes_only_the_tools_parameters_in_every_mode(
    embedded: tuple[object, object],
) -> None:
    from ooo_agent.demo import demo_tools
    from ooo_agent.formats import get_format
    from ooo_agent.targets.base import TargetRequest
    from ooo_agent.targets.hf import HFTarget

    model, tokenizer = embedded
    fmt = get_format("hermes-description-first")  # the preset's prompt
    tools = [t.to_openai() for t in demo_tools()]
    messages = [{"role": "user", "content": "Refund order D-9001 fully, 42.50."}]
    free = HFTarget(model, tokenizer, fmt).generate_sync(
        TargetRequest(messages, tools, mode="vanilla", max_new_tokens=96)
    )
    (call,) = fmt.parse(free.text).calls
    assert set(call.arguments) - {"order_id"}, (
        f"the premise: unconstrained, the model borrows another tool's parameters ({free.text!r})"
    )

    constrained = HFTarget(model, tokenizer, fmt, constrain_names=True, constrain_arguments=True)
    outputs = {
        mode: constrained.generate_sync(TargetRequest(messages, tools, mode=mode, max_new_tokens=96))
        for mode in ("vanilla", "toolspec")
    }
    assert outputs["toolspec"].token_ids == outputs["vanilla"].token_ids
    calls = fmt.parse(outputs["vanilla"].text).calls
    own = {t.name: set(t.parameters["properties"]) for t in demo_tools()}
    assert calls and calls[0].arguments["order_id"] == "D-9001", outputs["vanilla"].text
    for call in calls:
        assert call.name in own and set(call.arguments) <= own[call.name], outputs["vanilla"].text
    assert outputs["vanilla"].stats.constrained_tokens >= 1


# -- no false refusal: every prefix of a valid call conforms ---------------------------------

_ITEMS = st.lists(st.integers(-10**6, 10**6), max_size=4)
_TEXT = st.text(max_size=12)
_VALID_ARGUMENTS = st.fixed_dictionaries(
    {"city": _TEXT},
    optional={
        "days": st.integers(-1000, 1000),
        "unit": st.sampled_from(["celsius", "fahrenheit"]),
        "rate": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-99, 99),
        "note": st.none() | _TEXT,
        "extra": st.recursive(
            st.none() | st.booleans() | st.integers() | _TEXT,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
            max_leaves=6,
        ),
        "years": _ITEMS,
    },
)


@settings(max_examples=150, deadline=None)
@given(arguments=_VALID_ARGUMENTS, fmt_name=st.sampled_from(["hermes", "json", "llama3"]))
def test_every_prefix_of_a_valid_call_conforms(arguments: dict[str, object], fmt_name: str) -> None:
    from ooo_agent.formats import get_format

    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton([WEATHER, OPEN])
    text = fmt.render_calls([("get_weather", arguments)])
    for end in range(len(text) + 1):
        assert skeleton.conforms(text[:end]) is not False, (text[:end], text)


def test_an_allowed_argmax_costs_one_decode_per_position() -> None:
    decoded: list[int] = []

    def counting(ids: Sequence[int]) -> str:
        decoded.append(len(ids))
        return ARGS.decode(ids)

    constraint = CallConstraint(HermesFormat().skeleton([WEATHER]), counting, arguments=True)
    output = ARGS.ids(ARG_PIECES[0], ", ", '"', "days", '": ', "3", "}}")
    for k in range(len(output)):
        assert constraint.choose(output[:k], ARGS.logits([]), output[k]) == output[k]
    # The first position decodes its prefix too; every later one only the new token's text.
    assert len(decoded) == len(output) + 1


# -- array elements, nested keys, whitespace ----------------------------------------------

HOTEL = {
    "type": "function",
    "function": {
        "name": "book_hotel",
        "parameters": {
            "type": "object",
            "properties": {
                "services": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["breakfast", "parking", "spa"]},
                },
                "guests": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "rooms": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
                "nights": {"type": "array", "items": {"type": "integer"}},
                "codes": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{2}-"}},
                "notes": {"type": "object"},
            },
        },
    },
}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"services": ["break', True),
        ('{"services": ["Break', False),  # elements among the item enum, case and all
        ('{"services": ["breakfast", "spa"]}', True),
        ('{"services": ["breakfast", "break', False),  # an option named twice
        ('{"services": ["breakfast", "parking", "spa"]}', True),
        ('{"services": ["breakfast", "parking", "spa",', False),  # every option named: no more
        ('{"services": ["sauna"', False),
        ('{"guests": ["Ann", "Bo"]}', True),
        ('{"guests": ["Ann", "Ann"]}', True),  # repeats allowed where the schema allows them
        ('{"guests": ["Ann", "Bo",', False),  # maxItems 2
        ('{"rooms": [101, 102]}', True),
        ('{"rooms": [101, 101', True),  # a number can still grow: 1010
        ('{"rooms": [101, 101]', False),  # uniqueItems
        ('{"rooms": [1, 1.0]', False),  # JSON's equality: one number (and not an integer)
        ('{"nights": [2, 2, 2]}', True),
        ('{"codes": ["AB-1", "C', True),
        ('{"codes": ["AB-1", "c', False),  # each element held to the items' pattern
        ('{"codes": ["AB-1", "ABC', False),
        ('{"codes": ["AB"]', False),  # a closed element must match
        ('{"notes": {"a": 1, "b": {"a": 2}}}', True),
        ('{"notes": {"a": 1, "a"', False),  # a key twice in a nested object
        ('{"notes": {"a": [{"x": 1}, {"x": 2}]}}', True),  # one key per object
        ('{"nights": [2,' + " " * 32 + "3]}", True),
        ('{"nights": [2,' + " " * 33, False),  # a model stuck writing spaces
        ('{' + " " * 33, False),
        ('{"guests": ["' + " " * 40, True),  # inside a string: the string's own business
    ],
)
def test_array_elements_nested_keys_and_whitespace(arguments: str, expected: bool) -> None:
    skeleton = HermesFormat().skeleton([HOTEL])
    head = '<tool_call>\n{"name": "book_hotel", "arguments": '
    assert skeleton.conforms(head + arguments) is expected
    # Only the schema-held check is stricter: all of them are well-formed JSON so far.
    assert skeleton.well_formed(head + arguments) is True


def test_an_option_named_twice_gives_way_and_a_full_choice_closes() -> None:
    head = '<tool_call>\n{"name": "book_hotel", "arguments": {"services": ["breakfast"'
    pieces = [head, ", ", '"breakfast"', '"parking"', '"spa"', "]", "}}"]
    toy = Toy(pieces)
    constraint = CallConstraint(HermesFormat().skeleton([HOTEL]), toy.decode, arguments=True)
    # The model's favourite repeats the first option; the next option it ranks stands in.
    after_comma = toy.ids(head, ", ")
    repeat = toy.ids('"breakfast"')[0]
    ranked = toy.logits(['"breakfast"', '"spa"'])
    assert constraint.choose(after_comma, ranked, repeat) == toy.ids('"spa"')[0]
    # Every option named: the comma that would start a fourth gives way to the bracket.
    full = toy.ids(head, ", ", '"parking"', ", ", '"spa"')
    comma = toy.ids(", ")[0]
    assert constraint.choose(full, toy.logits([", ", "]"]), comma) == toy.ids("]")[0]


_SERVICES = st.lists(st.sampled_from(["breakfast", "parking", "spa"]), unique=True)


@settings(max_examples=100, deadline=None)
@given(
    arguments=st.fixed_dictionaries(
        {},
        optional={
            "services": _SERVICES,
            "guests": st.lists(_TEXT, max_size=2),
            "rooms": st.lists(st.integers(-999, 999), unique=True, max_size=4),
            "nights": st.lists(st.integers(0, 9), max_size=4),
            "notes": st.dictionaries(_TEXT, st.integers() | _TEXT, max_size=3),
        },
    ),
    fmt_name=st.sampled_from(["hermes", "json", "llama3"]),
)
def test_every_prefix_of_a_valid_array_call_conforms(
    arguments: dict[str, object], fmt_name: str
) -> None:
    from ooo_agent.formats import get_format

    fmt = get_format(fmt_name)
    skeleton = fmt.skeleton([HOTEL])
    text = fmt.render_calls([("book_hotel", arguments)])
    for end in range(len(text) + 1):
        assert skeleton.conforms(text[:end]) is not False, (text[:end], text)


BOUNDED = {
    "type": "function",
    "function": {
        "name": "score",
        "parameters": {
            "type": "object",
            "properties": {
                "share": {"type": "number", "minimum": -1, "maximum": 1},
                "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10},
                "level": {"type": "number", "minimum": 2, "exclusiveMaximum": True, "maximum": 5},
            },
            "required": [],
        },
    },
}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"share": 0', True),
        ('{"share": 0.05}', True),
        ('{"share": 1}', True),
        ('{"share": 1.', True),  # 1.0 fits
        ('{"share": 1.5', False),
        ('{"share": 5', False),  # 5, 5.2, 50: all too big
        ('{"share": -', True),
        ('{"share": -0.5}', True),
        ('{"share": -2', False),
        ('{"share": 5e', False),  # plain decimal notation while a bounded number is written
        ('{"count": 0}', False),  # exclusive
        ('{"count": 0', False),  # an integer's 0 is zero: no digit, no dot may follow
        ('{"count": 10}', True),
        ('{"count": 11', False),
        ('{"count": -', False),
        ('{"level": 2}', True),
        ('{"level": 4.99}', True),
        ('{"level": 5}', False),  # draft 4: exclusiveMaximum as a flag on maximum
        ('{"level": 5.', False),
        ('{"level": 1.9', False),
        ('{"level": "x"', False),
    ],
)
def test_numbers_within_their_bounds(arguments: str, expected: bool) -> None:
    skeleton = HermesFormat().skeleton([BOUNDED])
    head = '<tool_call>\n{"name": "score", "arguments": '
    assert skeleton.conforms(head + arguments) is expected


@settings(max_examples=150, deadline=None)
@given(
    thousandths=st.integers(min_value=-1000, max_value=1000),
    count=st.integers(min_value=1, max_value=10),
)
def test_every_prefix_of_a_bounded_number_conforms(thousandths: int, count: int) -> None:
    skeleton = HermesFormat().skeleton([BOUNDED])
    text = HermesFormat().render_calls([("score", {"share": thousandths / 1000, "count": count})])
    for end in range(len(text) + 1):
        assert skeleton.conforms(text[:end]) is not False, (text[:end], text)


def test_number_bounds_of_a_schema() -> None:
    from ooo_agent.formats._scan import NumberBounds

    assert NumberBounds.of({"type": "number"}) is None
    assert NumberBounds.of({"minimum": True}) is None  # a flag is no bound
    assert NumberBounds.of({"minimum": 0, "exclusiveMinimum": 1}) == NumberBounds(1.0, None, True)
    assert NumberBounds.of({"minimum": 2, "exclusiveMinimum": 1}) == NumberBounds(2.0)
    assert NumberBounds.of({"maximum": 3, "exclusiveMaximum": True}) == NumberBounds(
        None, 3.0, False, True
    )
