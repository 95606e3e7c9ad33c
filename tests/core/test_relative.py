"""The relative gate rule (issue 29): verdicts, the paired comparison, its exact rates."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from passk_action.core.model import Version
from passk_action.core.operating import binomial_pmf, pair_oc, relative_oc, side_oc
from passk_action.core.relative import (
    FIRST_DESIGN,
    first_design,
    judge_relative,
    pair_spec,
    quiet_pairs,
    read_pairs,
    screen_spec,
    theta,
    wilson,
)
from passk_action.core.sequential import (
    RELATIVE,
    SPRT,
    Decision,
    Ending,
    Finding,
    GatedKind,
    Outcome,
    RuleSettings,
    SideAttempts,
)
from support.relative_rows import played_as_exact

RULE = RuleSettings(rule=RELATIVE, screen=SPRT, pair_beta=0.02)
"""The second design (the SPRT screen): the rule's pieces and its audits of older results;
the designed screen, the default since, is tested in ``test_optimal_screen.py``."""
FIRST = dict(
    rule=RELATIVE, screen_alpha=0.15, screen_beta=0.03, anchor_z=1.5, pair_quiet=0,
    screen=SPRT, pair_beta=0.02,
)  # fmt: skip
"""The first design's defaults that the second changed (beside ``FIRST_DESIGN``'s), and no
quiet stop (no result of either design before it had one)."""
K = 3
MNB = GatedKind.MUST_NOT_BREAK
CODES = {"R": Outcome.RIGHT, "W": Outcome.WRONG, "E": Outcome.ERROR}


def side(text: str, main: int = K, measured: int = 0) -> SideAttempts:
    return SideAttempts(tuple(CODES[c] for c in text), main, measured)


def baseline(recorded: str, fresh: str = "") -> SideAttempts:
    """A baseline with ``recorded`` answers (k main, the rest measurement) and ``fresh`` ones."""
    return side(recorded + fresh, K, len(recorded) - K)


def judge(cand: str, base: SideAttempts, more_possible: bool = True) -> object:
    return judge_relative(side(cand), base, RULE, kind=MNB, more_possible=more_possible)


# ------------------------------------------------------------------ the pieces


def test_wilson_bounds_match_the_textbook_interval() -> None:
    # 8 of 10 at 95%: (0.490, 0.943) (Newcombe, Stat. Med. 17, 1998, table I).
    assert wilson(8, 10, 1.96, upper=True) == pytest.approx(0.9433, abs=1e-4)
    assert wilson(8, 10, 1.96, upper=False) == pytest.approx(0.4902, abs=1e-4)
    assert wilson(57, 60, 0.0, upper=True) == pytest.approx(0.95)
    assert (wilson(0, 0, 1.0, upper=True), wilson(0, 0, 1.0, upper=False)) == (1.0, 0.0)


@pytest.mark.parametrize("p", [0.05, 0.5, 0.8, 0.95, 0.999])
def test_a_disagreeing_pair_is_a_loss_half_the_time_when_both_are_equally_accurate(
    p: float,
) -> None:
    assert theta(p, p) == pytest.approx(0.5)
    assert theta(p, p - 0.04) > 0.5 > theta(p - 0.04, p)


def test_the_screen_tests_against_the_baseline_s_own_accuracy() -> None:
    settings = RULE
    spec = screen_spec(57, 60, settings)
    assert spec is not None
    upper = wilson(57, 60, settings.anchor_z, upper=True)
    assert spec.reliable == pytest.approx(min(settings.screen_cap, upper), abs=1e-6)
    assert spec.unreliable == pytest.approx(spec.reliable - settings.drop, abs=1e-6)
    # A baseline right on every recorded answer is tested as a row right 98% of the time.
    assert screen_spec(60, 60, settings).reliable == settings.screen_cap  # type: ignore[union-attr]
    # A baseline almost never right cannot drop by 20 points: no test.
    assert screen_spec(0, 60, settings) is None


def test_pairs_read_in_order_and_agreeing_pairs_tell_nothing() -> None:
    spec = pair_spec(48, 60, RULE)
    pairs = read_pairs([True, False, True, True], [True, True, False, True], spec, 300)
    assert (pairs.pairs, pairs.losses, pairs.wins, pairs.ending) == (4, 1, 1, Ending.UNDECIDED)
    capped = read_pairs([True] * 10, [True] * 10, spec, 10)
    assert (capped.pairs, capped.ending) == (10, Ending.RELIABLE)


# ------------------------------------------------------------------ verdicts


RELIABLE_BASE = "R" * 60
FLAKY_BASE = ("RRRRW" * 12)[:60]  # 0.8 on its recorded answers
SCREENED_BASE = "W" + "R" * 55 + "WWWR"  # 0.933: screened, not straight to the pairs


def test_a_candidate_as_right_as_its_baseline_passes_on_the_screen() -> None:
    v = judge("R" * 20, baseline(RELIABLE_BASE))
    assert (v.decision, v.finding) == (Decision.PASS, Finding.RELIABLE)  # type: ignore[attr-defined]
    assert v.baseline.read == 60  # type: ignore[attr-defined]


def test_a_flaky_candidate_is_compared_side_by_side_with_fresh_baseline_answers() -> None:
    v = judge("RWW" + "W", baseline(RELIABLE_BASE))
    assert v.decision is Decision.MORE  # type: ignore[attr-defined]
    asked = {r.version for r in v.requests}  # type: ignore[attr-defined]
    assert asked == {Version.BASELINE, Version.CANDIDATE}


def test_losses_shown_side_by_side_block_as_a_regression() -> None:
    fresh = 40
    v = judge("RWW" + "W" * fresh, baseline(RELIABLE_BASE, "R" * fresh))
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.REGRESSION)  # type: ignore[attr-defined]
    assert v.losses and not v.wins  # type: ignore[attr-defined]


def test_a_candidate_that_matches_a_flaky_baseline_side_by_side_passes() -> None:
    """The false block issue 29 found: a row right 80% of the time on both versions."""
    rng = random.Random(29)
    fresh_b = "".join("R" if rng.random() < 0.8 else "W" for _ in range(300))
    fresh_c = "".join("R" if rng.random() < 0.8 else "W" for _ in range(300))
    base = baseline(FLAKY_BASE, fresh_b)
    v = judge("RWW" + fresh_c, base)
    assert (v.decision, v.finding) == (Decision.PASS, Finding.MATCHES_BASELINE)  # type: ignore[attr-defined]


def test_a_row_right_at_most_85_percent_skips_the_screen_and_pairs_every_answer() -> None:
    """Second design: 48 of 60 goes straight to the pairs, main answers paired too."""
    v = judge("RRR", baseline(FLAKY_BASE))
    assert v.decision is Decision.MORE  # type: ignore[attr-defined]
    assert v.candidate.ending is Ending.NOT_TESTED  # type: ignore[attr-defined]
    asked = {r.version: r.attempts for r in v.requests}  # type: ignore[attr-defined]
    assert asked[Version.BASELINE] - asked[Version.CANDIDATE] == K
    # The candidate's main answers meet the baseline's first fresh ones: 3 losses.
    v = judge("WWW", baseline(FLAKY_BASE, "RRR"))
    assert (v.pairs, v.losses, v.wins) == (3, 3, 0)  # type: ignore[attr-defined]
    # Control: a row right 56 of 60 times is screened, and three right answers do not pass it.
    screened = judge("RRR", baseline(SCREENED_BASE))
    assert screened.candidate.ending is Ending.UNDECIDED  # type: ignore[attr-defined]
    assert {r.version for r in screened.requests} == {Version.CANDIDATE}  # type: ignore[attr-defined]


def test_a_candidate_that_errs_on_a_row_paired_at_once_does_not_pass() -> None:
    """Attack: on a row that skips the screen, erring instead of answering runs out no clock."""
    v = judge("E" * RULE.unable_after, baseline(FLAKY_BASE, "R" * 10))
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.UNABLE)  # type: ignore[attr-defined]
    # Control: the same row answered is compared, neither passed nor blocked yet.
    honest = judge("R" * RULE.unable_after, baseline(FLAKY_BASE, "R" * 10))
    assert honest.decision is Decision.MORE  # type: ignore[attr-defined]


def test_a_result_of_the_first_design_is_audited_with_the_first_design() -> None:
    """Schema 5 results lack the second design's settings: filled to reproduce the first."""
    old = first_design({"rule": RELATIVE, "reliable": 0.99, "anchor_z": 1.5})
    assert (old["screen_cap"], old["pair_z"], old["direct_below"]) == (0.99, 1.2816, 0.0)
    first = RuleSettings(**{**FIRST, **{k: v for k, v in old.items() if k in FIRST_DESIGN}})
    # The first design sent this row through the screen; the second pairs it directly.
    assert judge_relative(side("RRR"), baseline(FLAKY_BASE), first, kind=MNB).candidate.ending is (
        Ending.UNDECIDED
    )
    assert screen_spec(60, 60, first).reliable == 0.99  # type: ignore[union-attr]
    assert pair_spec(54, 60, first) != pair_spec(54, 60, RULE)
    # The first design's exact figure at 0.95, as bench/gate_relative.md had it before.
    assert relative_oc(first, k=K, candidate=0.95, baseline=0.95).candidate_extra == (
        pytest.approx(56.4, abs=0.05)
    )


def test_without_more_attempts_an_unconfirmed_screen_failure_stands() -> None:
    v = judge("RWW", baseline(RELIABLE_BASE), more_possible=False)
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.REGRESSION)  # type: ignore[attr-defined]


def test_errors_are_not_evidence_one_errored_round_asks_again() -> None:
    """Issue 29: a gated row's asking never ends after one errored round."""
    v = judge("RRR" + "E" * 4, baseline(RELIABLE_BASE))
    assert v.decision is Decision.MORE  # type: ignore[attr-defined]
    v = judge("RRR" + "E" * RULE.unable_after, baseline(RELIABLE_BASE))
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.UNABLE)  # type: ignore[attr-defined]


def test_a_candidate_that_errs_through_the_paired_comparison_does_not_pass() -> None:
    """Attack: a candidate that crashes once flagged cannot run out the clock to a pass."""
    v = judge("RWW" + "E" * RULE.unable_after, baseline(RELIABLE_BASE, "R" * 10))
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.UNABLE)  # type: ignore[attr-defined]
    # Control: the same candidate answering, right, is compared and not blocked for it.
    honest = judge("RWW" + "R" * 10, baseline(RELIABLE_BASE, "R" * 10))
    assert honest.decision is Decision.MORE  # type: ignore[attr-defined]


def test_a_baseline_s_measurement_is_not_read_by_the_strict_rule() -> None:
    from passk_action.core.sequential import STRICT
    from passk_action.core.sequential import judge as judge_rule

    base = baseline("RRR" + "W" * 57)
    strict = RuleSettings(rule=STRICT)
    v = judge_rule(side("RRW"), base, strict, kind=MNB, k=K, more_possible=False)
    # The baseline's main attempts were all right: the measurement's wrong answers are not
    # a "baseline erred too" for the literal rule.
    assert v.decision is Decision.BLOCK


# ------------------------------------------------------------- exact figures


@pytest.mark.parametrize(("p_b", "p_c"), [(0.9, 0.9), (0.9, 0.7), (1.0, 0.8)])
def test_the_exact_block_rate_is_what_the_rule_does(p_b: float, p_c: float) -> None:
    played_as_exact(RULE, p_b, p_c, trials=1500, seed=2029)


def test_the_paired_comparison_s_exact_rate_matches_a_direct_sum() -> None:
    """Cap large enough never to bind: block = sum over ending times of the SPRT alone."""
    spec = pair_spec(54, 60, RULE)
    paired = pair_oc(spec, 0.9, 0.7, 2000)
    alone = side_oc(spec, 1 - theta(0.9, 0.7), 0)
    assert paired.block == pytest.approx(alone.unreliable, abs=1e-9)
    d = 0.9 * 0.3 + 0.1 * 0.7
    assert paired.pairs == pytest.approx(alone.answers / d, rel=1e-6)


@pytest.mark.parametrize(("p_b", "p_c"), [(0.8, 0.8), (0.8, 0.6), (0.85, 0.85)])
def test_the_exact_rate_holds_for_rows_paired_directly(p_b: float, p_c: float) -> None:
    exact, answers = played_as_exact(RULE, p_b, p_c, trials=600, seed=2930)
    # Rounds ask whole attempts: what they make is at least the pairs read.
    assert answers - K >= exact.candidate_extra * 0.9


def test_the_second_design_held_issue_29_s_rates_but_not_its_cost() -> None:
    """Harmless <= 0.1% a row, a 20-point drop caught >= 90%, and the second design's cost at
    0.95 (22.0 extra candidate attempts, over issue 29's 15; the designed screen's figures:
    test_optimal_screen.py)."""
    for i in range(0, 21, 2):
        p = 0.8 + i / 100
        assert relative_oc(RULE, k=K, candidate=p, baseline=p).block <= 0.001, p
        assert relative_oc(RULE, k=K, candidate=p - 0.2, baseline=p).block >= 0.90, p
    at95 = relative_oc(RULE, k=K, candidate=0.95, baseline=0.95)
    assert at95.candidate_extra <= 22.1 and at95.baseline_extra <= 7.1


def test_exact_cells_of_the_second_design() -> None:
    """Pinned against bench/gate_relative.md (exact, core/operating.py)."""
    at95 = relative_oc(RULE, k=K, candidate=0.95, baseline=0.95)
    assert (at95.candidate_extra, at95.baseline_extra) == (
        pytest.approx(21.98, abs=0.01),
        pytest.approx(6.94, abs=0.01),
    )
    assert relative_oc(RULE, k=K, candidate=0.8, baseline=1.0).block == pytest.approx(
        0.9012, abs=1e-4
    )


@pytest.mark.parametrize("p", [0.8, 0.9, 1.0])
def test_a_harmless_row_blocks_at_most_alpha_whatever_its_accuracy(p: float) -> None:
    """Issue 29's target: <= 1% with 10 gated rows, <= 5% with 50, every profile in [0.8, 1]."""
    block = relative_oc(RULE, k=K, candidate=p, baseline=p).block
    assert block <= RULE.alpha
    assert 1 - (1 - RULE.alpha) ** 10 <= 0.01 and 1 - (1 - RULE.alpha) ** 50 <= 0.05


def test_the_binomial_weights_sum_to_one() -> None:
    assert sum(binomial_pmf(60, 0.83)) == pytest.approx(1.0)


@pytest.mark.parametrize(("p_b", "p_c"), [(0.97, 0.97), (0.9, 0.7), (0.6, 0.6)])
def test_the_quiet_stop_s_exact_figures_match_pairs_read_one_by_one(p_b: float, p_c: float) -> None:
    """pair_oc with a quiet stop against read_pairs on drawn answers (the code the gate runs)."""
    spec = pair_spec(54, 60, RULE)
    quiet = quiet_pairs(RULE)
    exact = pair_oc(spec, p_b, p_c, RULE.pair_max_pairs, quiet)
    rng = random.Random(31)
    trials, blocks, read_total = 3000, 0, 0
    for _ in range(trials):
        base = [rng.random() < p_b for _ in range(RULE.pair_max_pairs)]
        cand = [rng.random() < p_c for _ in range(RULE.pair_max_pairs)]
        pairs = read_pairs(base, cand, spec, RULE.pair_max_pairs, quiet)
        blocks += pairs.ending is Ending.UNRELIABLE
        read_total += pairs.pairs
    se = math.sqrt(max(exact.block * (1 - exact.block), 1e-4) / trials)
    assert abs(blocks / trials - exact.block) <= 4 * se, (blocks / trials, exact.block)
    assert read_total / trials == pytest.approx(exact.pairs, rel=0.05)


def test_two_versions_that_never_disagree_stop_after_the_quiet_pairs() -> None:
    # Both always wrong (a baseline whose record said right): 42 pairs, not 300.
    spec = pair_spec(60, 60, RULE)
    assert quiet_pairs(RULE) == 42  # (1 - 0.2)^42 <= 1e-4 < 0.8^41
    ended = read_pairs([False] * 300, [False] * 300, spec, 300, quiet_pairs(RULE))
    assert (ended.pairs, ended.ending) == (42, Ending.RELIABLE)
    # One disagreement among the first 42: no quiet stop, the SPRT reads on.
    once = read_pairs([True] + [False] * 299, [False] * 300, spec, 300, quiet_pairs(RULE))
    assert once.pairs == 300 and (once.losses, once.wins) == (1, 0)
    # Control: without a quiet stop (a result from before it), all 300 pairs are read.
    assert read_pairs([False] * 300, [False] * 300, spec, 300).pairs == 300
    assert quiet_pairs(replace(RULE, pair_quiet=0)) == 0
    assert quiet_pairs(replace(RULE, drop=0.1)) == 88
