"""The ``ooo-agent`` command line: --version, ``tools MODULE:ATTR``, error handling."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ooo_agent import __version__
from ooo_agent.cli import SUBCOMMANDS, main

TOOLS_MODULE = textwrap.dedent(
    '''
    from ooo_agent.tools import Toolset, tool

    def get_weather(city: str, days: int = 1) -> str:
        """Weather forecast.

        Args:
            city: City name.
            days: How many days.
        """
        return city

    @tool
    def get_time(tz: str) -> str:
        """Local time in a time zone."""
        return tz

    toolset = Toolset([get_weather, get_time])
    as_list = [get_weather, get_time]
    nested = type("NS", (), {"inner": get_time})
    not_tools = 42
    '''
)


@pytest.fixture
def tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "cli_demo_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return "cli_demo_tools"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ooo-agent {__version__}"


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "tools" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("attr", "names"),
    [
        ("toolset", ["get_weather", "get_time"]),
        ("as_list", ["get_weather", "get_time"]),
        ("get_weather", ["get_weather"]),
        ("get_time", ["get_time"]),
        ("nested.inner", ["get_time"]),
    ],
)
def test_tools_prints_openai_schemas(
    tools_module: str, attr: str, names: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", f"{tools_module}:{attr}"]) == 0
    schemas = json.loads(capsys.readouterr().out)
    assert [s["function"]["name"] for s in schemas] == names
    weather = next((s for s in schemas if s["function"]["name"] == "get_weather"), None)
    if weather is not None:
        params = weather["function"]["parameters"]
        assert weather["type"] == "function"
        assert params["required"] == ["city"]
        assert params["properties"]["city"]["type"] == "string"


def test_tools_from_a_file_path_and_as_table(
    tools_module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", f"{tools_module}.py:toolset", "--table"]) == 0
    out = capsys.readouterr().out
    assert "get_weather" in out and "days?" in out and "Local time" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expected MODULE:ATTRIBUTE"),
        ("surely_not_a_module_xyz:tools", "cannot import 'surely_not_a_module_xyz'"),
        ("cli_demo_tools:missing", "has no attribute 'missing'"),
        ("missing_file.py:x", "no such file"),
        ("cli_demo_tools:not_tools", "int"),
    ],
)
def test_tools_bad_targets_are_one_line_errors(
    tools_module: str, spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tools", spec]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_every_subcommand_has_a_handler() -> None:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    for add in SUBCOMMANDS:
        add(subparsers)
    assert "tools" in subparsers.choices
    for name, sub in subparsers.choices.items():
        assert callable(sub.get_default("handler")), name


def test_module_entry_point_runs() -> None:
    src = Path(__file__).resolve().parents[1] / "src"
    done = subprocess.run(
        [sys.executable, "-m", "ooo_agent.cli", "--version"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": ""},
        timeout=60,
    )
    assert done.returncode == 0 and __version__ in done.stdout
    assert "torch" not in done.stderr
