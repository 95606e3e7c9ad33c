"""Honest statistics: error bars, a paired comparison, the pass^k curve, check
stability and statistical power, for both versions of a comparison.

The three headline numbers (``core/stats.py``) say *what* was measured; this
module says *how sure* we can be of it.  It follows Evan Miller, "Adding Error
Bars to Evals: A Statistical Approach to Language Model Evaluations"
(arXiv:2411.00640, 2024; "Miller" below):

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

Everything is pure: recorded attempts in, frozen dataclasses with ``to_json()``
out.  Every function states its formula, its source and its edge cases.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain, repeat

from .classify import select
from .diff import same_checks
from .model import Attempt, Phase, RowClass, RowRecord, Run, Scoring
from .result import CompareResult
from .scoring import agreement_key, check_value_right
from .stats import RowSummary, check_counts, pass_hat_k, summarize_run
from .student_t import t_975

Z_975 = 1.959964
"""Standard normal quantile z_{0.975}: two-sided 95% intervals and alpha = 0.05.

Hard-coded (no scipy in the container); Phi^-1(0.975) = 1.95996398...
"""
Z_80 = 0.841621
"""Standard normal quantile z_{0.80}: power 0.8.  Phi^-1(0.8) = 0.84162123..."""

MAIN_ONLY: tuple[Phase, ...] = (Phase.MAIN,)

WITHIN_NOISE = "within noise"
BETTER = "better"
WORSE = "worse"
TOO_FEW_ROWS = "too few rows"


# --------------------------------------------------------------------- helpers


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sample_variance(values: Sequence[float]) -> float | None:
    """Unbiased sample variance sum((x - mean)^2) / (n - 1); None when n < 2."""
    if len(values) < 2:
        return None
    m = _mean(values)
    return math.fsum((x - m) ** 2 for x in values) / (len(values) - 1)


# ------------------------------------------------------------------ error bars

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
    return math.sqrt(_residual_square_sum(values, _mean(values), clusters)) / n


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
    mean = _mean(values)
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
    and coverage fell to 0.92 (issue 20).

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
    mean = _mean(values)
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
    interval was 2-4 times wider than coverage needs below 50 rows
    (issue 20).

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
    estimate = _mean(values)
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


# ------------------------------------------------------------ paired comparison


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar test on discordant pairs b and c.

    Formula: p = min(1, 2 * P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2),
    the binomial tail summed exactly in integers (sum_{i<=m} C(b+c, i) / 2^(b+c)).
    Source: McNemar (1947); the exact (binomial) form, as recommended for
    small counts.  Edge case: b + c = 0 (no discordant row) gives p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError("counts must be >= 0")
    total = b + c
    if total == 0:
        return 1.0
    # C(n, i+1) = C(n, i) * (n - i) / (i + 1), exactly: one small multiplication per
    # term instead of a fresh C(n, i) (thousands of discordant rows made that seconds).
    term = count = 1
    for i in range(min(b, c)):
        term = term * (total - i) // (i + 1)
        count += term
    tail = Fraction(count, 2**total)
    return float(min(Fraction(1), 2 * tail))


ALPHA = 0.05
"""The significance level every verdict and power figure here uses."""


def p_value_text(p: float) -> str:
    """A p-value as text that never rounds across 0.05 ("< 0.001" below 0.001).

    Rule: two significant digits, more (up to 17, which tell every double
    apart) while the shown number would sit on the other side of 0.05 or on
    0.05 itself: 0.049 prints "0.049", 0.0504 "0.0504", 0.04996 "0.04996",
    0.21484 "0.21", 1 "1", the double just below 0.05 "0.049999999999999996".
    Edge cases: a p of exactly 0.05 prints "0.05" (an exact McNemar p, a
    dyadic fraction, never is); outside [0, 1] is a ValueError.  No
    exponent: from 0.001 to 1, ``g`` with 2 or more digits never writes one.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a p-value is in [0, 1], got {p}")
    if p < 0.001:
        return "< 0.001"
    if p == ALPHA:
        return "0.05"
    for digits in range(2, 18):
        text = f"{p:.{digits}g}"
        shown = float(text)
        if shown != ALPHA and (shown < ALPHA) == (p < ALPHA):
            break
    return text


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """Candidate minus baseline, row by row (Miller section 4).

    ``difference`` is the mean per-row accuracy difference with its paired SE
    and 95% interval (not clipped: it lives in [-1, 1]).  ``excluded`` rows
    lacked a valid attempt on one side.  ``b``/``c`` are the McNemar
    discordant counts on stable-correct status (b: only the baseline, c: only
    the candidate), ``p_value`` their exact two-sided test.  ``verdict`` is
    "within noise" when the interval contains 0, "better"/"worse" when it lies
    above/below 0, and "too few rows" when no interval could be computed.
    """

    difference: ErrorBar
    b: int
    c: int
    p_value: float
    verdict: str

    def to_json(self) -> dict[str, object]:
        return {
            "difference": self.difference.to_json(),
            "mcnemar": {"b": self.b, "c": self.c, "p_value": self.p_value},
            "verdict": self.verdict,
        }


def verdict_of(bar: ErrorBar) -> str:
    """Verdict "within noise" if the 95% interval holds 0, else "better"/"worse"."""
    if bar.low is None or bar.high is None:
        return TOO_FEW_ROWS
    if bar.low > 0:
        return BETTER
    if bar.high < 0:
        return WORSE
    return WITHIN_NOISE


def paired_comparison(
    baseline: Sequence[RowSummary],
    candidate: Sequence[RowSummary],
    clusters: Mapping[str, str] | None = None,
) -> PairedComparison:
    """Paired difference of per-row accuracy and an exact McNemar test.

    Difference: d_i = acc_cand(i) - acc_base(i) over rows with a valid
    attempt on both sides; mean(d) with SE = sqrt(var(d) / n) (sample
    variance, n - 1), or the cluster-robust SE of d with ``clusters``
    (Miller section 4 and eq. 4); 95% interval by
    :func:`difference_interval`, its pseudo-pairs sized by the answer pairs
    a row is worth: sigma^2 of one pair's difference = mean over rows of
    b_i (1 - c_i) + c_i (1 - b_i), minus mean(d)^2 (b_i, c_i the versions'
    shares), at most the mean over rows of the harmonic mean of both
    versions' valid answers.
    McNemar: over every row present on both sides, b = stable-correct on the
    baseline only, c = on the candidate only (the rows lost and gained); see
    :func:`mcnemar_exact_p`.  Rows are matched by id; a row on one side only
    is ignored.
    """
    base_by_id = {s.id: s for s in baseline}
    diffs: list[float] = []
    keys: list[str | None] = []
    discordance: list[float] = []
    pairs: list[float] = []
    excluded = b = c = 0
    for cand in candidate:
        base = base_by_id.get(cand.id)
        if base is None:
            continue
        base_sc = base.row_class is RowClass.STABLE_CORRECT
        cand_sc = cand.row_class is RowClass.STABLE_CORRECT
        b += base_sc and not cand_sc
        c += cand_sc and not base_sc
        base_acc, cand_acc = row_accuracy(base), row_accuracy(cand)
        if base_acc is None or cand_acc is None:
            excluded += 1
            continue
        diffs.append(cand_acc - base_acc)
        keys.append(clusters.get(cand.id) if clusters else None)
        # An answer of each version disagreeing, the versions answering independently.
        discordance.append(base_acc * (1 - cand_acc) + cand_acc * (1 - base_acc))
        pairs.append(2 / (1 / base.valid + 1 / cand.valid))
    variance = None
    if diffs:
        variance = _mean(discordance) - _mean(diffs) ** 2
    bar = mean_error_bar(
        diffs,
        keys if clusters else None,
        excluded=excluded,
        difference=True,
        answers=_mean(pairs) if pairs else 1.0,
        answer_variance=variance,
    )
    return PairedComparison(bar, b, c, mcnemar_exact_p(b, c), verdict_of(bar))


# ---------------------------------------------------------------- pass^k curve


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


# --------------------------------------------------------------- check stability


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


# ------------------------------------------------------------------------ power

PAIRED = "paired"
PROJECTED = "projected"
POWER = 0.8


@dataclass(frozen=True, slots=True)
class Power:
    """The smallest drop in mean accuracy the verdict detects 80% of the time, and what shrinks it.

    "Detects" means what the report prints: the paired difference's 95%
    interval (:func:`difference_interval`, the test behind "within noise" /
    "worse") lies below 0.  The change is modelled as every row's candidate
    accuracy falling by the same delta (clipped at 0), on top of the
    rows' own spread of differences:

    - each row i has an accuracy m_i (both versions' mean; for one run,
      the run's) and v_b, v_c valid answers on each side;
    - Var(d_i) = ``between`` + m_i (1 - m_i) / v_b + c_i (1 - c_i) / v_c,
      c_i = max(0, m_i - delta): the row's true difference varies between
      rows by ``between``, and each version's answers add binomial noise
      at its own accuracy (so a shifted row near 100% gets noisier);
    - the report's interval at that variance: centre -Delta n / (n + 2 /
      k_eff) (Delta = mean of m_i - c_i; the pseudo-pairs shrink it),
      half-width t_{0.975, n-1} sqrt((n - 1) Var + (1 + 2 centre^2) / k_eff)
      / (n + 2 / k_eff), k_eff the answer pairs a row is worth
      (:func:`answers_per_row_worth`);
    - chance of "worse" = Phi((Delta n / (n + 2 / k_eff) - half-width) /
      (n / (n + 2 / k_eff) sqrt(Var / n))); ``mde`` = the Delta where it
      reaches 0.8 (bisection on delta), None when no drop reaches it.

    ``design`` "paired": from a comparison, ``between`` = the sample
    variance of d (n - 1) minus the mean within-row noise (unbiased
    p^(1 - p^) / (v - 1) per side), at least 0; "projected": from one run,
    for a candidate on the same rows, ``between`` = 0 (a change that moves
    every row alike).  ``variance`` = between + within at no change,
    ``within_share`` = within / variance.  ``mde_more_rows``: twice the
    rows; ``mde_more_k``: twice the attempts per row (noise halved, k_eff
    doubled); ``mde_k_infinite``: no within-row noise (None when
    ``between`` is 0: then nothing but the rows' count limits it).  Checked
    by simulation through :func:`paired_comparison` (``bench/power.py``,
    table in ``bench/power.md``).  Caveat: rows are taken as independent
    even when they carry clusters; with clusters the true MDE is larger.
    """

    rows: int
    design: str
    k: float | None
    variance: float | None
    within: float | None
    between: float | None
    within_share: float | None
    mde: float | None
    mde_more_rows: float | None
    mde_more_k: float | None
    mde_k_infinite: float | None

    @property
    def advice(self) -> str | None:
        """Whether a higher k (cheap: no new labels) or more rows would help more."""
        if self.within_share is None:
            return None
        if self.within_share >= 0.5:
            return "raise k: most of the variance is answer-to-answer noise within rows"
        return "add rows: most of the variance is between rows, which a higher k cannot remove"

    def to_json(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "design": self.design,
            "alpha": ALPHA,
            "power": POWER,
            "k": self.k,
            "variance": self.variance,
            "within": self.within,
            "between": self.between,
            "within_share": self.within_share,
            "mde": self.mde,
            "mde_more_rows": self.mde_more_rows,
            "mde_more_k": self.mde_more_k,
            "mde_k_infinite": self.mde_k_infinite,
            "advice": self.advice,
        }


def normal_cdf(x: float) -> float:
    """Phi(x) = erfc(-x / sqrt 2) / 2 (exact to double precision)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@dataclass(frozen=True, slots=True)
class RowNoise:
    """What the power model needs per row: its accuracy and valid answers on each side."""

    accuracy: tuple[float, ...]
    base_answers: tuple[int, ...]
    cand_answers: tuple[int, ...]


def _detection(
    rows: RowNoise, delta: float, between: float, worth: float, copies: int
) -> tuple[float, float]:
    """(mean drop Delta, chance the interval lies below 0) when every row drops by ``delta``."""
    drops, noise = [], []
    for m, vb, vc in zip(rows.accuracy, rows.base_answers, rows.cand_answers, strict=True):
        c = max(0.0, m - delta)
        drops.append(m - c)
        noise.append(m * (1 - m) / vb + c * (1 - c) / vc)
    n = len(drops) * copies
    mean_drop = _mean(drops)
    variance = between + _mean(noise)
    weight = 2.0 / worth if math.isfinite(worth) else 0.0
    shrink = n / (n + weight)
    centre = mean_drop * shrink
    spread = (n - 1) * variance + ((1 + 2 * centre**2) / worth if weight else 0.0)
    half = t_975(n - 1) * math.sqrt(spread) / (n + weight)
    sd = shrink * math.sqrt(variance / n)
    if sd == 0:
        return mean_drop, 1.0 if centre > half else 0.0
    return mean_drop, normal_cdf((centre - half) / sd)


def smallest_detected_drop(
    rows: RowNoise, between: float, worth: float, copies: int = 1
) -> float | None:
    """The mean drop detected with chance :data:`POWER` (formulas in :class:`Power`).

    Bisection on the per-row drop delta in [0, 1] (60 halvings: exact to
    double precision); None when even delta = 1 stays below.  The chance
    grows with delta (a larger drop, as noisy or noisier, but further from 0).
    """
    if not rows.accuracy or len(rows.accuracy) * copies < 2:
        return None
    top, chance = _detection(rows, 1.0, between, worth, copies)
    if chance < POWER or top <= 0:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if _detection(rows, mid, between, worth, copies)[1] >= POWER:
            high = mid
        else:
            low = mid
    return _detection(rows, high, between, worth, copies)[0]


def _unbiased_noise(correct: int, valid: int) -> float | None:
    """p^(1 - p^) / (v - 1), unbiased for p (1 - p) / v; None below 2 valid answers."""
    if valid < 2:
        return None
    p = correct / valid
    return p * (1 - p) / (valid - 1)


def _power(
    design: str,
    rows: RowNoise,
    variance: float | None,
    noises: Sequence[float],
    worth: float,
    answers: float | None,
) -> Power:
    """The figures of :class:`Power` for ``rows``, given the variance at no change."""
    n = len(rows.accuracy)
    if variance is None or n < 2:
        return Power(n, design, answers, None, None, None, None, None, None, None, None)
    within = min(_mean(noises), variance) if noises else 0.0
    between = variance - within
    doubled = RowNoise(
        rows.accuracy,
        tuple(2 * v for v in rows.base_answers),
        tuple(2 * v for v in rows.cand_answers),
    )
    # With no noise within rows a row's pseudo-pairs vanish (k_eff -> infinity).
    floor = None
    if between > 0:
        floor = smallest_detected_drop(
            RowNoise(rows.accuracy, (10**12,) * n, (10**12,) * n), between, math.inf
        )
    return Power(
        rows=n,
        design=design,
        k=answers,
        variance=variance,
        within=within,
        between=between,
        within_share=within / variance if variance > 0 else None,
        mde=smallest_detected_drop(rows, between, worth),
        mde_more_rows=smallest_detected_drop(rows, between, worth, copies=2),
        mde_more_k=smallest_detected_drop(doubled, between, 2 * worth),
        mde_k_infinite=floor,
    )


def power_analysis(summaries: Sequence[RowSummary]) -> Power:
    """Power of a future comparison on these rows (design "projected", :class:`Power`).

    Rows with a valid attempt; each side of the projected comparison has
    this run's valid answers and accuracy per row, and rows do not differ
    in how they change (``between`` = 0), so the variance at no change is
    the within-row noise of both sides.
    """
    used = [s for s in summaries if s.valid]
    accuracy = tuple(s.correct / s.valid for s in used)
    answers = tuple(s.valid for s in used)
    rows = RowNoise(accuracy, answers, answers)
    noises = [2 * n for s in used if (n := _unbiased_noise(s.correct, s.valid)) is not None]
    variance = _mean(noises) if noises else (0.0 if len(used) >= 2 else None)
    worth = answers_per_row_worth(
        list(accuracy),
        None,
        _mean(accuracy) * (1 - _mean(accuracy)) if used else None,
        _mean([float(a) for a in answers]) if used else 1.0,
    )
    return _power(
        PROJECTED,
        rows,
        variance,
        noises,
        worth,
        _mean([float(a) for a in answers]) if used else None,
    )


def paired_power(baseline: Sequence[RowSummary], candidate: Sequence[RowSummary]) -> Power:
    """Power of this comparison's verdict (design "paired", :class:`Power`).

    Rows answered on both sides, matched by id as in :func:`paired_comparison`;
    a row's accuracy is both versions' mean, its noise the sum of both
    sides' unbiased p^(1 - p^) / (v - 1) (rows with 2 or more valid answers
    on both sides); ``k`` is the mean valid attempts per side.
    """
    base_by_id = {s.id: s for s in baseline}
    diffs: list[float] = []
    noises: list[float] = []
    accuracy: list[float] = []
    base_answers: list[int] = []
    cand_answers: list[int] = []
    discordance: list[float] = []
    pairs: list[float] = []
    for cand in candidate:
        base = base_by_id.get(cand.id)
        if base is None:
            continue
        base_acc, cand_acc = row_accuracy(base), row_accuracy(cand)
        if base_acc is None or cand_acc is None:
            continue
        diffs.append(cand_acc - base_acc)
        accuracy.append((base_acc + cand_acc) / 2)
        base_answers.append(base.valid)
        cand_answers.append(cand.valid)
        discordance.append(base_acc * (1 - cand_acc) + cand_acc * (1 - base_acc))
        pairs.append(2 / (1 / base.valid + 1 / cand.valid))
        base_noise = _unbiased_noise(base.correct, base.valid)
        cand_noise = _unbiased_noise(cand.correct, cand.valid)
        if base_noise is not None and cand_noise is not None:
            noises.append(base_noise + cand_noise)
    rows = RowNoise(tuple(accuracy), tuple(base_answers), tuple(cand_answers))
    variance = sample_variance(diffs)
    worth = 1.0
    if diffs:
        pair_variance = _mean(discordance) - _mean(diffs) ** 2
        worth = answers_per_row_worth(diffs, None, pair_variance, _mean(pairs))
    answers = (
        _mean([(b + c) / 2 for b, c in zip(base_answers, cand_answers, strict=True)])
        if diffs
        else None
    )
    return _power(PAIRED, rows, variance, noises, worth, answers)


# --------------------------------------------------------------------- analysis


@dataclass(frozen=True, slots=True)
class VersionAnalysis:
    """Everything this module says about one version's main attempts."""

    version: str
    accuracy: ErrorBar
    pass_k: ErrorBar
    curve: PassCurve
    checks: tuple[CheckStability, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "mean_accuracy": self.accuracy.to_json(),
            "pass_k": self.pass_k.to_json(),
            "curve": self.curve.to_json(),
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True, slots=True)
class Analysis:
    """The one value renderers need: both versions, their comparison and the power."""

    k: int
    baseline: VersionAnalysis
    candidate: VersionAnalysis
    paired: PairedComparison
    power: Power

    def to_json(self) -> dict[str, object]:
        return {
            "k": self.k,
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "paired": self.paired.to_json(),
            "power": self.power.to_json(),
        }


def clusters_of(rows: Iterable[RowRecord]) -> dict[str, str] | None:
    """Row id -> cluster for the rows that carry one; None when no row does."""
    found = {r.id: r.cluster for r in rows if r.cluster is not None}
    return found or None


def analyze_run(
    rows: Sequence[RowRecord],
    run: Run,
    clusters: Mapping[str, str] | None = None,
    *,
    k: int | None = None,
    scoring: Scoring | None = None,
) -> tuple[VersionAnalysis, list[RowSummary]]:
    """One version's analysis over ``rows`` (main attempts only) and its row summaries.

    ``clusters`` defaults to the rows' own (:func:`clusters_of`), so a report
    of an artifact alone has the clustered error bars of the dataset.
    """
    if clusters is None:
        clusters = clusters_of(rows)
    k = run.settings.k if k is None else k
    scoring = run.settings.scoring if scoring is None else scoring
    grouped = run.attempts_by_row()
    summaries = summarize_run(rows, grouped, k, scoring, MAIN_ONLY)
    analysis = VersionAnalysis(
        version=run.agent.version.value,
        accuracy=accuracy_error_bar(summaries, clusters),
        pass_k=pass_k_error_bar(summaries, k, clusters),
        curve=pass_curve([(s.attempts, s.correct) for s in summaries]),
        checks=check_stability(rows, grouped, scoring, k=k),
    )
    return analysis, summaries


def analyze(result: CompareResult, clusters: Mapping[str, str] | None = None) -> Analysis:
    """Error bars, paired comparison, pass^k curves, check stability and power.

    Rows (labels) come from ``result.rows``, the authoritative ones; k and
    scoring from the candidate run (the gate's settings).  Main attempts
    only: confirmation re-runs target lost rows and would bias every mean.
    ``clusters`` maps row id -> cluster; it defaults to the clusters the
    result's rows carry (the dataset's, recorded with them).  Rows missing
    from it are clusters of their own.
    """
    if clusters is None:
        clusters = clusters_of(result.rows)
    k = result.candidate.settings.k
    scoring = result.candidate.settings.scoring
    base, base_summaries = analyze_run(result.rows, result.baseline, clusters, k=k, scoring=scoring)
    # The candidate's own k and scoring are the gate's: no need to pass them.
    cand, cand_summaries = analyze_run(result.rows, result.candidate, clusters)
    return Analysis(
        k=k,
        baseline=base,
        candidate=cand,
        paired=paired_comparison(base_summaries, cand_summaries, clusters),
        power=paired_power(base_summaries, cand_summaries),
    )
