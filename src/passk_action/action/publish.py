"""Publishing the gate on the pull request: log annotations, job summary, comment, check.

Nothing here can change the gate's decision.  A comment or check that
GitHub refuses (a fork's read-only token, missing ``permissions:``, an
outage past the retry budget) becomes one ``::warning`` line, and the job
goes on to exit with the gate's own code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.cost import summarize_spend
from ..core.diff import Confirmation
from ..core.history import History
from ..core.model import Dataset, Run
from ..core.money import plain_decimal
from ..core.result import CompareResult
from ..errors import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    REPORT_BUGS_AT,
    AgentCouldNotRun,
    GitHubError,
    PasskError,
    crash_line,
)
from ..github.check_run import Annotation, publish_check
from ..github.client import GitHubClient
from ..github.event import PullRequest
from ..github.sticky_comment import (
    RecordedApproval,
    comment_mode,
    kept_record,
    post_record_parts,
    record_for,
    split_record,
    upsert_sticky_comment,
    without_record,
)
from ..report.check_run import check_title, not_blocking_words, row_annotations, with_base
from ..report.comment import (
    CommentContext,
    LabelApproval,
    render_agent_failure_comment,
    render_comment,
    render_could_not_finish_comment,
)
from ..report.compare_report import render_compare_report
from ..report.could_not_run import could_not_finish_title, could_not_run_title, render_could_not_run
from ..report.escape import inline
from ..store.artifact import write_text_atomic
from ..store.results import write_result
from .inputs import ActionInputs
from .rerun import RecordLookup
from .runtime import LEGACY_MARKER, fraction, step_key
from .workflow import Workflow

FORK_COMMENT_NOTICE = (
    "read-only token (pull request from a fork): no comment posted; "
    "the report is in the job summary"
)
REMEASURED_TITLE = "re-measured on request · "
FORK_CHECK_NOTICE = (
    "read-only token (pull request from a fork): no check run or commit status posted; "
    "this job's own status carries the gate"
)


def annotate(workflow: Workflow, result: CompareResult) -> None:
    """``::error`` per blocking row (at most 10), ``::warning`` per non-blocking regression."""
    failures = [(f.id or f"[{f.rule.value}]", f.reason) for f in result.gate.failures]
    workflow.annotate_rows(failures, title="passk gate")
    blocking = {f.id for f in result.gate.failures if f.id}
    for row in result.comparison.rows:
        if row.confirmation is Confirmation.CONFIRMED_REGRESSION and row.id not in blocking:
            workflow.warn(f"{row.id}: confirmed regression: {not_blocking_words(row)}")
    for warning in result.gate.warnings:
        workflow.warn(warning)


@dataclass(frozen=True)
class Published:
    comment: str
    check: str
    comment_url: str | None = None
    check_url: str | None = None


def publish(
    workflow: Workflow,
    client: Any,
    result: CompareResult,
    *,
    pr_number: int,
    head_sha: str,
    fork: bool,
    comment_mode: str,
    check_name: str,
    record: str,
    author: str,
    details_url: str | None,
    context: CommentContext | None = None,
    annotations: Sequence[Annotation] = (),
    check_run_id: int | None = None,
    marker: str = LEGACY_MARKER,
    remeasured: bool = False,
    parts: tuple[str, ...] = (),
    parts_marker: str | None = None,
) -> Published:
    """Post the sticky comment and the check; report refusals as warnings, never raise.

    ``marker`` is the step's (``StepKey.marker``): each passk step edits only its own comment.
    """
    body = render_comment(
        result, marker=marker, record=record, details_url=details_url, context=context
    )
    comment_state = "skipped"
    if parts_marker is not None and comment_mode != "off":
        # The parts go first: the sticky comment's record names them.
        try:
            post_record_parts(client, pr_number, parts, parts_marker, author)
        except GitHubError as exc:
            workflow.warn(
                f"the record's attempts could not be posted ({exc.one_line()}): a re-run "
                "keeps a recorded failure but measures a pass again"
            )
    outcome = upsert_sticky_comment(
        client, pr_number, body, comment_mode, marker=marker, author=author
    )
    if outcome.action == "failed":
        comment_state = "failed"
        if fork and outcome.status == 403:
            workflow.warn(FORK_COMMENT_NOTICE)
        else:
            workflow.warn(f"no comment posted: {outcome.error}")
    elif outcome.action != "skipped":
        comment_state = outcome.action
        workflow.line(f"passk: comment {outcome.action}: {outcome.url or outcome.comment_id}")
        if outcome.author is not None and outcome.author != author:
            comment_state = "untrusted"  # posted, but a re-run will not trust it
            workflow.warn(
                f"the comment was posted as {outcome.author}, but passk trusts only records "
                f"by {author}: set the input `comment-author: {outcome.author}`"
            )
    check = publish_check(
        client,
        name=check_name,
        head_sha=head_sha,
        passed=result.gate.passed,
        title=with_base(
            (REMEASURED_TITLE if remeasured else "") + check_title(result),
            context.base_ref if context else None,
            context.base_sha if context else None,
        ),
        summary=without_record(body),
        annotations=annotations,
        check_run_id=check_run_id,
    )
    if check.used == "failed":
        if fork:
            workflow.warn(FORK_CHECK_NOTICE)
        else:
            workflow.warn(f"no check run or commit status posted: {check.error}")
    elif check.used == "commit_status":
        workflow.line(
            "passk: creating a check run was refused, so the result is a commit status "
            f"named {check_name!r} (grant `checks: write` for a check run)"
        )
    else:
        workflow.line(f"passk: check run {check_name!r} completed: {check.url or check.id}")
        if check.error:
            workflow.warn(check.error)
    return Published(
        comment=comment_state,
        check=check.used,
        comment_url=outcome.url,
        check_url=check.url if check.used == "check_run" else None,
    )


@dataclass(frozen=True)
class GatedFiles:
    """The gated dataset and the config, and the paths the repository names them by."""

    dataset: Dataset
    dataset_path: str
    """The dataset file relative to the repository root (for annotations)."""
    config_path: str
    """The config relative to the working directory (for ``passk compare --config``)."""
    allow_label: str | None
    approval: RecordedApproval | None = None
    """Who approved this head's protected changes with the allow label (``approval.py``)."""
    label_refusal: str | None = None
    """Why the allow label on the pull request does not count, when it does not."""


def dataset_annotations(result: CompareResult, where: GatedFiles | None) -> list[Annotation]:
    """A check-run annotation on the dataset line of each blocking row (and confirmed ones)."""
    if where is None:
        return []
    lines = {r.id: r.line for r in where.dataset.rows}
    return [
        Annotation(
            path=where.dataset_path,
            line=lines[row_id],
            title=title,
            message=message,
            level="failure" if blocking else "warning",
        )
        for row_id, title, message, blocking in row_annotations(result)
        if lines.get(row_id, 0) > 0
    ]


def step_label(inputs: ActionInputs) -> str | None:
    """How the comment's heading names this passk step, when it is not the only default one.

    ``refunds (services/refunds/passk.yml)``: the check name and the config as
    the repository names it, so two steps' comments read apart at a glance.
    """
    try:
        folder = inputs.working_directory.relative_to(inputs.workspace).as_posix()
    except ValueError:
        folder = "."
    config = inputs.config if folder == "." else f"{folder}/{inputs.config}"
    if (inputs.check_name, config) == ("passk", "passk.yml"):
        return None
    return f"{inputs.check_name} ({config})"


def _approval_words(approval: RecordedApproval) -> LabelApproval:
    return LabelApproval(
        label=approval.label,
        login=approval.login,
        role=approval.role,
        head_sha=approval.head_sha,
        base_ref=approval.base_ref,
    )


def comment_context(
    inputs: ActionInputs,
    pr: PullRequest,
    where: GatedFiles | None,
    history: History | None = None,
) -> CommentContext:
    """What the comment needs besides the result: commits, row inputs, the label, the paths."""
    return CommentContext(
        step=step_label(inputs),
        head_sha=pr.head_sha,
        base_sha=pr.base_sha,
        base_ref=pr.base_ref or None,
        config=where.config_path if where else inputs.config,
        inputs={r.id: r.input for r in where.dataset.rows} if where else {},
        allow_label=where.allow_label if where else None,
        approval=_approval_words(where.approval) if where and where.approval else None,
        label_refusal=where.label_refusal if where else None,
        result_path=RESULT_PATH,
        details_url=inputs.details_url(),
        history=history,
    )


# -- phase 4 of gate mode: the result file, the job summary, the comment and the check ----

RESULT_PATH = ".passk/result.json"
REPORT_PATH = ".passk/report.md"
UNPINNED = (
    "re-runs are not pinned: {why}, so re-running this job asks the agent again and may get "
    "a different result"
)


def publish_gate(
    result: CompareResult,
    inputs: ActionInputs,
    workflow: Workflow,
    client: GitHubClient | None,
    pr: PullRequest,
    prior: RecordLookup,
    committed_baseline: Run,
    *,
    where: GatedFiles | None = None,
    check_run_id: int | None = None,
    history: History | None = None,
) -> int:
    """Write, summarise and post the result; the exit code is the gate's, whatever GitHub says.

    ``where`` says where the rows and the config live, for the comment's inputs and
    "what next" (without it the comment leaves them out); ``history`` marks lost rows
    with their history on the base branch.
    """

    result_file = inputs.workspace / RESULT_PATH
    write_result(result, result_file)
    # The job summary starts with the comment's "Why it failed", inputs and history included.
    report = render_compare_report(result, context=comment_context(inputs, pr, where, history))
    write_text_atomic(inputs.workspace / REPORT_PATH, report)

    with workflow.group("passk: gate"):
        workflow.line(
            f"passk: gate {'passed' if result.gate.passed else 'failed'} "
            f"({len(result.gate.failures)} failure(s)); result in {RESULT_PATH}"
        )
        annotate(workflow, result)
    workflow.write_summary(report)

    context = comment_context(inputs, pr, where, history)
    if prior.record is not None and not prior.record.passed and result.gate.passed:
        context = replace(context, resolved_from=prior.record.head_sha)
    encoded, parts = split_record(
        record_for(
            result,
            head_sha=pr.head_sha,
            head_tree=prior.head_tree,
            base_sha=pr.base_sha,
            committed_baseline=committed_baseline,
            step=step_key(inputs).id,
            approval=where.approval if where else None,
        )
    )
    mode = comment_mode(
        inputs.comment,
        result.gate.passed,
        prior.comments,
        inputs.comment_author,
        step_key(inputs).marker,
    )
    published: Published | None = None
    if client is not None:
        with workflow.group("passk: publishing"):
            published = publish(
                workflow,
                client,
                result,
                pr_number=pr.number,
                head_sha=pr.head_sha,
                fork=pr.fork,
                comment_mode=mode,
                check_name=inputs.check_name,
                record=encoded,
                author=inputs.comment_author,
                details_url=inputs.details_url(),
                context=context,
                annotations=dataset_annotations(result, where),
                check_run_id=check_run_id,
                marker=step_key(inputs).marker,
                remeasured=prior.remeasured is not None,
                parts=parts,
                parts_marker=step_key(inputs).parts_marker,
            )
    # The record lives in the comment: without one, nothing pins a re-run.
    # (`comment: off` was already warned about before anything ran.)
    if mode != "off" and (published is None or published.comment in ("failed", "untrusted")):
        if published is None:
            why = "nothing could be posted to the pull request"
        elif published.comment == "untrusted":
            why = f"the comment holding passk's record is not by {inputs.comment_author}"
        elif pr.fork:
            why = "a fork's read-only token cannot post the comment that holds passk's record"
        else:
            why = "the comment that holds passk's record could not be posted"
        unpinned = UNPINNED.format(why=why)
        workflow.warn(unpinned)
        workflow.write_summary(f"\n> ⚠️ {unpinned[0].upper()}{unpinned[1:]}.\n")
    if inputs.comment == "changes" and mode == "off":
        workflow.line("passk: gate passed and no earlier comment to update: no comment (changes)")
    outputs = gate_outputs(result, RESULT_PATH)
    outputs["report"] = REPORT_PATH
    outputs["comment-url"] = (published.comment_url if published else None) or ""
    outputs["check-url"] = (published.check_url if published else None) or ""
    workflow.set_outputs(outputs)
    return EXIT_OK if result.gate.passed else EXIT_GATE_FAILED


def _number(value: float | None) -> str:
    """A plain decimal number for a workflow expression; empty when unknown."""
    return "" if value is None else plain_decimal(value)


def gate_outputs(result: CompareResult, result_path: str) -> dict[str, str]:
    metrics = result.comparison.candidate_metrics
    spend = summarize_spend(result.candidate)
    return {
        "passed": "true" if result.gate.passed else "false",
        "mean-accuracy": fraction(metrics.mean_accuracy),
        "pass-k": fraction(metrics.pass_k),
        "flip-rate": fraction(metrics.flip_rate),
        "gained": str(len(result.comparison.gained)),
        "lost": str(len(result.comparison.lost)),
        "result": result_path,
        "reused": "true" if result.reused else "false",
        "cost-per-decision": _number(spend.cost_per_decision),
        "latency-p95": _number(spend.latency_p95),
    }


def publish_could_not_run(
    error: AgentCouldNotRun,
    inputs: ActionInputs,
    workflow: Workflow,
    client: GitHubClient | None,
    pr: PullRequest,
    *,
    check_run_id: int | None = None,
) -> int:
    """A version of the agent could not run: say why everywhere a person looks; exit 2.

    The log gets the error annotation and the end of the agent's stderr, the job
    summary and the comment the same story, and the check fails with the cause in
    its title.  No record is written: nothing was measured, so a re-run runs again.
    """
    workflow.error(error.one_line(), title=f"passk: the {error.version} agent could not run")
    for line in error.stderr_tail.strip().splitlines()[-20:]:
        workflow.line(f"  | {line}")
    marker = step_key(inputs).marker
    body = render_agent_failure_comment(
        version=error.version,
        reason=error.reason,
        stderr_tail=error.stderr_tail,
        hint=error.hint,
        marker=marker,
        context=comment_context(inputs, pr, None),
        where=error.where,
        during_setup=error.during_setup,
    )
    workflow.write_summary(render_could_not_run(error))
    # A failure: `changes` comments too (it only stays quiet on a pass).
    mode = comment_mode(inputs.comment, False, [], inputs.comment_author, marker)
    if client is not None:
        with workflow.group("passk: publishing"):
            outcome = upsert_sticky_comment(
                client, pr.number, body, mode, marker=marker, author=inputs.comment_author
            )
            if outcome.action == "failed":
                workflow.warn(f"no comment posted: {outcome.error}")
            elif outcome.action != "skipped":
                where = outcome.url or outcome.comment_id
                workflow.line(f"passk: comment {outcome.action}: {where}")
            check = publish_check(
                client,
                name=inputs.check_name,
                head_sha=pr.head_sha,
                passed=False,
                title=could_not_run_title(error.version, error.reason, error.stderr_tail),
                summary=without_record(body).replace(marker, "", 1).lstrip("\n"),
                check_run_id=check_run_id,
            )
            if check.used == "failed":
                workflow.warn(f"no check run or commit status posted: {check.error}")
    workflow.set_outputs({"passed": "false", "result": "", "reused": "false"})
    return error.exit_code


def publish_could_not_finish(
    exc: BaseException,
    inputs: ActionInputs,
    workflow: Workflow,
    client: GitHubClient,
    pr: PullRequest | None,
    *,
    check_run_id: int | None,
    comments: Sequence[Mapping[str, Any]] | None,
    leave_comment: bool = False,
    head_sha: str | None = None,
) -> None:
    """passk stopped on an error after the check started: fail the check, say so, never raise.

    Whatever the error (bad input, GitHub, a bug in passk), the check run is
    completed as a failure whose title names it, never left ``in_progress``,
    and the sticky comment says the gate did not decide.  ``comments`` are the
    pull request's comments as passk read them (None: read them now); when
    they cannot be read (or ``leave_comment``: reading them is what failed),
    the comment is left alone, since posting could overwrite a record nobody
    read.  The comment keeps the record an earlier
    run left in it, so an error never wipes the verdicts a re-run replays.
    """
    reason = workflow.scrub(crash_line(exc))
    marker = step_key(inputs).marker
    commit = pr.head_sha if pr is not None else head_sha
    try:
        mode = comment_mode(inputs.comment, False, [], inputs.comment_author, marker)
        if leave_comment or pr is None:  # no pull request known yet: the check only
            mode = "off"
        if comments is None and mode != "off" and pr is not None:
            try:
                comments = client.list_issue_comments(pr.number)
            except GitHubError as error:
                workflow.warn(f"no comment posted: {error.one_line()}")
        if comments is not None and mode != "off" and pr is not None:
            body = render_could_not_finish_comment(
                reason,
                marker=marker,
                record=kept_record(comments, marker, inputs.comment_author),
                context=comment_context(inputs, pr, None),
                report_at=None if isinstance(exc, PasskError) else REPORT_BUGS_AT,
            )
            outcome = upsert_sticky_comment(
                client, pr.number, body, mode, marker=marker, author=inputs.comment_author
            )
            if outcome.action == "failed":
                workflow.warn(f"no comment posted: {outcome.error}")
        if commit is None:
            return
        check = publish_check(
            client,
            name=inputs.check_name,
            head_sha=commit,
            passed=False,
            title=could_not_finish_title(reason),
            summary=f"### ❌ passk could not finish\n\n{inline(reason, 2000)}\n\n"
            "Nothing was decided, so the gate fails: fix the cause above (the job log has "
            "the details) and re-run this job.",
            check_run_id=check_run_id,
        )
        if check.used == "failed":
            workflow.warn(f"the check run could not be completed: {check.error}")
    except Exception as error:  # reporting the error must never hide it
        workflow.warn(f"the check run may be left in progress: {workflow.scrub(crash_line(error))}")
