"""The ``pull_request`` payload a local run of the action reads, built from resolved refs.

On GitHub the runner writes the event a job reads (``GITHUB_EVENT_PATH``);
outside it, ``passk action --event-from BASE..HEAD`` writes one, so a local
run needs no event file whose shas were edited by hand.  Only the fields the
action reads are filled in, both sides in one repository (never a fork).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

LOCAL_REPOSITORY = "local/repository"
"""The repository named when the runner's ``GITHUB_REPOSITORY`` is not set."""


@dataclass(frozen=True)
class EventSide:
    """One side of the pull request: its commit, its ref (branch) and the label GitHub shows."""

    sha: str
    ref: str
    label: str


def local_repository(environ: Mapping[str, str]) -> str:
    """The repository a local event names: the runner's when set, else a placeholder."""
    return environ.get("GITHUB_REPOSITORY") or LOCAL_REPOSITORY


def pull_request_event(
    number: int,
    base: EventSide,
    head: EventSide,
    labels: Sequence[str] = (),
    repository: str = LOCAL_REPOSITORY,
) -> dict[str, Any]:
    """The ``synchronize`` payload of pull request ``number`` of ``head`` into ``base``."""
    if number < 1:
        raise UsageError("the pull request's number must be positive", where="--pr")

    def side(one: EventSide) -> dict[str, Any]:
        return {
            "sha": one.sha,
            "ref": one.ref,
            "label": one.label,
            "repo": {"full_name": repository},
        }

    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "base": side(base),
            "head": side(head),
            "labels": [{"name": name} for name in labels],
        },
        "repository": {"full_name": repository},
    }
