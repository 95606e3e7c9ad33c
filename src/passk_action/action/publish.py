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
from ..github.check_run import Annotation, Check
from ..github.event import PullRequest
from ..github.publish import Comment, Publication, Published, publish
from ..github.sticky_comment import (
    RecordedApproval,
    comment_mode,
    kept_record,
    record_for,
    split_record,
    without_record,
)
from ..github.workflow import Workflow
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
from ..report.reasons import reason, warnings
from ..store.artifact import write_text_atomic
from ..store.results import write_result
from .inputs import ActionInputs
from .rerun import RecordLookup
from .runtime import GateJob, fraction, step_key

REMEASURED_TITLE = "re-measured on request · "


def annotate(workflow: Workflow, result: CompareResult) -> None:
    """``::error`` per blocking row (at most 10), ``::warning`` per non-blocking regression."""
    rule = result.policy.rule
    failures = [(f.id or f"[{f.rule.value}]", reason(f, rule)) for f in result.gate.failures]
    workflow.annotate_rows(failures, title="passk gate")
    blocking = {f.id for f in result.gate.failures if f.id}
    for row in result.comparison.rows:
        if row.confirmation is Confirmation.CONFIRMED_REGRESSION and row.id not in blocking:
            workflow.warn(f"{row.id}: confirmed regression: {not_blocking_words(row)}")
    for warning in warnings(result.gate.warnings):
        workflow.warn(warning)


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
    """Who approved this head's protected changes with the allow label."""
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
        folder = inputs.working_directory.relative_to(inputs.runner.workspace).as_posix()
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
        details_url=inputs.runner.run_page,
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
    job: GateJob,
    pr: PullRequest,
    prior: RecordLookup,
    committed_baseline: Run,
    *,
    where: GatedFiles | None = None,
    history: History | None = None,
) -> int:
    """Write, summarise and post the result; the exit code is the gate's, whatever GitHub says.

    ``where`` says where the rows and the config live, for the comment's inputs and
    "what next" (without it the comment leaves them out); ``history`` marks lost rows
    with their history on the base branch.
    """
    inputs, workflow = job.inputs, job.workflow
    key = step_key(inputs)
    result_file = inputs.runner.workspace / RESULT_PATH
    write_result(result, result_file)
    # The job summary starts with the comment's "Why it failed", inputs and history included.
    report = render_compare_report(result, context=comment_context(inputs, pr, where, history))
    write_text_atomic(inputs.runner.workspace / REPORT_PATH, report)

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
    record, parts = split_record(
        record_for(
            result,
            head_sha=pr.head_sha,
            head_tree=prior.head_tree,
            base_sha=pr.base_sha,
            committed_baseline=committed_baseline,
            step=key.id,
            approval=where.approval if where else None,
        )
    )
    mode = comment_mode(
        inputs.comment, result.gate.passed, prior.comments, inputs.comment_author, key.marker
    )
    published: Published | None = None
    if job.client is not None:
        with workflow.group("passk: publishing"):
            body = render_comment(
                result,
                marker=key.marker,
                record=record,
                details_url=inputs.runner.run_page,
                context=context,
            )
            remeasured = REMEASURED_TITLE if prior.remeasured is not None else ""
            publication = Publication(
                comment=Comment(
                    pr.number,
                    body,
                    mode,
                    key.marker,
                    inputs.comment_author,
                    record_parts=parts,
                    parts_marker=key.parts_marker,
                ),
                check=Check(
                    name=inputs.check_name,
                    head_sha=pr.head_sha,
                    passed=result.gate.passed,
                    title=with_base(
                        remeasured + check_title(result), context.base_ref, context.base_sha
                    ),
                    summary=without_record(body),
                    annotations=dataset_annotations(result, where),
                ),
                fork=pr.fork,
                check_run_id=job.check_run_id,
            )
            published = publish(job.client, publication, warn=workflow.warn, line=workflow.line)
    # (`comment: off` was already warned about before anything ran.)
    if mode != "off":
        warn_unpinned(workflow, inputs.comment_author, pr.fork, published)
    if inputs.comment == "changes" and mode == "off":
        workflow.line("passk: gate passed and no earlier comment to update: no comment (changes)")
    outputs = gate_outputs(result, RESULT_PATH)
    outputs["report"] = REPORT_PATH
    outputs["comment-url"] = (published.comment_url if published else None) or ""
    outputs["check-url"] = (published.check_url if published else None) or ""
    workflow.set_outputs(outputs)
    return EXIT_OK if result.gate.passed else EXIT_GATE_FAILED


def warn_unpinned(workflow: Workflow, author: str, fork: bool, published: Published | None) -> None:
    """Say so when the comment holding the record did not reach the pull request: without
    it, nothing pins a re-run."""
    if published is None:
        why = "nothing could be posted to the pull request"
    elif published.comment == "untrusted":
        why = f"the comment holding passk's record is not by {author}"
    elif published.comment != "failed":
        return
    elif fork:
        why = "a fork's read-only token cannot post the comment that holds passk's record"
    else:
        why = "the comment that holds passk's record could not be posted"
    unpinned = UNPINNED.format(why=why)
    workflow.warn(unpinned)
    workflow.write_summary(f"\n> ⚠️ {unpinned[0].upper()}{unpinned[1:]}.\n")


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


def publish_could_not_run(error: AgentCouldNotRun, job: GateJob, pr: PullRequest) -> int:
    """A version of the agent could not run: say why everywhere a person looks; exit 2.

    The log gets the error annotation and the end of the agent's stderr, the job
    summary and the comment the same story, and the check fails with the cause in
    its title.  No record is written: nothing was measured, so a re-run runs again.
    """
    inputs, workflow = job.inputs, job.workflow
    workflow.error(error.one_line(), title=f"passk: the {error.version} agent could not run")
    for line in error.stderr_tail.strip().splitlines()[-20:]:
        workflow.line(f"  | {line}")
    marker = step_key(inputs).marker
    body = render_agent_failure_comment(
        error, marker=marker, context=comment_context(inputs, pr, None)
    )
    workflow.write_summary(render_could_not_run(error))
    # A failure: `changes` comments too (it only stays quiet on a pass).
    mode = comment_mode(inputs.comment, False, [], inputs.comment_author, marker)
    if job.client is not None:
        publication = Publication(
            comment=Comment(pr.number, body, mode, marker, inputs.comment_author),
            check=Check(
                name=inputs.check_name,
                head_sha=pr.head_sha,
                passed=False,
                title=could_not_run_title(error.version, error.reason, error.stderr_tail),
                summary=without_record(body).replace(marker, "", 1).lstrip("\n"),
            ),
            fork=pr.fork,
            check_run_id=job.check_run_id,
        )
        with workflow.group("passk: publishing"):
            publish(job.client, publication, warn=workflow.warn, line=workflow.line)
    workflow.set_outputs({"passed": "false", "result": "", "reused": "false"})
    return error.exit_code


def publish_could_not_finish(
    exc: BaseException,
    job: GateJob,
    pr: PullRequest | None,
    *,
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
    read.  The comment keeps the record an earlier run left in it, so an error
    never wipes the verdicts a re-run replays.  ``head_sha`` names the commit
    when no pull request is known yet.
    """
    client, inputs, workflow = job.client, job.inputs, job.workflow
    if client is None:
        return
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
        comment: Comment | None = None
        if comments is not None and mode != "off" and pr is not None:
            body = render_could_not_finish_comment(
                reason,
                marker=marker,
                record=kept_record(comments, marker, inputs.comment_author),
                context=comment_context(inputs, pr, None),
                report_at=None if isinstance(exc, PasskError) else REPORT_BUGS_AT,
            )
            comment = Comment(pr.number, body, mode, marker, inputs.comment_author)
        check = None
        if commit is not None:
            check = Check(
                name=inputs.check_name,
                head_sha=commit,
                passed=False,
                title=could_not_finish_title(reason),
                summary=f"### ❌ passk could not finish\n\n{inline(reason, 2000)}\n\n"
                "Nothing was decided, so the gate fails: fix the cause above (the job log has "
                "the details) and re-run this job.",
            )
        publication = Publication(
            comment=comment,
            check=check,
            fork=pr.fork if pr is not None else False,
            check_run_id=job.check_run_id,
        )
        publish(client, publication, warn=workflow.warn, line=workflow.line)
    except Exception as error:  # reporting the error must never hide it
        workflow.warn(f"the check run may be left in progress: {workflow.scrub(crash_line(error))}")
