"""The GitHub edge: a small REST client and the publishing helpers built on it."""

from passk_action.github.client import GitHubClient
from passk_action.github.publish import (
    MARKER,
    Annotation,
    CheckOutcome,
    CommentOutcome,
    find_sticky_comment,
    publish_check,
    start_check,
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
