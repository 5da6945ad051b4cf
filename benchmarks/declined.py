"""Latency of the requests the target declined against the ones it answered with a call, per
mode, from an `ooo-agent bench` run's `requests.jsonl` (a run with `--decline-below`; not a
timed test).

For each mode: how many measured requests were declined, their mean latency (from arrival, the
sidecar included), and the sidecar statuses of the declined ones (``stopped``: the wave was
stopped when the target declined); the same for the others. Latencies of two modes compare
within one run only.

    python benchmarks/declined.py bench-out/requests.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

from ooo_agent.bench.report import read_records


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    statuses = collections.Counter(r["sidecar_status"] for r in rows)
    mean = sum(r["latency_s"] for r in rows) / len(rows) if rows else None
    return {
        "n": len(rows),
        "mean_s": None if mean is None else round(mean, 3),
        "sidecar": dict(sorted(statuses.items())),
    }


def split(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{mode: {"declined": {...}, "called": {...}}}`` over the measured (non-warm-up) rows."""
    measured = [r for r in rows if not r["warmup"]]
    modes = list(dict.fromkeys(r["mode"] for r in measured))
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        mine = [r for r in measured if r["mode"] == mode]
        out[mode] = {
            "declined": _group([r for r in mine if r.get("declined")]),
            "called": _group([r for r in mine if not r.get("declined")]),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", type=Path, help="a bench run's requests.jsonl")
    args = parser.parse_args(argv)
    print(json.dumps(split(read_records(args.requests))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
