"""Phase 3 of gate mode: run the candidate, top up and confirm the baseline, decide.

The candidate runs from the checkout or, when agents run as another user,
from an export of ``HEAD`` that user owns.  The baseline side (top-up and
confirmation) runs ``baseline.agent`` from the base config or, without one,
the base config's agent, in an export of the base commit's files made before
any of the pull request's code runs, so the pull request cannot change what
the baseline runs; its setup runs there before the candidate is built, then
the export is locked.  All of that is the preparation ``passk compare --base``
uses too.  Attempts recorded for this content are
replayed by the engine, so only what is missing is asked.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace

from ..agents.recorded import RecordedAnswers
from ..core.model import Run, Version
from ..core.result import CompareResult
from ..engine.asking import Replay
from ..engine.candidate import judged_again
from ..engine.compare import compare
from ..engine.request import CandidateSource, Rerun
from ..engine.session import stop_on_signals
from ..github.event import PullRequest
from ..github.workflow import Workflow
from ..inputs.agent_config import AgentConfig
from ..inputs.config import Config
from ..report.notes import sentence
from ..sides.gitrepo import GitRepo
from ..sides.prepare import Base, Running, Shell, prepare
from ..sides.trusted import BaseCommit, Trusted
from ..store.artifact import read_run
from ..store.compare_journal import discard_compare_journal
from ..store.measured import MeasuredRun
from .inputs import ActionInputs
from .rerun import RecordLookup, rerun_of
from .runtime import Runtime, setup_agent

CANDIDATE_PATH = ".passk/candidate.json"


def run_comparison(
    inputs: ActionInputs,
    runtime: Runtime,
    repo: GitRepo,
    pr: PullRequest,
    trusted: Trusted,
    prior: RecordLookup,
    *,
    measured: MeasuredRun | None = None,
    replay_only: bool = False,
) -> CompareResult:
    """The comparison's result; what passk recorded for this content is replayed or stands.

    ``measured`` (the two-job mode's gating job): the candidate's run as the pull
    request's own job measured it; the candidate's agent never runs here, its
    confirmation attempts come from that run.
    ``replay_only`` (the gating job without a usable measured run): the
    candidate answers only from the record of this content; a request the
    record lacks stops the gate, and nothing of the pull request runs.
    """
    workflow = runtime.workflow
    config = trusted.config
    rerun, recorded_candidate, candidate_agent = candidate_answers(
        inputs, config, rerun_of(prior, pr), workflow, measured=measured, replay_only=replay_only
    )

    candidate = CandidateSource(
        out=inputs.runner.workspace / CANDIDATE_PATH,
        recorded=recorded_candidate,
        commit=pr.head_sha,
        measured_by_pull_request=measured is not None or replay_only,
    )
    # No group around the comparison: its progress lines, the first error and each
    # agent's setup group stay visible in the log without unfolding anything.
    # A cancelled job gets SIGINT/SIGTERM: a setup stops at once, attempts in flight
    # are killed, and what finished is kept.
    with (
        stop_on_signals() as stop,
        prepare(
            action_shell(workflow, stop),
            Base(repo, BaseCommit(pr.base_sha), trusted),
            candidate,
            Running(env=runtime.env, token=inputs.token, concurrency=config.concurrency),
            isolate=True,
            rerun=rerun,
            candidate_agent=candidate_agent,
        ) as prepared,
    ):
        request = prepared.inputs
        if measured is not None and request.base is not None:
            # The trusted job pays for the pull request's new rows on the base agent:
            # only up to the base config's limit (a fork could add any number).
            request = replace(
                request,
                base=replace(
                    request.base,
                    added_rows=added_rows(trusted),
                    added_rows_limit=trusted.sides.base.config.baseline.added_rows_limit,
                ),
            )
        result = compare(request, prepared.agents, runtime.session(config, stop))
    # A job is not resumed: its comparison's journal has served once the result is here.
    discard_compare_journal(candidate.out)
    ran = result.executions
    workflow.line(
        f"passk: {ran.total} agent execution(s) now (candidate {ran.candidate}, baseline top-up "
        f"{ran.baseline_topup}, confirmation {ran.confirm_baseline} + {ran.confirm_candidate})"
        + ("; verdicts reused from the record of this commit" if result.reused else "")
    )
    return result


def candidate_answers(
    inputs: ActionInputs,
    config: Config,
    rerun: Rerun,
    workflow: Workflow,
    *,
    measured: MeasuredRun | None,
    replay_only: bool,
) -> tuple[Rerun, Run | None, RecordedAnswers | None]:
    """Where the candidate's answers come from, when not from its agent run now: the
    measured run, the record alone, or a recorded run (input ``candidate-run``).

    Returns the rerun (a recorded run with no agent replays nothing), the recorded
    candidate run, and the agent that answers from recorded attempts.
    """
    recorded_candidate = None
    candidate_agent = None
    if measured is not None:
        candidate_agent = RecordedAnswers(
            measured.run.attempts,
            measured.run.agent.description,
            measured.run.settings.scoring,
            judge_again=judged_again(config.scoring),
        )
        if rerun.replay.candidate:
            workflow.warn(
                "input `candidate-run` is ignored: the verdicts passk recorded for this commit "
                "are reused, so re-running the measuring job cannot change the result"
            )
        else:
            recorded_candidate = measured.run
    elif replay_only:
        candidate_agent = RecordedAnswers(
            (), config.agent.describe() if config.agent is not None else "the recorded candidate"
        )
    elif inputs.candidate_run is not None:
        if config.agent is None:
            # Nothing can run: the recorded run is the candidate, and gating it
            # again gives the same verdicts (no agent is asked anything).
            rerun = replace(rerun, replay=Replay(), recorded_for=None)
            recorded_candidate = read_run(inputs.candidate_run)
        elif rerun.replay.candidate:
            workflow.warn(
                "input `candidate-run` is ignored: the verdicts passk recorded for this commit "
                "are reused, so a re-run cannot change the result"
            )
        else:
            recorded_candidate = read_run(inputs.candidate_run)
    return rerun, recorded_candidate, candidate_agent


def added_rows(trusted: Trusted) -> tuple[str, ...]:
    """The gated rows the base commit's dataset lacks, or has with another input."""
    base = {row.id: row.input_digest for row in trusted.sides.base.dataset.rows}
    return tuple(row.id for row in trusted.dataset.rows if base.get(row.id) != row.input_digest)


def action_shell(workflow: Workflow, stop: threading.Event | None = None) -> Shell:
    """How the action shows a preparation: warnings and lines in the log, setup in a group.

    A set ``stop`` (SIGINT/SIGTERM) ends a setup at once, with all it started.
    """

    def setup(
        spec: AgentConfig, env: Mapping[str, str], version: Version, where: str | None
    ) -> None:
        setup_agent(workflow, spec, env, version, where=where, stop=stop)

    return Shell(
        warn=workflow.warn,
        note=workflow.note,
        announce=lambda said: workflow.warn(sentence(said)),
        line=workflow.line,
        setup=setup,
    )
