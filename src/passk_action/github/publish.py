"""Publishing a report on a pull request: the sticky comment, the check, and size limits.

These helpers never crash the action on a refused write: a pull request from
a fork gets a read-only token (FACTS.md E1/E2), and losing the PR comment must
not lose the gate result.  They return what happened; the caller decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from passk_action.errors import ConfigError, GitHubError
from passk_action.github.client import ANNOTATIONS_PER_REQUEST, Conclusion
from passk_action.report.truncate import COMMENT_LIMIT, fit_comment

if TYPE_CHECKING:
    from passk_action.github.client import GitHubClient

MARKER = "<!-- passk:sticky-comment -->"
COMMENT_MODES = ("update", "new", "off")


@dataclass(frozen=True)
class CommentOutcome:
    """What happened to the sticky comment."""

    action: Literal["created", "updated", "skipped", "failed"]
    comment_id: int | None = None
    url: str | None = None
    error: str | None = None
    status: int | None = None
    author: str | None = None
    """The login GitHub says wrote the comment."""


@dataclass(frozen=True)
class CheckOutcome:
    """Which GitHub mechanism carried the pass/fail result, if any."""

    used: Literal["check_run", "commit_status", "failed"]
    id: int | None = None
    url: str | None = None
    error: str | None = None
    fallback_reason: str | None = None


# -- sticky comment ---------------------------------------------------------------


def _marked(
    comments: list[dict[str, Any]], marker: str, author: str | None
) -> list[dict[str, Any]]:
    found = [
        c
        for c in comments
        if marker in str(c.get("body") or "")
        and (author is None or (c.get("user") or {}).get("login") == author)
    ]
    # Comment ids grow with time on GitHub; the id breaks ties between equal timestamps.
    return sorted(found, key=lambda c: (str(c.get("created_at", "")), int(c.get("id", 0))))


def find_sticky_comment(
    client: GitHubClient, issue_number: int, marker: str = MARKER, *, author: str | None = None
) -> dict[str, Any] | None:
    """The newest comment carrying ``marker`` (optionally written by ``author``), or None.

    Pass ``author`` (e.g. ``github-actions[bot]``) when the comment's content is
    trusted later: anyone can paste the marker into a comment of their own.
    """
    marked = _marked(client.list_issue_comments(issue_number), marker, author)
    return marked[-1] if marked else None


def upsert_sticky_comment(
    client: GitHubClient,
    issue_number: int,
    body: str,
    mode: str,
    marker: str = MARKER,
    *,
    author: str | None = None,
    limit: int = COMMENT_LIMIT,
) -> CommentOutcome:
    """Post ``body`` as passk's one comment on the pull request.

    ``update``: edit the newest marked comment (searching every page), or create
    one; older marked duplicates are left alone.  ``new``: delete every marked
    comment, then create one.  ``off``: do nothing.  A refused call (e.g. 403 on
    a fork's read-only token) is reported as ``failed``, not raised.
    """
    if mode not in COMMENT_MODES:
        raise ConfigError(
            f"unknown comment mode {mode!r}",
            where="comment-mode",
            hint="use one of: " + ", ".join(COMMENT_MODES),
        )
    if mode == "off":
        return CommentOutcome("skipped")
    if marker not in body:
        body = f"{marker}\n{body}"
    body = fit_comment(body, limit)
    try:
        marked = _marked(client.list_issue_comments(issue_number), marker, author)
        if mode == "update" and marked:
            comment = client.update_issue_comment(int(marked[-1]["id"]), body)
            return _outcome("updated", comment)
        if mode == "new":
            for old in marked:
                client.delete_issue_comment(int(old["id"]))
        return _outcome("created", client.create_issue_comment(issue_number, body))
    except GitHubError as exc:
        return CommentOutcome("failed", error=str(exc), status=exc.status)


def _outcome(action: Literal["created", "updated"], comment: dict[str, Any]) -> CommentOutcome:
    comment_id = comment.get("id")
    url = comment.get("html_url")
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return CommentOutcome(
        action,
        comment_id=comment_id if isinstance(comment_id, int) else None,
        url=url if isinstance(url, str) else None,
        author=login if isinstance(login, str) else None,
    )


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


def publish_check(
    client: GitHubClient,
    *,
    name: str,
    head_sha: str,
    passed: bool,
    title: str,
    summary: str,
    text: str | None = None,
    annotations: Sequence[Annotation] = (),
    check_run_id: int | None = None,
) -> CheckOutcome:
    """Complete the check run ``check_run_id`` (or create a completed one); on 403 a status.

    Annotations go ``ANNOTATIONS_PER_REQUEST`` at a time: the first batch with
    the conclusion, the rest in further updates (GitHub appends them).
    Creating check runs needs a token with ``checks: write``; a personal
    token or a restricted ``GITHUB_TOKEN`` is refused, but may still set
    statuses, which branch protection can require just the same.
    """
    conclusion: Conclusion = "success" if passed else "failure"
    notes = [a.to_json() for a in annotations]
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
                    title=title,
                    summary=summary,
                    text=text,
                    annotations=batches[0],
                )
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise
                run = None  # the run we started is gone or ours no more: make a new one
        if run is None:
            run = client.create_check_run(
                name=name,
                head_sha=head_sha,
                conclusion=conclusion,
                title=title,
                summary=summary,
                text=text,
                annotations=batches[0],
            )
        run_id = _int(run.get("id"))
        if run_id is not None:
            for batch in batches[1:]:
                client.update_check_run(
                    run_id, conclusion=None, title=title, summary=summary, annotations=batch
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
            sha=head_sha,
            state="success" if passed else "failure",
            context=name,
            description=title,
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
