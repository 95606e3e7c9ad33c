"""Exact behaviour of the core's rules, pinned where mutation testing found slack.

Each test states a rule of classify, diff or gate that the rest of the suite
exercised only loosely: a change to the rule (a flipped default, a dropped
argument, the wrong side named) fails here.  `docs/mutation.md` has the
command and the scores.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from passk_action.core.analysis import analyze, analyze_run
from passk_action.core.check_stability import CheckStability, check_stability
from passk_action.core.classify import classify_attempts
from passk_action.core.diff import (
    Change,
    Confirmation,
    DivergentCheck,
    RowComparison,
    check_flips,
    compare_runs,
    confirmation_outcome,
    first_divergent_check,
    same_checks,
)
from passk_action.core.error_bars import (
    INTERVAL_DIFFERENCE,
    INTERVAL_SHARE,
    ErrorBar,
    clustered_se,
    difference_interval,
    mean_error_bar,
    share_interval,
)
from passk_action.core.gate import (
    RECORDED_FAILURE_KIND,
    GateFailure,
    GatePolicy,
    ProtectedChange,
    Rule,
    decide,
    strict_failure,
)
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    Phase,
    Row,
    RowClass,
    Run,
    Scoring,
    Version,
    canonical_json,
    dataset_digest,
    split_error_detail,
)
from passk_action.core.paired import (
    BETTER,
    TOO_FEW_ROWS,
    WITHIN_NOISE,
    WORSE,
    mcnemar_exact_p,
    p_value_text,
    paired_comparison,
    verdict_of,
)
from passk_action.core.pass_curve import CurvePoint, PassCurve, pass_curve
from passk_action.core.power import Power, paired_power, power_analysis
from passk_action.core.protected import WrittenChange
from passk_action.core.reasons import ProtectedChangeMade, StrictLost, StrictUnclassified
from passk_action.core.result import CompareResult, evaluate
from passk_action.core.scoring import ABSENT, is_correct, normalize
from passk_action.core.sequential import STRICT, RuleSettings
from passk_action.core.shard import Shard, assign_shards, parse_shard, shard_sizes
from passk_action.core.stats import (
    Metrics,
    RowSummary,
    check_counts,
    compute_metrics,
    summarize_attempts,
    summarize_run,
)
from passk_action.core.student_t import regularized_beta, student_t_cdf
from passk_action.errors import UsageError
from support.runs import attempts, classify_decisions, record, run_of
from support.scenarios import failed_scenario
from support.words import said, warned

CASEFOLD = Scoring(normalize=("casefold",))
STRIP_CASEFOLD = Scoring(normalize=("strip", "casefold"))
EXACT = Scoring(normalize=())


# --- classify ---------------------------------------------------------------------


def test_normalize_applies_every_rule_in_order() -> None:
    assert normalize("  DENY ", STRIP_CASEFOLD) == "deny"
    assert normalize("DENY", CASEFOLD) == "deny"
    assert normalize(" Deny ", EXACT) == " Deny "


def test_casefolded_scoring_still_tells_right_from_wrong() -> None:
    # A normalizer that lost the decision would make every row match every label.
    assert is_correct("DENY", "deny", CASEFOLD)
    assert not is_correct("approve", "deny", CASEFOLD)
    assert classify_decisions(["approve"] * 3, "deny", 3, CASEFOLD) is RowClass.STABLE_WRONG
    assert (
        classify_decisions(["Deny", "DENY", "deny"], "deny", 3, CASEFOLD) is RowClass.STABLE_CORRECT
    )
    assert classify_decisions(["deny", "approve", "deny"], "deny", 3, CASEFOLD) is RowClass.FLIP


def test_unknown_normalization_rule_names_the_rule() -> None:
    with pytest.raises(ValueError, match="'squash'"):
        normalize("x", Scoring(normalize=("squash",)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("decisions", "expected_class"),
    [
        (["deny", "deny", "approve"], RowClass.FLIP),  # the odd one out is last
        (["approve", "deny", "deny"], RowClass.FLIP),  # ... or first
        (["approve", "approve", "approve"], RowClass.STABLE_WRONG),
        (["deny", "deny", "deny"], RowClass.STABLE_CORRECT),
        (["deny", None, "deny", "deny"], RowClass.STABLE_CORRECT),  # an error is no decision
    ],
)
def test_classify_compares_every_decision_with_the_first(
    decisions: list[str | None], expected_class: RowClass
) -> None:
    assert classify_decisions(decisions, "deny", 3, EXACT) is expected_class


def test_classify_a_single_attempt_row() -> None:
    # k = 1 is refused by the config, but classify itself must not peek past the end.
    assert classify_decisions(["deny"], "deny", 1, EXACT) is RowClass.STABLE_CORRECT
    assert classify_decisions(["approve"], "deny", 1, EXACT) is RowClass.STABLE_WRONG


def test_classify_attempts_uses_the_given_phases_label_k_and_scoring() -> None:
    main = attempts("r", ["DENY", "DENY", "DENY"])
    confirm = attempts("r", ["approve"], start=4, phase=Phase.CONFIRM)
    both = main + confirm
    assert classify_attempts(both, record("r", "deny"), 3, CASEFOLD) is RowClass.STABLE_CORRECT
    assert classify_attempts(both, record("r", "deny"), 3, EXACT) is RowClass.STABLE_WRONG
    assert classify_attempts(both, record("r", "approve"), 3, CASEFOLD) is RowClass.STABLE_WRONG
    assert classify_attempts(both, record("r", "deny"), 4, CASEFOLD) is RowClass.UNCLASSIFIED
    assert classify_attempts(both, record("r", "deny"), 3, CASEFOLD, phases=None) is RowClass.FLIP
    assert classify_attempts(
        confirm, record("r", "deny"), 1, CASEFOLD, phases=(Phase.CONFIRM,)
    ) is (RowClass.STABLE_WRONG)


# --- diff ---------------------------------------------------------------------------


def test_divergent_check_json_names_the_check_and_both_sides() -> None:
    check = DivergentCheck("damage", (("yes", 2), ("no", 1)), (("no", 3),))
    assert check.to_json() == {
        "check": "damage",
        "baseline": {"yes": 2, "no": 1},
        "candidate": {"no": 3},
    }


def test_confirmation_outcome_of_one_sided_confirmations() -> None:
    right = attempts("r", ["deny"], start=4, phase=Phase.CONFIRM)
    wrong = attempts("r", ["approve"], start=4, phase=Phase.CONFIRM)
    assert confirmation_outcome((), (), record("r"), EXACT) is None
    # Only the baseline was asked, and it varied: that is already an answer.
    assert confirmation_outcome(wrong, (), record("r"), EXACT) is Confirmation.BASELINE_VARIES
    # The baseline gave no answer: the candidate's wrong one neither confirms
    # nor refutes anything ("not reproduced" would claim it was right).
    assert confirmation_outcome((), wrong, record("r"), EXACT) is Confirmation.INCONCLUSIVE
    assert confirmation_outcome(right, (), record("r"), EXACT) is Confirmation.INCONCLUSIVE
    assert confirmation_outcome(right, right, record("r"), EXACT) is Confirmation.NOT_REPRODUCED
    assert (
        confirmation_outcome(right, wrong, record("r"), EXACT) is Confirmation.CONFIRMED_REGRESSION
    )


def test_ranked_values_most_frequent_first_then_by_value() -> None:
    base = attempts("r", [("deny", {"c": "b"}), ("deny", {"c": "a"}), ("deny", {"c": "b"})])
    cand = attempts("r", [("approve", {"c": "z"}), ("approve", {"c": "y"})])
    found = first_divergent_check(base, cand)
    assert found == DivergentCheck("c", (("b", 2), ("a", 1)), (("y", 1), ("z", 1)))


def test_a_check_only_the_candidate_reports_is_found_as_divergent() -> None:
    base = attempts("r", [("deny", {"window": "open"})] * 3)
    cand = attempts("r", [("approve", {"window": "open", "damage": "yes"})] * 3)
    found = first_divergent_check(base, cand)
    assert found is not None
    assert found.name == "damage"
    assert found.baseline == ((ABSENT, 3),)
    assert found.candidate == (("yes", 3),)


def test_a_check_the_baseline_never_reports_while_the_candidate_does() -> None:
    base = attempts("r", ["deny"] * 3)  # no checks at all
    cand = attempts("r", [("approve", {"damage": "yes"})] * 3)
    found = first_divergent_check(base, cand)
    assert found is not None and found.name == "damage"


def test_no_divergent_check_when_one_side_has_no_valid_attempt() -> None:
    valid = attempts("r", [("deny", {"c": "a"})] * 2)
    errors = attempts("r", [None, None])
    assert first_divergent_check(valid, errors) is None
    assert first_divergent_check(errors, valid) is None
    assert first_divergent_check(errors, errors) is None


def test_check_flips_lists_only_checks_that_took_two_values() -> None:
    varied = attempts(
        "r",
        [("deny", {"a": "1", "b": "x"}), ("deny", {"a": "1", "b": "y"}), ("deny", {"a": "1"})],
    )
    assert check_flips(varied, RowClass.STABLE_CORRECT) == ("b",)
    steady = attempts("r", [("deny", {"a": "1"})] * 3)
    assert check_flips(steady, RowClass.STABLE_CORRECT) == ()


def test_same_checks_compares_every_attempt_by_value() -> None:
    one = attempts("r", [("deny", {"a": "1"})])[0]
    same_value = Attempt("r", 2, Phase.MAIN, "deny", checks=(("a", "1"),))
    other = Attempt("r", 3, Phase.MAIN, "deny", checks=(("a", "2"),))
    assert same_checks([])
    assert same_checks([one])
    assert same_checks([one, same_value])  # equal lists, distinct objects
    assert not same_checks([one, other])
    assert not same_checks([other, one])


def _compare(base: list[Attempt], cand: list[Attempt], *, mnb: bool = True) -> RowComparison:
    rows = [record("r", mnb=mnb)]
    # The strict rule keeps what the confirmation attempts showed (the sequential one says
    # what its test found instead: core/verdicts.with_verdicts).
    comparison, _ = evaluate(
        rows,
        run_of(rows, base, version=Version.BASELINE),
        run_of(rows, cand),
        ratchet=frozenset(),
        policy=GatePolicy(rule=RuleSettings(rule=STRICT)),
    )
    return comparison.by_id()["r"]


def test_a_row_missing_from_one_run_is_unclassified_there() -> None:
    rows = [record("r"), record("only-base")]
    base = attempts("r", ["deny"] * 3) + attempts("only-base", ["deny"] * 3)
    cand = attempts("r", ["deny"] * 3)
    comparison, _ = evaluate(
        rows,
        run_of(rows, base, version=Version.BASELINE),
        run_of(rows, cand),
        ratchet=frozenset(),
        policy=GatePolicy(),
    )
    row = comparison.by_id()["only-base"]
    assert row.candidate_class is RowClass.UNCLASSIFIED
    assert row.change is Change.LOST
    rows_rev = [record("r"), record("only-cand")]
    comparison, _ = evaluate(
        rows_rev,
        run_of(rows_rev, cand, version=Version.BASELINE),
        run_of(rows_rev, cand + attempts("only-cand", ["deny"] * 3)),
        ratchet=frozenset(),
        policy=GatePolicy(),
    )
    assert comparison.by_id()["only-cand"].baseline_class is RowClass.UNCLASSIFIED


def test_compare_runs_reads_a_row_no_attempt_was_recorded_for_as_unclassified() -> None:
    rows = [record("r")]
    done = {"r": attempts("r", ["deny"] * 3)}
    lost = compare_runs(rows, done, {}, k=3, scoring=EXACT).by_id()["r"]
    assert (lost.baseline_class, lost.candidate_class) == (
        RowClass.STABLE_CORRECT,
        RowClass.UNCLASSIFIED,
    )
    gained = compare_runs(rows, {}, done, k=3, scoring=EXACT).by_id()["r"]
    assert gained.baseline_class is RowClass.UNCLASSIFIED
    assert gained.change is Change.GAINED


def test_confirmed_regression_names_the_first_divergent_check() -> None:
    base = attempts("r", [("deny", {"damage": "yes"})] * 3) + attempts(
        "r", [("deny", {"damage": "yes"})] * 2, start=4, phase=Phase.CONFIRM
    )
    yes, no = ("deny", {"damage": "yes"}), ("approve", {"damage": "no"})
    cand = attempts("r", [yes, no, yes])
    cand += attempts("r", [("approve", {"damage": "no"})] * 2, start=4, phase=Phase.CONFIRM)
    row = _compare(base, cand)
    assert row.confirmation is Confirmation.CONFIRMED_REGRESSION
    assert row.first_divergent_check is not None
    assert row.first_divergent_check.name == "damage"


def test_a_lost_row_that_is_not_confirmed_names_no_divergent_check() -> None:
    base = attempts("r", [("deny", {"damage": "yes"})] * 3) + attempts(
        "r", [("approve", {"damage": "no"})], start=4, phase=Phase.CONFIRM
    )
    cand = attempts("r", [("deny", {"damage": "yes"}), ("approve", {"damage": "no"})] * 1)
    cand += attempts("r", [("deny", {"damage": "yes"})], start=3)
    cand += attempts("r", [("approve", {"damage": "no"})], start=4, phase=Phase.CONFIRM)
    row = _compare(base, cand)
    assert row.confirmation is Confirmation.BASELINE_VARIES
    assert row.first_divergent_check is None


def test_unconfirmed_and_undiverged_rows_carry_none_not_a_blank() -> None:
    row = _compare(attempts("r", ["deny"] * 3), attempts("r", ["deny"] * 3))
    assert row.confirmation is None
    assert row.first_divergent_check is None


def test_check_flips_are_read_from_each_sides_final_class() -> None:
    base = attempts("r", [("deny", {"a": "1"}), ("deny", {"a": "2"}), ("deny", {"a": "1"})])
    cand = attempts("r", [("deny", {"a": "1"})] * 3)
    row = _compare(base, cand)
    assert row.baseline_check_flips == ("a",)
    assert row.candidate_check_flips == ()


# --- gate -----------------------------------------------------------------------------


def _row(
    base: RowClass,
    cand: RowClass,
    *,
    mnb: bool = True,
    ratchet: bool = False,
    confirmation: Confirmation | None = None,
) -> RowComparison:
    lost = base is RowClass.STABLE_CORRECT and cand is not RowClass.STABLE_CORRECT
    return RowComparison(
        id="r-7",
        must_not_break=mnb,
        in_ratchet=ratchet,
        baseline_class=base,
        candidate_class=cand,
        change=Change.LOST if lost else Change.UNCHANGED,
        confirmation=confirmation,
        baseline_final_class=base,
        candidate_final_class=cand,
        first_divergent_check=None,
    )


@pytest.mark.parametrize(
    ("base", "cand", "side"),
    [
        (RowClass.UNCLASSIFIED, RowClass.STABLE_CORRECT, "on the baseline"),
        (RowClass.STABLE_CORRECT, RowClass.UNCLASSIFIED, "on the candidate"),
        (RowClass.UNCLASSIFIED, RowClass.UNCLASSIFIED, "on the baseline and the candidate"),
    ],
)
def test_unclassified_failure_names_the_side_that_lacks_decisions(
    base: RowClass, cand: RowClass, side: str
) -> None:
    failure = strict_failure(_row(base, cand), GatePolicy())
    assert failure is not None and (failure.rule, failure.id) == (Rule.UNCLASSIFIED, "r-7")
    assert failure.reason == StrictUnclassified(
        baseline=base is RowClass.UNCLASSIFIED, candidate=cand is RowClass.UNCLASSIFIED
    )
    assert said(failure) == f"must-not-break row has fewer than k valid decisions {side}"


def test_a_failure_reason_says_the_confirmation_outcome_only_when_there_is_one() -> None:
    plain = strict_failure(_row(RowClass.STABLE_CORRECT, RowClass.FLIP), GatePolicy())
    assert plain is not None and said(plain).endswith("is flip on the candidate")
    confirmed = strict_failure(
        _row(
            RowClass.STABLE_CORRECT, RowClass.FLIP, confirmation=Confirmation.CONFIRMED_REGRESSION
        ),
        GatePolicy(),
    )
    assert confirmed is not None
    assert said(confirmed).endswith("is flip on the candidate (confirmed-regression)")


def test_any_regression_failure_keeps_the_row_id_and_says_why() -> None:
    row = _row(RowClass.STABLE_CORRECT, RowClass.STABLE_WRONG, mnb=False)
    assert strict_failure(row, GatePolicy()) is None
    failure = strict_failure(row, GatePolicy(block_on_any_regression=True))
    lost = StrictLost(RowClass.STABLE_WRONG, RowClass.STABLE_CORRECT)
    assert failure == GateFailure(Rule.REGRESSION, lost, "r-7")
    assert said(failure) == (
        "row was stable-correct on the baseline and is stable-wrong on the candidate "
        "(gate.block_on_any_regression is on)"
    )


def test_protected_changes_fail_unless_allowed_and_keep_their_detail_and_id() -> None:
    change = ProtectedChange("row-expected", WrittenChange("expected label of r-3 changed"), "r-3")
    decision = decide([], verdicts={}, protected_changes=[change])  # allowed defaults to False
    assert not decision.passed
    made = ProtectedChangeMade("row-expected", WrittenChange("expected label of r-3 changed"))
    assert decision.failures == (GateFailure(Rule.PROTECTED_CHANGE, made, "r-3"),)
    assert said(decision.failures[0]) == "expected label of r-3 changed"
    allowed = decide([], verdicts={}, protected_changes=[change], protected_changes_allowed=True)
    assert allowed.passed
    assert warned(allowed) == ("allowed protected change: expected label of r-3 changed",)


def test_a_recorded_failure_stands_even_when_changes_are_allowed() -> None:
    standing = ProtectedChange(
        RECORDED_FAILURE_KIND, WrittenChange("recorded failure stands"), "rec-1"
    )
    decision = decide([], verdicts={}, protected_changes=[standing], protected_changes_allowed=True)
    made = ProtectedChangeMade(RECORDED_FAILURE_KIND, WrittenChange("recorded failure stands"))
    assert decision.failures == (GateFailure(Rule.RECORDED_FAILURE, made, "rec-1"),)


# --- digests: committed baselines depend on these bytes ---------------------------------


def test_canonical_json_is_sorted_compact_utf8_and_refuses_nan() -> None:
    assert canonical_json({"b": 1, "a": ["é", None, 1.5]}) == (b'{"a":["\xc3\xa9",null,1.5],"b":1}')
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_the_dataset_digest_is_pinned() -> None:
    """A change here invalidates every committed baseline: bump the artifact format instead."""
    rows = [
        Row("b", {"text": "café", "n": [1, 2]}, "deny", ("x",), True, True, None),
        Row("a", "plain", "approve", (), False, False, "c1"),
    ]
    assert rows[0].content() == {
        "id": "b",
        "input": {"text": "café", "n": [1, 2]},
        "expected": "deny",
        "tags": ["x"],
        "must_not_break": True,
    }
    assert rows[1].content()["cluster"] == "c1"
    assert dataset_digest(rows) == (
        "sha256:2475be4d94c51c3597103ddd9e6b67817291450535997c4371fc207ea9d8baa1"
    )
    assert dataset_digest(reversed(rows)) == dataset_digest(rows)


# --- stats --------------------------------------------------------------------------------


def test_estimator_domain_errors_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^k must be at least 1$"):
        check_counts(3, 1, 0)
    with pytest.raises(ValueError, match=r"^need 0 <= c <= n, got c=4, n=3$"):
        check_counts(3, 4, 2)


def test_summaries_normalize_decisions_and_the_label_alike() -> None:
    row = record("r", expected="Deny")
    summary = summarize_attempts(row, attempts(row.id, [" DENY", "deny ", None]), 2, STRIP_CASEFOLD)
    assert (summary.valid, summary.correct, summary.errors) == (2, 2, 1)
    assert summary.row_class is RowClass.STABLE_CORRECT
    wrong = summarize_attempts(row, attempts(row.id, ["approve", "APPROVE"]), 2, CASEFOLD)
    assert (wrong.correct, wrong.row_class) == (0, RowClass.STABLE_WRONG)
    flip = summarize_attempts(row, attempts(row.id, ["deny", "deny", "approve"]), 3, CASEFOLD)
    assert flip.row_class is RowClass.FLIP
    single = summarize_attempts(record("s"), attempts("s", ["deny"]), 1, EXACT)
    assert single.row_class is RowClass.STABLE_CORRECT


def test_metrics_count_every_row_and_every_attempt() -> None:
    rows = [record("a"), record("b"), record("c")]
    by_row = {
        "a": attempts("a", ["deny", "deny", "deny"]),
        "b": attempts("b", ["deny", "deny", "deny"]),
        "c": attempts("c", ["approve", None, "approve", "approve"]),
    }
    metrics = compute_metrics(summarize_run(rows, by_row, 3, EXACT), 3)
    assert metrics.k == 3
    assert metrics.classes[RowClass.STABLE_CORRECT] == 2
    assert metrics.classes[RowClass.STABLE_WRONG] == 1
    assert (metrics.attempts, metrics.valid, metrics.errors) == (10, 9, 1)
    assert metrics.pass_k == pytest.approx(2 / 3)


def test_summarize_run_reads_the_phases_asked_for_and_rows_without_attempts() -> None:
    rows = [record("r"), record("none")]
    by_row = {
        "r": attempts("r", ["deny"] * 3) + attempts("r", ["approve"], start=4, phase=Phase.CONFIRM)
    }
    main_only = summarize_run(rows, by_row, 3, EXACT)
    assert [s.row_class for s in main_only] == [RowClass.STABLE_CORRECT, RowClass.UNCLASSIFIED]
    everything = summarize_run(rows, by_row, 3, EXACT, phases=None)
    assert everything[0].row_class is RowClass.FLIP
    confirm_only = summarize_run(rows, by_row, 1, EXACT, phases=[Phase.CONFIRM])
    assert confirm_only[0].row_class is RowClass.STABLE_WRONG


# --- shards -------------------------------------------------------------------------------


def test_one_shard_of_one_is_the_whole_dataset() -> None:
    assert Shard(1, 1).count == 1
    assert set(assign_shards(["a", "b", "c"], 1).values()) == {1}


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0"])
def test_a_shard_that_does_not_exist_is_a_usage_error_with_the_fix(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_shard(text)
    assert caught.value.where == "--shard"
    assert caught.value.hint == "use I/N with 1 <= I <= N, e.g. --shard 2/4"


def test_text_that_is_not_a_shard_is_a_usage_error_with_the_fix() -> None:
    with pytest.raises(UsageError) as caught:
        parse_shard("half")
    assert caught.value.message == "'half' is not a shard"
    assert caught.value.where == "--shard"
    assert caught.value.hint == "write I/N, e.g. --shard 2/4 for the second of four shards"


def test_assigning_to_no_shards_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        assign_shards(["a"], 0)
    assert caught.value.message == "cannot split rows into 0 shards"
    assert caught.value.where == "--shard"


def test_shard_sizes_count_each_shard_in_order() -> None:
    assert shard_sizes({"a": 1, "b": 2, "c": 2, "d": 3}, 3) == (1, 2, 1)


# --- uncertainty --------------------------------------------------------------------------


def test_split_error_detail_separates_the_reason_from_the_stderr_tail() -> None:
    assert split_error_detail(None) == ("", "")
    assert split_error_detail("") == ("", "")
    assert split_error_detail(" timed out \n") == ("timed out", "")
    detail = "exited with status 1\nstderr (last 2000 chars): line one\nline two\n"
    assert split_error_detail(detail) == ("exited with status 1", "line one\nline two\n")
    # Only the lead of the tail is taken off, never a later line that looks like it.
    again = "boom\nstderr (last 9 chars): stderr (last 9 chars): x"
    assert split_error_detail(again) == ("boom", "stderr (last 9 chars): x")


def test_an_error_bar_of_nothing_counts_what_it_left_out() -> None:
    empty = mean_error_bar([], excluded=2)
    assert (empty.estimate, empty.se, empty.low, empty.high) == (None, None, None, None)
    assert (empty.n, empty.excluded) == (0, 2)
    one = mean_error_bar([0.5], ["c1"], excluded=1)
    assert (one.estimate, one.se, one.low, one.high) == (0.5, None, None, None)
    assert (one.n, one.excluded, one.method, one.clusters) == (1, 1, "clustered", 1)
    assert one.interval == INTERVAL_SHARE
    assert mean_error_bar([0.5], difference=True).interval == INTERVAL_DIFFERENCE


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.0, 0.2, WITHIN_NOISE),
        (-0.2, 0.0, WITHIN_NOISE),
        (0.01, 0.2, BETTER),
        (-0.2, -0.01, WORSE),
        (None, 0.2, TOO_FEW_ROWS),
        (0.1, None, TOO_FEW_ROWS),
    ],
)
def test_a_verdict_needs_the_whole_interval_on_one_side_of_zero(
    low: float | None, high: float | None, verdict: str
) -> None:
    bar = ErrorBar(0.1, 0.05, low, high, 10, interval=INTERVAL_DIFFERENCE)
    assert verdict_of(bar) == verdict


def test_p_values_one_double_away_from_alpha_say_which_side_they_are_on() -> None:
    # 15 significant digits print both neighbours of 0.05 as "0.05"; 17 tell any
    # two doubles apart, so the shown number stays on the p-value's side.
    below, above = math.nextafter(0.05, 0.0), math.nextafter(0.05, 1.0)
    assert p_value_text(below) == "0.049999999999999996"
    assert p_value_text(above) == "0.05000000000000001"


def test_p_values_outside_zero_to_one_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^a p-value is in \[0, 1\], got 1.5$"):
        p_value_text(1.5)
    assert p_value_text(0.05) == "0.05"
    assert p_value_text(0.0500001) == "0.0500001"


def test_regularized_beta_at_and_beyond_its_ends() -> None:
    assert regularized_beta(0.0, 2.0, 3.0) == 0.0
    assert regularized_beta(-0.5, 2.0, 3.0) == 0.0
    assert regularized_beta(1.0, 2.0, 3.0) == 1.0
    assert regularized_beta(1.5, 2.0, 3.0) == 1.0
    # I_x(1, 1) = x, and I_x(a, b) = 1 - I_{1-x}(b, a) on both sides of the switch point.
    assert regularized_beta(0.3, 1.0, 1.0) == pytest.approx(0.3, abs=1e-14)
    for x in (0.2, 0.5, 0.75, 0.9):
        assert regularized_beta(x, 2.5, 4.0) == pytest.approx(
            1 - regularized_beta(1 - x, 4.0, 2.5), abs=1e-13
        )
    # I_x(2, 1) = x^2; I_x(1, 3) = 1 - (1 - x)^3, off and exactly at the continued
    # fraction's switch x = (a + 1) / (a + b + 2) (3/5 and 1/3).
    assert regularized_beta(0.4, 2.0, 1.0) == pytest.approx(0.16, abs=1e-14)
    assert regularized_beta(0.6, 2.0, 1.0) == pytest.approx(0.36, abs=1e-14)
    assert regularized_beta(0.4, 1.0, 3.0) == pytest.approx(1 - 0.6**3, abs=1e-14)
    assert regularized_beta(1 / 3, 1.0, 3.0) == pytest.approx(19 / 27, abs=1e-14)


def _clustered(result: CompareResult) -> CompareResult:
    rows = tuple(replace(r, cluster=f"c{i // 2}") for i, r in enumerate(result.rows))
    return replace(
        result,
        rows=rows,
        baseline=replace(result.baseline, rows=rows),
        candidate=replace(result.candidate, rows=rows),
    )


def test_analysis_uses_the_clusters_the_rows_carry_everywhere() -> None:
    result = _clustered(failed_scenario())
    analysis = analyze(result)
    for bar in (
        analysis.baseline.accuracy,
        analysis.baseline.pass_k,
        analysis.candidate.accuracy,
        analysis.candidate.pass_k,
        analysis.paired.difference,
    ):
        assert bar.method == "clustered"
        assert bar.clusters is not None and bar.clusters >= 2
    plain = analyze(failed_scenario())
    assert plain.candidate.pass_k.method == "rows"
    assert plain.candidate.pass_k.se != analysis.candidate.pass_k.se
    single = analyze_run(result.rows, result.candidate)[0]
    assert single.pass_k.method == "clustered" and single.accuracy.method == "clustered"


def _shouted(run: Run) -> Run:
    attempts_ = tuple(
        replace(a, decision=a.decision.upper()) if a.decision is not None else a
        for a in run.attempts
    )
    return replace(run, attempts=attempts_, settings=replace(run.settings, scoring=CASEFOLD))


def test_analysis_scores_with_the_runs_normalization() -> None:
    plain = analyze(failed_scenario())
    base = failed_scenario()
    shouted = replace(base, baseline=_shouted(base.baseline), candidate=_shouted(base.candidate))
    analysis = analyze(shouted)
    assert analysis.baseline.accuracy == plain.baseline.accuracy
    assert analysis.candidate.pass_k == plain.candidate.pass_k
    assert analysis.paired.difference == plain.paired.difference
    single, _ = analyze_run(shouted.rows, shouted.candidate)
    assert single.accuracy == plain.candidate.accuracy


def test_mcnemar_exact_p_against_the_binomial_tail() -> None:
    def exact(b: int, c: int) -> float:
        total = b + c
        tail = sum(math.comb(total, i) for i in range(min(b, c) + 1)) / 2**total
        return min(1.0, 2 * tail)

    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(1, 0) == 1.0
    assert mcnemar_exact_p(5, 0) == exact(5, 0) == 0.0625
    for b, c in [(3, 7), (7, 3), (2, 12), (10, 10), (0, 9)]:
        assert mcnemar_exact_p(b, c) == pytest.approx(exact(b, c), rel=1e-12)
    for b, c in [(-1, 2), (2, -1)]:
        with pytest.raises(ValueError, match=r"^counts must be >= 0$"):
            mcnemar_exact_p(b, c)


@pytest.mark.parametrize(
    ("p", "text"),
    [(0.049, "0.049"), (0.0504, "0.0504"), (0.0496, "0.0496"), (0.051, "0.051"), (0.21484, "0.21")],
)
def test_p_values_never_round_onto_or_across_alpha(p: float, text: str) -> None:
    assert p_value_text(p) == text


def _summary(row_id: str, valid: int, correct: int) -> RowSummary:
    cls = RowClass.STABLE_CORRECT if valid and correct == valid else RowClass.STABLE_WRONG
    if valid < 2:
        cls = RowClass.UNCLASSIFIED
    return RowSummary(row_id, cls, valid, correct, 3 - valid, ())


def test_paired_comparison_skips_every_row_missing_a_side_and_counts_them() -> None:
    base = [_summary("a", 3, 3), _summary("b", 0, 0), _summary("c", 3, 1), _summary("d", 0, 0)]
    cand = [_summary("a", 3, 1), _summary("b", 3, 3), _summary("c", 3, 3), _summary("d", 3, 0)]
    paired = paired_comparison(base, cand)
    assert paired.difference.excluded == 2
    assert paired.difference.n == 2
    assert paired.difference.estimate == pytest.approx(((1 / 3 - 1) + (1 - 1 / 3)) / 2)


def test_power_reads_every_usable_row_and_says_its_design_when_it_cannot_estimate() -> None:
    rows = [_summary("a", 0, 0), _summary("b", 3, 3), _summary("c", 3, 1), _summary("d", 3, 2)]
    power = power_analysis(rows)
    assert (power.rows, power.design) == (3, "projected")
    lone = power_analysis([_summary("b", 3, 3)])
    assert (lone.rows, lone.design, lone.variance) == (1, "projected", None)
    paired = paired_power(rows, [_summary("a", 3, 3), *rows[1:]])
    assert (paired.rows, paired.design) == (3, "paired")


def test_clustered_se_edges() -> None:
    with pytest.raises(ValueError, match=r"^values and clusters must have the same length$"):
        clustered_se([0.1, 0.2], ["a"])
    assert clustered_se([0.0, 1.0], ["a", "b"]) is not None  # two rows, two clusters
    assert clustered_se([0.0, 1.0], ["a", "a"]) is None  # one cluster


def test_a_pass_curve_of_no_rows_is_empty() -> None:
    assert pass_curve([]) == PassCurve(0, ())
    assert pass_curve([(3, 2)]).rows == 1


# --- uncertainty: pinned where mutation testing found slack ---------------------------------


@pytest.mark.parametrize("t", [0.0, 0.25, 0.5, 0.999, -0.5, 3.0])
def test_student_t_cdf_against_its_closed_forms_on_both_sides_of_zero(t: float) -> None:
    # df = 1 is Cauchy: 1/2 + atan(t)/pi; df = 2: 1/2 + t / (2 sqrt(2 + t^2)).
    assert student_t_cdf(t, 1.0) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-14)
    assert student_t_cdf(t, 2.0) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-14)


@pytest.mark.parametrize("df", [0.0, -1.0])
def test_student_t_without_degrees_of_freedom_is_refused(df: float) -> None:
    with pytest.raises(ValueError, match=r"^degrees of freedom must be > 0$"):
        student_t_cdf(1.0, df)


def test_an_error_bar_without_an_interval_writes_no_interval() -> None:
    bar = ErrorBar(0.5, None, None, None, 1, 2, "clustered", 1, INTERVAL_SHARE)
    assert bar.to_json() == {
        "estimate": 0.5,
        "se": None,
        "ci95": None,
        "interval": "agresti-coull-t",
        "n": 1,
        "excluded": 2,
        "method": "clustered",
        "clusters": 1,
    }


def test_a_cluster_named_like_a_row_number_is_not_that_row() -> None:
    # Row 1 has no cluster: it is a cluster of its own, not the cluster named "1".
    assert mean_error_bar([0.2, 0.8, 0.5], ["1", None, "x"]).clusters == 3
    assert mean_error_bar([0.2, 0.8, 0.5], ["1", "1", "x"]).clusters == 2


def test_one_cluster_of_many_rows_has_no_interval() -> None:
    assert share_interval([0.2, 0.8], ["a", "a"]) is None
    assert difference_interval([0.2, 0.8], ["a", "a"]) is None
    assert mean_error_bar([0.2, 0.8], ["a", "a"]) == ErrorBar(
        0.5, None, None, None, 2, 0, "clustered", 1, INTERVAL_SHARE
    )


def test_intervals_refuse_clusters_that_do_not_match_the_rows() -> None:
    with pytest.raises(ValueError):
        share_interval([1.0, 0.0, 1.0], ["a", "b"])
    with pytest.raises(ValueError):
        difference_interval([1.0, 0.0, -1.0], ["a", "b"])


def test_a_difference_interval_is_clipped_to_minus_one_and_one() -> None:
    # Two rows: t_{0.975, 1} = 12.7 makes the half-width 4.5, clipped on both sides.
    assert difference_interval([-1.0, -1.0]) == (-1.0, 1.0)
    assert difference_interval([1.0, 1.0]) == (-1.0, 1.0)
    # Ten rows all -1: centre -10/12, residual squares 10/36 + (60.5 + 0.5 + 25)/36 = 8/3.
    low, high = difference_interval([-1.0] * 10) or (None, None)
    assert low == -1.0
    assert high == pytest.approx(-5 / 6 + 2.262157162798205 * math.sqrt(8 / 3) / 12, abs=1e-12)
    low, high = difference_interval([1.0] * 10) or (None, None)
    assert high == 1.0
    assert low == pytest.approx(5 / 6 - 2.262157162798205 * math.sqrt(8 / 3) / 12, abs=1e-12)


def test_a_clustered_difference_interval_by_hand() -> None:
    # Differences .5 .5 | 0 0 | 1 1 | .5 .5 in four clusters; Agresti-Min pseudo-rows
    # +1 and -1 (weight 1/2) and 0 (weight 1): centre (4 + 0) / (8 + 2) = .4.
    # Cluster residual sums .2, -.8, 1.2, .2 -> squares 2.16; pseudo-rows
    # .5 * .36 + .5 * 1.96 + .16 = 1.32; t_{0.975, 3} (4 clusters, not 8 rows).
    values = [0.5, 0.5, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5]
    clusters = ["a", "a", "b", "b", "c", "c", "d", "d"]
    half = 3.182446305284263 * math.sqrt(2.16 + 1.32) / 10
    low, high = difference_interval(values, clusters) or (None, None)
    assert low == pytest.approx(0.4 - half, abs=1e-12)
    assert high == pytest.approx(0.4 + half, abs=1e-12)
    base = [_summary(r, 2, 0) for r in "abcdefgh"]
    cand = [_summary(r, 2, round(v * 2)) for r, v in zip("abcdefgh", values, strict=True)]
    paired = paired_comparison(base, cand, dict(zip("abcdefgh", clusters, strict=True)))
    assert (paired.difference.low, paired.difference.high) == (low, high)
    assert (paired.difference.method, paired.difference.clusters) == ("clustered", 4)


def test_paired_comparison_and_power_read_past_a_row_the_baseline_lacks() -> None:
    base = [_summary("a", 3, 3), _summary("b", 3, 0), _summary("c", 3, 1)]
    cand = [_summary("new", 3, 3), _summary("a", 3, 0), _summary("b", 3, 3), _summary("c", 3, 1)]
    paired = paired_comparison(base, cand)
    assert (paired.difference.n, paired.difference.estimate) == (3, 0.0)
    assert (paired.b, paired.c) == (1, 1)
    power = paired_power(base, cand)
    assert power.rows == 3
    assert power.variance == pytest.approx(1.0)  # differences -1, 1, 0


def test_a_pass_curve_stops_at_max_j() -> None:
    # One row, 4 valid, 2 right: pass^1 = 1/2, pass^2 = C(2,2)/C(4,2) = 1/6,
    # pass@2 = 1 - C(2,2)/C(4,2) = 5/6; j = 5 is past the row's attempts.
    two = pass_curve([(4, 2)], max_j=2)
    assert [(p.j, p.pass_hat, p.pass_at, p.short_rows) for p in two.points] == [
        (1, 0.5, 0.5, 0),
        (2, pytest.approx(1 / 6), pytest.approx(5 / 6), 0),
    ]
    five = pass_curve([(4, 2)], max_j=5)
    assert five.points[-1] == CurvePoint(5, 0.0, 0.0, 1)


def test_check_stability_of_rows_without_attempts_or_without_valid_ones() -> None:
    rows = [record("none"), record("errors"), record("ok")]
    by_row = {
        "errors": attempts("errors", [None, None]),
        "ok": attempts("ok", [("deny", {"w": "1"}), ("deny", {"w": "2"})]),
    }
    assert check_stability(rows, by_row, EXACT) == (CheckStability("w", 1, 1, ("ok",)),)


def test_a_check_seen_once_does_not_hide_the_checks_after_it() -> None:
    rows = [record("r")]
    by_row = {"r": attempts("r", [("deny", {"proof": "yes", "w": "ok"}), ("deny", {"w": "bad"})])}
    assert check_stability(rows, by_row, EXACT) == (
        CheckStability("proof", 0, 0, ()),
        CheckStability("w", 1, 1, ("r",)),
    )


def test_a_check_reported_twice_in_one_attempt_counts_once_per_row() -> None:
    # The agent protocol sends an object, but an imported log may repeat a name.
    rows = [record("same"), record("varies")]
    by_row = {
        "same": [
            Attempt("same", i, Phase.MAIN, "deny", checks=(("w", "1"), ("w", "1"))) for i in (1, 2)
        ],
        "varies": [
            Attempt("varies", i, Phase.MAIN, "deny", checks=(("w", "1"), ("w", "2")))
            for i in (1, 2)
        ],
    }
    assert check_stability(rows, by_row, EXACT) == (CheckStability("w", 2, 1, ("varies",)),)


def test_power_of_rows_with_one_valid_attempt_each() -> None:
    # No row has 2 valid attempts: no within-row noise to estimate, and a
    # future comparison of 2 rows flags no drop 80% of the time.
    power = power_analysis([_summary("a", 1, 1), _summary("b", 1, 0)])
    assert power == Power(
        rows=2,
        design="projected",
        k=1.0,
        variance=0.0,
        within=0.0,
        between=0.0,
        within_share=None,
        mde=None,
        mde_more_rows=None,
        mde_more_k=None,
        mde_k_infinite=None,
    )
    assert power.advice is None


def _mixed_settings() -> CompareResult:
    # The baseline was recorded with k = 2 and exact scoring, the candidate with
    # k = 3 and casefolding: the analysis reads both with the candidate's (the gate's).
    rows = [record("a"), record("b")]
    base = run_of(
        rows,
        attempts("a", ["DENY"] * 3) + attempts("b", ["deny"] * 2),
        version=Version.BASELINE,
        k=2,
    )
    cand = run_of(rows, attempts("a", ["deny"] * 3) + attempts("b", ["deny"] * 3))
    cand = replace(cand, settings=replace(cand.settings, scoring=CASEFOLD))
    comparison, gate = evaluate(rows, base, cand, ratchet=frozenset(), policy=GatePolicy())
    return CompareResult(tuple(rows), base, cand, frozenset(), GatePolicy(), comparison, gate)


def test_analysis_reads_the_baseline_with_the_candidates_k_and_scoring() -> None:
    result = _mixed_settings()
    analysis = analyze(result)
    assert analysis.k == 3
    assert analysis.baseline.accuracy.estimate == 1.0  # "DENY" is right, casefolded
    assert analysis.baseline.pass_k.estimate == 0.5  # row b: 2 valid attempts < k = 3
    assert analysis.candidate.pass_k.estimate == 1.0
    # On its own the baseline run is read with its own settings, unless told otherwise.
    own, _ = analyze_run(result.rows, result.baseline)
    assert (own.accuracy.estimate, own.pass_k.estimate) == (0.5, 0.5)  # exact: a 0/3, b 2/2
    assert len(own.curve.points) == 3
    told, _ = analyze_run(result.rows, result.baseline, k=3, scoring=CASEFOLD)
    assert (told.accuracy.estimate, told.pass_k.estimate) == (1.0, 0.5)


def test_analysis_uses_the_clusters_it_is_given_on_both_sides() -> None:
    analysis = analyze(_mixed_settings(), {"a": "g1", "b": "g2"})
    for bar in (analysis.baseline.accuracy, analysis.candidate.accuracy, analysis.candidate.pass_k):
        assert (bar.method, bar.clusters) == ("clustered", 2)
    assert analyze(_mixed_settings()).candidate.accuracy.method == "rows"


# --- model and stats: what reports print ------------------------------------------------------


@pytest.mark.parametrize(
    ("commit", "dirty", "label"),
    [
        ("0123456789abcdef", False, "0123456"),
        ("0123456789abcdef", True, "0123456 (+ uncommitted changes)"),
        (None, True, "uncommitted changes"),
        (None, False, ""),
        ("", True, "uncommitted changes"),
    ],
)
def test_agent_label_names_the_commit_and_uncommitted_changes(
    commit: str | None, dirty: bool, label: str
) -> None:
    assert AgentInfo(Version.CANDIDATE, "agent", commit, dirty).label() == label


def test_metrics_json_lists_every_class_even_when_built_without_counts() -> None:
    metrics = Metrics(rows=0, k=3, mean_accuracy=None, pass_k=None, flip_rate=None)
    assert metrics.to_json()["classes"] == {
        "stable-correct": 0,
        "stable-wrong": 0,
        "flip": 0,
        "unclassified": 0,
    }
