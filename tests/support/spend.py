"""Runs whose attempts cost money and time, and the gate's verdict on them."""

from __future__ import annotations

from dataclasses import replace

from passk_action.core.gate import GatePolicy
from passk_action.core.model import Attempt, Usage, Version
from passk_action.core.result import evaluate
from passk_action.core.sequential import STRICT, RuleSettings
from support.runs import attempts, record, run_of


def spent(
    row: str,
    decisions: list[str | None],
    cost: float | None,
    duration: float,
    *,
    tokens: int = 100,
) -> list[Attempt]:
    out = []
    for a in attempts(row, decisions):
        usage = None if a.decision is None else Usage(tokens, 10, cost)
        out.append(replace(a, usage=usage, duration_s=duration))
    return out


RIGHT = ["deny", "deny", "deny"]


def _gate(  # type: ignore[no-untyped-def]
    base_cost: float,
    cand_cost: float | None,
    policy: GatePolicy,
    *,
    mnb_broken: bool = False,
    base_s: float = 1.0,
    cand_s: float = 1.0,
):
    # 25 rows x 3 attempts: enough for the p95 limit's bounds (72 attempts a version);
    # every attempt alike, so the bounds are the figures themselves.
    others = [f"other{i}" for i in range(24)]
    rows = [record("must", mnb=True), *(record(o) for o in others)]
    base = spent("must", RIGHT, base_cost, base_s)
    cand_must = ["deny", "approve", "deny"] if mnb_broken else RIGHT
    cand = spent("must", cand_must, cand_cost, cand_s)
    for other in others:
        base += spent(other, RIGHT, base_cost, base_s)
        cand += spent(other, RIGHT, cand_cost, cand_s)
    # Three recorded attempts a row and no agent to ask for more: the strict rule judges
    # them (the sequential one would want more answers before passing "must").
    return evaluate(
        rows,
        run_of(rows, base, version=Version.BASELINE),
        run_of(rows, cand),
        ratchet=frozenset(),
        policy=replace(policy, rule=RuleSettings(rule=STRICT)),
    )
