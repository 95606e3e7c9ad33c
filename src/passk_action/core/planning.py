"""``passk plan``'s search: the sequential settings with the fewest attempts for target rates.

Every figure is exact (:func:`~.operating.gate_oc`); the search is a grid, so
its answer is deterministic, and :func:`less_accurate` states what the
answer does to rows less accurate than the accuracy it was set for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .operating import DEFAULT_SETTINGS, DROPPED, HARMLESS, GateOC, gate_oc
from .sequential import SEQUENTIAL, RuleSettings


@dataclass(frozen=True, slots=True)
class Plan:
    """Settings that meet target rates for a gate, and what they do (:func:`suggest`)."""

    settings: RuleSettings
    oc: GateOC
    met: bool
    """False when no setting searched met both targets (then the closest is shown)."""


_LENGTHS = (40, 60, 100)
"""Candidate test lengths searched: with many gated rows the truncation's own
false blocks (the likelier hypothesis at the last answer) need a longer test."""
MIN_ALPHA = 1e-6
"""The smallest per-row alpha or beta :func:`suggest` searches (``values.MIN_CHANCE``)."""
_ALPHA_FACTORS = (0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True, slots=True)
class Targets:
    """What a gate should do: a harmless pull request (every gated row right ``accuracy``
    of the time) blocked at most ``false_block`` of the time, and a gated row dropped to
    ``dropped`` missed at most ``miss`` of the time."""

    false_block: float = 0.05
    miss: float = 0.1
    accuracy: float = HARMLESS
    dropped: float = DROPPED


def suggest(
    *,
    k: int,
    gated_rows: int,
    targets: Targets = Targets(),
    base: RuleSettings = DEFAULT_SETTINGS,
    alphas: Sequence[float] = (),
    betas: Sequence[float] = (),
) -> Plan:
    """The sequential settings with the fewest extra attempts that meet both targets.

    Targets: a harmless PR with ``gated_rows`` rows at ``accuracy`` blocked
    at most ``false_block`` of the time, a row dropped to ``dropped`` missed
    at most ``miss`` of the time (all of ``targets``), both computed exactly
    (:func:`gate_oc`).
    Searched: ``unreliable`` = ``dropped``, ``reliable`` = ``accuracy``,
    per-row alpha from a hundredth of the Sidak share 1 - (1 - false_block)^(1/G) to 8
    times it (Wald's thresholds are conservative, so the nominal alpha can
    exceed the rate it gives), beta from ``miss`` down to a fifth of it, and
    ``max_decisions`` 40, 60 or 100.
    Fewest = expected extra attempts per gated row, to 0.01; ties go to the
    shorter test, then the smaller alpha, then the smaller beta.  Deterministic.
    """
    false_block, miss = targets.false_block, targets.miss
    accuracy, dropped = targets.accuracy, targets.dropped
    if not (0.0 < false_block < 1.0 and 0.0 < miss < 1.0):
        raise ValueError("targets must be within (0, 1)")
    share = -math.expm1(math.log1p(-false_block) / gated_rows)
    # A per-row alpha below MIN_ALPHA (a million gated rows) is not searched:
    # the exact figures would take minutes and the target is then not met, said so.
    alpha_grid = alphas or tuple(min(0.4, max(MIN_ALPHA, share * f)) for f in _ALPHA_FACTORS)
    beta_grid = betas or tuple(
        min(0.4, max(MIN_ALPHA, miss * f)) for f in (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.35, 0.2)
    )
    best: Plan | None = None
    for length in _LENGTHS:
        for alpha in alpha_grid:
            for beta in beta_grid:
                settings = replace(
                    base,
                    rule=SEQUENTIAL,
                    reliable=accuracy,
                    unreliable=dropped,
                    # The baseline's test needs its "varies" accuracy below ``accuracy``.
                    baseline_unreliable=min(
                        base.baseline_unreliable, accuracy - (accuracy - dropped) / 3
                    ),
                    alpha=alpha,
                    beta=beta,
                    max_decisions=length,
                    max_attempts=max(base.max_attempts, length, base.baseline_max_decisions),
                )
                oc = gate_oc(
                    settings, k=k, gated_rows=gated_rows, accuracy=accuracy, dropped=dropped
                )
                plan = Plan(settings, oc, oc.false_block <= false_block and oc.row_miss <= miss)
                if best is None or _better(plan, best):
                    best = plan
    assert best is not None
    return best


def less_accurate(plan: Plan) -> GateOC:
    """The suggested settings' figures for harmless rows less accurate than assumed.

    The sequential rule's rates hold at the accuracy it was set for
    (``reliable``); a team's rows vary.  This is :func:`gate_oc` of the same
    settings and rows at 5 points less accuracy (or halfway to ``dropped``
    when that is closer), the figure ``passk plan`` states beside its
    suggestion.
    """
    oc = plan.oc
    worse = round(max(oc.accuracy - 0.05, (oc.accuracy + oc.dropped) / 2), 6)
    return gate_oc(
        plan.settings, k=oc.k, gated_rows=oc.gated_rows, accuracy=worse, dropped=oc.dropped
    )


def _better(plan: Plan, best: Plan) -> bool:
    """Whether ``plan`` beats ``best`` (the order in :func:`suggest`)."""
    if plan.met != best.met:
        return plan.met
    if not plan.met:
        # Neither meets both: the one closest to its targets, false blocks first.
        return (plan.oc.false_block, plan.oc.row_miss) < (best.oc.false_block, best.oc.row_miss)
    return _cost(plan) < _cost(best)


def _cost(plan: Plan) -> tuple[float, int, float, float]:
    per_row = (plan.oc.candidate_extra + plan.oc.baseline_extra) / plan.oc.gated_rows
    settings = plan.settings
    return round(per_row, 2), settings.max_decisions, settings.alpha, settings.beta
