"""What a version costs and how long it takes, beside how reliable it is.

Pure: prices token counts, summarizes a run's latency, tokens, cost and
errors, and compares two runs row by row.  Only main attempts (the k per
row) enter the per-decision figures and the latency, so both versions are
measured on the same footing; a run's total cost counts every attempt,
confirmations included, because they were paid for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from .model import Attempt, Phase, Run, Usage
from .student_t import student_t_quantile, t_975
from .values import MAX_RELATIVE_CHANGE

MTOK = 1_000_000
RECORDED_DURATION_DIGITS = 4
"""Decimals of a duration as artifacts keep it (``store/codec.py``, a test holds the two
equal): the latency limit reads durations at this precision, so the gate computed when
attempts are recorded is the gate ``passk gate`` recomputes from the file."""


# ------------------------------------------------------------------- pricing


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        """(input x input price + output x output price) / 10^6; a missing count is 0."""
        return (
            (input_tokens or 0) * self.input_per_mtok + (output_tokens or 0) * self.output_per_mtok
        ) / MTOK


@dataclass(frozen=True, slots=True)
class Pricing:
    """The config's ``pricing``: one price, and optionally one per model name.

    A model reported by the agent takes the price of the longest configured
    name it equals or starts with (``gpt-4o-mini-2024-07-18`` takes
    ``gpt-4o-mini``); any other attempt takes ``default``.
    """

    default: Price | None = None
    models: tuple[tuple[str, Price], ...] = ()
    prefer_tokens: bool = False
    """``prefer: tokens``: an attempt that reports tokens is priced from them even when
    the agent reports a cost too, so the cost gate does not rest on the figure the
    agent under test chose to report (``cost_usd: 0`` passes any limit)."""

    def price_for(self, model: str | None) -> Price | None:
        if model is not None:
            matches = [(name, p) for name, p in self.models if model.startswith(name)]
            if matches:
                return max(matches, key=lambda pair: len(pair[0]))[1]
        return self.default

    def __bool__(self) -> bool:
        return self.default is not None or bool(self.models)


def priced_usage(usage: Usage, pricing: Pricing) -> Usage:
    """``usage`` with a cost computed from ``pricing`` when the agent reported none.

    A cost the agent reported is kept as it is, unless ``pricing.prefer_tokens``
    (then tokens and a price replace it).  A cost passk computed earlier
    (``priced``) is computed again with ``pricing``, so two runs compared are
    priced alike even when the prices changed in between.  Without tokens, or
    without a price for the model, nothing changes: the reported cost stands.
    """
    if usage.cost_usd is not None and not usage.priced and not pricing.prefer_tokens:
        return usage
    if usage.input_tokens is None and usage.output_tokens is None:
        return usage
    price = pricing.price_for(usage.model)
    if price is None:
        return usage
    return replace(usage, cost_usd=price.cost(usage.input_tokens, usage.output_tokens), priced=True)


def priced_attempt(attempt: Attempt, pricing: Pricing) -> Attempt:
    if attempt.usage is None or not pricing:
        return attempt
    usage = priced_usage(attempt.usage, pricing)
    return attempt if usage is attempt.usage else replace(attempt, usage=usage)


def priced_run(run: Run, pricing: Pricing) -> Run:
    """``run`` with every attempt priced (see :func:`priced_usage`); ``run`` if none changed."""
    if not pricing:
        return run
    attempts = tuple(priced_attempt(a, pricing) for a in run.attempts)
    if all(new is old for new, old in zip(attempts, run.attempts, strict=True)):
        return run
    return replace(run, attempts=attempts)


# --------------------------------------------------------------- statistics


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0 <= q <= 1) by linear interpolation between order statistics.

    Formula (Hyndman and Fan 1996, definition 7; numpy's default, and
    ``statistics.quantiles(method="inclusive")``): with x_(1) <= ... <= x_(n)
    sorted and h = (n - 1) q, Q = x_(floor h + 1) + (h - floor h)
    (x_(floor h + 2) - x_(floor h + 1)).  p50 is the median.

    Edge cases: no values -> None; one value -> that value; q = 0 and q = 1
    give the minimum and maximum.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be within [0, 1], got {q}")
    if not values:
        return None
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    if low + 1 >= len(ordered):
        return float(ordered[-1])
    return ordered[low] + (h - low) * (ordered[low + 1] - ordered[low])


@dataclass(frozen=True, slots=True)
class PairedChange:
    """The mean over rows of (candidate - baseline), with its 95% interval.

    ``rows`` is how many rows have a value on both versions; ``low`` and
    ``high`` are None with fewer than two.
    """

    estimate: float | None
    low: float | None
    high: float | None
    rows: int

    def to_json(self) -> dict[str, object]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "rows": self.rows}


def paired_change(pairs: Sequence[tuple[float, float]]) -> PairedChange:
    """Paired t interval for the mean difference of (baseline, candidate) per-row values.

    Formula (Student 1908; e.g. Wasserman, All of Statistics, 10.4): with
    d_i = candidate_i - baseline_i over n rows, d-bar +- t_{0.975, n-1}
    s_d / sqrt(n), s_d the sample standard deviation (n - 1).  Pairing by
    row removes the spread between rows (long inputs cost more on both
    versions) from the interval.

    Edge cases: no pairs -> all None; one pair -> the estimate only; all
    differences equal -> an interval of zero width at the estimate.
    """
    n = len(pairs)
    if n == 0:
        return PairedChange(None, None, None, 0)
    diffs = [c - b for b, c in pairs]
    mean = math.fsum(diffs) / n
    if n < 2:
        return PairedChange(mean, None, None, n)
    var = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    half = t_975(n - 1) * math.sqrt(var / n)
    return PairedChange(mean, mean - half, mean + half, n)


def relative_change(baseline: float | None, candidate: float | None) -> float | None:
    """candidate / baseline - 1; None when either is missing or the baseline is 0.

    Capped at :data:`~passk_action.core.values.MAX_RELATIVE_CHANGE`: both are
    finite (bounded amounts or durations, see ``core/values.py``) but their
    ratio is not when the baseline is tiny (10^-320 dollars); the cap is
    above every limit a config can set, so the gate decides the same.
    """
    if baseline is None or candidate is None or baseline <= 0:
        return None
    return min(candidate / baseline - 1, MAX_RELATIVE_CHANGE)


@dataclass(frozen=True, slots=True)
class Spend:
    """Latency, tokens, cost and errors of one run.

    Per-decision figures divide the sum over main attempts (errors too:
    they were paid for) by the main attempts that made a decision; a
    decision that reported no value counts as an average one (see
    :func:`_per_decision`).  ``cost_attempts`` and ``token_attempts`` count
    the main attempts that reported a cost or tokens; a figure is None when
    no decision did.
    """

    attempts: int
    decisions: int
    latency_p50: float | None
    latency_p95: float | None
    tokens_per_decision: float | None
    cost_per_decision: float | None
    total_cost: float | None
    """Every attempt's cost, confirmations included."""
    token_attempts: int
    cost_attempts: int
    cost_decisions: int
    """Main attempts that made a decision and carry a cost."""
    priced: bool
    """Some cost was computed from the config's pricing."""

    @property
    def errors(self) -> int:
        return self.attempts - self.decisions

    @property
    def error_rate(self) -> float | None:
        """Error attempts / main attempts; None for no attempts."""
        return self.errors / self.attempts if self.attempts else None

    @property
    def reports_usage(self) -> bool:
        return self.token_attempts > 0 or self.cost_attempts > 0

    def to_json(self) -> dict[str, object]:
        return {
            "attempts": self.attempts,
            "decisions": self.decisions,
            "error_rate": self.error_rate,
            "latency_p50_s": self.latency_p50,
            "latency_p95_s": self.latency_p95,
            "tokens_per_decision": self.tokens_per_decision,
            "cost_per_decision_usd": self.cost_per_decision,
            "total_cost_usd": self.total_cost,
            "decisions_with_cost": self.cost_decisions,
            "priced": self.priced,
        }


def _main(attempts: Iterable[Attempt]) -> list[Attempt]:
    return [a for a in attempts if a.phase is Phase.MAIN]


def _cost(attempt: Attempt) -> float | None:
    return None if attempt.usage is None else attempt.usage.cost_usd


def _tokens(attempt: Attempt) -> float | None:
    return None if attempt.usage is None else attempt.usage.tokens


def _latency(attempt: Attempt) -> float | None:
    return attempt.duration_s if attempt.timed else None


def _per_decision(
    main: Sequence[Attempt], decisions: int, of: Callable[[Attempt], float | None]
) -> tuple[float | None, int]:
    """The sum of ``of`` over main attempts per decision, and how many decisions carry it.

    Formula: (every reported value over main attempts, errored ones
    included: they were paid for, + m x the mean over the decisions that
    reported one) / decisions, m the decisions that reported none.  So a
    decision without a value counts as an average decision, never as free,
    and errored attempts' reported cost always counts: one missing value
    moves the figure by about 1 / decisions, never from one formula to
    another (it once moved a +17% change to +0%).  An errored attempt that
    reported nothing adds nothing (there is nothing to average it with).
    None when no decision reported a value.
    """
    decided = [v for a in main if a.valid and (v := of(a)) is not None]
    if not decided:
        return None, 0
    reported = math.fsum(v for a in main if (v := of(a)) is not None)
    missing = decisions - len(decided)
    return (reported + missing * math.fsum(decided) / len(decided)) / decisions, len(decided)


def summarize_spend(run: Run) -> Spend:
    """The :class:`Spend` of ``run``; latency p50/p95 by :func:`percentile` over main attempts.

    An attempt whose duration is unknown (:attr:`~.model.Attempt.timed`) is left
    out of the latency, never counted as 0 s; with none measured, p50 and p95 are None.
    """
    main = _main(run.attempts)
    decisions = sum(1 for a in main if a.valid)
    durations = _recorded_durations(main)
    tokens = [t for a in main if a.usage is not None and (t := a.usage.tokens) is not None]
    costs = [c for a in main if a.usage is not None and (c := a.usage.cost_usd) is not None]
    every_cost = [
        c for a in run.attempts if a.usage is not None and (c := a.usage.cost_usd) is not None
    ]
    tokens_per_decision, _ = _per_decision(main, decisions, _tokens)
    cost_per_decision, cost_decisions = _per_decision(main, decisions, _cost)
    return Spend(
        attempts=len(main),
        decisions=decisions,
        latency_p50=percentile(durations, 0.5),
        latency_p95=percentile(durations, 0.95),
        tokens_per_decision=tokens_per_decision,
        cost_per_decision=cost_per_decision,
        total_cost=math.fsum(every_cost) if every_cost else None,
        token_attempts=len(tokens),
        cost_attempts=len(costs),
        cost_decisions=cost_decisions,
        priced=any(a.usage is not None and a.usage.priced for a in run.attempts),
    )


def _row_means(
    by_row: Mapping[str, Sequence[Attempt]], of: Callable[[Attempt], float | None]
) -> dict[str, float]:
    """Each row's mean of ``of`` over its main attempts that carry a value."""
    out: dict[str, float] = {}
    for row_id, attempts in by_row.items():
        got = [v for a in _main(attempts) if (v := of(a)) is not None]
        if got:
            out[row_id] = math.fsum(got) / len(got)
    return out


def _pairs(
    baseline: Run, candidate: Run, of: Callable[[Attempt], float | None]
) -> list[tuple[float, float]]:
    base = _row_means(baseline.attempts_by_row(), of)
    cand = _row_means(candidate.attempts_by_row(), of)
    return [(base[r.id], cand[r.id]) for r in candidate.rows if r.id in base and r.id in cand]


FALSE_ALARM = 0.05
"""Each spend limit's stated false-alarm rate: a candidate at the limit fails at most this often."""


@dataclass(frozen=True, slots=True)
class RelativeChange:
    """A relative change (0.25 = 25% more) with its two-sided 95% interval over ``rows``.

    ``low_one_sided`` is the one-sided (1 - :data:`FALSE_ALARM`) lower
    bound the cost limit is checked against.  Interval figures are None
    with fewer than two rows or no spread.
    """

    estimate: float | None
    low: float | None
    high: float | None
    low_one_sided: float | None
    rows: int

    def to_json(self) -> dict[str, object]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "low_one_sided": self.low_one_sided,
            "rows": self.rows,
        }


def ratio_change(rows: Sequence[tuple[float, float, float, float]]) -> RelativeChange:
    """The change of a ratio of sums, (sum b / sum v) / (sum a / sum u) - 1, paired by row.

    ``rows`` are (a_i, u_i, b_i, v_i): the baseline's cost and decisions on
    row i, then the candidate's.  Interval by the delta method on the log
    ratio, rows as the unit (a ratio estimator: Cochran, "Sampling
    Techniques", 1977, 6.3; the same linearization as Miller's row-level
    SE): theta = ln(B/V) - ln(A/U) with the sums, z_i = b_i / B - v_i / V -
    a_i / A + u_i / U (sums replaced by means), SE = sd(z) / sqrt(n), and
    exp(theta +- t_{0.975, n-1} SE) - 1; the one-sided lower bound uses
    t_{1 - FALSE_ALARM, n-1}.  Pairing removes the spread between rows (long
    inputs cost more on both versions).

    Edge cases: every figure None when a sum is 0; the interval None with
    fewer than 2 rows; an interval of zero width when every z_i is equal.
    """
    n = len(rows)
    sums = [math.fsum(r[i] for r in rows) for i in range(4)]
    if n == 0 or min(sums) <= 0:
        return RelativeChange(None, None, None, None, n)
    a, u, b, v = sums
    theta = math.log(b / v) - math.log(a / u)
    estimate = _relative(theta)
    if n < 2:
        return RelativeChange(estimate, None, None, None, n)
    means = [x / n for x in sums]
    if min(means) > 0:
        z = [bi / means[2] - vi / means[3] - ai / means[0] + ui / means[1]
             for ai, ui, bi, vi in rows]  # fmt: skip
    else:  # a mean of subnormal amounts underflows to 0; the same z, divided by the sums
        z = [n * (bi / b - vi / v - ai / a + ui / u) for ai, ui, bi, vi in rows]
    mean_z = math.fsum(z) / n
    se = math.sqrt(math.fsum((x - mean_z) ** 2 for x in z) / (n - 1) / n)
    half = t_975(n - 1) * se
    one_sided = student_t_quantile(1 - FALSE_ALARM, float(n - 1)) * se
    return RelativeChange(
        estimate,
        _relative(theta - half),
        _relative(theta + half),
        _relative(theta - one_sided),
        n,
    )


_LOG_MAX_CHANGE = math.log1p(MAX_RELATIVE_CHANGE)


def _relative(log_ratio: float) -> float:
    """exp(log_ratio) - 1, capped at :data:`MAX_RELATIVE_CHANGE` as :func:`relative_change` is.

    The log of a ratio of bounded amounts is finite, its exp need not be
    (a baseline of 10^-320 dollars): ``math.exp`` would raise OverflowError.
    Each z_i is at most 4n in size (a term over its own sum), so the SE is finite.
    """
    return math.exp(min(log_ratio, _LOG_MAX_CHANGE)) - 1


def hypergeometric_tail(a: int, total: int, marked: int, drawn: int) -> float:
    """P(A >= a) for A ~ Hypergeometric(``total``, ``marked``, ``drawn``), summed in log space.

    pmf(i) = C(marked, i) C(total - marked, drawn - i) / C(total, drawn),
    each term from lgamma (exact to about 1e-12 relative), so millions of
    attempts cost a sum over at most ``marked`` terms, no big integers.
    """
    top = min(marked, drawn)
    low = max(a, 0, drawn - (total - marked))
    if low > top:
        return 0.0

    def log_comb(n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    base = log_comb(total, drawn)
    tail = math.fsum(
        math.exp(log_comb(marked, i) + log_comb(total - marked, drawn - i) - base)
        for i in range(low, top + 1)
    )
    return min(1.0, tail)


class Unchecked(str, Enum):
    """Why a spend limit was not checked (the renderers word each)."""

    NO_BASELINE_COST = "no-baseline-cost"
    NO_CANDIDATE_DECISIONS = "no-candidate-decisions"
    FEW_COST_ROWS = "few-cost-rows"
    """Fewer than 2 rows with a cost on both versions."""
    NO_CANDIDATE_LATENCY = "no-candidate-latency"
    NO_BASELINE_LATENCY = "no-baseline-latency"
    """The baseline has no latency above 0 s."""
    NO_ATTEMPTS = "no-attempts"
    FEW_ATTEMPTS = "few-attempts"
    """Too few attempts on a version to tell a p95 over the limit from noise."""


@dataclass(frozen=True, slots=True)
class LimitCheck:
    """Whether a relative limit is exceeded beyond noise, with a stated false-alarm rate.

    ``exceeded`` is None when it could not be checked (``why`` says why;
    ``fewest`` is the attempts on the version with fewer, for ``FEW_ATTEMPTS``).
    The evidence is ``bound`` (the cost: the smallest increase shown with
    95% confidence) or ``p_value`` (the latency: the quantile test's chance
    of data this extreme were the candidate exactly at the limit).
    """

    limit: float
    estimate: float | None
    exceeded: bool | None
    why: Unchecked | None = None
    bound: float | None = None
    p_value: float | None = None
    fewest: int | None = None


@dataclass(frozen=True, slots=True)
class SpendComparison:
    """Both versions' :class:`Spend` and the paired changes.

    ``cost`` and ``latency`` are paired intervals for the change in a row's
    mean cost (US dollars) and mean latency (seconds) per main attempt;
    ``cost_per_decision`` is the relative change of the cost per decision
    with its own interval (:func:`ratio_change`), the quantity the cost
    limit is about.  ``baseline_durations`` and ``candidate_durations`` are
    the main attempts' latencies, for the p95 limit's bounds.
    """

    baseline: Spend
    candidate: Spend
    cost: PairedChange
    latency: PairedChange
    cost_per_decision: RelativeChange = RelativeChange(None, None, None, None, 0)
    baseline_durations: tuple[float, ...] = ()
    candidate_durations: tuple[float, ...] = ()

    @property
    def cost_increase(self) -> float | None:
        """Relative change of the cost per decision (0.25 = 25% more)."""
        return relative_change(self.baseline.cost_per_decision, self.candidate.cost_per_decision)

    @property
    def latency_p95_increase(self) -> float | None:
        """Relative change of the p95 latency per attempt."""
        return relative_change(self.baseline.latency_p95, self.candidate.latency_p95)

    def cost_check(self, limit: float) -> LimitCheck:
        """Cost per decision over ``limit`` beyond noise: the one-sided 95% lower bound above it.

        A candidate whose true cost per decision is exactly ``limit`` above
        the baseline's fails about :data:`FALSE_ALARM` of the time (delta
        method, so approximately: ``bench/spend_limits.py`` measured 4.9% at
        50 rows, 5.9% at 24 and 6.5% at 10, where skewed costs make the
        normal approximation a little optimistic).
        """
        change = self.cost_per_decision
        if change.low_one_sided is None:
            return LimitCheck(limit, self.cost_increase, None, Unchecked.FEW_COST_ROWS)
        bound = change.low_one_sided
        return LimitCheck(limit, self.cost_increase, bound > limit, bound=bound)

    def latency_check(self, limit: float, slack: float = 0.0) -> LimitCheck:
        """p95 latency over ``limit`` beyond noise: Mood's quantile test, one-sided.

        H0: the candidate's p95 is at most (1 + ``limit``) times the
        baseline's.  Scale the baseline's latencies by 1 + ``limit``, pool
        both, take the pool's 95th percentile (:func:`percentile`), and count
        the candidate's attempts at or above it, a out of the T in all;
        under H0 at its boundary the two samples are alike, so a is
        hypergeometric (N = both counts, T, n = the candidate's), and the
        limit fails when P(A >= a) < :data:`FALSE_ALARM` (Mood, "Introduction
        to the Theory of Statistics", 1950, the median test generalized to
        a quantile; exact conditionally on T).  A candidate exactly at the
        limit fails at most 5% of the time, one as fast far less.  Not
        checked when even the nominal 5% of the pool, all the candidate's,
        would not reach 5% (too few attempts: below about 46 a version).
        ``slack`` widens the limit for float noise (the gate's 1e-9).
        """
        base, cand = self.baseline_durations, self.candidate_durations
        if not base or not cand:
            return LimitCheck(limit, self.latency_p95_increase, None, Unchecked.NO_ATTEMPTS)
        total = len(base) + len(cand)
        # Too few attempts, whatever they show: with the nominal 5% of the pool above the
        # threshold all on the candidate's side, the test still could not reach 5%.
        nominal = max(1, math.ceil(0.05 * total))
        if hypergeometric_tail(min(nominal, len(cand)), total, nominal, len(cand)) >= FALSE_ALARM:
            fewest = min(len(base), len(cand))
            increase = self.latency_p95_increase
            return LimitCheck(limit, increase, None, Unchecked.FEW_ATTEMPTS, fewest=fewest)
        scaled = [(1 + limit + slack) * x for x in base]
        threshold = percentile([*scaled, *cand], 0.95)
        assert threshold is not None
        # At or above: with tied latencies (a fake agent's) nothing may lie strictly above.
        above_cand = sum(1 for x in cand if x >= threshold)
        above = above_cand + sum(1 for x in scaled if x >= threshold)
        p_value = hypergeometric_tail(above_cand, total, above, len(cand))
        return LimitCheck(limit, self.latency_p95_increase, p_value < FALSE_ALARM, p_value=p_value)

    def to_json(self) -> dict[str, object]:
        """Both versions and the change (``passk report --format json``)."""
        return {
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "cost_increase": self.cost_increase,
            "latency_p95_increase": self.latency_p95_increase,
            "cost_per_decision_change": self.cost_per_decision.to_json(),
            "mean_cost_change_per_attempt_usd": self.cost.to_json(),
            "mean_latency_change_per_attempt_s": self.latency.to_json(),
        }


def _row_costs(run: Run) -> dict[str, tuple[float, float]]:
    """Each row's (main-attempt cost, decisions), a missing decision cost at the run's mean.

    The same imputation as :func:`_per_decision`, so the rows add up to
    the run's cost per decision.
    """
    main = _main(run.attempts)
    decided = [c for a in main if a.valid and (c := _cost(a)) is not None]
    fill = math.fsum(decided) / len(decided) if decided else 0.0
    out: dict[str, tuple[float, float]] = {}
    for row_id, attempts in run.attempts_by_row().items():
        cost = decisions = 0.0
        for a in _main(attempts):
            value = _cost(a)
            if a.valid:
                decisions += 1
                cost += fill if value is None else value
            elif value is not None:
                cost += value
        out[row_id] = (cost, decisions)
    return out


def _recorded_durations(main: Sequence[Attempt]) -> list[float]:
    """The measured durations of ``main`` (an attempt whose duration is unknown has none)."""
    return [round(a.duration_s, RECORDED_DURATION_DIGITS) for a in main if a.timed]


def compare_spend(baseline: Run, candidate: Run) -> SpendComparison:
    base_costs, cand_costs = _row_costs(baseline), _row_costs(candidate)
    per_decision = [
        (*base_costs[r.id], *cand_costs[r.id])
        for r in candidate.rows
        if r.id in base_costs and r.id in cand_costs
    ]
    return SpendComparison(
        baseline=summarize_spend(baseline),
        candidate=summarize_spend(candidate),
        cost=paired_change(_pairs(baseline, candidate, _cost)),
        latency=paired_change(_pairs(baseline, candidate, _latency)),
        cost_per_decision=ratio_change(per_decision),
        baseline_durations=tuple(_recorded_durations(_main(baseline.attempts))),
        candidate_durations=tuple(_recorded_durations(_main(candidate.attempts))),
    )
