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

from helpers import attempts, record, run_of
from passk_action.core.cost import (
    compare_spend,
    paired_change,
    percentile,
    summarize_spend,
    t_975,
)
from passk_action.core.gate import GatePolicy, Rule
from passk_action.core.model import Attempt, Phase, Usage, Version
from passk_action.core.result import evaluate

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
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)


# ----------------------------------------------------------- paired intervals

# t_{0.975, df} from the printed tables (e.g. NIST/SEMATECH 1.3.6.7.2), 3 decimals.
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 7: 2.365, 9: 2.262,
           10: 2.228, 15: 2.131, 20: 2.086, 29: 2.045, 30: 2.042, 60: 2.000, 100: 1.984,
           1000: 1.962}  # fmt: skip


@pytest.mark.parametrize(("df", "value"), sorted(T_TABLE.items()))
def test_t_quantile_matches_the_tables(df: int, value: float) -> None:
    assert round(t_975(df), 3) == value


def test_t_quantile_falls_towards_z() -> None:
    values = [t_975(df) for df in range(1, 400)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert t_975(10**6) == pytest.approx(1.959964, abs=1e-5)


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


def test_paired_interval_edge_cases() -> None:
    assert paired_change([]) == paired_change([])
    assert paired_change([]).estimate is None
    one = paired_change([(1.0, 3.0)])
    assert (one.estimate, one.low, one.high, one.rows) == (2.0, None, None, 1)
    same = paired_change([(1.0, 2.0), (3.0, 4.0)])
    assert (same.low, same.high) == (1.0, 1.0)


# --------------------------------------------------------------- spend of runs


def spent(
    row: str,
    decisions: list[str | None],
    cost: float | None,
    duration: float,
    *,
    tokens: int = 100,
) -> list[Attempt]:
    out = []
    for a in attempts(row, decisions):
        usage = None if a.decision is None else Usage(tokens, 10, cost)
        out.append(replace(a, usage=usage, duration_s=duration))
    return out


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

RIGHT = ["deny", "deny", "deny"]


def _gate(  # type: ignore[no-untyped-def]
    base_cost: float,
    cand_cost: float | None,
    policy: GatePolicy,
    *,
    mnb_broken: bool = False,
    base_s: float = 1.0,
    cand_s: float = 1.0,
):
    rows = [record("must", mnb=True), record("other")]
    base = spent("must", RIGHT, base_cost, base_s) + spent("other", RIGHT, base_cost, base_s)
    cand_must = ["deny", "approve", "deny"] if mnb_broken else RIGHT
    cand = spent("must", cand_must, cand_cost, cand_s) + spent("other", RIGHT, cand_cost, cand_s)
    return evaluate(
        rows,
        run_of(rows, base, version=Version.BASELINE),
        run_of(rows, cand),
        ratchet=frozenset(),
        policy=policy,
    )


def test_a_candidate_within_the_reliability_gate_fails_max_cost_increase() -> None:
    policy = GatePolicy(max_cost_increase=0.25)
    comparison, gate = _gate(0.001, 0.0013, policy)
    assert comparison.candidate_metrics.pass_k == 1.0 and not comparison.lost
    assert not gate.passed
    assert [(f.rule, f.id) for f in gate.failures] == [(Rule.COST, None)]
    assert gate.failures[0].reason == (
        "cost per decision +30% ($0.001 -> $0.0013), over gate.max_cost_increase +25%"
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
    assert gate.failures[0].reason.startswith("6 of 6 candidate decisions report no cost")


def test_a_baseline_without_cost_leaves_the_limit_unchecked_with_a_warning() -> None:
    _, gate = _gate(0.0, 0.002, GatePolicy(max_cost_increase=0.25))
    assert gate.passed
    assert gate.warnings[0].startswith("gate.max_cost_increase was not checked")


def test_max_latency_p95_increase() -> None:
    policy = GatePolicy(max_latency_p95_increase=0.5)
    _, slow = _gate(0.001, 0.001, policy, base_s=1.0, cand_s=1.6)
    assert [f.rule for f in slow.failures] == [Rule.LATENCY]
    assert slow.failures[0].reason == (
        "p95 latency per attempt +60% (1 s -> 1.6 s), over gate.max_latency_p95_increase +50%"
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


def test_a_reason_never_reads_the_increase_as_the_limit() -> None:
    """+25.4% against a 25% limit is not "+25%, over +25%"; a limit reads as configured."""
    _, gate = _gate(
        0.001, 0.001254, GatePolicy(max_cost_increase=0.25, max_latency_p95_increase=0.125),
        base_s=1.0, cand_s=1.13,
    )  # fmt: skip
    assert [f.reason for f in gate.failures] == [
        "cost per decision +25.4% ($0.001 -> $0.001254), over gate.max_cost_increase +25%",
        "p95 latency per attempt +13% (1 s -> 1.13 s), over gate.max_latency_p95_increase +12.5%",
    ]
    _, gate = _gate(0.001, 0.0010001, GatePolicy(max_cost_increase=0.0))
    assert gate.failures[0].reason == (
        "cost per decision +0.01% ($0.001 -> $0.0010001), over gate.max_cost_increase +0%"
    )
