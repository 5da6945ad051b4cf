"""Bounded load test of ``ooo-agent serve`` on loopback.

Sends ``--requests`` chat completions (default 200) with ``--concurrency`` in flight (default
16) and prints one JSON object: failures, p50 / p99 latency and throughput. Exits 1 if any
request failed.

By default it starts its own server on a free loopback port over recorded outputs (``--replay``);
``--preset NAME`` serves the embedded model instead; ``--url`` targets a server already running
(loopback addresses only: this is not a tool for loading other people's machines).

    python benchmarks/load_server.py
    python benchmarks/load_server.py --preset smollm2-135m-toolcall --requests 40
    python benchmarks/load_server.py --preset smollm2-135m-toolcall --requests 40 \
        --message "Thanks, that's all for today!"     # a turn the embedded target declines

Every request sends the same user ``--message`` with one weather tool.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
import httpx

MAX_REQUESTS = 1000
MAX_CONCURRENCY = 64
LOOPBACK = {"127.0.0.1", "localhost", "::1"}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                "required": ["city"],
            },
        },
    }
]
RECORDED = ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>']


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def own_server(args: argparse.Namespace) -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        command = [sys.executable, "-m", "ooo_agent.cli", "serve", "--port", str(port),
                   "--model-name", "load-test", "--log-level", "error",
                   "--max-concurrency", str(args.server_concurrency)]  # fmt: skip
        if args.preset:
            command += ["--preset", args.preset]
        else:
            recorded = Path(tmp) / "recorded.json"
            recorded.write_text(json.dumps(RECORDED), encoding="utf-8")
            command += ["--replay", str(recorded)]
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            line: list[str] = []
            reader = threading.Thread(target=lambda: line.append(server.stdout.readline()), daemon=True)  # type: ignore[union-attr]
            reader.start()
            reader.join(timeout=args.start_timeout)
            if not line or not line[0].startswith("serving"):
                raise SystemExit(f"server did not start (exit code {server.poll()})")
            print(line[0].strip(), file=sys.stderr)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            server.terminate()
            server.wait(timeout=10)


async def load(
    base_url: str,
    model: str,
    requests: int,
    concurrency: int,
    timeout: float,
    message: str = "Weather in Paris?",
) -> dict[str, Any]:
    latencies: list[float] = []
    failures: list[str] = []
    limiter = anyio.Semaphore(concurrency)
    body = {"model": model, "messages": [{"role": "user", "content": message}], "tools": TOOLS}
    calls = 0

    async def one(client: httpx.AsyncClient) -> None:
        async with limiter:
            started = time.perf_counter()
            try:
                response = await client.post("/chat/completions", json=body)
                reply = response.json()["choices"][0]["message"] if response.status_code == 200 else None
                if reply is None:
                    failures.append(f"HTTP {response.status_code}: {response.text[:200]}")
                    return
                if reply.get("tool_calls"):
                    nonlocal calls
                    calls += 1
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
                return
            latencies.append(time.perf_counter() - started)

    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits) as client:
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(requests):
                tg.start_soon(one, client)
        elapsed = time.perf_counter() - started

    ordered = sorted(latencies)

    def percentile(q: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {
        "requests": requests,
        "concurrency": concurrency,
        "ok": len(latencies),
        "failed": len(failures),
        "answered_with_calls": calls,
        "p50_ms": percentile(0.50),
        "p99_ms": percentile(0.99),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 2) if ordered else None,
        "throughput_rps": round(len(latencies) / elapsed, 2) if elapsed > 0 else None,
        "elapsed_s": round(elapsed, 3),
        "first_failures": failures[:3],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--url", help="an already running server on loopback, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="load-test", help="model id to request with --url")
    parser.add_argument("--message", default="Weather in Paris?", help="the user message sent")
    parser.add_argument("--preset", help="start the server on this embedded model instead of replay")
    parser.add_argument("--server-concurrency", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0, help="per-request timeout (s)")
    parser.add_argument("--start-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    if not 1 <= args.requests <= MAX_REQUESTS:
        parser.error(f"--requests must be in 1..{MAX_REQUESTS}")
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        parser.error(f"--concurrency must be in 1..{MAX_CONCURRENCY}")
    if args.url and urlparse(args.url).hostname not in LOOPBACK:
        parser.error("--url must be a loopback address")

    if args.url:
        report = anyio.run(
            load, args.url, args.model, args.requests, args.concurrency, args.timeout, args.message
        )
    else:
        with own_server(args) as url:
            report = anyio.run(
                load, url, "load-test", args.requests, args.concurrency, args.timeout, args.message
            )
    print(json.dumps(report))
    return 0 if report["failed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
