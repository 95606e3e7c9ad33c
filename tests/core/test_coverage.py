"""A few cells of ``bench/coverage.py`` with a fixed seed: the intervals hold the long-run value.

The whole grid (200 cells, 2,000 replications) lives in the benchmark and its
table in ``bench/README.md``; here three cells where the old intervals failed run with 400
replications each in about two seconds.  The simulation is deterministic for
a seed, so this test cannot flake; it fails if an interval change loses
coverage there, and it shows that the intervals passk used before did not
hold it.
"""

from __future__ import annotations

import pytest

from support.paths import REPO
from support.scripts import load_script

BENCH = REPO / "bench" / "coverage.py"
SEED = 7
REPS = 400


bench = load_script(BENCH, "passk_coverage_bench")


@pytest.mark.parametrize(
    ("cell", "old_failure"),
    [
        # 20 rows at 95% accuracy, most rows always right or always wrong: the
        # old mean +- 1.96 SE held the mean only ~72% of the time.
        (bench.Cell(20, 0.95, 3, 1.0), "accuracy"),
        # 10 rows at 99%: usually every row is right and the old interval had
        # zero width ("100.0% – 100.0%").
        (bench.Cell(10, 0.99, 2, 1.0), "accuracy"),
        # pass^8 near 0 over 20 rows: the old interval collapsed on 0.
        (bench.Cell(20, 0.5, 8, 10.0), "pass^k"),
    ],
    ids=lambda value: getattr(value, "label", value),
)
def test_intervals_hold_the_long_run_value_where_the_old_ones_did_not(
    cell: object, old_failure: str
) -> None:
    result = bench.simulate(cell, REPS, SEED)
    for statistic in bench.STATISTICS:
        assert result.after[statistic] >= bench.TARGET, (statistic, result.after)
    assert result.after_zero_width == 0.0
    assert result.before[old_failure] < 0.90, result.before


def test_long_run_pass_k_of_a_beta_population() -> None:
    # E[p^2] for p ~ Beta(1, 1) (uniform) is 1/3; E[p^3] for Beta(2, 1) (density 2p) is 2/5.
    assert bench.long_run_pass_k(1.0, 1.0, 2) == pytest.approx(1 / 3)
    assert bench.long_run_pass_k(2.0, 1.0, 3) == pytest.approx(2 / 5)
