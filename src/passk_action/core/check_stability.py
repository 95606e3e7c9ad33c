"""Check stability: how often each intermediate check changed its value within a row, and
how often it was right where the dataset expects a value."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .classify import select
from .diff import same_checks
from .model import Attempt, Phase, RowRecord, Scoring
from .scoring import agreement_key, check_value_right
from .stats import pass_hat_k

MAIN_ONLY: tuple[Phase, ...] = (Phase.MAIN,)
"""Main attempts only: confirmation re-runs target lost rows and would bias every mean."""


@dataclass(frozen=True, slots=True)
class CheckStability:
    """How often one intermediate check changed its value within a row, and how often it was right.

    ``flip_rate`` = ``flipped`` / ``eligible``: eligible rows reported the
    check on at least 2 valid attempts; a row flipped when the reported
    values were not all equal (an attempt that did not report the check is
    ignored, not counted as a value).  ``held_rows`` are the flipped rows
    whose decision held (all valid decisions agreed): variation the verdict
    alone hides.

    Over the ``expected_rows`` whose dataset row expects a value for the
    check (``expected_checks``), the same conventions as the three numbers
    (``core/stats.Metrics``): ``accuracy`` = right values / valid attempts
    (a check the answer did not report is wrong; errors left out), and
    ``pass_k`` = the mean over those rows of C(c, k) / C(n, k), n the row's
    attempts (errors included, never right) and c those whose value was
    right.  None when no row expects the check.
    """

    name: str
    eligible: int
    flipped: int
    held_rows: tuple[str, ...]
    expected_rows: int = 0
    answered: int = 0
    right: int = 0
    pass_k: float | None = None

    @property
    def flip_rate(self) -> float | None:
        return self.flipped / self.eligible if self.eligible else None

    @property
    def accuracy(self) -> float | None:
        return self.right / self.answered if self.answered else None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "check": self.name,
            "eligible": self.eligible,
            "flipped": self.flipped,
            "flip_rate": self.flip_rate,
            "held_rows": list(self.held_rows),
        }
        if self.expected_rows:
            out |= {"expected_rows": self.expected_rows, "accuracy": self.accuracy}
            out["pass_k"] = self.pass_k
        return out


@dataclass
class _CheckScore:
    """One check's right values, summed over the rows that expect it."""

    rows: int = 0
    answered: int = 0
    right: int = 0
    pass_sum: float = 0.0


def _score_checks(
    row: RowRecord, attempts: Sequence[Attempt], k: int, scores: dict[str, _CheckScore]
) -> None:
    """Add one row's expected checks to ``scores`` (see :class:`CheckStability`)."""
    valid = [a for a in attempts if a.valid]
    for name, want in row.expected_checks:
        score = scores.setdefault(name, _CheckScore())
        right = sum(1 for a in valid if check_value_right(dict(a.checks).get(name), want))
        score.rows += 1
        score.answered += len(valid)
        score.right += right
        score.pass_sum += pass_hat_k(len(attempts), right, k)


def check_stability(
    rows: Sequence[RowRecord],
    attempts_by_row: Mapping[str, Sequence[Attempt]],
    scoring: Scoring,
    phases: Iterable[Phase] | None = MAIN_ONLY,
    k: int = 1,
) -> tuple[CheckStability, ...]:
    """Per-check flip rate, and accuracy and pass^k where rows expect it (:class:`CheckStability`).

    Only attempts of ``phases`` (main by default) count; only valid ones
    report checks.  Checks are listed in the order the agent first reported
    them, then checks only rows expect; decisions agree as the scoring says
    (:func:`~.scoring.agreement_key`).
    """
    wanted = None if phases is None else tuple(phases)
    order: dict[str, None] = {}
    eligible: dict[str, int] = {}
    flipped: dict[str, int] = {}
    held: dict[str, list[str]] = {}
    scores: dict[str, _CheckScore] = {}
    for row in rows:
        chosen = select(attempts_by_row.get(row.id, ()), wanted)
        if row.expected_checks:
            _score_checks(row, chosen, k, scores)
        valid = [a for a in chosen if a.valid]
        first = valid[0].checks if valid else ()
        if len(valid) > 1 and same_checks(valid) and len({n for n, _ in first}) == len(first):
            # The usual case: every check reported the same value on every
            # attempt, so each one is eligible here and none flipped.
            for name, _ in first:
                order.setdefault(name, None)
                eligible[name] = eligible.get(name, 0) + 1
            continue
        decisions = {agreement_key(a, row, scoring) for a in valid}
        values: dict[str, list[str]] = {}
        for attempt in valid:
            for name, value in attempt.checks:
                order.setdefault(name, None)
                values.setdefault(name, []).append(value)
        for name, seen in values.items():
            if len(seen) < 2:
                continue
            eligible[name] = eligible.get(name, 0) + 1
            if len(set(seen)) > 1:
                flipped[name] = flipped.get(name, 0) + 1
                if len(decisions) == 1:
                    held.setdefault(name, []).append(row.id)
    for name in scores:
        order.setdefault(name, None)
    return tuple(
        CheckStability(
            name,
            eligible.get(name, 0),
            flipped.get(name, 0),
            tuple(held.get(name, ())),
            *_scored(scores.get(name)),
        )
        for name in order
    )


def _scored(score: _CheckScore | None) -> tuple[int, int, int, float | None]:
    if score is None:
        return 0, 0, 0, None
    return score.rows, score.answered, score.right, score.pass_sum / score.rows
