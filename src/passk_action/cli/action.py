"""``passk action``: the GitHub Action entrypoint (inputs come from the environment).

Defined here so that ``passk --help`` and ``passk action --help`` read like
every other command; it is run by the program (``passk_action/program.py``),
which hands the CLI the action's entry point: the CLI imports nothing of the
action.
"""

from __future__ import annotations

import argparse
from typing import Any

DELEGATED = None
"""The handler of a command another part runs (``main`` gets it as ``delegated``)."""


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "action",
        help="run as the GitHub Action: inputs from INPUT_* and the event from GITHUB_EVENT_PATH",
    )
    parser.set_defaults(handler=DELEGATED)
