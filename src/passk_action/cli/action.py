"""``passk action``: the GitHub Action entrypoint (inputs come from the environment)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "action",
        help="run as the GitHub Action: inputs from INPUT_* and the event from GITHUB_EVENT_PATH",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # Imported here: the action package uses cli.common, and importing it while
    # the cli package is still initializing would bind a half-built module.
    from ..action.main import main

    return main()
