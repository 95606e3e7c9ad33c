"""``passk merge``: join the artifacts of ``passk run --shard I/N`` into one run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import EXIT_OK
from ..store.artifact import write_run
from ..store.merge import merge_runs, read_shard_run
from .common import add_config_argument, load_inputs
from .paths import project_files, refuse_clobbering


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "merge",
        help="join shard artifacts (passk run --shard I/N) into the run one machine would record",
    )
    add_config_argument(parser)
    parser.add_argument("--out", required=True, help="where to write the merged run artifact")
    parser.add_argument("shards", nargs="+", metavar="SHARD", help="the shard artifacts")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # The dataset is what proves completeness: every row in exactly one shard.
    inputs = load_inputs(args.config)
    config = inputs.config
    refuse_clobbering(
        {
            **project_files(config.path, config.dataset),
            **{f"shard {shard}": shard for shard in args.shards},
        },
        {"--out": args.out},
    )
    parts = [read_shard_run(Path(path)) for path in args.shards]
    merged = merge_runs(parts, inputs.dataset)
    write_run(merged, Path(args.out))
    print(
        f"passk: merged {len(parts)} artifact(s): {len(merged.rows)} rows, "
        f"{len(merged.attempts)} attempts to {args.out}"
    )
    return EXIT_OK
