"""Gate mode on a pull request, as its four phases.

1. trusted inputs from the base commit (``sides/trusted.py``);
2. the record of an earlier run of this content (``rerun.py``);
3. the comparison: candidate, baseline top-up, confirmation (``comparison.py``);
4. the result file, summary, comment and check (``publish.py``).
"""

from __future__ import annotations

from typing import Any

from ..errors import AgentCouldNotRun, ArtifactError, GitHubError, UsageError
from ..github.client import GitHubClient
from ..github.publish import complete_stale_checks, start_check
from ..report.history import summary_line
from ..sides.gitrepo import GitRepo, short_sha
from ..sides.history import base_history
from ..sides.trusted import (
    HEAD_COMMIT,
    BaseCommit,
    Trusted,
    protected_change_lines,
    trust_base,
)
from ..store.measured import MeasuredRun
from .comparison import run_comparison
from .event import PullRequest, pull_request_from, read_payload
from .inputs import ActionInputs
from .publish import GatedFiles, publish_could_not_finish, publish_could_not_run, publish_gate
from .rerun import RecordLookup, look_up_record
from .runtime import Runtime
from .workflow import Workflow

PWN_REQUEST = (
    "passk refuses to run on `pull_request_target`: that event runs with a write token and "
    "secrets, and passk executes the pull request's agent, so a fork could take over the "
    "repository (a 'pwn request', FACTS.md E3)"
)


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
            api_url=inputs.api_url,
            token=inputs.token,
            repository=inputs.repository,
            sleep=runtime.sleep,
        )
    except GitHubError as exc:
        runtime.workflow.warn(f"nothing is posted to GitHub: {exc.one_line()}")
        return None


def require_event(inputs: ActionInputs, allowed: tuple[str, ...], what: str, hint: str) -> None:
    """Refuse ``pull_request_target`` (a pwn request), and any event but ``allowed``."""
    if inputs.event_name == "pull_request_target":
        raise UsageError(
            PWN_REQUEST,
            where="GITHUB_EVENT_NAME=pull_request_target",
            hint="trigger the workflow with `on: pull_request` instead",
        )
    if inputs.event_name not in allowed:
        raise UsageError(
            f"nothing to {what} on a {inputs.event_name or 'unknown'!r} event",
            where="input `mode`",
            hint=hint,
        )


def run_gate_mode(inputs: ActionInputs, runtime: Runtime) -> int:
    """Gate the pull request in the event payload; 0 passed, 1 failed."""
    workflow = runtime.workflow
    require_event(
        inputs,
        ("pull_request",),
        "gate",
        "use `mode: gate` on `pull_request`, and `mode: baseline` on pushes to the default branch",
    )
    payload = read_payload(inputs.event_path)
    pr = pull_request_from(payload, inputs.event_path or "GITHUB_EVENT_PATH")
    repo = GitRepo.discover(inputs.working_directory)
    client = github_client(inputs, runtime)
    check = start_check_run(client, inputs, pr.head_sha, workflow)
    return gate_and_publish(inputs, runtime, repo, pr, client, check)


def gate_and_publish(
    inputs: ActionInputs,
    runtime: Runtime,
    repo: GitRepo,
    pr: PullRequest,
    client: GitHubClient | None,
    check: int | None,
    *,
    measured: MeasuredRun | None = None,
    unusable: ArtifactError | None = None,
    head: str = HEAD_COMMIT,
) -> int:
    """Phases 1-4 for ``pr``, once its check run started; any error completes the check.

    ``measured`` and ``head`` are the two-job mode's: the candidate's run as
    the pull request's own job measured it, and the merge's tree, whose git
    objects stand for the head (``gate_measured.py``).  ``unusable`` says why
    there is no ``measured`` run (expired, damaged, for another head): a
    re-run whose verdicts are recorded for this content replays them, as the
    docs promise; otherwise it is the error the check fails with.
    """
    workflow = runtime.workflow
    comments: list[dict[str, Any]] | None = None
    unreadable = False
    try:
        with workflow.group("passk: trusted inputs from the base commit"):
            trusted = trusted_inputs(
                repo, inputs, pr, workflow, head_objects=None if head == HEAD_COMMIT else head
            )
            # Before any agent runs: the marks come from the base's git objects alone.
            history = base_history(
                repo,
                pr.base_sha,
                repo.relative(trusted.config.baseline.artifact),
                branch=pr.base_ref or None,
            )
            workflow.line(summary_line(history))
        try:
            prior = look_up_record(client, repo, inputs, pr, trusted, workflow.warn, head=head)
        except GitHubError:
            unreadable = True  # then the comment, record and all, is left as it is
            raise
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
            return publish_could_not_run(exc, inputs, workflow, client, pr, check_run_id=check)
        where = GatedFiles(
            dataset=trusted.dataset,
            dataset_path=repo.relative(trusted.config.dataset),
            config_path=inputs.config,
            allow_label=trusted.config.gate.allow_label,
        )
        return publish_gate(
            result,
            inputs,
            workflow,
            client,
            pr,
            prior,
            trusted.baseline_run,
            where=where,
            check_run_id=check,
            history=history,
        )
    except (Exception, KeyboardInterrupt) as exc:
        # Any error, a bug in passk included: the check completes as a failure naming
        # it and the comment says the gate did not decide; the one boundary
        # (errors.run_guarded) then prints the line and picks the exit code.
        if client is not None:
            publish_could_not_finish(
                exc,
                inputs,
                workflow,
                client,
                pr,
                check_run_id=check,
                comments=comments,
                leave_comment=unreadable,
            )
        raise


def replay_without(unusable: ArtifactError, prior: RecordLookup, workflow: Workflow) -> None:
    """Go on without the measured run only to replay the verdicts recorded for this content."""
    if not (prior.matching and prior.replay_candidate):
        raise unusable
    workflow.warn(
        f"the measured run cannot be used ({unusable.one_line()}); the verdicts passk "
        "recorded for this content are replayed, and none of the pull request's code runs"
    )


def start_check_run(
    client: GitHubClient | None, inputs: ActionInputs, head_sha: str, workflow: Workflow
) -> int | None:
    """The check run, ``in_progress`` from the start, so the PR shows passk is at work; the
    ones a stopped run of the same check left in progress on this commit are completed."""
    if client is None:
        return None
    stale = complete_stale_checks(client, name=inputs.check_name, head_sha=head_sha)
    if stale:
        workflow.line(
            f"passk: completed {len(stale)} check run(s) {inputs.check_name!r} that a stopped "
            "run left in progress on this commit (as cancelled)"
        )
    started = start_check(
        client, name=inputs.check_name, head_sha=head_sha, details_url=inputs.details_url()
    )
    if started.id is not None:
        workflow.line(f"passk: check run {inputs.check_name!r} in progress: {started.url}")
    return started.id  # refused: publishing tries again, then falls back to a status


def trusted_inputs(
    repo: GitRepo,
    inputs: ActionInputs,
    pr: PullRequest,
    workflow: Workflow,
    *,
    head_objects: str | None = None,
) -> Trusted:
    """The gate's inputs for the pull request, with its protected changes logged."""
    trusted = trust_base(
        repo,
        inputs.config_path,
        BaseCommit(pr.base_sha),
        pr.labels,
        workflow.warn,
        head_objects=head_objects,
    )
    workflow.line(
        f"passk: PR #{pr.number} base {short_sha(pr.base_sha)} head {short_sha(pr.head_sha)}"
        f"{' (from a fork)' if pr.fork else ''}"
    )
    for line in protected_change_lines(trusted):
        workflow.line(line)
    return trusted
