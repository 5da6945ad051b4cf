"""The official ``openai`` client against ``ooo-agent serve``.

Starts the server on a free loopback port (embedded model, or recorded outputs when it is
unavailable), then: a tool call, the tool's result sent back for a text answer, the same call
streamed (deltas reassembled), and ``tool_choice="none"`` for plain text.

    python examples/openai_client.py
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import replay_forced, tool_call
from openai import OpenAI

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": 'The city name, e.g. "Paris".'},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]

# The embedded model's outputs for the four requests below, in order.
RECORDED = [
    tool_call("get_weather", '{"city": "Paris"}'),
    "It is 21 degrees and sunny in Paris.",
    tool_call("get_weather", '{"city": "Paris"}'),
    "Paris is the capital of France.",
]


def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    return {"city": city, "temperature": 21, "unit": unit, "sky": "sunny"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_server(api_key: str) -> Iterator[str]:
    """``ooo-agent serve`` in a subprocess; yields its base URL once it listens."""
    with tempfile.TemporaryDirectory() as tmp:
        recorded = Path(tmp) / "recorded.json"
        recorded.write_text(json.dumps(RECORDED), encoding="utf-8")
        port = free_port()
        source = "--replay" if replay_forced() else "--fallback-replay"
        command = [sys.executable, "-m", "ooo_agent.cli", "serve", source, str(recorded),
                   "--port", str(port), f"--api-key={api_key}", "--log-level", "error"]  # fmt: skip
        server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            ready: list[str] = []
            # Loading the embedded model can take a while; read the ready line off-thread.
            reader = threading.Thread(target=lambda: ready.append(server.stdout.readline()), daemon=True)  # type: ignore[union-attr]
            reader.start()
            reader.join(timeout=300)
            if not ready or not ready[0].startswith("serving"):
                raise RuntimeError(f"server did not start (exit code {server.poll()})")
            print(f"[server] {ready[0].strip()}")
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    api_key = secrets.token_urlsafe(16)
    with running_server(api_key) as base_url:
        client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
        model = client.models.list().data[0].id
        messages: list[Any] = [{"role": "user", "content": "What's the weather in Paris?"}]

        # 1. A tool call, in OpenAI's shape: arguments arrive as a JSON string.
        raw = client.chat.completions.with_raw_response.create(model=model, messages=messages, tools=TOOLS)
        completion = raw.parse()
        message = completion.choices[0].message
        print(f"finish_reason: {completion.choices[0].finish_reason}")
        print(f"x-ooo-stats: {raw.headers.get('x-ooo-stats')}")
        for call in message.tool_calls or []:
            print(f"tool call: {call.function.name}({call.function.arguments})")

        # 2. The client runs the tools (the server never does) and sends the results back.
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        answer = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        print(f"answer: {answer.choices[0].message.content}")

        # 3. The same request, streamed: argument deltas reassemble into the same call.
        stream = client.chat.completions.create(model=model, messages=messages[:1], tools=TOOLS, stream=True)
        names: dict[int, str] = {}
        arguments: dict[int, str] = {}
        for chunk in stream:
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or []:
                    if delta.function and delta.function.name:
                        names[delta.index] = delta.function.name
                    if delta.function and delta.function.arguments:
                        arguments[delta.index] = arguments.get(delta.index, "") + delta.function.arguments
        for index in sorted(names):
            print(f"streamed call: {names[index]}({arguments.get(index, '')})")

        # 4. tool_choice="none": the model sees no tools and answers in text.
        plain = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            tools=TOOLS,
            tool_choice="none",
        )
        print(f"tool_choice=none: {plain.choices[0].message.content}")


if __name__ == "__main__":
    main()
