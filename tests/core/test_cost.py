"""Cost and latency statistics against independent computations, and the gate's spend limits."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from passk_action.core.cost import (
    Price,
    Pricing,
    SpendComparison,
    compare_spend,
    paired_change,
    percentile,
    priced_run,
    priced_usage,
    ratio_change,
    summarize_spend,
)
from passk_action.core.gate import GatePolicy, Rule, decide
from passk_action.core.model import Attempt, Phase, Run, Usage, Version
from passk_action.core.result import evaluate
from passk_action.core.sequential import STRICT, RuleSettings
from passk_action.core.student_t import student_t_cdf, student_t_quantile, t_975
from passk_action.report.spend import cost_line, money, seconds, spend_lines
from support.runs import attempts, record, run_of
from support.spend import RIGHT, _gate, spent
from support.words import said, warned

# --------------------------------------------------------------- percentiles


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([3.0], 0.95, 3.0),
        ([1.0, 2.0], 0.5, 1.5),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
        # h = 19 * 0.95 = 18.05: x19 + 0.05 * (x20 - x19) = 19.05
        ([float(i) for i in range(1, 21)], 0.95, 19.05),
        ([10.0, 0.0, 5.0], 0.0, 0.0),
        ([10.0, 0.0, 5.0], 1.0, 10.0),
        ([], 0.5, None),
    ],
)
def test_percentile_by_hand(values: list[float], q: float, expected: float | None) -> None:
    got = percentile(values, q)
    assert got == (None if expected is None else pytest.approx(expected))


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=2, max_size=60))
def test_percentile_matches_statistics_quantiles_inclusive(values: list[float]) -> None:
    """Type 7 is ``statistics.quantiles(method='inclusive')`` at the cut points i / n."""
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    assert percentile(values, 0.95) == pytest.approx(cuts[18], rel=1e-9, abs=1e-9)
    assert percentile(values, 0.5) == pytest.approx(statistics.median(values), rel=1e-9, abs=1e-9)


def test_percentile_refuses_a_q_outside_0_1() -> None:
    with pytest.raises(ValueError) as raised:
        percentile([1.0], 1.5)
    assert str(raised.value) == "q must be within [0, 1], got 1.5"
    with pytest.raises(ValueError) as raised:
        percentile([1.0], -0.1)
    assert str(raised.value) == "q must be within [0, 1], got -0.1"


@pytest.mark.parametrize(
    ("values", "p50", "p95"),
    [
        # n = 2: h = 0.5 and 0.95 between 2 and 4
        ([4.0, 2.0], 3.0, 3.9),
        # n = 3: h = 1 -> x2 = 5; h = 1.9 -> 5 + 0.9 * (11 - 5) = 10.4
        ([11.0, 1.0, 5.0], 5.0, 10.4),
        # n = 5: h = 2 -> 3; h = 3.8 -> 4 + 0.8 * (100 - 4) = 80.8 (one slow attempt)
        ([1.0, 2.0, 3.0, 4.0, 100.0], 3.0, 80.8),
        # n = 6 with ties: h = 2.5 -> 1 + 0.5 * (2 - 1) = 1.5; h = 4.75 -> 2 + 0.75 * 7 = 7.25
        ([2.0, 1.0, 1.0, 1.0, 9.0, 2.0], 1.5, 7.25),
    ],
)
def test_p50_and_p95_of_small_samples_by_hand(values: list[float], p50: float, p95: float) -> None:
    assert percentile(values, 0.5) == pytest.approx(p50, rel=1e-12)
    assert percentile(values, 0.95) == pytest.approx(p95, rel=1e-12)


# ----------------------------------------------------------- paired intervals

# t_{0.975, df} from the printed tables (e.g. NIST/SEMATECH 1.3.6.7.2), 3 decimals.
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 7: 2.365, 9: 2.262,
           10: 2.228, 15: 2.131, 20: 2.086, 29: 2.045, 30: 2.042, 60: 2.000, 100: 1.984,
           1000: 1.962}  # fmt: skip


@pytest.mark.parametrize(("df", "value"), sorted(T_TABLE.items()))
def test_t_quantile_matches_the_tables(df: int, value: float) -> None:
    assert round(t_975(df), 3) == value


# t_{0.975, df} to 1e-15 (scipy.stats.t.ppf(0.975, df), scipy 1.17).
T_EXACT = {7: 2.364624251592784, 8: 2.306004135204166, 9: 2.262157162798205,
           10: 2.228138851986274, 12: 2.1788128296672284, 15: 2.131449545559776,
           20: 2.085963447265864, 25: 2.0595385527532972, 30: 2.0422724563012378,
           40: 2.021075390306273, 50: 2.008559112100761, 60: 2.0002978220142604,
           80: 1.990063421254446, 100: 1.9839715185235518, 150: 1.9759053308966201,
           200: 1.9718962236339088, 300: 1.9679030112610865, 500: 1.9647198374673676,
           1000: 1.9623390808264083}  # fmt: skip


@pytest.mark.parametrize(("df", "exact"), sorted(T_EXACT.items()))
def test_t_quantile_is_exact_against_scipy(df: int, exact: float) -> None:
    """The shared quantile (bisection on the incomplete beta) is exact to 1e-11 at every df."""
    assert t_975(df) == pytest.approx(exact, abs=1e-11)
    assert student_t_cdf(exact, df) == pytest.approx(0.975, abs=1e-13)


# t_{0.975, df} for df = 1..6 to 1e-15 (scipy.stats.t.ppf(0.975, df), scipy 1.17), where
# a 1/df expansion is far off and the printed tables give six decimals.
T_SMALL = {1: 12.706204736174694, 2: 4.302652729749462, 3: 3.1824463052837078,
           4: 2.7764451051977934, 5: 2.5705818356363146, 6: 2.4469118511449786}  # fmt: skip


@pytest.mark.parametrize(("df", "exact"), sorted(T_SMALL.items()))
def test_t_quantile_is_exact_for_few_degrees_of_freedom(df: int, exact: float) -> None:
    assert t_975(df) == pytest.approx(exact, rel=1e-12)


# Other p and df, fractional df too (scipy.stats.t.ppf, scipy 1.17): the bisection's
# doubling bracket reaches 70.7 and 164.6, and p = 0.5 is the centre.
T_OTHER = [(0.5, 3.0, 0.0), (0.9, 1.0, 3.0776835371752544), (0.95, 10.0, 1.8124611228116756),
           (0.995, 5.0, 4.032142983555228), (0.9999, 2.0, 70.70007107496818),
           (0.975, 0.5, 164.55767348048818)]  # fmt: skip


@pytest.mark.parametrize(("p", "df", "exact"), T_OTHER)
def test_t_quantile_at_other_probabilities(p: float, df: float, exact: float) -> None:
    assert student_t_quantile(p, df) == pytest.approx(exact, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("p", [0.4999, 1.0, 1.5, -0.975])
def test_t_quantile_refuses_a_p_outside_its_half(p: float) -> None:
    with pytest.raises(ValueError) as raised:
        student_t_quantile(p, 3.0)
    assert str(raised.value) == "p must be in [0.5, 1)"


def test_t_quantile_domain() -> None:
    with pytest.raises(ValueError) as raised:
        t_975(0)
    assert str(raised.value) == "degrees of freedom must be >= 1, got 0"


def test_t_quantile_falls_towards_z() -> None:
    values = [t_975(df) for df in range(1, 400)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert t_975(10**6) == pytest.approx(1.959966, abs=1e-6)


def test_paired_interval_by_hand() -> None:
    # differences 1, 2, 3, 4: mean 2.5, s = sqrt(5/3), SE = s / 2, t_{0.975,3} = 3.182446
    pairs = [(0.0, 1.0), (10.0, 12.0), (5.0, 8.0), (1.0, 5.0)]
    change = paired_change(pairs)
    half = 3.182446 * math.sqrt(5 / 3) / 2
    assert change.rows == 4
    assert change.estimate == pytest.approx(2.5)
    assert change.low == pytest.approx(2.5 - half)
    assert change.high == pytest.approx(2.5 + half)


def test_paired_interval_matches_statistics_module() -> None:
    """The same interval from statistics.mean/stdev on the differences."""
    rng = random.Random(7)
    pairs = [(b, b * 1.3 + rng.gauss(0, 0.2)) for b in (rng.uniform(1, 5) for _ in range(40))]
    diffs = [c - b for b, c in pairs]
    half = t_975(39) * statistics.stdev(diffs) / math.sqrt(40)
    change = paired_change(pairs)
    assert change.estimate == pytest.approx(statistics.mean(diffs))
    assert (change.low, change.high) == pytest.approx(
        (statistics.mean(diffs) - half, statistics.mean(diffs) + half)
    )
    # Pairing removes the spread between rows: narrower than two independent samples.
    unpaired = t_975(78) * math.sqrt(
        statistics.variance([b for b, _ in pairs]) / 40
        + statistics.variance([c for _, c in pairs]) / 40
    )
    assert change.high - change.estimate < unpaired  # type: ignore[operator]


def test_paired_interval_of_eight_rows_against_scipy_t() -> None:
    # differences 0.1, 0.3, -0.2, 0.4, 0.0, 0.2, 0.5, 0.1: mean 0.175, sum of squares
    # about the mean 0.355, s = sqrt(0.355 / 7); t_{0.975, 7} = 2.364624251592784 (scipy)
    base = [1.0, 2.0, 1.5, 3.0, 2.5, 1.0, 4.0, 2.0]
    diffs = [0.1, 0.3, -0.2, 0.4, 0.0, 0.2, 0.5, 0.1]
    change = paired_change([(b, b + d) for b, d in zip(base, diffs, strict=True)])
    half = 2.364624251592784 * math.sqrt(0.355 / 7) / math.sqrt(8)
    assert change.rows == 8
    assert change.estimate == pytest.approx(0.175, rel=1e-12)
    # scipy's ttest_1samp interval: (-0.013270511460019, 0.363270511460019); the
    # expansion's t is within 5e-5 of scipy's at df 7, so the ends within 5e-5 x SE
    assert 0.175 - half == pytest.approx(-0.013270511460019, abs=1e-15)
    assert change.low == pytest.approx(0.175 - half, abs=5e-5 * half / 2.3646)
    assert change.high == pytest.approx(0.175 + half, abs=5e-5 * half / 2.3646)
    assert change.to_json() == {
        "estimate": change.estimate,
        "low": change.low,
        "high": change.high,
        "rows": 8,
    }


def test_paired_interval_edge_cases() -> None:
    assert paired_change([]) == paired_change([])
    assert paired_change([]).estimate is None
    one = paired_change([(1.0, 3.0)])
    assert (one.estimate, one.low, one.high, one.rows) == (2.0, None, None, 1)
    same = paired_change([(1.0, 2.0), (3.0, 4.0)])
    assert (same.low, same.high) == (1.0, 1.0)


# --------------------------------------------------------------- spend of runs


def test_summarize_spend_by_hand() -> None:
    rows = [record("a"), record("b")]
    run = run_of(
        rows,
        spent("a", ["deny", "deny", None], 0.002, 1.0)
        + spent("b", ["deny", "deny", "deny"], 0.001, 3.0)
        + [Attempt("b", 4, Phase.CONFIRM, "deny", duration_s=50.0, usage=Usage(cost_usd=0.5))],
    )
    spend = summarize_spend(run)
    assert (spend.attempts, spend.decisions, spend.errors) == (6, 5, 1)
    assert spend.error_rate == pytest.approx(1 / 6)
    # main durations 1,1,1,3,3,3: p50 = 2, p95: h = 4.75 -> 3
    assert (spend.latency_p50, spend.latency_p95) == (2.0, 3.0)
    assert spend.cost_per_decision == pytest.approx((2 * 0.002 + 3 * 0.001) / 5)
    assert spend.tokens_per_decision == pytest.approx(110)
    assert spend.total_cost == pytest.approx(2 * 0.002 + 3 * 0.001 + 0.5)  # confirmation too
    assert (spend.cost_attempts, spend.cost_decisions, spend.token_attempts) == (5, 5, 5)


def test_a_run_without_usage_has_latency_and_no_cost() -> None:
    run = run_of([record("a")], attempts("a", ["deny", "deny", "deny"]))
    spend = summarize_spend(run)
    assert spend.cost_per_decision is None and spend.tokens_per_decision is None
    assert spend.total_cost is None and not spend.reports_usage


def test_compare_spend_pairs_rows() -> None:
    rows = [record("a"), record("b"), record("c")]
    base = run_of(
        rows,
        spent("a", ["deny"] * 3, 0.001, 1.0)
        + spent("b", ["deny"] * 3, 0.002, 2.0)
        + spent("c", ["deny"] * 3, 0.004, 1.0),
        version=Version.BASELINE,
    )
    cand = run_of(
        rows,
        spent("a", ["deny"] * 3, 0.0015, 1.5)
        + spent("b", ["deny"] * 3, 0.0025, 2.0)
        + spent("c", ["deny"] * 3, 0.006, 2.0),
    )
    spend = compare_spend(base, cand)
    assert spend.cost.rows == 3
    assert spend.cost.estimate == pytest.approx((0.0005 + 0.0005 + 0.002) / 3)
    assert spend.latency.estimate == pytest.approx((0.5 + 0 + 1.0) / 3)
    assert spend.cost_increase == pytest.approx(0.01 / 0.007 - 1)


# ---------------------------------------------------------------- gate limits


def test_a_candidate_within_the_reliability_gate_fails_max_cost_increase() -> None:
    policy = GatePolicy(max_cost_increase=0.25)
    comparison, gate = _gate(0.001, 0.0013, policy)
    assert comparison.candidate_metrics.pass_k == 1.0 and not comparison.lost
    assert not gate.passed
    assert [(f.rule, f.id) for f in gate.failures] == [(Rule.COST, None)]
    assert said(gate.failures[0]) == (
        "cost per decision +30% ($0.001 -> $0.0013), at least +30% with 95% confidence, "
        "over gate.max_cost_increase +25%"
    )
    _, at_limit = _gate(0.001, 0.00125, policy)
    assert at_limit.passed  # exactly +25% is within the limit
    _, off = _gate(0.001, 0.005, GatePolicy())
    assert off.passed  # off by default


def test_a_cost_failure_never_hides_a_must_not_break_failure() -> None:
    _, gate = _gate(0.001, 0.002, GatePolicy(max_cost_increase=0.25), mnb_broken=True)
    assert [f.rule for f in gate.failures] == [Rule.MUST_NOT_BREAK, Rule.COST]
    _, cheap = _gate(0.002, 0.001, GatePolicy(max_cost_increase=0.25), mnb_broken=True)
    assert [f.rule for f in cheap.failures] == [Rule.MUST_NOT_BREAK]  # cheaper never saves it


def test_a_candidate_that_stops_reporting_cost_fails_the_cost_limit() -> None:
    _, gate = _gate(0.001, None, GatePolicy(max_cost_increase=0.25))
    assert [f.rule for f in gate.failures] == [Rule.COST]
    assert said(gate.failures[0]) == (
        "75 of 75 candidate decisions report no cost, so gate.max_cost_increase cannot be "
        "checked (report usage with every answer)"
    )


def test_a_baseline_without_cost_leaves_the_limit_unchecked_with_a_warning() -> None:
    _, gate = _gate(0.0, 0.002, GatePolicy(max_cost_increase=0.25))
    assert gate.passed
    assert warned(gate)[0].startswith("gate.max_cost_increase was not checked")


def test_max_latency_p95_increase() -> None:
    policy = GatePolicy(max_latency_p95_increase=0.5)
    _, slow = _gate(0.001, 0.001, policy, base_s=1.0, cand_s=1.6)
    assert [f.rule for f in slow.failures] == [Rule.LATENCY]
    assert said(slow.failures[0]) == (
        "p95 latency per attempt +60% (1 s -> 1.6 s), beyond noise (quantile test p < 0.001), "
        "over gate.max_latency_p95_increase +50%"
    )
    _, ok = _gate(0.001, 0.001, policy, base_s=1.0, cand_s=1.4)
    assert ok.passed
    both = GatePolicy(max_cost_increase=0.1, max_latency_p95_increase=0.5)
    _, two = _gate(0.001, 0.002, both, base_s=1.0, cand_s=2.0, mnb_broken=True)
    assert [f.rule for f in two.failures] == [Rule.MUST_NOT_BREAK, Rule.COST, Rule.LATENCY]


def test_decisions_without_a_cost_do_not_pass_for_free_ones() -> None:
    rows = [record("a")]
    some = [*spent("a", ["deny"], 0.003, 1.0), *attempts("a", ["deny", "deny"], start=2)]
    spend = summarize_spend(run_of(rows, some))
    assert spend.cost_per_decision == pytest.approx(0.003)  # the mean over the one, not 0.001
    assert (spend.cost_decisions, spend.decisions) == (1, 3)
    assert spend.tokens_per_decision == pytest.approx(110)


def test_error_attempts_that_report_usage_count_in_the_per_decision_figures() -> None:
    """An attempt that errored after spending was paid for: its cost and tokens count."""
    rows = [record("a"), record("b")]
    error = Attempt("a", 2, Phase.MAIN, None, error="timeout", usage=Usage(50, 0, 0.001))
    run = run_of(
        rows,
        [
            Attempt("a", 1, Phase.MAIN, "deny", usage=Usage(100, 10, 0.002)),
            error,
            Attempt("a", 3, Phase.MAIN, "deny", usage=Usage(100, 10, 0.002)),
            *spent("b", RIGHT, 0.004, 1.0, tokens=200),
        ],
    )
    spend = summarize_spend(run)
    assert (spend.decisions, spend.cost_decisions) == (5, 5)
    # (0.002 + 0.001 + 0.002 + 3 x 0.004) / 5 decisions
    assert spend.cost_per_decision == pytest.approx(0.017 / 5, rel=1e-12)
    # (110 + 50 + 110 + 3 x 210) / 5
    assert spend.tokens_per_decision == pytest.approx(900 / 5, rel=1e-12)
    assert (spend.cost_attempts, spend.token_attempts) == (6, 6)


def test_spend_json_names_every_figure() -> None:
    rows = [record("a")]
    run = run_of(rows, [*spent("a", ["deny", "deny", None], 0.5, 2.0)])
    assert summarize_spend(run).to_json() == {
        "attempts": 3,
        "decisions": 2,
        "error_rate": 1 / 3,
        "latency_p50_s": 2.0,
        "latency_p95_s": 2.0,
        "tokens_per_decision": 110.0,
        "cost_per_decision_usd": 0.5,
        "total_cost_usd": 1.0,
        "decisions_with_cost": 2,
        "priced": False,
    }


def test_the_latency_change_pairs_each_rows_mean_duration() -> None:
    rows = [record("a"), record("b")]
    base = run_of(
        rows,
        [*spent("a", RIGHT, None, 1.0), *spent("b", RIGHT, None, 4.0)],
        version=Version.BASELINE,
    )
    cand = run_of(rows, [*spent("a", RIGHT, None, 1.5), *spent("b", RIGHT, None, 5.5)])
    spend = compare_spend(base, cand)
    # differences 0.5 and 1.5: mean 1, s = sqrt(0.5), t_{0.975, 1} = 12.706205
    half = 12.706205 * math.sqrt(0.5) / math.sqrt(2)
    assert spend.latency.to_json() == {
        "estimate": 1.0,
        "low": pytest.approx(1 - half),
        "high": pytest.approx(1 + half),
        "rows": 2,
    }
    assert spend.cost == paired_change([])  # no row reports a cost
    assert spend.latency_p95_increase == pytest.approx(5.5 / 4.0 - 1)


# ------------------------------------------------------------------- pricing

MINI = Price(input_per_mtok=0.15, output_per_mtok=0.6)
FOUR_O = Price(input_per_mtok=2.5, output_per_mtok=10.0)
ANY = Price(input_per_mtok=1.0, output_per_mtok=2.0)


def test_a_price_charges_each_side_at_its_own_rate() -> None:
    assert FOUR_O.cost(1_000, 200) == pytest.approx((2_500 + 2_000) / 1e6, rel=1e-12)
    assert FOUR_O.cost(None, 200) == pytest.approx(2_000 / 1e6, rel=1e-12)
    assert FOUR_O.cost(1_000, None) == pytest.approx(2_500 / 1e6, rel=1e-12)
    assert FOUR_O.cost(None, None) == 0.0


@pytest.mark.parametrize("order", [1, -1])
def test_a_model_takes_the_price_of_the_longest_name_it_starts_with(order: int) -> None:
    pricing = Pricing(default=ANY, models=(("gpt-4o", FOUR_O), ("gpt-4o-mini", MINI))[::order])
    assert pricing.price_for("gpt-4o-mini-2024-07-18") is MINI
    assert pricing.price_for("gpt-4o-mini") is MINI
    assert pricing.price_for("gpt-4o-2024-08-06") is FOUR_O
    assert pricing.price_for("claude-3-5-sonnet") is ANY
    assert pricing.price_for(None) is ANY
    assert Pricing(models=(("gpt-4o", FOUR_O),)).price_for("o1") is None
    assert Pricing(models=(("gpt-4o", FOUR_O),)).price_for(None) is None


def test_pricing_is_set_by_a_default_or_by_models_alone() -> None:
    assert not Pricing()
    assert Pricing(default=ANY)
    assert Pricing(models=(("gpt-4o", FOUR_O),))


def test_priced_usage_keeps_a_reported_cost_and_reprices_its_own() -> None:
    pricing = Pricing(default=ANY, models=(("gpt-4o-mini", MINI),))
    reported = Usage(1_000, 200, 0.5, "gpt-4o-mini")
    assert priced_usage(reported, pricing) is reported
    # (1,000 x 0.15 + 200 x 0.6) / 10^6, at the model's price, not the default
    fresh = priced_usage(Usage(1_000, 200, None, "gpt-4o-mini"), pricing)
    assert fresh == Usage(1_000, 200, pytest.approx(270e-6, rel=1e-12), "gpt-4o-mini", priced=True)
    # a cost passk computed with older prices is computed again with these
    stale = Usage(1_000, 200, 9.0, "gpt-4o-mini", priced=True)
    assert priced_usage(stale, pricing).cost_usd == pytest.approx(270e-6, rel=1e-12)
    # one side of the count is enough; the other is 0
    assert priced_usage(Usage(input_tokens=1_000), pricing).cost_usd == pytest.approx(1e-3)
    assert priced_usage(Usage(output_tokens=500), pricing).cost_usd == pytest.approx(1e-3)
    # without tokens, or without a price for the model, nothing to compute
    no_tokens = Usage(model="gpt-4o-mini")
    assert priced_usage(no_tokens, pricing) is no_tokens
    unknown = Usage(1_000, 200, None, "o1")
    assert priced_usage(unknown, Pricing(models=(("gpt-4o-mini", MINI),))) is unknown


def test_prefer_tokens_prices_the_tokens_over_the_cost_the_agent_reports() -> None:
    pricing = Pricing(default=ANY, models=(("gpt-4o-mini", MINI),), prefer_tokens=True)
    # The attack: cost_usd 0 beside real tokens.  Priced from the tokens instead.
    claimed = Usage(1_000, 200, 0.0, "gpt-4o-mini")
    assert priced_usage(claimed, pricing) == Usage(
        1_000, 200, pytest.approx(270e-6, rel=1e-12), "gpt-4o-mini", priced=True
    )
    # Without tokens (or a price) there is nothing else to go by: the report stands.
    cost_only = Usage(cost_usd=0.0)
    assert priced_usage(cost_only, pricing) is cost_only
    unknown = Usage(1_000, 200, 0.0, "o1")
    assert priced_usage(unknown, replace(pricing, default=None)) is unknown
    # Control: the default keeps the agent's own figure.
    assert priced_usage(claimed, replace(pricing, prefer_tokens=False)) is claimed


def test_priced_run_prices_every_attempt_that_reports_tokens() -> None:
    rows = [record("a")]
    tokens_only = [
        Attempt("a", n, Phase.MAIN, "deny", usage=Usage(1_000, 200, model="gpt-4o-mini"))
        for n in (1, 2, 3)
    ]
    by_model = Pricing(models=(("gpt-4o-mini", MINI),))
    run = run_of(rows, tokens_only)
    priced = priced_run(run, by_model)
    assert [a.usage.cost_usd for a in priced.attempts if a.usage] == pytest.approx([270e-6] * 3)
    assert [a.usage.priced for a in priced.attempts if a.usage] == [True] * 3
    assert summarize_spend(priced).priced and not summarize_spend(run).priced
    # one attempt of three reports tokens: only that one gains a cost, the rest are kept
    mixed = run_of(rows, [tokens_only[0], *attempts("a", ["deny", None], start=2)])
    got = priced_run(mixed, by_model)
    assert got.attempts[1:] == mixed.attempts[1:]
    assert got.attempts[0].usage is not None
    assert got.attempts[0].usage.cost_usd == pytest.approx(270e-6)
    # nothing to price: the same run
    assert priced_run(run, Pricing()) is run
    plain = run_of(rows, attempts("a", RIGHT))
    assert priced_run(plain, by_model) is plain
    reported = run_of(rows, [replace(a, usage=Usage(1_000, 200, 0.01)) for a in plain.attempts])
    assert priced_run(reported, by_model) is reported


# ------------------------------------------------------- gate limits, exactly


def test_the_gate_policy_json_keeps_only_the_limits_set_and_a_limit_of_zero() -> None:
    rule = {"rule": RuleSettings().to_json()}
    assert GatePolicy().to_json() == {"block_on_any_regression": False, **rule}
    assert GatePolicy(True, 0.25, 0.5).to_json() == {
        "block_on_any_regression": True,
        **rule,
        "max_cost_increase": 0.25,
        "max_latency_p95_increase": 0.5,
    }
    assert GatePolicy(max_latency_p95_increase=0.0).to_json() == {
        "block_on_any_regression": False,
        **rule,
        "max_latency_p95_increase": 0.0,
    }
    assert GatePolicy(max_cost_increase=0.0).to_json() == {
        "block_on_any_regression": False,
        **rule,
        "max_cost_increase": 0.0,
    }


def test_a_gate_with_limits_refuses_to_decide_without_the_spend() -> None:
    with pytest.raises(ValueError) as raised:
        decide([], GatePolicy(max_latency_p95_increase=0.5), verdicts={})
    assert str(raised.value) == "a gate with spend limits needs the spend comparison"
    assert decide([], GatePolicy(), verdicts={}).passed  # no limit, no spend needed


def test_one_decision_without_a_cost_is_enough_to_fail_the_cost_limit() -> None:
    rows = [record("must", mnb=True), record("other")]
    base = spent("must", RIGHT, 0.001, 1.0) + spent("other", RIGHT, 0.001, 1.0)
    cand = spent("must", RIGHT, 0.001, 1.0) + spent("other", RIGHT, 0.001, 1.0)
    cand[4] = replace(cand[4], usage=Usage(100, 10, None))  # tokens, no cost, no pricing
    _, gate = evaluate(
        rows,
        run_of(rows, base, version=Version.BASELINE),
        run_of(rows, cand),
        ratchet=frozenset(),
        policy=GatePolicy(max_cost_increase=0.25, rule=RuleSettings(rule=STRICT)),
    )
    assert [(f.rule, f.id, said(f)) for f in gate.failures] == [
        (
            Rule.COST,
            None,
            "1 of 6 candidate decisions report no cost, so gate.max_cost_increase cannot be "
            "checked (report usage with every answer)",
        )
    ]


def test_unchecked_limits_say_why_in_warnings_and_pass() -> None:
    policy = GatePolicy(max_cost_increase=0.25, max_latency_p95_increase=0.5)
    _, gate = _gate(0.0, 0.002, policy, base_s=0.0, cand_s=3.0)
    assert gate.passed and gate.failures == ()
    assert warned(gate) == (
        "gate.max_cost_increase was not checked: the baseline reports no cost "
        "(have the agent report usage, or set pricing, and record the baseline again)",
        "gate.max_latency_p95_increase was not checked: the baseline has no latency above 0 s",
    )


def test_an_increase_exactly_at_a_limit_passes_and_just_over_it_fails() -> None:
    # costs 0.5 -> 0.75 and p95 1 s -> 1.5 s: increases of exactly +50%
    at = GatePolicy(max_cost_increase=0.5, max_latency_p95_increase=0.5)
    _, gate = _gate(0.5, 0.75, at, base_s=1.0, cand_s=1.5)
    assert gate.passed and warned(gate) == ()
    # within 1e-9 of the limit counts as at it (0.499999999 + 1e-9 == 0.5 in floats)
    within = GatePolicy(max_cost_increase=0.499999999, max_latency_p95_increase=0.499999999)
    assert _gate(0.5, 0.75, within, base_s=1.0, cand_s=1.5)[1].passed
    over = GatePolicy(max_cost_increase=0.499999998, max_latency_p95_increase=0.499999998)
    _, gate = _gate(0.5, 0.75, over, base_s=1.0, cand_s=1.5)
    assert [said(f) for f in gate.failures] == [
        "cost per decision +50% ($0.5 -> $0.75), at least +50% with 95% confidence, over "
        "gate.max_cost_increase +49.9999998%",
        "p95 latency per attempt +50% (1 s -> 1.5 s), beyond noise (quantile test p < 0.001), "
        "over gate.max_latency_p95_increase +49.9999998%",
    ]


def test_a_reason_never_reads_the_increase_as_the_limit() -> None:
    """+25.4% against a 25% limit is not "+25%, over +25%"; a limit reads as configured."""
    _, gate = _gate(
        0.001, 0.001254, GatePolicy(max_cost_increase=0.25, max_latency_p95_increase=0.125),
        base_s=1.0, cand_s=1.13,
    )  # fmt: skip
    assert [said(f) for f in gate.failures] == [
        "cost per decision +25.4% ($0.001 -> $0.001254), at least +25.4% with 95% "
        "confidence, over gate.max_cost_increase +25%",
        "p95 latency per attempt +13% (1 s -> 1.13 s), beyond noise (quantile test p < 0.001), "
        "over gate.max_latency_p95_increase +12.5%",
    ]
    _, gate = _gate(0.001, 0.0010001, GatePolicy(max_cost_increase=0.0))
    assert said(gate.failures[0]) == (
        "cost per decision +0.01% ($0.001 -> $0.0010001), at least +0.01% with 95% "
        "confidence, over gate.max_cost_increase +0%"
    )


def test_a_candidate_without_decisions_leaves_the_limits_unchecked_and_says_so() -> None:
    """Said, not skipped in silence; the rows' own rules judge a candidate that only errs."""
    rows = [record("a")]
    base = run_of(rows, spent("a", RIGHT, 0.001, 1.0), version=Version.BASELINE)
    policy = GatePolicy(max_cost_increase=0.25, max_latency_p95_increase=0.5)
    errors = run_of(rows, spent("a", [None, None, None], 0.001, 9.0))
    gate = decide([], policy, verdicts={}, spend=compare_spend(base, errors))
    assert gate.passed and warned(gate) == (
        "gate.max_cost_increase was not checked: the candidate made no decisions",
        "gate.max_latency_p95_increase was not checked: 3 attempts on a version are too few "
        "to tell a p95 latency over the limit from noise (at 5% false alarms)",
    )
    nothing = run_of(rows, [])
    gate = decide([], policy, verdicts={}, spend=compare_spend(base, nothing))
    assert gate.passed and warned(gate) == (
        "gate.max_cost_increase was not checked: the candidate made no decisions",
        "gate.max_latency_p95_increase was not checked: the candidate has no attempt with a "
        "measured latency",
    )
    # both sides lack latency: the baseline is named, as it is the one to record again
    instant = run_of(rows, spent("a", RIGHT, 0.001, 0.0), version=Version.BASELINE)
    gate = decide(
        [],
        GatePolicy(max_latency_p95_increase=0.5),
        verdicts={},
        spend=compare_spend(instant, nothing),
    )
    assert warned(gate) == (
        "gate.max_latency_p95_increase was not checked: the baseline has no latency above 0 s",
    )


# ------------------------------------------------------ rendering the change


def _spend_pair(
    base_costs: list[float], cand_costs: list[float], base_s: list[float], cand_s: list[float]
) -> SpendComparison:
    rows = [record("a"), record("b"), record("c")]

    def run(costs: list[float], durations: list[float], version: Version) -> Run:
        made = [
            attempt
            for r, cost, duration in zip(rows, costs, durations, strict=True)
            for attempt in spent(r.id, RIGHT, cost, duration)
        ]
        return run_of(rows, made, version=version)

    return compare_spend(
        run(base_costs, base_s, Version.BASELINE), run(cand_costs, cand_s, Version.CANDIDATE)
    )


def test_a_change_the_same_on_every_row_has_no_interval_of_equal_ends() -> None:
    """Zero spread: the change itself, said to hold on every row, not "+$x to +$x"."""
    spend = _spend_pair([0.001] * 3, [0.0015] * 3, [1.0, 2.0, 1.0], [1.5, 2.5, 1.5])
    assert spend.cost.low == spend.cost.high and spend.latency.low == spend.latency.high
    assert cost_line(spend) == (
        "**Cost & latency:** $0.00100 → $0.00150 per decision (+50%, the same on every row) "
        "· p95 2.00 s → 2.50 s (+25%) · 110 → 110 tokens/decision · errors 0.0% → 0.0%"
    )
    assert spend_lines(spend)[-3] == (
        "Change paired by row (3 rows, candidate − baseline, Student t): mean cost per "
        "attempt +$0.000500 (the same on every row); mean latency per attempt +500 ms "
        "(the same on every row)."
    )


def test_interval_ends_that_read_alike_get_more_digits() -> None:
    """+-2.5e-7 around $0.0005 reads "$0.000500" at both ends: one more decimal tells them apart."""
    spend = _spend_pair(
        [0.001] * 3, [0.0015, 0.0015001, 0.0014999], [1.0, 2.0, 1.0], [1.5, 2.0, 2.0]
    )
    assert cost_line(spend) == (
        "**Cost & latency:** $0.00100 → $0.00150 per decision (+50%, 95% CI +49.98% to "
        "+50.02%) · p95 2.00 s → 2.00 s (+0%) · 110 → 110 tokens/decision · "
        "errors 0.0% → 0.0%"
    )
    assert spend_lines(spend)[-3] == (
        "Change paired by row (3 rows, candidate − baseline, Student t): mean cost per "
        "attempt +$0.000500 (95% CI +$0.0004998 to +$0.0005002); mean latency per attempt "
        "+500 ms (95% CI -742 ms to +1.74 s)."
    )


@pytest.mark.parametrize(
    ("value", "extra", "text"),
    [(0.000500248, 0, "$0.000500"), (0.000500248, 1, "$0.0005002"), (12.3456, 2, "$12.3456"),
     (-0.0123, 1, "-$0.01230")],
)  # fmt: skip
def test_money_with_more_digits(value: float, extra: int, text: str) -> None:
    assert money(value, extra) == text


@pytest.mark.parametrize(
    ("value", "extra", "text"),
    [(0.7421, 0, "742 ms"), (0.7421, 1, "742.1 ms"), (1.7421, 0, "1.74 s"), (1.7421, 1, "1.742 s")],
)
def test_seconds_with_more_digits(value: float, extra: int, text: str) -> None:
    assert seconds(value, extra) == text


# ------------------------------------------- issue 20: limits with a stated false alarm


def test_one_missing_decision_cost_moves_the_figure_a_little_not_a_formula() -> None:
    """Issue 20: one decision without a cost used to drop every errored attempt's cost."""
    rows = [record("a")]
    error = Attempt("a", 4, Phase.MAIN, None, error="timeout", usage=Usage(50, 0, 0.004))
    every = [*spent("a", ["deny"] * 3, 0.002, 1.0), error]
    one_missing = [*spent("a", ["deny"] * 2, 0.002, 1.0), *attempts("a", ["deny"], start=3), error]
    # Every decision priced: (3 x .002 + .004) / 3.  One missing: it counts as an average
    # decision (.002), the error's cost still counts: the same figure.
    assert summarize_spend(run_of(rows, every)).cost_per_decision == pytest.approx(0.01 / 3)
    assert summarize_spend(run_of(rows, one_missing)).cost_per_decision == pytest.approx(0.01 / 3)


def test_ratio_change_by_hand() -> None:
    """Rows (a, u, b, v): the relative change of sum b / sum v over sum a / sum u.

    Rows (1, 1, 2, 1) and (3, 1, 3, 1): A = 4, U = 2, B = 5, V = 2 -> 5/4 - 1 = +25%.
    z_i = b_i / 2.5 - v_i / 1 - a_i / 2 + u_i / 1: .8 - 1 - .5 + 1 = .3 and
    1.2 - 1 - 1.5 + 1 = -.3; sd = sqrt(.18), SE = .3; t_{0.975, 1} = 12.7062.
    """
    change = ratio_change([(1.0, 1.0, 2.0, 1.0), (3.0, 1.0, 3.0, 1.0)])
    assert change.estimate == pytest.approx(0.25)
    theta, half = math.log(1.25), 12.706204736174707 * 0.3
    assert change.low == pytest.approx(math.exp(theta - half) - 1)
    assert change.high == pytest.approx(math.exp(theta + half) - 1)
    assert change.low_one_sided == pytest.approx(math.exp(theta - 6.313751514675041 * 0.3) - 1)
    assert ratio_change([(1.0, 1.0, 2.0, 1.0)]).low is None
    assert ratio_change([(0.0, 1.0, 2.0, 1.0)]).estimate is None


def test_a_latency_increase_within_noise_warns_instead_of_failing() -> None:
    """Identical latencies, 30 attempts a side: a +20% limit used to fail 26% of runs."""
    rng = random.Random(3)
    rows = [record(f"r{i}") for i in range(40)]

    def run(version: Version, scale: float) -> Run:
        made = [
            replace(a, duration_s=scale * rng.lognormvariate(0, 0.5))
            for r in rows
            for a in spent(r.id, RIGHT, 0.001, 1.0)
        ]
        return run_of(rows, made, version=version)

    base = run(Version.BASELINE, 1.0)
    for _ in range(20):
        spend = compare_spend(base, run(Version.CANDIDATE, 1.25))
        check = spend.latency_check(0.2)
        assert check.exceeded is False  # +25% true: not shown beyond +20% on 120 attempts
        gate = decide([], GatePolicy(max_latency_p95_increase=0.2), verdicts={}, spend=spend)
        assert gate.passed
        if (spend.latency_p95_increase or 0) > 0.2:
            assert "but within noise" in warned(gate)[0]
    slow = compare_spend(base, run(Version.CANDIDATE, 3.0))
    assert slow.latency_check(0.2).exceeded is True


def test_the_latency_limit_reads_durations_as_artifacts_keep_them() -> None:
    """The gate at recording time and `passk gate` on the file must see the same latencies."""
    from passk_action.core.cost import RECORDED_DURATION_DIGITS
    from passk_action.store.codec import DURATION_DIGITS

    assert RECORDED_DURATION_DIGITS == DURATION_DIGITS
    rows = [record(f"r{i}") for i in range(30)]

    def run(version: Version, offset: float) -> Run:
        made = [
            replace(a, duration_s=1.0 + i / 100 + n / 1000 + offset)
            for i, r in enumerate(rows)
            for n, a in enumerate(spent(r.id, RIGHT, 0.001, 1.0))
        ]
        return run_of(rows, made, version=version)

    exact = compare_spend(run(Version.BASELINE, 0.0), run(Version.CANDIDATE, 0.4))
    rounded = compare_spend(run(Version.BASELINE, 0.0), run(Version.CANDIDATE, 0.4 + 3e-7))
    assert exact.latency_check(0.2) == rounded.latency_check(0.2)
