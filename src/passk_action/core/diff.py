"""Row-by-row comparison of a baseline run and a candidate run.

Produces the two lists the release procedure is built on (rows *gained* and
rows *lost*), the confirmation outcome of every lost row, each version's final
class over all its attempts, and the first intermediate check where a
confirmed regression diverges.  Pure: recorded attempts in, comparison out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from .classify import classify, select
from .model import Attempt, Phase, RowClass, RowRecord, Scoring
from .scoring import ABSENT, Labeled, is_right
from .stats import Metrics, RowSummary, compute_metrics, summarize_attempts


class Change(str, Enum):
    GAINED = "gained"
    LOST = "lost"
    UNCHANGED = "unchanged"


class Confirmation(str, Enum):
    """What re-running a lost row on both versions showed.

    - BASELINE_VARIES: the baseline gave a wrong answer at least once, so the
      loss is not evidence against the candidate.
    - CONFIRMED_REGRESSION: the baseline was right every time and the
      candidate was wrong at least once.
    - NOT_REPRODUCED: neither happened: both versions answered, and every
      answer the candidate gave was right.
    - INCONCLUSIVE: a version gave no valid answer at all (every confirmation
      attempt of that side crashed, timed out or was unparseable), so
      nothing was shown either way.
    """

    BASELINE_VARIES = "baseline-varies"
    CONFIRMED_REGRESSION = "confirmed-regression"
    NOT_REPRODUCED = "not-reproduced"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, slots=True)
class DivergentCheck:
    """The first intermediate check whose answers differ between the versions.

    Values are ``(value, count)`` pairs over the valid attempts of each side,
    most frequent first.
    """

    name: str
    baseline: tuple[tuple[str, int], ...]
    candidate: tuple[tuple[str, int], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.name,
            "baseline": {v: n for v, n in self.baseline},
            "candidate": {v: n for v, n in self.candidate},
        }


@dataclass(frozen=True, slots=True)
class RowComparison:
    id: str
    must_not_break: bool
    in_ratchet: bool
    baseline_class: RowClass
    candidate_class: RowClass
    change: Change
    confirmation: Confirmation | None
    baseline_final_class: RowClass
    candidate_final_class: RowClass
    first_divergent_check: DivergentCheck | None
    baseline_check_flips: tuple[str, ...] = ()
    candidate_check_flips: tuple[str, ...] = ()
    """Checks that took more than one value while the row's decision held."""


@dataclass(frozen=True)
class Comparison:
    rows: tuple[RowComparison, ...]
    baseline_metrics: Metrics
    candidate_metrics: Metrics
    gained: tuple[str, ...] = field(default=())
    lost: tuple[str, ...] = field(default=())

    def by_id(self) -> dict[str, RowComparison]:
        return {r.id: r for r in self.rows}


def change_of(baseline: RowClass, candidate: RowClass) -> Change:
    """Gained: candidate stable-correct, baseline not.  Lost: the reverse."""
    if candidate is RowClass.STABLE_CORRECT and baseline is not RowClass.STABLE_CORRECT:
        return Change.GAINED
    if baseline is RowClass.STABLE_CORRECT and candidate is not RowClass.STABLE_CORRECT:
        return Change.LOST
    return Change.UNCHANGED


def confirmation_outcome(
    baseline_confirm: Sequence[Attempt],
    candidate_confirm: Sequence[Attempt],
    row: Labeled,
    scoring: Scoring,
) -> Confirmation | None:
    """Outcome of the confirmation attempts of a lost row (None if none were made).

    - BASELINE_VARIES: a baseline confirmation answer was wrong;
    - CONFIRMED_REGRESSION: the baseline gave at least one answer, all right,
      and the candidate gave at least one wrong answer;
    - INCONCLUSIVE: the baseline or the candidate gave no valid answer;
    - NOT_REPRODUCED: otherwise (both answered; the candidate's answers were right).
    Error attempts are not answers and make no side wrong (or right): a side
    whose attempts all failed never counts as "right every time".
    """
    if not baseline_confirm and not candidate_confirm:
        return None

    def wrong(attempts: Sequence[Attempt]) -> bool:
        return any(a.decision is not None and not is_right(a, row, scoring) for a in attempts)

    baseline_valid = [a for a in baseline_confirm if a.decision is not None]
    if wrong(baseline_confirm):
        return Confirmation.BASELINE_VARIES
    if baseline_valid and wrong(candidate_confirm):
        return Confirmation.CONFIRMED_REGRESSION
    if not baseline_valid or not any(a.decision is not None for a in candidate_confirm):
        return Confirmation.INCONCLUSIVE
    return Confirmation.NOT_REPRODUCED


def _check_order(attempts: Sequence[Attempt]) -> list[str]:
    order: dict[str, None] = {}
    for a in attempts:
        for name, _ in a.checks:
            order.setdefault(name, None)
    return list(order)


def _values(attempts: Sequence[Attempt], name: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for a in attempts:
        counts[dict(a.checks).get(name, ABSENT)] += 1
    return counts


def _ranked(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def first_divergent_check(
    baseline: Sequence[Attempt], candidate: Sequence[Attempt]
) -> DivergentCheck | None:
    """Walk the checks in the agent's order; return the first whose values differ.

    Checks are ordered as the baseline first reported them, then any the
    candidate added.  Two sides *differ* on a check when the sets of values
    they gave differ (a value one side never gave, including the check being
    absent).  Only valid attempts count: an error attempt has no checks to
    compare.  None when every check agrees (the answers diverge at the
    decision itself).
    """
    base_valid = [a for a in baseline if a.valid]
    cand_valid = [a for a in candidate if a.valid]
    if not base_valid or not cand_valid:
        return None
    names = _check_order(base_valid)
    names += [n for n in _check_order(cand_valid) if n not in names]
    for name in names:
        base_counts = _values(base_valid, name)
        cand_counts = _values(cand_valid, name)
        if set(base_counts) != set(cand_counts):
            return DivergentCheck(name, _ranked(base_counts), _ranked(cand_counts))
    return None


def check_flips(attempts: Sequence[Attempt], row_class: RowClass) -> tuple[str, ...]:
    """Checks that varied while the decision held (a stable row only).

    That variation is invisible in the verdict alone, and often the first
    sign of a row about to flip.
    """
    if row_class not in (RowClass.STABLE_CORRECT, RowClass.STABLE_WRONG):
        return ()
    valid = [a for a in attempts if a.valid]
    if same_checks(valid):
        return ()  # the usual case, and the cheap one
    return tuple(name for name in _check_order(valid) if len(_values(valid, name)) > 1)


def same_checks(attempts: Sequence[Attempt]) -> bool:
    """Whether every attempt reported the very same checks (then none of them varied).

    Readers share equal check lists (one tuple object), so this is mostly
    identity tests.
    """
    if not attempts:
        return True
    first = attempts[0].checks
    return all(a.checks is first or a.checks == first for a in attempts)


def compare_runs(
    rows: Sequence[RowRecord],
    baseline: Mapping[str, Sequence[Attempt]],
    candidate: Mapping[str, Sequence[Attempt]],
    *,
    k: int,
    scoring: Scoring,
    ratchet: frozenset[str] = frozenset(),
) -> Comparison:
    """Compare two runs over ``rows`` (whose labels and marks are authoritative).

    ``baseline_class``/``candidate_class`` come from the main attempts only;
    the ``*_final_class`` from all recorded attempts, confirmation included.
    """
    compared: list[RowComparison] = []
    base_summaries: list[RowSummary] = []
    cand_summaries: list[RowSummary] = []
    gained: list[str] = []
    lost: list[str] = []
    for row in rows:
        base = baseline.get(row.id, ())
        cand = candidate.get(row.id, ())
        base_summary, base_final = _side(row, base, k, scoring)
        cand_summary, cand_final = _side(row, cand, k, scoring)
        base_summaries.append(base_summary)
        cand_summaries.append(cand_summary)
        base_class, cand_class = base_summary.row_class, cand_summary.row_class
        change = change_of(base_class, cand_class)
        confirmation = None
        divergent = None
        if change is Change.LOST:
            lost.append(row.id)
            confirmation = confirmation_outcome(
                select(base, (Phase.CONFIRM,)),
                select(cand, (Phase.CONFIRM,)),
                row,
                scoring,
            )
            if confirmation is Confirmation.CONFIRMED_REGRESSION:
                divergent = first_divergent_check(base, cand)
        elif change is Change.GAINED:
            gained.append(row.id)
        compared.append(
            RowComparison(
                id=row.id,
                must_not_break=row.must_not_break,
                in_ratchet=row.id in ratchet,
                baseline_class=base_class,
                candidate_class=cand_class,
                change=change,
                confirmation=confirmation,
                baseline_final_class=base_final,
                candidate_final_class=cand_final,
                first_divergent_check=divergent,
                baseline_check_flips=check_flips(base, base_final),
                candidate_check_flips=check_flips(cand, cand_final),
            )
        )
    return Comparison(
        rows=tuple(compared),
        baseline_metrics=compute_metrics(base_summaries, k),
        candidate_metrics=compute_metrics(cand_summaries, k),
        gained=tuple(gained),
        lost=tuple(lost),
    )


def _side(
    row: RowRecord, attempts: Sequence[Attempt], k: int, scoring: Scoring
) -> tuple[RowSummary, RowClass]:
    """One version's summary of a row over its main attempts, and its final class.

    The final class is over all attempts, confirmations included; most rows
    have none, and then it is the main class (one pass instead of two).
    """
    main = [a for a in attempts if a.phase is Phase.MAIN]
    summary = summarize_attempts(row, main, k, scoring)
    if len(main) == len(attempts):
        return summary, summary.row_class
    return summary, classify(attempts, row, k, scoring)
