"""Gated rows played through the relative rule's verdicts alone, answers drawn at random."""

from __future__ import annotations

import math
import random

from passk_action.core.model import Version
from passk_action.core.operating import RelativeOC, relative_oc
from passk_action.core.relative import judge_relative
from passk_action.core.sequential import (
    Decision,
    GatedKind,
    Outcome,
    RuleSettings,
    SideAttempts,
)


def _side(answers: str, k: int, measured: int = 0) -> SideAttempts:
    codes = {"R": Outcome.RIGHT, "W": Outcome.WRONG}
    return SideAttempts(tuple(codes[c] for c in answers), k, measured)


def play(
    settings: RuleSettings, p_b: float, p_c: float, trials: int, seed: int, k: int = 3
) -> tuple[float, float]:
    """Block rate and mean candidate attempts of ``trials`` rows: a baseline right with
    p_b measured on ``settings.measure`` answers, a candidate right with p_c, every
    request :func:`judge_relative` makes answered from the same draws."""
    rng = random.Random(seed)

    def draw(p: float, n: int) -> str:
        return "".join("R" if rng.random() < p else "W" for _ in range(n))

    blocks = attempts = 0
    for _ in range(trials):
        recorded = draw(p_b, settings.measure)
        cand, fresh = draw(p_c, k), ""
        while True:
            base = _side(recorded + fresh, k, len(recorded) - k)
            verdict = judge_relative(_side(cand, k), base, settings, kind=GatedKind.MUST_NOT_BREAK)
            if verdict.decision is not Decision.MORE:
                break
            for request in verdict.requests:
                if request.version is Version.CANDIDATE:
                    cand += draw(p_c, request.attempts)
                else:
                    fresh += draw(p_b, request.attempts)
        blocks += verdict.decision is Decision.BLOCK
        attempts += len(cand)
    return blocks / trials, attempts / trials


def played_as_exact(
    settings: RuleSettings, p_b: float, p_c: float, trials: int, seed: int, k: int = 3
) -> tuple[RelativeOC, float]:
    """The exact figures at (p_b, p_c) and the mean candidate attempts of ``trials`` rows
    :func:`play`-ed, whose block rate is asserted within 4 standard errors of the exact."""
    exact = relative_oc(settings, k=k, candidate=p_c, baseline=p_b)
    simulated, attempts = play(settings, p_b, p_c, trials, seed, k)
    se = math.sqrt(max(exact.block * (1 - exact.block), 1e-4) / trials)
    assert abs(simulated - exact.block) <= 4 * se, (simulated, exact.block)
    return exact, attempts
