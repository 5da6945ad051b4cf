"""How many target forwards `ooo` needed where the sidecar's hint was exactly the call, from an
`ooo-agent bench` run's `requests.jsonl` (not a timed test).

A hint is exact when the record's `sidecar_predicted` parses to the record's first call. Also
counts the `vanilla` outputs whose length fits one 33–64-token verification step, and the `ooo`
requests whose wave ended after the call (`late`: such a record holds no final hint, so it is
never counted exact, whatever the hint the target used was).

    python benchmarks/exact_hints.py bench-out/requests.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

from ooo_agent.bench.report import read_records


def count(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"exact": n, "forwards": {k: requests}, "outputs_33_64": n, "outputs": n,
    "late": n}``."""
    measured = [r for r in rows if not r["warmup"]]
    exact = [
        r
        for r in measured
        if r["mode"] == "ooo"
        and r["calls"]
        and r["sidecar_predicted"]
        and json.loads(r["sidecar_predicted"]) == r["calls"][0]
    ]
    plain = [r["new_tokens"] for r in measured if r["mode"] == "vanilla"]
    forwards = collections.Counter(r["forward_passes"] for r in exact)
    return {
        "exact": len(exact),
        "forwards": dict(sorted(forwards.items())),
        "outputs_33_64": sum(33 <= n <= 64 for n in plain),
        "outputs": len(plain),
        "late": sum(r["mode"] == "ooo" and r.get("sidecar_status") == "late" for r in measured),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", type=Path, help="a bench run's requests.jsonl")
    args = parser.parse_args(argv)
    print(json.dumps(count(read_records(args.requests))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
