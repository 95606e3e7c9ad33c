"""The paired comparison: candidate minus baseline row by row, its verdict, and an exact
McNemar test on the rows lost and gained (Miller section 4; see ``error_bars``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from .error_bars import ErrorBar, mean_error_bar, mean_of, row_accuracy
from .model import RowClass
from .stats import RowSummary

WITHIN_NOISE = "within noise"
BETTER = "better"
WORSE = "worse"
TOO_FEW_ROWS = "too few rows"


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar test on discordant pairs b and c.

    Formula: p = min(1, 2 * P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2),
    the binomial tail summed exactly in integers (sum_{i<=m} C(b+c, i) / 2^(b+c)).
    Source: McNemar (1947); the exact (binomial) form, as recommended for
    small counts.  Edge case: b + c = 0 (no discordant row) gives p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError("counts must be >= 0")
    total = b + c
    if total == 0:
        return 1.0
    # C(n, i+1) = C(n, i) * (n - i) / (i + 1), exactly: one small multiplication per
    # term instead of a fresh C(n, i) (thousands of discordant rows made that seconds).
    term = count = 1
    for i in range(min(b, c)):
        term = term * (total - i) // (i + 1)
        count += term
    tail = Fraction(count, 2**total)
    return float(min(Fraction(1), 2 * tail))


ALPHA = 0.05
"""The significance level every verdict and power figure here uses."""


def p_value_text(p: float) -> str:
    """A p-value as text that never rounds across 0.05 ("< 0.001" below 0.001).

    Rule: two significant digits, more (up to 17, which tell every double
    apart) while the shown number would sit on the other side of 0.05 or on
    0.05 itself: 0.049 prints "0.049", 0.0504 "0.0504", 0.04996 "0.04996",
    0.21484 "0.21", 1 "1", the double just below 0.05 "0.049999999999999996".
    Edge cases: a p of exactly 0.05 prints "0.05" (an exact McNemar p, a
    dyadic fraction, never is); outside [0, 1] is a ValueError.  No
    exponent: from 0.001 to 1, ``g`` with 2 or more digits never writes one.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a p-value is in [0, 1], got {p}")
    if p < 0.001:
        return "< 0.001"
    if p == ALPHA:
        return "0.05"
    for digits in range(2, 18):
        text = f"{p:.{digits}g}"
        shown = float(text)
        if shown != ALPHA and (shown < ALPHA) == (p < ALPHA):
            break
    return text


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """Candidate minus baseline, row by row (Miller section 4).

    ``difference`` is the mean per-row accuracy difference with its paired SE
    and 95% interval (not clipped: it lives in [-1, 1]).  ``excluded`` rows
    lacked a valid attempt on one side.  ``b``/``c`` are the McNemar
    discordant counts on stable-correct status (b: only the baseline, c: only
    the candidate), ``p_value`` their exact two-sided test.  ``verdict`` is
    "within noise" when the interval contains 0, "better"/"worse" when it lies
    above/below 0, and "too few rows" when no interval could be computed.
    """

    difference: ErrorBar
    b: int
    c: int
    p_value: float
    verdict: str

    def to_json(self) -> dict[str, object]:
        return {
            "difference": self.difference.to_json(),
            "mcnemar": {"b": self.b, "c": self.c, "p_value": self.p_value},
            "verdict": self.verdict,
        }


def verdict_of(bar: ErrorBar) -> str:
    """Verdict "within noise" if the 95% interval holds 0, else "better"/"worse"."""
    if bar.low is None or bar.high is None:
        return TOO_FEW_ROWS
    if bar.low > 0:
        return BETTER
    if bar.high < 0:
        return WORSE
    return WITHIN_NOISE


def paired_comparison(
    baseline: Sequence[RowSummary],
    candidate: Sequence[RowSummary],
    clusters: Mapping[str, str] | None = None,
) -> PairedComparison:
    """Paired difference of per-row accuracy and an exact McNemar test.

    Difference: d_i = acc_cand(i) - acc_base(i) over rows with a valid
    attempt on both sides; mean(d) with SE = sqrt(var(d) / n) (sample
    variance, n - 1), or the cluster-robust SE of d with ``clusters``
    (Miller section 4 and eq. 4); 95% interval by
    :func:`~.error_bars.difference_interval`, its pseudo-pairs sized by the answer pairs
    a row is worth: sigma^2 of one pair's difference = mean over rows of
    b_i (1 - c_i) + c_i (1 - b_i), minus mean(d)^2 (b_i, c_i the versions'
    shares), at most the mean over rows of the harmonic mean of both
    versions' valid answers.
    McNemar: over every row present on both sides, b = stable-correct on the
    baseline only, c = on the candidate only (the rows lost and gained); see
    :func:`mcnemar_exact_p`.  Rows are matched by id; a row on one side only
    is ignored.
    """
    base_by_id = {s.id: s for s in baseline}
    diffs: list[float] = []
    keys: list[str | None] = []
    discordance: list[float] = []
    pairs: list[float] = []
    excluded = b = c = 0
    for cand in candidate:
        base = base_by_id.get(cand.id)
        if base is None:
            continue
        base_sc = base.row_class is RowClass.STABLE_CORRECT
        cand_sc = cand.row_class is RowClass.STABLE_CORRECT
        b += base_sc and not cand_sc
        c += cand_sc and not base_sc
        base_acc, cand_acc = row_accuracy(base), row_accuracy(cand)
        if base_acc is None or cand_acc is None:
            excluded += 1
            continue
        diffs.append(cand_acc - base_acc)
        keys.append(clusters.get(cand.id) if clusters else None)
        # An answer of each version disagreeing, the versions answering independently.
        discordance.append(base_acc * (1 - cand_acc) + cand_acc * (1 - base_acc))
        pairs.append(2 / (1 / base.valid + 1 / cand.valid))
    variance = None
    if diffs:
        variance = mean_of(discordance) - mean_of(diffs) ** 2
    bar = mean_error_bar(
        diffs,
        keys if clusters else None,
        excluded=excluded,
        difference=True,
        answers=mean_of(pairs) if pairs else 1.0,
        answer_variance=variance,
    )
    return PairedComparison(bar, b, c, mcnemar_exact_p(b, c), verdict_of(bar))
