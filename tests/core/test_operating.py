"""The gate rule's operating characteristics (core/operating.py): the exact figures against
enumeration of every answer sequence and against simulation through the rule itself."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from passk_action.core.model import Version
from passk_action.core.operating import any_of, gate_oc, max_rounds, row_oc, side_oc
from passk_action.core.planning import Targets, suggest
from passk_action.core.sequential import (
    LIKELIER,
    RELIABLE_UNLESS_SHOWN,
    STRICT,
    Decision,
    Ending,
    GatedKind,
    Outcome,
    RuleSettings,
    SideAttempts,
    SprtSpec,
    boundaries,
    judge,
    read,
)

R, W = Outcome.RIGHT, Outcome.WRONG
SMALL = SprtSpec(0.95, 0.6, 0.05, 0.2, 8, LIKELIER)
"""A test short enough to enumerate every sequence of its answers (2^8)."""


def play_side(spec: SprtSpec, sequence: tuple[Outcome, ...], main: int) -> tuple[Ending, int, int]:
    """The rule's own loop on one side: main attempts, then what each round asks for."""
    bounds = boundaries(spec)
    made, rounds = main, 0
    while True:
        evidence = read(SideAttempts(sequence[:made], main), bounds)
        if evidence.ending is not Ending.UNDECIDED:
            return evidence.ending, made, rounds
        made += bounds.rights_to_pass(evidence.read, evidence.wrong_read)
        rounds += 1


@pytest.mark.parametrize("spec", [SMALL, SprtSpec(0.95, 0.6, 0.05, 0.2, 8, RELIABLE_UNLESS_SHOWN)])
@pytest.mark.parametrize("main", [1, 3, 5])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.97])
def test_side_oc_equals_enumeration(spec: SprtSpec, main: int, p: float) -> None:
    unreliable = attempts = rounds = 0.0
    most = 0
    for sequence in itertools.product((R, W), repeat=spec.max_decisions):
        weight = math.prod(p if o is R else 1 - p for o in sequence)
        ending, made, taken = play_side(spec, sequence, main)
        unreliable += weight * (ending is Ending.UNRELIABLE)
        attempts += weight * made
        rounds += weight * taken
        most = max(most, taken)
    oc = side_oc(spec, p, main)
    assert oc.unreliable == pytest.approx(unreliable, abs=1e-12)
    assert oc.attempts == pytest.approx(attempts, abs=1e-9)
    assert oc.rounds == pytest.approx(rounds, abs=1e-9)
    assert max_rounds(spec, main) == most


def test_row_oc_agrees_with_simulation_through_judge() -> None:
    """Both tests together, played by judge() with random agents: within 4 Monte Carlo SE."""
    settings = RuleSettings(rule="sequential")
    rng = random.Random(2026)
    cases = [(0.9, 0.9), (0.99, 0.7), (0.8, 0.8)]
    for p_base, p_cand in cases:
        exact = row_oc(settings, k=3, candidate=p_cand, baseline=p_base)
        trials, blocked, cand_made, base_extra = 3000, 0, 0, 0
        for _ in range(trials):
            cand = [R if rng.random() < p_cand else W for _ in range(3)]
            base = [R if rng.random() < p_base else W for _ in range(3)]
            while True:
                v = judge(
                    SideAttempts(tuple(cand), 3),
                    SideAttempts(tuple(base), 3),
                    settings,
                    kind=GatedKind.MUST_NOT_BREAK,
                    k=3,
                )
                if v.decision is not Decision.MORE:
                    break
                for r in v.requests:
                    p, target = (p_cand, cand) if r.version is Version.CANDIDATE else (p_base, base)
                    target += [R if rng.random() < p else W for _ in range(r.attempts)]
            blocked += v.decision is Decision.BLOCK
            cand_made += len(cand)
            base_extra += len(base) - 3
        se = math.sqrt(exact.block * (1 - exact.block) / trials)
        assert abs(blocked / trials - exact.block) < 4 * se + 1e-3, (p_base, p_cand)
        assert cand_made / trials == pytest.approx(exact.candidate_attempts, rel=0.05)
        assert base_extra / trials == pytest.approx(exact.baseline_extra, rel=0.15, abs=0.05)


def test_strict_closed_forms_by_hand() -> None:
    strict = RuleSettings(rule=STRICT)
    ratchet = row_oc(strict, k=3, candidate=0.99, baseline=0.99, kind=GatedKind.RATCHET)
    assert ratchet.block == pytest.approx(1 - 0.99**3)
    mnb = row_oc(strict, k=3, candidate=0.99, baseline=0.99)
    assert mnb.block == pytest.approx(0.99**9 * (1 - 0.99**3))
    assert mnb.candidate_extra == pytest.approx(6 * 0.99**3 * (1 - 0.99**3))
    # Issue 20's figures for the literal rule: 26% of harmless PRs at 10 rows, 78% at 50.
    assert gate_oc(strict, k=3, gated_rows=10, kind=GatedKind.RATCHET).false_block == (
        pytest.approx(0.2603, abs=1e-4)
    )
    assert gate_oc(strict, k=3, gated_rows=50, kind=GatedKind.RATCHET).false_block == (
        pytest.approx(0.7785, abs=1e-4)
    )


def test_the_default_rule_meets_issue_20s_goals() -> None:
    settings = RuleSettings()
    assert gate_oc(settings, k=3, gated_rows=50).false_block <= 0.05
    assert gate_oc(settings, k=3, gated_rows=10).false_block <= 0.01
    for accuracy in (0.99, 0.995, 0.999):
        assert gate_oc(settings, k=3, gated_rows=1, accuracy=accuracy).row_miss <= 0.10


def test_any_of() -> None:
    assert any_of(0.5, 2) == pytest.approx(0.75)
    assert any_of(1e-12, 10) == pytest.approx(1e-11, rel=1e-6)
    assert any_of(0.3, 0) == 0.0
    assert any_of(1.0, 3) == 1.0
    with pytest.raises(ValueError):
        any_of(1.5, 2)


def test_suggest_meets_its_targets_deterministically() -> None:
    plan = suggest(k=3, gated_rows=200, targets=Targets(false_block=0.05, miss=0.1))
    assert plan.met
    assert plan.oc.false_block <= 0.05 and plan.oc.row_miss <= 0.1
    assert suggest(k=3, gated_rows=200, targets=Targets(false_block=0.05, miss=0.1)) == plan
    unreachable = suggest(k=3, gated_rows=10, targets=Targets(false_block=1e-9, miss=1e-6))
    assert not unreachable.met


def test_inputs_are_checked() -> None:
    with pytest.raises(ValueError):
        row_oc(RuleSettings(), k=0, candidate=0.9, baseline=0.9)
    with pytest.raises(ValueError):
        side_oc(SMALL, 1.5)
    with pytest.raises(ValueError):
        gate_oc(RuleSettings(), k=3, gated_rows=0)
