"""``passk baseline``: record this checkout's agent as the new baseline, ratchet carried forward."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from ..core.model import Version
from ..engine.measuring import (
    Measurement,
    install_baseline,
    previous_baseline,
    rows_to_measure,
)
from ..errors import EXIT_OK, ConfigError
from ..sides.provenance import working_tree_provenance
from ..store.side_files import beside
from .common import add_config_argument, add_run_arguments, load_inputs, record_agent_run, warn
from .paths import project_files, refuse_clobbering, run_outputs


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "baseline",
        help="run `agent` (this checkout) and write baseline.artifact, to be committed",
    )
    add_config_argument(parser)
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted baseline run"
    )
    parser.add_argument(
        "--commit",
        default=None,
        help="the git commit being recorded (default: HEAD of the config's repository)",
    )
    parser.add_argument(
        "--agent",
        choices=["agent", "baseline.agent"],
        default="agent",
        dest="agent_key",
        help="which configured agent to record (default: agent, the version in this checkout; "
        "baseline.agent bootstraps a baseline from the production command)",
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    inputs = load_inputs(args.config)
    config, dataset = inputs.config, inputs.dataset
    out = config.baseline.artifact
    staging = beside(out, ".recording.json")
    refuse_clobbering(
        project_files(config.path, config.dataset),
        {"baseline.artifact": out, **run_outputs("its recording", staging)},
    )
    previous = previous_baseline(out)
    agent_config = config.agent
    if args.agent_key == "baseline.agent":
        if config.baseline.agent is None:
            raise ConfigError(
                "--agent baseline.agent needs a baseline agent",
                where=f"{config.path}: baseline.agent",
                hint="add baseline.agent, or record `agent` (the default)",
            )
        agent_config = config.baseline.agent
    if agent_config is None:
        agent_config = config.require_agent("`passk baseline`")
    # Record to a side file first: the committed baseline is replaced only
    # once the new run is complete and its ratchet computed.
    provenance = working_tree_provenance(config.path.parent, config)
    if provenance.dirty:
        warn(
            "the working tree has uncommitted changes: the baseline records them "
            "(commit the agent's files first so the baseline matches a commit)"
        )
    what = Measurement(
        dataset,
        dataset.rows,
        config.settings,
        staging,
        resume=args.resume,
        measured=rows_to_measure(
            config.gate.rule, dataset.rows, previous.ratchet if previous is not None else ()
        ),
    )
    if args.commit is not None:  # a commit named: what the working tree holds is not asked
        provenance = replace(provenance, commit=args.commit or provenance.commit, dirty=False)
    run = record_agent_run(
        inputs, agent_config, args, what, version=Version.BASELINE, provenance=provenance
    )
    run, left = install_baseline(previous, run, dataset, staging, out)
    for row_id in left:
        warn(f"row {row_id!r} left the ratchet: it is no longer in the dataset")
    print(
        f"passk: baseline recorded to {out} ({len(run.attempts)} attempts, "
        f"{len(run.ratchet)} rows locked by the ratchet)"
    )
    return EXIT_OK
