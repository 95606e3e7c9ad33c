"""The row-by-row comparison and the gate, on runs built by hand.

The gate's row rules are tested under both rules: ``strict`` (the rule
passk had, which most tests here pin down) and ``sequential`` (the default:
its verdicts on recorded attempts, as ``passk gate`` recomputes them).
"""

from __future__ import annotations

from passk_action.core.diff import Change, Confirmation, first_divergent_check
from passk_action.core.gate import GatePolicy, ProtectedChange, Rule
from passk_action.core.model import Phase, RowClass, Version
from passk_action.core.protected import WrittenChange
from passk_action.core.result import evaluate
from passk_action.core.sequential import STRICT, Decision, Finding, RuleSettings
from support.runs import attempts, record, run_of
from support.words import said

RIGHT = ["deny", "deny", "deny"]


DEFAULT_POLICY = GatePolicy(rule=RuleSettings(rule=STRICT))
"""The strict rule: a wrong answer blocks at once, so three attempts show each rule."""
SEQUENTIAL = GatePolicy(rule=RuleSettings(rule="sequential"))


def _evaluate(rows, base, cand, ratchet=frozenset(), policy=DEFAULT_POLICY, **kw):  # type: ignore[no-untyped-def]
    baseline = run_of(rows, base, version=Version.BASELINE)
    candidate = run_of(rows, cand)
    return evaluate(rows, baseline, candidate, ratchet=frozenset(ratchet), policy=policy, **kw)


def test_gained_and_lost_lists_and_classes() -> None:
    rows = [record("lost"), record("gained"), record("same")]
    base = (
        attempts("lost", RIGHT)
        + attempts("gained", ["deny", "approve", "deny"])
        + attempts("same", RIGHT)
    )
    cand = (
        attempts("lost", ["deny", "approve", "deny"])
        + attempts("gained", RIGHT)
        + attempts("same", RIGHT)
    )
    comparison, gate = _evaluate(rows, base, cand)
    assert comparison.gained == ("gained",)
    assert comparison.lost == ("lost",)
    by_id = comparison.by_id()
    assert by_id["lost"].change is Change.LOST
    assert by_id["lost"].confirmation is None  # no confirmation attempts recorded
    assert gate.passed  # nothing must-not-break


def test_lost_is_kept_even_when_every_headline_number_improves() -> None:
    rows = [record(f"r{i}") for i in range(5)]
    base = attempts("r0", RIGHT)
    cand = attempts("r0", ["deny", "approve", "deny"])
    for i in range(1, 5):
        base += attempts(f"r{i}", ["approve"] * 3)
        cand += attempts(f"r{i}", RIGHT)
    comparison, _ = _evaluate(rows, base, cand)
    assert comparison.candidate_metrics.pass_k > comparison.baseline_metrics.pass_k  # type: ignore[operator]
    assert comparison.lost == ("r0",)


def test_confirmation_outcomes() -> None:
    rows = [record("varies"), record("confirmed"), record("gone")]
    base = (
        attempts("varies", RIGHT)
        + attempts("varies", ["deny", "approve", "deny"], start=4, phase=Phase.CONFIRM)
        + attempts("confirmed", RIGHT)
        + attempts("confirmed", RIGHT, start=4, phase=Phase.CONFIRM)
        + attempts("gone", RIGHT)
        + attempts("gone", RIGHT, start=4, phase=Phase.CONFIRM)
    )
    cand = (
        attempts("varies", ["approve", "deny", "deny"])
        + attempts("varies", ["approve", "deny", "deny"], start=4, phase=Phase.CONFIRM)
        + attempts("confirmed", ["approve", "deny", "deny"])
        + attempts("confirmed", ["deny", "approve", "deny"], start=4, phase=Phase.CONFIRM)
        + attempts("gone", [None, "deny", "deny"])
        + attempts("gone", RIGHT, start=4, phase=Phase.CONFIRM)
    )
    comparison, _ = _evaluate(rows, base, cand)
    by_id = comparison.by_id()
    assert by_id["varies"].confirmation is Confirmation.BASELINE_VARIES
    assert by_id["varies"].baseline_final_class is RowClass.FLIP
    assert by_id["confirmed"].confirmation is Confirmation.CONFIRMED_REGRESSION
    assert by_id["gone"].confirmation is Confirmation.NOT_REPRODUCED
    # The error in the main attempts is not a decision; over all six attempts
    # the candidate has five valid right answers: stable-correct in the end.
    assert by_id["gone"].candidate_class is RowClass.UNCLASSIFIED
    assert by_id["gone"].candidate_final_class is RowClass.STABLE_CORRECT


def test_a_side_whose_confirmation_attempts_all_failed_is_inconclusive_never_right() -> None:
    rows = [record("crashed"), record("base-crashed"), record("partly")]
    base = (
        attempts("crashed", RIGHT)
        + attempts("crashed", RIGHT, start=4, phase=Phase.CONFIRM)
        + attempts("base-crashed", RIGHT)
        + attempts("base-crashed", [None, None, None], start=4, phase=Phase.CONFIRM)
        + attempts("partly", RIGHT)
        + attempts("partly", RIGHT, start=4, phase=Phase.CONFIRM)
    )
    cand = (
        attempts("crashed", ["approve", "deny", "deny"])
        + attempts("crashed", [None, None, None], start=4, phase=Phase.CONFIRM)
        + attempts("base-crashed", ["approve", "deny", "deny"])
        + attempts("base-crashed", RIGHT, start=4, phase=Phase.CONFIRM)
        + attempts("partly", ["approve", "deny", "deny"])
        + attempts("partly", [None, "deny", None], start=4, phase=Phase.CONFIRM)
    )
    by_id = _evaluate(rows, base, cand)[0].by_id()
    assert by_id["crashed"].confirmation is Confirmation.INCONCLUSIVE
    assert by_id["base-crashed"].confirmation is Confirmation.INCONCLUSIVE
    assert by_id["partly"].confirmation is Confirmation.NOT_REPRODUCED


def test_first_divergent_check_walks_checks_in_order() -> None:
    ok = {"return_window": "ok", "proof_of_purchase": "present", "damage": "none"}
    late = {"return_window": "ok", "proof_of_purchase": "missing", "damage": "none"}
    base = attempts("r", [("approve", ok)] * 3)
    cand = attempts("r", [("approve", ok), ("deny", late), ("deny", late)])
    divergent = first_divergent_check(base, cand)
    assert divergent is not None
    assert divergent.name == "proof_of_purchase"
    assert divergent.baseline == (("present", 3),)
    assert divergent.candidate == (("missing", 2), ("present", 1))


def test_first_divergent_check_none_when_only_the_decision_differs() -> None:
    checks = {"return_window": "ok"}
    base = attempts("r", [("approve", checks)] * 3)
    cand = attempts("r", [("approve", checks), ("deny", checks), ("approve", checks)])
    assert first_divergent_check(base, cand) is None


def test_absent_check_counts_as_divergence() -> None:
    base = attempts("r", [("approve", {"a": "1", "b": "2"})] * 2)
    cand = attempts("r", [("approve", {"a": "1"})] * 2)
    divergent = first_divergent_check(base, cand)
    assert divergent is not None and divergent.name == "b"
    assert divergent.candidate == (("(absent)", 2),)


def test_gate_blocks_a_must_not_break_regression() -> None:
    rows = [record("m", mnb=True), record("x")]
    base = attempts("m", RIGHT) + attempts("x", RIGHT)
    cand = attempts("m", ["deny", "approve", "deny"]) + attempts("x", ["approve"] * 3)
    _, gate = _evaluate(rows, base, cand)
    assert not gate.passed
    assert [(f.id, f.rule) for f in gate.failures] == [("m", Rule.MUST_NOT_BREAK)]


def test_gate_blocks_an_unclassified_must_not_break_row_on_either_side() -> None:
    rows = [record("crash", mnb=True), record("basecrash", mnb=True)]
    base = attempts("crash", RIGHT) + attempts("basecrash", [None, None, "deny"])
    cand = attempts("crash", [None, None, None]) + attempts("basecrash", RIGHT)
    _, gate = _evaluate(rows, base, cand)
    assert [(f.id, f.rule) for f in gate.failures] == [
        ("crash", Rule.UNCLASSIFIED),
        ("basecrash", Rule.UNCLASSIFIED),
    ]
    assert "baseline" in said(gate.failures[1])


def test_ratchet_locks_a_row_even_when_the_baseline_varies_now() -> None:
    rows = [record("locked", mnb=True), record("free", mnb=True)]
    flip = ["deny", "approve", "deny"]
    base = attempts("locked", flip) + attempts("free", flip)
    cand = attempts("locked", flip) + attempts("free", flip)
    _, gate = _evaluate(rows, base, cand, ratchet={"locked"})
    assert [(f.id, f.rule) for f in gate.failures] == [("locked", Rule.RATCHET)]


def test_ratchet_row_that_lost_its_mark_is_still_locked() -> None:
    rows = [record("was-mnb", mnb=False)]
    _, gate = _evaluate(
        rows, attempts("was-mnb", RIGHT), attempts("was-mnb", ["approve"] * 3), ratchet={"was-mnb"}
    )
    assert [f.rule for f in gate.failures] == [Rule.RATCHET]


def test_baseline_varies_on_a_must_not_break_row_outside_the_ratchet_does_not_block() -> None:
    rows = [record("m", mnb=True)]
    base = attempts("m", RIGHT) + attempts(
        "m", ["approve", "deny", "deny"], start=4, phase=Phase.CONFIRM
    )
    cand = attempts("m", ["approve", "deny", "deny"]) + attempts(
        "m", RIGHT, start=4, phase=Phase.CONFIRM
    )
    comparison, gate = _evaluate(rows, base, cand)
    assert comparison.by_id()["m"].confirmation is Confirmation.BASELINE_VARIES
    assert gate.passed


def test_block_on_any_regression_policy() -> None:
    rows = [record("x")]
    base, cand = attempts("x", RIGHT), attempts("x", ["approve"] * 3)
    assert _evaluate(rows, base, cand)[1].passed
    _, gate = _evaluate(rows, base, cand, policy=GatePolicy(block_on_any_regression=True))
    assert [f.rule for f in gate.failures] == [Rule.REGRESSION]


def test_protected_changes_fail_unless_allowed() -> None:
    rows = [record("x")]
    change = ProtectedChange(
        "baseline-edited", WrittenChange("the pull request edits .passk/baseline.json")
    )
    _, gate = _evaluate(
        rows, attempts("x", RIGHT), attempts("x", RIGHT), protected_changes=[change]
    )
    assert [f.rule for f in gate.failures] == [Rule.PROTECTED_CHANGE]
    _, allowed = _evaluate(
        rows,
        attempts("x", RIGHT),
        attempts("x", RIGHT),
        protected_changes=[change],
        protected_changes_allowed=True,
    )
    assert allowed.passed and allowed.warnings


def test_check_flip_with_stable_decision_is_reported() -> None:
    rows = [record("r")]
    base = attempts("r", [("deny", {"window": "expired"})] * 3)
    cand = attempts(
        "r",
        [
            ("deny", {"window": "expired"}),
            ("deny", {"window": "borderline"}),
            ("deny", {"window": "expired"}),
        ],
    )
    comparison, _ = _evaluate(rows, base, cand)
    row = comparison.by_id()["r"]
    assert row.candidate_check_flips == ("window",)
    assert row.baseline_check_flips == ()


def test_a_recorded_failure_stands_and_no_label_allows_it() -> None:
    from passk_action.core.gate import RECORDED_FAILURE_KIND

    rows = [record("x")]
    standing = ProtectedChange(
        RECORDED_FAILURE_KIND, WrittenChange("an earlier run on this commit failed")
    )
    _, gate = _evaluate(
        rows,
        attempts("x", RIGHT),
        attempts("x", RIGHT),
        protected_changes=[standing],
        protected_changes_allowed=True,
    )
    assert [f.rule for f in gate.failures] == [Rule.RECORDED_FAILURE]
    assert not gate.passed


# --- the sequential rule (the default) --------------------------------------------------


def test_sequential_blocks_a_row_that_clearly_lost_its_reliability() -> None:
    rows = [record("m", mnb=True)]
    cand = attempts("m", ["approve"] * 3)
    _, gate = _evaluate(rows, attempts("m", RIGHT), cand, policy=SEQUENTIAL)
    [failure] = gate.failures
    assert (failure.id, failure.rule) == ("m", Rule.MUST_NOT_BREAK)
    assert said(failure).startswith(
        "must-not-break row is less reliable on the candidate: 3 wrong of 3 attempts; "
        "baseline 0 of 3; more wrong answers than a row right 99% of the time gives by chance"
    )
    assert gate.verdicts["m"].finding is Finding.REGRESSION


def test_sequential_does_not_block_on_one_wrong_answer_in_eighteen() -> None:
    rows = [record("m", mnb=True)]
    cand = attempts("m", ["deny", "approve", "deny"]) + attempts(
        "m", ["deny"] * 15, start=4, phase=Phase.CONFIRM
    )
    _, gate = _evaluate(rows, attempts("m", RIGHT), cand, policy=SEQUENTIAL)
    assert gate.passed
    verdict = gate.verdicts["m"]
    assert (verdict.decision, verdict.finding) == (Decision.PASS, Finding.WITHIN_CHANCE)
    assert verdict.unconfirmed_wrong


def test_sequential_cannot_judge_three_answers_and_says_so() -> None:
    """With nothing more recorded, three right answers are too few to pass a row, one wrong
    answer too few to block it: the gate, which never runs an agent, blocks as unjudged."""
    rows = [record("m", mnb=True), record("r"), record("x")]
    base = attempts("m", RIGHT) + attempts("r", RIGHT) + attempts("x", RIGHT)
    cand = attempts("m", RIGHT) + attempts("r", ["deny", "approve", "deny"]) + attempts("x", RIGHT)
    _, gate = _evaluate(rows, base, cand, ratchet={"r"}, policy=SEQUENTIAL)
    assert [(f.id, f.rule) for f in gate.failures] == [
        ("m", Rule.UNCLASSIFIED),
        ("r", Rule.RATCHET),
    ]
    assert said(gate.failures[0]) == (
        "must-not-break row cannot be judged on the candidate: 0 wrong of 3 attempts; "
        "baseline 0 of 3; too few answers to tell a row right 99% of the time from one right "
        "70% of the time"
    )
    assert set(gate.verdicts) == {"m", "r"}  # x is not gated


def test_sequential_regression_rows_are_the_baseline_stable_correct_ones() -> None:
    rows = [record("sc"), record("flip")]
    base = attempts("sc", RIGHT) + attempts("flip", ["deny", "approve", "deny"])
    cand = attempts("sc", ["approve"] * 3) + attempts("flip", ["approve"] * 3)
    policy = GatePolicy(block_on_any_regression=True)
    _, gate = _evaluate(rows, base, cand, policy=policy)
    assert [(f.id, f.rule) for f in gate.failures] == [("sc", Rule.REGRESSION)]
    assert said(gate.failures[0]).endswith("(gate.block_on_any_regression is on)")
    assert set(gate.verdicts) == {"sc"}
