"""Markdown for people: the run report and the compare report (the PR comment: :mod:`.comment`).

Pure: a recorded run or a :class:`CompareResult` in, text out.  Every value
that came from a user or an agent goes through :mod:`.escape` exactly once,
where it is placed (``inline`` in tables and prose, ``code`` for ids and
check names in lists, ``block`` for stderr), so nothing in a row id, a
decision or an error detail can format, link, ping or forge our markers.

The three numbers always appear together, side by side; every list states its
exact count and is capped with "… and N more" so a report stays readable and a
comment fits GitHub's size limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..core.cost import compare_spend, summarize_spend
from ..core.diff import Change, Confirmation, DivergentCheck, RowComparison
from ..core.gate import GateDecision, GateFailure, Rule
from ..core.model import AgentInfo, Attempt, Json, Phase, RowClass, Run
from ..core.result import CompareResult, Executions
from ..core.stats import Metrics, RowSummary, compute_metrics, summarize_run
from ..core.uncertainty import (
    BETTER,
    PAIRED,
    WITHIN_NOISE,
    WORSE,
    Analysis,
    ErrorBar,
    PairedComparison,
    PassCurve,
    Power,
    VersionAnalysis,
    analyze,
    analyze_run,
    p_value_text,
    pass_curve,
    power_analysis,
)
from ..errors import AgentCouldNotRun, last_line
from .charts import (
    BASELINE_COLOR,
    CANDIDATE_COLOR,
    CLASS_ORDER,
    Series,
    mermaid_curve,
    transition_counts,
)
from .escape import block, code, inline
from .spend import cost_line, run_spend_lines, spend_lines

ID_LEN = 80
VALUE_LEN = 40
REASON_LEN = 300
DETAIL_LEN = 2000
REPORT_LIST_LIMIT = 200
"""Items per list in the full reports (the counts stay exact)."""

# --- shared formatting helpers -------------------------------------------


def percent(value: float | None) -> str:
    """A share as a percentage with one decimal; "n/a" when undefined."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def points(before: float | None, after: float | None) -> str:
    """The change of a share in percentage points, signed ("+4.2 pts")."""
    if before is None or after is None:
        return "n/a"
    delta = round((after - before) * 100, 1)
    if delta == 0:
        return "0.0 pts"  # never "-0.0": a rounding artifact looks like a loss
    return f"{delta:+.1f} pts"


def signed(before: int, after: int) -> str:
    delta = after - before
    return f"{delta:+d}" if delta else "0"


def ranked_counts(values: Sequence[str | None]) -> list[tuple[str, int]]:
    """Distinct values with their counts, most frequent first, then first seen.

    ``None`` (an error attempt, not a decision) is left out.
    """
    counts = Counter(v for v in values if v is not None)
    order = {v: i for i, v in reversed(list(enumerate(v for v in values if v is not None)))}
    return sorted(counts.items(), key=lambda item: (-item[1], order[item[0]]))


def counts_text(pairs: Iterable[tuple[str, int]]) -> str:
    """``approve ×2, deny ×1``, each value inert; "—" when there is none."""
    text = ", ".join(f"{inline(value, VALUE_LEN)} ×{n}" for value, n in pairs)
    return text or "—"


def short_digest(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to tell datasets apart."""
    algorithm, sep, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:12]}" if sep else digest[:19]


def capped(items: Sequence[str], limit: int) -> list[str]:
    """Markdown list items, at most ``limit`` of them plus "… and N more"."""
    lines = [f"- {item}" for item in items[: max(limit, 0)]]
    hidden = len(items) - len(lines)
    if hidden > 0:
        lines.append(f"- … and {hidden} more")
    return lines


def errors_by_row(attempts: Iterable[Attempt]) -> dict[str, list[tuple[str, int]]]:
    """Error reasons of each row's error attempts, most frequent first."""
    per_row: dict[str, Counter[str]] = {}
    for a in attempts:
        if a.error is not None:
            per_row.setdefault(a.row_id, Counter())[a.error] += 1
    return {
        row: sorted(c.items(), key=lambda item: (-item[1], item[0])) for row, c in per_row.items()
    }


def _row_label(row_id: str, *, must_not_break: bool = False, ratchet: bool = False) -> str:
    tags = [t for t, on in (("must-not-break", must_not_break), ("ratchet", ratchet)) if on]
    return code(row_id, ID_LEN) + (f" ({', '.join(tags)})" if tags else "")


def _agent_text(agent: AgentInfo) -> str:
    text = inline(agent.description, 120) if agent.description else "*(no description)*"
    if agent.commit:
        text += f" at {code(agent.commit[:12], 12)}"
    if agent.dirty:
        text += " (+ uncommitted changes)"
    return text


def _numbers_table(base: Metrics, cand: Metrics, *, counts: bool) -> list[str]:
    """Baseline, candidate and change, the three numbers side by side."""
    head = "| | mean accuracy | pass^k | flip rate |"
    rule = "|---|---:|---:|---:|"
    rows = [
        ("baseline", base),
        ("candidate", cand),
    ]
    lines = []
    if counts:
        head += " rows | errors |"
        rule += "---:|---:|"
    lines += [head, rule]
    for name, m in rows:
        line = (
            f"| {name} | {percent(m.mean_accuracy)} | {percent(m.pass_k)} "
            f"| {percent(m.flip_rate)} |"
        )
        if counts:
            line += f" {m.rows} | {m.errors} |"
        lines.append(line)
    change = (
        f"| change | {points(base.mean_accuracy, cand.mean_accuracy)} "
        f"| {points(base.pass_k, cand.pass_k)} | {points(base.flip_rate, cand.flip_rate)} |"
    )
    if counts:
        change += f" {signed(base.rows, cand.rows)} | {signed(base.errors, cand.errors)} |"
    lines.append(change)
    return lines


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


# --- the run report ------------------------------------------------------

_CLASS_SEVERITY = {
    RowClass.UNCLASSIFIED: 0,
    RowClass.FLIP: 1,
    RowClass.STABLE_WRONG: 2,
    RowClass.STABLE_CORRECT: 3,
}


@dataclass(frozen=True)
class _RunView:
    """A run reduced once to what both the Markdown and the JSON report show."""

    metrics: Metrics
    summaries: tuple[RowSummary, ...]
    errors_by_reason: dict[str, int]
    row_errors: dict[str, list[tuple[str, int]]]
    first_error: dict[str, Attempt]
    confirm_attempts: int


def _run_view(run: Run, summaries: Sequence[RowSummary] | None = None) -> _RunView:
    """Main attempts only: the headline numbers are defined over the k main attempts.

    ``summaries`` are the run's main-attempt row summaries when the caller
    already has them (the analysis computes the very same ones).
    """
    k = run.settings.k
    by_row = run.attempts_by_row()
    if summaries is None:
        summaries = summarize_run(run.rows, by_row, k, run.settings.scoring)
    summaries = tuple(summaries)
    main = [a for a in run.attempts if a.phase is Phase.MAIN]
    reasons: Counter[str] = Counter()
    first: dict[str, Attempt] = {}
    for attempts in by_row.values():
        for a in attempts:
            if a.phase is Phase.MAIN and a.error is not None:
                reasons[a.error] += 1
                first.setdefault(a.error, a)
    return _RunView(
        metrics=compute_metrics(summaries, k),
        summaries=summaries,
        errors_by_reason=dict(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
        row_errors=errors_by_row(main),
        first_error=first,
        confirm_attempts=len(run.attempts) - len(main),
    )


def _class_counts(metrics: Metrics) -> str:
    return " · ".join(f"{cls.value} {metrics.classes.get(cls, 0)}" for cls in RowClass)


def render_run_report(run: Run, *, rows_limit: int = 50) -> str:
    """The Markdown report of one recorded run (``passk report``)."""
    view = _run_view(run)
    m = view.metrics
    records = {r.id: r for r in run.rows}
    attempts_line = (
        f"k = {run.settings.k} per row · {_plural(m.attempts, 'attempt')}: "
        f"{m.valid} valid, {_plural(m.errors, 'error')}"
    )
    if view.confirm_attempts:
        attempts_line += (
            f" · {_plural(view.confirm_attempts, 'confirmation attempt')} recorded, "
            "not counted in the numbers"
        )
    lines = [
        f"# passk report: {run.agent.version.value} run",
        "",
        f"- **Agent:** {_agent_text(run.agent)}",
        f"- **Dataset:** {code(short_digest(run.dataset_digest), 40)} · {_plural(m.rows, 'row')}",
        f"- **Attempts:** {attempts_line}",
    ]
    if run.ratchet:
        lines.append(f"- **Ratchet:** {_plural(len(run.ratchet), 'row')} locked stable-correct")
    if run.created_at or run.tool_version:
        recorded = inline(run.created_at, 40) if run.created_at else "unknown time"
        if run.tool_version:
            recorded += f" by passk {code(run.tool_version, 40)}"
        lines.append(f"- **Recorded:** {recorded}")
    lines += [
        "",
        "| mean accuracy | pass^k | flip rate |",
        "|---:|---:|---:|",
        f"| {percent(m.mean_accuracy)} | {percent(m.pass_k)} | {percent(m.flip_rate)} |",
        "",
        f"**Rows by class:** {_class_counts(m)}",
        "",
        "**Errors by reason:** "
        + (counts_text(view.errors_by_reason.items()) if view.errors_by_reason else "none"),
    ]
    lines += run_spend_lines(summarize_spend(run))

    lines += _imported_lines(run, view.summaries)

    shaky = sorted(
        (s for s in view.summaries if s.row_class is not RowClass.STABLE_CORRECT),
        key=lambda s: (not records[s.id].must_not_break, _CLASS_SEVERITY[s.row_class]),
    )
    if shaky:
        lines += [
            "",
            f"## Rows that are not stable-correct ({len(shaky)})",
            "",
            "| row | class | expected | decisions | errors |",
            "|---|---|---|---|---|",
        ]
        for s in shaky[: max(rows_limit, 0)]:
            record = records[s.id]
            label = inline(s.id, ID_LEN) + (" · must-not-break" if record.must_not_break else "")
            lines.append(
                f"| {label} | {s.row_class.value} | {inline(record.expected, VALUE_LEN)} "
                f"| {counts_text(ranked_counts(s.decisions))} "
                f"| {counts_text(view.row_errors.get(s.id, []))} |"
            )
        if len(shaky) > rows_limit:
            lines += ["", f"… and {len(shaky) - max(rows_limit, 0)} more"]

    if view.first_error:
        lines += ["", "## Error details", ""]
        lines.append("The first recorded error of each reason:")
        for reason in view.errors_by_reason:
            attempt = view.first_error[reason]
            count = _plural(view.errors_by_reason[reason], "attempt")
            lines += [
                "",
                f"**{inline(reason, VALUE_LEN)}** ({count}), "
                f"first on row {code(attempt.row_id, ID_LEN)}, attempt {attempt.number}:",
                "",
                block(attempt.detail or "(no detail recorded)", DETAIL_LEN),
            ]
    return "\n".join(lines) + "\n"


def run_analysis_json(version: VersionAnalysis, power: Power, k: int) -> dict[str, Json]:
    """One run's error bars, pass^j curve, check stability and power, as data.

    The keys of one side of :meth:`~.uncertainty.Analysis.to_json` plus ``k``
    and ``power`` (with a single version there is no paired MDE: it is null).
    """
    return {"k": k, **version.to_json(), "power": power.to_json()}


def run_report_json(run: Run) -> dict[str, Json]:
    """The same report as data, for ``passk report --format json``: every row, no cap.

    ``analysis`` (see :func:`run_analysis_json`) reuses the row summaries the
    report needs anyway, so it costs the check-stability pass and little more.
    """
    version, summaries = analyze_run(run.rows, run)
    view = _run_view(run, summaries)
    records = {r.id: r for r in run.rows}
    return {
        "metrics": view.metrics.to_json(),
        "errors_by_reason": dict(view.errors_by_reason),
        "rows": [
            {
                "id": s.id,
                "class": s.row_class.value,
                "must_not_break": records[s.id].must_not_break,
                "decisions": list(s.decisions),
                "correct": s.correct,
                "valid": s.valid,
                "errors": s.errors,
            }
            for s in view.summaries
        ],
        "analysis": run_analysis_json(version, power_analysis(summaries), run.settings.k),
        "spend": summarize_spend(run).to_json(),
    }


# --- the comparison, reduced to its sections ------------------------------

_CONFIRMATION_TEXT = {
    Confirmation.BASELINE_VARIES: "the baseline also varies: it answered wrong on confirmation",
    Confirmation.NOT_REPRODUCED: "not reproduced: every confirmation answer of the "
    "candidate was right",
    Confirmation.INCONCLUSIVE: "inconclusive: a version gave no valid answer on "
    "confirmation (its attempts failed)",
    Confirmation.CONFIRMED_REGRESSION: "confirmed regression",
}


@dataclass(frozen=True)
class _Sections:
    regressions: tuple[RowComparison, ...]
    less_stable: tuple[RowComparison, ...]
    lost: tuple[RowComparison, ...]
    gained: tuple[RowComparison, ...]
    candidate_check_flips: tuple[RowComparison, ...]
    baseline_check_flips: tuple[RowComparison, ...]
    baseline_errors: dict[str, list[tuple[str, int]]]
    candidate_errors: dict[str, list[tuple[str, int]]]
    """Error reasons per row over all attempts: why a row is unclassified."""


def _protected_first(rows: Iterable[RowComparison]) -> tuple[RowComparison, ...]:
    """Must-not-break (or ratchet-locked) rows first, then dataset order."""
    return tuple(sorted(rows, key=lambda r: not (r.must_not_break or r.in_ratchet)))


def _sections(result: CompareResult) -> _Sections:
    rows = result.comparison.rows
    lost = tuple(r for r in rows if r.change is Change.LOST)
    stable = (RowClass.STABLE_CORRECT, RowClass.STABLE_WRONG)
    return _Sections(
        regressions=_protected_first(
            r for r in lost if r.confirmation is Confirmation.CONFIRMED_REGRESSION
        ),
        less_stable=_protected_first(
            r
            for r in rows
            if (r.change is Change.LOST and r.confirmation is not Confirmation.CONFIRMED_REGRESSION)
            or (
                r.baseline_class is RowClass.STABLE_WRONG
                and r.candidate_class in (RowClass.FLIP, RowClass.UNCLASSIFIED)
            )
        ),
        lost=_protected_first(lost),
        gained=tuple(r for r in rows if r.change is Change.GAINED),
        candidate_check_flips=tuple(
            r for r in rows if r.candidate_check_flips and r.candidate_final_class in stable
        ),
        baseline_check_flips=tuple(
            r for r in rows if r.baseline_check_flips and r.baseline_final_class in stable
        ),
        baseline_errors=errors_by_row(result.baseline.attempts),
        candidate_errors=errors_by_row(result.candidate.attempts),
    )


def _transition(row: RowComparison) -> str:
    text = f"{row.baseline_class.value} → {row.candidate_class.value}"
    if (row.baseline_final_class, row.candidate_final_class) != (
        row.baseline_class,
        row.candidate_class,
    ):
        text += (
            f" (with confirmation attempts: baseline {row.baseline_final_class.value}, "
            f"candidate {row.candidate_final_class.value})"
        )
    return text


def _label(row: RowComparison) -> str:
    return _row_label(row.id, must_not_break=row.must_not_break, ratchet=row.in_ratchet)


def divergence_text(check: DivergentCheck | None) -> str:
    """``first divergent check `return_window`: baseline ok ×9 · candidate ok ×5, expired ×4``."""
    if check is None:
        return "no intermediate check diverged: the versions differ at the decision itself"
    return (
        f"first divergent check {code(check.name, VALUE_LEN)}: "
        f"baseline {counts_text(check.baseline)} · candidate {counts_text(check.candidate)}"
    )


def _regression_item(row: RowComparison) -> str:
    return f"{_label(row)}: {_transition(row)}; {divergence_text(row.first_divergent_check)}"


def _unclassified_why(row: RowComparison, s: _Sections) -> str:
    """The error reasons of a side left unclassified: the first thing to fix."""
    parts = []
    for side, row_class, errors in (
        ("baseline", row.baseline_final_class, s.baseline_errors),
        ("candidate", row.candidate_final_class, s.candidate_errors),
    ):
        if row_class is RowClass.UNCLASSIFIED and row.id in errors:
            parts.append(f"; {side} errors: {counts_text(errors[row.id])}")
    return "".join(parts)


def _lost_item(row: RowComparison, s: _Sections) -> str:
    text = f"{_label(row)}: {_transition(row)}"
    if row.change is Change.LOST:
        if row.confirmation is None:
            text += "; not confirmed: no confirmation attempts were recorded"
        else:
            text += f"; {_CONFIRMATION_TEXT[row.confirmation]}"
    return text + _unclassified_why(row, s)


def _gained_item(row: RowComparison) -> str:
    return f"{_label(row)}: {_transition(row)}"


def _flip_item(row: RowComparison, names: Sequence[str], row_class: RowClass) -> str:
    checks = ", ".join(code(n, VALUE_LEN) for n in names)
    return f"{_label(row)} ({row_class.value}): {checks}"


def _failure_item(failure: GateFailure) -> str:
    rule = f"**{failure.rule.value}**"
    reason = inline(failure.reason, REASON_LEN)
    if failure.id is None:
        return f"{rule}: {reason}"
    return f"{code(failure.id, ID_LEN)}: {rule}: {reason}"


def _failure_summary(gate: GateDecision) -> str:
    by_rule = Counter(f.rule for f in gate.failures)
    parts = [f"{by_rule[rule]} {rule.value}" for rule in Rule if by_rule[rule]]
    return f"{_plural(len(gate.failures), 'failure')} ({', '.join(parts)})"


def verdict_line(result: CompareResult, sections: _Sections | None = None) -> str:
    """One line: the gate, why, and the row movement."""
    s = sections or _sections(result)
    gate = result.gate
    head = "✅ passk: gate passed" if gate.passed else "❌ passk: gate failed"
    parts = [] if gate.passed else [_failure_summary(gate)]
    parts += [
        _plural(len(s.regressions), "confirmed regression"),
        f"{len(s.gained)} gained",
        f"{len(s.lost)} lost",
    ]
    return f"{head}: {' · '.join(parts)}"


def _gate_items(gate: GateDecision, limit: int) -> list[str]:
    if not gate.failures:
        lines = ["- No gate rule is broken."]
    else:
        lines = capped([_failure_item(f) for f in gate.failures], limit)
    lines += capped([f"⚠️ {inline(w, REASON_LEN)}" for w in gate.warnings], limit)
    return lines


def _executions_text(executions: Executions, reused: bool) -> str:
    if reused:
        text = "reused recorded verdicts for this commit: no agent was run again"
        if executions.total:
            text += f" ({_plural(executions.total, 'agent execution')} recorded)"
        return text
    text = f"{_plural(executions.total, 'agent execution')}"
    detail = [
        f"candidate {executions.candidate}",
        f"baseline top-up {executions.baseline_topup}",
        f"confirmation {executions.confirm_baseline} baseline + "
        f"{executions.confirm_candidate} candidate",
    ]
    text += f" ({', '.join(detail)})"
    if executions.naive:
        text += f" instead of {executions.naive} for re-running both versions on every row"
    return text


# --- noise, the pass^j curve and the transition table ---------------------


def _p_value(p: float) -> str:
    """``= 0.049`` or ``< 0.001``: :func:`p_value_text` after a relation sign."""
    text = p_value_text(p)
    return text if text.startswith("<") else f"= {text}"


def _signed_points(value: float, decimals: int = 1) -> str:
    delta = round(value * 100, decimals)
    return f"{0:.{decimals}f}" if delta == 0 else f"{delta:+.{decimals}f}"


def _distinct_ends(low: float, high: float, show: Callable[[float, int], str]) -> tuple[str, str]:
    """Both ends of an interval with one decimal, more while they would print alike.

    The intervals are never of zero width (``core/uncertainty``), and neither
    is their text: 99.996%-100% over 100,000 rows shows as "99.996% – 100.000%",
    not "100.0% – 100.0%".  Stops at 6 decimals (a width below 1e-8 pts).
    """
    for decimals in range(1, 7):
        ends = show(low, decimals), show(high, decimals)
        if ends[0] != ends[1]:
            break
    return ends


def _percent_to(value: float, decimals: int) -> str:
    return f"{value * 100:.{decimals}f}%"


def noise_sentence(paired: PairedComparison) -> str:
    """Whether the change in mean accuracy is distinguishable from noise, said plainly.

    From the paired comparison (per-row differences, Miller 2024 section 4):
    "within noise" when its 95% interval holds 0.  The exact McNemar test on
    the rows that became or stopped being stable-correct comes along, since
    the gate is about those rows.
    """
    bar = paired.difference
    rows = _plural(bar.n, "row")
    mcnemar = (
        f"Stable-correct rows: {paired.c} gained vs {paired.b} lost, "
        f"exact McNemar p {_p_value(paired.p_value)}."
    )
    if bar.estimate is None or bar.low is None or bar.high is None:
        return (
            f"**Too few rows to tell a change from noise:** {rows} answered on both versions "
            f"(at least 2 are needed for an error bar). {mcnemar}"
        )
    low, high = _distinct_ends(bar.low, bar.high, _signed_points)
    interval = (
        f"mean per-row difference {_signed_points(bar.estimate)} pts, 95% CI "
        f"{low} to {high} pts over {rows}"
    )
    if bar.method == "clustered":
        interval += f" in {_plural(bar.clusters or 0, 'cluster')}"
    if paired.verdict == WITHIN_NOISE:
        head = f"**Within noise:** the change in mean accuracy could be chance ({interval})."
    elif paired.verdict in (BETTER, WORSE):
        head = f"**Beyond noise:** mean accuracy is {paired.verdict} on the candidate ({interval})."
    else:  # pragma: no cover - verdict_of returns one of the three above with an interval
        head = f"**{inline(paired.verdict, 40)}:** {interval}."
    return f"{head} {mcnemar}"


# --- how sure: error bars and power ----------------------------------------

STATISTICS_TITLE = "How sure are these numbers?"

ERROR_BAR_NOTE = (
    'Error bars treat the row as the unit (Miller, "Adding Error Bars to Evals", 2024): '
    "each row's share of right answers weighs the same, so with uneven valid attempts the "
    "per-row mean can differ slightly from the pooled mean accuracy above. SE is the "
    "standard error of that mean (clustered when rows carry a cluster). The 95% CI uses "
    "Student's t on rows (or clusters) and a few pseudo-rows (Agresti–Coull), so a share "
    "near 0% or 100% still gets an honest width; in simulation it held the long-run value "
    "about 95% of the time or more, never measurably less than 94%, from 10 rows up."
)
"""What every error-bar table says under it (Markdown report and HTML page alike)."""


def interval_text(bar: ErrorBar) -> str:
    """``53.0% – 100.0%``; "n/a" when there were too few rows for an interval.

    Never two equal ends: one decimal, more while they would print alike.
    """
    if bar.low is None or bar.high is None:
        return "n/a"
    low, high = _distinct_ends(bar.low, bar.high, _percent_to)
    return f"{low} – {high}"


def se_text(bar: ErrorBar) -> str:
    """The standard error in percentage points ("8.0 pts"); "n/a" when undefined."""
    return "n/a" if bar.se is None else f"{bar.se * 100:.1f} pts"


def _pts(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f} pts"


def power_paragraphs(power: Power) -> tuple[str, ...]:
    """The smallest detectable change in mean accuracy, then whether rows or k would shrink it.

    Markdown, shared by the Markdown report (one paragraph, see
    :func:`power_text`) and the HTML page (one paragraph each); formulas in
    :class:`~.uncertainty.Power` (alpha 0.05 two-sided, power 0.8).  Every
    figure is of one design: the paired comparison of a comparison, two
    independent runs for a single run.  Nothing in it comes from a user or
    an agent.
    """
    if power.mde is None:
        return (
            "Too few rows to estimate the smallest change this dataset can detect "
            "(at least 2 are needed).",
        )
    if power.design == PAIRED:
        subject = (
            f"With {_plural(power.rows, 'row')} answered on both versions, the smallest change "
            "in mean accuracy this paired comparison"
        )
    else:
        subject = (
            f"With {_plural(power.rows, 'row')}, the smallest change in mean accuracy a "
            "comparison with an independent run of as many rows"
        )
    # An estimated between-row variance of 0 is "all of it is noise", not a
    # promise that any change could be detected.
    floor = _pts(power.mde_k_infinite)
    if power.between == 0:
        floor += " (the measured variance is all noise within rows)"
    text = (
        f"{subject} detects 80% of the time at the 5% level is **{_pts(power.mde)}**. "
        f"Twice the rows: {_pts(power.mde_more_rows)}; twice the attempts per row: "
        f"{_pts(power.mde_more_k)}; no answer-to-answer noise at all: {floor}."
    )
    return (text, f"Advice: {power.advice}.") if power.advice else (text,)


def power_text(power: Power) -> str:
    """:func:`power_paragraphs` as one paragraph, for the compact Markdown report."""
    return " ".join(power_paragraphs(power))


def _rows_text(bar: ErrorBar) -> str:
    """Rows behind an error bar: its clusters, and rows left out for want of a valid answer."""
    notes = []
    if bar.method == "clustered":
        notes.append(_plural(bar.clusters or 0, "cluster"))
    if bar.excluded:
        notes.append(f"{bar.excluded} without a valid answer left out")
    return f"{bar.n} ({', '.join(notes)})" if notes else str(bar.n)


def _statistics_lines(versions: Sequence[VersionAnalysis], power: Power) -> list[str]:
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


def _imported_lines(run: Run, summaries: Sequence[RowSummary]) -> list[str]:
    """What an imported run's harness user looks for: pass^1 … pass^k, and what was left out.

    pass^j is the mean over rows of C(c, j)/C(n, j), as in the tau-bench
    paper's table (see :func:`~passk_action.core.uncertainty.pass_curve`).
    """
    info = run.imported
    if info is None:
        return []
    k = run.settings.k
    curve = pass_curve([(s.valid, s.correct) for s in summaries], max_j=k)
    left_out = (
        " · ".join(f"{inline(reason, ID_LEN)} {n}" for reason, n in info.left_out)
        if info.left_out
        else "nothing"
    )
    return [
        "",
        f"## Imported from {inline(info.source, VALUE_LEN)}",
        "",
        f"- **Errored trials:** {inline(info.convention, DETAIL_LEN)}",
        f"- **Left out:** {left_out}",
        "",
        "| " + " | ".join(f"pass^{p.j}" for p in curve.points) + " |",
        "|" + "---:|" * len(curve.points),
        "| " + " | ".join(percent(p.pass_hat) for p in curve.points) + " |",
    ]


def curve_points(analysis: Analysis) -> int:
    """How many j the two curves share: both versions are drawn over the same range."""
    return min(len(analysis.baseline.curve.points), len(analysis.candidate.curve.points))


def curve_series(analysis: Analysis, *, pass_at: bool = False) -> list[Series]:
    """pass^j (and optionally pass@j) of both versions over their common j = 1..J."""
    width = curve_points(analysis)

    def values(curve: PassCurve, at: bool) -> tuple[float, ...]:
        return tuple(p.pass_at if at else p.pass_hat for p in curve.points[:width])

    out = [
        Series("baseline pass^j", values(analysis.baseline.curve, False), BASELINE_COLOR),
        Series("candidate pass^j", values(analysis.candidate.curve, False), CANDIDATE_COLOR),
    ]
    if pass_at:
        out += [
            Series("baseline pass@j", values(analysis.baseline.curve, True), BASELINE_COLOR, True),
            Series(
                "candidate pass@j", values(analysis.candidate.curve, True), CANDIDATE_COLOR, True
            ),
        ]
    return out


CURVE_TITLE = "pass^j: share of rows right on all of j attempts"


def _curve_lines(analysis: Analysis) -> list[str]:
    """The Mermaid pass^j chart and the line saying which color is which."""
    if curve_points(analysis) == 0:
        return []
    return [
        "",
        mermaid_curve(curve_series(analysis), title=CURVE_TITLE),
        "",
        "Blue: baseline · vermillion: candidate. A line that falls faster as j grows "
        "means answers that are right less consistently.",
    ]


def _transition_lines(rows: Sequence[RowComparison]) -> list[str]:
    """Rows counted by baseline class (down) and candidate class (across)."""
    if not rows:
        return []
    counts = transition_counts(rows)
    lines = [
        "",
        "| baseline ↓ · candidate → | " + " | ".join(c.value for c in CLASS_ORDER) + " |",
        "|---|" + "---:|" * len(CLASS_ORDER),
    ]
    for base in CLASS_ORDER:
        cells = " | ".join(str(counts[(base, cand)]) for cand in CLASS_ORDER)
        lines.append(f"| {base.value} | {cells} |")
    lines += [
        "",
        "Rows by class over the k main attempts; off the diagonal, rows that changed class. "
        "The stable-correct row counts the rows lost, the stable-correct column the rows gained.",
    ]
    return lines


# --- the compare report --------------------------------------------------


def _header_facts(result: CompareResult) -> list[str]:
    base, cand = result.baseline, result.candidate
    digests = {base.dataset_digest, cand.dataset_digest}
    dataset = " vs ".join(code(short_digest(d), 40) for d in sorted(digests))
    return [
        f"- **Baseline:** {_agent_text(base.agent)}",
        f"- **Candidate:** {_agent_text(cand.agent)}",
        f"- **Dataset:** {dataset} · {_plural(len(result.rows), 'row')} · k = {cand.settings.k}",
    ]


def render_compare_report(
    result: CompareResult,
    *,
    list_limit: int = REPORT_LIST_LIMIT,
    analysis: Analysis | None = None,
    charts: bool = True,
    statistics: bool = True,
) -> str:
    """The full Markdown report of a comparison (job summary, ``passk compare``).

    ``analysis`` defaults to :func:`~.uncertainty.analyze` of ``result``
    without clusters; pass one computed with the dataset's clusters when you
    have them.  ``charts=False`` leaves out the Mermaid chart and the
    transition table, ``statistics=False`` the error-bar table and the
    power paragraph (the HTML report has its own section for each).
    """
    s = _sections(result)
    gate = result.gate
    cmp = result.comparison
    stats = analysis if analysis is not None else analyze(result)
    spend = compare_spend(result.baseline, result.candidate)
    lines = [f"# {verdict_line(result, s)}", "", *_header_facts(result), ""]
    for warning in result.warnings:
        lines += [f"> ⚠️ {inline(warning, REASON_LEN)}", ""]
    lines += _numbers_table(cmp.baseline_metrics, cmp.candidate_metrics, counts=True)
    summary = cost_line(spend)
    if summary is not None:
        lines += ["", summary]
    lines += ["", noise_sentence(stats.paired)]
    if statistics:
        lines += _statistics_lines([stats.baseline, stats.candidate], stats.power)
    lines += [
        "",
        f"**Rows:** {len(s.gained)} gained · {len(s.lost)} lost "
        f"({_plural(len(s.regressions), 'confirmed regression')})",
    ]
    if charts:
        lines += _curve_lines(stats) + _transition_lines(cmp.rows)
    lines += spend_lines(spend)
    lines += [
        "",
        "## Gate: " + ("✅ passed" if gate.passed else f"❌ failed, {_failure_summary(gate)}"),
        "",
        "The gate reads recorded verdicts only; better numbers elsewhere never override "
        "a broken rule.",
        "",
        *_gate_items(gate, list_limit),
    ]

    def section(title: str, items: list[str], intro: str | None = None) -> None:
        if not items:
            return
        lines.extend(["", f"## {title} ({len(items)})", ""])
        if intro:
            lines.extend([intro, ""])
        lines.extend(capped(items, list_limit))

    section(
        "Confirmed regressions",
        [_regression_item(r) for r in s.regressions],
        "Lost rows where, on confirmation, the baseline was right every time and the "
        "candidate was not.",
    )
    section(
        "Less stable without a confirmed regression",
        [_lost_item(r, s) for r in s.less_stable],
    )
    section("Rows gained", [_gained_item(r) for r in s.gained])
    flips = [
        f"candidate: {_flip_item(r, r.candidate_check_flips, r.candidate_final_class)}"
        for r in s.candidate_check_flips
    ] + [
        f"baseline: {_flip_item(r, r.baseline_check_flips, r.baseline_final_class)}"
        for r in s.baseline_check_flips
    ]
    section(
        "Intermediate checks that flipped while the decision held",
        flips,
        "The decision stayed the same on every attempt, but these checks took different "
        "values: that variation is hidden by the verdict alone.",
    )
    section("Notes", [inline(n, REASON_LEN) for n in result.notes])
    executions = _executions_text(result.executions, result.reused)
    lines += ["", "## Executions", "", executions[:1].upper() + executions[1:]]
    return "\n".join(lines) + "\n"


# --- an agent that could not run ----------------------------------------------


def could_not_run_title(version: str, reason: str, stderr_tail: str) -> str:
    """``passk: the <version> agent could not run — <why>``, at most 200 characters.

    One sentence for every place a person looks first (the check-run title,
    the comment's heading, the job summary's heading), so they read alike.
    ``why`` is the last line of the agent's stderr, where a missing module or
    a refused key shows, else the reason.  Plain text: callers escape it.
    """
    cause = last_line(stderr_tail) or reason
    text = f"passk: the {version} agent could not run — {' '.join(cause.split())}"
    return text if len(text) <= 200 else text[:199] + "…"


def render_could_not_run(error: AgentCouldNotRun, *, marker: str | None = None) -> str:
    """The comment and job summary when a version of the agent could not run at all.

    The gate did not decide, and the text says so first; then the reason, the
    end of the agent's stderr (where a missing module or a refused key shows)
    and how to fix it.  Nothing claims a measurement that was not made.
    """
    lines = [marker] if marker is not None else []
    lines += [
        "## "
        + inline(could_not_run_title(error.version, error.reason, error.stderr_tail), 200),
        "",
        f"**The gate did not decide.** passk stopped before measuring the {error.version}: "
        "no further attempts and no confirmation were run, because its "
        + ("setup failed." if error.during_setup else "first attempts all failed."),
        "",
        f"**Reason:** {inline(error.reason, 300)}",
    ]
    if error.where:
        lines += ["", f"**Where:** {code(error.where, 120)}"]
    if error.stderr_tail.strip():
        lines += ["", "**The end of its stderr:**", "", block(error.stderr_tail, 2000)]
    if error.hint:
        lines += ["", f"**Fix:** {inline(error.hint, 300)}"]
    return "\n".join(lines) + "\n"
