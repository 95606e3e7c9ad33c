"""``passk compare``: baseline vs candidate, confirmation of lost rows, and the gate."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents.runner import Agent
from ..core.model import Run, Version
from ..core.notes import WhereFrom
from ..engine.agents import build_agent, close_agent
from ..engine.compare import CompareInputs, compare
from ..engine.session import stop_on_signals
from ..errors import EXIT_GATE_FAILED, EXIT_OK, ArtifactError, GitError, UsageError
from ..report.compare_report import render_compare_report
from ..report.notes import sentence
from ..store.artifact import read_run
from ..store.results import write_result
from .common import (
    add_config_argument,
    add_run_arguments,
    agent_setup,
    load_inputs,
    prepare_agent,
    session_for,
    warn,
    write_output,
)

if TYPE_CHECKING:
    from ..sides.basecommit import StalePlan
    from ..sides.basesetup import BaseCheckout
    from ..sides.gitrepo import GitRepo
    from ..sides.trusted import Trusted


REF_SETUP_WHERE = (
    "a checkout of REF; set up before the working tree's agent runs, even if no row then "
    "needs the baseline, and read-only after"
)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "compare", help="compare the candidate with the baseline and decide the gate"
    )
    add_config_argument(parser)
    parser.add_argument(
        "--baseline",
        default=None,
        help="baseline artifact (default: baseline.artifact; not with --base, which uses REF's)",
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
        help="gate as a pull request into REF (e.g. main) would, with the same code as the "
        "action: the head is this working tree, uncommitted changes included (what you are "
        "about to push); REF supplies the settings, the must-not-break marks and expected "
        "labels, the baseline artifact and ratchet, and the agent that runs the baseline side "
        "from a clean checkout of REF; edits to those are protected changes and fail the gate",
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        dest="labels",
        metavar="NAME",
        help="with --base: a label the pull request carries (repeatable); REF's "
        "gate.allow_label allows the protected changes, as on GitHub",
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # Imported here: the action package imports the CLI's helpers.
    from ..sides.basecommit import working_tree_identity

    if args.base is not None and args.baseline:
        raise UsageError(
            "--baseline cannot be used with --base",
            where="--baseline",
            hint="--base gates against REF's committed baseline, as the pull request does; "
            "drop --baseline, or drop --base to gate against that file",
        )
    if args.labels and args.base is None:
        raise UsageError(
            "--label needs --base",
            where="--label",
            hint="labels allow protected changes, which exist only against a base: add --base REF",
        )
    candidate = read_run(Path(args.candidate)) if args.candidate else None
    built: dict[Version, Agent | None] = {}
    checkout: BaseCheckout | None = None
    with contextlib.ExitStack() as stack:
        if args.base is not None:
            side = stack.enter_context(base_side(args))
            trusted = side.trusted
            config, dataset, baseline = trusted.config, trusted.dataset, trusted.baseline_run
            checkout = side.checkout
            specs = {
                Version.CANDIDATE: config.agent,
                Version.BASELINE: checkout.agent if checkout is not None else None,
            }
            extra: dict[str, Any] = {
                "ratchet_source": baseline,
                "protected_changes": trusted.changes,
                "protected_changes_allowed": trusted.allowed,
                "remeasure": side.plan.remeasure,
                "stale_warning": side.plan.warning,
                "baseline_commit": side.sha,
                "baseline_fingerprint": side.plan.fingerprint,
                "baseline_from": WhereFrom.BASE_REF,
                "base_ref": args.base,
            }
        else:
            inputs = load_inputs(args.config)
            config, dataset = inputs.config, inputs.dataset
            baseline = _committed_baseline(args, config.baseline.artifact)
            specs = {Version.CANDIDATE: config.agent, Version.BASELINE: config.baseline.agent}
            extra = {}
        identity = working_tree_identity(config.path.parent, config)
        concurrency = args.concurrency if args.concurrency is not None else config.concurrency
        candidate_out = (
            Path(args.candidate_out)
            if args.candidate_out
            else config.path.parent / ".passk" / "candidate.json"
        )

        def agents(version: Version) -> Agent | None:
            """Built on first use: a compare that reuses everything starts no agent."""
            if version not in built:
                spec = specs[version]
                if spec is not None and checkout is not None:
                    # REF's setup first, in its checkout, before the working tree's
                    # code runs (sides/basesetup.py); then that checkout is locked.
                    checkout.prepare(
                        lambda s: agent_setup(s, Version.BASELINE, where=REF_SETUP_WHERE),
                        os.environ,
                    )
                if spec is None:
                    built[version] = None
                elif checkout is not None and version is Version.BASELINE:
                    built[version] = build_agent(spec, os.environ, concurrency=concurrency)
                else:
                    built[version] = prepare_agent(spec, version, concurrency=concurrency)
                agent = built[version]
                if agent is not None:
                    # Closed before the base checkout goes.
                    stack.callback(close_agent, agent)
            return built[version]

        with stop_on_signals() as stop:
            result = compare(
                CompareInputs(
                    config=config,
                    dataset=dataset,
                    baseline=baseline,
                    candidate=candidate,
                    candidate_out=candidate_out,
                    agents=agents,
                    resume=args.resume,
                    candidate_commit=identity.commit,
                    candidate_dirty=identity.dirty,
                    **extra,
                ),
                session_for(config, args, stop),
            )
    for warning in result.warnings:
        if not warning.announced:  # the others were said before any agent ran
            warn(sentence(warning))
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
    trusted: Trusted
    """The action's trusted inputs: the working tree as the head, REF as the base."""
    checkout: BaseCheckout | None
    """REF's baseline agent, moved into the checkout of REF (None: REF names none)."""
    plan: StalePlan


def _say_if_base_moved_on(repo: GitRepo, ref: str, sha: str) -> None:
    """Warn when REF has commits HEAD lacks: the pull request runs on the merge of both.

    ``actions/checkout`` checks out the pull request's merge commit, so the
    candidate there also holds what REF gained since the branch left it; here
    it does not, and the two verdicts can differ.
    """
    try:
        behind = repo.commits_between("HEAD", sha)
    except GitError:
        return  # no HEAD yet: nothing to compare with
    if behind:
        warn(
            f"{ref} has {behind} commit(s) this branch does not; the pull request's check "
            f"runs on the merge of both, so its verdict can differ: merge or rebase onto "
            f"{ref} to reproduce it exactly"
        )


@contextlib.contextmanager
def base_side(args: argparse.Namespace) -> Iterator[BaseSide]:
    """What the action's gate mode reads from the base commit, read from REF.

    The same functions as the action (``trust_base``): REF's config settings,
    marks, labels and committed baseline, and the protected changes this
    working tree makes to them, listed on stderr as the action logs them.
    """
    from ..sides.basecommit import assess, base_checkout, baseline_agent_config, plan_for
    from ..sides.gitrepo import GitRepo
    from ..sides.trusted import BaseCommit, protected_change_lines, trust_base, working_tree

    config_path = Path(args.config)
    repo = GitRepo.discover(config_path.absolute().parent)
    sha = repo.resolve(args.base)
    _say_if_base_moved_on(repo, args.base, sha)
    trusted = trust_base(
        repo, config_path, BaseCommit(sha, args.base), args.labels, warn, head_tree=working_tree
    )
    for line in protected_change_lines(trusted):
        print(line, file=sys.stderr)
    base = trusted.sides.base.config
    plan = plan_for(assess(repo, trusted.baseline_run, sha, base), base, warn)
    spec = baseline_agent_config(base)
    if spec is None:
        yield BaseSide(sha, trusted, None, plan)
        return
    # The checkout is made before any agent runs and removed after the last.
    with base_checkout(repo, sha, spec, os.environ) as checkout:
        yield BaseSide(sha, trusted, checkout, plan)
