"""Is the "smallest drop detected 80% of the time" detected 80% of the time? By simulation.

The report's power paragraph (``core/power.py``: :class:`Power`) names
the smallest drop in mean accuracy that the comparison's verdict flags
"worse" (its paired 95% interval below 0) 80% of the time.  This bench
checks that promise through the real code path, :func:`paired_comparison`:

1. a dataset: ``rows`` rows with true accuracies p_i ~ Beta(mu phi, (1 - mu)
   phi), fixed for the cell (the rows are the dataset);
2. an observed comparison: both versions answer each row k times at p_i;
   the paragraph's MDE is computed from it (:func:`paired_power`), as a
   report would;
3. a candidate that is worse by that much: every row's accuracy falls by
   the per-row drop delta that the MDE stands for (clipped at 0), and
   ``reps`` fresh comparisons count how often the verdict says "worse".

Steps 2-3 repeat for ``samples`` observed comparisons; the table gives the
median detection (and its 10th-90th percentile range over the observed
comparisons: the MDE is itself estimated from one comparison), beside the
formula passk used before (F sqrt(var(d) / n), F = z_0.975 + z_0.8), its
detection, and how often it was printed as "0.0 pts".

    python bench/power.py --out bench/power.md      # about 5 min on 2 cores
    python bench/power.py --samples 5 --reps 100    # a quick look

Standard library only.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from passk_action.core.error_bars import Z_975
from passk_action.core.model import RowClass
from passk_action.core.paired import WORSE, paired_comparison
from passk_action.core.power import Z_80, paired_power
from passk_action.core.stats import RowSummary

ROWS = (20, 50, 200)
ACCURACY = (0.9, 0.99)
CONCENTRATION = (1.0, 10.0)
K = 3


@dataclass(frozen=True)
class Cell:
    rows: int
    accuracy: float
    concentration: float


@dataclass(frozen=True)
class Result:
    cell: Cell
    mde: list[float]
    detected: list[float]
    old_mde: list[float]
    old_detected: list[float]


def _summaries(rng: random.Random, ps: Sequence[float], k: int) -> list[RowSummary]:
    out = []
    for i, p in enumerate(ps):
        right = sum(rng.random() < p for _ in range(k))
        cls = RowClass.STABLE_CORRECT if right == k else RowClass.FLIP
        out.append(RowSummary(str(i), cls, k, right, 0, ()))
    return out


def _per_row_drop(accuracy: Sequence[float], mean_drop: float) -> float:
    """The delta with mean(min(delta, m_i)) = mean_drop (the model of :class:`Power`)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if math.fsum(min(mid, m) for m in accuracy) / len(accuracy) < mean_drop:
            low = mid
        else:
            high = mid
    return high


def _detection(rng: random.Random, ps: Sequence[float], delta: float, reps: int) -> float:
    worse = [max(0.0, p - delta) for p in ps]
    hits = 0
    for _ in range(reps):
        base = _summaries(rng, ps, K)
        cand = _summaries(rng, worse, K)
        hits += paired_comparison(base, cand).verdict == WORSE
    return hits / reps


def simulate(cell: Cell, samples: int, reps: int, seed: int) -> Result:
    rng = random.Random(f"{seed}-{cell}")
    a = cell.accuracy * cell.concentration
    b = (1 - cell.accuracy) * cell.concentration
    ps = [rng.betavariate(a, b) for _ in range(cell.rows)]
    mde, detected, old_mde, old_detected = [], [], [], []
    for _ in range(samples):
        base, cand = _summaries(rng, ps, K), _summaries(rng, ps, K)
        power = paired_power(base, cand)
        means = [
            (x.correct / x.valid + y.correct / y.valid) / 2 for x, y in zip(base, cand, strict=True)
        ]
        if power.mde is not None:
            mde.append(power.mde)
            detected.append(_detection(rng, ps, _per_row_drop(means, power.mde), reps))
        diffs = [y.correct / y.valid - x.correct / x.valid for x, y in zip(base, cand, strict=True)]
        old = (Z_975 + Z_80) * math.sqrt(statistics.variance(diffs) / len(diffs))
        old_mde.append(old)
        old_detected.append(_detection(rng, ps, _per_row_drop(means, old), reps))
    return Result(cell, mde, detected, old_mde, old_detected)


def _quantiles(values: Sequence[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]  # noqa: E731
    return pick(0.1), statistics.median(ordered), pick(0.9)


def markdown(results: Sequence[Result], samples: int, reps: int, seed: int, secs: float) -> str:
    lines = [
        f"Power paragraph, k = {K}: {samples} observed comparisons per cell, {reps} comparisons "
        f'at each stated drop, seed {seed}; {secs:.0f} s. Detection = share flagged "worse" '
        "(median over observed comparisons, 10th-90th percentile in brackets); target 80%.",
        "",
        "| rows | accuracy | phi | stated drop, now (median) | detected, now "
        '| stated drop, before | detected, before | before printed "0.0 pts" |',
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        c = r.cell
        low, mid, high = _quantiles(r.detected) if r.detected else (math.nan,) * 3
        o_low, o_mid, o_high = _quantiles(r.old_detected)
        zero = sum(round(m * 100, 1) == 0.0 for m in r.old_mde) / len(r.old_mde)
        now = f"{statistics.median(r.mde) * 100:.1f} pts" if r.mde else "none"
        lines.append(
            f"| {c.rows} | {c.accuracy} | {c.concentration:g} | {now} "
            f"| {mid:.0%} ({low:.0%}–{high:.0%}) "
            f"| {statistics.median(r.old_mde) * 100:.1f} pts "
            f"| {o_mid:.0%} ({o_low:.0%}–{o_high:.0%}) | {zero:.0%} |"
        )
    return "\n".join(lines) + "\n"


def _run(args: tuple[Cell, int, int, int]) -> Result:
    return simulate(*args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20261221)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    cells = [Cell(n, mu, phi) for n in ROWS for mu in ACCURACY for phi in CONCENTRATION]
    started = time.perf_counter()
    work = [(c, args.samples, args.reps, args.seed) for c in cells]
    if args.jobs <= 1:
        results = [_run(w) for w in work]
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(_run, work, chunksize=1))
    text = markdown(results, args.samples, args.reps, args.seed, time.perf_counter() - started)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
