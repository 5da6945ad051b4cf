"""When a generation ends: EOS / end-of-turn tokens, the format's stop strings, a length cap.

Speculation may commit several tokens at once; a stop found among them cuts the output at
the same token plain greedy decoding would have stopped at, so both modes agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["StopCondition"]


@dataclass(frozen=True)
class StopCondition:
    """``eos_ids`` end the output (the token is kept); so does text containing a stop string."""

    eos_ids: frozenset[int]
    stop_strings: tuple[str, ...] = ()
    decode_text: Callable[[Sequence[int]], str] | None = None

    @classmethod
    def of(
        cls,
        eos_ids: Iterable[int],
        stop_strings: Iterable[str] = (),
        decode_text: Callable[[Sequence[int]], str] | None = None,
    ) -> StopCondition:
        strings = tuple(s for s in stop_strings if s)
        if strings and decode_text is None:
            raise ValueError("stop strings need a decode_text function")
        return cls(frozenset(int(t) for t in eos_ids), strings, decode_text)

    def check(self, generated: Sequence[int], first_new: int) -> tuple[int, str] | None:
        """If the output must end within ``generated[first_new:]``: ``(length, reason)``."""
        for i in range(first_new, len(generated)):
            if generated[i] in self.eos_ids:
                return i + 1, "stop"
        if self.stop_strings and self.decode_text is not None:
            text = self.decode_text(generated)
            if any(s in text for s in self.stop_strings):
                # The first length whose text holds a stop string is where greedy stopped.
                for length in range(first_new + 1, len(generated) + 1):
                    prefix = self.decode_text(generated[:length])
                    if any(s in prefix for s in self.stop_strings):
                        return length, "stop"
        return None
