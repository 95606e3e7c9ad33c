"""Gate mode on a pull request, as its four phases.

1. trusted inputs from the base commit;
2. the record of an earlier run of this content;
3. the comparison: candidate, baseline top-up, confirmation;
4. the result file, summary, comment and check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.candidate import refuse_unverifiable_verdicts
from ..errors import AgentCouldNotRun, ArtifactError, GitHubError
from ..github.approval import LabelDecision, decide_label
from ..github.check_run import begin_check
from ..github.client import GitHubClient
from ..github.event import PullRequest, Trigger, confirm_current_base, read_event
from ..github.workflow import Workflow
from ..report.history import summary_line
from ..report.protected import change_lines
from ..sides.gitrepo import GitRepo, short_sha
from ..sides.history import base_history
from ..sides.trusted import (
    HEAD_COMMIT,
    BaseCommit,
    Trusted,
    trust_base,
)
from ..store.measured import MeasuredRun
from .comparison import run_comparison
from .inputs import ActionInputs
from .publish import GatedFiles, publish_could_not_finish, publish_could_not_run, publish_gate
from .rerun import RecordLookup, look_up_record, read_comments, recorded
from .runtime import GateJob, Runtime

NO_TRIGGER = Trigger()
"""A run no event payload describes: nothing binds the allow label to a head."""


def github_client(inputs: ActionInputs, runtime: Runtime) -> GitHubClient | None:
    """The REST client for the job's token, or None (with a warning) when nothing can be posted."""
    if not inputs.token:
        runtime.workflow.warn(
            "no github-token: nothing is posted to the pull request; the report is in the "
            "job summary"
        )
        return None
    try:
        return GitHubClient(
            api_url=inputs.runner.api_url,
            token=inputs.token,
            repository=inputs.runner.repository,
            sleep=runtime.sleep,
        )
    except GitHubError as exc:
        runtime.workflow.warn(f"nothing is posted to GitHub: {exc.one_line()}")
        return None


def run_gate_mode(inputs: ActionInputs, runtime: Runtime) -> int:
    """Gate the pull request in the event payload; 0 passed, 1 failed."""
    workflow = runtime.workflow
    event = read_event(
        inputs.runner.event_name,
        inputs.runner.event_path,
        ("pull_request",),
        "gate",
        "use `mode: gate` on `pull_request`, and `mode: baseline` on pushes to the default branch",
    )
    pr = event.pull_request()
    repo = GitRepo.discover(inputs.working_directory)
    client = github_client(inputs, runtime)
    confirm_current_base(client, pr, workflow.warn)
    check = begin_check(
        client,
        name=inputs.check_name,
        head_sha=pr.head_sha,
        details_url=inputs.runner.run_page,
        line=workflow.line,
    )
    job = GateJob(inputs, runtime, client, check)
    return gate_and_publish(job, repo, pr, trigger=event.trigger())


def gate_and_publish(
    job: GateJob,
    repo: GitRepo,
    pr: PullRequest,
    *,
    measured: MeasuredRun | None = None,
    unusable: ArtifactError | None = None,
    head: str = HEAD_COMMIT,
    trigger: Trigger = NO_TRIGGER,
) -> int:
    """Phases 1-4 for ``pr``, once its check run started; any error completes the check.

    ``measured`` and ``head`` are the two-job mode's: the candidate's run as
    the pull request's own job measured it, and the merge's tree, whose git
    objects stand for the head.  ``unusable`` says why
    there is no ``measured`` run (expired, damaged, for another head): a
    re-run whose verdicts are recorded for this content replays them, as the
    docs promise; otherwise it is the error the check fails with.  ``trigger``
    is what GitHub says started this run: it binds the allow label to a head.
    """
    inputs, runtime, client, workflow = job.inputs, job.runtime, job.client, job.workflow
    comments: list[dict[str, Any]] | None = None
    unreadable = False
    try:
        try:
            comments = read_comments(client, inputs, pr, workflow.warn)
        except GitHubError:
            unreadable = True  # then the comment, record and all, is left as it is
            raise
        earlier = recorded(comments, inputs)
        with workflow.group("passk: trusted inputs from the base commit"):
            trusted, label = trusted_inputs(
                repo,
                inputs,
                pr,
                workflow,
                head_objects=None if head == HEAD_COMMIT else head,
                approve=lambda name: decide_label(client, pr, name, trigger, earlier),
                measured_digest=measured.run.dataset_digest if measured is not None else None,
            )
            if measured is not None or unusable is not None:
                # The two-job mode: refused before any agent runs when the gating job
                # could not check the measured verdicts.
                refuse_unverifiable_verdicts(trusted.config.scoring, trusted.config.path)
            # Before any agent runs: the marks come from the base's git objects alone.
            history = base_history(
                repo,
                pr.base_sha,
                repo.relative(trusted.config.baseline.artifact),
                branch=pr.base_ref or None,
            )
            workflow.line(summary_line(history))
        prior = look_up_record(
            client, repo, inputs, pr, trusted, workflow.warn, head=head, comments=comments
        )
        comments = prior.comments if inputs.comment != "off" else None
        if unusable is not None:
            replay_without(unusable, prior, workflow)
        try:
            result = run_comparison(
                inputs,
                runtime,
                repo,
                pr,
                trusted,
                prior,
                measured=measured,
                replay_only=unusable is not None,
            )
        except AgentCouldNotRun as exc:
            return publish_could_not_run(exc, job, pr)
        where = GatedFiles(
            dataset=trusted.dataset,
            dataset_path=repo.relative(trusted.config.dataset),
            config_path=inputs.config,
            allow_label=trusted.config.gate.allow_label,
            approval=label.approval,
            label_refusal=label.refusal,
        )
        return publish_gate(
            result, job, pr, prior, trusted.baseline_run, where=where, history=history
        )
    except (Exception, KeyboardInterrupt) as exc:
        # Any error, a bug in passk included: the check completes as a failure naming
        # it and the comment says the gate did not decide; the one boundary
        # (errors.run_guarded) then prints the line and picks the exit code.
        publish_could_not_finish(exc, job, pr, comments=comments, leave_comment=unreadable)
        raise


def replay_without(unusable: ArtifactError, prior: RecordLookup, workflow: Workflow) -> None:
    """Go on without the measured run only to replay the verdicts recorded for this content."""
    if not (prior.matching and prior.replay_candidate):
        raise unusable
    workflow.warn(
        f"the measured run cannot be used ({unusable.one_line()}); the verdicts passk "
        "recorded for this content are replayed, and none of the pull request's code runs"
    )


def trusted_inputs(
    repo: GitRepo,
    inputs: ActionInputs,
    pr: PullRequest,
    workflow: Workflow,
    *,
    head_objects: str | None = None,
    approve: Callable[[str], LabelDecision] | None = None,
    measured_digest: str | None = None,
) -> tuple[Trusted, LabelDecision]:
    """The gate's inputs for the pull request, with its protected changes logged.

    ``approve`` judges the allow label when the pull request carries it and has
    protected changes; a label it does not approve is read as absent.  Without
    it (the measuring job, which holds no token) the label is taken as the
    event says: the gating job checks it.  ``measured_digest``: the dataset the
    measuring job measured; when it is the one the label would allow and the
    label does not count, the error says why the label does not count.
    """

    def trust(labels: tuple[str, ...]) -> Trusted:
        return trust_base(
            repo,
            inputs.config_path,
            BaseCommit(pr.base_sha),
            labels,
            workflow.warn,
            head_objects=head_objects,
        )

    trusted = trust(pr.labels)
    decision = LabelDecision(None)
    measured_as_allowed = False
    if approve is not None and trusted.allowed:
        label = trusted.sides.base.config.gate.allow_label
        decision = approve(label)
        if decision.approval is None:
            allowed = trusted.dataset.digest
            trusted = trust(tuple(name for name in pr.labels if name != label))
            measured_as_allowed = measured_digest == allowed != trusted.dataset.digest
    workflow.line(
        f"passk: PR #{pr.number} base {pr.base_ref or '?'} at {short_sha(pr.base_sha)} head "
        f"{short_sha(pr.head_sha)}{' (from a fork)' if pr.fork else ''}"
    )
    if decision.refusal:
        workflow.warn(decision.refusal)
    if decision.approval is not None:
        who = decision.approval
        workflow.line(
            f"passk: the label {who.label!r} approves head {short_sha(who.head_sha)} against "
            f"{who.base_ref!r}: added by @{who.login} ({who.role} access)"
        )
    label = trusted.sides.base.config.gate.allow_label
    for line in change_lines(trusted.changes, allowed=trusted.allowed, label=label):
        workflow.line(line)
    if measured_as_allowed:
        # Else "recorded on another dataset": true, but it hides that the label is why.
        raise ArtifactError(
            decision.refusal or "the allow label does not count",
            hint="the measured run (input `candidate-run`) was recorded with the changes the "
            "label allows, as its job reads the label from its event; the measuring run that "
            "adding the label starts is gated with it",
        )
    return trusted, decision
