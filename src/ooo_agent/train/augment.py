"""Value-swapped copies of training requests, for a sidecar that learns its requests by heart.

A copy is the same request with each argument value that the user's words spell out verbatim
replaced by another: a string by a value the same parameter takes in another request of the set
(one its own request spells out too; the same tool's parameter when it has three such values,
else any tool's parameter of that name), a number by another of the same shape (digits, sign,
decimals; a year by another year). The replacement is made in the user's messages and in the gold calls alike, every
occurrence at once, so the copy still reads as one request. Booleans, values of an enum and
values the words do not spell out are kept.

The copies are not labels: label them with the target like any request
(``python -m ooo_agent.train.sidecar_data --requests <copies>``), so the sidecar's rows hold what
the target writes for the new values. The point is to show the sidecar requests whose answers it
must read rather than remember::

    python -m ooo_agent.train.augment --requests runs/sidecar-data6/train_requests.jsonl \\
        --out runs/swapped/requests.jsonl --copies 1 --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ooo_agent.errors import DatasetError
from ooo_agent.train.examples import TrainRequest

__all__ = ["main", "swap_values", "value_pool"]

Pool = Mapping[str, Sequence[str]]
"""String values by ``tool/parameter`` and by parameter name."""


def _user_texts(request: TrainRequest) -> list[str]:
    return [
        str(m["content"])
        for m in request.messages
        if m.get("role") == "user" and isinstance(m.get("content"), str)
    ]


def _spelled(value: str, texts: Iterable[str]) -> bool:
    """``value`` stands in one of ``texts`` as whole words."""
    pattern = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
    return any(pattern.search(text) for text in texts)


def _leaves(value: Any) -> list[Any]:
    """A value, or an array's elements (one level)."""
    return list(value) if isinstance(value, list) else [value]


def _schema(request: TrainRequest, tool: str, parameter: str) -> Mapping[str, Any]:
    for entry in request.tools:
        function = entry.get("function") or {}
        if function.get("name") == tool:
            properties = (function.get("parameters") or {}).get("properties") or {}
            found = properties.get(parameter)
            return found if isinstance(found, Mapping) else {}
    return {}


def _enumerated(schema: Mapping[str, Any]) -> bool:
    items = schema.get("items")
    return "enum" in schema or (isinstance(items, Mapping) and "enum" in items)


def value_pool(requests: Iterable[TrainRequest]) -> dict[str, list[str]]:
    """The string values each parameter takes, over the gold calls of ``requests``, where the
    request's own words spell the value out (array elements each on their own), keyed by
    ``tool/parameter`` and by the parameter's name alone; sorted, without repeats."""
    pool: defaultdict[str, set[str]] = defaultdict(set)
    for request in requests:
        texts = _user_texts(request)
        for tool, arguments in request.calls:
            for parameter, value in arguments.items():
                if _enumerated(_schema(request, tool, parameter)):
                    continue
                for leaf in _leaves(value):
                    if isinstance(leaf, str) and len(leaf) >= 2 and _spelled(leaf, texts):
                        pool[parameter].add(leaf)
                        pool[f"{tool}/{parameter}"].add(leaf)
    return {name: sorted(values) for name, values in pool.items()}


def _other_number(value: int | float, rng: random.Random) -> int | float | None:
    """A different number written with as many digits (and decimals), of the same sign; a
    year (an integer from 1800 to 2100) another year from 1950 to 2030."""
    if isinstance(value, int) and 1800 <= value <= 2100:
        year = rng.randint(1950, 2029)
        return year if year != value else year + 1
    text = repr(value)
    if "e" in text.lower() or text in ("nan", "inf", "-inf"):
        return None
    negative = value < 0
    digits = text.lstrip("-")
    whole, _, decimals = digits.partition(".")
    for _ in range(20):
        lead = str(rng.randint(1, 9)) if len(whole) > 1 or whole != "0" else "0"
        new_whole = lead + "".join(str(rng.randint(0, 9)) for _ in whole[1:])
        new_decimals = "".join(str(rng.randint(0, 9)) for _ in decimals)
        if decimals and not new_decimals.endswith(tuple("123456789")):
            new_decimals = new_decimals[:-1] + str(rng.randint(1, 9))
        candidate = ("-" if negative else "") + new_whole + ("." + new_decimals if decimals else "")
        number = float(candidate) if decimals else int(candidate)
        if number != value and repr(number) == candidate:
            return number
    return None


def _replace(value: Any, mapping: Mapping[Any, Any]) -> Any:
    if isinstance(value, list):
        return [_replace(v, mapping) for v in value]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return value
    return mapping.get((type(value), value), value)


def swap_values(
    request: TrainRequest, pool: Pool, rng: random.Random, *, suffix: str = "~swap"
) -> TrainRequest | None:
    """A copy of ``request`` with the values its words spell out replaced (module docstring),
    or ``None`` when no value can be swapped. The copy's id is the request's plus ``suffix``."""
    texts = _user_texts(request)
    mapping: dict[tuple[type, Any], Any] = {}
    spelled: dict[str, str] = {}  # old spelling -> new spelling
    taken = {repr(leaf) for _, a in request.calls for v in a.values() for leaf in _leaves(v)}
    for tool, arguments in request.calls:
        for parameter, value in arguments.items():
            if _enumerated(_schema(request, tool, parameter)):
                continue
            for leaf in _leaves(value):
                if isinstance(leaf, bool) or not isinstance(leaf, str | int | float):
                    continue  # objects and booleans are kept
                key = (type(leaf), leaf)
                if key in mapping:
                    continue
                new: Any = None
                if isinstance(leaf, str) and len(leaf) >= 2:
                    same_tool = pool.get(f"{tool}/{parameter}", ())
                    choices = [
                        v
                        for v in (same_tool if len(same_tool) > 2 else pool.get(parameter, ()))
                        if repr(v) not in taken
                        and not _spelled(v, texts)
                        and v not in spelled.values()
                    ]
                    new = rng.choice(choices) if choices else None
                elif isinstance(leaf, int | float):  # booleans were skipped above
                    new = _other_number(leaf, rng)
                    if new is not None and (str(new) in spelled.values() or repr(new) in taken):
                        new = None
                if str(leaf) in spelled:  # spelled as another value ("5" and 5): swapped alike
                    try:
                        mapping[key] = type(leaf)(spelled[str(leaf)])
                    except ValueError:
                        return None  # its words would change and its value could not
                    continue
                if new is None or not _spelled(str(leaf), texts):
                    continue
                mapping[key] = new
                spelled[str(leaf)] = str(new)
    if not spelled:
        return None
    olds = sorted(spelled, key=len, reverse=True)
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(o)}(?!\w)" for o in olds))

    def rewrite(text: str) -> str:
        return pattern.sub(lambda m: spelled[m.group(0)], text)

    messages = [
        {**m, "content": rewrite(m["content"])}
        if m.get("role") == "user" and isinstance(m.get("content"), str)
        else dict(m)
        for m in request.messages
    ]
    calls = [
        (tool, {p: _replace(v, mapping) for p, v in arguments.items()})
        for tool, arguments in request.calls
    ]
    return TrainRequest(
        id=request.id + suffix,
        messages=messages,
        tools=request.tools,
        calls=calls,
        answer=request.answer,
        source=request.source,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ooo_agent.train.augment``: write value-swapped copies of a request file."""
    parser = argparse.ArgumentParser(
        prog="python -m ooo_agent.train.augment",
        description="Write value-swapped copies of training requests (to label with the target).",
    )
    parser.add_argument("--requests", required=True, type=Path, help="requests .jsonl")
    parser.add_argument("--out", required=True, type=Path, help="the copies, .jsonl")
    parser.add_argument("--copies", type=int, default=1, help="copies per request (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.copies < 1:
        raise SystemExit("--copies must be at least 1")
    try:
        lines = args.requests.read_text(encoding="utf-8").splitlines()
        requests = [TrainRequest.from_dict(json.loads(line)) for line in lines if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"cannot read requests from {args.requests}: {exc}") from exc
    pool = value_pool(requests)
    rng = random.Random(args.seed)
    copies: list[TrainRequest] = []
    for copy in range(1, args.copies + 1):
        for request in requests:
            swapped = swap_values(request, pool, rng, suffix=f"~swap{copy}")
            if swapped is not None:
                copies.append(swapped)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for item in copies:
            handle.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
    print(
        f"{len(copies)} copies of {len(requests)} requests ({args.copies} each at most; "
        f"{len(pool)} parameter names with a value pool) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
