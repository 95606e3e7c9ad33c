"""The GitHub edge, the only part that knows GitHub: the REST client, the event, the
sticky comment and the check run."""

from passk_action.github.check_run import Annotation, CheckOutcome, publish_check, start_check
from passk_action.github.client import GitHubClient
from passk_action.github.sticky_comment import (
    MARKER,
    CommentOutcome,
    find_sticky_comment,
    upsert_sticky_comment,
)

__all__ = [
    "MARKER",
    "Annotation",
    "CheckOutcome",
    "CommentOutcome",
    "GitHubClient",
    "find_sticky_comment",
    "publish_check",
    "start_check",
    "upsert_sticky_comment",
]
