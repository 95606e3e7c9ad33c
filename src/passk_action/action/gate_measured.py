"""``mode: gate-measured``: the two-job mode's gating job, which runs none of the PR's code.

It holds the write token, so nothing of the pull request may run in it: the
candidate's answers come from the measured file the measuring job uploaded
(``mode: measure``), handed over as a file (``candidate-run``), and only the
base commit's agent runs (top-up, confirmation, re-measurement), from its
export of the base commit.  The pull request's files are read as git objects
of the merge this job computes itself (``GitRepo.merge_tree``): nothing in the
checkout's working tree is read or run.

Whom to trust for what:

- the pull request (number, base, head, labels, fork): the ``pull_request``
  event of this job, or, under ``workflow_run`` (pull requests from forks),
  GitHub's account of the measuring run (its head commit, its head
  repository, the pull requests it lists) and the pull request as the API
  returns it.  The measured file's claim of a pull request number is only
  used to ask the API, and the answer must have the measuring run's head
  commit and repository;
- the measured run: the pull request's word.  It must be a run of exactly
  the gated dataset at this head commit with the base's settings; its
  decisions are judged by the base commit's labels; under ``scoring.by:
  command`` the base commit's scorer judges every recorded answer again and
  the file's verdicts are ignored; the comment says who recorded the
  answers.  Whether the agent really gave them cannot be checked here.
"""

from __future__ import annotations

from ..errors import ArtifactError, GitHubError, UsageError
from ..github.check_run import begin_check
from ..github.client import GitHubClient
from ..github.event import (
    PullRequest,
    WorkflowRun,
    confirm_current_base,
    fetch_pull_request,
    read_event,
)
from ..sides.gitrepo import GitRepo, short_sha
from ..store.measured import MeasuredRun, read_measured
from .gate import gate_and_publish, github_client
from .inputs import ActionInputs
from .publish import publish_could_not_finish
from .runtime import GateJob, Runtime

REMEASURE = "re-run the measuring workflow for the pull request's current head"


def run_gate_measured_mode(inputs: ActionInputs, runtime: Runtime) -> int:
    """Gate the measured run of the pull request; 0 passed, 1 failed."""
    workflow = runtime.workflow
    event = read_event(
        inputs.runner.event_name,
        inputs.runner.event_path,
        ("pull_request", "workflow_run"),
        "gate",
        "use `mode: gate-measured` in a job after the measuring job (`on: pull_request`), or "
        "in a workflow `on: workflow_run` of the measuring workflow (pull requests from forks)",
    )
    if inputs.candidate_run is None:
        raise UsageError(
            "mode gate-measured gates the measuring job's run, and none was given",
            where="input `candidate-run`",
            hint="download the measuring job's artifact and name its file, e.g. "
            "`candidate-run: passk-measured/measured.json`",
        )
    pr: PullRequest | None = None
    triggered: WorkflowRun | None = None
    if event.name == "pull_request":
        pr = event.pull_request()
        head_sha = pr.head_sha
    else:
        triggered = event.workflow_run()
        if triggered.event != "pull_request":
            raise UsageError(
                f"the measuring run ran on {triggered.event or 'an unknown event'!r}, "
                "not on a pull request: nothing to gate",
                where=event.where,
                hint="add `if: github.event.workflow_run.event == 'pull_request'` to the job",
            )
        head_sha = triggered.head_sha
    repo = GitRepo.discover(inputs.working_directory)
    client = github_client(inputs, runtime)
    if pr is not None:
        confirm_current_base(client, pr, workflow.warn)
    check = begin_check(
        client,
        name=inputs.check_name,
        head_sha=head_sha,
        details_url=inputs.runner.run_page,
        line=workflow.line,
    )
    job = GateJob(inputs, runtime, client, check)
    measured: MeasuredRun | None = None
    unusable: ArtifactError | None = None
    try:
        try:
            measured = read_measured(inputs.candidate_run)
        except ArtifactError as exc:
            # Expired (the workflows keep it 7 days) or damaged: a re-run whose verdicts
            # are recorded replays them (gate_and_publish); anything else fails with this.
            unusable = exc
        if pr is None:
            assert triggered is not None
            claimed = measured.pull_request if measured is not None else None
            pr = pull_request_of_run(client, triggered, claimed, unusable)
        if measured is not None:
            try:
                check_claims(measured, pr)
            except ArtifactError as exc:
                measured, unusable = None, exc
        head = repo.merge_tree(pr.base_sha, pr.head_sha)
        workflow.line(
            f"passk: gating PR #{pr.number} on the run its own job measured; the pull "
            f"request's files are read as git objects of its merge into "
            f"{short_sha(pr.base_sha)}, and none of its code runs here"
        )
    except (Exception, KeyboardInterrupt) as exc:
        publish_could_not_finish(exc, job, pr, head_sha=head_sha, comments=None)
        raise
    return gate_and_publish(
        job,
        repo,
        pr,
        measured=measured,
        unusable=unusable,
        head=head,
        trigger=event.trigger(),
    )


def pull_request_of_run(
    client: GitHubClient | None,
    run: WorkflowRun,
    claimed: int | None,
    unusable: ArtifactError | None = None,
) -> PullRequest:
    """The pull request the measuring ``run`` measured, from GitHub, never from its file.

    The file names a number; GitHub's answer for that number must have the
    run's head commit (and head repository), and the number must be one of
    the run's own pull requests when GitHub lists them (it does not for forks).
    Without a file (``claimed`` None: it was ``unusable``) the run's own pull
    request is asked for, when GitHub lists exactly one; else ``unusable`` is raised.
    """
    if claimed is None:
        assert unusable is not None
        if len(run.pull_requests) != 1:
            raise unusable  # a fork's run lists none: only the file could say which
        claimed = run.pull_requests[0]
    if client is None:
        raise UsageError(
            "under workflow_run the pull request is looked up on GitHub, and there is no token",
            where="input `github-token`",
            hint="give the gating job `pull-requests: write` and the default token",
        )
    if run.pull_requests and claimed not in run.pull_requests:
        raise ArtifactError(
            f"names pull request #{claimed}, but the measuring run was for "
            + ", ".join(f"#{n}" for n in run.pull_requests),
            where="the measured run (input `candidate-run`)",
            hint=REMEASURE,
        )
    try:
        pr = fetch_pull_request(client, claimed)
    except GitHubError as exc:
        raise GitHubError(
            f"cannot read pull request #{claimed}, which the measured run names ({exc.message})",
            where=exc.where,
            status=exc.status,
            hint=REMEASURE,
        ) from exc
    if pr.head_sha != run.head_sha:
        raise ArtifactError(
            f"names pull request #{claimed}, whose head is {short_sha(pr.head_sha)}, not the "
            f"commit the measuring run measured ({short_sha(run.head_sha)}): the pull request "
            "moved on, or the file names another one",
            where="the measured run (input `candidate-run`)",
            hint="the run for the new head gates it; " + REMEASURE,
        )
    if run.head_repository is not None and pr.head_repository != run.head_repository:
        raise ArtifactError(
            f"names pull request #{claimed}, from {pr.head_repository!r}, but the "
            f"measuring run measured {run.head_repository!r}",
            where="the measured run (input `candidate-run`)",
            hint=REMEASURE,
        )
    return pr


def check_claims(measured: MeasuredRun, pr: PullRequest) -> None:
    """The measured file was made for this pull request's head, or it is refused."""
    if measured.pull_request != pr.number or measured.head_sha != pr.head_sha:
        raise ArtifactError(
            f"was measured for pull request #{measured.pull_request} at "
            f"{short_sha(measured.head_sha)}, not for #{pr.number} at {short_sha(pr.head_sha)}",
            where="the measured run (input `candidate-run`)",
            hint=REMEASURE,
        )
