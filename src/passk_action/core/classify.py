"""Classifying a row from its attempts: stable-correct, stable-wrong, flip or unclassified.

Each attempt is judged by ``scoring.py`` (right or not, and what it agrees with);
this module only counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .model import Attempt, Phase, RowClass, Scoring
from .scoring import Judged, Labeled, judge


def class_of(judged: Judged, k: int) -> RowClass:
    """A row's class from its judged attempts.

    - fewer than ``k`` valid decisions: UNCLASSIFIED (an error is not a decision);
    - every valid decision right: STABLE_CORRECT;
    - every valid decision wrong, all agreeing: STABLE_WRONG;
    - otherwise FLIP, whether the disagreeing answers are right or wrong
      (``[approve, escalate, approve]`` against ``deny`` is a flip, and so is
      a changed amount with the same action).

    With more than k valid decisions (main plus confirmation attempts) the same
    rules apply to all of them: a row is stable only if every answer agrees.
    Answers that are all right are stable-correct even when the rules let
    them differ (two amounts within the tolerance, two of several allowed
    values); with exact labels, right answers are equal ones.
    """
    keys = judged.keys
    n = len(keys)
    if n < k:
        return RowClass.UNCLASSIFIED
    if judged.right == n:
        return RowClass.STABLE_CORRECT
    if judged.right == 0 and keys.count(keys[0]) == n:
        return RowClass.STABLE_WRONG
    return RowClass.FLIP


def classify(attempts: Iterable[Attempt], row: Labeled, k: int, scoring: Scoring) -> RowClass:
    """Classify a row from its attempts (see :func:`class_of`)."""
    return class_of(judge(attempts, row, scoring), k)


def select(attempts: Iterable[Attempt], phases: Iterable[Phase] | None = None) -> list[Attempt]:
    """The attempts of the given phases (all phases when ``phases`` is None)."""
    if phases is None:
        return list(attempts)
    wanted = set(phases)
    return [a for a in attempts if a.phase in wanted]


def classify_attempts(
    attempts: Sequence[Attempt],
    row: Labeled,
    k: int,
    scoring: Scoring,
    phases: Iterable[Phase] | None = (Phase.MAIN,),
) -> RowClass:
    """Classify a row from recorded attempts of the given phases (main only by default)."""
    return classify(select(attempts, phases), row, k, scoring)
