"""A rule rewrites a request's tool schemas; :class:`RuledTools` applies a list of them once.

The target's call constraint and schema drafts read the rewritten tools, and so does a sidecar
that holds its argument rows to them: the caller makes one :class:`RuledTools` per request and
hands it to both, and whichever reads it first computes it (docs/rules.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar, cast

from ooo_agent.offered import OfferedTool, ToolLike, offer

__all__ = ["Rule", "RuledTools"]

T = TypeVar("T")


class Rule:
    """One request rule: ``rewrite`` returns the tools' OpenAI dicts as this request's decoding
    holds them (copies; the tools given are not changed). ``name`` is how presets and flags
    choose it."""

    name: ClassVar[str] = ""

    def rewrite(
        self, ruled: RuledTools, tools: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        """``tools`` (the output of the rules before this one) rewritten for ``ruled``'s
        request."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class RuledTools:
    """A request's tools as ``rules`` rewrite them, in order: computed once, on first read
    (from any thread), and shared by the target and the sidecar.

    The rules rewrite the tools' OpenAI dicts; :attr:`given` and :attr:`tools` are offered
    tools (:class:`~ooo_agent.offered.OfferedTool`), ``tools`` aligned with ``given`` (same
    names, same order, a tool no rule changed as it is given). What several readers
    compute of the request (the optional parameters it names: :func:`~ooo_agent.rules.mentions.
    mentioned_of`) is computed once too, through :meth:`once`.
    """

    def __init__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolLike],
        rules: Iterable[Rule] = (),
    ) -> None:
        self.messages = messages
        self._passed = tools  # what `reads` recognises, beside `given`
        self.given = offer(tools)
        """The tools as the request offers them."""
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._lock = threading.RLock()  # a rule may ask `once` while `tools` is computed
        self._tools: list[OfferedTool] | None = None
        self._memo: dict[str, Any] = {}
        self._whole: RuledTools | None = None
        """Set by :meth:`only`: the ruling of every offered tool, which this one filters."""

    @property
    def names(self) -> tuple[str, ...]:
        """The rules' names, in order."""
        return tuple(rule.name for rule in self.rules)

    def has(self, name: str) -> bool:
        """Whether a rule called ``name`` is among the rules."""
        return name in self.names

    def reads(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolLike],
        rules: Sequence[Rule],
    ) -> bool:
        """Whether this is the ruling of exactly these messages, tools and rules."""
        same_tools = tools is self._passed or tools is self.given
        return self.messages is messages and same_tools and self.rules == tuple(rules)

    @property
    def tools(self) -> list[OfferedTool]:
        """The tools after every rule (the given tools themselves, as a list, without rules)."""
        if self._whole is not None:
            return _named(self._whole.tools, {t.name for t in self.given})
        with self._lock:
            if self._tools is None:
                dicts = [t.to_openai() for t in self.given]
                for rule in self.rules:
                    if dicts:
                        dicts = rule.rewrite(self, dicts)
                given = {id(t.to_openai()): t for t in self.given}
                self._tools = [given.get(id(d)) or OfferedTool.from_openai(d) for d in dicts]
            return self._tools

    @property
    def whole(self) -> RuledTools:
        """The ruling of every tool the request offers (this one, unless :meth:`only` made it)."""
        return self if self._whole is None else self._whole

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, the first time ``key`` is asked of this ruling; what it gave every
        time after."""
        with self._lock:
            if key not in self._memo:
                self._memo[key] = compute()
            return cast(T, self._memo[key])

    def only(self, name: str) -> RuledTools:
        """This ruling for the tools called ``name`` alone (a named ``tool_choice``); it reads
        this one's, computed once for both."""
        narrowed = RuledTools(self.messages, _named(self.given, {name}), self.rules)
        narrowed._whole = self.whole
        return narrowed

    def __repr__(self) -> str:
        return f"RuledTools({len(self.given)} tools, rules={list(self.names)})"


def _named(tools: Sequence[OfferedTool], names: set[str]) -> list[OfferedTool]:
    return [t for t in tools if t.name in names]
