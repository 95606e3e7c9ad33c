"""Error bars: a mean over rows with its standard error and a 95% interval that is never
of zero width.

It follows Evan Miller, "Adding Error Bars to Evals: A Statistical Approach to
Language Model Evaluations" (arXiv:2411.00640, 2024; "Miller" below):

- the unit of sampling is the **row**, not the answer: the k answers to one
  row are not independent draws, so the standard error comes from the spread
  of per-row means, never from a pooled Bernoulli over all k*n answers (that
  would understate the uncertainty by up to sqrt(k));
- rows that share a ``cluster`` (paraphrases of one case, turns of one
  conversation) are not independent either: their standard error is the
  cluster-robust one (Miller eq. 4);
- two versions measured on the same rows are compared by per-row
  *differences* (Miller section 4), which removes the between-row variance
  both versions share.

Pure: per-row values in, frozen dataclasses with ``to_json()`` out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .stats import RowSummary, pass_hat_k
from .student_t import t_975

Z_975 = 1.959964
"""Standard normal quantile z_{0.975}: two-sided 95% intervals and alpha = 0.05.

Hard-coded (no scipy in the container); Phi^-1(0.975) = 1.95996398...
"""


def mean_of(values: Sequence[float]) -> float:
    """The mean sum(x) / n, summed exactly (math.fsum); n > 0."""
    return math.fsum(values) / len(values)


def sample_variance(values: Sequence[float]) -> float | None:
    """Unbiased sample variance sum((x - mean)^2) / (n - 1); None when n < 2."""
    if len(values) < 2:
        return None
    m = mean_of(values)
    return math.fsum((x - m) ** 2 for x in values) / (len(values) - 1)


INTERVAL_SHARE = "agresti-coull-t"
"""How a share's interval is built (see :func:`share_interval`), as reports name it."""
INTERVAL_DIFFERENCE = "agresti-min-t"
"""How a paired difference's interval is built (see :func:`difference_interval`)."""


@dataclass(frozen=True, slots=True)
class ErrorBar:
    """A mean over rows with its standard error and 95% interval.

    ``n`` rows were used; ``excluded`` rows had no valid attempt and were left
    out.  ``method`` is ``"rows"`` (independent rows) or ``"clustered"``
    (cluster-robust, over ``clusters`` clusters).  ``se`` is Miller's
    standard error of the plain mean; ``low``/``high`` the 95% interval of
    ``interval`` (:data:`INTERVAL_SHARE` or :data:`INTERVAL_DIFFERENCE`),
    never of zero width.  ``se``, ``low`` and ``high`` are None when they
    cannot be estimated (fewer than 2 rows or fewer than 2 clusters);
    ``estimate`` is None when no row was used.
    """

    estimate: float | None
    se: float | None
    low: float | None
    high: float | None
    n: int
    excluded: int = 0
    method: str = "rows"
    clusters: int | None = None
    interval: str = INTERVAL_SHARE

    def to_json(self) -> dict[str, object]:
        return {
            "estimate": self.estimate,
            "se": self.se,
            "ci95": None if self.low is None else [self.low, self.high],
            "interval": self.interval,
            "n": self.n,
            "excluded": self.excluded,
            "method": self.method,
            "clusters": self.clusters,
        }


def _cluster_keys(clusters: Sequence[str | None]) -> list[tuple[int, str]]:
    """A key per row: its cluster, or the row alone when its cluster is None."""
    return [(0, c) if c is not None else (1, str(i)) for i, c in enumerate(clusters)]


def _residual_square_sum(
    values: Sequence[float], centre: float, clusters: Sequence[str | None] | None
) -> float:
    """sum over clusters of (sum of x_i - centre in the cluster)^2; rows alone without clusters."""
    if clusters is None:
        return math.fsum((x - centre) ** 2 for x in values)
    sums: dict[tuple[int, str], float] = {}
    for key, x in zip(_cluster_keys(clusters), values, strict=True):
        sums[key] = sums.get(key, 0.0) + (x - centre)
    return math.fsum(s * s for s in sums.values())


def clustered_se(values: Sequence[float], clusters: Sequence[str | None]) -> float | None:
    """Cluster-robust standard error of the mean of ``values`` (Miller eq. 4).

    Formula: SE_CRSE = sqrt( sum over clusters c of (sum_{i in c} (x_i - xbar))^2 ) / n,
    i.e. the sandwich estimator (1/n^2) sum_c sum_{i,j in c} (x_i - xbar)(x_j - xbar).
    A row whose cluster is None is a cluster of its own.

    Edge cases: None with fewer than 2 rows or fewer than 2 clusters (nothing
    to estimate the spread from).  When every row is its own cluster this is
    sqrt((n-1)/n) times the unclustered SE (it divides by n, not n - 1).
    Caveat: like every sandwich estimator it is biased low with few clusters;
    the intervals built on it use t with (clusters - 1) degrees of freedom.
    """
    if len(values) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    n = len(values)
    if n < 2 or len(set(_cluster_keys(clusters))) < 2:
        return None
    return math.sqrt(_residual_square_sum(values, mean_of(values), clusters)) / n


def _pseudo_interval(
    values: Sequence[float],
    clusters: Sequence[str | None] | None,
    pseudo: Sequence[tuple[float, float]],
    df: int,
    bounds: tuple[float, float],
) -> tuple[float, float]:
    """Wald-t interval of a mean after adding weighted pseudo-rows (value, weight).

    Centre m~ = (sum x_i + sum w_j v_j) / (n + sum w_j); variance
    (sum over clusters of residual sums^2 + sum w_j (v_j - m~)^2) / (n + sum w_j)^2
    (each row, or each cluster, and each pseudo-row independent); interval
    m~ +- t_{0.975, df} * SE clipped to ``bounds``.
    """
    weight = math.fsum(w for _, w in pseudo)
    total = len(values) + weight
    centre = (math.fsum(values) + math.fsum(v * w for v, w in pseudo)) / total
    spread = _residual_square_sum(values, centre, clusters)
    spread += math.fsum(w * (v - centre) ** 2 for v, w in pseudo)
    half = t_975(df) * math.sqrt(spread) / total
    return max(bounds[0], centre - half), min(bounds[1], centre + half)


AGRESTI_COULL_PSEUDO = ((1.0, Z_975**2 / 2), (0.0, Z_975**2 / 2))
"""Agresti and Coull's z^2/2 (about 1.92) right and wrong pseudo-answers, as rows."""


def answers_per_row_worth(
    values: Sequence[float],
    clusters: Sequence[str | None] | None,
    answer_variance: float | None,
    answers: float,
) -> float:
    """How many independent answers one row is worth: Kish's effective size over rows.

    Formula: k_eff = sigma^2 / (n SE^2), the variance of one answer over
    the variance of the mean of n rows (Kish, "Survey Sampling", 1965: the
    effective sample size n_eff = n k_eff), clamped to [1, ``answers``]
    (a row of k answers is worth at least one, at most k).  SE^2 is
    Miller's (s^2 / n, or the cluster-robust one); sigma^2 is
    ``answer_variance``.  k_eff is near k when a row's answers vary
    independently (rows of similar accuracy) and near 1 when they agree
    within rows (rows always right or always wrong).

    Edge cases: 1 (a row is one answer, the conservative reading) when
    sigma^2 is None or <= 0, when SE is 0 (every row agrees, so nothing
    tells how independent its answers are), or below 2 rows.
    """
    n = len(values)
    if answer_variance is None or answer_variance <= 0 or answers <= 1 or n < 2:
        return 1.0
    if min(values) == max(values):
        return 1.0  # SE is 0 (tested exactly: rounding in the mean must not pass for spread)
    mean = mean_of(values)
    spread = _residual_square_sum(values, mean, clusters)
    se2 = spread / (n * (n - 1)) if clusters is None else spread / (n * n)
    if se2 <= 0:
        return 1.0
    return min(answers, max(1.0, answer_variance / (n * se2)))


def _scaled(pseudo: Sequence[tuple[float, float]], worth: float) -> tuple[tuple[float, float], ...]:
    return tuple((value, weight / worth) for value, weight in pseudo)


def share_interval(
    values: Sequence[float], clusters: Sequence[str | None] | None = None, answers: float = 1.0
) -> tuple[float, float] | None:
    """95% interval of the mean of per-row shares in [0, 1]: Agresti-Coull with rows as units.

    Formula: add z^2/2 right and z^2/2 wrong pseudo-answers (z = 1.959964,
    about 2 and 2), as pseudo-rows of value 1 and 0 with weight z^2 / (2
    k_eff) each, k_eff the answers a row is worth
    (:func:`answers_per_row_worth`, sigma^2 = mean (1 - mean), at most
    ``answers``, the mean answers per row); then mean~ +- t_{0.975, df} *
    SE over the n + z^2 / k_eff rows, where SE^2 = (sum of squared
    residuals from mean~, summed per cluster when clustered (Miller eq. 4),
    plus the pseudo-rows') / (n + z^2 / k_eff)^2, and df = rows - 1, or
    clusters - 1 when clustered (Student 1908); clipped to [0, 1].  With
    one answer per row and t -> z this is Agresti and Coull's interval
    ("Approximate is better than 'exact' for interval estimation of
    binomial proportions", 1998).  Sizing the pseudo-answers in answers,
    not rows, matters with k answers per row: as whole rows they moved the
    centre of 1,000 rows at 99% accuracy and k = 8 by 1.3 standard errors,
    and coverage fell to 0.92.

    Edge cases: None with fewer than 2 rows (or 2 clusters).  Never of zero
    width: the pseudo-rows keep SE > 0 even when every row agrees, and then
    k_eff = 1 (10 rows all right give 65.1%-100%, 65 rows 93.2%-100%).
    The plain mean always lies inside.  Simulated coverage of the long-run
    mean by rows (10 to 3,000), accuracy and k: the table of
    ``bench/coverage.py`` in ``bench/README.md`` (quoted in
    ``docs/statistics.md``).
    """
    df = _degrees_of_freedom(len(values), clusters)
    if df is None:
        return None
    mean = mean_of(values)
    worth = answers_per_row_worth(values, clusters, mean * (1.0 - mean), answers)
    pseudo = _scaled(AGRESTI_COULL_PSEUDO, worth)
    return _pseudo_interval(values, clusters, pseudo, df, (0.0, 1.0))


AGRESTI_MIN_PSEUDO = ((1.0, 0.5), (-1.0, 0.5), (0.0, 1.0))
"""Agresti and Min's half a pair in each cell of the 2x2 table, as differences."""


def difference_interval(
    differences: Sequence[float],
    clusters: Sequence[str | None] | None = None,
    answers: float = 1.0,
    answer_variance: float | None = None,
) -> tuple[float, float] | None:
    """95% interval of the mean of per-row differences in [-1, 1]: Agresti-Min with rows as units.

    Formula: add half an answer pair to each cell of the paired 2x2 table, as
    Agresti and Min do ("Simple improved confidence intervals for comparing
    matched proportions", Statistics in Medicine 2005): pseudo-rows of
    difference +1 and -1 with weight 1 / (2 k_eff) each and of 0 with 1 /
    k_eff, k_eff the answer pairs a row is worth
    (:func:`answers_per_row_worth` with sigma^2 = ``answer_variance``, the
    variance of one answer pair's difference; at most ``answers``).  Then
    mean +- t_{0.975, df} * SE over n + 2 / k_eff rows, SE^2 = (residual
    squares, summed per cluster when clustered, plus the pseudo-rows') / (n
    + 2 / k_eff)^2, df = rows - 1 (clusters - 1); clipped to [-1, 1].  The
    paired design of Miller section 4 (the between-row variance both
    versions share cancels in d_i).  With pseudo-pairs of whole rows the
    interval was 2-4 times wider than coverage needs below 50 rows.

    Edge cases: None with fewer than 2 rows (or 2 clusters).  Never of zero
    width: when every row agrees on both versions (all d_i = 0, so k_eff =
    1) the interval is still +- t * sqrt(1) / (n + 2) around 0.  The plain
    mean lies inside.  Simulated coverage of the long-run difference: the
    table of ``bench/coverage.py`` in ``bench/README.md`` (quoted in
    ``docs/statistics.md``).
    """
    df = _degrees_of_freedom(len(differences), clusters)
    if df is None:
        return None
    worth = answers_per_row_worth(differences, clusters, answer_variance, answers)
    pseudo = _scaled(AGRESTI_MIN_PSEUDO, worth)
    return _pseudo_interval(differences, clusters, pseudo, df, (-1.0, 1.0))


def _degrees_of_freedom(n: int, clusters: Sequence[str | None] | None) -> int | None:
    """rows - 1, or clusters - 1 when clustered; None below 1 (no interval)."""
    if n < 2:
        return None
    units = n if clusters is None else len(set(_cluster_keys(clusters)))
    return units - 1 if units >= 2 else None


def mean_error_bar(
    values: Sequence[float],
    clusters: Sequence[str | None] | None = None,
    *,
    excluded: int = 0,
    difference: bool = False,
    answers: float = 1.0,
    answer_variance: float | None = None,
) -> ErrorBar:
    """Mean of per-row ``values`` with Miller's SE and a 95% interval.

    SE (Miller eq. 2): sqrt(s^2 / n) with s^2 the sample variance (n - 1) of
    the row values; with ``clusters`` (any not None) the cluster-robust SE of
    :func:`clustered_se` instead.  Interval: :func:`share_interval` for
    shares in [0, 1], :func:`difference_interval` for per-row differences
    (``difference=True``, with ``answer_variance``), both with t quantiles,
    pseudo-answers sized by the ``answers`` per row, and never of zero width.

    Edge cases: no values -> everything None; one value (or one cluster) ->
    estimate only.
    """
    n = len(values)
    if n == 0:
        return ErrorBar(None, None, None, None, 0, excluded)
    estimate = mean_of(values)
    kind = INTERVAL_DIFFERENCE if difference else INTERVAL_SHARE
    keys: Sequence[str | None] | None = None
    if clusters is not None and any(c is not None for c in clusters):
        keys = clusters
        se = clustered_se(values, clusters)
        method, count = "clustered", len(set(_cluster_keys(clusters)))
    else:
        var = sample_variance(values)
        se = None if var is None else math.sqrt(var / n)
        method, count = "rows", None
    if difference:
        bounds = difference_interval(values, keys, answers, answer_variance)
    else:
        bounds = share_interval(values, keys, answers)
    if se is None or bounds is None:
        return ErrorBar(estimate, None, None, None, n, excluded, method, count, kind)
    return ErrorBar(estimate, se, bounds[0], bounds[1], n, excluded, method, count, kind)


def row_accuracy(summary: RowSummary) -> float | None:
    """A row's share of right answers among its valid attempts; None with none valid."""
    return summary.correct / summary.valid if summary.valid else None


def accuracy_error_bar(
    summaries: Sequence[RowSummary], clusters: Mapping[str, str] | None = None
) -> ErrorBar:
    """Mean accuracy as the mean of per-row accuracies, with Miller's error bar.

    Unit: each row's c/n (right answers over valid attempts).  Rows with no
    valid attempt are excluded and counted in ``excluded``.  This equals the
    headline (pooled) mean accuracy when every row has the same number of
    valid attempts, and weights rows equally otherwise.  SE and interval as
    in :func:`mean_error_bar` (pseudo-answers sized by the mean valid
    answers per row); clusters from ``clusters`` (row id -> cluster).
    """
    values: list[float] = []
    keys: list[str | None] = []
    answers = 0
    for s in summaries:
        acc = row_accuracy(s)
        if acc is None:
            continue
        values.append(acc)
        answers += s.valid
        keys.append(clusters.get(s.id) if clusters else None)
    return mean_error_bar(
        values,
        keys if clusters else None,
        excluded=len(summaries) - len(values),
        answers=answers / len(values) if values else 1.0,
    )


def pass_k_error_bar(
    summaries: Sequence[RowSummary], k: int, clusters: Mapping[str, str] | None = None
) -> ErrorBar:
    """pass^k as the mean of per-row estimates C(c,k)/C(n,k) over attempts, with Miller's error bar.

    Unit: each row's unbiased pass^k estimate (tau-bench eq. 1, see
    :func:`~passk_action.core.stats.pass_hat_k`).  Every row counts, as in
    the headline pass^k: a row with fewer than k valid attempts (including
    none) scores 0, so ``estimate`` equals the headline number and
    ``excluded`` is 0.  SE and interval as in :func:`mean_error_bar`.
    """
    estimates: dict[tuple[int, int], float] = {}
    values = []
    for s in summaries:
        key = (s.attempts, s.correct)
        value = estimates.get(key)
        if value is None:
            value = estimates[key] = pass_hat_k(s.attempts, s.correct, k)
        values.append(value)
    keys = [clusters.get(s.id) for s in summaries] if clusters else None
    return mean_error_bar(values, keys)
