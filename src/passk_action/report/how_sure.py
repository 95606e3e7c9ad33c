"""How sure the numbers are, in words: the noise sentence, error bars, intervals and power.

From an :class:`~passk_action.core.analysis.Analysis` already computed,
for the Markdown report, the PR comment and the HTML page alike.  Nothing
here comes from a user or an agent except a version's name, escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.analysis import Analysis, VersionAnalysis
from ..core.error_bars import ErrorBar
from ..core.paired import BETTER, WITHIN_NOISE, WORSE, PairedComparison
from ..core.power import PAIRED, Power
from .escape import inline
from .phrases import (
    VALUE_LEN,
    distinct_ends,
    interval_text,
    p_value_relation,
    percent,
    plural,
    pts,
    se_text,
    signed_points,
)

STATISTICS_TITLE = "How sure are these numbers?"

ERROR_BAR_NOTE = (
    'Error bars treat the row as the unit (Miller, "Adding Error Bars to Evals", 2024): '
    "each row's share of right answers weighs the same, so with uneven valid attempts the "
    "per-row mean can differ slightly from the pooled mean accuracy above. SE is the "
    "standard error of that mean (clustered when rows carry a cluster). The 95% CI uses "
    "Student's t on rows (or clusters) and a few pseudo-answers (Agresti–Coull), each "
    "weighing what one of a row's answers is worth, so a share near 0% or 100% still gets "
    "an honest width; in simulation it held the long-run value about 95% of the time or "
    "more, never measurably less than 94%, from 10 to 3,000 rows."
)
"""What every error-bar table says under it (Markdown report and HTML page alike)."""


def noise_sentence(paired: PairedComparison) -> str:
    """Whether the change in mean accuracy is distinguishable from noise, said plainly.

    From the paired comparison (per-row differences, Miller 2024 section 4):
    "within noise" when its 95% interval holds 0.  The exact McNemar test on
    the rows that became or stopped being stable-correct comes along, since
    the gate is about those rows.
    """
    bar = paired.difference
    rows = plural(bar.n, "row")
    mcnemar = (
        f"Stable-correct rows: {paired.c} gained vs {paired.b} lost, "
        f"exact McNemar p {p_value_relation(paired.p_value)}."
    )
    if bar.estimate is None or bar.low is None or bar.high is None:
        return (
            f"**Too few rows to tell a change from noise:** {rows} answered on both versions "
            f"(at least 2 are needed for an error bar). {mcnemar}"
        )
    low, high = distinct_ends(bar.low, bar.high, signed_points)
    interval = (
        f"mean per-row difference {signed_points(bar.estimate)} pts, 95% CI "
        f"{low} to {high} pts over {rows}"
    )
    if bar.method == "clustered":
        interval += f" in {plural(bar.clusters or 0, 'cluster')}"
    if paired.verdict == WITHIN_NOISE:
        head = f"**Within noise:** the change in mean accuracy could be chance ({interval})."
    elif paired.verdict in (BETTER, WORSE):
        head = f"**Beyond noise:** mean accuracy is {paired.verdict} on the candidate ({interval})."
    else:  # pragma: no cover - verdict_of returns one of the three above with an interval
        head = f"**{inline(paired.verdict, 40)}:** {interval}."
    return f"{head} {mcnemar}"


def power_paragraphs(power: Power) -> tuple[str, ...]:
    """The smallest drop in mean accuracy the verdict detects; whether rows or k would shrink it.

    Markdown, shared by the Markdown report (one paragraph, see
    :func:`power_text`) and the HTML page (one paragraph each); the model
    in :class:`~.power.Power` (the report's own 95% interval below 0,
    80% of the time).  Nothing in it comes from a user or an agent.
    """
    if power.mde is None:
        if power.variance is None:
            return (
                "Too few rows to estimate the smallest change this dataset can detect "
                "(at least 2 are needed).",
            )
        return (
            f"With {plural(power.rows, 'row')}, no drop in mean accuracy is flagged "
            '"worse" 80% of the time: add rows.',
        )
    if power.design == PAIRED:
        subject = (
            f"With {plural(power.rows, 'row')} answered on both versions, the smallest drop "
            'in mean accuracy this comparison flags "worse"'
        )
    else:
        subject = (
            f"With {plural(power.rows, 'row')}, the smallest drop in mean accuracy a "
            'comparison on these rows would flag "worse"'
        )
    floor = pts(power.mde_k_infinite)
    if power.mde_k_infinite is None:
        floor = "no floor (the rows do not differ in how they change)"
    text = (
        f"{subject} 80% of the time (its 95% interval below 0) is **{pts(power.mde)}**, "
        "for a drop spread evenly over the rows (the same drop from a few rows breaking "
        "entirely is flagged less often: bench/power.md). "
        f"Twice the rows: {pts(power.mde_more_rows)}; twice the attempts per row: "
        f"{pts(power.mde_more_k)}; no answer-to-answer noise at all: {floor}."
    )
    return (text, f"Advice: {power.advice}.") if power.advice else (text,)


def power_text(power: Power) -> str:
    """:func:`power_paragraphs` as one paragraph, for the compact Markdown report."""
    return " ".join(power_paragraphs(power))


def _rows_text(bar: ErrorBar) -> str:
    """Rows behind an error bar: its clusters, and rows left out for want of a valid answer."""
    notes = []
    if bar.method == "clustered":
        notes.append(plural(bar.clusters or 0, "cluster"))
    if bar.excluded:
        notes.append(f"{bar.excluded} without a valid answer left out")
    return f"{bar.n} ({', '.join(notes)})" if notes else str(bar.n)


def statistics_lines(versions: Sequence[VersionAnalysis], power: Power) -> list[str]:
    """The error-bar table of each version, what it means, and the power paragraph.

    Everything comes from an :class:`Analysis` already computed for the noise
    sentence, so the table costs a few lines of text, not another pass.
    """
    lines = [
        "",
        f"**{STATISTICS_TITLE}**",
        "",
        "| | mean accuracy (per row) | 95% CI | SE | pass^k | 95% CI | SE | rows |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in versions:
        acc, pk = v.accuracy, v.pass_k
        lines.append(
            f"| {inline(v.version, VALUE_LEN)} | {percent(acc.estimate)} | {interval_text(acc)} "
            f"| {se_text(acc)} | {percent(pk.estimate)} | {interval_text(pk)} | {se_text(pk)} "
            f"| {_rows_text(acc)} |"
        )
    return [*lines, "", ERROR_BAR_NOTE, "", power_text(power)]


def interval_line(analysis: Analysis) -> str:
    """The 95% intervals of both versions on one line: what a PR comment has room for."""
    base, cand = analysis.baseline, analysis.candidate
    return (
        f"**95% CI** (row as the unit): mean accuracy baseline {interval_text(base.accuracy)}, "
        f"candidate {interval_text(cand.accuracy)} · pass^k baseline "
        f"{interval_text(base.pass_k)}, candidate {interval_text(cand.pass_k)}."
    )
