"""Coverage of passk's 95% intervals, by simulation: do they hold the long-run value?

Model (one cell = rows n, accuracy mu, attempts k, concentration phi):

- each row has a true accuracy p_i ~ Beta(mu * phi, (1 - mu) * phi): phi = 1
  makes most rows always right or always wrong (as in real evals), phi = 10
  rows of similar difficulty;
- the baseline answers each row k times, c_i ~ Binomial(k, p_i);
- the candidate keeps each row's p_i with probability 1/2 and otherwise
  draws a fresh one: from the same Beta ("same": the long-run difference is
  0) or from Beta(mu' phi, (1 - mu') phi) with mu' = 1 - 1.5 (1 - mu) ("worse":
  half again as many errors on the rows that changed).

The long-run values (what an interval must hold 95% of the time) are the
population means over rows of each row's own value:

- mean accuracy: E[p] = mu;
- pass^k: E[p^k] = prod_{j<k} (a + j) / (a + b + j) for Beta(a, b), the chance
  that k fresh attempts on a fresh row are all right;
- paired difference (candidate - baseline): 0 ("same") or (mu' - mu) / 2 ("worse").

Each replication draws n rows, computes each interval from the per-row
values exactly as ``passk`` does (``core/error_bars.py``, pseudo-answers
sized by the answers a row is worth), and counts whether it holds the
long-run value.  "before" is the interval passk used until this benchmark
(mean +- 1.96 Miller SE, clipped to [0, 1] for shares), reimplemented here;
"after" calls the package.  Beside the grid, issue 20's cells of near-equal
accuracy (p = 0.99, k = 5 and 8, 1,000 and 3,000 rows, phi = 10 and 100).

    python bench/coverage.py                   # the committed grid, 2,000 reps
    python bench/coverage.py --reps 200 --rows 10,20 --jobs 2

Standard library only, so it runs wherever passk does.  Writes the table
per cell as Markdown to stdout (``--out FILE`` to a file).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from passk_action.core.error_bars import difference_interval, share_interval

Z_975 = 1.959964
ROWS = (10, 20, 65, 200, 1000)
METHODS = ("before", "rows", "after")
NEAR_EQUAL = tuple(
    (rows, 0.99, k, phi) for rows in (1000, 3000) for k in (5, 8) for phi in (10.0, 100.0)
)
"""Issue 20's cells: rows of near-equal accuracy (p = 0.99, k = 5-8, 1,000-3,000 rows),
where pseudo-answers sized as whole rows held 0.921-0.930; run beside the grid."""
ACCURACY = (0.5, 0.7, 0.9, 0.95, 0.99)
KS = (2, 3, 5, 8)
CONCENTRATION = (1.0, 10.0)
STATISTICS = ("accuracy", "pass^k", "difference (same)", "difference (worse)")
TARGET = 0.94

Interval = tuple[float, float] | None


@dataclass(frozen=True)
class Cell:
    rows: int
    accuracy: float
    k: int
    concentration: float

    @property
    def label(self) -> str:
        return f"{self.rows}-{self.accuracy}-{self.k}-{self.concentration:g}"


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    reps: int
    before: dict[str, float]
    after: dict[str, float]
    before_zero_width: float
    """Share of the before intervals (all statistics) of zero width."""
    after_zero_width: float
    rows: dict[str, float] = field(default_factory=dict)
    """Coverage of the interval passk had before issue 20 (pseudo-answers as whole rows)."""
    width_rows: dict[str, float] = field(default_factory=dict)
    """Mean width of that interval, per statistic."""
    width_after: dict[str, float] = field(default_factory=dict)
    """Mean width of the "after" interval, per statistic."""


def long_run_pass_k(a: float, b: float, k: int) -> float:
    """E[p^k] for p ~ Beta(a, b): prod_{j=0}^{k-1} (a + j) / (a + b + j)."""
    return math.prod((a + j) / (a + b + j) for j in range(k))


def before_share(values: Sequence[float]) -> Interval:
    """The old interval: mean +- 1.96 * sqrt(s^2 / n), clipped to [0, 1]."""
    return _before(values, (0.0, 1.0))


def before_difference(values: Sequence[float]) -> Interval:
    """The old paired interval: mean +- 1.96 * sqrt(s^2 / n), not clipped."""
    return _before(values, (-math.inf, math.inf))


def _before(values: Sequence[float], bounds: tuple[float, float]) -> Interval:
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    se = math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (n - 1) / n)
    return max(bounds[0], mean - Z_975 * se), min(bounds[1], mean + Z_975 * se)


def after_share(values: Sequence[float], k: int) -> Interval:
    return share_interval(values, answers=k)


def after_difference(base: Sequence[float], cand: Sequence[float], k: int) -> Interval:
    """As ``paired_comparison`` calls it: pseudo-pairs sized by the answer pairs a row is worth."""
    diffs = [c - b for b, c in zip(base, cand, strict=True)]
    discordance = [b * (1 - c) + c * (1 - b) for b, c in zip(base, cand, strict=True)]
    mean = math.fsum(diffs) / len(diffs)
    variance = math.fsum(discordance) / len(diffs) - mean * mean
    return difference_interval(diffs, answers=k, answer_variance=variance)


def simulate(cell: Cell, reps: int, seed: int) -> CellResult:
    """Coverage of each statistic in one cell, before and after, over ``reps`` replications."""
    rng = random.Random(f"{seed}-{cell.label}")
    uniform, beta = rng.random, rng.betavariate
    mu, phi, k, n = cell.accuracy, cell.concentration, cell.k, cell.rows
    a, b = mu * phi, (1 - mu) * phi
    worse = 1 - 1.5 * (1 - mu)
    a2, b2 = worse * phi, (1 - worse) * phi
    truth = {
        "accuracy": mu,
        "pass^k": long_run_pass_k(a, b, k),
        "difference (same)": 0.0,
        "difference (worse)": (worse - mu) / 2,
    }
    hits = {m: dict.fromkeys(STATISTICS, 0) for m in METHODS}
    widths = {m: dict.fromkeys(STATISTICS, 0.0) for m in METHODS}
    zero = dict.fromkeys(METHODS, 0)

    def answer(p: float) -> int:
        return sum(uniform() < p for _ in range(k))

    for _ in range(reps):
        ps = [beta(a, b) for _ in range(n)]
        right = [answer(p) for p in ps]
        kept = [uniform() < 0.5 for _ in range(n)]
        same = [answer(p if keep else beta(a, b)) for p, keep in zip(ps, kept, strict=True)]
        changed = [answer(p if keep else beta(a2, b2)) for p, keep in zip(ps, kept, strict=True)]
        base = [c / k for c in right]
        other = {"difference (same)": same, "difference (worse)": changed}
        values = {
            "accuracy": base,
            # n = k attempts: the unbiased C(c, k) / C(k, k) is 1 when all are right.
            "pass^k": [1.0 if c == k else 0.0 for c in right],
            "difference (same)": [(s - c) / k for s, c in zip(same, right, strict=True)],
            "difference (worse)": [(w - c) / k for w, c in zip(changed, right, strict=True)],
        }
        for stat in STATISTICS:
            # pass^k's per-row value is one 0/1 draw whatever k: a row is one answer there.
            if stat.startswith("difference"):
                after = after_difference(base, [x / k for x in other[stat]], k)
                before = before_difference(values[stat])
                rows = difference_interval(values[stat])
            else:
                after = after_share(values[stat], k if stat == "accuracy" else 1)
                before = before_share(values[stat])
                rows = share_interval(values[stat])
            for method, interval in (("before", before), ("rows", rows), ("after", after)):
                if interval is None:
                    continue
                low, high = interval
                hits[method][stat] += low <= truth[stat] <= high
                zero[method] += high <= low
                widths[method][stat] += high - low
    per = reps * len(STATISTICS)
    return CellResult(
        cell,
        reps,
        {s: hits["before"][s] / reps for s in STATISTICS},
        {s: hits["after"][s] / reps for s in STATISTICS},
        zero["before"] / per,
        zero["after"] / per,
        {s: hits["rows"][s] / reps for s in STATISTICS},
        {s: widths["rows"][s] / reps for s in STATISTICS},
        {s: widths["after"][s] / reps for s in STATISTICS},
    )


def grid(
    rows: Sequence[int], accuracy: Sequence[float], ks: Sequence[int], phis: Sequence[float]
) -> list[Cell]:
    return [Cell(n, mu, k, phi) for n in rows for mu in accuracy for k in ks for phi in phis]


def _run(args: tuple[Cell, int, int]) -> CellResult:
    return simulate(*args)


def run_grid(
    cells: Sequence[Cell], reps: Callable[[Cell], int], seed: int, jobs: int
) -> list[CellResult]:
    """Every cell, ``reps(cell)`` replications each; one line per finished cell on stderr."""
    work = [(cell, reps(cell), seed) for cell in cells]
    if jobs <= 1:
        results = map(_run, work)
    else:
        pool = ProcessPoolExecutor(jobs)
        results = pool.map(_run, work, chunksize=1)
    done = []
    for result in results:
        done.append(result)
        worst = min(result.after.values())
        print(f"{result.cell.label} reps {result.reps}: after >= {worst:.3f}", file=sys.stderr)
    if jobs > 1:
        pool.shutdown()
    return done


def noise(reps: int) -> float:
    """Monte Carlo standard error of a coverage near 0.95 measured over ``reps`` replications."""
    return math.sqrt(0.95 * 0.05 / reps)


def below(value: float, reps: int) -> bool:
    """Below the target by more than the simulation's own noise (2 Monte Carlo SE).

    A true 95% interval measures below 0.94 in about 2% of cells of 2,000
    replications (15% at 500) by chance alone; this is the finding that counts.
    """
    return value < TARGET - 2 * noise(reps)


def _fmt(value: float, reps: int) -> str:
    text = f"{value:.3f}"
    if below(value, reps):
        return f"**{text}**"
    return f"_{text}_" if value < TARGET else text


def markdown(results: Sequence[CellResult], reps: str, seed: int, seconds: float) -> str:
    """The per-cell table and the worst cell per statistic, before and after."""
    lines = [
        f"Coverage of the 95% intervals: {len(results)} cells, {reps}, "
        f"seed {seed}; {seconds:.0f} s. **Bold**: below {TARGET} by more than 2 Monte Carlo "
        f"standard errors ({2 * noise(2000):.3f} at 2,000 replications, {2 * noise(1000):.3f} at "
        f"1,000); _italic_: below {TARGET} within that noise.",
        "",
        "| statistic | worst before (cell) | cells below, before | worst after (cell) "
        "| cells below, after |",
        "|---|---:|---:|---:|---:|",
    ]
    for stat in STATISTICS:
        before = min(results, key=lambda r: r.before[stat])
        after = min(results, key=lambda r: r.after[stat])
        lines.append(
            f"| {stat} | {_fmt(before.before[stat], before.reps)} ({before.cell.label}) "
            f"| {sum(below(r.before[stat], r.reps) for r in results)} "
            f"| {_fmt(after.after[stat], after.reps)} ({after.cell.label}) "
            f"| {sum(below(r.after[stat], r.reps) for r in results)} |"
        )
    lines += [
        "",
        "Against the interval passk had before issue 20 (pseudo-answers as whole rows): its "
        "worst cell and cells below, and the mean width of both by rows (mean over cells), "
        "in percentage points.",
        "",
        "| statistic | worst, whole rows (cell) | cells below | "
        + " | ".join(f"width at {n} rows: whole rows → after" for n in _row_counts(results))
        + " |",
        "|---|---:|---:|" + "---:|" * len(_row_counts(results)),
    ]
    for stat in STATISTICS:
        worst = min(results, key=lambda r: r.rows[stat])
        widths = []
        for n in _row_counts(results):
            cells = [r for r in results if r.cell.rows == n]
            old = 100 * sum(r.width_rows[stat] for r in cells) / len(cells)
            new = 100 * sum(r.width_after[stat] for r in cells) / len(cells)
            widths.append(f"{old:.1f} → {new:.1f}")
        lines.append(
            f"| {stat} | {_fmt(worst.rows[stat], worst.reps)} ({worst.cell.label}) "
            f"| {sum(below(r.rows[stat], r.reps) for r in results)} | " + " | ".join(widths) + " |"
        )
    zero_before = max(r.before_zero_width for r in results)
    zero_after = max(r.after_zero_width for r in results)
    lines += [
        "",
        f"Zero-width intervals, largest share in a cell: before {zero_before:.3f}, "
        f"after {zero_after:.3f}. Cell = rows-accuracy-k-concentration.",
        "",
        "| rows | accuracy | k | phi | reps | "
        + " | ".join(f"{s} before | {s} after" for s in STATISTICS)
        + " |",
        "|" + "---:|" * (5 + 2 * len(STATISTICS)),
    ]
    for r in results:
        c = r.cell
        cells = " | ".join(
            f"{_fmt(r.before[s], r.reps)} | {_fmt(r.after[s], r.reps)}" for s in STATISTICS
        )
        lines.append(
            f"| {c.rows} | {c.accuracy} | {c.k} | {c.concentration:g} | {r.reps} | {cells} |"
        )
    return "\n".join(lines) + "\n"


def _row_counts(results: Sequence[CellResult]) -> list[int]:
    return sorted({r.cell.rows for r in results})


def _numbers(text: str, kind: Callable[[str], float]) -> list[float]:
    return [kind(x) for x in text.split(",") if x]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=2000, help="replications per cell")
    parser.add_argument(
        "--large-reps",
        type=int,
        default=1000,
        help="replications of cells with 1,000 rows or more (they cost the most, and "
        "their intervals are closest to the normal approximation)",
    )
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--rows", default=",".join(map(str, ROWS)))
    parser.add_argument("--accuracy", default=",".join(map(str, ACCURACY)))
    parser.add_argument("--k", default=",".join(map(str, KS)))
    parser.add_argument("--concentration", default=",".join(f"{p:g}" for p in CONCENTRATION))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--no-extra", action="store_true", help="leave out the near-equal-accuracy cells"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    cells = grid(
        [int(x) for x in _numbers(args.rows, int)],
        _numbers(args.accuracy, float),
        [int(x) for x in _numbers(args.k, int)],
        _numbers(args.concentration, float),
    )
    if not args.no_extra:
        cells += [Cell(*extra) for extra in NEAR_EQUAL if Cell(*extra) not in cells]
    started = time.perf_counter()

    def reps(cell: Cell) -> int:
        return args.large_reps if cell.rows >= 1000 else args.reps

    # The costliest cells first, so two workers finish together.
    ordered = sorted(cells, key=lambda c: -c.rows * reps(c))
    results = sorted(
        run_grid(ordered, reps, args.seed, args.jobs),
        key=lambda r: (r.cell.rows, r.cell.accuracy, r.cell.k, r.cell.concentration),
    )
    counts = sorted({r.reps for r in results}, reverse=True)
    described = (
        f"{args.reps:,} replications each ({args.large_reps:,} at 1,000 rows or more)"
        if len(counts) > 1
        else f"{counts[0]} replications each"
    )
    text = markdown(results, described, args.seed, time.perf_counter() - started)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    failed = any(below(v, r.reps) for r in results for v in r.after.values())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
