"""Benchmarks: BFCL data, the BFCL-style AST checker, the mode runner and its report.

The data and checker are light (no torch) and re-exported here; the runner and report live
in their own modules (``ooo_agent.bench.runner``, ``ooo_agent.bench.report``).

Example::

    from ooo_agent.bench import check, gold_calls, load_bfcl

    item = load_bfcl("simple_python", limit=1)[0]
    check(gold_calls(item), item).ok  # True
"""

from __future__ import annotations

from ooo_agent.bench.ast_check import AstResult, check, gold_calls, gold_defects, names_match
from ooo_agent.bench.datasets import (
    BFCL_CATEGORIES,
    BFCL_EVAL_CATEGORIES,
    BFCL_NO_CALL_TRAIN_CATEGORIES,
    BFCL_TRAIN_CATEGORIES,
    BFCL_VERSION,
    BenchItem,
    load_bfcl,
    load_jsonl,
    openai_safe_tools,
    save_jsonl,
)

__all__ = [
    "BFCL_CATEGORIES",
    "BFCL_EVAL_CATEGORIES",
    "BFCL_NO_CALL_TRAIN_CATEGORIES",
    "BFCL_TRAIN_CATEGORIES",
    "BFCL_VERSION",
    "AstResult",
    "BenchItem",
    "check",
    "gold_calls",
    "gold_defects",
    "load_bfcl",
    "load_jsonl",
    "names_match",
    "openai_safe_tools",
    "save_jsonl",
]
