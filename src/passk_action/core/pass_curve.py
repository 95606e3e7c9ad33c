"""The pass^k curve: pass^j and pass@j for j = 1..J over the rows of one run."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat

from .stats import check_counts, pass_hat_k


@dataclass(frozen=True, slots=True)
class CurvePoint:
    j: int
    pass_hat: float
    """pass^j: mean over rows of C(c, j) / C(n, j)."""
    pass_at: float
    """pass@j: mean over rows of 1 - C(n - c, j) / C(n, j)."""
    short_rows: int
    """Rows with fewer than j valid attempts, scored 0 in both."""

    def to_json(self) -> dict[str, object]:
        return {
            "j": self.j,
            "pass_hat": self.pass_hat,
            "pass_at": self.pass_at,
            "short_rows": self.short_rows,
        }


@dataclass(frozen=True, slots=True)
class PassCurve:
    rows: int
    points: tuple[CurvePoint, ...]

    def to_json(self) -> dict[str, object]:
        return {"rows": self.rows, "points": [p.to_json() for p in self.points]}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that at least one of k fresh attempts is right.

    Formula: 1 - C(n - c, k) / C(n, k) from n >= k attempts with c right
    (Chen et al. 2021, "Evaluating Large Language Models Trained on Code",
    eq. 1).  Edge case: with n < k the estimator is undefined and the row
    scores 0 here (a conservative floor, stated by ``short_rows``).
    """
    check_counts(n, c, k)
    if n < k:
        return 0.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_curve(counts: Sequence[tuple[int, int]], max_j: int | None = None) -> PassCurve:
    """pass^j and pass@j for j = 1..J from per-row (attempts n, right c) counts.

    pass^j = mean over rows of C(c, j) / C(n, j) (Yao et al., "tau-bench",
    2024, eq. 1); pass@j = mean over rows of 1 - C(n - c, j) / C(n, j) (Chen
    et al. 2021, eq. 1).  J is ``max_j`` or the largest n over rows.  Every
    row is in the mean; a row with n < j scores 0 in both and is counted in
    that point's ``short_rows``.  An empty input (or J = 0) gives no points.
    n counts errored attempts, which are never right (the convention of
    :class:`~.stats.Metrics`), so the j = k point is the headline pass^k.
    """
    if not counts:
        return PassCurve(0, ())
    top = max(n for n, _ in counts) if max_j is None else max_j
    # Rows share a handful of distinct (n, c): estimate each once.  fsum is
    # exact whatever the order, so repeating each estimate as many times as
    # rows have it gives the very same sums as one estimate per row.
    tally = Counter(counts)
    points = []
    for j in range(1, top + 1):
        hat = chain.from_iterable(repeat(pass_hat_k(n, c, j), m) for (n, c), m in tally.items())
        at = chain.from_iterable(repeat(pass_at_k(n, c, j), m) for (n, c), m in tally.items())
        points.append(
            CurvePoint(
                j=j,
                pass_hat=math.fsum(hat) / len(counts),
                pass_at=math.fsum(at) / len(counts),
                short_rows=sum(m for (n, _), m in tally.items() if n < j),
            )
        )
    return PassCurve(len(counts), tuple(points))
