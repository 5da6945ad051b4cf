"""Schema drafting: the format's deterministic call text, turned into the target's tokens.

The skeleton (from ``formats/``) gives text continuations of the output so far. Turning a
continuation into tokens must match how the target will split the text it is writing: the
text is not tokenized alone but behind a short tail of already-generated tokens, and only
the tokens after the tail are drafted, provided the tail re-tokenizes to itself. When it
does not (the continuation merges with the last generated token), the draft is re-aligned
to the first token boundary that coincides with the end of the tail; failing that, the
continuation is tokenized alone. :attr:`SchemaDrafter.boundaries` counts each outcome.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from ooo_agent.decoding.drafts.base import DraftContext, TextCodec, TokenDraft
from ooo_agent.decoding.drafts.hint import HintReader

__all__ = ["SchemaDrafter", "SkeletonLike", "continuation_tokens"]


class SkeletonLike(Protocol):
    """What the drafter needs from ``formats.base.CallSkeleton``."""

    def continuations(self, generated: str, hint: Any = None) -> Sequence[Any]: ...


def continuation_tokens(
    codec: TextCodec, generated_ids: Sequence[int], text: str, *, tail_tokens: int = 3
) -> tuple[list[int], str]:
    """Tokens for ``text`` written right after ``generated_ids``, and how they were found.

    The second value is ``exact`` (the tail re-tokenized to itself), ``realigned`` (a token
    boundary of the joint tokenization falls at the end of the tail) or ``alone``.
    """
    if not text:
        return [], "exact"
    tail = list(generated_ids[-tail_tokens:]) if tail_tokens > 0 else []
    if not tail:
        return codec.encode(text), "alone"
    tail_text = codec.decode(tail)
    joint = codec.encode(tail_text + text)
    if joint[: len(tail)] == tail:
        return joint[len(tail) :], "exact"
    # Find where the joint tokenization crosses the end of the tail text.
    for cut in range(1, len(joint)):
        decoded = codec.decode(joint[:cut])
        if decoded == tail_text:
            return joint[cut:], "realigned"
        if len(decoded) > len(tail_text):
            break
    return codec.encode(text), "alone"


class SchemaDrafter:
    """Drafts the skeleton's continuations (with the hint's values in ``ooo`` mode)."""

    def __init__(
        self,
        skeleton: SkeletonLike,
        codec: TextCodec,
        *,
        hint: HintReader | None = None,
        max_drafts: int = 4,
        max_tokens: int = 48,
        tail_tokens: int = 3,
    ) -> None:
        self.skeleton = skeleton
        self.codec = codec
        self.hint = hint
        self.max_drafts = max_drafts
        self.max_tokens = max_tokens
        self.tail_tokens = tail_tokens
        self.boundaries: Counter[str] = Counter()
        self.errors = 0
        self._reported = False
        if hint is not None and getattr(skeleton, "written_function", None) is not None:
            hint.box.expect_target_function()

    def draft(self, context: DraftContext) -> list[TokenDraft]:
        if self.hint is not None and not self._reported:
            self._report_function(context.generated_text)
        hint = self.hint.hint if self.hint is not None else None
        try:
            continuations = list(self.skeleton.continuations(context.generated_text, hint))
        except Exception as exc:
            if hint is None:
                # A skeleton bug must cost speed, never the answer.
                self.errors += 1
                return []
            # The hint made it fail: drop the hint, draft without it.
            self._drop_hint(f"drafting with the hint failed: {type(exc).__name__}: {exc}")
            return self.draft(context)
        drafts: list[TokenDraft] = []
        for rank, continuation in enumerate(continuations[: self.max_drafts]):
            text = getattr(continuation, "text", continuation)
            source = getattr(continuation, "source", "schema")
            if not isinstance(text, str) or not text:
                continue
            try:
                tokens, how = continuation_tokens(
                    self.codec, context.generated_ids, text, tail_tokens=self.tail_tokens
                )
            except Exception as exc:  # text no tokenizer takes: a cost, never the answer
                if source == "hint":
                    self._drop_hint(f"the hint's text could not be encoded: {type(exc).__name__}")
                else:
                    self.errors += 1
                continue
            self.boundaries[how] += 1
            if tokens:
                drafts.append(
                    TokenDraft(tuple(tokens[: self.max_tokens]), str(source), 1.0 / (1 + rank))
                )
        return drafts

    def observe(self, context: DraftContext, accepted: Sequence[int]) -> None:
        return None

    def _drop_hint(self, reason: str) -> None:
        if self.hint is not None:
            self.hint.drop(reason)

    def _report_function(self, generated: str) -> None:
        """Tell the sidecar (through the hint box) which tool the target is calling, once."""
        assert self.hint is not None
        written = getattr(self.skeleton, "written_function", None)
        if written is None:
            self._reported = True  # this skeleton cannot tell
            return
        try:
            name = written(generated)
        except Exception:
            self.errors += 1
            self._reported = True
            return
        if isinstance(name, str):
            self._reported = True
            self.hint.box.report_target_function(name)
