"""Training progress: a live rich bar plus plain log lines (which survive a redirect to a file)."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

__all__ = ["TrainProgress", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """``3h04m``, ``4m12s`` or ``9s``."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class TrainProgress:
    """Shows step, loss, lr, tokens/s and ETA; prints a line every ``log_every`` steps."""

    def __init__(
        self,
        total_steps: int,
        start_step: int,
        log_every: int,
        live: bool,
        console: Console | None = None,
    ) -> None:
        self.total_steps = total_steps
        self.start_step = start_step
        self.log_every = log_every
        self.console = console or Console(stderr=True)
        self._started = time.perf_counter()
        self._tokens = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if live and self.console.is_terminal:
            self._progress = Progress(
                TextColumn("[bold]train"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]}  lr {task.fields[lr]}"),
                TextColumn("{task.fields[tps]} tok/s  eta {task.fields[eta]}"),
                TimeElapsedColumn(),
                console=self.console,
            )

    def __enter__(self) -> TrainProgress:
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(
                "train",
                total=self.total_steps,
                completed=self.start_step,
                loss="-",
                lr="-",
                tps="-",
                eta="-",
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def step(self, step: int, loss: float, lr: float, tokens: int) -> None:
        """Record one finished optimizer step that put ``tokens`` tokens through the model
        (padding left out; a packed trie's shared prefix counted once)."""
        self._tokens += tokens
        elapsed = time.perf_counter() - self._started
        done = step - self.start_step
        tps = self._tokens / elapsed if elapsed > 0 else 0.0
        eta = elapsed / done * (self.total_steps - step) if done > 0 else 0.0
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task,
                completed=step,
                loss=f"{loss:.4f}",
                lr=f"{lr:.2e}",
                tps=f"{tps:,.0f}",
                eta=format_seconds(eta),
            )
        if step % self.log_every == 0 or step == self.total_steps:
            self.console.print(
                f"step {step}/{self.total_steps}  loss {loss:.4f}  lr {lr:.2e}  "
                f"{tps:,.0f} tok/s  elapsed {format_seconds(elapsed)}  eta {format_seconds(eta)}",
                highlight=False,
            )

    def note(self, message: str) -> None:
        """A plain line (eval results, checkpoints)."""
        self.console.print(message, highlight=False)
