"""The webhook payload the run was triggered by (``GITHUB_EVENT_PATH``, FACTS.md D3).

Every mode that reads an event starts the same way, :func:`read_event`: refuse
``pull_request_target`` and any event the mode cannot gate, then read the
payload (when first asked) into the pull request, the measuring run and the
trigger.  An event can be stale (a re-run replays the old one), so the pull
request is also read as GitHub's API answers for it now.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GitHubError, UsageError

if TYPE_CHECKING:
    from .client import GitHubClient

_SHA = re.compile(r"[0-9a-f]{40}")

PWN_REQUEST = (
    "passk refuses to run on `pull_request_target`: that event runs with a write token and "
    "secrets, and passk executes the pull request's agent, so a fork could take over the "
    "repository (a 'pwn request', FACTS.md E3)"
)
EVENT_PATH = "GITHUB_EVENT_PATH"


@dataclass(frozen=True)
class PullRequest:
    """What the gate needs from a ``pull_request`` event."""

    number: int
    base_sha: str
    head_sha: str
    base_ref: str
    head_ref: str
    labels: tuple[str, ...]
    fork: bool
    """The head branch lives in another repository: the token is read-only (FACTS.md E1)."""
    head_repository: str | None = None
    """The head branch's repository (``owner/name``); None when GitHub names none (deleted)."""


@dataclass(frozen=True)
class Trigger:
    """Who did what to start this run, as GitHub's event payload says.

    ``action``, ``label`` and ``sender`` are a ``pull_request`` event's (the
    label a ``labeled`` event added); ``run_actor`` and ``run_created_at`` are
    the measuring run's under ``workflow_run``.  Used to bind the allow label
    to the head it was added at.
    """

    action: str | None = None
    label: str | None = None
    sender: str | None = None
    run_actor: str | None = None
    run_created_at: str | None = None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def trigger_from(payload: dict[str, Any]) -> Trigger:
    """The :class:`Trigger` of a ``pull_request`` or ``workflow_run`` payload."""
    run = payload.get("workflow_run")
    if isinstance(run, dict):
        return Trigger(
            run_actor=_text(_get(run, "actor", "login")),
            run_created_at=_text(run.get("created_at")),
        )
    return Trigger(
        action=_text(payload.get("action")),
        label=_text(_get(payload, "label", "name")),
        sender=_text(_get(payload, "sender", "login")),
    )


def read_payload(path: str | None) -> dict[str, Any]:
    """The event JSON; a missing or unreadable file is a usage error naming it."""
    if not path:
        raise UsageError(
            "GITHUB_EVENT_PATH is not set",
            where="GITHUB_EVENT_PATH",
            hint="run passk action inside a GitHub Actions job (the runner sets it); on a "
            "laptop, `passk compare --base main` gives the pull request's verdict without one, "
            "and `passk action --event-from main..HEAD --out event.json` writes one",
        )
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(
            f"cannot read the event payload: {exc.strerror or exc}", where=path
        ) from exc
    except ValueError as exc:
        raise UsageError(
            f"the event payload is not JSON: {exc}", where=path, hint="the runner writes it"
        ) from exc
    if not isinstance(doc, dict):
        raise UsageError("the event payload is not a JSON object", where=path)
    return doc


def _get(doc: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def pull_request_from(payload: dict[str, Any], where: str) -> PullRequest:
    """The pull request of a ``pull_request`` payload, checked field by field."""
    pr = payload.get("pull_request")
    if not isinstance(pr, dict):
        raise UsageError("the event has no `pull_request` object", where=where)
    number = pr.get("number", payload.get("number"))
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise UsageError("`pull_request.number` is missing or not a number", where=where)
    shas = {}
    for side in ("base", "head"):
        sha = _get(pr, side, "sha")
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise UsageError(f"`pull_request.{side}.sha` is not a commit sha", where=where)
        shas[side] = sha
    labels = tuple(
        str(label["name"])
        for label in pr.get("labels") or ()
        if isinstance(label, dict) and isinstance(label.get("name"), str)
    )
    base_repo = _get(pr, "base", "repo", "full_name")
    head_repo = _get(pr, "head", "repo", "full_name")
    # A deleted fork has head.repo null: it came from elsewhere, so treat it as a fork.
    # (``head.repo.fork`` is no test: it is true for every branch of a repo that is a fork.)
    fork = head_repo is None or head_repo != base_repo
    return PullRequest(
        number=number,
        base_sha=shas["base"],
        head_sha=shas["head"],
        base_ref=str(_get(pr, "base", "ref") or ""),
        head_ref=str(_get(pr, "head", "ref") or ""),
        labels=labels,
        fork=fork,
        head_repository=head_repo if isinstance(head_repo, str) else None,
    )


@dataclass(frozen=True)
class WorkflowRun:
    """What a ``workflow_run`` event says of the run that triggered it: GitHub's own word.

    In the two-job mode's gating workflow this is the trusted account of the
    measuring run; the measured file it uploaded is the pull request's.
    """

    id: int
    event: str
    """The event the measuring run ran on (``pull_request``)."""
    head_sha: str
    head_repository: str | None
    pull_requests: tuple[int, ...]
    """The pull requests GitHub lists for that run; empty for one from a fork."""


def workflow_run_from(payload: dict[str, Any], where: str) -> WorkflowRun:
    """The ``workflow_run`` of a ``workflow_run`` payload, checked field by field."""
    run = payload.get("workflow_run")
    if not isinstance(run, dict):
        raise UsageError("the event has no `workflow_run` object", where=where)
    run_id, sha = run.get("id"), run.get("head_sha")
    if not isinstance(run_id, int) or isinstance(run_id, bool):
        raise UsageError("`workflow_run.id` is missing or not a number", where=where)
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise UsageError("`workflow_run.head_sha` is not a commit sha", where=where)
    numbers = tuple(
        pr["number"]
        for pr in run.get("pull_requests") or ()
        if isinstance(pr, dict) and isinstance(pr.get("number"), int)
    )
    repository = _get(run, "head_repository", "full_name")
    return WorkflowRun(
        id=run_id,
        event=str(run.get("event") or ""),
        head_sha=sha,
        head_repository=repository if isinstance(repository, str) else None,
        pull_requests=numbers,
    )


def require_event(event_name: str, allowed: tuple[str, ...], what: str, hint: str) -> None:
    """Refuse ``pull_request_target`` (a pwn request), and any event but ``allowed``."""
    if event_name == "pull_request_target":
        raise UsageError(
            PWN_REQUEST,
            where="GITHUB_EVENT_NAME=pull_request_target",
            hint="trigger the workflow with `on: pull_request` instead",
        )
    if event_name not in allowed:
        raise UsageError(
            f"nothing to {what} on a {event_name or 'unknown'!r} event",
            where="input `mode`",
            hint=hint,
        )


@dataclass(frozen=True)
class Event:
    """The event this run was triggered by, its payload read when first asked for.

    Reading late keeps each mode's own checks (an input it needs) ahead of
    the payload's, in the order a user fixes them.
    """

    name: str
    path: str | None

    @property
    def where(self) -> str:
        """Where an error in the payload is: its file, or the variable that names it."""
        return self.path or EVENT_PATH

    @cached_property
    def payload(self) -> dict[str, Any]:
        return read_payload(self.path)

    def pull_request(self) -> PullRequest:
        return pull_request_from(self.payload, self.where)

    def workflow_run(self) -> WorkflowRun:
        return workflow_run_from(self.payload, self.where)

    def trigger(self) -> Trigger:
        return trigger_from(self.payload)


def read_event(
    name: str, path: str | None, allowed: tuple[str, ...], what: str, hint: str
) -> Event:
    """The one prologue of the modes that read an event: refuse the wrong one, then read it.

    ``allowed`` are the events the mode can ``what``; ``hint`` says which to use.
    """
    require_event(name, allowed, what, hint)
    return Event(name, path)


def confirm_current_base(
    client: GitHubClient | None, pr: PullRequest, warn: Callable[[str], None]
) -> None:
    """Refuse, before any check is posted, an event for a base the pull request left.

    A re-run of an old run replays its event: after the pull request was
    retargeted, its base is another branch, and a verdict against that branch
    would land on the head commit as if it were the current one.  GitHub's
    answer for the pull request names the current base; when it cannot be read
    the run goes on (the check names the base it gated against).
    """
    if client is None:
        return
    try:
        current = client.get_pull(pr.number)
    except GitHubError as exc:
        warn(f"cannot confirm the pull request's current base: {exc.one_line()}")
        return
    ref = _get(current, "base", "ref")
    if isinstance(ref, str) and pr.base_ref and ref != pr.base_ref:
        raise UsageError(
            f"this run's event is for the base {pr.base_ref!r}, but pull request #{pr.number} "
            f"now targets {ref!r}: its verdict would not be about the current base, so nothing "
            "is run or posted",
            where="GITHUB_EVENT_PATH",
            hint="the run on the pull request's `edited` event gates it against its current "
            "base; re-run that one",
        )


def fetch_pull_request(client: GitHubClient, number: int) -> PullRequest:
    """Pull request ``number`` as GitHub's API answers for it now, checked field by field."""
    return pull_request_from({"pull_request": client.get_pull(number)}, f"GET pulls/{number}")
