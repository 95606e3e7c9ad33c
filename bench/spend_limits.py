"""False alarms of the cost and p95 latency limits, by simulation through the gate.

``gate.max_cost_increase`` and ``gate.max_latency_p95_increase`` state a
false-alarm rate: a candidate exactly at the limit fails at most 5% of the
time (``core/cost.py``).  This bench builds two recorded runs per trial and
calls the gate itself (:func:`compare_spend`, :func:`decide`), for:

- **identical** versions (the change is 0): how often the limit fails;
- a candidate **at the limit** (its true cost per decision, or p95, exactly
  1 + limit times the baseline's): at most 5%;
- a candidate **well over** it (1.5 x the limit's ratio): how often caught;

beside the rule before issue 20 (fail when the point estimate is over).

Latency: each attempt's wall time ~ scale x LogNormal(0, 0.5); the p95 of
the candidate's distribution is the baseline's times the ratio.  Cost: each
row a base cost ~ LogNormal(-7, 0.5) (rows differ), each attempt's cost
that x LogNormal(0, 0.3), 3 attempts a row, the candidate's scaled.

    python bench/spend_limits.py --out bench/spend_limits.md    # about 5 min
    python bench/spend_limits.py --reps 200                     # a quick look

Standard library only.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from passk_action.core.cost import compare_spend
from passk_action.core.gate import GatePolicy, Rule, decide
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowRecord,
    Run,
    Usage,
    Version,
)

K = 3
LIMIT = 0.2
ROWS = (10, 24, 50, 200)
"""Rows per run; with k = 3: 30, 72, 150 and 600 attempts a version."""
SCENARIOS = (
    ("identical", 1.0),
    ("at the limit", 1 + LIMIT),
    ("1.5 x the limit", 1 + 1.5 * LIMIT),
    ("3 x the limit", 1 + 3 * LIMIT),
)


def _run(
    version: Version, row_costs: Sequence[float], latency: float, cost: float, rng: random.Random
) -> Run:
    records = tuple(RowRecord(f"r{i}", f"d{i}", "yes", False) for i in range(len(row_costs)))
    attempts = [
        Attempt(
            record.id,
            n,
            Phase.MAIN,
            "yes",
            duration_s=latency * rng.lognormvariate(0, 0.5),
            usage=Usage(100, 10, cost * row_cost * rng.lognormvariate(0, 0.3)),
        )
        for record, row_cost in zip(records, row_costs, strict=True)
        for n in range(1, K + 1)
    ]
    return Run(
        "bench",
        "sha256:bench",
        EvalSettings(K),
        AgentInfo(version, "bench"),
        "2026-01-01T00:00:00Z",
        records,
        tuple(attempts),
    )


def trial(rows: int, limit_of: str, ratio: float, seed: str) -> tuple[bool, bool]:
    """(fails now, failed before) for one pair of runs on the same rows."""
    rng = random.Random(seed)
    row_costs = [math.exp(-7 + 0.5 * rng.gauss(0, 1)) for _ in range(rows)]
    base = _run(Version.BASELINE, row_costs, 1.0, 1.0, rng)
    latency, cost = (ratio, 1.0) if limit_of == "latency" else (1.0, ratio)
    cand = _run(Version.CANDIDATE, row_costs, latency, cost, rng)
    spend = compare_spend(base, cand)
    if limit_of == "latency":
        policy = GatePolicy(max_latency_p95_increase=LIMIT)
        before = (spend.latency_p95_increase or 0.0) > LIMIT
        rule = Rule.LATENCY
    else:
        policy = GatePolicy(max_cost_increase=LIMIT)
        before = (spend.cost_increase or 0.0) > LIMIT
        rule = Rule.COST
    gate = decide([], policy, spend=spend)
    return any(f.rule is rule for f in gate.failures), before


def _pct(hits: int, reps: int) -> str:
    return f"{hits / reps:.1%}"


def markdown(reps: int, seed: int) -> str:
    started = time.perf_counter()
    lines = [
        "| limit | attempts a version | "
        + " | ".join(f"{name}: now / before" for name, _ in SCENARIOS)
        + " |",
        "|---|---:|" + "---:|" * len(SCENARIOS),
    ]
    for limit_of in ("latency", "cost"):
        for rows in ROWS:
            cells = []
            for name, ratio in SCENARIOS:
                now = before = 0
                for r in range(reps):
                    fails, old = trial(
                        rows, limit_of, ratio, f"{seed}-{limit_of}-{rows}-{name}-{r}"
                    )
                    now += fails
                    before += old
                cells.append(f"{_pct(now, reps)} / {_pct(before, reps)}")
            lines.append(f"| {limit_of} +{LIMIT:.0%} | {rows * K} | {' | '.join(cells)} |")
            print(lines[-1], file=sys.stderr)
    head = (
        f"Spend limits at +{LIMIT:.0%}: share of {reps:,} trials that fail the limit, now "
        f"(beyond noise, 5% false alarm at the limit) / before (point estimate over it); "
        f"seed {seed}; {time.perf_counter() - started:.0f} s. Monte Carlo SE at 5%: "
        f"{math.sqrt(0.05 * 0.95 / reps):.1%}."
    )
    return "\n".join([head, "", *lines]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261222)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    text = markdown(args.reps, args.seed)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
