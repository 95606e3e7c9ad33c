"""The GitHub edge, the only part that knows GitHub: the REST client, the event, the
sticky comment, the check run, and the one sequence that publishes them."""

from passk_action.github.check_run import (
    Annotation,
    Check,
    CheckOutcome,
    publish_check,
    start_check,
)
from passk_action.github.client import GitHubClient
from passk_action.github.publish import Comment, Publication, Published, publish
from passk_action.github.sticky_comment import (
    MARKER,
    CommentOutcome,
    find_sticky_comment,
    upsert_sticky_comment,
)

__all__ = [
    "MARKER",
    "Annotation",
    "Check",
    "CheckOutcome",
    "Comment",
    "CommentOutcome",
    "GitHubClient",
    "Publication",
    "Published",
    "find_sticky_comment",
    "publish",
    "publish_check",
    "start_check",
    "upsert_sticky_comment",
]
