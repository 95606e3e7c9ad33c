"""``bench/gate_bound.py``: the designed screen's bound is a bound, and the rule meets it.

The benchmark plays each designed screen exactly (checked here against a seeded
simulation of the same boundaries), and takes R*(lambda) - 0.1 sum lambda - k as a lower
bound on what any screen of the class costs at 0.95.  Weak duality makes it one only if
the designed screen really is the least of its objective: no other screen, the rule's
second design included, may score lower for the same weights.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from passk_action.core.relative import screen_bounds
from passk_action.core.sequential import SPRT
from support.paths import REPO
from support.scripts import load_script

BENCH = REPO / "bench" / "gate_bound.py"


bench = load_script(BENCH, "passk_gate_bound_bench")
SECOND = replace(bench.RULE, screen=SPRT, pair_beta=0.02)


@pytest.fixture(scope="module")
def rows() -> list[object]:
    return bench.counts(bench.RULE, 60)


def simulate(bounds: object, q: float, runs: int, seed: int) -> tuple[float, float]:
    """P(confirmed) and mean answers read, the boundaries read answer by answer."""
    rng = random.Random(seed)
    confirmed = answers = 0
    for _ in range(runs):
        n = wrong = 0
        while True:
            n += 1
            answers += 1
            wrong += rng.random() >= q
            if wrong >= bounds.block_from[n]:  # type: ignore[attr-defined]
                confirmed += 1
                break
            if wrong <= bounds.pass_up_to[n]:  # type: ignore[attr-defined]
                break
    return confirmed / runs, answers / runs


@pytest.mark.parametrize("right", [57, 60])
def test_a_screen_is_played_exactly(right: int) -> None:
    bounds = screen_bounds(right, 60, bench.RULE)
    for q in (0.95, 0.75):
        exact = bench.play(bounds, q)
        confirmed, answers = simulate(bounds, q, 4000, seed=right)
        # 4,000 runs: a standard error under 0.8 points and 0.2 answers.
        assert abs(exact.confirmed - confirmed) < 0.025, (q, exact, confirmed)
        assert abs(exact.answers - answers) < 0.6, (q, exact, answers)


def test_the_bound_sits_below_the_rule_built(rows: list[object]) -> None:
    """The rule is in the class and catches 90% everywhere: it cannot cost less than the
    bound, and the designed screen (read, not in rounds) is the bound's own optimum."""
    found = bench.evaluate(rows, bench.WEIGHTS, bench.RULE)
    rule = bench.tuned(bench.RULE)
    assert rule.worst_catch >= bench.CATCH
    assert found.bound <= found.cost <= rule.cost <= bench.TARGET
    assert min(found.catches) >= bench.CATCH


def test_no_screen_scores_below_the_designed_one_for_its_weights(rows: list[object]) -> None:
    """Weak duality's premise: the second design's screen (an SPRT) and the two trivial
    screens score no better on the designed screen's objective."""
    found = bench.evaluate(rows, bench.WEIGHTS, bench.RULE)
    risk = found.bound + (1 - bench.CATCH) * sum(bench.WEIGHTS) + bench.K
    weights = bench.WEIGHTS
    # The SPRT screen of the second design, with the rule's confirmation after it.
    sprt = 0.0
    for row in rows:
        bounds = screen_bounds(row.c, 60, SECOND)  # type: ignore[attr-defined]
        harmless = bench.play(bounds, bench.HARMLESS)
        pairs = row.confirmation.pairs  # type: ignore[attr-defined]
        sprt += row.harmless * (harmless.answers + harmless.confirmed * pairs)  # type: ignore[attr-defined]
        for i, p in enumerate(bench.GRID):
            confirmed = bench.play(bounds, p - 0.2).confirmed
            caught = row.confirmation.caught[i]  # type: ignore[attr-defined]
            sprt += weights[i] * row.drops[i] * (1 - confirmed * caught)  # type: ignore[attr-defined]
    assert risk <= sprt
    passing = bench.K + sum(weights)
    confirming = sum(
        row.harmless * max(bench.K, row.confirmation.pairs)  # type: ignore[attr-defined]
        + sum(
            w * d * (1 - c)
            for w, d, c in zip(weights, row.drops, row.confirmation.caught, strict=True)  # type: ignore[attr-defined]
        )
        for row in rows
    )
    assert risk <= passing and risk <= confirming
    assert math.isfinite(risk)
