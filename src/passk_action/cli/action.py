"""``passk action``: the GitHub Action entrypoint (inputs come from the environment).

Defined here so that ``passk --help`` and ``passk action --help`` read like
every other command; it is run by the program (``passk_action/program.py``),
which hands the CLI the action's entry point: the CLI imports nothing of the
action.  ``--event-from BASE..HEAD`` is the command line's own: it writes the
``pull_request`` event a local run of the action reads (``GITHUB_EVENT_PATH``)
and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ..sides.gitrepo import GitRepo
from ..sides.pull_request import LOCAL_REPOSITORY, local_event, parse_range
from .common import add_label_argument, write_output


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "action",
        help="run as the GitHub Action: inputs from INPUT_* and the event from GITHUB_EVENT_PATH",
        description="Run as the GitHub Action. For a local run, --event-from BASE..HEAD "
        "writes the event file instead (then GITHUB_EVENT_PATH=FILE passk action); "
        "`passk compare --base BASE` gives the same verdict without one.",
    )
    parser.add_argument(
        "--event-from",
        metavar="BASE..HEAD",
        help="write a pull_request event for a pull request of HEAD into BASE (two refs of "
        "the repository in the current folder) and exit, instead of running the action",
    )
    parser.add_argument(
        "--out", default=None, help="with --event-from: the event file (default: stdout)"
    )
    parser.add_argument(
        "--pr", type=int, default=1, help="with --event-from: the pull request's number"
    )
    add_label_argument(parser, "with --event-from: a label on the pull request (repeatable)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int | None:
    """Write the event for --event-from; otherwise None: the action itself runs (delegated)."""
    if args.event_from is None:
        return None
    base, head = parse_range(args.event_from)
    payload = local_event(
        GitRepo.discover(Path.cwd()),
        base,
        head,
        number=args.pr,
        labels=args.labels,
        repository=os.environ.get("GITHUB_REPOSITORY") or LOCAL_REPOSITORY,
    )
    write_output(args.out, json.dumps(payload, indent=2))
    return 0
