"""A ``pull_request`` event for a local run of the action, from two refs of the repository.

The runner writes the event a job reads (``GITHUB_EVENT_PATH``); outside
GitHub, ``passk action --event-from BASE..HEAD`` writes one, so a local run of
the action needs no event file whose shas were edited by hand.  Only the fields
the action reads are filled in, both sides in one repository (not a fork).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import UsageError
from .gitrepo import GitRepo

LOCAL_REPOSITORY = "local/repository"
"""The repository named when ``GITHUB_REPOSITORY`` is not set."""


def parse_range(text: str) -> tuple[str, str]:
    """``BASE..HEAD`` as its two refs; anything else is a usage error saying the form."""
    base, dots, head = text.partition("..")
    if not dots or not base or not head or head.startswith("."):
        raise UsageError(
            f"--event-from {text!r} is not BASE..HEAD",
            where="--event-from",
            hint="name two refs, e.g. --event-from main..HEAD",
        )
    return base, head


def local_event(
    repo: GitRepo,
    base: str,
    head: str,
    *,
    number: int,
    labels: Sequence[str] = (),
    repository: str = LOCAL_REPOSITORY,
) -> dict[str, Any]:
    """The payload of pull request ``number`` of ``head`` into ``base``: shas resolved by git.

    The head's ref is its branch when ``head`` is ``HEAD`` on a branch.
    """
    if number < 1:
        raise UsageError("the pull request's number must be positive", where="--pr")
    head_ref = (repo.current_branch() if head == "HEAD" else None) or head

    def side(ref: str, name: str) -> dict[str, Any]:
        return {
            "sha": repo.resolve(ref),
            "ref": name,
            "label": ref,
            "repo": {"full_name": repository},
        }

    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "base": side(base, base),
            "head": side(head, head_ref),
            "labels": [{"name": name} for name in labels],
        },
        "repository": {"full_name": repository},
    }
