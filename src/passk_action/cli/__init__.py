"""The ``passk`` command line: one module per subcommand, one place for exit codes."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..errors import EXIT_INTERRUPTED, EXIT_USAGE, PasskError, UsageError, exit_code_for
from . import action, baseline, compare, gate, importer, merge, report, run

SUBCOMMANDS = (run, baseline, report, compare, gate, merge, action, importer)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other input error."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, where=self.prog, hint=f"see `{self.prog} --help`")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="passk",
        description="Gate an LLM agent on the reliability of its decisions: "
        "mean accuracy, pass^k and flip rate, row by row.",
    )
    parser.add_argument("--version", action="version", version=f"passk {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; exit 0 (ok / gate passed), 1 (gate failed), 2 (usage or input)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"passk: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:  # --help and --version
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    try:
        code: int = args.handler(args)
        return code
    except PasskError as exc:
        print(f"passk: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("passk: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug in passk: one line, the traceback only on request
        if os.environ.get("PASSK_DEBUG"):
            traceback.print_exc()
        print(
            f"passk: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
            "(set PASSK_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return exit_code_for(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
