"""What passk publishes on a pull request, in one sequence: its comment, then its check.

Every mode posts the same way: the record's part comments (when the record is
too large for the sticky comment, which names them), the sticky comment, then
the check run, or a commit status when creating a check run is refused.
Nothing here raises on a refused write or changes the gate: a fork's
read-only token (FACTS.md E1/E2), missing ``permissions:`` or an outage past
the retry budget each become one warning, and the job still exits with the
gate's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import GitHubError
from .check_run import Check, CheckOutcome, publish_check
from .sticky_comment import CommentOutcome, post_record_parts, upsert_sticky_comment

if TYPE_CHECKING:
    from .client import GitHubClient

FORK_COMMENT_NOTICE = (
    "read-only token (pull request from a fork): no comment posted; "
    "the report is in the job summary"
)
FORK_CHECK_NOTICE = (
    "read-only token (pull request from a fork): no check run or commit status posted; "
    "this job's own status carries the gate"
)


@dataclass(frozen=True)
class Comment:
    """passk's sticky comment for one step of one pull request, and where its record goes."""

    pr_number: int
    body: str
    mode: str
    """``update``, ``new`` or ``off``: what the input ``comment`` comes to for this run."""
    marker: str
    """The first line of this step's comment: each step edits only its own."""
    author: str
    """The login passk posts as: a comment GitHub says someone else wrote is not trusted."""
    record_parts: tuple[str, ...] = ()
    """The record's part comments, posted first (the comment's record names them)."""
    parts_marker: str | None = None
    """The first line of this step's part comments; None: the record has no parts."""


@dataclass(frozen=True)
class Publication:
    """What one passk step publishes on a pull request: a comment, then a check."""

    comment: Comment | None
    """None: no comment this time (no pull request known, or its comments unread)."""
    check: Check | None
    """None: no commit to put a check on."""
    fork: bool = False
    """The pull request comes from a fork: its token is read-only, and a refusal says so."""
    check_run_id: int | None = None
    """The ``in_progress`` check run started for this job, completed here."""


CommentState = Literal["created", "updated", "skipped", "failed", "untrusted"]
"""``untrusted``: posted, but as another login than passk trusts, so a re-run ignores it."""


@dataclass(frozen=True)
class Published:
    """What reached the pull request."""

    comment: CommentState
    check: Literal["check_run", "commit_status", "failed", "skipped"]
    comment_url: str | None = None
    check_url: str | None = None


def publish(
    client: GitHubClient,
    publication: Publication,
    *,
    warn: Callable[[str], None],
    line: Callable[[str], None],
) -> Published:
    """Post the comment (its record's parts first), then the check; say what happened.

    A refusal is a ``warn`` line, a success a ``line``; nothing raises.
    """
    comment_state: CommentState = "skipped"
    comment_url: str | None = None
    if publication.comment is not None:
        comment_state, comment_url = _publish_comment(
            client, publication.comment, publication.fork, warn, line
        )
    if publication.check is None:
        return Published(comment=comment_state, check="skipped", comment_url=comment_url)
    check = publish_check(client, publication.check, check_run_id=publication.check_run_id)
    _say_check(check, publication.check.name, publication.fork, warn, line)
    return Published(
        comment=comment_state,
        check=check.used,
        comment_url=comment_url,
        check_url=check.url if check.used == "check_run" else None,
    )


def _publish_comment(
    client: GitHubClient,
    comment: Comment,
    fork: bool,
    warn: Callable[[str], None],
    line: Callable[[str], None],
) -> tuple[CommentState, str | None]:
    if comment.parts_marker is not None and comment.mode != "off":
        try:
            post_record_parts(
                client,
                comment.pr_number,
                comment.record_parts,
                comment.parts_marker,
                comment.author,
            )
        except GitHubError as exc:
            warn(
                f"the record's attempts could not be posted ({exc.one_line()}): a re-run "
                "keeps a recorded failure but measures a pass again"
            )
    outcome: CommentOutcome = upsert_sticky_comment(
        client,
        comment.pr_number,
        comment.body,
        comment.mode,
        marker=comment.marker,
        author=comment.author,
    )
    if outcome.action == "failed":
        if fork and outcome.status == 403:
            warn(FORK_COMMENT_NOTICE)
        else:
            warn(f"no comment posted: {outcome.error}")
        return "failed", None
    if outcome.action == "skipped":
        return "skipped", None
    line(f"passk: comment {outcome.action}: {outcome.url or outcome.comment_id}")
    if outcome.author is not None and outcome.author != comment.author:
        warn(
            f"the comment was posted as {outcome.author}, but passk trusts only records "
            f"by {comment.author}: set the input `comment-author: {outcome.author}`"
        )
        return "untrusted", outcome.url
    return outcome.action, outcome.url


def _say_check(
    check: CheckOutcome,
    name: str,
    fork: bool,
    warn: Callable[[str], None],
    line: Callable[[str], None],
) -> None:
    if check.used == "failed":
        if fork:
            warn(FORK_CHECK_NOTICE)
        else:
            warn(f"no check run or commit status posted: {check.error}")
    elif check.used == "commit_status":
        line(
            "passk: creating a check run was refused, so the result is a commit status "
            f"named {name!r} (grant `checks: write` for a check run)"
        )
    else:
        line(f"passk: check run {name!r} completed: {check.url or check.id}")
        if check.error:
            warn(check.error)
