"""Phase 3 of gate mode: run the candidate, top up and confirm the baseline, decide.

The candidate runs from the checkout or, when agents run as another user,
from an export of ``HEAD`` that user owns (``headcommit.py``).  The baseline
side (top-up and confirmation) runs ``baseline.agent`` from the base config
or, without one, the base config's agent, in an export of the base commit's files made before
any of the pull request's code runs (``GitRepo.export``: no hooks, no
filters, read-only, outside the checkout), so the pull request cannot change
what the baseline runs.  The baseline's setup runs in that export before the
candidate is built, then the export is locked (``basesetup.py``).  Attempts
recorded for this content are replayed first (``rerun.py``), so only what is
missing is asked.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from ..agents.identity import agent_user
from ..agents.runner import Agent, RetryPolicy
from ..core.model import Version
from ..core.notes import RemeasuredOnRequest, WhereFrom
from ..core.result import CompareResult
from ..engine.agents import build_agent
from ..engine.compare import CompareInputs, compare
from ..engine.session import stop_on_signals
from ..inputs.config import AgentConfig
from ..sides.basecommit import assess, base_checkout, baseline_agent_config, plan_for
from ..sides.basesetup import BaseCheckout
from ..sides.credentials import credentials_hidden
from ..sides.gitrepo import GitRepo
from ..sides.headcommit import HeadCheckout, head_checkout
from ..sides.trusted import Trusted
from ..store.artifact import read_run
from .event import PullRequest
from .inputs import ActionInputs
from .replay import ReplayAgent
from .rerun import Prior, as_reused, keep_recorded_failure
from .runtime import Runtime, agent_env, setup_agent

CANDIDATE_PATH = ".passk/candidate.json"
BASE_SETUP_WHERE = (
    "the base commit's files; set up before any of the pull request's code runs, even if "
    "no row then needs the baseline, and read-only after"
)


def run_comparison(
    inputs: ActionInputs,
    runtime: Runtime,
    repo: GitRepo,
    pr: PullRequest,
    trusted: Trusted,
    prior: Prior,
) -> CompareResult:
    """The comparison's result, with replayed verdicts marked and a recorded failure kept."""
    workflow = runtime.workflow

    config, base = trusted.config, trusted.sides.base
    baseline_run = trusted.baseline_run
    replay_candidate, replay_baseline = prior.replay_candidate, prior.replay_baseline
    recorded_candidate = None
    if inputs.candidate_run is not None:
        if config.agent is None:
            # Nothing can run: the recorded run is the candidate, and gating it
            # again gives the same verdicts (no agent is asked anything).
            replay_candidate = replay_baseline = None
            recorded_candidate = read_run(inputs.candidate_run)
        elif replay_candidate:
            workflow.warn(
                "input `candidate-run` is ignored: the verdicts passk recorded for this commit "
                "are reused, so a re-run cannot change the result"
            )
        else:
            recorded_candidate = read_run(inputs.candidate_run)

    # No group around the comparison: its progress lines, the first error and each
    # agent's setup group stay visible in the log without unfolding anything.
    with contextlib.ExitStack() as stack:
        # A cancelled job gets SIGINT/SIGTERM: stop after the attempts in flight.
        stop = stack.enter_context(stop_on_signals())
        token = inputs.token

        base_export: BaseCheckout | None = None
        head_export: HeadCheckout | None = None

        def base_setup(spec: AgentConfig) -> None:
            env = agent_env(runtime.env, token, spec)
            setup_agent(workflow, spec, env, Version.BASELINE, where=BASE_SETUP_WHERE)

        def built(spec: AgentConfig, version: Version) -> Agent:
            env = agent_env(runtime.env, token, spec)
            # Built on first use, while the other attempt threads wait: setup runs
            # once per version, before its first attempt, and only if one is asked.
            # The baseline's comes first whichever side is built first: before any of
            # the pull request's code runs, it may still write its export (basesetup.py).
            if base_export is not None:
                base_export.prepare(base_setup, runtime.env)
            if version is Version.CANDIDATE:
                if head_export is not None:
                    head_export.announce(workflow.line, version.value)
                where = head_export.where if head_export is not None else None
                setup_agent(workflow, spec, env, version, where=where)
            agent = build_agent(spec, env, concurrency=config.concurrency)
            close = getattr(agent, "close", None)
            if callable(close):
                # Registered after the exports, so persistent agents stop before they go.
                stack.callback(close)
            return agent

        # No `agent:` (a config that only gates recorded runs, e.g. imported
        # ones): no agent to build, so confirmation is skipped and says so.
        head_agent = config.agent
        base_agent_config = baseline_agent_config(base.config)
        if head_agent is not None or base_agent_config is not None:
            # Before any agent (setup or attempt) runs, and undone after the last one
            # stops: a token actions/checkout persisted is out of the agents' reach.
            stack.enter_context(
                credentials_hidden(
                    repo,
                    agent_user(runtime.env),
                    runtime.env,
                    warn=workflow.warn,
                    note=workflow.note,
                )
            )
        baseline_agent: ReplayAgent | None = None
        if base_agent_config is not None:
            # Exported now, before the candidate (the PR's code) runs at all.
            base_export = stack.enter_context(
                base_checkout(repo, pr.base_sha, base_agent_config, runtime.env)
            )
            base_spec = base_export.agent
            baseline_agent = ReplayAgent(
                base_agent_config.describe(),
                replay_baseline or (),
                lambda: built(base_spec, Version.BASELINE),
            )
        candidate_agent: ReplayAgent | None = None
        if head_agent is not None:
            # Exported (and handed to the agent user) even when every verdict is
            # replayed, as the base is; built, set up and announced only if asked.
            head_export = stack.enter_context(
                head_checkout(repo, head_agent, runtime.env, workflow.warn)
            )
            head_spec = head_export.agent
            candidate_agent = ReplayAgent(
                head_agent.describe(),
                replay_candidate or (),
                lambda: built(head_spec, Version.CANDIDATE),
            )
        agents: dict[Version, Agent] = {
            version: agent
            for version, agent in (
                (Version.CANDIDATE, candidate_agent),
                (Version.BASELINE, baseline_agent),
            )
            if agent is not None
        }
        # A committed baseline the base commit's agent no longer matches is stale.
        stale = plan_for(
            assess(repo, baseline_run, pr.base_sha, base.config), base.config, workflow.warn
        )
        session = runtime.session(config, stop)
        if replay_candidate:
            # Replayed attempts were retried when they were made; retrying a replayed
            # error would only replay it again (and stamp it with retry notes).
            session = replace(session, retry=RetryPolicy(attempts=0))
        result = compare(
            CompareInputs(
                config=config,
                dataset=trusted.dataset,
                baseline=baseline_run,
                candidate=recorded_candidate,
                candidate_out=inputs.workspace / CANDIDATE_PATH,
                agents=agents.get,
                ratchet_source=baseline_run,
                protected_changes=trusted.changes,
                protected_changes_allowed=trusted.allowed,
                candidate_commit=pr.head_sha,
                remeasure=stale.remeasure,
                stale_warning=stale.warning,
                baseline_commit=pr.base_sha,
                baseline_fingerprint=stale.fingerprint,
                baseline_from=WhereFrom.PULL_REQUEST_BASE,
            ),
            session,
        )
        for agent in (candidate_agent, baseline_agent):
            if agent is not None and agent.build_error is not None:
                raise agent.build_error
    record = prior.record
    if (
        replay_candidate
        and record is not None
        and candidate_agent is not None
        and baseline_agent is not None
    ):
        result = as_reused(result, candidate_agent, baseline_agent, record, pr.head_sha)
    # A failed record too large to hold its attempts stays failed on a re-run.
    stands = prior.matching and record is not None and record.candidate_attempts is None
    if stands and record is not None and not record.passed:
        result = keep_recorded_failure(result)
    if prior.remeasured is not None:
        result = replace(result, notes=(*result.notes, RemeasuredOnRequest(prior.remeasured)))
    ran = result.executions
    workflow.line(
        f"passk: {ran.total} agent execution(s) now (candidate {ran.candidate}, baseline top-up "
        f"{ran.baseline_topup}, confirmation {ran.confirm_baseline} + {ran.confirm_candidate})"
        + ("; verdicts reused from the record of this commit" if result.reused else "")
    )
    return result
