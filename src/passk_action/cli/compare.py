"""``passk compare``: baseline vs candidate, confirmation of lost rows, and the gate."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.runner import Agent
from ..core.model import Run, Version
from ..engine import CompareInputs, close_agent, compare
from ..errors import EXIT_GATE_FAILED, EXIT_OK, ArtifactError, ConfigError
from ..inputs.config import AgentConfig, Config, parse_config_bytes
from ..report.markdown import render_compare_report
from ..store.artifact import read_run, run_from_json
from ..store.results import write_result
from .common import (
    add_config_argument,
    add_run_arguments,
    load_inputs,
    make_session,
    prepare_agent,
    stop_on_signals,
    warn,
    write_output,
)

if TYPE_CHECKING:
    from ..action.basecommit import StalePlan


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
    parser.add_argument(
        "--base",
        default=None,
        metavar="REF",
        help="gate as the pull request into REF would (e.g. main): REF's config, baseline "
        "artifact and ratchet; its agent runs the baseline side from a clean checkout of REF",
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # Imported here: the action package imports the CLI's helpers.
    from ..action.basecommit import working_tree_identity

    inputs = load_inputs(args.config)
    config = inputs.config
    candidate = read_run(Path(args.candidate)) if args.candidate else None
    identity = working_tree_identity(config.path.parent, config)
    concurrency = args.concurrency if args.concurrency is not None else config.concurrency
    candidate_out = (
        Path(args.candidate_out)
        if args.candidate_out
        else config.path.parent / ".passk" / "candidate.json"
    )
    built: dict[Version, Agent | None] = {}
    with contextlib.ExitStack() as stack:
        if args.base is not None:
            side = stack.enter_context(base_side(args, config))
            config, baseline = side.config, side.baseline
            specs = {Version.CANDIDATE: config.agent, Version.BASELINE: side.agent}
            extra: dict[str, Any] = {
                "ratchet_source": baseline,
                "remeasure": side.plan.remeasure,
                "stale_warning": side.plan.warning,
                "baseline_commit": side.sha,
                "baseline_fingerprint": side.plan.fingerprint,
                "confirm_hint": f"give the base config an `agent:` ({args.base} has none)",
            }
        else:
            baseline = _committed_baseline(args, config.baseline.artifact)
            specs = {Version.CANDIDATE: config.agent, Version.BASELINE: config.baseline.agent}
            extra = {}

        def agents(version: Version) -> Agent | None:
            """Built on first use: a compare that reuses everything starts no agent."""
            if version not in built:
                spec = specs[version]
                built[version] = (
                    prepare_agent(spec, version, concurrency=concurrency) if spec else None
                )
                agent = built[version]
                if agent is not None:
                    # Closed before the base checkout goes.
                    stack.callback(close_agent, agent)
            return built[version]

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
                    candidate_commit=identity.commit,
                    candidate_dirty=identity.dirty,
                    **extra,
                ),
                make_session(config, args, stop),
            )
    for message in result.warnings:
        if message != extra.get("stale_warning"):  # said before the runs began
            warn(message)
    if args.json_out:
        write_result(result, Path(args.json_out))
    write_output(args.markdown, render_compare_report(result))
    return EXIT_OK if result.gate.passed else EXIT_GATE_FAILED


def _committed_baseline(args: argparse.Namespace, default: Path) -> Run:
    baseline_path = Path(args.baseline) if args.baseline else default
    if not baseline_path.exists():
        raise ArtifactError(
            "no baseline artifact",
            where=str(baseline_path),
            hint="record one with `passk baseline` and commit it",
        )
    return read_run(baseline_path)


@dataclass(frozen=True)
class BaseSide:
    """The baseline side as a pull request into REF sees it."""

    sha: str
    config: Config
    """The working tree's agent and rows with every setting that protects the gate from REF."""
    baseline: Run
    agent: AgentConfig | None
    """REF's baseline agent, moved into the checkout of REF."""
    plan: StalePlan


@contextlib.contextmanager
def base_side(args: argparse.Namespace, head: Config) -> Iterator[BaseSide]:
    """REF's config, committed baseline (or ``--baseline``) and agent in a checkout of REF."""
    from ..action.basecommit import assess, base_checkout, baseline_agent_config, plan_for
    from ..action.gitrepo import GitRepo
    from ..action.trusted import effective_config

    repo = GitRepo.discover(head.path.parent)
    sha = repo.resolve(args.base)
    at = f"@{sha[:7]} ({args.base})"
    config_rel = repo.relative(head.path)
    text = repo.show(sha, config_rel)
    if text is None:
        raise ConfigError(
            f"{args.base} has no {config_rel}",
            where=f"{config_rel}{at}",
            hint="commit the passk config to the base branch first, or drop --base",
        )
    try:
        base = parse_config_bytes(text, head.path).config
    except ConfigError as exc:
        raise ConfigError(
            f"in {args.base}: {exc.message}", where=exc.where, hint=exc.hint
        ) from exc
    if args.baseline:
        baseline = _committed_baseline(args, base.baseline.artifact)
    else:
        artifact_rel = repo.relative(base.baseline.artifact)
        blob = repo.show(sha, artifact_rel)
        if blob is None:
            raise ArtifactError(
                f"{args.base} has no baseline artifact",
                where=f"{artifact_rel}{at}",
                hint="record one with `passk baseline` on that branch and commit it",
            )
        try:
            baseline = run_from_json(json.loads(blob), f"{artifact_rel}{at}")
        except ValueError as exc:
            raise ArtifactError(
                f"the baseline artifact is not JSON: {exc}",
                where=f"{artifact_rel}{at}",
                hint="record it again with `passk baseline` on that branch",
            ) from exc
    plan = plan_for(assess(repo, baseline, sha, base), base, warn)
    spec = baseline_agent_config(base)
    if spec is None:
        yield BaseSide(sha, effective_config(base, head), baseline, None, plan)
        return
    # The checkout is made before any agent runs and removed after the last.
    with base_checkout(repo, sha, spec) as moved:
        yield BaseSide(sha, effective_config(base, head), baseline, moved, plan)
