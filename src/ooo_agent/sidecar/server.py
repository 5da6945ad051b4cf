"""``ooo-agent serve-sidecar``: an OpenAI-compatible completions server over the batched sidecar.

Runs the sidecar in its own process, as vLLM would (``vllm serve Qwen/Qwen3-0.6B --enable-lora
--lora-modules sidecar=<adapter dir> …``), so the target and the sidecar each get their own
cores. Endpoints: ``GET /v1/models`` and ``POST /v1/completions`` (``prompt`` a string or a
list of strings, ``max_tokens``, ``temperature`` 0 only, ``stop``). A list of prompts is ONE
batched greedy generation that computes the prompts' shared prefix once.

Example::

    app = create_app(SharedPrefixGenerator(model, tokenizer), model_name="sidecar")
    uvicorn.run(app, port=8001)
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Sequence
from typing import Any

import anyio.to_thread

from ooo_agent.sidecar.batch import SharedPrefixGenerator

__all__ = ["create_app", "main", "ready_line", "serve"]


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Any:
    from fastapi.responses import JSONResponse

    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return JSONResponse(status_code=status, content=body)


def create_app(
    generator: SharedPrefixGenerator,
    *,
    model_name: str = "sidecar",
    max_tokens_limit: int = 512,
    max_prompts: int = 256,
) -> Any:
    """A FastAPI app serving ``generator`` as ``model_name`` (needs the ``server`` extra)."""
    from fastapi import FastAPI, Request

    app = FastAPI(title="ooo-agent sidecar", version="1")
    created = int(time.time())

    @app.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        card = {"id": model_name, "object": "model", "created": created, "owned_by": "ooo-agent"}
        return {"object": "list", "data": [card]}

    async def completions(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        problem = _check_request(body, model_name, max_tokens_limit, max_prompts)
        if problem is not None:
            return _error(404 if problem.startswith("model") else 400, problem)
        prompts, single = _prompts(body["prompt"])
        stop = body.get("stop") or []
        stops = [stop] if isinstance(stop, str) else list(stop)
        add_special = bool(body.get("add_special_tokens", True))
        max_tokens = int(body.get("max_tokens") or 16)

        def run() -> tuple[list[Any], int]:
            ids = [
                p if isinstance(p, list) else generator.encode(p, add_special_tokens=add_special)
                for p in prompts
            ]
            if any(not p for p in ids):
                raise ValueError("a prompt is empty")
            results = generator.generate(ids, max_new_tokens=max_tokens, stop_strings=stops)
            return results, sum(len(p) for p in ids)

        try:
            results, prompt_tokens = await anyio.to_thread.run_sync(run)
        except ValueError as exc:
            return _error(400, str(exc))
        choices = [
            {"index": r.index, "text": r.text, "logprobs": None, "finish_reason": r.finish_reason}
            for r in results
        ]
        completion = sum(len(r.token_ids) for r in results)
        return {
            "id": "cmpl-" + uuid.uuid4().hex,
            "object": "text_completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": choices[:1] if single else choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
            },
        }

    # This module defers annotations and imports fastapi lazily: give FastAPI the real class.
    completions.__annotations__["request"] = Request
    app.post("/v1/completions")(completions)
    return app


def _check_request(
    body: dict[str, Any], model_name: str, max_tokens_limit: int, max_prompts: int
) -> str | None:
    """The first problem with a completions request, or None."""
    model = body.get("model")
    if model is not None and model != model_name:
        return f"model {model!r} does not exist; this server serves {model_name!r}"
    prompt = body.get("prompt")
    if prompt is None:
        return "'prompt' is required"
    valid = (
        isinstance(prompt, str)
        or (isinstance(prompt, list) and all(isinstance(p, str) for p in prompt))
        or (isinstance(prompt, list) and all(isinstance(p, int) for p in prompt))
        or (
            isinstance(prompt, list)
            and all(isinstance(p, list) and all(isinstance(t, int) for t in p) for p in prompt)
        )
    )
    if not valid or (isinstance(prompt, list) and not prompt):
        return "'prompt' must be a string, a list of strings, or token ids"
    if isinstance(prompt, list) and len(prompt) > max_prompts and not isinstance(prompt[0], int):
        return f"at most {max_prompts} prompts per request"
    max_tokens = body.get("max_tokens", 16)
    if max_tokens is not None and (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 0 <= max_tokens <= max_tokens_limit
    ):
        return f"'max_tokens' must be an integer in [0, {max_tokens_limit}]"
    temperature = body.get("temperature", 0)
    if temperature not in (None, 0, 0.0):
        return "only greedy decoding is served: 'temperature' must be 0"
    if body.get("n", 1) not in (None, 1) or body.get("best_of", 1) not in (None, 1):
        return "'n' and 'best_of' must be 1"
    if body.get("stream"):
        return "streaming is not supported"
    stop = body.get("stop")
    if stop is not None and not (
        isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(s, str) for s in stop))
    ):
        return "'stop' must be a string or a list of strings"
    return None


def _prompts(prompt: Any) -> tuple[list[Any], bool]:
    """The list of prompts (strings or token-id lists) and whether a single one was sent."""
    if isinstance(prompt, str):
        return [prompt], True
    if all(isinstance(p, int) for p in prompt):
        return [list(prompt)], True
    return list(prompt), False


def ready_line(model_name: str, host: str, port: int) -> str:
    """The line ``serve`` prints on stdout once the port listens (scripts wait for it)."""
    return f"serving sidecar {model_name!r} on http://{host}:{port}/v1"


def serve(
    generator: SharedPrefixGenerator,
    *,
    host: str = "127.0.0.1",
    port: int = 8001,
    model_name: str = "sidecar",
) -> None:
    """Serve ``generator`` until interrupted. Prints :func:`ready_line`, flushed, once the
    port listens and before the server blocks, as ``ooo-agent serve`` does: a script that
    waits for the line can connect at once."""
    from ooo_agent.integrations.server import serve as serve_app

    serve_app(
        create_app(generator, model_name=model_name),
        host=host,
        port=port,
        log_level="info",
        on_listening=lambda: print(ready_line(model_name, host, port), flush=True),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve-sidecar`` options (shared with the ``ooo-agent`` CLI)."""
    parser.add_argument("--base", default="Qwen/Qwen3-0.6B", help="base model: hub id or local dir")
    parser.add_argument("--adapter", default=None, help="LoRA adapter: hub id or local dir")
    parser.add_argument("--subfolder", default=None, help="adapter subfolder (e.g. sidecar-lora)")
    parser.add_argument("--preset", default=None, help="a model preset instead of --base/--adapter")
    parser.add_argument("--served-model-name", default="sidecar")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for generation")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N (default cpu)")
    parser.add_argument(
        "--dtype",
        default=None,
        choices=("auto", "float32", "bfloat16", "float16"),
        help="weights' precision (default auto: bfloat16 where the GPU or CPU has native bf16 "
        "kernels, else float32)",
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Load the model named by ``args`` and serve it."""
    from ooo_agent.models.presets import sidecar_dtype
    from ooo_agent.sidecar.hf import HFSidecar

    dtype = sidecar_dtype(args.device) if args.dtype in (None, "auto") else args.dtype
    if args.preset:
        from ooo_agent.models import load_preset

        model, tokenizer = load_preset(args.preset, device=args.device, dtype=dtype)
        sidecar = HFSidecar(model.to(args.device), tokenizer, num_threads=args.threads)
    else:
        sidecar = HFSidecar.from_pretrained(
            args.base, args.adapter, args.subfolder, dtype=dtype, device=args.device,
            num_threads=args.threads,
        )  # fmt: skip
    serve(sidecar.generator, host=args.host, port=args.port, model_name=args.served_model_name)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ooo_agent.sidecar.server``: the same as ``ooo-agent serve-sidecar``."""
    parser = argparse.ArgumentParser(
        prog="ooo-agent serve-sidecar",
        description="Serve the OoO-Spec sidecar over OpenAI-compatible HTTP.",
    )
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
