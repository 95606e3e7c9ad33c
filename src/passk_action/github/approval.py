"""Whether the allow label approves the protected changes of *this* head commit.

A label is a fact about the pull request, not about a commit, and anyone who
may label can add it.  So it counts only when all of these hold:

1. **Who:** GitHub's list of the pull request's events (``issues/list-events``)
   says who last added the base config's ``gate.allow_label`` (and that it was not
   removed since), and GitHub says that person's permission on the repository
   (``repos/get-collaborator-permission-level``) is ``write`` or ``admin``
   (``maintain`` reads as ``write``; ``triage`` as ``read``, which does not count).
2. **What:** the approval is for one head commit and one base branch, the ones
   GitHub names for the moment the label was added:

   - the run of the ``labeled`` event itself: the payload (GitHub's own, at
     ``GITHUB_EVENT_PATH``) names the label, its sender and the head as it was
     then; the sender must be the person the events list names;
   - under ``workflow_run`` (the two-job mode's gating workflow for forks), the
     measuring run GitHub says that same person triggered, created at or after the
     label, for this head;
   - any later run of the same head and base (a re-run, an ``edited`` event)
     finds the approval in passk's record in the sticky comment (only comments
     by ``comment-author`` are read), bound to that label event.

   Why not compare times with the head's push: GitHub's API gives no trusted
   time at which a commit became the head (a commit's own dates are the
   author's to set), so an order of events could be forged; the head the
   ``labeled`` payload names cannot.  Any other head, a later push included,
   is not approved: a person with write access removes the label and adds it again.

With no token nothing can be asked, and the label does not count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import GitHubError
from .client import GitHubClient
from .event import PullRequest, Trigger
from .sticky_comment import GateRecord, RecordedApproval

WRITE_PERMISSIONS = frozenset({"write", "admin"})
"""GitHub's legacy ``permission`` values that count; ``maintain`` is reported as ``write``."""
AGAIN = "a person with write access removes the label and adds it again"


@dataclass(frozen=True)
class LabelDecision:
    """The approval that counts for this run, or why the label on the pull request does not."""

    approval: RecordedApproval | None
    refusal: str | None = None
    """One line for the log and the comment; None when the label counts or is absent."""


def short_sha(sha: str) -> str:
    return sha[:7]


def _login(node: Any) -> str | None:
    login = node.get("login") if isinstance(node, dict) else None
    return login if isinstance(login, str) and login else None


def latest_label_event(events: Sequence[Mapping[str, Any]], label: str) -> Mapping[str, Any] | None:
    """The ``labeled`` event that put ``label`` on, when it is still on; else None."""
    found: Mapping[str, Any] | None = None
    for event in events:
        name = event.get("label", {}).get("name") if isinstance(event.get("label"), dict) else None
        if name != label:
            continue
        if event.get("event") == "labeled":
            found = event
        elif event.get("event") == "unlabeled":
            found = None
    return found


def _time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _bound_head(label: str, actor: str, event: Mapping[str, Any], trigger: Trigger) -> bool:
    """Whether GitHub's account of this run says the label was added at ``pr``'s head."""
    if trigger.action == "labeled":
        return trigger.label == label and trigger.sender == actor
    if trigger.run_actor is not None:
        labeled_at, created_at = _time(event.get("created_at")), _time(trigger.run_created_at)
        return (
            trigger.run_actor == actor
            and labeled_at is not None
            and created_at is not None
            and created_at >= labeled_at
        )
    return False


def decide_label(
    client: GitHubClient | None,
    pr: PullRequest,
    label: str,
    trigger: Trigger,
    record: GateRecord | None,
) -> LabelDecision:
    """Whether ``label`` (on the pull request) approves ``pr.head_sha`` against ``pr.base_ref``."""
    if label not in pr.labels:
        return LabelDecision(None)
    if client is None:
        return LabelDecision(
            None,
            f"the label {label!r} does not count: with no github-token passk cannot ask GitHub "
            "who added it",
        )
    try:
        event = latest_label_event(client.list_issue_events(pr.number), label)
    except GitHubError as exc:
        return LabelDecision(
            None, f"the label {label!r} does not count: {exc.one_line()} (who added it?)"
        )
    actor = _login(event.get("actor")) if event is not None else None
    event_id = event.get("id") if event is not None else None
    if event is None or actor is None or not isinstance(event_id, int):
        return LabelDecision(
            None, f"the label {label!r} does not count: GitHub lists no event that added it"
        )
    try:
        answer = client.collaborator_permission(actor)
    except GitHubError as exc:
        return LabelDecision(
            None,
            f"the label {label!r} does not count: GitHub did not say what access @{actor} "
            f"has ({exc.one_line()})",
        )
    permission, role = answer.get("permission"), answer.get("role_name")
    role_text = str(role or permission)
    if permission not in WRITE_PERMISSIONS:
        return LabelDecision(
            None,
            f"the label {label!r} does not count: @{actor} added it, with {role_text} access; "
            "only a person with write, maintain or admin access approves a protected change",
        )
    mine = RecordedApproval(
        label=label,
        login=actor,
        role=role_text,
        head_sha=pr.head_sha,
        base_ref=pr.base_ref,
        event_id=event_id,
    )
    recorded = record.approval if record is not None else None
    if recorded is not None and recorded.event_id == event_id and recorded.label == label:
        if recorded.head_sha == pr.head_sha and recorded.base_ref == pr.base_ref:
            return LabelDecision(recorded)
        if recorded.head_sha != pr.head_sha:
            return LabelDecision(
                None,
                f"the label {label!r} does not count for {short_sha(pr.head_sha)}: "
                f"@{actor} approved {short_sha(recorded.head_sha)}, and commits were pushed "
                f"since; {AGAIN}",
            )
        return LabelDecision(
            None,
            f"the label {label!r} does not count against {pr.base_ref!r}: @{actor} approved "
            f"this head against {recorded.base_ref!r}; {AGAIN}",
        )
    if _bound_head(label, actor, event, trigger):
        return LabelDecision(mine)
    return LabelDecision(None, unbound(label, actor, event, trigger, pr))


def unbound(
    label: str, actor: str, event: Mapping[str, Any], trigger: Trigger, pr: PullRequest
) -> str:
    """Why a label @``actor`` added does not count for this run: what started the run
    instead, so nothing ties the label to ``pr``'s head and base (the reason comes first:
    the comment shows a reason's first 300 characters)."""
    added = event.get("created_at") if isinstance(event.get("created_at"), str) else None
    at = f" at {added}" if added else ""
    if trigger.run_actor is not None and trigger.run_actor != actor:
        why = (
            f"@{actor} added it{at}, but @{trigger.run_actor} started the measuring run gated here"
        )
    elif trigger.run_actor is not None and added and trigger.run_created_at:
        why = (
            f"@{actor} added it at {added}, after the measuring run gated here started "
            f"({trigger.run_created_at})"
        )
    elif trigger.run_actor is not None:
        why = f"@{actor} added it; GitHub shows no time when the measuring run gated here started"
    elif trigger.action == "labeled" and trigger.label != label:
        why = f"@{actor} added it, but this run was started by adding {trigger.label!r}"
    elif trigger.action == "labeled":
        why = f"@{actor} added it, but @{trigger.sender} started this run by adding it"
    else:
        event_name = f"the `{trigger.action}` event" if trigger.action else "another event"
        why = f"@{actor} added it, but {event_name} started this run, not the label"
    against = f" against {pr.base_ref!r}" if pr.base_ref else ""
    return (
        f"the label {label!r} does not count for {short_sha(pr.head_sha)}{against}: {why}; "
        f"it approves only the head it was added at, so {AGAIN}"
    )
