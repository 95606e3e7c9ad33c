"""The three headline numbers and the per-row summaries they come from.

Every function states its formula, its source and its edge cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import comb

from .classify import class_of, select
from .model import Attempt, Phase, RowClass, RowRecord, Scoring
from .scoring import judge


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of the chance that k fresh attempts are all right.

    Formula: C(c, k) / C(n, k), from n >= k attempts of which c were right
    (Yao et al., "tau-bench", 2024, eq. 1; the pass^k counterpart of Chen et
    al.'s pass@k estimator).  Edge cases: with n < k the row cannot be shown
    right k times and scores 0; with c < k the numerator is 0.
    """
    check_counts(n, c, k)
    if n < k:
        return 0.0
    return comb(c, k) / comb(n, k)


def check_counts(n: int, c: int, k: int) -> None:
    """The domain of every C(·, k)/C(n, k) estimator: k >= 1 and 0 <= c <= n."""
    if k < 1:
        raise ValueError("k must be at least 1")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")


@dataclass(frozen=True, slots=True)
class RowSummary:
    """One row's attempts of a run reduced to counts and a class."""

    id: str
    row_class: RowClass
    valid: int
    correct: int
    errors: int
    decisions: tuple[str | None, ...]

    @property
    def attempts(self) -> int:
        """Valid decisions and errored attempts: what pass^k and pass^j are over."""
        return self.valid + self.errors


def summarize_row(
    row: RowRecord,
    attempts: Sequence[Attempt],
    k: int,
    scoring: Scoring,
    phases: Iterable[Phase] | None = (Phase.MAIN,),
) -> RowSummary:
    return summarize_attempts(row, select(attempts, phases), k, scoring)


def summarize_attempts(
    row: RowRecord, attempts: Sequence[Attempt], k: int, scoring: Scoring
) -> RowSummary:
    """A row's summary from its attempts (an error attempt is not a decision).

    ``correct`` counts the attempts judged right (:func:`~.scoring.is_right`:
    the decision matches the expected one, and with ``checks: required`` the
    expected checks too); the class is :func:`~.classify.class_of` of the
    same judgments.
    """
    judged = judge(attempts, row, scoring)
    return RowSummary(
        row.id,
        class_of(judged, k),
        len(judged.keys),
        judged.right,
        judged.errors,
        tuple(a.decision for a in attempts),
    )


@dataclass(frozen=True)
class Metrics:
    """The three numbers, always reported together, and the counts behind them.

    The one convention for errored attempts (a crash, a timeout, an
    unparseable answer): **never a decision, never right**.  Numbers about
    decisions leave them out; numbers about attempts count them as attempts
    that were not right:

    - ``mean_accuracy`` = (right valid decisions) / (valid decisions), pooled
      over all rows: a number about decisions, errors left out; ``errors``
      says how many there were.  :attr:`attempt_accuracy` (right / all
      attempts) is the same over attempts, which reports show beside it when
      they differ.  None when no decision was valid.
    - ``pass_k`` = mean over all rows of C(c, k) / C(n, k), n the row's
      attempts, errors included (see :func:`pass_hat_k`): "k attempts all
      right", so an errored attempt is one that was not.  A row with fewer
      than k attempts counts 0.  The pass^j curve (``core/pass_curve.py``)
      is over attempts too, so its pass^k point is this number and its
      pass^1 point is :attr:`attempt_accuracy` per row.  None for an empty
      run.
    - ``flip_rate`` = flip rows / classified rows: the share of rows with k
      valid decisions whose decisions do not all agree, right or wrong.
      Unclassified rows (fewer than k valid decisions) are left out of both
      counts, as error attempts are left out of mean accuracy: with too few
      decisions nobody can say they agree, and counting them as agreeing
      would let a crashing candidate look steadier.  None when no row is
      classified.  (README, action.yml and reports use this one definition.)
    """

    rows: int
    k: int
    mean_accuracy: float | None
    pass_k: float | None
    flip_rate: float | None
    classes: Mapping[RowClass, int] = field(default_factory=dict)
    attempts: int = 0
    valid: int = 0
    errors: int = 0
    correct: int = 0
    beyond_k: int = 0
    """Rows with more than k attempts (imported trials, usually): pass^k reads all of them,
    C(c, k)/C(n, k), and so does the class, which is stable-correct only when every one was
    right: a row right 4 times of 5 has pass^3 0.4 and is a flip."""

    @property
    def attempt_accuracy(self) -> float | None:
        """Right decisions / all attempts (errors count as not right); None without attempts."""
        return self.correct / self.attempts if self.attempts else None

    def to_json(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "k": self.k,
            "mean_accuracy": self.mean_accuracy,
            "pass_k": self.pass_k,
            "flip_rate": self.flip_rate,
            "classes": {cls.value: self.classes.get(cls, 0) for cls in RowClass},
            "attempts": self.attempts,
            "valid": self.valid,
            "errors": self.errors,
            # Optional: older reports have none, and most runs have k attempts a row.
            **({"beyond_k": self.beyond_k} if self.beyond_k else {}),
        }


def compute_metrics(summaries: Sequence[RowSummary], k: int) -> Metrics:
    """Reduce row summaries to :class:`Metrics` (formulas in its docstring)."""
    classes = {cls: 0 for cls in RowClass}
    valid = correct = errors = beyond = 0
    pass_sum = 0.0
    estimates: dict[tuple[int, int], float] = {}  # few distinct (n, c): C(n, k) once each
    for s in summaries:
        classes[s.row_class] += 1
        valid += s.valid
        correct += s.correct
        errors += s.errors
        beyond += s.attempts > k
        key = (s.attempts, s.correct)
        estimate = estimates.get(key)
        if estimate is None:
            estimate = estimates[key] = pass_hat_k(s.attempts, s.correct, k)
        pass_sum += estimate
    n_rows = len(summaries)
    classified = n_rows - classes[RowClass.UNCLASSIFIED]
    return Metrics(
        rows=n_rows,
        k=k,
        mean_accuracy=correct / valid if valid else None,
        pass_k=pass_sum / n_rows if n_rows else None,
        flip_rate=classes[RowClass.FLIP] / classified if classified else None,
        classes=classes,
        attempts=valid + errors,
        valid=valid,
        errors=errors,
        correct=correct,
        beyond_k=beyond,
    )


def summarize_run(
    rows: Sequence[RowRecord],
    attempts_by_row: Mapping[str, Sequence[Attempt]],
    k: int,
    scoring: Scoring,
    phases: Iterable[Phase] | None = (Phase.MAIN,),
) -> list[RowSummary]:
    """Summaries for every row, in the rows' order; a row with no attempts is unclassified."""
    wanted = None if phases is None else tuple(phases)
    return [summarize_row(r, attempts_by_row.get(r.id, ()), k, scoring, wanted) for r in rows]
