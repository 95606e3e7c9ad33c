"""Phase 2 of gate mode: what an earlier run of the same content recorded.

The sticky comment carries a record of the verdicts; when it matches this
content, dataset and settings, its attempts are replayed
instead of asking the agent again, and a recorded failure stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.model import Attempt
from ..engine.asking import Replay
from ..engine.request import Rerun
from ..errors import GitError, GitHubError
from ..github.client import GitHubClient
from ..github.event import PullRequest
from ..github.sticky_comment import GateRecord, find_record
from ..sides.gitrepo import GitRepo, short_sha
from ..sides.trusted import Trusted
from .inputs import ActionInputs
from .runtime import step_key


@dataclass(frozen=True)
class RecordLookup:
    """The pull request's comments and what passk recorded for this content, if anything."""

    comments: list[dict[str, Any]]
    record: GateRecord | None
    head_tree: str | None
    matching: bool
    replay_candidate: tuple[Attempt, ...] | None
    replay_baseline: tuple[Attempt, ...] | None
    remeasured: str | None = None
    """The base config's remeasure label, when the pull request carries it: no replay."""


def read_comments(
    client: GitHubClient | None,
    inputs: ActionInputs,
    pr: PullRequest,
    warn: Callable[[str], None],
) -> list[dict[str, Any]]:
    """The pull request's comments, where passk's record is; none with ``comment: off``.

    Fails closed: a comment list that cannot be read raises, before anything runs.
    """
    comments: list[dict[str, Any]] = []
    if inputs.comment == "off":
        warn(
            "comment: off keeps no record of this commit's verdicts, so re-running the job "
            "asks the agent again (use `update` so a re-run cannot change the result)"
        )
    elif client is not None:
        try:
            comments = client.list_issue_comments(pr.number)
        except GitHubError as exc:
            # Fail closed: a fresh run could pass where the record holds a failure, and
            # posting would then overwrite the record nobody could read.
            raise GitHubError(
                f"cannot read the recorded verdicts; re-run later ({exc.message})",
                where=exc.where,
                status=exc.status,
                hint="passk reads its record of earlier runs from the pull request's comments "
                "before it runs anything; nothing was run or posted",
            ) from exc
    return comments


def recorded(comments: list[dict[str, Any]], inputs: ActionInputs) -> GateRecord | None:
    """passk's record for this step in ``comments`` (warnings are left to the lookup)."""
    key = step_key(inputs)
    return find_record(comments, key.marker, inputs.comment_author)[0]


def look_up_record(
    client: GitHubClient | None,
    repo: GitRepo,
    inputs: ActionInputs,
    pr: PullRequest,
    trusted: Trusted,
    warn: Callable[[str], None],
    *,
    head: str = "HEAD",
    comments: list[dict[str, Any]] | None = None,
) -> RecordLookup:
    """Find passk's record in the pull request's comments and whether it covers this run.

    ``head`` names the files the candidate's answers are for: the checkout, or the
    two-job gate's merge tree.  ``comments`` already read (:func:`read_comments`)
    are not read again.
    """
    if comments is None:
        comments = read_comments(client, inputs, pr, warn)
    key = step_key(inputs)
    record, record_warnings = find_record(comments, key.marker, inputs.comment_author)
    for message in record_warnings:
        warn(message)
    # The files the agent actually runs: the checkout (the merge commit under the
    # default `pull_request` checkout), so a moved base branch is measured anew.
    head_tree = _tree(repo, head, warn)
    matching = record is not None and record.matches(
        pr.head_sha,
        trusted.dataset.digest,
        trusted.config.settings,
        head_tree=head_tree,
        step=key.id,
        default_step=key.is_default,
        candidate_agent=trusted.config.agent.describe() if trusted.config.agent else None,
    )
    remeasure_label = trusted.sides.base.config.gate.remeasure_label
    remeasured = remeasure_label if remeasure_label in pr.labels else None
    if remeasured is not None and matching:
        warn(
            f"the label {remeasured!r} asks to measure again: the verdicts recorded for this "
            "content are not replayed (remove the label so later re-runs replay the new ones)"
        )
        matching = False
    replay_candidate = record.candidate_attempts if matching and record else None
    replay_baseline = (
        record.baseline_attempts
        if matching and record is not None and record.base_sha == pr.base_sha
        else None
    )
    return RecordLookup(
        comments, record, head_tree, matching, replay_candidate, replay_baseline, remeasured
    )


def _tree(repo: GitRepo, sha: str, warn: Callable[[str], None]) -> str | None:
    """The head commit's tree, so a record pins content, not a commit id; None if unknown."""
    try:
        return repo.tree_sha(sha)
    except GitError as exc:
        warn(
            f"cannot read the tree of the head commit {short_sha(sha)} ({exc.message}): "
            "the record pins this commit only, not commits with the same content"
        )
        return None


def rerun_of(prior: RecordLookup, pr: PullRequest) -> Rerun:
    """What the engine replays, and whether a recorded failure stands, from ``prior``.

    A failed record too large to hold its attempts stays failed on a re-run:
    nothing can be replayed, so the failure itself is the input.
    """
    record = prior.record
    # A verdict stands only for the base it was made against: a record of another
    # base (a retargeted pull request) is evidence about that base, not this one.
    stands = (
        prior.matching
        and record is not None
        and record.base_sha == pr.base_sha
        and record.candidate_attempts is None
        and not record.passed
    )
    return Rerun(
        replay=Replay(prior.replay_candidate or (), prior.replay_baseline or ()),
        recorded_for=None if record is None or record.head_sha == pr.head_sha else record.head_sha,
        failure_stands=stands,
        remeasured_label=prior.remeasured,
    )
