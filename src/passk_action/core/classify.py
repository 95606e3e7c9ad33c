"""Scoring a decision and classifying a row from its attempts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .model import Attempt, Phase, RowClass, Scoring

NORMALIZE_RULES = ("strip", "casefold")


def normalize(decision: str, scoring: Scoring) -> str:
    """Apply the configured normalization rules, in order, to one decision."""
    for rule in scoring.normalize:
        if rule == "strip":
            decision = decision.strip()
        elif rule == "casefold":
            decision = decision.casefold()
        else:  # pragma: no cover - the config schema admits only known rules
            raise ValueError(f"unknown normalization rule {rule!r}")
    return decision


def is_correct(decision: str, expected: str, scoring: Scoring) -> bool:
    """Exact match after normalization of both sides."""
    return normalize(decision, scoring) == normalize(expected, scoring)


def classify(decisions: Sequence[str | None], expected: str, k: int, scoring: Scoring) -> RowClass:
    """Classify a row from its decisions (``None`` marks an error attempt).

    - fewer than ``k`` valid decisions: UNCLASSIFIED (an error is not a decision);
    - all valid decisions equal and right: STABLE_CORRECT;
    - all valid decisions equal and wrong: STABLE_WRONG;
    - otherwise FLIP, whether the disagreeing answers are right or wrong
      (``[approve, escalate, approve]`` against ``deny`` is a flip).

    With more than k valid decisions (main plus confirmation attempts) the same
    rules apply to all of them: a row is stable only if every answer agrees.
    """
    # Runs for every row of every run: list operations in C, no per-decision calls.
    if scoring.normalize:
        valid = [normalize(d, scoring) for d in decisions if d is not None]
        expected = normalize(expected, scoring)
    else:
        valid = [d for d in decisions if d is not None]
    if len(valid) < k:
        return RowClass.UNCLASSIFIED
    if valid.count(valid[0]) != len(valid):
        return RowClass.FLIP
    if valid[0] == expected:
        return RowClass.STABLE_CORRECT
    return RowClass.STABLE_WRONG


def select(attempts: Iterable[Attempt], phases: Iterable[Phase] | None = None) -> list[Attempt]:
    """The attempts of the given phases (all phases when ``phases`` is None)."""
    if phases is None:
        return list(attempts)
    wanted = set(phases)
    return [a for a in attempts if a.phase in wanted]


def classify_attempts(
    attempts: Iterable[Attempt],
    expected: str,
    k: int,
    scoring: Scoring,
    phases: Iterable[Phase] | None = (Phase.MAIN,),
) -> RowClass:
    """Classify a row from recorded attempts of the given phases (main only by default)."""
    return classify([a.decision for a in select(attempts, phases)], expected, k, scoring)
