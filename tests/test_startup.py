"""``passk --version`` and ``passk --help`` start without the heavy modules.

Start-up time is a benchmark matter (bench/README.md); what a test can pin
without timing anything is the cause: the top-level parser must not import
the subcommands, which pull in jsonschema, requests, yaml and markdown-it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from passk_action.cli import COMMANDS, build_parser, load_command

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("jsonschema", "requests", "yaml", "markdown_it", "urllib3")

PROBE = """
import contextlib, io, json, sys
from passk_action.program import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def probe(*argv: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_heavy_module(argv: list[str]) -> None:
    result = probe(*argv)
    assert result["code"] == 0
    modules = result["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []
    loaded = [m for m in modules if m.startswith("passk_action.cli.")]
    assert loaded == [], f"subcommand modules imported up front: {loaded}"


def test_help_lists_every_command_with_its_own_help_line() -> None:
    out = probe("--help")["out"]
    assert isinstance(out, str)
    for name in COMMANDS:
        assert f"    {name} " in out


def test_the_help_lines_are_the_subcommands_own() -> None:
    """The registry's help line is the one each module gives its command."""
    full = build_parser()
    actions = [a for a in full._actions if a.dest == "command"]
    choices = {a.dest: a.help for a in actions[0]._choices_actions}  # type: ignore[attr-defined]
    assert choices == {name: help_text for name, (_, help_text) in COMMANDS.items()}


def test_the_chosen_command_is_defined_in_full() -> None:
    result = probe("import", "--help")
    assert result["code"] == 0
    assert "--from" in str(result["out"])
    assert "passk_action.cli.importer" in list(result["modules"])  # type: ignore[arg-type]
    assert all(load_command(module).add_parser for module, _ in COMMANDS.values())


def test_the_action_is_a_command_the_cli_parses_but_does_not_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`passk action` reaches the action only through the program, which wires the two."""
    from passk_action.cli import main

    assert main(["action"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("passk: error: passk action: `passk action` is not run by the command")
    assert main(["action"], delegated={"action": lambda: 7}) == 7
    result = probe("action", "--help")
    assert result["code"] == 0 and "usage: passk action" in str(result["out"])
    modules = result["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith("passk_action.action")] == []
