"""``ooo-agent serve``: arguments, target choice and startup of the OpenAI-compatible server.

``cli.py`` registers :func:`add_serve_arguments` and calls :func:`run_serve`; the module also
runs alone (``python -m ooo_agent.integrations._serve``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ooo_agent.targets.base import Target

__all__ = ["add_serve_arguments", "load_preset_target", "load_replay_outputs", "main", "run_serve"]

DEFAULT_PRESET = "smollm2-135m-toolcall"
API_KEY_ENV = "OOO_AGENT_API_KEY"


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's options."""
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="embedded model preset (default: %(default)s)")
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="FILE",
        help="serve recorded outputs (a JSON list of model texts, played in a cycle) instead of a model",
    )
    parser.add_argument(
        "--fallback-replay",
        type=Path,
        metavar="FILE",
        help="like --replay, but only when the preset cannot be loaded",
    )
    parser.add_argument("--format", default="hermes", help="call format of replayed outputs (default: %(default)s)")
    parser.add_argument("--model-name", help="model id clients send (default: the preset, or 'replay')")
    parser.add_argument("--mode", choices=["vanilla", "toolspec", "ooo"], help="decoding mode (default: fastest)")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_ENV),
        help=f"require 'Authorization: Bearer KEY' (default: ${API_KEY_ENV}, else no auth)",
    )
    parser.add_argument("--max-body-bytes", type=int, default=1 << 20)
    parser.add_argument(
        "--max-concurrency", type=int, default=1, help="turns generated at once (1 for an in-process model)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--log-level", default="warning")


def load_replay_outputs(path: Path) -> list[str]:
    """Recorded outputs from a JSON file holding a non-empty list of strings."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: cannot read replay file {path}: {exc}") from None
    if not isinstance(data, list) or not data or not all(isinstance(x, str) for x in data):
        raise SystemExit(f"error: replay file {path} must hold a non-empty JSON list of strings")
    return data


def load_preset_target(name: str) -> Target:
    """``HFTarget.from_preset(name)``; ``ModelNotAvailableError`` when presets are missing."""
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.targets.hf import HFTarget

    # Looked up, not called directly: builds whose HFTarget predates presets must still serve
    # replayed outputs (--fallback-replay) instead of crashing.
    factory = getattr(HFTarget, "from_preset", None)
    if factory is None:
        raise ModelNotAvailableError("this build of HFTarget has no model presets")
    target: Target = factory(name)
    return target


def _target(args: argparse.Namespace) -> tuple[Target, str, str]:
    from ooo_agent.targets.replay import ReplayTarget

    if args.replay is not None:
        outputs = load_replay_outputs(args.replay)
        return ReplayTarget(outputs, format=args.format, cycle=True), "replay", "recorded outputs"
    try:
        return load_preset_target(args.preset), args.preset, f"embedded model {args.preset}"
    except Exception as exc:  # missing extra, adapter or model file
        if args.fallback_replay is None:
            raise SystemExit(f"error: cannot load preset {args.preset!r}: {exc}") from None
        outputs = load_replay_outputs(args.fallback_replay)
        reason = f"recorded outputs (preset {args.preset!r} unavailable: {type(exc).__name__}: {exc})"
        return ReplayTarget(outputs, format=args.format, cycle=True), "replay", reason


def run_serve(args: argparse.Namespace) -> int:
    """Build the target, caller and app from ``args`` and serve until interrupted."""
    try:
        from ooo_agent.integrations.server import create_app, serve
    except ImportError as exc:
        print(f"error: the server needs the 'server' extra (pip install 'ooo-agent[server]'): {exc}", file=sys.stderr)
        return 2
    from ooo_agent.caller import FastToolCaller

    target, default_name, description = _target(args)
    caller = FastToolCaller(target, mode=args.mode, max_new_tokens=args.max_new_tokens)
    model_name = args.model_name or default_name
    app = create_app(
        caller,
        model_name=model_name,
        api_key=args.api_key,
        max_body_bytes=args.max_body_bytes,
        max_concurrency=args.max_concurrency,
    )
    auth = "bearer token required" if args.api_key else "no auth"
    # One line, flushed, before the server blocks: scripts wait for it.
    print(
        f"serving {model_name!r} ({description}) on http://{args.host}:{args.port}/v1 [{auth}]",
        flush=True,
    )
    serve(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ooo-agent serve", description="OpenAI-compatible server")
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
