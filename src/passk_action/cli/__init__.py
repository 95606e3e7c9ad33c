"""The ``passk`` command line: one module per subcommand.

Subcommand modules are imported only when their command runs: they pull in
jsonschema, requests, yaml and markdown-it, and ``passk --version`` or
``passk --help`` need none of that (start-up went from 0.3 s to a few
hundredths).  ``COMMANDS`` holds what the top-level help shows; each module's
``add_parser`` defines its command fully when it is the one chosen.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import NoReturn

from .. import __version__
from ..errors import EXIT_USAGE, UsageError, run_guarded

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run an agent k times per row and record every attempt"),
    "baseline": (
        "baseline",
        "run `agent` (this checkout) and write baseline.artifact, to be committed",
    ),
    "report": ("report", "report mean accuracy, pass^k and flip rate of a run artifact or result"),
    "compare": ("compare", "compare the candidate with the baseline and decide the gate"),
    "gate": ("gate", "re-derive the gate decision from a result file (no agent runs)"),
    "plan": (
        "plan",
        "print the gate's false-block and catch rates for a config, and settings for targets",
    ),
    "add": ("add", "add a failing input (e.g. from production) to the dataset as a new row"),
    "history": (
        "history",
        "each row's class in the last N baselines committed on a branch (from git)",
    ),
    "merge": (
        "merge",
        "join shard artifacts (passk run --shard I/N) into the run one machine would record",
    ),
    "action": (
        "action",
        "run as the GitHub Action: inputs from INPUT_* and the event from GITHUB_EVENT_PATH",
    ),
    "import": (
        "importer",
        "turn tau-bench, Inspect or promptfoo results with repeated trials into a run",
    ),
}
"""Command name -> (module in this package, one-line help), in help order."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other input error."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, where=self.prog, hint=f"see `{self.prog} --help`")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with every command fully defined, or only the one ``argv`` names.

    The top level takes no option with a value, so the first argument not
    starting with ``-`` is the command; the others get a placeholder that
    only carries their help line.
    """
    parser = _Parser(
        prog="passk",
        description="Gate an LLM agent on the reliability of its decisions: "
        "mean accuracy, pass^k and flip rate, row by row.",
    )
    parser.add_argument("--version", action="version", version=f"passk {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, (module_name, help_text) in COMMANDS.items():
        if chosen is None or name == chosen:
            load_command(module_name).add_parser(commands)
        else:
            commands.add_parser(name, help=help_text, add_help=False)
    return parser


def load_command(module_name: str) -> ModuleType:
    """The subcommand module ``module_name`` (imported now, on first use)."""
    return importlib.import_module(f"{__name__}.{module_name}")


def main(
    argv: Sequence[str] | None = None,
    *,
    delegated: Mapping[str, Callable[[], int]] | None = None,
) -> int:
    """Run one subcommand; exit 0 (ok / gate passed), 1 (gate failed), 2 (usage or input).

    ``delegated`` runs the commands another part implements (``passk action``,
    given by ``passk_action/program.py``): the CLI parses them, never imports them.
    """
    args_list = sys.argv[1:] if argv is None else list(argv)

    def run() -> int:
        parser = build_parser(args_list)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exc:  # --help and --version
            return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
        # A handler may leave the command to the part that implements it (None).
        handler: Callable[[argparse.Namespace], int | None] | None = args.handler
        code = handler(args) if handler is not None else None
        if code is None:
            entry = (delegated or {}).get(args.command)
            if entry is None:
                raise UsageError(
                    f"`passk {args.command}` is not run by the command line alone",
                    where=f"passk {args.command}",
                    hint="run it as `passk` (passk_action.program:main) or "
                    "`python -m passk_action`",
                )
            return entry()
        return code

    return run_guarded(
        run,
        error=lambda line: print(f"passk: error: {line}", file=sys.stderr),
        fatal=lambda line: print(f"passk: {line}", file=sys.stderr),
        traceback_to=(lambda text: print(text, end="", file=sys.stderr))
        if os.environ.get("PASSK_DEBUG")
        else None,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
