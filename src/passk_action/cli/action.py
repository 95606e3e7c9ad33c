"""``passk action``: the GitHub Action entrypoint (inputs come from the environment)."""

from __future__ import annotations

import argparse
from typing import Any

from ..action import main as action_main


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "action",
        help="run as the GitHub Action: inputs from INPUT_* and the event from GITHUB_EVENT_PATH",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    return action_main()
