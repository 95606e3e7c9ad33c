"""A judge's own noise, told apart from the agent's (``core/judging.py``), on hand-built runs.

The gate comes from ``core/result.evaluate``, the one path to a decision: a
must-not-break row the candidate loses only through answers the judge split
on is not blocked (named, with what to do); the control, where the judge said
wrong every time, blocks.
"""

from __future__ import annotations

from passk_action.core.gate import GatePolicy
from passk_action.core.judging import given_the_doubt, judge_noise
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowRecord,
    Run,
    Scoring,
    Verdict,
    Version,
)
from passk_action.core.result import evaluate
from passk_action.core.scoring import scorer_decision
from passk_action.core.sequential import STRICT, RuleSettings
from support.words import warned

SCORING = Scoring(by="command", command=("python3", "judge.py"), judge_repeats=3)
ROWS = (
    RowRecord("r1", "sha256:" + "1" * 64, "approve", True),
    RowRecord("r2", "sha256:" + "2" * 64, "deny", False),
)
RIGHT = (Verdict(correct=True),) * 3
WRONG = (Verdict(correct=False),) * 3
SPLIT = (Verdict(correct=True), Verdict(correct=False), Verdict(correct=False))


def _attempt(row: str, n: int, verdicts: tuple[Verdict, ...]) -> Attempt:
    unscored = Attempt(row, n, Phase.MAIN, None, error="unscored", answer=f"answer {n}")
    return scorer_decision(unscored, verdicts, SCORING)


def _run(version: Version, r1: list[tuple[Verdict, ...]]) -> Run:
    attempts = [_attempt("r1", n, v) for n, v in enumerate(r1, 1)]
    attempts += [_attempt("r2", n, RIGHT) for n in (1, 2, 3)]
    return Run(
        "1.0.0",
        "sha256:" + "a" * 64,
        EvalSettings(k=3, scoring=SCORING),
        AgentInfo(version, "agent"),
        "2026-12-02T00:00:00Z",
        ROWS,
        tuple(attempts),
    )


def _gate(candidate_r1: list[tuple[Verdict, ...]]) -> tuple[bool, tuple[str, ...], list[str]]:
    baseline = _run(Version.BASELINE, [RIGHT] * 3)
    candidate = _run(Version.CANDIDATE, candidate_r1)
    _, gate = evaluate(
        ROWS,
        baseline,
        candidate,
        ratchet=frozenset(),
        policy=GatePolicy(rule=RuleSettings(rule=STRICT)),
    )
    return gate.passed, warned(gate), [f.id or "" for f in gate.failures]


def test_a_split_judge_takes_the_majority_and_is_counted_as_noise() -> None:
    split = _attempt("r1", 1, SPLIT)
    assert split.decision == "failure"  # one right of three
    noise = judge_noise([split, _attempt("r1", 2, RIGHT), _attempt("r2", 1, WRONG)], SCORING)
    assert (noise.judged, noise.split, noise.rows) == (3, 1, (("r1", 2, 1),))
    assert noise.share == 1 / 3
    assert judge_noise([_attempt("r1", 1, (Verdict(correct=True),))], SCORING).share is None


def test_a_row_lost_only_on_the_judges_disagreement_is_not_blocked() -> None:
    passed, warnings, failures = _gate([RIGHT, SPLIT, RIGHT])

    assert passed and failures == []
    assert warnings[0].startswith("r1: blocked on the judge's disagreement alone")
    assert "raise scoring.judge_repeats" in warnings[0]
    assert warnings[1].startswith(
        "the judge judged the same answer differently on 1 of 12 answers "
        "(candidate 1 of 6, baseline 0 of 6) (rows: r1)"
    )


def test_control_a_row_the_judge_says_is_wrong_every_time_blocks() -> None:
    passed, warnings, failures = _gate([RIGHT, WRONG, RIGHT])

    assert not passed and failures == ["r1"]
    assert not any("disagreement alone" in w for w in warnings)


def test_a_split_beside_a_unanimous_wrong_answer_still_blocks() -> None:
    passed, _, failures = _gate([SPLIT, WRONG, RIGHT])

    assert not passed and failures == ["r1"]


def test_the_doubt_counts_split_answers_right_and_nothing_else() -> None:
    run = _run(Version.CANDIDATE, [SPLIT, WRONG, RIGHT])
    doubted = given_the_doubt(run)
    assert [a.decision for a in doubted.attempts[:3]] == ["success", "failure", "success"]
    assert given_the_doubt(_run(Version.CANDIDATE, [RIGHT] * 3)) is not None
