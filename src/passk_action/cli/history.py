"""``passk history``: each row's class in the last N baselines committed on a branch.

Read from the git history of ``baseline.artifact`` (nothing else is
stored, no agent runs): the three numbers of each baseline, then the rows
that flipped, joined, left the dataset or the ratchet, and the dataset's
rows that no baseline measured yet.  ``--json`` gives the same as data,
``--html`` a page with the three numbers drawn over the baselines.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import EXIT_OK, DatasetError, UsageError
from ..inputs.config import load_config
from ..inputs.dataset import load_dataset
from ..report.history import history_json, history_text
from ..report.history_html import render_history_html
from ..sides.history import history_at
from .common import add_config_argument, warn, write_output
from .paths import project_files, refuse_clobbering

DEFAULT_LAST = 10


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "history",
        help="each row's class in the last N baselines committed on a branch (from git)",
        description="Each row's class in the last N baselines committed on a branch, read "
        "from the git history of baseline.artifact: rows that flipped, rows that are new, "
        "rows that left the ratchet. Runs no agent.",
    )
    add_config_argument(parser)
    parser.add_argument(
        "--base",
        default="HEAD",
        metavar="REF",
        help="the branch (or any commit) whose baselines to read (default: HEAD)",
    )
    parser.add_argument(
        "--last",
        type=int,
        default=DEFAULT_LAST,
        metavar="N",
        help=f"how many baselines, newest first (default: {DEFAULT_LAST})",
    )
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print the history as JSON")
    shape.add_argument(
        "--html", action="store_true", help="a self-contained page: the numbers drawn over time"
    )
    parser.add_argument("--out", default=None, help="write here instead of stdout")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.last < 1:
        raise UsageError("--last must be at least 1", where="--last")
    loaded = load_config(Path(args.config))
    for message in loaded.warnings:
        warn(message)
    config = loaded.config
    refuse_clobbering(
        {
            **project_files(config.path, config.dataset),
            f"the baseline artifact ({config.baseline.artifact})": config.baseline.artifact,
        },
        {"--out": None if args.out == "-" else args.out},
    )
    history = history_at(config.path.parent, config.baseline.artifact, args.base, last=args.last)
    ids: list[str] | None
    try:
        ids = [
            row.id
            for row in load_dataset(config.dataset, config.must_not_break_tags, config.scoring).rows
        ]
    except DatasetError as exc:
        warn(f"the rows no baseline measured yet are not listed: {exc.one_line()}")
        ids = None
    if args.json:
        text = json.dumps(history_json(history, ids), indent=2, ensure_ascii=False)
    elif args.html:
        text = render_history_html(history)
    else:
        text = history_text(history, ids)
    write_output(args.out, text)
    return EXIT_OK
