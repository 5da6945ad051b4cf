"""Would the sidecar's whole-words rule refuse what the target itself writes?

The check behind ``WaveOptions(whole_words=True)`` (docs/lab-notes/2026-12-06-sidecar-value-rules.md
§2.0zzzzzzzzzzzzzzzzzz). For each value of the target's labelled calls in a row the rule holds
(``copies_words``: a free string, a number, an array of them) it asks whether the rule would
have let the target write it: its words copied whole (``words_copied_whole``), for an
array its list (``list_goes_on``), no string led by a space (``space_led``) and a date it
writes one the request states (``dates_stated``, §2.0zzzzzzzzzzzzzzzzzzzz) — no model, only
label files:

    python benchmarks/whole_words.py runs/sidecar-data6/labels.jsonl runs/sidecar-data13/labels.jsonl

Label files are ``sidecar_data``'s ``labels.jsonl`` or ``eval_target --labels-out`` files (rows
with ``messages``, ``tools`` and ``target_call``). ``--show`` lists the refused values.

The same for ``WaveOptions(request_case=True)`` (§2.0zzzzzzzzzzzzzzzzzzz): ``--case-target``
counts the target's values in the rows that rule rewrites (a free string or an array of them)
and lists those it would rewrite — where the target writes with a capital what the request
writes in lower case. ``--case REPORT`` reads an ``eval-sidecar`` report made without the rule
(``--request-case off``) on one label file and counts the argument rows of the target's tool
the rule turns from a miss into a hit, and the reverse; ``--case-rule any`` counts the variant
checked and not built in §2.0zzzzzzzzzzzzzzzzzz (any string that is the request's words, in
whatever case the request writes them).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ooo_agent.rules.words import (
    case_kept,
    dates_stated,
    described_date_form,
    in_request_case,
    list_goes_on,
    names_a_date,
    space_led,
    stated_dates,
    words_copied_whole,
)
from ooo_agent.sidecar.relevance import user_text
from ooo_agent.sidecar.slots import parameter_schemas
from ooo_agent.sidecar.values import copies_words


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
    (its words refused), ``list`` (an array closed where the request's list goes on),
    ``space`` (a string led by whitespace) or ``date`` (a date the request does not state,
    where it states one)."""
    for label in labels:
        found = _target_tool(label)
        if found is None:
            continue
        schemas = found[1]
        text = user_text(label["messages"])
        for param, value in label["target_call"]["arguments"].items():
            schema = schemas.get(param)
            if schema is None or not copies_words(schema):
                continue
            form = described_date_form(schema.get("description"))
            dates = stated_dates(text, as_written=True, form=form)
            written = json.dumps(value, ensure_ascii=False)
            kind = "ok"
            if not words_copied_whole(text, written, final=True):
                kind = "word"
            elif isinstance(value, list) and list_goes_on(text, written):
                kind = "list"
            elif space_led(written):
                kind = "space"
            elif not dates_stated(dates, written, date_row=names_a_date(param)):
                kind = "date"
            yield kind, str(label.get("id", "")), param, written


def any_case(text: str, value: Any) -> Any:
    """``value`` with each string that is the request's words (case aside, whole words) written
    as the request first writes them, in whatever case: the variant checked and not built in
    §2.0zzzzzzzzzzzzzzzzzz (``--case-rule any``)."""
    if isinstance(value, list):
        return [any_case(text, item) for item in value]
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


def _cased_rows(
    label: Mapping[str, Any],
) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """``(tool index, parameter, options)`` for each row of the target's tool that
    ``WaveOptions.request_case`` rewrites: a free string or an array of free strings."""
    found = _target_tool(label)
    if found is None:
        return
    index, schemas = found
    for param, schema in schemas.items():
        keep = case_kept(schema)
        if keep is not None:
            yield index, param, keep


def case_rows(
    predictions: Iterable[Mapping[str, Any]],
    labels: Mapping[str, Mapping[str, Any]],
    rule: str = "lower",
) -> tuple[int, int]:
    """Rows the request-case rewrite turns from a miss into a hit against the target's call, and
    the reverse: ``rule`` ``lower`` is the sidecar's own (:func:`in_request_case` on the answer's
    text), ``any`` the variant :func:`any_case`. Read on a report made without the rule."""
    gained = lost = 0
    for prediction in predictions:
        label = labels.get(prediction["id"])
        if label is None:
            continue
        text = user_text(label["messages"])
        for index, param, keep in _cased_rows(label):
            answer = prediction["answers"].get(f"{index}.{param}")
            if answer is None:
                continue
            try:
                value = json.loads(answer)
                rewritten = (
                    json.loads(in_request_case(text, answer, keep))
                    if rule == "lower"
                    else any_case(text, value)
                )
            except ValueError:
                continue
            expected = label["target_call"]["arguments"].get(param)
            gained += rewritten == expected and value != expected
            lost += value == expected and rewritten != expected
    return gained, lost


def recased(labels: Iterable[Mapping[str, Any]]) -> tuple[int, list[tuple[str, str, str]]]:
    """The target's own values in the rows ``request_case`` rewrites, and those it would
    rewrite (``(id, parameter, value)``): where the target itself writes the request's lower-case
    words with a capital — what a sidecar that matched it would lose to the rule."""
    held, changed = 0, []
    for label in labels:
        text = user_text(label["messages"])
        for _, param, keep in _cased_rows(label):
            arguments = label["target_call"]["arguments"]
            if param not in arguments:
                continue
            written = json.dumps(arguments[param], ensure_ascii=False)
            held += 1
            if in_request_case(text, written, keep) != written:
                changed.append((str(label.get("id", "")), param, written))
    return held, changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", type=Path, nargs="+", help="label files (JSONL)")
    parser.add_argument("--show", action="store_true", help="list the refused values")
    parser.add_argument("--case", type=Path, default=None, help="an eval-sidecar report")
    parser.add_argument(
        "--case-rule",
        choices=("lower", "any"),
        default="lower",
        help="with --case: the sidecar's rule (lower, default) or the variant not built (any)",
    )
    parser.add_argument(
        "--case-target",
        action="store_true",
        help="count the target's values the request-case rule would rewrite",
    )
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for path in args.labels:
        with path.open(encoding="utf-8") as handle:
            rows.extend(map(json.loads, handle))
    if args.case is not None:
        report = json.loads(args.case.read_text(encoding="utf-8"))
        labels = {r["id"]: r for r in rows}
        gained, lost = case_rows(report["predictions"], labels, args.case_rule)
        print(f"in the request's case ({args.case_rule}): rows gained {gained}, lost {lost}")
        return 0
    if args.case_target:
        held, changed = recased(r for r in rows if r.get("target_call"))
        print(f"target values in rows the rule rewrites {held}: it would rewrite {len(changed)}")
        for ident, param, written in changed if args.show else ():
            print(f"  {ident} {param}: {written}")
        return 0
    found = list(refused(rows))
    lists = [f for f in found if f[3].startswith("[")]
    words = sum(kind == "word" for kind, *_ in found)
    closed = sum(kind == "list" for kind, *_ in found)
    spaced = sum(kind == "space" for kind, *_ in found)
    dated = sum(kind == "date" for kind, *_ in found)
    print(f"values held {len(found)}: words refused {words}")
    print(f"arrays held {len(lists)}: closed where the request's list goes on {closed}")
    print(f"led by a space {spaced}; a date the request does not state {dated}")
    if args.show:
        for kind, ident, param, written in found:
            if kind != "ok":
                print(f"  {kind:4s} {ident} {param}: {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
