"""Training data for the target: requests → rows in the target's own chat and call format.

:func:`collect_requests` draws requests from BFCL's live categories (gold answers as calls)
and the project's generators (``--generated``, ``--modifiers``, ``--agent``, ``--domains``,
``--sessions``, ``--quantities``), dropping every request that offers a function of an
evaluation category (``BFCL_EVAL_CATEGORIES``). :func:`target_row` renders each as a
``{"prompt", "completion"}`` row: the conversation through the call format and chat template,
then the calls (or the plain answer) and ``<|im_end|>``. ``requests.jsonl`` in the output
folder feeds ``ooo_agent.train.sidecar_data``. Options and the shipped runs: adapters/README.md.

Command line::

    python -m ooo_agent.train.data --out runs/target-data/ --examples 1000 --generated 700
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ooo_agent.bench.ast_check import gold_calls, gold_defects
from ooo_agent.bench.datasets import (
    BFCL_EVAL_CATEGORIES,
    BFCL_NO_CALL_TRAIN_CATEGORIES,
    BFCL_TRAIN_CATEGORIES,
    load_bfcl,
    multi_turn_function_names,
)
from ooo_agent.formats.base import ChatFormat
from ooo_agent.messages import user_text
from ooo_agent.train.examples import TrainRequest
from ooo_agent.train.generated import NO_TOOL_ANSWER, generate_requests
from ooo_agent.train.generated_agent import generate_agent_requests
from ooo_agent.train.generated_domains import generate_domain_requests
from ooo_agent.train.generated_modifiers import generate_modifier_requests
from ooo_agent.train.generated_quantities import generate_quantity_requests
from ooo_agent.train.generated_sessions import generate_session_requests

__all__ = [
    "END_OF_TURN",
    "MIX",
    "DataStats",
    "Tokenizer",
    "add_distractors",
    "build_target_data",
    "collect_requests",
    "decontaminate",
    "evaluation_function_names",
    "live_no_call_requests",
    "live_requests",
    "main",
    "target_row",
    "user_text",
]

END_OF_TURN = "<|im_end|>"
"""SmolLM2's (ChatML) end-of-turn marker, appended to every completion."""


class Tokenizer(Protocol):
    """What the builder needs of a Hugging Face tokenizer."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def __call__(self, text: str, **kwargs: Any) -> Any: ...


@dataclass
class DataStats:
    """What :func:`build_target_data` kept, dropped and wrote."""

    train_rows: int = 0
    eval_rows: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    by_call_count: dict[str, int] = field(default_factory=dict)
    """Rows by number of calls in the answer (``"0"`` = plain-text answer)."""
    by_tools_offered: dict[str, int] = field(default_factory=dict)
    dropped_contaminated: int = 0
    dropped_defective: int = 0
    dropped_too_long: int = 0
    trimmed_tools: int = 0
    """Uncalled tools removed from requests whose prompt was too long."""
    unused: int = 0
    """Eligible requests left out by the example count or the token budget."""
    prompt_tokens_mean: float = 0.0
    prompt_tokens_max: int = 0
    total_tokens: int = 0
    """Prompt + completion tokens of the training rows (what the training cost scales with)."""
    max_prompt_tokens: int = 0
    seed: int = 0


# -- requests ------------------------------------------------------------------------------


def evaluation_function_names(cache_dir: str | os.PathLike[str] | None = None) -> frozenset[str]:
    """Every function name offered in an evaluation category, BFCL's multi-turn toolsets
    included (what training must not see)."""
    names: set[str] = set(multi_turn_function_names(cache_dir))
    for category in BFCL_EVAL_CATEGORIES:
        for item in load_bfcl(category, cache_dir=cache_dir):
            names.update(str(f["name"]) for f in item.schemas())
    return frozenset(names)


def live_requests(
    cache_dir: str | os.PathLike[str] | None = None,
    categories: Sequence[str] = BFCL_TRAIN_CATEGORIES,
) -> tuple[list[TrainRequest], int]:
    """Requests from BFCL live categories with their gold calls; also the count of entries
    skipped because their gold answer is defective (no call could pass it)."""
    requests: list[TrainRequest] = []
    defective = 0
    for category in categories:
        if category in BFCL_EVAL_CATEGORIES:
            raise ValueError(f"{category!r} is an evaluation category: never train on it")
        for item in load_bfcl(category, cache_dir=cache_dir):
            if gold_defects(item) or not item.gold:
                defective += 1
                continue
            requests.append(
                TrainRequest(
                    id=item.id,
                    messages=item.messages,
                    tools=item.tools,
                    calls=gold_calls(item, mentioned_in=user_text(item.messages)),
                    source=category,
                )
            )
    return requests, defective


_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")


def _tool_words(tool: Mapping[str, Any]) -> frozenset[str]:
    function = tool.get("function") or {}
    text = f"{function.get('name', '')} {function.get('description', '')}".replace("_", " ")
    return frozenset(w.lower() for w in _WORD.findall(text) if len(w) > 2)


def add_distractors(
    requests: Sequence[TrainRequest],
    *,
    share: float = 0.5,
    max_extra: int = 3,
    nearest: int = 8,
    seed: int = 0,
) -> list[TrainRequest]:
    """Offer more tools in a ``share`` of the single-tool BFCL requests.

    BFCL's ``live_simple`` offers exactly the tool to call, so it teaches copying values but
    not choosing. Here 1–``max_extra`` tools from other requests of the list are added to a
    request, drawn among the ``nearest`` most similar ones (shared words in name and
    description), so the model must tell ``get_current_weather`` from ``get_forecast``. The
    calls are unchanged; the request replaces the original (no duplicates). Deterministic
    for a seed.
    """
    if not 0 <= share <= 1 or max_extra < 1 or nearest < 1:
        raise ValueError("share must be within [0, 1], max_extra and nearest >= 1")
    rng = random.Random(seed)
    pool: dict[str, dict[str, Any]] = {}
    for request in requests:
        for tool in request.tools:
            pool.setdefault(str(tool["function"]["name"]), tool)
    words = {name: _tool_words(tool) for name, tool in pool.items()}
    out: list[TrainRequest] = []
    for request in requests:
        if (
            len(request.tools) != 1
            or not request.calls
            or request.source in ("generated", "modifiers", "quantities")
            or rng.random() >= share
        ):
            out.append(request)
            continue
        own = request.tool_names[0]
        mine = words.get(own, frozenset())

        def similarity(name: str, mine: frozenset[str] = mine) -> float:
            theirs = words[name]
            return len(mine & theirs) / (len(mine | theirs) or 1)

        candidates = sorted((n for n in pool if n != own), key=lambda n: (-similarity(n), n))
        picked = rng.sample(candidates[:nearest], min(rng.randint(1, max_extra), nearest))
        tools = [request.tools[0], *(pool[n] for n in picked)]
        rng.shuffle(tools)
        out.append(
            TrainRequest(
                id=request.id + "+distractors",
                messages=request.messages,
                tools=tools,
                calls=request.calls,
                answer=request.answer,
                source=request.source + "+distractors",
            )
        )
    return out


def decontaminate(
    requests: Iterable[TrainRequest], banned: frozenset[str] | set[str]
) -> tuple[list[TrainRequest], int]:
    """Drop every request that offers or calls a banned function name; returns (kept, dropped)."""
    kept: list[TrainRequest] = []
    dropped = 0
    for request in requests:
        names = set(request.tool_names) | {name for name, _ in request.calls}
        if names & banned:
            dropped += 1
        else:
            kept.append(request)
    return kept, dropped


def live_no_call_requests(
    cache_dir: str | os.PathLike[str] | None = None,
    categories: Sequence[str] = BFCL_NO_CALL_TRAIN_CATEGORIES,
) -> list[TrainRequest]:
    """Requests from BFCL's live categories that no offered tool fits, answered without a
    call (:data:`~ooo_agent.train.generated.NO_TOOL_ANSWER`).

    The generator's no-tool requests are small talk and asks far from every offered tool;
    these are real users' requests beside real tools, often close to one of them (a tool for
    today's weather offered for a question about last year's), which is what BFCL's
    ``irrelevance`` asks a model to decline.
    """
    requests: list[TrainRequest] = []
    for category in categories:
        if category in BFCL_EVAL_CATEGORIES:
            raise ValueError(f"{category!r} is an evaluation category: never train on it")
        for item in load_bfcl(category, cache_dir=cache_dir):
            if item.gold:
                raise ValueError(f"{item.id!r} expects a call: not a no-call category")
            requests.append(
                TrainRequest(
                    id=item.id,
                    messages=item.messages,
                    tools=item.tools,
                    answer=NO_TOOL_ANSWER,
                    source=category,
                )
            )
    return requests


def collect_requests(
    *,
    generated: int = 700,
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    banned: frozenset[str] | None = None,
    distractor_share: float = 0.5,
    modifiers: int = 0,
    quantities: int = 0,
    live_irrelevance: bool = False,
    agent: int = 0,
    domains: int = 0,
    sessions: int = 0,
) -> tuple[list[TrainRequest], dict[str, int]]:
    """Live BFCL requests + ``generated`` generated ones, decontaminated; a
    ``distractor_share`` of the single-tool live requests get similar tools added
    (:func:`add_distractors`). ``modifiers`` generated look-ups with named optional arguments
    join the pool (source ``modifiers``), ``quantities`` requests whose numbers must be
    converted (source ``quantities``), ``agent`` whole agent turns (source ``agent+KIND``),
    ``domains`` stages of entity-toolset conversations (source ``agent+domain_KIND``), every
    move of ``sessions`` long multi-turn sessions (source ``sessions+KIND``) and, with
    ``live_irrelevance``, the live requests no
    offered tool fits (:func:`live_no_call_requests`, last, so that every draw without them
    is what it was).

    Returns the requests and drop counters (``contaminated``, ``defective``). ``banned``
    defaults to :func:`evaluation_function_names`.
    """
    live, defective = live_requests(cache_dir)
    pool = live + generate_requests(generated, seed=seed)
    pool += generate_modifier_requests(modifiers, seed=seed)
    pool += generate_quantity_requests(quantities, seed=seed)
    pool += generate_agent_requests(agent, seed=seed)
    pool += generate_domain_requests(domains, seed=seed)
    pool += generate_session_requests(sessions, seed=seed)
    if live_irrelevance:
        pool += live_no_call_requests(cache_dir)
    banned = evaluation_function_names(cache_dir) if banned is None else banned
    kept, contaminated = decontaminate(pool, banned)
    # Distractors come from the decontaminated requests only: no evaluation tool slips in.
    kept = add_distractors(kept, share=distractor_share, seed=seed)
    return kept, {"contaminated": contaminated, "defective": defective}


# -- rows ----------------------------------------------------------------------------------


def target_row(request: TrainRequest, fmt: ChatFormat, tokenizer: Tokenizer) -> dict[str, str]:
    """``{"prompt", "completion"}`` for the trainer, in ``fmt``'s chat and call format."""
    messages = fmt.render_messages(request.messages, request.tools)
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    answer = fmt.render_calls(request.calls) if request.calls else request.answer
    return {"prompt": str(prompt), "completion": answer + END_OF_TURN}


def _count_tokens(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


MIX: dict[str, float] = {
    "live_multiple": 0.35,
    "live_simple": 0.3,
    "generated": 0.3,
    "live_parallel": 0.025,
    "live_parallel_multiple": 0.025,
}
"""Default share of the training rows per source (``+distractors`` variants count with their
source): real multi-tool requests, real single-tool ones (half of them with similar tools
added), and generated business requests (multi-tool, two-call and no-tool ones)."""


def _mix_order(
    rows: Sequence[tuple[TrainRequest, Any, int, int]], mix: Mapping[str, float]
) -> list[int]:
    """Indices of ``rows`` in weighted round-robin order over their sources: taking a prefix
    of the order gives each source about its ``mix`` share while it lasts. A source missing
    from ``mix`` gets the smallest listed share."""
    floor = min(mix.values(), default=1.0)
    seen: Counter[str] = Counter()
    keyed = []
    for index, (request, *_rest) in enumerate(rows):
        source = request.source.split("+")[0]
        seen[source] += 1
        keyed.append(((seen[source] - 0.5) / max(mix.get(source, floor), 1e-9), index))
    return [index for _, index in sorted(keyed)]


def build_target_data(
    out_dir: str | os.PathLike[str],
    *,
    examples: int = 1000,
    eval_examples: int = 40,
    generated: int = 700,
    max_prompt_tokens: int = 700,
    token_budget: int | None = None,
    seed: int = 0,
    tokenizer: Tokenizer | None = None,
    fmt: ChatFormat | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    banned: frozenset[str] | None = None,
    distractor_share: float = 0.5,
    mix: Mapping[str, float] | None = None,
    modifiers: int = 0,
    quantities: int = 0,
    live_irrelevance: bool = False,
    agent: int = 0,
    domains: int = 0,
    sessions: int = 0,
) -> DataStats:
    """Write ``train.jsonl``, ``eval.jsonl``, ``requests.jsonl`` and ``stats.json`` to ``out_dir``.

    Keeps requests whose prompt fits ``max_prompt_tokens`` (uncalled tools are trimmed from
    longer ones first); takes ``eval_examples`` at random for evaluation, then up to
    ``examples`` training rows mixed by source (``mix``, default :data:`MIX`), stopping when
    ``token_budget`` (prompt + completion tokens) would be passed.
    ``tokenizer`` defaults to the embedded SmolLM2's, ``fmt`` to :class:`HermesFormat`.
    """
    if examples < 1 or eval_examples < 0 or max_prompt_tokens < 1:
        raise ValueError("examples and max_prompt_tokens must be >= 1, eval_examples >= 0")
    if fmt is None:
        from ooo_agent.formats.hermes import HermesFormat

        fmt = HermesFormat()
    if tokenizer is None:
        tokenizer = _default_tokenizer(cache_dir)
    requests, dropped = collect_requests(
        generated=generated,
        seed=seed,
        cache_dir=cache_dir,
        banned=banned,
        distractor_share=distractor_share,
        modifiers=modifiers,
        quantities=quantities,
        live_irrelevance=live_irrelevance,
        agent=agent,
        domains=domains,
        sessions=sessions,
    )
    stats = DataStats(
        dropped_contaminated=dropped["contaminated"],
        dropped_defective=dropped["defective"],
        max_prompt_tokens=max_prompt_tokens,
        seed=seed,
    )
    rows: list[tuple[TrainRequest, dict[str, str], int, int]] = []
    trim_rng = random.Random(seed)
    for request in requests:
        row = target_row(request, fmt, tokenizer)
        prompt_tokens = _count_tokens(tokenizer, row["prompt"])
        while prompt_tokens > max_prompt_tokens:
            smaller = _without_a_distractor(request, trim_rng)
            if smaller is None:
                break
            request, stats.trimmed_tools = smaller, stats.trimmed_tools + 1
            row = target_row(request, fmt, tokenizer)
            prompt_tokens = _count_tokens(tokenizer, row["prompt"])
        if prompt_tokens > max_prompt_tokens:
            stats.dropped_too_long += 1
            continue
        rows.append((request, row, prompt_tokens, _count_tokens(tokenizer, row["completion"])))

    rng = random.Random(seed)
    rng.shuffle(rows)
    eval_part, rest = rows[:eval_examples], rows[eval_examples:]
    rest = [rest[i] for i in _mix_order(rest, MIX if mix is None else mix)]
    train_part: list[tuple[TrainRequest, dict[str, str], int, int]] = []
    for entry in rest:
        cost = entry[2] + entry[3]
        if len(train_part) >= examples:
            break
        if token_budget is not None and stats.total_tokens + cost > token_budget:
            break
        train_part.append(entry)
        stats.total_tokens += cost
    stats.unused = len(rest) - len(train_part)
    rng.shuffle(train_part)  # the trainer sees a mix, not the priority order

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "train.jsonl", (r[1] for r in train_part))
    _write_jsonl(out / "eval.jsonl", (r[1] for r in eval_part))
    _write_jsonl(out / "requests.jsonl", (r[0].to_dict() for r in train_part + eval_part))

    stats.train_rows, stats.eval_rows = len(train_part), len(eval_part)
    stats.by_source = dict(Counter(r[0].source for r in train_part))
    stats.by_call_count = {
        str(k): v for k, v in Counter(len(r[0].calls) for r in train_part).items()
    }
    stats.by_tools_offered = {
        str(k): v for k, v in sorted(Counter(len(r[0].tools) for r in train_part).items())
    }
    prompt_lengths = [r[2] for r in train_part]
    stats.prompt_tokens_mean = round(statistics.fmean(prompt_lengths), 1) if prompt_lengths else 0.0
    stats.prompt_tokens_max = max(prompt_lengths, default=0)
    (out / "stats.json").write_text(json.dumps(asdict(stats), indent=2) + "\n", encoding="utf-8")
    return stats


def _without_a_distractor(request: TrainRequest, rng: random.Random) -> TrainRequest | None:
    """The request offering one uncalled tool fewer (keeping at least two tools when it
    offered several), or None when nothing can go. BFCL's ``live_multiple`` offers up to
    dozens of tools; trimming its distractors keeps real multi-tool requests within a small
    model's prompt budget instead of dropping them."""
    called = {name for name, _ in request.calls}
    for message in request.messages:  # an agent turn's earlier calls keep their tools too
        for call in message.get("tool_calls") or ():
            called.add(str(call["function"]["name"]))
    spare = [i for i, t in enumerate(request.tools) if t["function"]["name"] not in called]
    if not spare or len(request.tools) <= 2:
        return None
    drop = rng.choice(spare)
    return TrainRequest(
        id=request.id,
        messages=request.messages,
        tools=[t for i, t in enumerate(request.tools) if i != drop],
        calls=request.calls,
        answer=request.answer,
        source=request.source,
    )


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def _default_tokenizer(cache_dir: str | os.PathLike[str] | None) -> Tokenizer:
    from transformers import AutoTokenizer

    from ooo_agent.models.smollm2 import ensure_smollm2

    tokenizer: Tokenizer = AutoTokenizer.from_pretrained(ensure_smollm2(cache_dir))
    return tokenizer


# -- command line --------------------------------------------------------------------------


def _parse_mix(text: str) -> dict[str, float]:
    """``"a=0.5,b=0.5"`` -> ``{"a": 0.5, "b": 0.5}`` (argparse type for ``--mix``)."""
    mix: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        source, sep, share = part.partition("=")
        try:
            value = float(share)
        except ValueError:
            value = -1.0
        if not sep or not source.strip() or value <= 0:
            raise argparse.ArgumentTypeError(f"expected SOURCE=SHARE with SHARE > 0, got {part!r}")
        mix[source.strip()] = value
    if not mix:
        raise argparse.ArgumentTypeError("--mix needs at least one SOURCE=SHARE")
    return mix


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ooo_agent.train.data``: build the target's training data."""
    parser = argparse.ArgumentParser(
        prog="python -m ooo_agent.train.data", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", required=True, help="output folder (train/eval JSONL, stats)")
    parser.add_argument("--examples", type=int, default=1000, help="training rows at most")
    parser.add_argument("--eval-examples", type=int, default=40, help="held-out rows")
    parser.add_argument("--generated", type=int, default=700, help="generated requests to draw")
    parser.add_argument(
        "--modifiers",
        type=int,
        default=0,
        help="generated look-ups with optional arguments named in the request, to draw",
    )
    parser.add_argument(
        "--quantities",
        type=int,
        default=0,
        help="generated requests whose numbers must be converted (percent, millions), to draw",
    )
    parser.add_argument(
        "--agent",
        type=int,
        default=0,
        help="generated whole agent turns (calls, results, the next move) to draw; "
        "source 'agent' in --mix",
    )
    parser.add_argument(
        "--domains",
        type=int,
        default=0,
        help="stages of generated entity-toolset conversations (find, read, act, compare) to "
        "draw; source 'agent' in --mix",
    )
    parser.add_argument(
        "--sessions",
        type=int,
        default=0,
        help="long generated sessions (3-5 entity toolsets, 2-4 user turns; prompts of "
        "2-4.5k tokens, so raise --max-prompt-tokens) whose every move is a row, to draw; "
        "source 'sessions' in --mix",
    )
    parser.add_argument(
        "--live-irrelevance",
        action="store_true",
        help="add BFCL live_irrelevance's requests (no offered tool fits) as rows answered "
        "without a call, source 'live_irrelevance' in --mix",
    )
    parser.add_argument("--max-prompt-tokens", type=int, default=700)
    parser.add_argument(
        "--token-budget",
        type=int,
        default=None,
        help="stop adding training rows past this many tokens",
    )
    parser.add_argument(
        "--distractor-share",
        type=float,
        default=0.5,
        help="share of single-tool live requests offered similar extra tools",
    )
    parser.add_argument(
        "--mix",
        type=_parse_mix,
        default=None,
        help="row share per source, e.g. 'live_multiple=0.35,live_simple=0.2,generated=0.4' "
        "(default: " + ",".join(f"{k}={v}" for k, v in MIX.items()) + ")",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--format",
        default="hermes",
        help="the call format the prompts are rendered in (default hermes, as every shipped "
        "adapter was trained; hermes-description-first is the embedded target's prompt)",
    )
    parser.add_argument("--cache-dir", default=None, help="ooo-agent cache root")
    args = parser.parse_args(argv)
    from ooo_agent.formats import get_format

    stats = build_target_data(
        args.out,
        examples=args.examples,
        eval_examples=args.eval_examples,
        generated=args.generated,
        max_prompt_tokens=args.max_prompt_tokens,
        token_budget=args.token_budget,
        seed=args.seed,
        cache_dir=args.cache_dir,
        distractor_share=args.distractor_share,
        mix=args.mix,
        modifiers=args.modifiers,
        quantities=args.quantities,
        live_irrelevance=args.live_irrelevance,
        agent=args.agent,
        domains=args.domains,
        sessions=args.sessions,
        fmt=get_format(args.format),
    )
    print(json.dumps(asdict(stats), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
