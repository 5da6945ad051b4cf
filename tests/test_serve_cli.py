"""``ooo-agent serve``'s options: the target, sidecar, server tools and caller that
:func:`build_app` builds, and the one-line startup errors (exit status 2). No model is loaded:
the preset loaders are replaced by fakes and the target replays recorded outputs."""

from __future__ import annotations

import argparse
import json
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from ooo_agent import Hint, HintBox, SidecarRequest
from ooo_agent.cli import build_parser, main
from ooo_agent.errors import ModelNotAvailableError
from ooo_agent.integrations import _serve
from ooo_agent.sidecar import OpenAISidecar
from ooo_agent.sidecar.prompts import chatml_prompt
from ooo_agent.targets.replay import ReplayTarget

TOOLS_MODULE = textwrap.dedent(
    '''
    from ooo_agent.tools import Toolset, tool

    @tool(read_only=True)
    def get_weather(city: str) -> str:
        """Current weather in a city.

        Args:
            city: City name.
        """
        return f"sunny in {city}"

    @tool
    def book_table(city: str) -> str:
        """Book a table (has side effects).

        Args:
            city: City name.
        """
        return "booked"

    as_list = [get_weather, book_table]
    toolset = Toolset([get_weather, book_table])
    not_tools = 42
    '''
)


class NullSidecar:
    """A sidecar that predicts nothing (these tests only check which one is wired in)."""

    async def wave(self, request: SidecarRequest, box: HintBox) -> Hint:
        box.finish()
        return Hint(None, {}, True)


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_serve.API_KEY_ENV, raising=False)
    monkeypatch.delenv(_serve.SIDECAR_API_KEY_ENV, raising=False)


@pytest.fixture
def replay(tmp_path: Path) -> Path:
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(["It is sunny."]))
    return path


@pytest.fixture
def tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "serve_cli_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "serve_cli_tools"


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The preset target replays; preset sidecars are fakes; returns the sidecars loaded."""
    names: list[str] = []

    def load_sidecar(name: str) -> NullSidecar:
        names.append(name)
        return NullSidecar()

    monkeypatch.setattr(_serve, "load_preset_target", lambda name: ReplayTarget(["hi"]))
    monkeypatch.setattr(_serve, "load_preset_sidecar", load_sidecar)
    return names


class TemplateTokenizer:
    """A tokenizer stand-in whose chat template names the spec it was looked up with."""

    chat_template = "fake"

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def apply_chat_template(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        return f"<{self.spec}> " + " | ".join(m["content"] for m in messages)


@pytest.fixture
def tokenizers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokenizer lookup returns :class:`TemplateTokenizer`; returns the specs looked up."""
    specs: list[str] = []

    def lookup(spec: str) -> TemplateTokenizer:
        specs.append(spec)
        return TemplateTokenizer(spec)

    monkeypatch.setattr("ooo_agent.models.presets.load_tokenizer", lookup)
    return specs


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def startup_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one stderr line of a ``serve`` that must not start (exit status 2)."""
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_options_parse() -> None:
    args = parse()
    assert (args.sidecar, args.sidecar_model, args.server_tools, args.preexecute) == (
        None,
        "sidecar",
        [],
        True,
    )
    assert (args.sidecar_template, args.sidecar_api_key) == (None, None)
    args = parse(
        "--sidecar", "none", "--sidecar-model", "lora", "--no-preexecute",
        "--server-tools", "a:b", "--server-tools", "c:d",
    )  # fmt: skip
    assert (args.sidecar, args.sidecar_model, args.server_tools, args.preexecute) == (
        "none",
        "lora",
        ["a:b", "c:d"],
        False,
    )


def test_replay_has_no_sidecar_unless_asked(replay: Path, loaded: list[str]) -> None:
    built = _serve.build_app(parse("--replay", str(replay)))
    assert built.caller.sidecar is None and built.caller.preexecute
    assert isinstance(built.caller.target, ReplayTarget) and loaded == []
    assert built.line.startswith("serving 'replay' (recorded outputs) on http://127.0.0.1:8000/v1")
    assert "sidecar none" in built.line and built.notes == ()

    built = _serve.build_app(parse("--replay", str(replay), "--sidecar", "smollm2-135m-sidecar"))
    assert isinstance(built.caller.sidecar, NullSidecar) and loaded == ["smollm2-135m-sidecar"]
    assert "sidecar smollm2-135m-sidecar" in built.line


def test_the_embedded_target_gets_its_sidecar_by_default(loaded: list[str]) -> None:
    built = _serve.build_app(parse())
    assert isinstance(built.caller.sidecar, NullSidecar)
    assert loaded == ["smollm2-135m-sidecar"]
    assert "(embedded model smollm2-135m-toolcall)" in built.line
    assert "sidecar smollm2-135m-sidecar" in built.line


def test_decline_below_reaches_the_embedded_target(
    monkeypatch: pytest.MonkeyPatch, replay: Path
) -> None:
    asked: list[dict[str, Any]] = []

    def load_target(name: str, **options: Any) -> ReplayTarget:
        asked.append(options)
        return ReplayTarget(["hi"])

    monkeypatch.setattr(_serve, "load_preset_target", load_target)
    monkeypatch.setattr(_serve, "load_preset_sidecar", lambda name: NullSidecar())
    for argv, options in [
        ((), {}),  # the preset's own threshold
        (("--decline-below", "0.9"), {"decline_below": 0.9}),
        (("--decline-below", "off"), {"decline_below": None}),
    ]:
        _serve.build_app(parse(*argv))
        assert asked.pop() == options
    with pytest.raises(SystemExit):
        parse("--decline-below", "1.5")
    with pytest.raises(_serve.StartupError, match="--decline-below applies to an embedded model"):
        _serve.build_app(parse("--replay", str(replay), "--decline-below", "0.5"))


def test_the_embedded_target_is_constrained_unless_a_flag_turns_one_off(
    monkeypatch: pytest.MonkeyPatch, replay: Path
) -> None:
    asked: list[dict[str, Any]] = []

    def load_target(name: str, **options: Any) -> ReplayTarget:
        asked.append(options)
        target = ReplayTarget(["hi"])
        for keyword, _ in _serve.SERVE_CONSTRAINTS:  # as HFTarget.from_preset sets them
            setattr(target, keyword, options.get(keyword, True))
        return target

    monkeypatch.setattr(_serve, "load_preset_target", load_target)
    monkeypatch.setattr(_serve, "load_preset_sidecar", lambda name: NullSidecar())
    line = _serve.build_app(parse()).line
    assert asked.pop() == {}  # the preset's own defaults: every constraint on
    assert "; constrained: names, mentioned, values" in line
    line = _serve.build_app(parse("--no-constrain-values")).line
    assert asked.pop() == {"constrain_values": False}
    assert line.endswith("; constrained: names, mentioned]")
    off = ("--no-constrain-names", "--no-constrain-mentioned", "--no-constrain-values")
    line = _serve.build_app(parse(*off)).line
    assert asked.pop() == dict.fromkeys(("constrain_names", "constrain_mentioned", "constrain_values"), False)
    assert "; unconstrained" in line
    with pytest.raises(_serve.StartupError, match="--no-constrain-names applies to an embedded model"):
        _serve.build_app(parse("--replay", str(replay), "--no-constrain-names"))


def test_the_startup_line_names_the_decline_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    target = ReplayTarget(["hi"])
    monkeypatch.setattr(_serve, "load_preset_target", lambda name, **options: target)
    monkeypatch.setattr(_serve, "load_preset_sidecar", lambda name: NullSidecar())
    assert "declines below" not in _serve.build_app(parse()).line  # a target without the policy
    target.decline_below = 0.98  # type: ignore[attr-defined]  # as HFTarget has it
    assert "; declines below 0.98" in _serve.build_app(parse()).line


def test_sidecar_none_switches_the_default_off(loaded: list[str]) -> None:
    built = _serve.build_app(parse("--sidecar", "none"))
    assert built.caller.sidecar is None and loaded == []
    assert "sidecar none" in built.line


def test_an_unavailable_default_sidecar_is_left_out_with_a_note(
    monkeypatch: pytest.MonkeyPatch, loaded: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    def unavailable(name: str) -> Any:
        raise ModelNotAvailableError(f"{name}: adapter not trained")

    monkeypatch.setattr(_serve, "load_preset_sidecar", unavailable)
    monkeypatch.setattr(
        "ooo_agent.integrations.server.serve", lambda app, **kwargs: kwargs["on_listening"]()
    )
    assert main(["serve"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("serving 'smollm2-135m-toolcall'") and "sidecar none" in out
    assert err.startswith("note: default sidecar 'smollm2-135m-sidecar' unavailable")
    assert "adapter not trained" in err


def test_an_explicit_sidecar_that_cannot_load_is_a_startup_error(
    monkeypatch: pytest.MonkeyPatch,
    replay: Path,
    loaded: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    def unavailable(name: str) -> Any:
        raise ModelNotAvailableError("the 'hf' extra is\nnot installed")

    monkeypatch.setattr(_serve, "load_preset_sidecar", unavailable)
    err = startup_error(capsys, "--replay", str(replay), "--sidecar", "smollm2-135m-sidecar")
    assert "cannot load sidecar 'smollm2-135m-sidecar'" in err and "extra is not installed" in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-such-sidecar", "unknown model preset 'no-such-sidecar'"),
        ("smollm2-135m-toolcall", "preset is a target model, not a sidecar"),
    ],
)
def test_a_sidecar_spec_that_is_no_sidecar_preset_is_refused(
    spec: str, message: str, replay: Path, loaded: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = startup_error(capsys, "--replay", str(replay), "--sidecar", spec)
    assert f"--sidecar {spec!r}" in err and message in err and loaded == []


def test_a_url_sidecar_is_an_openai_sidecar(replay: Path, tokenizers: list[str]) -> None:
    args = parse("--replay", str(replay), "--sidecar", "http://127.0.0.1:8001/v1")
    sidecar = _serve.build_app(args).caller.sidecar
    assert isinstance(sidecar, OpenAISidecar)
    assert (sidecar.url, sidecar.model) == ("http://127.0.0.1:8001/v1/completions", "sidecar")
    # The Qwen3 ChatML template by default, no tokenizer looked up, no bearer token sent.
    assert sidecar.template is chatml_prompt and tokenizers == [] and sidecar.headers == {}

    args = parse(
        "--replay", str(replay), "--sidecar", "https://gpu:9000", "--sidecar-model", "lora"
    )
    built = _serve.build_app(args)
    assert isinstance(built.caller.sidecar, OpenAISidecar)
    assert (built.caller.sidecar.url, built.caller.sidecar.model) == (
        "https://gpu:9000/v1/completions",
        "lora",
    )
    assert "sidecar https://gpu:9000 (model 'lora', template qwen3)" in built.line


def test_sidecar_template_renders_with_the_named_tokenizer(
    replay: Path, tokenizers: list[str]
) -> None:
    url = ["--replay", str(replay), "--sidecar", "http://127.0.0.1:8001"]
    built = _serve.build_app(parse(*url, "--sidecar-template", "smollm2-135m-sidecar"))
    sidecar = built.caller.sidecar
    assert isinstance(sidecar, OpenAISidecar) and tokenizers == ["smollm2-135m-sidecar"]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert sidecar.template(messages) == "<smollm2-135m-sidecar> s | u"
    assert "(model 'sidecar', template smollm2-135m-sidecar)" in built.line

    sidecar = _serve.build_app(parse(*url, "--sidecar-template", "QWEN3")).caller.sidecar
    assert isinstance(sidecar, OpenAISidecar) and sidecar.template is chatml_prompt
    assert tokenizers == ["smollm2-135m-sidecar"]  # qwen3 needs no tokenizer


@pytest.mark.parametrize(
    "sidecar", [[], ["--sidecar", "none"], ["--sidecar", "smollm2-135m-sidecar"]]
)
def test_sidecar_template_without_a_url_sidecar_is_a_startup_error(
    sidecar: list[str],
    loaded: list[str],
    tokenizers: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = startup_error(capsys, *sidecar, "--sidecar-template", "smollm2-135m-sidecar")
    assert "--sidecar-template only applies to an http(s):// --sidecar URL" in err
    assert loaded == [] and tokenizers == []


def test_a_sidecar_template_that_cannot_load_is_a_startup_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def lookup(spec: str) -> Any:
        raise ModelNotAvailableError(f"{spec!r} is neither a model preset\nnor a folder")

    def no_target(name: str) -> Any:
        raise AssertionError("the target is loaded after the template")

    monkeypatch.setattr("ooo_agent.models.presets.load_tokenizer", lookup)
    monkeypatch.setattr(_serve, "load_preset_target", no_target)
    url = ["--sidecar", "http://127.0.0.1:8001"]
    err = startup_error(capsys, *url, "--sidecar-template", "smollm2")
    assert "--sidecar-template 'smollm2': ModelNotAvailableError: 'smollm2' is neither" in err

    class NoTemplate:
        chat_template = None

    monkeypatch.setattr("ooo_agent.models.presets.load_tokenizer", lambda spec: NoTemplate())
    err = startup_error(capsys, *url, "--sidecar-template", "some/folder")
    assert "--sidecar-template 'some/folder': ValueError:" in err and "no chat template" in err


def test_the_sidecar_api_key_goes_to_the_url_sidecar_only(
    replay: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = ["--replay", str(replay), "--sidecar", "http://127.0.0.1:8001"]
    built = _serve.build_app(parse(*url, "--api-key", "server-key"))
    assert isinstance(built.caller.sidecar, OpenAISidecar) and built.caller.sidecar.headers == {}

    sidecar = _serve.build_app(parse(*url, "--sidecar-api-key", "k1")).caller.sidecar
    assert isinstance(sidecar, OpenAISidecar)
    assert sidecar.headers == {"Authorization": "Bearer k1"}

    monkeypatch.setenv(_serve.SIDECAR_API_KEY_ENV, "from-env")
    assert parse().sidecar_api_key == "from-env"
    sidecar = _serve.build_app(parse(*url)).caller.sidecar
    assert isinstance(sidecar, OpenAISidecar)
    assert sidecar.headers == {"Authorization": "Bearer from-env"}


def test_no_preexecute_reaches_the_caller(loaded: list[str]) -> None:
    built = _serve.build_app(parse("--no-preexecute"))
    assert built.caller.sidecar is not None and built.caller.preexecute is False
    assert "pre-execution off" in built.line


def test_a_mode_the_pair_cannot_run_is_a_startup_error(
    replay: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = startup_error(capsys, "--replay", str(replay), "--mode", "ooo")
    assert "cannot serve with these settings" in err and "'ooo'" in err


@pytest.mark.parametrize("attr", ["get_weather", "as_list", "toolset"])
def test_server_tools_from_a_module(tools_module: str, attr: str, replay: Path) -> None:
    args = parse(
        "--replay", str(replay), "--sidecar", "http://127.0.0.1:8001",
        "--server-tools", f"{tools_module}:{attr}",
    )  # fmt: skip
    built = _serve.build_app(args)
    expected = ["get_weather"] if attr == "get_weather" else ["get_weather", "book_table"]
    assert list(built.server_tools.names) == expected
    assert built.line.endswith("; server tools: get_weather]")
    never_run = [n for n in built.notes if "'book_table' is not read_only" in n]
    assert len(never_run) == (attr != "get_weather") and len(built.notes) == len(never_run)


def test_server_tools_without_a_sidecar_get_a_note(tools_module: str, replay: Path) -> None:
    args = parse("--replay", str(replay), "--server-tools", f"{tools_module}:get_weather")
    assert _serve.build_app(args).notes == (
        "--server-tools without a sidecar: nothing is pre-executed",
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz:tools", "cannot import 'no_such_module_xyz'"),
        ("serve_cli_tools:missing", "has no attribute 'missing'"),
        ("serve_cli_tools:not_tools", "cannot make tools from int"),
        ("serve_cli_tools", "expected MODULE:ATTRIBUTE"),
    ],
)
def test_bad_server_tools_are_startup_errors(
    tools_module: str,
    spec: str,
    message: str,
    replay: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = startup_error(capsys, "--replay", str(replay), "--server-tools", spec)
    assert f"--server-tools {spec!r}: " in err and message in err


def test_server_tools_with_a_repeated_name_are_a_startup_error(
    tools_module: str, replay: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = startup_error(
        capsys, "--replay", str(replay),
        "--server-tools", f"{tools_module}:get_weather", "--server-tools", f"{tools_module}:toolset",
    )  # fmt: skip
    assert "duplicate tool name 'get_weather'" in err


def test_run_serve_prints_notes_and_the_line_then_serves(
    tools_module: str,
    replay: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    served: list[dict[str, Any]] = []

    def fake_serve(app: Any, *, on_listening: Any, **kwargs: Any) -> None:
        served.append(kwargs)
        on_listening()

    monkeypatch.setattr("ooo_agent.integrations.server.serve", fake_serve)
    argv = ["--replay", str(replay), "--server-tools", f"{tools_module}:get_weather", "--port", "9"]
    assert main(["serve", *argv, "--api-key", "k"]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "serving 'replay' (recorded outputs) on http://127.0.0.1:9/v1 "
        "[bearer token required; mode vanilla; sidecar none; server tools: get_weather]\n"
    )
    assert err == "note: --server-tools without a sidecar: nothing is pre-executed\n"
    assert served == [{"host": "127.0.0.1", "port": 9, "log_level": "warning"}]


def test_serve_listens_before_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """``on_listening`` runs on a listening socket, before uvicorn starts: a client told
    "ready" there connects at once (its connection waits in the kernel's queue)."""
    import uvicorn
    from fastapi import FastAPI

    from ooo_agent.integrations.server import serve

    ran: list[list[socket.socket] | None] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: ran.append(sockets))
    bound: list[socket.socket] = []
    bind = uvicorn.Config.bind_socket
    monkeypatch.setattr(
        uvicorn.Config, "bind_socket", lambda self: bound.append(bind(self)) or bound[-1]
    )
    connected: list[tuple[Any, Any]] = []

    def on_listening() -> None:
        assert not ran  # uvicorn has not started
        [sock] = bound
        with socket.create_connection(sock.getsockname()[:2], timeout=5) as client:
            connected.append((client.getpeername()[:2], sock.getsockname()[:2]))

    serve(FastAPI(), host="127.0.0.1", port=0, on_listening=on_listening)
    [(peer, listening)] = connected
    assert peer == listening
    assert ran == [bound]
    assert bound[0].fileno() == -1  # closed once the server returned


def test_serve_command_refuses_bad_replay_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_list = tmp_path / "dict.json"
    not_a_list.write_text('{"a": 1}')
    for path, message in [
        (tmp_path / "missing.json", "cannot read"),
        (not_a_list, "non-empty JSON list"),
    ]:
        assert message in startup_error(capsys, "--replay", str(path))


def test_serve_command_without_model_or_fallback_fails_clearly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unavailable(name: str) -> Any:
        raise ModelNotAvailableError(f"preset {name} needs an adapter")

    monkeypatch.setattr(_serve, "load_preset_target", unavailable)
    err = startup_error(capsys)
    assert err.startswith("error: cannot load preset 'smollm2-135m-toolcall'") and "adapter" in err
