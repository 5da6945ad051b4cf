"""Where the request writes a value and then a comma, does the target stop at the comma?

The check behind the sidecar's ``comma_free_place`` rule (docs/lab-notes/2026-12-06-sidecar-value-rules.md
§2.0zzzzzzzzzzzzzz). For each free string value (no ``enum``, ``pattern`` or ``format``) of
the target's labelled calls whose first part the request writes followed by a comma and more
("Tokyo" of "Tokyo, Japan"), it counts whether the target kept a comma, split by whether the
parameter's description holds one — no model, only a label file:

    python benchmarks/place_commas.py runs/sidecar-data6/labels.jsonl

Label files are ``sidecar_data``'s ``labels.jsonl`` or ``eval_target --labels-out`` files (rows
with ``messages``, ``tools`` and ``target_call``). ``--show`` lists the values where the
description holds no comma.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ooo_agent.rules.conventions import free_string
from ooo_agent.sidecar.relevance import user_text


def cases(labels: Iterable[Mapping[str, Any]]) -> Iterator[tuple[bool, bool, str, str, str]]:
    """``(description has a comma, target kept a comma, parameter, description, value)`` for
    each free string value whose first part the request writes followed by a comma and more."""
    for label in labels:
        call = label.get("target_call")
        if not call:
            continue
        text = user_text(label["messages"])
        tools = [t.get("function", t) for t in label["tools"]]
        tool = next((t for t in tools if t.get("name") == call["name"]), None)
        if tool is None:
            continue
        properties = (tool.get("parameters") or {}).get("properties") or {}
        for param, value in call["arguments"].items():
            schema = properties.get(param)
            if not isinstance(value, str) or not free_string(schema):
                continue
            head = re.escape(value.split(",")[0])
            if not re.search(head + r",\s*\w", text, re.IGNORECASE):
                continue
            description = schema.get("description") or ""
            yield "," in description, "," in value, param, description, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", type=Path, help="a label file (JSONL)")
    parser.add_argument("--show", action="store_true", help="list the comma-free descriptions")
    args = parser.parse_args(argv)
    with args.labels.open(encoding="utf-8") as handle:
        found = list(cases(map(json.loads, handle)))
    counts = Counter((described, kept) for described, kept, *_ in found)
    for described in (False, True):
        kept, stopped = counts[described, True], counts[described, False]
        label = "description holds a comma" if described else "description holds none"
        print(f"{label:28s} target stops at the comma {stopped:4d} / {stopped + kept}")
    if args.show:
        for described, kept, param, description, value in found:
            if not described:
                print(f"  {'kept ' if kept else 'stops'} {param}: {value!r}  ({description[:60]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
