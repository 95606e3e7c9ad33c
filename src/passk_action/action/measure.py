"""``mode: measure``: the two-job mode's first job, the only one that runs the PR's code.

It runs in a job that holds no write token (``permissions: {}`` or
``contents: read``): the candidate agent k times per row, then the
confirmation attempts of every row the gating job may find lost against
the base commit's committed baseline.  No baseline agent runs and nothing
is posted: it writes the measured file for the workflow to upload, and the
job summary.
The gating job (``mode: gate-measured``) decides.
"""

from __future__ import annotations

from ..engine.candidate import refuse_unverifiable_verdicts
from ..engine.measuring_job import measure_candidate
from ..engine.request import CandidateSource
from ..engine.session import stop_on_signals
from ..errors import EXIT_OK, AgentCouldNotRun
from ..github.event import read_event
from ..report.could_not_run import render_could_not_run
from ..report.run_report import render_run_report
from ..sides.gitrepo import GitRepo
from ..sides.prepare import Base, Running, prepare
from ..sides.trusted import BaseCommit
from ..store.compare_journal import discard_compare_journal
from ..store.measured import MeasuredRun, write_measured
from .comparison import CANDIDATE_PATH, action_shell
from .gate import trusted_inputs
from .inputs import ActionInputs
from .runtime import Runtime

MEASURED_PATH = ".passk/measured.json"
SAYS = (
    "passk: mode measure runs the pull request's agent and records its answers for the gating "
    "job (mode gate-measured); it runs no baseline agent, posts nothing and uses no token"
)


def run_measure_mode(inputs: ActionInputs, runtime: Runtime) -> int:
    """Measure the pull request's candidate and write the measured file; 0 when written."""
    workflow = runtime.workflow
    pr = read_event(
        inputs.runner.event_name,
        inputs.runner.event_path,
        ("pull_request",),
        "measure",
        "use `mode: measure` in a workflow that runs `on: pull_request`",
    ).pull_request()
    repo = GitRepo.discover(inputs.working_directory)
    workflow.line(SAYS)
    with workflow.group("passk: trusted inputs from the base commit"):
        trusted, _ = trusted_inputs(repo, inputs, pr, workflow)
    # Said here, before the pull request's code runs, as the gating job would say it.
    refuse_unverifiable_verdicts(trusted.config.scoring, trusted.config.path)

    candidate = CandidateSource(out=inputs.runner.workspace / CANDIDATE_PATH, commit=pr.head_sha)
    try:
        with (
            stop_on_signals() as stop,
            prepare(
                action_shell(workflow, stop),
                Base(repo, BaseCommit(pr.base_sha), trusted),
                candidate,
                Running(
                    env=runtime.env, token=inputs.token, concurrency=trusted.config.concurrency
                ),
                isolate=True,
                baseline=False,
            ) as prepared,
        ):
            measured = measure_candidate(
                prepared.inputs, prepared.agents, runtime.session(trusted.config, stop)
            )
    except AgentCouldNotRun as exc:
        workflow.write_summary(render_could_not_run(exc))
        raise
    write_measured(
        MeasuredRun(pr.number, pr.head_sha, pr.base_sha, measured.run),
        inputs.runner.workspace / MEASURED_PATH,
    )
    discard_compare_journal(candidate.out)
    made = len(measured.run.attempts)
    workflow.line(
        f"passk: measured {made} attempt(s) of the candidate ({measured.confirmed_rows} row(s) "
        f"confirmed); upload {MEASURED_PATH} for the gating job"
    )
    workflow.write_summary(
        "> passk measured the candidate here; the gate is decided by the gating job "
        "(`mode: gate-measured`), which runs none of the pull request's code.\n\n"
        + render_run_report(measured.run)
    )
    workflow.set_outputs({"measured-run": MEASURED_PATH})
    return EXIT_OK
