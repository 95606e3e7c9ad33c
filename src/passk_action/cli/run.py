"""``passk run``: run one agent version k times per row and write the artifact."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.model import Version
from ..core.shard import parse_shard, shard_rows
from ..engine.measuring import Measurement
from ..errors import EXIT_OK, ConfigError
from ..sides.provenance import working_tree_provenance
from ..store.artifact import write_run
from .common import add_config_argument, add_run_arguments, load_inputs, record_agent_run
from .paths import project_files, refuse_clobbering, run_outputs


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "run", help="run an agent k times per row and record every attempt"
    )
    add_config_argument(parser)
    parser.add_argument("--out", required=True, help="where to write the run artifact (JSON)")
    parser.add_argument(
        "--version",
        choices=[v.value for v in Version],
        default=Version.CANDIDATE.value,
        dest="agent_version",
        help="run `agent` (candidate, default) or `baseline.agent` (baseline)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted run of the same --out"
    )
    parser.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only shard I of N (a deterministic, balanced subset of rows); "
        "join the shards with `passk merge`",
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    inputs = load_inputs(args.config)
    config = inputs.config
    version = Version(args.agent_version)
    agent_config = config.agent
    if version is Version.BASELINE:
        if config.baseline.agent is None:
            raise ConfigError(
                "--version baseline needs a baseline agent",
                where=f"{config.path}: baseline.agent",
                hint="add baseline.agent with the command of the production version",
            )
        agent_config = config.baseline.agent
    if agent_config is None:
        agent_config = config.require_agent("`passk run`")
    refuse_clobbering(
        project_files(config.path, config.dataset), run_outputs("--out", Path(args.out))
    )
    shard = parse_shard(args.shard) if args.shard is not None else None
    rows = inputs.dataset.rows if shard is None else shard_rows(inputs.dataset.rows, shard)
    provenance = working_tree_provenance(inputs.config.path.parent, inputs.config)
    what = Measurement(
        inputs.dataset, rows, inputs.config.settings, Path(args.out), resume=args.resume
    )
    run = record_agent_run(inputs, agent_config, args, what, version=version, provenance=provenance)
    if shard is not None:
        # Label the artifact so `passk merge` can tell a missing or doubled shard.
        write_run(run, Path(args.out), shard)
    where = f" (shard {shard}: {len(rows)} of {len(inputs.dataset.rows)} rows)" if shard else ""
    print(f"passk: recorded {len(run.attempts)} attempts to {args.out}{where}")
    return EXIT_OK
