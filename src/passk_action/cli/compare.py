"""``passk compare``: baseline vs candidate, confirmation of lost rows, and the gate."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..agents.runner import Agent
from ..core.model import Version
from ..engine import CompareInputs, close_agent, compare
from ..errors import EXIT_GATE_FAILED, EXIT_OK, ArtifactError
from ..report.markdown import render_compare_report
from ..store.artifact import read_run
from ..store.results import write_result
from .common import (
    add_config_argument,
    add_run_arguments,
    load_inputs,
    make_session,
    prepare_agent,
    stop_on_signals,
    write_output,
)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "compare", help="compare the candidate with the baseline and decide the gate"
    )
    add_config_argument(parser)
    parser.add_argument(
        "--baseline", default=None, help="baseline artifact (default: baseline.artifact)"
    )
    parser.add_argument(
        "--candidate", default=None, help="a recorded candidate run instead of running `agent`"
    )
    parser.add_argument("--json", default=None, dest="json_out", help="write the result JSON here")
    parser.add_argument(
        "--markdown", default=None, help="write the Markdown report here (default: stdout)"
    )
    parser.add_argument(
        "--candidate-out",
        default=None,
        help="where the candidate run is recorded (default: .passk/candidate.json by the config)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted candidate run"
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    inputs = load_inputs(args.config)
    config = inputs.config
    baseline_path = Path(args.baseline) if args.baseline else config.baseline.artifact
    if not baseline_path.exists():
        raise ArtifactError(
            "no baseline artifact",
            where=str(baseline_path),
            hint="record one with `passk baseline` and commit it",
        )
    baseline = read_run(baseline_path)
    candidate = read_run(Path(args.candidate)) if args.candidate else None
    built: dict[Version, Agent | None] = {}
    concurrency = args.concurrency if args.concurrency is not None else config.concurrency

    def agents(version: Version) -> Agent | None:
        """Built on first use: a compare that reuses everything starts no agent."""
        if version not in built:
            spec = config.agent if version is Version.CANDIDATE else config.baseline.agent
            built[version] = (
                prepare_agent(spec, version, concurrency=concurrency) if spec else None
            )
        return built[version]

    candidate_out = (
        Path(args.candidate_out)
        if args.candidate_out
        else config.path.parent / ".passk" / "candidate.json"
    )
    try:
        with stop_on_signals() as stop:
            result = compare(
                CompareInputs(
                    config=config,
                    dataset=inputs.dataset,
                    baseline=baseline,
                    candidate=candidate,
                    candidate_out=candidate_out,
                    agents=agents,
                    resume=args.resume,
                ),
                make_session(config, args, stop),
            )
    finally:
        for agent in built.values():
            if agent is not None:
                close_agent(agent)
    if args.json_out:
        write_result(result, Path(args.json_out))
    write_output(args.markdown, render_compare_report(result))
    return EXIT_OK if result.gate.passed else EXIT_GATE_FAILED
