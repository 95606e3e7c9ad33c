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

from ..errors import UsageError
from ..github.local_event import EventSide, local_repository, pull_request_event
from ..sides.gitrepo import GitRepo
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


def parse_range(text: str) -> tuple[str, str]:
    """``BASE..HEAD`` as its two refs; anything else is a usage error saying the form."""
    base, dots, head = text.partition("..")
    if not dots or not base or not head or head.startswith("."):
        raise UsageError(
            f"--event-from {text!r} is not BASE..HEAD",
            where="--event-from",
            hint="name two refs, e.g. --event-from main..HEAD",
        )
    return base, head


def handle(args: argparse.Namespace) -> int | None:
    """Write the event for --event-from; otherwise None: the action itself runs (delegated)."""
    if args.event_from is None:
        return None
    base, head = parse_range(args.event_from)
    repo = GitRepo.discover(Path.cwd())
    # The head's ref is its branch when HEAD is on one, as GitHub names it.
    head_ref = (repo.current_branch() if head == "HEAD" else None) or head
    payload = pull_request_event(
        args.pr,
        EventSide(repo.resolve(base), base, base),
        EventSide(repo.resolve(head), head_ref, head),
        labels=args.labels,
        repository=local_repository(os.environ),
    )
    write_output(args.out, json.dumps(payload, indent=2))
    return 0
