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

from .classify import normalize, select
from .diff import same_checks
from .model import Attempt, Phase, RowClass, RowRecord, Run, Scoring
from .result import CompareResult
from .stats import RowSummary, check_counts, pass_hat_k, summarize_run

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


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


# ------------------------------------------------------------------ error bars


@dataclass(frozen=True, slots=True)
class ErrorBar:
    """A mean over rows with its standard error and 95% interval.

    ``n`` rows were used; ``excluded`` rows had no valid attempt and were left
    out.  ``method`` is ``"rows"`` (independent rows) or ``"clustered"``
    (cluster-robust, over ``clusters`` clusters).  ``se``, ``low`` and
    ``high`` are None when they cannot be estimated (fewer than 2 rows or
    fewer than 2 clusters); ``estimate`` is None when no row was used.
    """

    estimate: float | None
    se: float | None
    low: float | None
    high: float | None
    n: int
    excluded: int = 0
    method: str = "rows"
    clusters: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "estimate": self.estimate,
            "se": self.se,
            "ci95": None if self.low is None else [self.low, self.high],
            "n": self.n,
            "excluded": self.excluded,
            "method": self.method,
            "clusters": self.clusters,
        }


def clustered_se(values: Sequence[float], clusters: Sequence[str | None]) -> float | None:
    """Cluster-robust standard error of the mean of ``values`` (Miller eq. 4).

    Formula: SE_CRSE = sqrt( sum over clusters c of (sum_{i in c} (x_i - xbar))^2 ) / n,
    i.e. the sandwich estimator (1/n^2) sum_c sum_{i,j in c} (x_i - xbar)(x_j - xbar).
    A row whose cluster is None is a cluster of its own.

    Edge cases: None with fewer than 2 rows or fewer than 2 clusters (nothing
    to estimate the spread from).  When every row is its own cluster this is
    sqrt((n-1)/n) times the unclustered SE (it divides by n, not n - 1).
    Caveat: like every sandwich estimator it is biased low with few clusters;
    with fewer than about 30 clusters read the interval as optimistic.
    """
    if len(values) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    n = len(values)
    if n < 2:
        return None
    m = _mean(values)
    sums: dict[tuple[int, str], float] = {}
    for i, (x, cluster) in enumerate(zip(values, clusters, strict=True)):
        key = (0, cluster) if cluster is not None else (1, str(i))
        sums[key] = sums.get(key, 0.0) + (x - m)
    if len(sums) < 2:
        return None
    return math.sqrt(math.fsum(s * s for s in sums.values())) / n


def mean_error_bar(
    values: Sequence[float],
    clusters: Sequence[str | None] | None = None,
    *,
    excluded: int = 0,
    bounded: bool = True,
) -> ErrorBar:
    """Mean of per-row ``values`` with its SE and 95% interval.

    Formula (Miller eq. 2): SE = sqrt(s^2 / n) with s^2 the sample variance
    (n - 1) of the row values; with ``clusters`` (any not None) the
    cluster-robust SE of :func:`clustered_se` instead.  Interval: mean +-
    1.96 * SE (z = 1.959964), clipped to [0, 1] when ``bounded`` (a share
    cannot leave it; differences pass ``bounded=False``).

    Edge cases: no values -> everything None; one value -> estimate only.
    """
    n = len(values)
    if n == 0:
        return ErrorBar(None, None, None, None, 0, excluded)
    estimate = _mean(values)
    use_clusters = clusters is not None and any(c is not None for c in clusters)
    if use_clusters:
        assert clusters is not None
        se = clustered_se(values, clusters)
        keys = {c if c is not None else f"\0{i}" for i, c in enumerate(clusters)}
        method, count = "clustered", len(keys)
    else:
        var = sample_variance(values)
        se = None if var is None else math.sqrt(var / n)
        method, count = "rows", None
    if se is None:
        return ErrorBar(estimate, None, None, None, n, excluded, method, count)
    low, high = estimate - Z_975 * se, estimate + Z_975 * se
    if bounded:
        low, high = _clip(low), _clip(high)
    return ErrorBar(estimate, se, low, high, n, excluded, method, count)


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
    in :func:`mean_error_bar`; clusters from ``clusters`` (row id -> cluster).
    """
    values: list[float] = []
    keys: list[str | None] = []
    for s in summaries:
        acc = row_accuracy(s)
        if acc is None:
            continue
        values.append(acc)
        keys.append(clusters.get(s.id) if clusters else None)
    return mean_error_bar(values, keys if clusters else None, excluded=len(summaries) - len(values))


def pass_k_error_bar(
    summaries: Sequence[RowSummary], k: int, clusters: Mapping[str, str] | None = None
) -> ErrorBar:
    """pass^k as the mean of per-row estimates C(c,k)/C(n,k), with Miller's error bar.

    Unit: each row's unbiased pass^k estimate (tau-bench eq. 1, see
    :func:`~passk_action.core.stats.pass_hat_k`).  Every row counts, as in
    the headline pass^k: a row with fewer than k valid attempts (including
    none) scores 0, so ``estimate`` equals the headline number and
    ``excluded`` is 0.  SE and interval as in :func:`mean_error_bar`.
    """
    estimates: dict[tuple[int, int], float] = {}
    values = []
    for s in summaries:
        key = (s.valid, s.correct)
        value = estimates.get(key)
        if value is None:
            value = estimates[key] = pass_hat_k(s.valid, s.correct, k)
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
    (Miller section 4 and eq. 4); 95% interval mean +- 1.96 * SE.
    McNemar: over every row present on both sides, b = stable-correct on the
    baseline only, c = on the candidate only (the rows lost and gained); see
    :func:`mcnemar_exact_p`.  Rows are matched by id; a row on one side only
    is ignored.
    """
    base_by_id = {s.id: s for s in baseline}
    diffs: list[float] = []
    keys: list[str | None] = []
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
    bar = mean_error_bar(diffs, keys if clusters else None, excluded=excluded, bounded=False)
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
    """pass^j and pass@j for j = 1..J from per-row (valid n, right c) counts.

    pass^j = mean over rows of C(c, j) / C(n, j) (Yao et al., "tau-bench",
    2024, eq. 1); pass@j = mean over rows of 1 - C(n - c, j) / C(n, j) (Chen
    et al. 2021, eq. 1).  J is ``max_j`` or the largest n over rows.  Every
    row is in the mean; a row with n < j scores 0 in both and is counted in
    that point's ``short_rows``.  An empty input (or J = 0) gives no points.
    """
    top = max((n for n, _ in counts), default=0) if max_j is None else max_j
    if not counts:
        return PassCurve(0, ())
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
    """How often one intermediate check changed its value within a row.

    ``flip_rate`` = ``flipped`` / ``eligible``: eligible rows reported the
    check on at least 2 valid attempts; a row flipped when the reported
    values were not all equal (an attempt that did not report the check is
    ignored, not counted as a value).  ``held_rows`` are the flipped rows
    whose decision held (all valid decisions equal): variation the verdict
    alone hides.
    """

    name: str
    eligible: int
    flipped: int
    held_rows: tuple[str, ...]

    @property
    def flip_rate(self) -> float | None:
        return self.flipped / self.eligible if self.eligible else None

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.name,
            "eligible": self.eligible,
            "flipped": self.flipped,
            "flip_rate": self.flip_rate,
            "held_rows": list(self.held_rows),
        }


def check_stability(
    rows: Sequence[RowRecord],
    attempts_by_row: Mapping[str, Sequence[Attempt]],
    scoring: Scoring,
    phases: Iterable[Phase] | None = MAIN_ONLY,
) -> tuple[CheckStability, ...]:
    """Per-check flip rate over a run (formula in :class:`CheckStability`).

    Only valid attempts of ``phases`` (main by default) count: an error
    attempt has no checks.  Checks are listed in the order the agent first
    reported them; decisions are compared after the scoring's normalization.
    """
    wanted = None if phases is None else tuple(phases)
    order: dict[str, None] = {}
    eligible: dict[str, int] = {}
    flipped: dict[str, int] = {}
    held: dict[str, list[str]] = {}
    for row in rows:
        valid = [a for a in select(attempts_by_row.get(row.id, ()), wanted) if a.valid]
        first = valid[0].checks if valid else ()
        if len(valid) > 1 and same_checks(valid) and len({n for n, _ in first}) == len(first):
            # The usual case: every check reported the same value on every
            # attempt, so each one is eligible here and none flipped.
            for name, _ in first:
                order.setdefault(name, None)
                eligible[name] = eligible.get(name, 0) + 1
            continue
        decisions = {normalize(a.decision, scoring) for a in valid if a.decision is not None}
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
    return tuple(
        CheckStability(name, eligible.get(name, 0), flipped.get(name, 0), tuple(held.get(name, ())))
        for name in order
    )


# ------------------------------------------------------------------------ power


@dataclass(frozen=True, slots=True)
class Power:
    """The smallest accuracy difference the dataset can detect, and what would shrink it.

    Formulas (Miller section 5, eq. 10 and the variance decomposition before
    it), at alpha = 0.05 two-sided and power 0.8:

    - ``mde_unpaired`` = (z_{0.975} + z_{0.8}) * sqrt(2 * s^2 / n), s^2 the
      sample variance of per-row accuracy (averaged over both versions), n
      the rows: two independent samples.
    - ``mde_paired`` = (z_{0.975} + z_{0.8}) * sqrt(var(d) / n), var(d) the
      sample variance of per-row differences: what passk actually does
      (both versions on the same rows).  None without paired data.
    - Decomposition: Var(row mean) = Var(true row accuracy) + E[sigma_i^2 / k_i],
      sigma_i^2 = p_i (1 - p_i) estimated without bias by p^(1 - p^) k/(k - 1)
      from a row's k_i >= 2 valid attempts.  ``within`` is E[sigma_i^2 / k_i],
      ``between`` = s^2 - within (floored at 0), ``within_share`` = within / s^2.
    - ``mde_more_rows``: unpaired MDE with twice the rows; ``mde_more_k``:
      with twice the attempts per row (within / 2); ``mde_k_infinite``: the
      floor raising k can never beat (within -> 0).  For the same executions
      doubling rows always shrinks the MDE at least as much as doubling k
      (it halves both terms), but rows need new labels and k does not; so
      ``advice`` says "raise k" when within-row noise is at least half of the
      variance (more attempts then remove most of what more rows would) and
      "add rows" otherwise.

    Every field is None when it cannot be estimated (fewer than 2 rows).
    """

    rows: int
    k: float | None
    variance: float | None
    within: float | None
    between: float | None
    within_share: float | None
    mde_unpaired: float | None
    mde_paired: float | None
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
            "alpha": 0.05,
            "power": 0.8,
            "k": self.k,
            "variance": self.variance,
            "within": self.within,
            "between": self.between,
            "within_share": self.within_share,
            "mde_unpaired": self.mde_unpaired,
            "mde_paired": self.mde_paired,
            "mde_more_rows": self.mde_more_rows,
            "mde_more_k": self.mde_more_k,
            "mde_k_infinite": self.mde_k_infinite,
            "advice": self.advice,
        }


def _within_row(summaries: Sequence[RowSummary]) -> tuple[float, float] | None:
    """(E[sigma_i^2 / k_i], mean k_i) over rows with at least 2 valid attempts."""
    terms: list[float] = []
    ks: list[int] = []
    for s in summaries:
        if s.valid < 2:
            continue
        p = s.correct / s.valid
        sigma2 = p * (1 - p) * s.valid / (s.valid - 1)
        terms.append(sigma2 / s.valid)
        ks.append(s.valid)
    if not terms:
        return None
    return _mean(terms), _mean([float(k) for k in ks])


def power_analysis(
    versions: Sequence[Sequence[RowSummary]], paired_differences: Sequence[float] | None = None
) -> Power:
    """Minimum detectable effect and the rows-versus-k decomposition (see :class:`Power`).

    ``versions`` are the row summaries of each measured version (one or
    two); their variance figures are averaged, assuming equal variance.
    """
    factor = Z_975 + Z_80
    variances: list[float] = []
    withins: list[float] = []
    ks: list[float] = []
    n = 0
    for summaries in versions:
        values = [a for a in (row_accuracy(s) for s in summaries) if a is not None]
        n = max(n, len(values))
        var = sample_variance(values)
        if var is not None:
            variances.append(var)
        within = _within_row(summaries)
        if within is not None:
            withins.append(within[0])
            ks.append(within[1])
    paired: float | None = None
    if paired_differences is not None:
        var_d = sample_variance(paired_differences)
        if var_d is not None:
            paired = factor * math.sqrt(var_d / len(paired_differences))
    if not variances or n < 2:
        return Power(n, None, None, None, None, None, None, paired, None, None, None)
    variance = _mean(variances)
    within_v = min(_mean(withins), variance) if withins else 0.0
    between = variance - within_v

    def mde(var: float, rows: int) -> float:
        return factor * math.sqrt(2 * var / rows)

    return Power(
        rows=n,
        k=_mean(ks) if ks else None,
        variance=variance,
        within=within_v,
        between=between,
        within_share=within_v / variance if variance > 0 else None,
        mde_unpaired=mde(variance, n),
        mde_paired=paired,
        mde_more_rows=mde(variance, 2 * n),
        mde_more_k=mde(between + within_v / 2, n),
        mde_k_infinite=mde(between, n),
    )


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


def analyze_run(
    rows: Sequence[RowRecord],
    run: Run,
    clusters: Mapping[str, str] | None = None,
    *,
    k: int | None = None,
    scoring: Scoring | None = None,
) -> tuple[VersionAnalysis, list[RowSummary]]:
    """One version's analysis over ``rows`` (main attempts only) and its row summaries."""
    k = run.settings.k if k is None else k
    scoring = run.settings.scoring if scoring is None else scoring
    grouped = run.attempts_by_row()
    summaries = summarize_run(rows, grouped, k, scoring, MAIN_ONLY)
    analysis = VersionAnalysis(
        version=run.agent.version.value,
        accuracy=accuracy_error_bar(summaries, clusters),
        pass_k=pass_k_error_bar(summaries, k, clusters),
        curve=pass_curve([(s.valid, s.correct) for s in summaries]),
        checks=check_stability(rows, grouped, scoring),
    )
    return analysis, summaries


def analyze(result: CompareResult, clusters: Mapping[str, str] | None = None) -> Analysis:
    """Error bars, paired comparison, pass^k curves, check stability and power.

    Rows (labels) come from ``result.rows``, the authoritative ones; k and
    scoring from the candidate run (the gate's settings).  Main attempts
    only: confirmation re-runs target lost rows and would bias every mean.
    ``clusters`` maps row id -> cluster (``Row.cluster`` of the dataset);
    rows missing from it are clusters of their own.
    """
    k = result.candidate.settings.k
    scoring = result.candidate.settings.scoring
    base, base_summaries = analyze_run(result.rows, result.baseline, clusters, k=k, scoring=scoring)
    cand, cand_summaries = analyze_run(
        result.rows, result.candidate, clusters, k=k, scoring=scoring
    )
    paired = paired_comparison(base_summaries, cand_summaries, clusters)
    diffs = _differences(base_summaries, cand_summaries)
    return Analysis(
        k=k,
        baseline=base,
        candidate=cand,
        paired=paired,
        power=power_analysis([base_summaries, cand_summaries], diffs),
    )


def _differences(baseline: Sequence[RowSummary], candidate: Sequence[RowSummary]) -> list[float]:
    base_by_id = {s.id: s for s in baseline}
    out = []
    for cand in candidate:
        base = base_by_id.get(cand.id)
        if base is None:
            continue
        a, b = row_accuracy(cand), row_accuracy(base)
        if a is not None and b is not None:
            out.append(a - b)
    return out
