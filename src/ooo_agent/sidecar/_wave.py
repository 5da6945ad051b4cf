"""What every sidecar backend shares: planning a wave's rows and landing answers in the box.

A backend only has to turn prompt texts into answer texts; :class:`WavePlan` says which rows
to ask, and :class:`WaveAssembler` takes each answer the moment it arrives, so the drafter sees
the function as soon as its row finishes and each slot as soon as its own row does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ooo_agent.offered import OfferedTool, ToolLike, offer
from ooo_agent.rules.mentions import mentioned_of, mentioned_parameters
from ooo_agent.rules.words import case_kept, in_request_case
from ooo_agent.sidecar.base import Hint, HintBox, SidecarRequest
from ooo_agent.sidecar.prompts import PromptTemplate
from ooo_agent.sidecar.relevance import PARAMETER_WEIGHT
from ooo_agent.sidecar.rows import (
    PROMPT_LAYOUTS,
    PromptLayout,
    SemanticRow,
    assemble_hint,
    build_wave_rows,
    parse_function_index,
    parse_slot_value,
    tool_signatures,
)
from ooo_agent.sidecar.slots import SlotCheck, slot_checker

__all__ = [
    "FUNCTION_CHOICES",
    "FunctionChoice",
    "WaveAssembler",
    "WaveOptions",
    "WavePlan",
    "WaveReport",
]

FunctionChoice = Literal["index", "scored"]
"""How a sidecar picks the tool when several are offered (:attr:`WaveOptions.function_choice`)."""

FUNCTION_CHOICES: tuple[FunctionChoice, ...] = ("index", "scored")


@dataclass
class WaveReport:
    """Everything one wave produced: the hint, dropped slots, arrival order and timing."""

    hint: Hint
    dropped: dict[str, str] = field(default_factory=dict)
    arrivals: list[str] = field(default_factory=list)
    """Row keys in the order their answers landed (``function``, ``<index>.<param>``)."""
    answers: dict[str, str] = field(default_factory=dict)
    """Raw answer text of every row asked, by row key."""
    latency_s: float = 0.0
    """From the request's arrival to the wave's last answer."""
    followed_target: bool = False
    """The hint is for the function the target wrote (``WaveOptions.follow_target``)."""


@dataclass(frozen=True)
class WaveOptions:
    """Which rows a wave asks, and how their answers are held. Each option is explained, with
    what it measured, in docs/sidecar.md.

    Args:
        check_slots: drop slot values that fail the slot's JSON schema.
        schedule: how a local backend orders the rows. ``parallel``: every row in one batch.
            ``function-first``: the function-index row, then only the chosen tool's argument
            rows. ``auto``: ``function-first`` for a model on the CPU, else ``parallel``. HTTP
            backends always send one request with every row.
        follow_target: once the target has written its function name, hint that tool's
            slots, whatever the function-index row said (the target never waits for it).
        function_choice: how the tool is picked when several are offered. ``index``: the
            function-index row's greedy answer. ``scored``: the likeliest tool name as the
            start of a direct-call answer, all names scored in one batched forward; it needs
            log-probabilities: in-process sidecars only.
        relevance_weight: with ``scored``, the weight of the request's own
            words (:func:`~ooo_agent.sidecar.relevance.tool_relevance`) added to the name
            scores' log-softmax. 0: the sidecar's scores alone.
        relevance_parameter_weight: in that relevance, the weight of the words of the tool's
            parameter names and descriptions; 0: parameters left out.
        layout: where the rows' prompts put the conversation
            (:data:`~ooo_agent.sidecar.rows.PromptLayout`): the layout the sidecar model was
            trained on. ``tools-first`` lets a prefix cache serve the listing and earlier
            turns to the next wave.
        required_values: a *required* parameter's row may not answer ``null``. In-process
            sidecars only.
        mentioned_values: the same for an *optional* parameter the user's messages name
            (:func:`~ooo_agent.rules.mentions.mentioned_parameters`), skipped where the
            request's ``named_optionals`` is ``False``. In-process sidecars only.
        typed_values: each argument row's answer is held, token by token, to its parameter's
            schema (:class:`~ooo_agent.sidecar.values.ValueConstraint`). In-process sidecars
            only.
        unnamed_nulls: an *optional* parameter the user's messages do not name is answered
            ``null`` without asking its row. Any backend.
        whole_words: with ``typed_values`` and ``SidecarRequest.value_conventions``, a row
            that starts copying a word of the request finishes it, and a string written as an
            ISO date is one the request states
            (:func:`~ooo_agent.rules.words.words_copied_whole`,
            :func:`~ooo_agent.rules.words.dates_stated`). In-process sidecars only.
        request_case: a string the sidecar capitalises where the request writes the same words
            only in lower case takes the request's case
            (:func:`~ooo_agent.rules.words.in_request_case`). Any backend.
        joint_values: with ``typed_values``, the chosen tool's numbers, and strings that repeat
            an earlier string of the call, are written again in a direct-call answer that
            reads the values before them; such a value replaces its row's answer. The call's
            KV cache is kept between values (:class:`~ooo_agent.sidecar.batch.KeptPrefix`).
            In-process sidecars only.
    """

    check_slots: bool = True
    schedule: Literal["auto", "parallel", "function-first"] = "auto"
    follow_target: bool = True
    function_choice: FunctionChoice = "index"
    relevance_weight: float = 0.0
    relevance_parameter_weight: float = PARAMETER_WEIGHT
    layout: PromptLayout = "dialogue-first"
    required_values: bool = False
    mentioned_values: bool = False
    typed_values: bool = False
    unnamed_nulls: bool = False
    whole_words: bool = False
    request_case: bool = False
    joint_values: bool = False

    def __post_init__(self) -> None:
        if self.schedule not in ("auto", "parallel", "function-first"):
            raise ValueError(f"unknown schedule {self.schedule!r}")
        if self.function_choice not in FUNCTION_CHOICES:
            raise ValueError(
                f"unknown function_choice {self.function_choice!r} "
                f"({', '.join(FUNCTION_CHOICES)})"
            )
        if not self.relevance_weight >= 0:  # also refuses NaN
            raise ValueError(f"relevance_weight must be at least 0, not {self.relevance_weight}")
        if not self.relevance_parameter_weight >= 0:
            raise ValueError(
                f"relevance_parameter_weight must be at least 0, not {self.relevance_parameter_weight}"
            )
        if self.relevance_weight and self.function_choice == "index":
            raise ValueError(
                "relevance_weight needs function_choice 'scored' (the function-index row "
                "gives no scores to add it to)"
            )
        if self.joint_values and not self.typed_values:
            raise ValueError(
                "joint_values needs typed_values (each value written again is held to its "
                "row's schema, and ends where its value does)"
            )
        if self.layout not in PROMPT_LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r} ({', '.join(PROMPT_LAYOUTS)})")


@dataclass
class WavePlan:
    """The rows one wave asks and their prompt texts (``prompts[i]`` is ``rows[i]``'s)."""

    request: SidecarRequest
    rows: list[SemanticRow]
    prompts: list[str]
    known_function: int | None = None
    """Tool index known without asking (a single offered tool), else None."""
    choice_prompt: str | None = None
    """``function_choice="scored"``: the direct-call prompt whose answer's
    start is scored for each tool name (the plan then has no function-index row)."""
    implied: dict[str, str] = field(default_factory=dict)
    """Answers known without asking, by row key: ``null`` for each optional parameter the
    request does not name (``WaveOptions.unnamed_nulls``); their rows are not in ``rows``."""
    named: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per tool name, the optional parameters the request names
    (:func:`~ooo_agent.rules.mentions.mentioned_parameters`), computed once per wave when
    ``mentioned_values`` or ``unnamed_nulls`` reads them; else empty."""
    cased: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``WaveOptions.request_case``: by row key, the rows whose answers take the request's
    case (a free string or an array of them), each with the options its parameter's schema
    writes (kept as they are)."""
    request_text: str = ""
    """The user's words, where ``cased`` rows read them."""

    @classmethod
    def build(
        cls, request: SidecarRequest, template: PromptTemplate, options: WaveOptions
    ) -> WavePlan:
        scored = options.function_choice == "scored"
        rows = build_wave_rows(
            request.messages,
            request.tools,
            direct_call=scored,
            layout=options.layout,
        )
        direct = rows.pop() if scored else None  # the direct-call row is scored, never asked
        known = None
        if len(request.tools) == 1:
            known = 0
            rows = [r for r in rows if r.kind != "function_index"]
        choice = None
        if known is None and direct is not None:
            rows = [r for r in rows if r.kind != "function_index"]
            choice = template(direct.messages)
        named: dict[str, tuple[str, ...]] = {}
        if options.mentioned_values or options.unnamed_nulls:
            named = _mentioned(request)
        implied: dict[str, str] = {}
        if options.unnamed_nulls:
            rows, implied = _without_unnamed_optionals(request, rows, named)
        prompts = [template(r.messages) for r in rows]
        cased, request_text = _cased_rows(request, rows) if options.request_case else ({}, "")
        return cls(
            request, rows, prompts, known, choice, implied, named, cased, request_text
        )


def _mentioned(request: SidecarRequest) -> dict[str, tuple[str, ...]]:
    """Per offered tool name, the optional parameters the request names: the request's
    ruling's, computed once for the target's rules and the wave (else computed here)."""
    if request.ruled is None:
        return mentioned_parameters(request.messages, request.tools)
    offered = {tool.name for tool in request.tools}
    return {name: keys for name, keys in mentioned_of(request.ruled).items() if name in offered}


def _cased_rows(
    request: SidecarRequest, rows: Sequence[SemanticRow]
) -> tuple[dict[str, tuple[str, ...]], str]:
    """The argument rows whose answers take the request's case (by key, with their parameter's
    options: :func:`~ooo_agent.rules.words.case_kept`) and the user's words."""
    from ooo_agent.sidecar.relevance import user_text

    cased: dict[str, tuple[str, ...]] = {}
    for row in rows:
        if row.kind != "argument_value" or row.function_index is None or row.param is None:
            continue
        keep = case_kept(request.tools[row.function_index].properties.get(row.param))
        if keep is not None:
            cased[row.key] = keep
    return cased, (user_text(request.messages) if cased else "")


def required_parameters(tool: ToolLike) -> frozenset[str]:
    """The required parameter names of an offered tool, an OpenAI tool dict or a bare function
    dict."""
    return frozenset(offer([tool])[0].required)


def _without_unnamed_optionals(
    request: SidecarRequest, rows: list[SemanticRow], named: Mapping[str, tuple[str, ...]]
) -> tuple[list[SemanticRow], dict[str, str]]:
    """``rows`` less the argument rows of optional parameters the request does not name
    (``named``: per tool name, those it names), and those rows' implied answers (``null``)."""
    asked = [  # per offered tool, the parameters whose rows are asked
        required_parameters(tool) | set(named.get(tool.name, ())) for tool in request.tools
    ]
    kept: list[SemanticRow] = []
    implied: dict[str, str] = {}
    for row in rows:
        unasked = row.function_index is not None and row.param not in asked[row.function_index]
        if row.kind == "argument_value" and unasked:
            implied[row.key] = "null"
        else:
            kept.append(row)
    return kept, implied


@dataclass
class WaveAssembler:
    """Receives row answers as they arrive (from any thread) and fills a :class:`HintBox`.

    Slot answers that arrive before the function is known are held back: a hint's slots belong
    to one function, so a value is published only once its function is the predicted one.
    """

    plan: WavePlan
    box: HintBox
    check: SlotCheck | None
    function_answer: str | None = None
    slot_answers: dict[str, str] = field(default_factory=dict)
    arrivals: list[str] = field(default_factory=list)
    """Row keys in the order their answers arrived (``function``, ``<index>.<param>``)."""
    _function: int | None = None
    followed: bool = False
    """True once the target's own function replaced the function-index row's answer."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, plan: WavePlan, box: HintBox, options: WaveOptions) -> WaveAssembler:
        """A new assembler; publishes the function at once when the plan already knows it,
        and (``options.follow_target``) listens for the function the target writes."""
        check = slot_checker(plan.request.tools) if options.check_slots else None
        assembler = cls(plan, box, check, slot_answers=dict(plan.implied))
        if plan.known_function is not None:
            assembler.function_answer = str(plan.known_function)
            assembler._publish_function(plan.known_function)
        elif options.follow_target and len(plan.request.tools) > 1:
            box.on_target_function(assembler.follow)
        return assembler

    @property
    def function(self) -> int | None:
        """The tool index the hint is for now (None: not known yet)."""
        return self._function

    def follow(self, name: str) -> None:
        """The target wrote ``name``: hint that tool (its slots answered so far at once)."""
        names = [t.name for t in self._tools]
        if name not in names:
            return
        index = names.index(name)
        with self._lock:
            self.followed = True
            if index != self._function:
                self._publish_function(index, from_target=True)

    @property
    def _tools(self) -> Sequence[OfferedTool]:
        return self.plan.request.tools

    def choose(self, index: int) -> None:
        """The tool chosen without a function-index row (``scored`` choice)."""
        if not 0 <= index < len(self._tools):
            raise ValueError(f"tool index {index} outside 0..{len(self._tools) - 1}")
        with self._lock:
            self.arrivals.append("function")
            self.function_answer = str(index)
            if not self.followed:
                self._publish_function(index)

    def answer(self, row_index: int, text: str) -> None:
        """Record row ``row_index``'s answer and publish whatever it makes visible."""
        row = self.plan.rows[row_index]
        with self._lock:
            self.arrivals.append(row.key)
            if row.kind == "function_index":
                self.function_answer = text
                index = parse_function_index(text, len(self._tools))
                if index is not None and not self.followed:
                    self._publish_function(index)
            elif row.kind == "argument_value" and row.param is not None:
                keep = self.plan.cased.get(row.key)
                if keep is not None:
                    text = in_request_case(self.plan.request_text, text, keep)
                self.slot_answers[row.key] = text
                if self._function is not None and row.function_index == self._function:
                    self._publish_slot(self._function, row.param, text)

    def answers_of(self, index: int) -> dict[str, str]:
        """Tool ``index``'s argument answers so far by parameter (implied nulls included)."""
        prefix = f"{index}."
        with self._lock:
            return {
                key[len(prefix) :]: text
                for key, text in self.slot_answers.items()
                if key.startswith(prefix)
            }

    def hint(self, *, complete: bool = True) -> tuple[Hint, dict[str, str]]:
        """The assembled hint and the slots dropped, with reasons."""
        with self._lock:
            return assemble_hint(
                self._tools,
                str(self._function) if self.followed else self.function_answer,
                dict(self.slot_answers),
                check=self.check,
                complete=complete,
            )

    def finish(self) -> WaveReport:
        """Mark the box complete and report the wave."""
        hint, dropped = self.hint()
        self.box.finish()
        with self._lock:
            answers = dict(self.slot_answers)
            if self.function_answer is not None:
                answers["function"] = self.function_answer
            arrivals = list(self.arrivals)
            followed = self.followed
        latency = time.perf_counter() - self.plan.request.arrival
        return WaveReport(hint, dropped, arrivals, answers, latency, followed)

    # -- publishing (called with the lock held) -------------------------------------
    def _publish_function(self, index: int, *, from_target: bool = False) -> None:
        self._function = index
        name, params = tool_signatures(self._tools)[index]
        self.box.set_function(name, from_target=from_target)
        for param in params:
            raw = self.slot_answers.get(f"{index}.{param}")
            if raw is not None:
                self._publish_slot(index, param, raw)

    def _publish_slot(self, index: int, param: str, raw: str) -> None:
        try:
            value = parse_slot_value(raw)
        except ValueError:  # garbage: the final hint reports it as dropped
            return
        if value is None:
            return
        if self.check is not None and self.check(index, param, value) is not None:
            return
        self.box.set_slot(param, value)
