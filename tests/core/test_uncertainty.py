"""Error bars, paired comparison, pass^k curve, check stability and power, by hand."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest

from passk_action.core.analysis import analyze
from passk_action.core.check_stability import check_stability
from passk_action.core.error_bars import (
    accuracy_error_bar,
    answers_per_row_worth,
    clustered_se,
    difference_interval,
    mean_error_bar,
    pass_k_error_bar,
    share_interval,
)
from passk_action.core.gate import GatePolicy
from passk_action.core.model import Phase, RowClass, Scoring, Version
from passk_action.core.paired import (
    BETTER,
    TOO_FEW_ROWS,
    WITHIN_NOISE,
    WORSE,
    mcnemar_exact_p,
    p_value_text,
    paired_comparison,
)
from passk_action.core.pass_curve import pass_at_k, pass_curve
from passk_action.core.power import RowNoise, paired_power, power_analysis, smallest_detected_drop
from passk_action.core.result import CompareResult, evaluate
from passk_action.core.stats import RowSummary
from passk_action.core.student_t import regularized_beta, student_t_cdf, t_975
from support.runs import attempts, record, run_of

EXACT = Scoring()


def summary(row_id: str, valid: int, correct: int, cls: RowClass = RowClass.FLIP) -> RowSummary:
    return RowSummary(row_id, cls, valid, correct, 0, ())


# ------------------------------------------------------------------ pass^k curve


def test_tau_bench_figure_through_the_curve() -> None:
    """50 tasks x 4 trials; 14/12/10/4/10 tasks with 0/1/2/3/4 successes.

    pass^1..4 = 0.420, 0.273, 0.220, 0.200 (tau-bench's published figure).
    """
    counts = [0] * 14 + [1] * 12 + [2] * 10 + [3] * 4 + [4] * 10
    curve = pass_curve([(4, c) for c in counts])
    assert [p.j for p in curve.points] == [1, 2, 3, 4]
    assert [round(p.pass_hat, 3) for p in curve.points] == [0.420, 0.273, 0.220, 0.200]
    # pass@1 is the mean accuracy too; pass@4 = rows with any success = 36/50.
    assert curve.points[0].pass_at == pytest.approx(0.42)
    assert curve.points[3].pass_at == pytest.approx(36 / 50)
    assert all(p.short_rows == 0 for p in curve.points)


def test_curve_scores_short_rows_zero_and_says_so() -> None:
    # Row a: 3 valid, 3 right; row b: 2 valid, 2 right (a crash on its third).
    curve = pass_curve([(3, 3), (2, 2)])
    third = curve.points[2]
    assert third.j == 3
    assert third.short_rows == 1
    assert third.pass_hat == pytest.approx(0.5)  # (1 + 0) / 2
    assert third.pass_at == pytest.approx(0.5)
    assert curve.points[1].pass_hat == pytest.approx(1.0)


def test_pass_at_k_chen_estimator() -> None:
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6 = 0.5
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 0, 3) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


def test_empty_curve() -> None:
    assert pass_curve([]).points == ()


# -------------------------------------------------------------------- error bars


def test_row_level_standard_error_by_hand() -> None:
    # Rows right 4/4, 2/4, 0/4, 2/4 -> row means 1, .5, 0, .5; mean .5.
    # Deviations .5, 0, -.5, 0 -> sum of squares .5; s^2 = .5 / 3 = 1/6.
    # SE = sqrt((1/6) / 4) = sqrt(1/24) = 0.20412...
    rows = [summary("a", 4, 4), summary("b", 4, 2), summary("c", 4, 0), summary("d", 4, 2)]
    bar = accuracy_error_bar(rows)
    assert bar.estimate == pytest.approx(0.5)
    assert bar.se == pytest.approx(math.sqrt(1 / 24))
    # A row is worth k_eff = mean (1 - mean) / (n SE^2) = .25 / (4 / 24) = 1.5 answers
    # (between 1 and the 4 it has).  Interval: z^2 / (2 k_eff) = 1.28049 pseudo-rows
    # of 1 and of 0 -> centre still .5 over 4 + z^2 / 1.5 = 6.56097 rows; residual
    # squares .5 + 2 * 1.28049 * .25; half-width q * sqrt(that) / 6.56097,
    # q = t_{0.975, 3} = 3.182446305284 (tables).
    q, z = 3.182446305284263, 1.959964
    total = 4 + z * z / 1.5
    half = q * math.sqrt(0.5 + z * z / 3 * 0.5) / total
    assert half == pytest.approx(0.51795, abs=1e-5)
    assert (bar.low, bar.high) == (0.0, 1.0)  # clipped to [0, 1]: 4 rows say little
    assert bar.n == 4 and bar.excluded == 0 and bar.method == "rows"


def test_row_level_se_is_not_the_pooled_bernoulli() -> None:
    # Two rows, 4/4 and 0/4: pooled Bernoulli over 8 answers would give
    # sqrt(.5 * .5 / 8) = 0.177; the row-level SE is sqrt(.5 / 2) = 0.5.
    bar = accuracy_error_bar([summary("a", 4, 4), summary("b", 4, 0)])
    assert bar.se == pytest.approx(0.5)
    assert bar.low == 0.0 and bar.high == 1.0  # t_{0.975, 1} = 12.7: clipped to [0, 1]


def test_rows_without_valid_attempt_are_excluded_and_counted() -> None:
    rows = [summary("a", 3, 3), summary("b", 0, 0), summary("c", 3, 0)]
    bar = accuracy_error_bar(rows)
    assert bar.n == 2 and bar.excluded == 1
    assert bar.estimate == pytest.approx(0.5)


def test_one_row_has_no_interval() -> None:
    bar = accuracy_error_bar([summary("a", 3, 2)])
    assert bar.estimate == pytest.approx(2 / 3)
    assert bar.se is None and bar.low is None and bar.high is None
    assert accuracy_error_bar([]).estimate is None


def test_pass_k_error_bar_uses_per_row_estimates() -> None:
    # k=2: rows (4,4)->1, (4,2)->C(2,2)/C(4,2)=1/6, (1,1)->0 (n < k), (0,0)->0.
    rows = [summary("a", 4, 4), summary("b", 4, 2), summary("c", 1, 1), summary("d", 0, 0)]
    bar = pass_k_error_bar(rows, 2)
    values = [1.0, 1 / 6, 0.0, 0.0]
    mean = sum(values) / 4
    var = sum((v - mean) ** 2 for v in values) / 3
    assert bar.estimate == pytest.approx(mean)
    assert bar.se == pytest.approx(math.sqrt(var / 4))
    assert bar.n == 4 and bar.excluded == 0


def test_clustered_se_by_hand() -> None:
    # Values 1, .5, 0, .5 (mean .5), clusters a, a, b, b.
    # Cluster residual sums: a = .5 + 0 = .5, b = -.5 + 0 = -.5.
    # SE = sqrt(.25 + .25) / 4 = sqrt(.5) / 4 = 0.17678...
    values = [1.0, 0.5, 0.0, 0.5]
    assert clustered_se(values, ["a", "a", "b", "b"]) == pytest.approx(math.sqrt(0.5) / 4)
    # Clusters a, b, a, b: residuals cancel inside each cluster -> 0.
    assert clustered_se(values, ["a", "b", "a", "b"]) == pytest.approx(0.0)
    # One cluster: nothing to estimate from.
    assert clustered_se(values, ["a"] * 4) is None


def test_clustered_equals_unclustered_when_every_row_is_its_own_cluster() -> None:
    # Unclustered: sqrt(s^2 / n), s^2 with n - 1.  CRSE with singletons:
    # sqrt(sum r^2) / n = sqrt((n-1)/n) * sqrt(s^2 / n).  Factor sqrt(n/(n-1)).
    values = [1.0, 0.25, 0.0, 0.5, 0.75, 1.0, 0.0]
    n = len(values)
    plain = mean_error_bar(values)
    clustered = mean_error_bar(values, [f"c{i}" for i in range(n)])
    assert plain.se is not None and clustered.se is not None
    assert clustered.method == "clustered" and clustered.clusters == n
    assert clustered.se * math.sqrt(n / (n - 1)) == pytest.approx(plain.se)
    # Rows missing from the mapping are clusters of their own too.
    partial = mean_error_bar(values, ["c0"] + [None] * (n - 1))
    assert partial.se == pytest.approx(clustered.se)


def test_accuracy_error_bar_with_cluster_mapping() -> None:
    rows = [summary("a", 2, 2), summary("b", 2, 1), summary("c", 2, 0), summary("d", 2, 1)]
    bar = accuracy_error_bar(rows, {"a": "x", "b": "x", "c": "y", "d": "y"})
    assert bar.method == "clustered" and bar.clusters == 2
    assert bar.se == pytest.approx(math.sqrt(0.5) / 4)


# ------------------------------------------------------------- paired comparison


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (0, 5, 0.0625),  # 2 * (1/32)
        (5, 0, 0.0625),
        (1, 9, 0.021484375),  # 2 * (1 + 10) / 1024
        (3, 3, 1.0),  # 2 * P(X <= 3 | n=6) = 2 * 42/64 > 1 -> 1
    ],
)
def test_mcnemar_exact(b: int, c: int, p: float) -> None:
    assert mcnemar_exact_p(b, c) == p


def test_paired_interval_containing_zero_is_within_noise() -> None:
    # Differences +.5, -.5, 0, 0 -> mean 0, interval around 0.
    base = [summary("a", 2, 1), summary("b", 2, 2), summary("c", 2, 2), summary("d", 2, 0)]
    cand = [summary("a", 2, 2), summary("b", 2, 1), summary("c", 2, 2), summary("d", 2, 0)]
    paired = paired_comparison(base, cand)
    assert paired.difference.estimate == pytest.approx(0.0)
    assert paired.verdict == WITHIN_NOISE


def test_paired_better_and_worse() -> None:
    # Differences .5, .5, 1, .5 and four more of 1: mean .8125, s^2 = .0625
    # * 7/8... the SE is Miller's sqrt(s^2 / n); the interval keeps off 0.
    base = [summary(r, 2, 0) for r in "abcdefgh"]
    cand = [summary("a", 2, 1), summary("b", 2, 1), summary("c", 2, 2), summary("d", 2, 1)]
    cand += [summary(r, 2, 2) for r in "efgh"]
    better = paired_comparison(base, cand)
    diffs = [0.5, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0]
    mean = sum(diffs) / 8
    var = sum((d - mean) ** 2 for d in diffs) / 7
    assert better.difference.se == pytest.approx(math.sqrt(var / 8))
    assert better.difference.low is not None and better.difference.low > 0
    assert better.verdict == BETTER
    assert paired_comparison(cand, base).verdict == WORSE


def test_four_rows_all_better_are_not_beyond_noise() -> None:
    # d = .5, .5, 1, .5: Miller's SE .125, but t_{0.975, 3} = 3.18 and the
    # Agresti-Min pseudo-rows leave 0 inside: four rows cannot say "better".
    base = [summary(r, 2, 0) for r in "abcd"]
    cand = [summary("a", 2, 1), summary("b", 2, 1), summary("c", 2, 2), summary("d", 2, 1)]
    paired = paired_comparison(base, cand)
    assert paired.difference.se == pytest.approx(0.125)
    assert paired.verdict == WITHIN_NOISE
    assert paired_comparison(base[:1], cand[:1]).verdict == TOO_FEW_ROWS


def test_paired_mcnemar_counts_stable_correct_status() -> None:
    sc, flip = RowClass.STABLE_CORRECT, RowClass.FLIP
    base = [summary("a", 3, 3, sc), summary("b", 3, 3, sc), summary("c", 3, 1, flip)]
    cand = [summary("a", 3, 3, sc), summary("b", 3, 2, flip), summary("c", 3, 3, sc)]
    paired = paired_comparison(base, cand)
    assert (paired.b, paired.c) == (1, 1)
    assert paired.p_value == 1.0


def test_paired_excludes_rows_without_answers_on_one_side() -> None:
    base = [summary("a", 2, 2), summary("b", 0, 0), summary("c", 2, 0)]
    cand = [summary("a", 2, 2), summary("b", 2, 2), summary("c", 2, 0)]
    paired = paired_comparison(base, cand)
    assert paired.difference.n == 2 and paired.difference.excluded == 1


# --------------------------------------------------------------- check stability


def test_check_flip_rate_and_rows_whose_decision_held() -> None:
    rows = [record("a"), record("b"), record("c"), record("d")]
    by_row = {
        # window flips, decision holds
        "a": attempts("a", [("deny", {"window": "ok"}), ("deny", {"window": "expired"})]),
        # window flips, decision flips too
        "b": attempts("b", [("deny", {"window": "ok"}), ("approve", {"window": "late"})]),
        # steady window; proof reported once only (not eligible)
        "c": attempts(
            "c", [("deny", {"window": "ok", "proof": "yes"}), ("deny", {"window": "ok"})]
        ),
        # an error attempt has no checks; one valid report is not eligible
        "d": attempts("d", [("deny", {"window": "ok"}), None]),
    }
    stats = {c.name: c for c in check_stability(rows, by_row, EXACT)}
    assert list(stats) == ["window", "proof"]
    window = stats["window"]
    assert (window.eligible, window.flipped) == (3, 2)
    assert window.flip_rate == pytest.approx(2 / 3)
    assert window.held_rows == ("a",)
    assert stats["proof"].eligible == 0 and stats["proof"].flip_rate is None


def test_check_stability_ignores_confirmation_attempts() -> None:
    rows = [record("a")]
    main = attempts("a", [("deny", {"w": "ok"}), ("deny", {"w": "ok"})])
    confirm = attempts("a", [("deny", {"w": "bad"})], start=3, phase=Phase.CONFIRM)
    (window,) = check_stability(rows, {"a": main + confirm}, EXACT)
    assert window.flipped == 0
    (window,) = check_stability(rows, {"a": main + confirm}, EXACT, phases=None)
    assert window.flipped == 1


# ------------------------------------------------------------------------- power


def test_smallest_detected_drop_by_hand() -> None:
    """10 rows at 50%, 4 answers a side, rows alike (between 0), a row worth 1 answer pair.

    At a per-row drop delta: Var = .25 / 4 + c (1 - c) / 4 with c = .5 - delta;
    shrink = 10 / 12; centre = delta * shrink; half-width = t_9 sqrt(9 Var + 1 +
    2 centre^2) / 12; chance = Phi((centre - half) / (shrink sqrt(Var / 10))).
    """
    rows = RowNoise((0.5,) * 10, (4,) * 10, (4,) * 10)
    drop = smallest_detected_drop(rows, 0.0, 1.0)
    assert drop is not None

    def chance(delta: float) -> float:
        c = 0.5 - delta
        var = 0.25 / 4 + c * (1 - c) / 4
        centre = delta * 10 / 12
        half = t_975(9) * math.sqrt(9 * var + 1 + 2 * centre**2) / 12
        return 0.5 * math.erfc(-(centre - half) / (10 / 12 * math.sqrt(var / 10)) / math.sqrt(2))

    assert chance(drop) == pytest.approx(0.8, abs=1e-9)
    assert 0.35 < drop < 0.45  # 10 rows of coin flips: only a near-collapse shows
    assert smallest_detected_drop(rows, 0.0, 1.0, copies=10) < drop / 2


def test_power_is_never_zero_when_every_answer_agrees() -> None:
    """Issue 20: 29% of 20-row comparisons printed "0.0 pts" (all rows agreeing: var(d) = 0)."""
    rows = [summary(r, 3, 3) for r in "abcdefghijklmnopqrst"]
    power = paired_power(rows, rows)
    assert power.variance == 0.0 and power.mde is not None and power.mde > 0.05
    assert power.mde_k_infinite is None  # the rows do not differ: no floor from them
    assert power.mde_more_rows is not None and power.mde_more_rows < power.mde


def test_power_designs_and_what_ifs() -> None:
    base = [summary(r, 4, c) for r, c in zip("abcdefgh", (4, 4, 3, 4, 2, 4, 4, 1), strict=True)]
    cand = [summary(r, 4, c) for r, c in zip("abcdefgh", (4, 3, 4, 4, 1, 4, 2, 2), strict=True)]
    paired = paired_power(base, cand)
    assert paired.design == "paired" and paired.rows == 8 and paired.k == 4
    assert paired.mde is not None and paired.mde_more_rows is not None
    assert paired.mde_more_k is not None
    assert paired.mde_more_rows < paired.mde and paired.mde_more_k < paired.mde
    # Within-row noise by hand: sum over rows of both sides' p(1 - p) / 3, averaged.
    noise = [
        (b / 4 * (1 - b / 4) + c / 4 * (1 - c / 4)) / 3
        for b, c in zip((4, 4, 3, 4, 2, 4, 4, 1), (4, 3, 4, 4, 1, 4, 2, 2), strict=True)
    ]
    assert paired.within == pytest.approx(min(sum(noise) / 8, paired.variance or 0))
    projected = power_analysis(base)
    assert projected.design == "projected" and projected.between == 0.0
    assert projected.mde_k_infinite is None


def test_power_advises_raising_k_when_noise_dominates() -> None:
    # Every row right half the time: all variance is within rows.
    rows = [summary(r, 2, 1) for r in "abcd"] + [summary("e", 2, 2), summary("f", 2, 0)]
    cand = [summary(r, 2, 1) for r in "abcd"] + [summary("e", 2, 1), summary("f", 2, 1)]
    power = paired_power(rows, cand)
    assert power.within_share is not None and power.within_share > 0.5
    assert power.advice is not None and power.advice.startswith("raise k")


def test_power_without_rows() -> None:
    power = power_analysis([summary("a", 2, 2)])
    assert power.mde is None and power.advice is None
    assert paired_power([summary("a", 2, 2)], [summary("a", 2, 1)]).mde is None


# ---------------------------------------------------------------------- analyze


def make_result() -> CompareResult:
    rows = [record("a"), record("b"), record("c"), record("d")]
    base = run_of(
        rows,
        attempts("a", ["deny"] * 3)
        + attempts("b", ["deny"] * 3)
        + attempts("c", ["deny", "approve", "deny"])
        + attempts("d", ["approve"] * 3),
        version=Version.BASELINE,
    )
    cand = run_of(
        rows,
        attempts("a", ["deny"] * 3)
        + attempts("b", ["deny", "approve", "deny"])
        + attempts("b", ["approve"] * 2, start=4, phase=Phase.CONFIRM)
        + attempts("c", ["deny"] * 3)
        + attempts("d", [("approve", {"w": "x"}), ("approve", {"w": "y"}), None]),
    )
    policy = GatePolicy()
    comparison, gate = evaluate(rows, base, cand, ratchet=frozenset(), policy=policy)
    return CompareResult(tuple(rows), base, cand, frozenset(), policy, comparison, gate)


def test_analyze_bundles_both_versions() -> None:
    analysis = analyze(make_result())
    assert analysis.k == 3
    # Baseline row accuracies 1, 1, 2/3, 0; candidate 1, 2/3, 1, 0 (main only).
    assert analysis.baseline.accuracy.estimate == pytest.approx((1 + 1 + 2 / 3) / 4)
    assert analysis.candidate.accuracy.estimate == pytest.approx((1 + 2 / 3 + 1) / 4)
    assert analysis.baseline.pass_k.estimate == pytest.approx(0.5)
    assert analysis.paired.difference.estimate == pytest.approx(0.0)
    assert (analysis.paired.b, analysis.paired.c) == (1, 1)
    assert analysis.paired.verdict == WITHIN_NOISE
    assert [c.name for c in analysis.candidate.checks] == ["w"]
    assert analysis.candidate.checks[0].held_rows == ("d",)
    assert len(analysis.candidate.curve.points) == 3
    # Row d: 2 valid answers and 1 error are 3 attempts (the error never right), not short.
    assert analysis.candidate.curve.points[2].short_rows == 0


def test_analysis_json_is_plain_json() -> None:
    analysis = analyze(make_result(), {"a": "g1", "b": "g1", "c": "g2", "d": "g2"})
    doc = analysis.to_json()
    text = json.dumps(doc, allow_nan=False)
    back = json.loads(text)
    assert back["baseline"]["mean_accuracy"]["method"] == "clustered"
    assert back["paired"]["verdict"] == WITHIN_NOISE
    assert back["power"]["alpha"] == 0.05
    assert set(back) == {"k", "baseline", "candidate", "paired", "power"}


# ------------------------------------------------------------ interval details


@pytest.mark.parametrize(
    ("df", "t"),
    # Student's t_{0.975, df}, from printed tables (e.g. NIST/SEMATECH 1.3.6.7.2).
    [(1, 12.706204736), (2, 4.302652730), (3, 3.182446305), (9, 2.262157163), (30, 2.042272456)],
)
def test_t_quantile_matches_tables(df: int, t: float) -> None:
    assert t_975(df) == pytest.approx(t, abs=1e-8)
    assert student_t_cdf(t, df) == pytest.approx(0.975, abs=1e-10)
    assert student_t_cdf(-t, df) == pytest.approx(0.025, abs=1e-10)


def test_t_quantile_against_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 4, 7, 19, 64, 199, 999, 99_999):
        assert t_975(df) == pytest.approx(float(stats.t.ppf(0.975, df)), abs=1e-9)
    for x, a, b in ((0.3, 2.0, 5.0), (0.9, 0.5, 0.5), (0.01, 40.0, 0.5), (0.999, 3.0, 200.0)):
        assert regularized_beta(x, a, b) == pytest.approx(float(stats.beta.cdf(x, a, b)), abs=1e-12)


def _binomial_tail(x: Fraction, a: int, b: int) -> float:
    """I_x(a, b) for whole a, b: P(Binomial(a + b - 1, x) >= a), summed exactly."""
    n = a + b - 1
    return float(sum(math.comb(n, j) * x**j * (1 - x) ** (n - j) for j in range(a, n + 1)))


@pytest.mark.parametrize(
    ("x", "a", "b"),
    [
        # Just past the switch point (a + 1) / (a + b + 2) = 3/54 = 0.0556, where the
        # reflected fraction converges fast and the direct one drifts by 4e-14.
        (Fraction(65, 1000), 2, 50),
        (Fraction(7, 100), 2, 50),
        (Fraction(3, 10), 5, 5),
        (Fraction(1, 2), 3, 7),
        (Fraction(9, 10), 20, 3),
        (Fraction(1, 100), 1, 30),
    ],
)
def test_regularized_beta_against_the_exact_binomial_tail(x: Fraction, a: int, b: int) -> None:
    assert regularized_beta(float(x), a, b) == pytest.approx(_binomial_tail(x, a, b), abs=2e-14)


def test_share_interval_with_one_answer_per_row_is_agresti_coull() -> None:
    # 7 of 10 rows right (0/1 values): p~ = (7 + z^2/2) / (10 + z^2) and
    # SE = sqrt(p~ (1 - p~) / (10 + z^2)), with t_{0.975, 9} as the multiplier.
    z, q = 1.959964, 2.262157162798205
    total = 10 + z * z
    centre = (7 + z * z / 2) / total
    half = q * math.sqrt(centre * (1 - centre) / total)
    low, high = share_interval([1.0] * 7 + [0.0] * 3) or (None, None)
    assert low == pytest.approx(centre - half) and high == pytest.approx(centre + half)


def test_difference_interval_with_binary_pairs_is_agresti_min() -> None:
    # 20 pairs: 6 right only on the candidate (+1), 2 only on the baseline (-1),
    # 12 concordant (0).  Agresti-Min: add 1/2 to each cell, n~ = 22;
    # p12 = 2.5/22, p21 = 6.5/22, diff~ = 4/22, SE^2 = (p12 + p21 - diff~^2) / 22.
    values = [1.0] * 6 + [-1.0] * 2 + [0.0] * 12
    p12, p21 = 2.5 / 22, 6.5 / 22
    diff = p21 - p12
    half = t_975(19) * math.sqrt((p12 + p21 - diff * diff) / 22)
    low, high = difference_interval(values) or (None, None)
    assert low == pytest.approx(diff - half) and high == pytest.approx(diff + half)


@pytest.mark.parametrize("n", [2, 10, 65, 1000])
def test_intervals_never_have_zero_width_and_hold_the_plain_mean(n: int) -> None:
    for value in (0.0, 1.0, 0.5, 2 / 3):
        bounds = share_interval([value] * n)
        assert bounds is not None and bounds[0] < bounds[1]
        assert bounds[0] <= value <= bounds[1]
    for value in (0.0, 1.0, -1.0):
        bounds = difference_interval([value] * n)
        assert bounds is not None and bounds[0] < bounds[1]
        assert bounds[0] <= value <= bounds[1]
    # Every row right: 10 rows leave 65.1%-100%, as the docstring says.
    assert round((share_interval([1.0] * 10) or (0.0, 0.0))[0], 3) == 0.651


def test_clustered_interval_uses_clusters_for_df_and_spread() -> None:
    # Four clusters of two identical rows behave like four rows (t with 3 df),
    # not like eight independent ones.
    values = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5]
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d"]
    clustered = mean_error_bar(values, clusters)
    plain = mean_error_bar(values)
    assert clustered.method == "clustered" and clustered.clusters == 4
    assert clustered.low is not None and plain.low is not None
    assert clustered.high is not None and plain.high is not None
    assert clustered.high - clustered.low > plain.high - plain.low
    # By hand: centre (5 + z^2/2) / (8 + z^2); cluster residual sums squared
    # plus the pseudo-rows'; multiplier t_{0.975, 3}.
    z = 1.959964
    total = 8 + z * z
    centre = (5 + z * z / 2) / total
    sums = [2 * (1 - centre), -2 * centre, 2 * (1 - centre), 2 * (0.5 - centre)]
    spread = sum(s * s for s in sums) + z * z / 2 * ((1 - centre) ** 2 + centre**2)
    half = t_975(3) * math.sqrt(spread) / total
    assert clustered.low == pytest.approx(centre - half)
    assert clustered.high == pytest.approx(min(1.0, centre + half))


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (0.049, "0.049"),
        (0.0504, "0.0504"),
        (0.04996, "0.04996"),
        (0.050001, "0.050001"),
        (0.0499999, "0.0499999"),
        (0.05, "0.05"),
        (0.021484375, "0.021"),
        (0.0625, "0.062"),
        (0.38, "0.38"),
        (1.0, "1"),
        (0.001, "0.001"),
        (0.000999, "< 0.001"),
        (0.0, "< 0.001"),
    ],
)
def test_p_values_never_round_across_five_percent(p: float, text: str) -> None:
    assert p_value_text(p) == text
    if text[0].isdigit() and p != 0.05:
        assert (float(text) < 0.05) == (p < 0.05) and float(text) != 0.05


def test_p_value_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError):
        p_value_text(1.5)


# ------------------------------------------------- issue 20: pseudo-answers sized by k


def test_answers_per_row_worth_by_hand() -> None:
    # Rows 1, .5, 0, .5 of 4 answers: mean .5, SE^2 = (1/6) / 4 = 1/24;
    # k_eff = .25 / (4 / 24) = 1.5, within [1, 4].
    values = [1.0, 0.5, 0.0, 0.5]
    assert answers_per_row_worth(values, None, 0.25, 4) == pytest.approx(1.5)
    assert answers_per_row_worth(values, None, 0.25, 1.2) == pytest.approx(1.2)  # at most k
    assert answers_per_row_worth(values, None, 0.01, 4) == 1.0  # at least one answer
    assert answers_per_row_worth([1.0] * 5, None, 0.25, 4) == 1.0  # no spread: one answer
    assert answers_per_row_worth([2 / 3] * 200, None, 0.2, 3) == 1.0  # rounding is not spread
    assert answers_per_row_worth(values, None, None, 4) == 1.0


def test_near_equal_rows_are_worth_their_answers() -> None:
    """1,000 rows at 99%, k = 8: whole-row pseudo-answers moved the centre 1.3 SE (issue 20)."""
    rng = random.Random(5)
    values = [sum(rng.random() < 0.99 for _ in range(8)) / 8 for _ in range(1000)]
    mean = sum(values) / len(values)
    worth = answers_per_row_worth(values, None, mean * (1 - mean), 8)
    assert 6 < worth <= 8  # answers within a row vary independently here
    low, high = share_interval(values, answers=8) or (0.0, 0.0)
    old_low, old_high = share_interval(values) or (0.0, 0.0)
    assert abs((low + high) / 2 - mean) < abs((old_low + old_high) / 2 - mean) / 4


def test_difference_interval_with_pseudo_pairs_sized_by_hand() -> None:
    diffs = [0.0, -0.25, 0.25, 0.0, -0.5]
    # Answer-pair variance .3 over n SE^2: s^2 = .325 / 4, SE^2 = .01625 -> k_eff = .3 / .08125.
    worth = 0.3 / 0.08125
    low, high = difference_interval(diffs, answers=4, answer_variance=0.3) or (0.0, 0.0)
    weights = ((1.0, 0.5 / worth), (-1.0, 0.5 / worth), (0.0, 1.0 / worth))
    total = 5 + 2 / worth
    centre = (sum(diffs)) / total
    spread = sum((d - centre) ** 2 for d in diffs) + sum(w * (v - centre) ** 2 for v, w in weights)
    half = t_975(4) * math.sqrt(spread) / total
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))
