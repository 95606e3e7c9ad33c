"""The gated-row rule (core/sequential.py): boundaries, verdicts on hand-computed cases,
its bound on attempts, its determinism, and the strict rule as passk always had it."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from passk_action.core.model import Attempt, EvalSettings, Phase, Scoring, Version
from passk_action.core.sequential import (
    LIKELIER,
    SEQUENTIAL,
    STRICT,
    Decision,
    Ending,
    Finding,
    GatedKind,
    Outcome,
    Request,
    RuleSettings,
    SideAttempts,
    SprtSpec,
    boundaries,
    gated_kind,
    judge,
    judge_row,
    log_likelihood_ratio,
    read,
    score,
    unable,
)
from passk_action.report.reasons import judgement
from support.runs import record
from support.words import said

R, W, E = Outcome.RIGHT, Outcome.WRONG, Outcome.ERROR
DEFAULT = RuleSettings(rule=SEQUENTIAL)
MNB = GatedKind.MUST_NOT_BREAK


def side(text: str, main: int = 3) -> SideAttempts:
    """'RRW.' -> outcomes (R right, W wrong, E error); the first ``main`` are main."""
    return SideAttempts(tuple({"R": R, "W": W, "E": E}[c] for c in text), main)


def verdict(cand: str, base: str = "RRR", settings: RuleSettings = DEFAULT, **kw: object):  # type: ignore[no-untyped-def]
    options = {"kind": MNB, "k": 3, **kw}
    return judge(side(cand), side(base), settings, **options)  # type: ignore[arg-type]


def play(  # type: ignore[no-untyped-def]
    cand: list[Outcome], base: list[Outcome], settings: RuleSettings, more_cand, more_base
):
    """Judge a row, run what it asks for (``more_*(n)`` -> n outcomes), until it decides."""
    for _round in range(100):
        v = judge(
            SideAttempts(tuple(cand), 3), SideAttempts(tuple(base), 3), settings, kind=MNB, k=3
        )
        if v.decision is not Decision.MORE:
            return v
        for request in v.requests:
            if request.version is Version.CANDIDATE:
                cand += more_cand(request.attempts)
            else:
                base += more_base(request.attempts)
    pytest.fail("the rule kept asking")


# ----------------------------------------------------------------- boundaries


def test_log_likelihood_ratio_by_hand() -> None:
    # One wrong: ln(0.3 / 0.01) = ln 30; one right: ln(0.7 / 0.99).
    assert log_likelihood_ratio(1, 1, 0.99, 0.7) == pytest.approx(math.log(30))
    assert log_likelihood_ratio(1, 0, 0.99, 0.7) == pytest.approx(math.log(0.7 / 0.99))
    assert log_likelihood_ratio(10, 2, 0.99, 0.7) == pytest.approx(
        2 * math.log(30) + 8 * math.log(0.7 / 0.99)
    )


def test_default_candidate_boundaries_by_hand() -> None:
    """Wald's thresholds ln(0.9 / 0.001) = 6.802 and ln(0.1 / 0.999) = -2.302.

    A right answer moves the ratio by ln(0.7 / 0.99) = -0.3466, a wrong one by
    ln 30 = 3.4012: 7 right answers reach -2.43 (6 only -2.08); one wrong
    needs (3.4012 + 2.302) / 0.3466 = 16.5 -> 17 rights, 18 answers; 3 wrong
    in 12 answers give 10.20 - 3.12 = 7.08 >= 6.80, in 13 answers 6.74 < 6.80.
    """
    b = boundaries(DEFAULT.candidate_test)
    assert (b.pass_up_to[6], b.pass_up_to[7]) == (-1, 0)
    assert (b.pass_up_to[17], b.pass_up_to[18]) == (0, 1)
    assert (b.pass_up_to[28], b.pass_up_to[29]) == (1, 2)
    assert b.block_from[2] == 2  # ln 900 = 2 ln 30 exactly: the tie reaches the threshold
    assert (b.block_from[12], b.block_from[13]) == (3, 4)
    assert (b.block_from[23], b.block_from[24]) == (4, 5)
    # The 40th answer decides by the likelier hypothesis: 4 ln 30 > 36 x 0.3466 > 3 ln 30 ...
    assert b.block_from[40] == 4 and b.pass_up_to[40] == 3
    for n in range(1, 41):  # ... and everywhere the two regions never overlap
        assert b.pass_up_to[n] < b.block_from[n]


def test_baseline_boundaries_only_lift_on_crossing() -> None:
    b = boundaries(DEFAULT.baseline_test)
    assert (b.block_from[20], b.block_from[21]) == (3, 4)  # 3 wrong within 20 answers
    assert b.pass_up_to[24] == -1 and b.pass_up_to[25] == 0
    # Truncated without crossing: "not shown to vary" (the block stands).
    assert b.pass_up_to[60] == b.block_from[60] - 1
    assert log_likelihood_ratio(60, b.block_from[60] - 1, 0.99, 0.9) < math.log(0.9 / 0.005)


def test_rights_to_pass_is_what_ends_the_test() -> None:
    b = boundaries(DEFAULT.candidate_test)
    assert b.rights_to_pass(3, 0) == 4
    assert b.rights_to_pass(3, 1) == 15
    assert b.rights_to_pass(39, 3) == 1  # the truncation ends it whatever comes
    with pytest.raises(ValueError):
        b.rights_to_pass(40, 0)


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="rule"):
        RuleSettings(rule="lenient")
    with pytest.raises(ValueError, match="unreliable < reliable"):
        RuleSettings(unreliable=0.995)
    with pytest.raises(ValueError, match="alpha"):
        RuleSettings(alpha=0.0)
    with pytest.raises(ValueError, match="max_attempts"):
        RuleSettings(max_attempts=30)
    with pytest.raises(ValueError, match="truncation"):
        SprtSpec(0.99, 0.7, 0.001, 0.1, 40, "coin")


# ------------------------------------------------------------------- verdicts


def test_three_right_main_answers_ask_for_four_more() -> None:
    v = verdict("RRR")
    assert v.decision is Decision.MORE and v.finding is Finding.UNDECIDED
    assert v.requests == (Request(Version.CANDIDATE, 4),)
    assert v.baseline.ending is Ending.NOT_TESTED


def test_seven_right_answers_pass() -> None:
    v = verdict("RRRRRRR")
    assert (v.decision, v.finding, v.requests) == (Decision.PASS, Finding.RELIABLE, ())
    assert not v.unconfirmed_wrong


def test_one_wrong_is_within_chance_after_eighteen_answers() -> None:
    undecided = verdict("RRW" + "R" * 14)
    assert undecided.decision is Decision.MORE
    assert undecided.requests == (Request(Version.CANDIDATE, 1),)
    v = verdict("RRW" + "R" * 15)
    assert (v.decision, v.finding) == (Decision.PASS, Finding.WITHIN_CHANCE)
    assert (v.candidate.decisions, v.candidate.wrong) == (18, 1)
    assert v.unconfirmed_wrong  # listed in the comment, never folded away


def test_three_wrong_answers_need_the_baseline_then_block() -> None:
    v = verdict("WRW" + "W")
    assert v.candidate.ending is Ending.UNRELIABLE and v.candidate.read == 4
    # The baseline's 3 right main answers: 22 more right would show it reliable.
    assert (v.decision, v.requests) == (Decision.MORE, (Request(Version.BASELINE, 22),))
    blocked = verdict("WRWW", "R" * 25)
    assert (blocked.decision, blocked.finding) == (Decision.BLOCK, Finding.REGRESSION)
    assert blocked.baseline.ending is Ending.RELIABLE


def test_a_baseline_that_varies_as_much_lifts_the_block() -> None:
    v = verdict("WRWW", "RRRWRWRW")
    assert (v.decision, v.finding) == (Decision.PASS, Finding.BASELINE_VARIES)
    assert v.baseline.ending is Ending.UNRELIABLE
    assert v.unconfirmed_wrong


def test_the_words_say_varies_only_of_a_baseline_seen_right_and_wrong() -> None:
    # A must-not-break row both versions always answer wrong passes; it never varied.
    both = verdict("WWW", "WWW")
    assert (both.decision, both.finding) == (Decision.PASS, Finding.BASELINE_VARIES)
    said = judgement(both, DEFAULT)
    assert said == "wrong on every answer on both versions (stable-wrong): not a regression"
    assert "varies" not in judgement(verdict("WRWW", "WWW"), DEFAULT)
    assert "baseline was wrong on every answer" in judgement(verdict("WRWW", "WWW"), DEFAULT)
    # Seen right and wrong, the baseline does vary.
    assert "the baseline varies too" in judgement(verdict("WRWW", "RRRWRWRW"), DEFAULT)


def test_one_baseline_wrong_answer_does_not_lift_a_block() -> None:
    """Attack: the old rule's "baseline-varies" lifted a block on one wrong baseline answer."""
    pending = verdict("WWW", "RRRW" + "R" * 45)
    assert pending.requests == (Request(Version.BASELINE, 1),)  # one wrong: 50 answers
    v = verdict("WWW", "RRRW" + "R" * 46)
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.REGRESSION)


def test_nothing_more_possible_blocks_an_unended_test() -> None:
    v = verdict("RRR", more_possible=False)
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.UNDECIDED)
    v = verdict("WWW", more_possible=False)  # the baseline could not be re-run
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.REGRESSION)
    assert v.baseline.ending is Ending.UNDECIDED


def test_errors_are_not_answers() -> None:
    v = verdict("RER" + "RRRRE")
    assert v.decision is Decision.MORE and v.requests == (Request(Version.CANDIDATE, 1),)
    assert (v.candidate.attempts, v.candidate.decisions, v.candidate.errors) == (8, 6, 2)
    assert verdict("RER" + "RRRRER").decision is Decision.PASS


def test_a_candidate_that_errs_on_confirmations_never_passes() -> None:
    """Attack: a candidate that only crashes after its main attempts cannot run out the clock."""
    settings = DEFAULT
    errs = "RRR" + "E" * (settings.max_attempts - 3)
    v = verdict(errs)
    assert (v.decision, v.finding, v.requests) == (Decision.BLOCK, Finding.UNABLE, ())
    # Short of the agent shown unable, it is asked for what could still end the test.
    near = verdict("RRR" + "E" * (settings.unable_after - 1))
    assert near.requests == (Request(Version.CANDIDATE, 4),)


def test_errors_are_not_evidence_the_asking_ends_only_when_the_agent_is_shown_unable() -> None:
    """Issue 29: one errored round does not end a row's asking; unable_after errors in a row do."""
    after = DEFAULT.unable_after
    for errors in range(1, after):
        v = verdict("RRR" + "E" * errors)
        assert v.decision is Decision.MORE and v.requests, errors
    v = verdict("RRR" + "E" * after)
    assert (v.decision, v.finding, v.requests) == (Decision.BLOCK, Finding.UNABLE, ())
    # An answer between the errors starts the count again.
    v = verdict("RRR" + "E" * (after - 1) + "R" + "E" * (after - 1))
    assert v.decision is Decision.MORE


def test_answers_after_the_end_are_counted_not_read() -> None:
    v = verdict("RRRRRRR" + "WW")
    assert v.decision is Decision.PASS
    assert (v.candidate.read, v.candidate.wrong_read, v.candidate.wrong) == (7, 0, 2)


def test_main_attempts_are_one_look() -> None:
    """With k = 10 main answers, 7 right then 3 wrong is read whole: unreliable, not a pass."""
    v = judge(side("RRRRRRRWWW", 10), side("R" * 25, 10), DEFAULT, kind=MNB, k=10)
    assert v.candidate.ending is Ending.UNRELIABLE
    assert v.decision is Decision.BLOCK
    # Confirmations are read answer by answer: the same answers as confirmations pass at 7.
    assert read(side("RRRRRRRWWW", 3), boundaries(DEFAULT.candidate_test)).read == 7


def test_every_row_ends_within_the_attempt_bound() -> None:
    """Played to the end with random agents, a row never takes more than max_attempts a side."""
    rng = random.Random(7)
    settings = replace(DEFAULT, max_attempts=60)
    for _ in range(400):
        p_cand, p_base = rng.choice((0.5, 0.7, 0.9, 0.99)), rng.choice((0.7, 0.9, 0.99))
        err = rng.choice((0.0, 0.3))

        def draw(p: float, n: int, err: float = err) -> list[Outcome]:
            return [E if rng.random() < err else R if rng.random() < p else W for _ in range(n)]

        cand, base = draw(p_cand, 3), draw(p_base, 3)
        v = play(
            cand, base, settings, lambda n, p=p_cand: draw(p, n), lambda n, p=p_base: draw(p, n)
        )
        assert len(cand) <= settings.max_attempts and len(base) <= settings.max_attempts
        assert v.decision in (Decision.PASS, Decision.BLOCK)


def test_the_verdict_is_recomputed_from_the_recorded_attempts() -> None:
    """An audit (more_possible=False) of the attempts a finished row recorded gives its verdict."""
    rng = random.Random(11)
    for _ in range(200):
        cand = [R if rng.random() < 0.9 else W for _ in range(3)]
        base = [R if rng.random() < 0.97 else W for _ in range(3)]

        def draw(n: int) -> list[Outcome]:
            return [R if rng.random() < 0.9 else W for _ in range(n)]

        v = play(cand, base, DEFAULT, draw, draw)
        audit = judge(
            SideAttempts(tuple(cand), 3),
            SideAttempts(tuple(base), 3),
            DEFAULT,
            kind=MNB,
            k=3,
            more_possible=False,
        )
        assert audit == v
        assert audit.to_json() == v.to_json()


def test_errors_in_a_row_show_the_agent_unable_unless_they_are_an_outage() -> None:
    crash = SideAttempts((R, E, E, E, E, E), 1)
    assert unable(crash, 5) and not unable(crash, 6)
    outage = SideAttempts((R, E, E, E, E, E), 1, outages=(False,) + (True,) * 5)
    assert not unable(outage, 5)
    # One crash among the outages is not five crashes in a row either.
    mixed = SideAttempts((R, E, E, E, E, E), 1, outages=(False, True, False, False, False, False))
    assert not unable(mixed, 5) and unable(mixed, 4)


def test_judge_row_scores_recorded_attempts_in_order() -> None:
    scoring = Scoring(("strip", "casefold"))

    def attempt(number: int, phase: Phase, decision: str | None) -> Attempt:
        return Attempt("r", number, phase, decision, error=None if decision else "timeout")

    cand = [attempt(n, Phase.MAIN, " Deny ") for n in (1, 2, 3)] + [
        attempt(5, Phase.CONFIRM, None),
        attempt(4, Phase.CONFIRM, "approve"),
    ]
    scored = score(reversed(cand), record("r"), scoring)
    # A timeout is an outage: recorded as such, so it never shows the agent unable.
    assert scored == SideAttempts((R, R, R, W, E), 3, outages=(False,) * 4 + (True,))
    base = [attempt(n, Phase.MAIN, "deny") for n in (1, 2, 3)]
    v = judge_row(record("r"), base, cand, DEFAULT, kind=MNB, evals=EvalSettings(3, scoring))
    assert v.decision is Decision.MORE and v.candidate.wrong == 1


def test_verdict_json_is_complete() -> None:
    v = verdict("WRWW", "RRRWRWRW")
    assert v.to_json() == {
        "kind": "must-not-break",
        "rule": SEQUENTIAL,
        "decision": "pass",
        "finding": "baseline-varies",
        "candidate": {
            "attempts": 4,
            "decisions": 4,
            "wrong": 3,
            "errors": 0,
            "read": 4,
            "wrong_read": 3,
            "ending": "unreliable",
        },
        "baseline": {
            "attempts": 8,
            "decisions": 8,
            "wrong": 3,
            "errors": 0,
            "read": 8,
            "wrong_read": 3,
            "ending": "unreliable",
        },
        "requests": [],
    }


def test_gated_kind() -> None:
    def kind(mnb: bool, ratchet: bool, any_regression: bool, stable: bool) -> GatedKind | None:
        return gated_kind(
            must_not_break=mnb,
            in_ratchet=ratchet,
            block_on_any_regression=any_regression,
            baseline_stable_correct=stable,
        )

    assert kind(True, True, False, False) is GatedKind.RATCHET
    assert kind(True, False, False, False) is GatedKind.MUST_NOT_BREAK
    assert kind(False, False, True, True) is GatedKind.REGRESSION
    assert kind(False, False, True, False) is None
    assert kind(False, False, False, True) is None


# --------------------------------------------------------------------- strict

STRICT_SETTINGS = RuleSettings(rule=STRICT)


def strict(cand: str, base: str = "RRR", kind: GatedKind = MNB, more: bool = True):  # type: ignore[no-untyped-def]
    return judge(side(cand), side(base), STRICT_SETTINGS, kind=kind, k=3, more_possible=more)


def test_strict_confirms_a_lost_row_once_on_both_versions() -> None:
    v = strict("RWR")
    assert v.decision is Decision.MORE
    assert v.requests == (Request(Version.BASELINE, 6), Request(Version.CANDIDATE, 6))
    assert strict("RWR" + "R" * 6, "RRR" + "R" * 6).decision is Decision.BLOCK


def test_strict_any_wrong_answer_blocks() -> None:
    assert strict("RRR").decision is Decision.PASS
    assert strict("RWR", more=False).decision is Decision.BLOCK
    # A ratchet row blocks even when the baseline also erred in confirmation.
    assert strict("RWR" + "R" * 6, "RRRW" + "R" * 5, GatedKind.RATCHET).decision is Decision.BLOCK
    # A must-not-break row does not (the old "baseline-varies").
    lifted = strict("RWR" + "R" * 6, "RRRW" + "R" * 5)
    assert (lifted.decision, lifted.finding) == (Decision.PASS, Finding.BASELINE_VARIES)


def test_strict_unclassified() -> None:
    v = strict("RER", more=False)
    assert (v.decision, v.finding) == (Decision.BLOCK, Finding.UNCLASSIFIED)
    # A regression row: too few candidate answers is not stable-correct (as always) ...
    regression = strict("RER", kind=GatedKind.REGRESSION, more=False)
    assert (regression.decision, regression.finding) == (Decision.BLOCK, Finding.UNCLASSIFIED)
    # ... but too few baseline answers means nothing was stable-correct to lose.
    assert strict("RRR", "RER", GatedKind.REGRESSION, more=False).decision is Decision.PASS
    # A baseline that was not stable-correct never blocks a must-not-break row.
    assert strict("WWW", "RWR", more=False).decision is Decision.PASS


def test_strict_ignores_the_sequential_settings() -> None:
    assert STRICT_SETTINGS.candidate_test.truncation == LIKELIER
    assert strict("RRR").rule == STRICT
    with pytest.raises(ValueError, match="k must"):
        judge(side("RRR"), side("RRR"), DEFAULT, kind=MNB, k=0)


def test_a_strict_block_says_stable_wrong_of_a_baseline_that_never_varied() -> None:
    from passk_action.core.diff import Change, Confirmation, RowComparison
    from passk_action.core.gate import GatePolicy, strict_failure
    from passk_action.core.model import RowClass

    wrong, flip = RowClass.STABLE_WRONG, RowClass.FLIP
    row = RowComparison(
        "r9", False, True, wrong, wrong, Change.UNCHANGED, Confirmation.BASELINE_VARIES,
        wrong, wrong, None,
    )  # fmt: skip
    failure = strict_failure(row, GatePolicy())
    assert failure is not None and said(failure).endswith(
        "(the baseline is stable-wrong too; the ratchet blocks all the same)"
    )
    varies = replace(row, baseline_final_class=flip)
    blocked = strict_failure(varies, GatePolicy())
    assert blocked is not None and said(blocked).endswith(
        "(the baseline varies too; the ratchet blocks all the same)"
    )
