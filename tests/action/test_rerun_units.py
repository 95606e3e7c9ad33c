"""What a re-run replays and which recorded failure stands, from passk's record."""

from __future__ import annotations

from passk_action.action.rerun import RecordLookup, rerun_of
from passk_action.github.event import PullRequest
from passk_action.github.sticky_comment import GateRecord


def test_a_failure_recorded_against_another_base_does_not_stand_for_this_one() -> None:
    """Issue 28 route 4: a record too large to keep its attempts keeps its failure on a
    re-run of the same content, but only against the base it was made against."""
    record = GateRecord(
        head_sha="a" * 40,
        base_sha="b" * 40,
        dataset_digest="sha256:d",
        settings={},
        candidate_agent="agent",
        passed=False,
        failures=1,
        attempts_digest="sha256:x",
    )
    prior = RecordLookup([], record, None, True, None, None)

    def pull(base: str) -> PullRequest:
        return PullRequest(7, base, "a" * 40, "main", "feature", (), False)

    assert rerun_of(prior, pull("b" * 40)).failure_stands  # control: the same base
    assert not rerun_of(prior, pull("c" * 40)).failure_stands  # attack: another base
