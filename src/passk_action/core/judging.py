"""A judge's own noise, told apart from the agent's.

A scorer program may be a judge that is not deterministic (an LLM asked
whether an answer is right).  passk asks it ``scoring.judge_repeats`` times
about each recorded answer and keeps every verdict (``Attempt.verdicts``), so
two kinds of disagreement can be counted apart:

- **the agent answered differently**: a row's attempts got different
  decisions (its flip rate, ``core/stats.py``);
- **the judge judged the same answer differently**: the verdicts on one
  answer disagree (:func:`judge_noise`).  Share = split answers / answers with
  two or more verdicts, per row and overall; an answer judged once cannot
  split (0 of 0: nothing measured, said as such).

An answer the judge split on takes the majority's decision (a tie is
``failure``: ``core/scoring.scorer_decision``).  But a gated row is never
blocked on the judge's disagreement alone (:func:`spare_judge_noise`): the
gate is decided again with every split answer of the candidate counted right;
a row that blocks only in the first decision is not blocked, and is named
with what to do (raise ``judge_repeats``, fix the rubric).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from .gate import GateDecision
from .model import Attempt, Run, Scoring
from .reasons import JudgeNoiseOnly, JudgeNoiseSeen, RowNoise
from .scoring import SUCCESS, judge_split


@dataclass(frozen=True, slots=True)
class JudgeNoise:
    """How often the judge disagreed with itself: answers it judged two or more times, and
    of those the ones its verdicts split on; ``rows`` the same per row (rows with a split
    only, in run order)."""

    judged: int
    split: int
    rows: tuple[tuple[str, int, int], ...] = ()

    @property
    def share(self) -> float | None:
        """split / judged; None when no answer was judged twice (nothing measured)."""
        return self.split / self.judged if self.judged else None


def judge_noise(attempts: Iterable[Attempt], scoring: Scoring) -> JudgeNoise:
    """Count the answers judged two or more times and those whose verdicts disagree."""
    per_row: dict[str, list[int]] = {}
    for attempt in attempts:
        if len(attempt.verdicts) < 2:
            continue
        counts = per_row.setdefault(attempt.row_id, [0, 0])
        counts[0] += 1
        counts[1] += judge_split(attempt, scoring.threshold)
    rows = tuple((row, n, s) for row, (n, s) in per_row.items() if s)
    return JudgeNoise(
        judged=sum(n for n, _ in per_row.values()),
        split=sum(s for _, s in per_row.values()),
        rows=rows,
    )


def given_the_doubt(run: Run) -> Run:
    """``run`` with every answer the judge split on counted right; ``run`` itself if none."""
    threshold = run.settings.scoring.threshold
    if not any(judge_split(a, threshold) for a in run.attempts):
        return run
    attempts = tuple(
        replace(a, decision=SUCCESS, error=None, detail=None) if judge_split(a, threshold) else a
        for a in run.attempts
    )
    return replace(run, attempts=attempts)


def spare_judge_noise(
    gate: GateDecision, candidate: Run, decide_again: Callable[[Run], GateDecision]
) -> GateDecision:
    """``gate`` less the row failures that only the judge's split verdicts make.

    ``decide_again`` decides the gate on another candidate run (the same
    rows, baseline and policy).  A failure with no row (spend, protected
    changes) always stays.
    """
    if gate.passed:
        return gate
    doubted = given_the_doubt(candidate)
    if doubted is candidate:
        return gate
    still = {f.id for f in decide_again(doubted).failures}
    spared = [f for f in gate.failures if f.id is not None and f.id not in still]
    if not spared:
        return gate
    failures = tuple(f for f in gate.failures if f not in spared)
    said = tuple(JudgeNoiseOnly(f.id) for f in spared if f.id is not None)
    return replace(gate, passed=not failures, failures=failures, warnings=(*gate.warnings, *said))


def noise_seen(baseline: JudgeNoise, candidate: JudgeNoise) -> JudgeNoiseSeen | None:
    """How often the judge split on the same answer, both versions and per row (the rows
    summed over both); None when no answer was judged twice."""
    if not baseline.judged + candidate.judged:
        return None
    per_row: dict[str, list[int]] = {}
    for row, n, s in (*baseline.rows, *candidate.rows):
        counts = per_row.setdefault(row, [0, 0])
        counts[0] += s
        counts[1] += n
    return JudgeNoiseSeen(
        baseline_split=baseline.split,
        baseline_judged=baseline.judged,
        candidate_split=candidate.split,
        candidate_judged=candidate.judged,
        rows=tuple(RowNoise(row, *per_row[row]) for row in sorted(per_row)),
    )
