"""Would the sidecar's whole-words rule refuse what the target itself writes?

The check behind ``WaveOptions(whole_words=True)`` (docs/benchmarks.md
§2.0zzzzzzzzzzzzzzzzzz). For each value of the target's labelled calls in a row the rule holds
(``copies_words``: a free string, a number, an array of them) it asks whether the rule would
have let the target write it: its words copied whole (``words_copied_whole``) and, for an
array, its list (``list_goes_on``) — no model, only label files:

    python benchmarks/whole_words.py runs/sidecar-data6/labels.jsonl runs/sidecar-data13/labels.jsonl

Label files are ``sidecar_data``'s ``labels.jsonl`` or ``eval_target --labels-out`` files (rows
with ``messages``, ``tools`` and ``target_call``). ``--show`` lists the refused values.

``--case REPORT`` instead reads an ``eval-sidecar`` report on one label file and counts the
argument rows of the target's tool that writing a string in the request's own case (where the
sidecar's string is the request's words, word for word, in another case) would turn from a miss
into a hit, and the reverse — a rule checked and not built.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ooo_agent.sidecar.relevance import user_text
from ooo_agent.sidecar.slots import parameter_schemas
from ooo_agent.sidecar.values import copies_words, list_goes_on, words_copied_whole


def _target_tool(label: Mapping[str, Any]) -> tuple[int, Mapping[str, Any]] | None:
    call = label.get("target_call")
    if not call:
        return None
    names = [t.get("function", t).get("name") for t in label["tools"]]
    if call["name"] not in names:
        return None
    index = names.index(call["name"])
    return index, parameter_schemas(label["tools"][index])


def refused(labels: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, str, str, str]]:
    """``(kind, id, parameter, value)`` for each value the rule holds: kind ``ok``, ``word``
    (its words refused) or ``list`` (an array closed where the request's list goes on)."""
    for label in labels:
        found = _target_tool(label)
        if found is None:
            continue
        schemas = found[1]
        text = user_text(label["messages"])
        for param, value in label["target_call"]["arguments"].items():
            if not copies_words(schemas.get(param)):
                continue
            written = json.dumps(value, ensure_ascii=False)
            kind = "ok"
            if not words_copied_whole(text, written, final=True):
                kind = "word"
            elif isinstance(value, list) and list_goes_on(text, written):
                kind = "list"
            yield kind, str(label.get("id", "")), param, written


def in_request_case(text: str, value: Any) -> Any:
    """``value`` with each string that is the request's words (case aside, whole words) written
    as the request writes them."""
    if isinstance(value, list):
        return [in_request_case(text, item) for item in value]
    if not isinstance(value, str) or not value:
        return value
    lower, needle = text.lower(), value.lower()
    at = lower.find(needle)
    while at >= 0:
        end = at + len(value)
        whole = (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        )
        if whole:
            return text[at:end]
        at = lower.find(needle, at + 1)
    return value


def case_rows(
    predictions: Iterable[Mapping[str, Any]], labels: Mapping[str, Mapping[str, Any]]
) -> tuple[int, int]:
    """Rows of free strings (and arrays of them) the request-case rewrite turns from a miss into a
    hit against the target's call, and the reverse."""
    from ooo_agent.decoding.conventions import free_string

    gained = lost = 0
    for prediction in predictions:
        label = labels.get(prediction["id"])
        found = _target_tool(label) if label is not None else None
        if label is None or found is None:
            continue
        index, schemas = found
        text = user_text(label["messages"])
        for param, schema in schemas.items():
            answer = prediction["answers"].get(f"{index}.{param}")
            items = schema.get("items") if isinstance(schema, Mapping) else None
            if answer is None or not (free_string(schema) or free_string(items)):
                continue
            try:
                value = json.loads(answer)
            except ValueError:
                continue
            expected = label["target_call"]["arguments"].get(param)
            rewritten = in_request_case(text, value)
            gained += rewritten == expected and value != expected
            lost += value == expected and rewritten != expected
    return gained, lost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", type=Path, nargs="+", help="label files (JSONL)")
    parser.add_argument("--show", action="store_true", help="list the refused values")
    parser.add_argument("--case", type=Path, default=None, help="an eval-sidecar report")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for path in args.labels:
        with path.open(encoding="utf-8") as handle:
            rows.extend(map(json.loads, handle))
    if args.case is not None:
        report = json.loads(args.case.read_text(encoding="utf-8"))
        gained, lost = case_rows(report["predictions"], {r["id"]: r for r in rows})
        print(f"in the request's case: rows gained {gained}, lost {lost}")
        return 0
    found = list(refused(rows))
    lists = [f for f in found if f[3].startswith("[")]
    words = sum(kind == "word" for kind, *_ in found)
    closed = sum(kind == "list" for kind, *_ in found)
    print(f"values held {len(found)}: words refused {words}")
    print(f"arrays held {len(lists)}: closed where the request's list goes on {closed}")
    if args.show:
        for kind, ident, param, written in found:
            if kind != "ok":
                print(f"  {kind:4s} {ident} {param}: {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
