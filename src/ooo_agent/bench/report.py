"""Benchmark results: per-request records, per-mode summaries with paired bootstrap CIs, outputs.

One :class:`RequestRecord` per (request, mode). :func:`summarize` turns the measured ones
(warm-ups excluded) into per-mode figures; speedups are ratios of total latency over the same
requests (``sum(base) / sum(mode)``), with a 95 % percentile bootstrap interval that resamples
*requests* (each resample keeps a request's modes together: the comparison is paired) from a
fixed seed. :func:`write_report` writes ``requests.jsonl``, ``summary.json``, ``report.png``
and the table it prints as ``table.txt`` and ``table.md``.

Example::

    summary = summarize(records, seed=0, labels={"ooo": ORACLE_LABEL})
    write_report(records, summary, Path("bench-out"), console=Console())
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = [
    "GOALS",
    "Interval",
    "ModeSummary",
    "RequestRecord",
    "goal_checks",
    "markdown_table",
    "paired_bootstrap_ratio",
    "percentile",
    "read_records",
    "summarize",
    "summary_table",
    "write_plot",
    "write_report",
]

GOALS: dict[str, float] = {
    "ooo_vs_vanilla_min": 3.0,
    "ooo_vs_toolspec_min": 1.3,
    "ooo_forward_passes_max": 4.0,
    "ooo_forward_ratio_vs_toolspec_max": 0.6,
}
"""What OoO-Spec should reach end to end (paper: 3.89x vs vanilla on average, ToolSpec 2.95x)."""


@dataclass
class RequestRecord:
    """What one mode did for one request (a line of ``requests.jsonl``)."""

    item_id: str
    category: str
    mode: str
    position: int
    """Place of this mode in the request's (rotated) mode order, from 0."""
    warmup: bool
    latency_s: float
    """From the request's arrival to validated calls, the sidecar included."""
    generate_s: float
    forward_passes: int
    new_tokens: int
    prompt_tokens: int
    prefill_tokens: int
    prefill_s: float
    decode_steps: int
    accepted_tokens: int
    """Tokens committed by decode steps (their mean per step is the accepted length)."""
    accepted_by_drafter: dict[str, int] = field(default_factory=dict)
    sidecar_status: str = "off"
    sidecar_latency_s: float | None = None
    sidecar_function_step: int | None = None
    sidecar_slot_steps: dict[str, int] = field(default_factory=dict)
    """Target decode step at which each hinted slot value landed (0: before the first)."""
    hint_tokens_accepted: int = 0
    sidecar_function_from_target: bool = False
    """The hint's function was switched to the one the target wrote."""
    sidecar_predicted: str | None = None
    """The wave's final hint as JSON (``SidecarStats.predicted``; None when none formed)."""
    constrained_tokens: int = 0
    """Tokens the call constraint changed (``--constrain-*`` options)."""
    declined: bool = False
    """The target declined to call (``--decline-below``; ``DecodeStats.declined``)."""
    identical: bool | None = None
    """Same output as ``vanilla`` for this request (None for vanilla itself or when not run)."""
    ast_ok: bool = False
    ast_reason: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    failure: str = ""
    """Why the request raised instead of producing an answer (empty when it did not)."""

    @property
    def mean_accepted(self) -> float:
        return self.accepted_tokens / self.decode_steps if self.decode_steps else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["mean_accepted"] = round(self.mean_accepted, 4)
        return data


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval."""

    point: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.point:.2f}x [{self.low:.2f}, {self.high:.2f}]"


@dataclass
class ModeSummary:
    """Per-mode figures over the measured requests."""

    mode: str
    label: str
    n: int
    mean_s: float
    median_s: float
    p90_s: float
    speedup_vs_vanilla: Interval | None
    speedup_vs_toolspec: Interval | None
    forward_passes: float
    mean_accepted: float
    identity: float | None
    """Fraction of requests whose output equals vanilla's (None for vanilla)."""
    ast_accuracy: float
    sidecar_latency_s: float | None = None
    sidecar_function_step: float | None = None
    hint_tokens_accepted: float | None = None
    function_from_target: float | None = None
    """Share of the sidecar's calls whose hint function was switched to the target's."""
    failed: int = 0
    """Requests that raised (counted as AST failures, left out of latency figures)."""
    prompt_tokens: float = math.nan
    """Mean prompt length in tokens."""
    prefill_s: float = math.nan
    """Mean seconds of the prompt's prefill, the same work in every mode: what is left of
    ``mean_s`` past it is the decoding the modes differ in."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear between closest ranks; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def paired_bootstrap_ratio(
    base: Sequence[float],
    other: Sequence[float],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """``sum(base) / sum(other)`` with a paired percentile-bootstrap interval.

    ``base[i]`` and ``other[i]`` are the same request; each resample draws request indices
    with replacement and keeps pairs together. Deterministic for a given ``seed``.
    Raises ``ValueError`` for unequal or empty inputs, or a non-positive ``other`` total.
    """
    if len(base) != len(other) or not base:
        raise ValueError("need two equally long, non-empty samples of paired values")
    if not 0 < level < 1 or resamples < 1:
        raise ValueError("level must be in (0, 1) and resamples >= 1")
    if sum(other) <= 0:
        raise ValueError("the compared values must sum to a positive total")
    rng = random.Random(seed)
    n = len(base)
    ratios = []
    for _ in range(resamples):
        picks = [rng.randrange(n) for _ in range(n)]
        denominator = sum(other[i] for i in picks)
        if denominator > 0:
            ratios.append(sum(base[i] for i in picks) / denominator)
    tail = (1 - level) / 2 * 100
    return Interval(
        sum(base) / sum(other), percentile(ratios, tail), percentile(ratios, 100 - tail)
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _speedup(
    by_mode: Mapping[str, Mapping[str, RequestRecord]], base: str, mode: str, seed: int
) -> Interval | None:
    if base not in by_mode or mode == base:
        return None
    shared = sorted(set(by_mode[base]) & set(by_mode[mode]))
    if not shared:
        return None
    base_s = [by_mode[base][i].latency_s for i in shared]
    mode_s = [by_mode[mode][i].latency_s for i in shared]
    return paired_bootstrap_ratio(base_s, mode_s, seed=seed)


def summarize(
    records: Sequence[RequestRecord], *, seed: int = 0, labels: Mapping[str, str] | None = None
) -> list[ModeSummary]:
    """Per-mode summaries of the measured (non-warm-up) records, in the order modes appear."""
    labels = labels or {}
    by_mode: dict[str, dict[str, RequestRecord]] = {}
    all_by_mode: dict[str, list[RequestRecord]] = {}
    for record in records:
        if record.warmup:
            continue
        all_by_mode.setdefault(record.mode, []).append(record)
        if not record.failure:  # a failed request has no latency to compare
            by_mode.setdefault(record.mode, {})[record.item_id] = record
    summaries = []
    for mode, every in all_by_mode.items():
        recs = list(by_mode.get(mode, {}).values())
        latencies = [r.latency_s for r in recs]
        steps = sum(r.decode_steps for r in recs)
        compared = [r.identical for r in recs if r.identical is not None]
        with_sidecar = [r for r in recs if r.sidecar_status != "off"]
        arrivals = [
            float(r.sidecar_function_step)
            for r in with_sidecar
            if r.sidecar_function_step is not None
        ]
        sidecar_latencies = [
            r.sidecar_latency_s for r in with_sidecar if r.sidecar_latency_s is not None
        ]
        summaries.append(
            ModeSummary(
                mode=mode,
                label=labels.get(mode, mode),
                n=len(every),
                failed=len(every) - len(recs),
                mean_s=_mean(latencies),
                median_s=percentile(latencies, 50),
                p90_s=percentile(latencies, 90),
                speedup_vs_vanilla=_speedup(by_mode, "vanilla", mode, seed),
                speedup_vs_toolspec=_speedup(by_mode, "toolspec", mode, seed),
                forward_passes=_mean([float(r.forward_passes) for r in recs]),
                mean_accepted=sum(r.accepted_tokens for r in recs) / steps if steps else 0.0,
                identity=sum(compared) / len(compared) if compared else None,
                ast_accuracy=_mean([1.0 if r.ast_ok else 0.0 for r in every]),
                sidecar_latency_s=_mean(sidecar_latencies) if sidecar_latencies else None,
                sidecar_function_step=percentile(arrivals, 50) if arrivals else None,
                hint_tokens_accepted=(
                    _mean([float(r.hint_tokens_accepted) for r in with_sidecar])
                    if with_sidecar
                    else None
                ),
                function_from_target=(
                    _mean([float(r.sidecar_function_from_target) for r in with_sidecar])
                    if with_sidecar
                    else None
                ),
                prompt_tokens=_mean([float(r.prompt_tokens) for r in recs]),
                prefill_s=_mean([r.prefill_s for r in recs]),
            )
        )
    return summaries


def goal_checks(summaries: Sequence[ModeSummary]) -> dict[str, Any]:
    """The OoO-Spec goals against the ``ooo`` row (None where a figure is missing)."""
    ooo = next((s for s in summaries if s.mode == "ooo"), None)
    if ooo is None:
        return {"ooo_measured": False}
    vs_vanilla = ooo.speedup_vs_vanilla.point if ooo.speedup_vs_vanilla else None
    vs_toolspec = ooo.speedup_vs_toolspec.point if ooo.speedup_vs_toolspec else None
    vanilla_met = None if vs_vanilla is None else vs_vanilla >= GOALS["ooo_vs_vanilla_min"]
    toolspec_met = None if vs_toolspec is None else vs_toolspec >= GOALS["ooo_vs_toolspec_min"]
    toolspec = next((s for s in summaries if s.mode == "toolspec"), None)
    ratio = (
        ooo.forward_passes / toolspec.forward_passes
        if toolspec is not None and toolspec.forward_passes > 0
        else None
    )
    return {
        "ooo_measured": True,
        "ooo_label": ooo.label,
        "ooo_forward_ratio_vs_toolspec": ratio,
        "ooo_forward_ratio_vs_toolspec_met": (
            None if ratio is None else ratio <= GOALS["ooo_forward_ratio_vs_toolspec_max"]
        ),
        "ooo_vs_vanilla": vs_vanilla,
        "ooo_vs_vanilla_met": vanilla_met,
        "ooo_vs_toolspec": vs_toolspec,
        "ooo_vs_toolspec_met": toolspec_met,
        "ooo_forward_passes": ooo.forward_passes,
        "ooo_forward_passes_met": ooo.forward_passes <= GOALS["ooo_forward_passes_max"],
    }


# -- outputs ----------------------------------------------------------------------------


def _fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec) + suffix


def summary_table(summaries: Sequence[ModeSummary], *, title: str = "") -> Table:
    """The per-mode rich table."""
    table = Table(title=title or None, title_justify="left")
    for column in ("mode", "n", "mean s", "median s", "p90 s", "vs vanilla [95% CI]",
                   "vs toolspec [95% CI]", "fwd/call", "acc/step", "identity", "AST", "sidecar s"):  # fmt: skip
        table.add_column(column, justify="left" if column == "mode" else "right")
    for s in summaries:
        table.add_row(
            s.mode + (" *" if s.label != s.mode else ""),
            *_metric_cells(s),
            _fmt(s.sidecar_latency_s, ".3f"),
        )
    return table


def _metric_cells(s: ModeSummary) -> tuple[str, ...]:
    """The cells both tables share, from ``n`` to ``AST``."""
    return (
        str(s.n),
        _fmt(s.mean_s, ".3f"),
        _fmt(s.median_s, ".3f"),
        _fmt(s.p90_s, ".3f"),
        str(s.speedup_vs_vanilla) if s.speedup_vs_vanilla else "-",
        str(s.speedup_vs_toolspec) if s.speedup_vs_toolspec else "-",
        _fmt(s.forward_passes, ".1f"),
        _fmt(s.mean_accepted, ".2f"),
        _fmt(None if s.identity is None else s.identity * 100, ".0f", "%"),
        _fmt(s.ast_accuracy * 100, ".0f", "%"),
    )


def markdown_table(summaries: Sequence[ModeSummary]) -> str:
    """The per-mode table as GitHub markdown (for docs and pull requests)."""
    header = ("mode", "n", "mean s", "median s", "p90 s", "vs vanilla [95% CI]",
              "vs toolspec [95% CI]", "fwd/call", "acc/step", "identity", "AST")  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in summaries:
        cells = (s.label, *_metric_cells(s))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_plot(
    records: Sequence[RequestRecord],
    path: Path,
    *,
    labels: Mapping[str, str] | None = None,
    title: str = "",
) -> Path:
    """A PNG: latency CDF per mode (left) and forward passes per call (right)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: never needs a display
    import matplotlib.pyplot as plt

    labels = labels or {}
    measured: dict[str, list[RequestRecord]] = {}
    for record in records:
        if not record.warmup and not record.failure:
            measured.setdefault(record.mode, []).append(record)
    figure, (cdf, hist) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode, recs in measured.items():
        latencies = sorted(r.latency_s for r in recs)
        fractions = [(i + 1) / len(latencies) for i in range(len(latencies))]
        cdf.step(latencies, fractions, where="post", label=labels.get(mode, mode))
        hist.hist(
            [r.forward_passes for r in recs],
            bins=20,
            histtype="step",
            linewidth=1.5,
            label=labels.get(mode, mode),
        )
    cdf.set_xlabel("latency, arrival to validated calls (s)")
    cdf.set_ylabel("fraction of requests")
    cdf.set_title("latency CDF")
    cdf.grid(alpha=0.3)
    cdf.legend(fontsize=8)
    hist.set_xlabel("target forward passes per call (prefill included)")
    hist.set_ylabel("requests")
    hist.set_title("forward passes")
    hist.legend(fontsize=8)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Interval):
        return {"point": value.point, "low": value.low, "high": value.high}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The lines of a run's ``requests.jsonl`` (:func:`write_report`), as dicts."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def write_report(
    records: Sequence[RequestRecord],
    summaries: Sequence[ModeSummary],
    out_dir: Path,
    *,
    meta: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    console: Console | None = None,
) -> dict[str, Path]:
    """Write ``requests.jsonl``, ``summary.json``, ``report.png``, ``table.txt`` and ``table.md``;
    print the table when given a console."""
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = dict(meta or {})
    paths = {
        "requests": out_dir / "requests.jsonl",
        "summary": out_dir / "summary.json",
        "plot": out_dir / "report.png",
        "table": out_dir / "table.txt",
        "markdown": out_dir / "table.md",
    }
    with paths["requests"].open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(_jsonable(record.to_dict()), ensure_ascii=False) + "\n")
    summary = {
        **meta,
        "definitions": {
            "latency": "request arrival to validated calls, sidecar started at arrival",
            "speedup": "sum of baseline latencies / sum of mode latencies over the same "
            "measured requests; 95% paired percentile bootstrap over requests",
            "identity": "output token ids equal to vanilla's for the same request",
            "ast": "parsed with the target's format, validated, then BFCL AST check",
        },
        "modes": [_jsonable(asdict(s)) for s in summaries],
        "goals": {**GOALS, **goal_checks(summaries)},
    }
    per_category = _per_category(records, seed=int(meta.get("seed", 0)), labels=labels)
    if per_category:
        summary["per_category"] = {
            category: {
                "modes": [_jsonable(asdict(s)) for s in rows],
                "goals": goal_checks(rows),
            }
            for category, rows in per_category.items()
        }
    paths["summary"].write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    title = str(meta.get("title", ""))
    write_plot(records, paths["plot"], labels=labels, title=title)
    markdown = markdown_table(summaries)
    for category, rows in per_category.items():
        markdown += f"\n{category}:\n\n{markdown_table(rows)}"
    paths["markdown"].write_text(markdown, encoding="utf-8")
    with paths["table"].open("w", encoding="utf-8") as text:
        _print_table(
            Console(file=text, width=200, color_system=None), summaries, title, per_category
        )
    if console is not None:
        _print_table(console, summaries, title, per_category)
    return paths


def _per_category(
    records: Sequence[RequestRecord], *, seed: int, labels: Mapping[str, str] | None
) -> dict[str, list[ModeSummary]]:
    """Per-category summaries when the measured requests span several categories, else {}."""
    by_category: dict[str, list[RequestRecord]] = {}
    for record in records:
        if not record.warmup:
            by_category.setdefault(record.category, []).append(record)
    if len(by_category) < 2:
        return {}
    return {c: summarize(rows, seed=seed, labels=labels) for c, rows in by_category.items()}


def _print_table(
    console: Console,
    summaries: Sequence[ModeSummary],
    title: str,
    per_category: Mapping[str, Sequence[ModeSummary]] | None = None,
) -> None:
    console.print(summary_table(summaries, title=title))
    for s in summaries:  # labels in full, unwrapped: an oracle row must say what it is
        if s.label != s.mode:
            console.print(f"* {s.mode}: {s.label}", markup=False, soft_wrap=True)
    for category, rows in (per_category or {}).items():
        console.print(summary_table(rows, title=f"{category} only"))
