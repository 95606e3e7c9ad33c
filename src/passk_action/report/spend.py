"""Cost and latency beside reliability: the comment's one line and the report's section.

Pure: takes a :class:`~passk_action.core.cost.SpendComparison` (or one run's
:class:`~passk_action.core.cost.Spend`) and returns Markdown text.
"""

from __future__ import annotations

from ..core.cost import PairedChange, RelativeChange, Spend, SpendComparison, relative_change
from ..core.money import usd

PERCENTILE_NOTE = (
    "Latency is each main attempt's wall time; p50 and p95 by linear interpolation "
    "between order statistics (Hyndman-Fan type 7, numpy's default). Per decision: "
    "the sum over main attempts, errors included, divided by the decisions made."
)
NONE = "—"


def money(value: float | None, extra: int = 0) -> str:
    """US dollars as :func:`~passk_action.core.money.usd` writes them; ``—`` when unknown."""
    return NONE if value is None else usd(value, extra)


def seconds(value: float | None, extra: int = 0) -> str:
    """A duration: milliseconds below a second, else seconds to two decimals (plus ``extra``)."""
    if value is None:
        return NONE
    if abs(value) < 1:
        return f"{value * 1000:.{extra}f} ms"
    return f"{value:.{2 + extra}f} s"


def tokens(value: float | None) -> str:
    return NONE if value is None else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    return NONE if value is None else f"{value * 100:.1f}%"


def _relative(value: float | None) -> str:
    return "" if value is None else f" ({value * 100:+.0f}%)"


def _signed(text: str) -> str:
    return text if text.startswith(("-", NONE)) else "+" + text


_MORE_DIGITS = 8
"""At most this many decimals more for the ends of an interval, so they differ."""


def _interval(change: PairedChange, unit: str) -> str | None:
    """The paired 95% interval, e.g. ``+$0.00002 to +$0.00004``.

    None when every row's difference is the same (zero spread: there is no
    interval, the change is exact on these rows).  Ends that differ but read
    alike at the usual digits get more digits until they read apart (e.g.
    ``+$0.0000686 to +$0.0000692``), never two equal ends.
    """
    if change.low is None or change.high is None:
        return "n/a (fewer than 2 rows)"
    if change.low == change.high:
        return None
    fmt = money if unit == "$" else seconds
    for extra in range(_MORE_DIGITS + 1):
        low, high = _signed(fmt(change.low, extra)), _signed(fmt(change.high, extra))
        if low != high:
            break
    return f"{low} to {high}"


def _spread(change: PairedChange, unit: str) -> str:
    """``95% CI a to b``, or ``the same on every row`` when the rows do not vary."""
    interval = _interval(change, unit)
    return "the same on every row" if interval is None else f"95% CI {interval}"


def _relative_interval(increase: float | None, change: RelativeChange) -> str:
    """`` (+50%, 95% CI +31% to +71%)``: the change and the interval of that same change.

    The interval is of the relative change of the cost per decision, rows
    paired (:func:`~passk_action.core.cost.ratio_change`); left out with
    fewer than 2 rows, and "the same on every row" when it has no width.
    Ends that read alike get a decimal more, never two equal ends.
    """
    if increase is None:
        return ""
    if change.low is None or change.high is None:
        return f" ({increase * 100:+.0f}%)"
    if change.high - change.low < 1e-12:
        return f" ({increase * 100:+.0f}%, the same on every row)"
    for decimals in range(_MORE_DIGITS + 1):
        low, high = f"{change.low * 100:+.{decimals}f}%", f"{change.high * 100:+.{decimals}f}%"
        if low != high:
            break
    return f" ({increase * 100:+.0f}%, 95% CI {low} to {high})"


def _has_latency(spend: Spend) -> bool:
    # Imported runs often carry no timings at all: say nothing rather than "0 ms".
    return spend.latency_p95 is not None and spend.latency_p95 > 0


def _anything(spend: SpendComparison) -> bool:
    """Whether either run has timings or usage to show (imported runs may have neither)."""
    return any(_has_latency(s) or s.reports_usage for s in (spend.baseline, spend.candidate))


def cost_line(spend: SpendComparison) -> str | None:
    """One compact line for the PR comment, under the three numbers.

    Cost per decision with its relative change and that change's paired 95%
    interval (rows as units) when either version reports a cost, p95 latency when
    there are timings, tokens per decision when reported, and the error
    rate; each as baseline -> candidate.  None when neither run has timings
    or usage.
    """
    if not _anything(spend):
        return None
    base, cand = spend.baseline, spend.candidate
    parts = []
    if base.cost_per_decision is not None or cand.cost_per_decision is not None:
        text = f"{money(base.cost_per_decision)} → {money(cand.cost_per_decision)} per decision"
        parts.append(text + _relative_interval(spend.cost_increase, spend.cost_per_decision))
    if _has_latency(base) or _has_latency(cand):
        text = f"p95 {seconds(base.latency_p95)} → {seconds(cand.latency_p95)}"
        parts.append(text + _relative(spend.latency_p95_increase))
    if base.tokens_per_decision is not None or cand.tokens_per_decision is not None:
        parts.append(
            f"{tokens(base.tokens_per_decision)} → {tokens(cand.tokens_per_decision)} "
            "tokens/decision"
        )
    parts.append(f"errors {_rate(base.error_rate)} → {_rate(cand.error_rate)}")
    return "**Cost & latency:** " + " · ".join(parts)


def _row(name: str, spend: Spend) -> str:
    p50, p95 = (spend.latency_p50, spend.latency_p95) if _has_latency(spend) else (None, None)
    return (
        f"| {name} | {seconds(p50)} | {seconds(p95)} "
        f"| {tokens(spend.tokens_per_decision)} | {money(spend.cost_per_decision)} "
        f"| {money(spend.total_cost)} | {_rate(spend.error_rate)} |"
    )


_HEAD = [
    "| | latency p50 | latency p95 | tokens / decision | cost / decision | run cost | errors |",
    "|---|---:|---:|---:|---:|---:|---:|",
]


def _coverage(name: str, spend: Spend) -> str | None:
    """Say so when some decisions reported no cost: the figures cover the others only."""
    missing = spend.decisions - spend.cost_decisions
    if spend.cost_attempts == 0 or missing == 0:
        return None
    return (
        f"{name}: {missing} of {spend.decisions} decisions report no cost; its cost per "
        f"decision is the mean over the {spend.cost_decisions} that do."
    )


def _change_row(spend: SpendComparison) -> str:
    base, cand = spend.baseline, spend.candidate

    def rel(a: float | None, b: float | None) -> str:
        change = relative_change(a, b)
        return NONE if change is None else f"{change * 100:+.0f}%"

    errors = (
        NONE
        if base.error_rate is None or cand.error_rate is None
        else f"{(cand.error_rate - base.error_rate) * 100:+.1f} pts"
    )
    return (
        f"| change | {rel(base.latency_p50, cand.latency_p50)} "
        f"| {rel(base.latency_p95, cand.latency_p95)} "
        f"| {rel(base.tokens_per_decision, cand.tokens_per_decision)} "
        f"| {rel(base.cost_per_decision, cand.cost_per_decision)} "
        f"| {rel(base.total_cost, cand.total_cost)} | {errors} |"
    )


def spend_lines(spend: SpendComparison) -> list[str]:
    """The report's "Cost and latency" section: both versions, the change, paired intervals.

    Empty when neither run has timings or usage.
    """
    if not _anything(spend):
        return []
    lines = ["", "## Cost and latency", "", *_HEAD]
    lines += [_row("baseline", spend.baseline), _row("candidate", spend.candidate)]
    lines.append(_change_row(spend))
    paired = []
    if spend.cost.rows:
        paired.append(
            f"mean cost per attempt {_signed(money(spend.cost.estimate))} "
            f"({_spread(spend.cost, '$')})"
        )
    if _has_latency(spend.baseline) or _has_latency(spend.candidate):
        paired.append(
            f"mean latency per attempt {_signed(seconds(spend.latency.estimate))} "
            f"({_spread(spend.latency, 's')})"
        )
    if paired:
        rows = max(spend.cost.rows, spend.latency.rows)
        lines += [
            "",
            f"Change paired by row ({rows} rows, candidate − baseline, Student t): "
            + "; ".join(paired)
            + ".",
        ]
    notes = [n for n in (_coverage("Baseline", spend.baseline), _coverage("Candidate",
             spend.candidate)) if n]  # fmt: skip
    if spend.baseline.priced or spend.candidate.priced:
        notes.append("Costs of attempts that reported tokens only come from the config's pricing.")
    lines += ["", " ".join([*notes, PERCENTILE_NOTE])]
    return lines


def run_spend_lines(spend: Spend) -> list[str]:
    """One run's cost and latency (``passk report`` of a run); empty with neither."""
    if not (_has_latency(spend) or spend.reports_usage):
        return []
    lines = ["", "## Cost and latency", "", *_HEAD, _row("this run", spend)]
    notes = [n for n in (_coverage("This run", spend),) if n]
    if spend.priced:
        notes.append("Costs of attempts that reported tokens only come from the config's pricing.")
    return [*lines, "", " ".join([*notes, PERCENTILE_NOTE])]
