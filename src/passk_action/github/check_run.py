"""The check run that carries the gate on the head commit: started, completed, and the
stale ones a stopped run left.

These helpers never crash the action on a refused write: a pull request from
a fork gets a read-only token (FACTS.md E1/E2), and losing the PR comment must
not lose the gate result.  They return what happened; the caller decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from passk_action.errors import GitHubError
from passk_action.github.client import ANNOTATIONS_PER_REQUEST, Conclusion

if TYPE_CHECKING:
    from passk_action.github.client import GitHubClient


@dataclass(frozen=True)
class CheckOutcome:
    """Which GitHub mechanism carried the pass/fail result, if any."""

    used: Literal["check_run", "commit_status", "failed"]
    id: int | None = None
    url: str | None = None
    error: str | None = None
    fallback_reason: str | None = None


# -- check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Annotation:
    """A check-run annotation on one line of a file in the repository."""

    path: str
    line: int
    title: str
    message: str
    level: Literal["notice", "warning", "failure"] = "failure"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_line": self.line,
            "end_line": self.line,
            "annotation_level": self.level,
            "title": self.title[:255],
            "message": self.message[:64_000],
        }


IN_PROGRESS_TITLE = "running"
IN_PROGRESS_SUMMARY = (
    "passk is running the candidate k times per row and confirming lost rows; "
    "this check completes with the gate."
)


def start_check(
    client: GitHubClient, *, name: str, head_sha: str, details_url: str | None = None
) -> CheckOutcome:
    """An ``in_progress`` check run, created when the gate starts, completed by publish_check.

    Refused (a fork's read-only token, no ``checks: write``) is ``failed``,
    not raised: publish_check then tries again, then falls back to a status.
    """
    try:
        run = client.create_check_run(
            name=name,
            head_sha=head_sha,
            conclusion=None,
            title=IN_PROGRESS_TITLE,
            summary=IN_PROGRESS_SUMMARY,
            details_url=details_url,
        )
    except GitHubError as exc:
        return CheckOutcome("failed", error=str(exc))
    return CheckOutcome("check_run", id=_int(run.get("id")), url=_str(run.get("html_url")))


STALE_TITLE = "stopped before it finished"
STALE_SUMMARY = (
    "This run of passk was stopped (killed, cancelled, or its runner lost) before it could "
    "complete this check; a later run of the same check on this commit completed it as "
    "cancelled. That later run's check carries the gate."
)


def complete_stale_checks(client: GitHubClient, *, name: str, head_sha: str) -> list[int]:
    """Complete as ``cancelled`` every check run ``name`` on ``head_sha`` left in progress.

    A killed action never completes the check it started, which then spins on
    the pull request for ever; the next run of the same check on the same
    commit calls this before it starts its own.  A run still alive completes
    its check again when it finishes (a conclusion can be updated).  Best
    effort: the ids completed; nothing when the token may not list them.
    """
    try:
        found = client.list_check_runs(head_sha=head_sha, name=name, status="in_progress")
    except GitHubError:
        return []
    completed: list[int] = []
    for run in found:
        run_id = _int(run.get("id"))
        stale = (run.get("name"), run.get("head_sha"), run.get("status")) == (
            name,
            head_sha,
            "in_progress",
        )
        if run_id is None or not stale:
            continue
        try:
            client.update_check_run(
                run_id, conclusion="cancelled", title=STALE_TITLE, summary=STALE_SUMMARY
            )
        except GitHubError:
            continue
        completed.append(run_id)
    return completed


@dataclass(frozen=True)
class Check:
    """The check that carries the gate on a commit: its name, commit, conclusion and words."""

    name: str
    head_sha: str
    passed: bool
    title: str
    summary: str
    annotations: Sequence[Annotation] = ()


def begin_check(
    client: GitHubClient | None,
    *,
    name: str,
    head_sha: str,
    details_url: str | None,
    line: Callable[[str], None],
) -> int | None:
    """The job's check run, ``in_progress`` from the start so the pull request shows passk is
    at work, once those a stopped run of the same check left in progress on this commit are
    completed; its id, or None (no client, or refused: publishing tries again, then falls
    back to a commit status)."""
    if client is None:
        return None
    stale = complete_stale_checks(client, name=name, head_sha=head_sha)
    if stale:
        line(
            f"passk: completed {len(stale)} check run(s) {name!r} that a stopped "
            "run left in progress on this commit (as cancelled)"
        )
    started = start_check(client, name=name, head_sha=head_sha, details_url=details_url)
    if started.id is not None:
        line(f"passk: check run {name!r} in progress: {started.url}")
    return started.id


def publish_check(
    client: GitHubClient, check: Check, *, check_run_id: int | None = None
) -> CheckOutcome:
    """Complete the check run ``check_run_id`` (or create a completed one); on 403 a status.

    Annotations go ``ANNOTATIONS_PER_REQUEST`` at a time: the first batch with
    the conclusion, the rest in further updates (GitHub appends them).
    Creating check runs needs a token with ``checks: write``; a personal
    token or a restricted ``GITHUB_TOKEN`` is refused, but may still set
    statuses, which branch protection can require just the same.
    """
    conclusion: Conclusion = "success" if check.passed else "failure"
    notes = [a.to_json() for a in check.annotations]
    batches = [
        notes[i : i + ANNOTATIONS_PER_REQUEST]
        for i in range(0, len(notes), ANNOTATIONS_PER_REQUEST)
    ] or [[]]
    run: dict[str, Any] | None = None
    reason = ""
    try:
        if check_run_id is not None:
            try:
                run = client.update_check_run(
                    check_run_id,
                    conclusion=conclusion,
                    title=check.title,
                    summary=check.summary,
                    annotations=batches[0],
                )
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise
                run = None  # the run we started is gone or ours no more: make a new one
        if run is None:
            run = client.create_check_run(
                name=check.name,
                head_sha=check.head_sha,
                conclusion=conclusion,
                title=check.title,
                summary=check.summary,
                annotations=batches[0],
            )
        run_id = _int(run.get("id"))
        if run_id is not None:
            for batch in batches[1:]:
                client.update_check_run(
                    run_id,
                    conclusion=None,
                    title=check.title,
                    summary=check.summary,
                    annotations=batch,
                )
    except GitHubError as exc:
        if run is not None:  # the conclusion is posted; only some annotations are missing
            return CheckOutcome(
                "check_run",
                id=_int(run.get("id")),
                url=_str(run.get("html_url")),
                error=f"some annotations were not posted: {exc}",
            )
        if exc.status != 403:
            return CheckOutcome("failed", error=str(exc))
        reason = str(exc)
    else:
        return CheckOutcome("check_run", id=_int(run.get("id")), url=_str(run.get("html_url")))
    try:
        status = client.create_commit_status(
            sha=check.head_sha,
            state="success" if check.passed else "failure",
            context=check.name,
            description=check.title,
        )
    except GitHubError as exc:
        return CheckOutcome(
            "failed", error=f"{reason}; commit status fallback: {exc}", fallback_reason=reason
        )
    return CheckOutcome(
        "commit_status",
        id=_int(status.get("id")),
        url=_str(status.get("url")),
        fallback_reason=reason,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
