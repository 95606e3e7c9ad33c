"""Statistical power: the smallest drop in mean accuracy the paired verdict detects 80% of
the time, and whether more rows or a higher k would shrink it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .error_bars import answers_per_row_worth, mean_of, row_accuracy, sample_variance
from .paired import ALPHA
from .stats import RowSummary
from .student_t import t_975

Z_80 = 0.841621
"""Standard normal quantile z_{0.80}: power 0.8.  Phi^-1(0.8) = 0.84162123..."""

PAIRED = "paired"
PROJECTED = "projected"
POWER = 0.8


@dataclass(frozen=True, slots=True)
class Power:
    """The smallest drop in mean accuracy the verdict detects 80% of the time, and what shrinks it.

    "Detects" means what the report prints: the paired difference's 95%
    interval (:func:`~.error_bars.difference_interval`, the test behind "within noise" /
    "worse") lies below 0.  The change is modelled as every row's candidate
    accuracy falling by the same delta (clipped at 0), on top of the
    rows' own spread of differences:

    - each row i has an accuracy m_i (both versions' mean; for one run,
      the run's) and v_b, v_c valid answers on each side;
    - Var(d_i) = ``between`` + m_i (1 - m_i) / v_b + c_i (1 - c_i) / v_c,
      c_i = max(0, m_i - delta): the row's true difference varies between
      rows by ``between``, and each version's answers add binomial noise
      at its own accuracy (so a shifted row near 100% gets noisier);
    - the report's interval at that variance: centre -Delta n / (n + 2 /
      k_eff) (Delta = mean of m_i - c_i; the pseudo-pairs shrink it),
      half-width t_{0.975, n-1} sqrt((n - 1) Var + (1 + 2 centre^2) / k_eff)
      / (n + 2 / k_eff), k_eff the answer pairs a row is worth
      (:func:`~.error_bars.answers_per_row_worth`);
    - chance of "worse" = Phi((Delta n / (n + 2 / k_eff) - half-width) /
      (n / (n + 2 / k_eff) sqrt(Var / n))); ``mde`` = the Delta where it
      reaches 0.8 (bisection on delta), None when no drop reaches it.

    ``design`` "paired": from a comparison, ``between`` = the sample
    variance of d (n - 1) minus the mean within-row noise (unbiased
    p^(1 - p^) / (v - 1) per side), at least 0; "projected": from one run,
    for a candidate on the same rows, ``between`` = 0 (a change that moves
    every row alike).  ``variance`` = between + within at no change,
    ``within_share`` = within / variance.  ``mde_more_rows``: twice the
    rows; ``mde_more_k``: twice the attempts per row (noise halved, k_eff
    doubled); ``mde_k_infinite``: no within-row noise (None when
    ``between`` is 0: then nothing but the rows' count limits it).  Checked
    by simulation through :func:`~.paired.paired_comparison` (``bench/power.py``,
    table in ``bench/power.md``).  Caveat: rows are taken as independent
    even when they carry clusters; with clusters the true MDE is larger.
    """

    rows: int
    design: str
    k: float | None
    variance: float | None
    within: float | None
    between: float | None
    within_share: float | None
    mde: float | None
    mde_more_rows: float | None
    mde_more_k: float | None
    mde_k_infinite: float | None

    @property
    def advice(self) -> str | None:
        """Whether a higher k (cheap: no new labels) or more rows would help more."""
        if self.within_share is None:
            return None
        if self.within_share >= 0.5:
            return "raise k: most of the variance is answer-to-answer noise within rows"
        return "add rows: most of the variance is between rows, which a higher k cannot remove"

    def to_json(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "design": self.design,
            "alpha": ALPHA,
            "power": POWER,
            "k": self.k,
            "variance": self.variance,
            "within": self.within,
            "between": self.between,
            "within_share": self.within_share,
            "mde": self.mde,
            "mde_more_rows": self.mde_more_rows,
            "mde_more_k": self.mde_more_k,
            "mde_k_infinite": self.mde_k_infinite,
            "advice": self.advice,
        }


def normal_cdf(x: float) -> float:
    """Phi(x) = erfc(-x / sqrt 2) / 2 (exact to double precision)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


@dataclass(frozen=True, slots=True)
class RowNoise:
    """What the power model needs per row: its accuracy and valid answers on each side."""

    accuracy: tuple[float, ...]
    base_answers: tuple[int, ...]
    cand_answers: tuple[int, ...]


def _detection(
    rows: RowNoise, delta: float, between: float, worth: float, copies: int
) -> tuple[float, float]:
    """(mean drop Delta, chance the interval lies below 0) when every row drops by ``delta``."""
    drops, noise = [], []
    for m, vb, vc in zip(rows.accuracy, rows.base_answers, rows.cand_answers, strict=True):
        c = max(0.0, m - delta)
        drops.append(m - c)
        noise.append(m * (1 - m) / vb + c * (1 - c) / vc)
    n = len(drops) * copies
    mean_drop = mean_of(drops)
    variance = between + mean_of(noise)
    weight = 2.0 / worth if math.isfinite(worth) else 0.0
    shrink = n / (n + weight)
    centre = mean_drop * shrink
    spread = (n - 1) * variance + ((1 + 2 * centre**2) / worth if weight else 0.0)
    half = t_975(n - 1) * math.sqrt(spread) / (n + weight)
    sd = shrink * math.sqrt(variance / n)
    if sd == 0:
        return mean_drop, 1.0 if centre > half else 0.0
    return mean_drop, normal_cdf((centre - half) / sd)


def smallest_detected_drop(
    rows: RowNoise, between: float, worth: float, copies: int = 1
) -> float | None:
    """The mean drop detected with chance :data:`POWER` (formulas in :class:`Power`).

    Bisection on the per-row drop delta in [0, 1] (60 halvings: exact to
    double precision); None when even delta = 1 stays below.  The chance
    grows with delta (a larger drop, as noisy or noisier, but further from 0).
    """
    if not rows.accuracy or len(rows.accuracy) * copies < 2:
        return None
    top, chance = _detection(rows, 1.0, between, worth, copies)
    if chance < POWER or top <= 0:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if _detection(rows, mid, between, worth, copies)[1] >= POWER:
            high = mid
        else:
            low = mid
    return _detection(rows, high, between, worth, copies)[0]


def _unbiased_noise(correct: int, valid: int) -> float | None:
    """p^(1 - p^) / (v - 1), unbiased for p (1 - p) / v; None below 2 valid answers."""
    if valid < 2:
        return None
    p = correct / valid
    return p * (1 - p) / (valid - 1)


def _power(
    design: str,
    rows: RowNoise,
    variance: float | None,
    noises: Sequence[float],
    worth: float,
    answers: float | None,
) -> Power:
    """The figures of :class:`Power` for ``rows``, given the variance at no change."""
    n = len(rows.accuracy)
    if variance is None or n < 2:
        return Power(n, design, answers, None, None, None, None, None, None, None, None)
    within = min(mean_of(noises), variance) if noises else 0.0
    between = variance - within
    doubled = RowNoise(
        rows.accuracy,
        tuple(2 * v for v in rows.base_answers),
        tuple(2 * v for v in rows.cand_answers),
    )
    # With no noise within rows a row's pseudo-pairs vanish (k_eff -> infinity).
    floor = None
    if between > 0:
        floor = smallest_detected_drop(
            RowNoise(rows.accuracy, (10**12,) * n, (10**12,) * n), between, math.inf
        )
    return Power(
        rows=n,
        design=design,
        k=answers,
        variance=variance,
        within=within,
        between=between,
        within_share=within / variance if variance > 0 else None,
        mde=smallest_detected_drop(rows, between, worth),
        mde_more_rows=smallest_detected_drop(rows, between, worth, copies=2),
        mde_more_k=smallest_detected_drop(doubled, between, 2 * worth),
        mde_k_infinite=floor,
    )


def power_analysis(summaries: Sequence[RowSummary]) -> Power:
    """Power of a future comparison on these rows (design "projected", :class:`Power`).

    Rows with a valid attempt; each side of the projected comparison has
    this run's valid answers and accuracy per row, and rows do not differ
    in how they change (``between`` = 0), so the variance at no change is
    the within-row noise of both sides.
    """
    used = [s for s in summaries if s.valid]
    accuracy = tuple(s.correct / s.valid for s in used)
    answers = tuple(s.valid for s in used)
    rows = RowNoise(accuracy, answers, answers)
    noises = [2 * n for s in used if (n := _unbiased_noise(s.correct, s.valid)) is not None]
    variance = mean_of(noises) if noises else (0.0 if len(used) >= 2 else None)
    worth = answers_per_row_worth(
        list(accuracy),
        None,
        mean_of(accuracy) * (1 - mean_of(accuracy)) if used else None,
        mean_of([float(a) for a in answers]) if used else 1.0,
    )
    return _power(
        PROJECTED,
        rows,
        variance,
        noises,
        worth,
        mean_of([float(a) for a in answers]) if used else None,
    )


def paired_power(baseline: Sequence[RowSummary], candidate: Sequence[RowSummary]) -> Power:
    """Power of this comparison's verdict (design "paired", :class:`Power`).

    Rows answered on both sides, matched by id as in :func:`~.paired.paired_comparison`;
    a row's accuracy is both versions' mean, its noise the sum of both
    sides' unbiased p^(1 - p^) / (v - 1) (rows with 2 or more valid answers
    on both sides); ``k`` is the mean valid attempts per side.
    """
    base_by_id = {s.id: s for s in baseline}
    diffs: list[float] = []
    noises: list[float] = []
    accuracy: list[float] = []
    base_answers: list[int] = []
    cand_answers: list[int] = []
    discordance: list[float] = []
    pairs: list[float] = []
    for cand in candidate:
        base = base_by_id.get(cand.id)
        if base is None:
            continue
        base_acc, cand_acc = row_accuracy(base), row_accuracy(cand)
        if base_acc is None or cand_acc is None:
            continue
        diffs.append(cand_acc - base_acc)
        accuracy.append((base_acc + cand_acc) / 2)
        base_answers.append(base.valid)
        cand_answers.append(cand.valid)
        discordance.append(base_acc * (1 - cand_acc) + cand_acc * (1 - base_acc))
        pairs.append(2 / (1 / base.valid + 1 / cand.valid))
        base_noise = _unbiased_noise(base.correct, base.valid)
        cand_noise = _unbiased_noise(cand.correct, cand.valid)
        if base_noise is not None and cand_noise is not None:
            noises.append(base_noise + cand_noise)
    rows = RowNoise(tuple(accuracy), tuple(base_answers), tuple(cand_answers))
    variance = sample_variance(diffs)
    worth = 1.0
    if diffs:
        pair_variance = mean_of(discordance) - mean_of(diffs) ** 2
        worth = answers_per_row_worth(diffs, None, pair_variance, mean_of(pairs))
    answers = (
        mean_of([(b + c) / 2 for b, c in zip(base_answers, cand_answers, strict=True)])
        if diffs
        else None
    )
    return _power(PAIRED, rows, variance, noises, worth, answers)
