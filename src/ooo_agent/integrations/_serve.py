"""``ooo-agent serve``: arguments, target and sidecar choice, and startup of the server.

:mod:`ooo_agent.cli` registers :func:`add_serve_arguments` and calls :func:`run_serve`; the
module also runs alone (``python -m ooo_agent.integrations._serve``). :func:`build_app` does
everything but serving (target, sidecar, server tools, caller, app), so it can be checked
without a socket.

Every startup problem (a replay file, a model, a sidecar, its template or server tools that
cannot be loaded, a mode the pair cannot run) is one ``error: ...`` line on stderr and exit
status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ooo_agent.cli.common import CliError, load_object
from ooo_agent.errors import OooAgentError
from ooo_agent.tools import Tool, Toolset

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ooo_agent.caller import FastToolCaller
    from ooo_agent.sidecar.base import Sidecar
    from ooo_agent.sidecar.prompts import PromptTemplate
    from ooo_agent.targets.base import Target

__all__ = [
    "PRESET_SIDECARS",
    "SERVE_CONSTRAINTS",
    "ServeApp",
    "StartupError",
    "add_serve_arguments",
    "build_app",
    "load_preset_sidecar",
    "load_preset_target",
    "load_replay_outputs",
    "main",
    "run_serve",
]

DEFAULT_PRESET = "smollm2-135m-toolcall"
API_KEY_ENV = "OOO_AGENT_API_KEY"
SIDECAR_API_KEY_ENV = "OOO_AGENT_SIDECAR_API_KEY"
QWEN3_TEMPLATE = "qwen3"
"""``--sidecar-template`` for the Qwen3 ChatML prompt (empty think block), the default."""
PRESET_SIDECARS = {"smollm2-135m-toolcall": "smollm2-135m-sidecar"}
"""The sidecar preset used by default with a target preset (``--sidecar`` not given)."""
SERVE_CONSTRAINTS = (
    ("constrain_names", "call names to the offered tools"),
    ("constrain_mentioned", "arguments to the tool's schema (named optional parameters required)"),
    ("constrain_values", "values to the tool's and the request's conventions"),
)
"""The constraints a preset target decodes with by default, each with a ``--no-...`` flag."""


class StartupError(Exception):
    """A reason the server cannot start, reported as one line with exit status 2."""


@dataclass(frozen=True)
class ServeApp:
    """What :func:`run_serve` serves, and what it says before serving."""

    app: FastAPI
    caller: FastToolCaller
    server_tools: Toolset
    """Every tool given with ``--server-tools`` (only the read-only ones are ever run)."""
    line: str
    """The startup line on stdout (scripts wait for it)."""
    notes: tuple[str, ...]
    """Warnings for stderr: server tools that will never run, a default sidecar left out."""


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's options."""
    parser.add_argument(
        "--preset", default=DEFAULT_PRESET, help="embedded model preset (default: %(default)s)"
    )
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
    parser.add_argument(
        "--format", default="hermes", help="call format of replayed outputs (default: %(default)s)"
    )
    parser.add_argument(
        "--model-name", help="model id clients send (default: the preset, or 'replay')"
    )
    parser.add_argument(
        "--decline-below",
        type=_decline_threshold,
        default=PRESET_THRESHOLD,
        metavar="P|off",
        help="answer without a call when the embedded target's probability of opening one, at its "
        "first token, is below P; 'off' always lets it call (default: the preset's, 0.9 for "
        "smollm2-135m-toolcall)",
    )
    for keyword, what in SERVE_CONSTRAINTS:
        parser.add_argument(
            "--no-" + keyword.replace("_", "-"),
            dest=keyword,
            action="store_false",
            help=f"decode the embedded target without holding {what} (HFTarget({keyword}=False); "
            "on by default, as the demo and the README's figures decode)",
        )
    parser.add_argument(
        "--mode",
        choices=["vanilla", "toolspec", "ooo"],
        help="decoding mode (default: ooo with a sidecar, else toolspec, if the target has it)",
    )
    parser.add_argument(
        "--sidecar",
        metavar="SPEC",
        help="'none', a sidecar preset, or the http(s):// URL of an OpenAI-compatible completions "
        "server (default: the preset's own sidecar, smollm2-135m-sidecar for smollm2-135m-toolcall; "
        "none with --replay or when that sidecar cannot be loaded)",
    )
    parser.add_argument(
        "--sidecar-model",
        default="sidecar",
        help="model name a URL sidecar serves (default: %(default)s)",
    )
    parser.add_argument(
        "--sidecar-template",
        metavar="SPEC",
        help=f"how a URL sidecar's prompts are rendered: '{QWEN3_TEMPLATE}' (ChatML with an empty "
        "think block, for the Qwen3-0.6B sidecar; the default), or a preset, adapter folder or "
        "tokenizer folder whose tokenizer's chat template renders them (e.g. "
        "smollm2-135m-sidecar behind 'ooo-agent serve-sidecar --preset smollm2-135m-sidecar')",
    )
    parser.add_argument(
        "--sidecar-api-key",
        default=os.environ.get(SIDECAR_API_KEY_ENV),
        help=f"bearer token sent to a URL sidecar (default: ${SIDECAR_API_KEY_ENV}, else none)",
    )
    parser.add_argument(
        "--server-tools",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="a Tool, Toolset or list of tools the server may pre-execute (read-only ones, when "
        "the client offers the same schema); repeatable",
    )
    parser.add_argument(
        "--no-preexecute",
        dest="preexecute",
        action="store_false",
        help="never start tools on the sidecar's prediction",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_ENV),
        help=f"require 'Authorization: Bearer KEY' (default: ${API_KEY_ENV}, else no auth)",
    )
    parser.add_argument("--max-body-bytes", type=int, default=1 << 20)
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=1,
        help="turns generated at once (1 for an in-process model)",
    )
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--log-level", default="warning")


def load_replay_outputs(path: Path) -> list[str]:
    """Recorded outputs from a JSON file holding a non-empty list of strings."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StartupError(f"cannot read replay file {path}: {_one_line(exc)}") from None
    if not isinstance(data, list) or not data or not all(isinstance(x, str) for x in data):
        raise StartupError(f"replay file {path} must hold a non-empty JSON list of strings")
    return data


PRESET_THRESHOLD = "preset"
"""``--decline-below``'s default: the preset's own threshold."""


def _decline_threshold(text: str) -> float | str | None:
    """``--decline-below``: a probability, ``off`` (None), or the preset's own."""
    from ooo_agent.cli.options import probability

    if text == PRESET_THRESHOLD:
        return PRESET_THRESHOLD
    return None if text.lower() == "off" else probability(text)


def load_preset_target(name: str, **options: Any) -> Target:
    """``HFTarget.from_preset(name, **options)``; ``ModelNotAvailableError`` when presets are
    missing."""
    from ooo_agent.errors import ModelNotAvailableError
    from ooo_agent.targets.hf import HFTarget

    # Looked up, not called directly: builds whose HFTarget predates presets must still serve
    # replayed outputs (--fallback-replay) instead of crashing.
    factory = getattr(HFTarget, "from_preset", None)
    if factory is None:
        raise ModelNotAvailableError("this build of HFTarget has no model presets")
    target: Target = factory(name, **options)
    return target


def load_preset_sidecar(name: str) -> Sidecar:
    """``HFSidecar.from_preset(name)``: the preset's model in process (needs the ``hf`` extra)."""
    from ooo_agent.sidecar.hf import HFSidecar

    sidecar: Sidecar = HFSidecar.from_preset(name)
    return sidecar


def build_app(args: argparse.Namespace) -> ServeApp:
    """The target, sidecar, server tools, caller and app that ``args`` ask for.

    Raises :class:`StartupError` for anything that keeps the server from starting.
    """
    try:
        from ooo_agent.integrations.server import _runnable_tools, create_app
    except ImportError as exc:
        raise StartupError(
            f"the server needs the 'server' extra (pip install 'ooo-agent[server]'): {exc}"
        ) from None
    from ooo_agent.caller import FastToolCaller

    notes: list[str] = []
    server_tools = _server_tools(args.server_tools)  # fast: fail before loading any model
    template = _sidecar_template(args)  # a tokenizer only: also before the models
    target, default_name, description, from_preset = _target(args)
    sidecar, sidecar_label = _sidecar(args, from_preset, notes, template)
    model_name = args.model_name or default_name
    try:
        caller = FastToolCaller(
            target,
            sidecar,
            mode=args.mode,
            max_new_tokens=args.max_new_tokens,
            preexecute=args.preexecute,
        )
        app = create_app(
            caller,
            model_name=model_name,
            api_key=args.api_key,
            max_body_bytes=args.max_body_bytes,
            max_concurrency=args.max_concurrency,
            server_tools=server_tools,
        )
    except ValueError as exc:  # e.g. a mode the target (or the missing sidecar) cannot run
        raise StartupError(f"cannot serve with these settings: {_one_line(exc)}") from None

    runnable = _runnable_tools(server_tools)
    details = [
        "bearer token required" if args.api_key else "no auth",
        f"mode {caller.mode}",
        f"sidecar {sidecar_label}",
    ]
    if not args.preexecute:
        details.append("pre-execution off")
    threshold = getattr(target, "decline_below", None)
    if isinstance(threshold, float | int) and not isinstance(threshold, bool):
        details.append(f"declines below {threshold:g}")
    held = [k.removeprefix("constrain_") for k, _ in SERVE_CONSTRAINTS if getattr(target, k, None) is True]
    if held:
        details.append(f"constrained: {', '.join(held)}")
    elif from_preset:
        details.append("unconstrained")
    if len(server_tools):
        details.append(f"server tools: {', '.join(runnable) or 'none runnable'}")
        notes.extend(
            f"server tool {t.name!r} is not read_only (or has no function): it is never run"
            for t in server_tools
            if t.name not in runnable
        )
        if runnable and sidecar is None:
            notes.append("--server-tools without a sidecar: nothing is pre-executed")
        elif runnable and not args.preexecute:
            notes.append("--server-tools with --no-preexecute: nothing is pre-executed")
    line = (
        f"serving {model_name!r} ({description}) on http://{args.host}:{args.port}/v1 "
        f"[{'; '.join(details)}]"
    )
    return ServeApp(app, caller, server_tools, line, tuple(notes))


def run_serve(args: argparse.Namespace) -> int:
    """Build the app from ``args`` and serve until interrupted; 2 when it cannot start."""
    try:
        built = build_app(args)
    except StartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from ooo_agent.integrations.server import serve

    for note in built.notes:
        print(f"note: {note}", file=sys.stderr)
    # One line, flushed, once the port listens and before the server blocks: scripts wait
    # for it, then connect.
    serve(
        built.app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        on_listening=lambda: print(built.line, flush=True),
    )
    return 0


def _target(args: argparse.Namespace) -> tuple[Target, str, str, bool]:
    """The target, its default model name, its description, and whether it is the preset."""
    from ooo_agent.targets.replay import ReplayTarget

    threshold = getattr(args, "decline_below", PRESET_THRESHOLD)
    turned_off = [k for k, _ in SERVE_CONSTRAINTS if getattr(args, k, True) is False]
    if args.replay is not None:
        if threshold != PRESET_THRESHOLD:
            raise StartupError("--decline-below applies to an embedded model, not to --replay")
        if turned_off:
            flag = "--no-" + turned_off[0].replace("_", "-")
            raise StartupError(f"{flag} applies to an embedded model, not to --replay")
        replay = ReplayTarget(load_replay_outputs(args.replay), format=args.format, cycle=True)
        return replay, "replay", "recorded outputs", False
    options: dict[str, Any] = {} if threshold == PRESET_THRESHOLD else {"decline_below": threshold}
    options.update(dict.fromkeys(turned_off, False))  # the rest: the preset's own (on)
    try:
        target = load_preset_target(args.preset, **options)
        return target, args.preset, f"embedded model {args.preset}", True
    except Exception as exc:  # missing extra, adapter or model file
        if args.fallback_replay is None:
            raise StartupError(f"cannot load preset {args.preset!r}: {_one_line(exc)}") from None
        replay = ReplayTarget(
            load_replay_outputs(args.fallback_replay), format=args.format, cycle=True
        )
        why = f"{type(exc).__name__}: {_one_line(exc)}"
        return (
            replay,
            "replay",
            f"recorded outputs (preset {args.preset!r} unavailable: {why})",
            False,
        )


def _is_url(spec: str | None) -> bool:
    return spec is not None and spec.startswith(("http://", "https://"))


def _sidecar_template(args: argparse.Namespace) -> PromptTemplate | None:
    """The template ``--sidecar-template`` names for a URL sidecar; None without one.

    Given without a URL ``--sidecar``, or naming a tokenizer that cannot be loaded (or has no
    chat template), it is a :class:`StartupError`.
    """
    from ooo_agent.sidecar.prompts import chatml_prompt, template_from_tokenizer

    spec: str | None = args.sidecar_template
    if not _is_url(args.sidecar):
        if spec is not None:
            raise StartupError("--sidecar-template only applies to an http(s):// --sidecar URL")
        return None
    if spec is None or spec.lower() == QWEN3_TEMPLATE:
        return chatml_prompt
    from ooo_agent.models.presets import load_tokenizer

    try:
        return template_from_tokenizer(load_tokenizer(spec))
    except Exception as exc:  # missing extra, unknown spec, unreadable or template-less tokenizer
        raise StartupError(
            f"--sidecar-template {spec!r}: {type(exc).__name__}: {_one_line(exc)}"
        ) from None


def _sidecar(
    args: argparse.Namespace,
    from_preset: bool,
    notes: list[str],
    template: PromptTemplate | None,
) -> tuple[Sidecar | None, str]:
    """The sidecar ``--sidecar`` names (or the preset's default one) and how to describe it.

    An explicit sidecar that cannot be had is a :class:`StartupError`; the default one is left
    out with a note, so ``ooo-agent serve`` keeps working where only the target is installed.
    A URL sidecar renders its prompts with ``template`` (see :func:`_sidecar_template`).
    """
    spec: str | None = args.sidecar
    if spec is None:
        default = PRESET_SIDECARS.get(args.preset) if from_preset else None
        if default is None:
            return None, "none"
        try:
            return load_preset_sidecar(default), default
        except Exception as exc:  # missing extra or adapter: serve without it
            notes.append(
                f"default sidecar {default!r} unavailable ({type(exc).__name__}: {_one_line(exc)}); "
                "serving without a sidecar"
            )
            return None, "none"
    if spec.lower() == "none":
        return None, "none"
    if _is_url(spec):
        from ooo_agent.sidecar.openai import OpenAISidecar

        template_name = args.sidecar_template or QWEN3_TEMPLATE
        label = f"{spec} (model {args.sidecar_model!r}, template {template_name})"
        sidecar = OpenAISidecar(
            spec, model=args.sidecar_model, template=template, api_key=args.sidecar_api_key
        )
        return sidecar, label
    from ooo_agent.models import get_preset

    try:
        preset = get_preset(spec)
    except OooAgentError as exc:
        raise StartupError(f"--sidecar {spec!r}: {exc}") from None
    if preset.role != "sidecar":
        raise StartupError(f"--sidecar {spec!r}: preset is a {preset.role} model, not a sidecar")
    try:
        return load_preset_sidecar(spec), spec
    except Exception as exc:  # missing extra, adapter or model file
        raise StartupError(
            f"cannot load sidecar {spec!r}: {type(exc).__name__}: {_one_line(exc)}"
        ) from None


def _server_tools(specs: Sequence[str]) -> Toolset:
    """The tools named by ``--server-tools`` specs, in one toolset (names must not repeat)."""
    tools: list[Tool] = []
    for spec in specs:
        try:
            # create_app's own normalisation: a Toolset, a Tool, or an iterable of tools.
            tools.extend(Toolset.coerce(load_object(spec)))
        except (CliError, OooAgentError, TypeError, ValueError) as exc:
            raise StartupError(f"--server-tools {spec!r}: {_one_line(exc)}") from None
    try:
        return Toolset(tools)
    except OooAgentError as exc:
        raise StartupError(f"--server-tools: {exc}") from None


def _one_line(exc: BaseException | str) -> str:
    return " ".join(str(exc).split())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ooo-agent serve", description="OpenAI-compatible server")
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
