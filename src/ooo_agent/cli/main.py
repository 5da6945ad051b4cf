"""The ``ooo-agent`` command line.

Each subcommand is one pair of functions: ``_add_<name>_parser(subparsers)`` declares its
arguments and sets ``handler=_cmd_<name>``; ``_cmd_<name>(args) -> int`` runs it and returns
the exit status. Register the adder in :data:`SUBCOMMANDS`. Heavy imports (torch, servers)
go inside the ``_cmd_`` function so that ``ooo-agent --help`` stays instant.

Errors from ooo-agent (:class:`~ooo_agent.errors.OooAgentError`) and :class:`CliError` are
printed as one line on stderr with exit status 1; argparse usage errors exit with 2.

Example::

    ooo-agent --version
    ooo-agent tools myapp.tools:toolset
    ooo-agent tools ./tools.py:get_weather --table
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ooo_agent.cli.common import CliError, load_object
from ooo_agent.errors import OooAgentError
from ooo_agent.observability import set_verbose

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

Subparsers = Any
"""``argparse._SubParsersAction`` (private in the standard library, hence untyped here)."""


def _version() -> str:
    from ooo_agent import __version__

    return str(__version__)


def _stdout() -> Console:
    return Console(soft_wrap=True)


# -- ooo-agent tools --------------------------------------------------------------------
def _add_tools_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "tools",
        help="print the OpenAI schemas of the tools at MODULE:ATTR",
        description="Print the OpenAI tool schemas of a Toolset, a Tool, a function or a "
        "list of them, as the model will see them.",
    )
    parser.add_argument("target", metavar="MODULE:ATTR", help="e.g. myapp.tools:toolset")
    parser.add_argument(
        "--table", action="store_true", help="a summary table instead of the JSON schemas"
    )
    parser.set_defaults(handler=_cmd_tools)


def _cmd_tools(args: argparse.Namespace) -> int:
    from ooo_agent.tools import Toolset

    toolset = Toolset.coerce(load_object(args.target))
    schemas = toolset.to_openai()
    console = _stdout()
    if not args.table:
        console.print_json(json.dumps(schemas, ensure_ascii=False))
        return 0
    table = Table("tool", "parameters", "description", title=f"{len(schemas)} tools")
    for schema in schemas:
        fn = schema["function"]
        params = fn.get("parameters") or {}
        required = set(params.get("required", []))
        names = [p + ("" if p in required else "?") for p in params.get("properties", {})]
        table.add_row(fn["name"], ", ".join(names), fn.get("description") or "")
    console.print(table)
    return 0


# -- the parser -------------------------------------------------------------------------
# -- ooo-agent serve-sidecar ------------------------------------------------------------
def _add_serve_sidecar_parser(subparsers: Subparsers) -> None:
    from ooo_agent.sidecar.server import add_arguments  # light: fastapi loads only to serve

    parser = subparsers.add_parser(
        "serve-sidecar",
        help="serve the OoO-Spec sidecar over OpenAI-compatible /v1/completions",
        description="Serve a sidecar model (base + LoRA adapter) as an OpenAI-compatible "
        "completions server, one batched shared-prefix generation per request, as vLLM would.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=_cmd_serve_sidecar)


def _cmd_serve_sidecar(args: argparse.Namespace) -> int:
    from ooo_agent.sidecar.server import run_from_args

    return run_from_args(args)


# -- ooo-agent serve --------------------------------------------------------------------
def _add_serve_parser(subparsers: Subparsers) -> None:
    from ooo_agent.integrations._serve import add_serve_arguments  # light: fastapi loads to serve

    parser = subparsers.add_parser(
        "serve",
        help="serve a model over OpenAI-compatible /v1/chat/completions",
        description="Serve the embedded model (or recorded outputs) as an OpenAI-compatible "
        "chat-completions server with validated tool calls; clients run the tools, except "
        "read-only --server-tools the server may pre-execute on its sidecar's prediction.",
    )
    add_serve_arguments(parser)
    parser.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from ooo_agent.integrations._serve import run_serve

    return run_serve(args)


# -- ooo-agent train --------------------------------------------------------------------
def _add_train_parser(subparsers: Subparsers) -> None:
    from ooo_agent.train.run import add_train_arguments  # light: torch loads only to train

    parser = subparsers.add_parser(
        "train",
        help="train a LoRA adapter (target or sidecar) from prompt/completion JSONL",
        description="Train a LoRA adapter with the OoO-Spec seed recipe on JSONL rows "
        '{"prompt", "completion"}; writes the adapter, a model card and resumable checkpoints.',
    )
    add_train_arguments(parser)
    parser.set_defaults(handler=_cmd_train)


def _cmd_train(args: argparse.Namespace) -> int:
    from ooo_agent.train.run import run_train

    return run_train(args, command=args.command_line)


# -- ooo-agent bench --------------------------------------------------------------------
def _add_bench_parser(subparsers: Subparsers) -> None:
    from ooo_agent.bench.command import add_arguments  # light: torch loads only to run

    parser = subparsers.add_parser(
        "bench",
        help="benchmark vanilla vs ToolSpec vs OoO-Spec (vs HF prompt lookup) end to end",
        description="Run BFCL requests through every decoding mode on the same model, "
        "interleaved, and report latency from arrival to validated calls, forward passes, "
        "identity with vanilla and AST accuracy (table, JSONL, JSON, PNG).",
    )
    add_arguments(parser)
    parser.set_defaults(handler=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    from ooo_agent.bench.command import run_from_args

    return run_from_args(args)


# -- ooo-agent eval-sidecar -------------------------------------------------------------
def _add_eval_sidecar_parser(subparsers: Subparsers) -> None:
    from ooo_agent.train.eval_sidecar import add_arguments  # light: torch loads only to run

    parser = subparsers.add_parser(
        "eval-sidecar",
        help="score a sidecar's waves on held-out requests (function, arguments, nulls)",
        description="Run one sidecar wave per held-out request and score function-index "
        "accuracy, argument exact match, null precision/recall, direct-call and hint exact "
        "match against the target's own calls and against gold (table + JSON report).",
    )
    add_arguments(parser)
    parser.set_defaults(handler=_cmd_eval_sidecar)


def _cmd_eval_sidecar(args: argparse.Namespace) -> int:
    from ooo_agent.train.eval_sidecar import run_from_args

    return run_from_args(args)


def _add_demo_parser(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the SDK end to end on the embedded default model",
        description="Register a few business tools, send plain requests through FastToolCaller "
        "and show each call, its validation, the dispatched result and vanilla vs toolspec vs "
        "ooo side by side. Replays recorded outputs when the embedded model is unavailable.",
    )
    parser.add_argument("requests", nargs="*", help="requests to send (default: a built-in set)")
    parser.set_defaults(handler=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from ooo_agent.demo import DEMO_REQUESTS, run_demo

    return run_demo(args.requests or DEMO_REQUESTS)


SUBCOMMANDS: list[Callable[[Subparsers], None]] = [
    _add_demo_parser,
    _add_tools_parser,
    _add_serve_sidecar_parser,
    _add_serve_parser,
    _add_train_parser,
    _add_bench_parser,
    _add_eval_sidecar_parser,
]
"""Adders of the subcommands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``ooo-agent`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="ooo-agent",
        description="Fast, safe LLM tool calling: validated dispatch, lossless speculative "
        "decoding (ToolSpec) and out-of-order sidecar hints (OoO-Spec).",
    )
    parser.add_argument("--version", action="version", version=f"ooo-agent {_version()}")
    verbose_help = "log at DEBUG to stderr, model loading's progress bars and warnings included"
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    for sub in subparsers.choices.values():  # also after the command: `ooo-agent demo -v`
        sub.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # The command as given (not sys.argv: main() may be called with its own arguments), for the
    # reports that record how to re-run them.
    args.command_line = shlex.join(["ooo-agent", *(sys.argv[1:] if argv is None else argv)])
    set_verbose(args.verbose)  # warnings and errors on stderr; everything with --verbose
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except (CliError, OooAgentError) as exc:
        Console(stderr=True, soft_wrap=True).print(Text.assemble(("error: ", "bold red"), str(exc)))
        return 1
    except KeyboardInterrupt:
        return 130
