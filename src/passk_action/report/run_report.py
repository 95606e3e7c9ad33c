"""The report of one recorded run (``passk report RUN``), in Markdown and as data.

Pure: a :class:`Run` in, text or JSON-ready data out.  Only the k main
attempts count in the three numbers; confirmation attempts are counted apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.analysis import VersionAnalysis, analyze_run
from ..core.check_stability import check_stability
from ..core.cost import summarize_spend
from ..core.judging import JudgeNoise, judge_noise
from ..core.model import Attempt, Json, Phase, RowClass, RowRecord, Run, expected_json
from ..core.pass_curve import pass_curve
from ..core.power import Power, power_analysis
from ..core.stats import Metrics, RowSummary, compute_metrics, summarize_run
from .charts import CLASS_RANK
from .checks import check_lines
from .escape import block, code, inline
from .phrases import (
    DETAIL_LEN,
    ID_LEN,
    VALUE_LEN,
    agent_text,
    counts_text,
    errors_by_row,
    expected_words,
    percent,
    plural,
    ranked_counts,
    run_errors_line,
    short_digest,
    shown_decisions,
    trials_note,
)
from .spend import run_spend_lines


@dataclass(frozen=True)
class _RunView:
    """A run reduced once to what both the Markdown and the JSON report show."""

    metrics: Metrics
    summaries: tuple[RowSummary, ...]
    errors_by_reason: dict[str, int]
    row_errors: dict[str, list[tuple[str, int]]]
    first_error: dict[str, Attempt]
    confirm_attempts: int
    measure_attempts: int = 0
    """A baseline's measurement of its gated rows (``passk baseline``, the relative rule)."""


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
        confirm_attempts=sum(1 for a in run.attempts if a.phase is Phase.CONFIRM),
        measure_attempts=sum(1 for a in run.attempts if a.phase is Phase.MEASURE),
    )


def _class_counts(metrics: Metrics) -> str:
    return " · ".join(f"{cls.value} {metrics.classes.get(cls, 0)}" for cls in RowClass)


def render_run_report(run: Run, *, rows_limit: int = 50, reader: str | None = None) -> str:
    """The Markdown report of one recorded run (``passk report``).

    ``reader``: the passk version reading it; a run an earlier version recorded
    says so, and that its attempts are read as recorded (not measured again).
    """
    view = _run_view(run)
    m = view.metrics
    records = {r.id: r for r in run.rows}
    attempts_line = (
        f"k = {run.settings.k} per row · {plural(m.attempts, 'attempt')}: "
        f"{m.valid} valid, {plural(m.errors, 'error')}"
    )
    extra = [
        plural(count, what)
        for count, what in (
            (view.measure_attempts, "measurement attempt"),
            (view.confirm_attempts, "confirmation attempt"),
        )
        if count
    ]
    if extra:
        attempts_line += f" · {' and '.join(extra)} recorded, not counted in the numbers"
    lines = [
        f"# passk report: {run.agent.version.value} run",
        "",
        f"- **Agent:** {agent_text(run.agent)}",
        f"- **Dataset:** {code(short_digest(run.dataset_digest), 40)} · {plural(m.rows, 'row')}",
        f"- **Attempts:** {attempts_line}",
    ]
    if run.ratchet:
        lines.append(f"- **Ratchet:** {plural(len(run.ratchet), 'row')} locked stable-correct")
    if run.created_at or run.tool_version:
        recorded = inline(run.created_at, 40) if run.created_at else "unknown time"
        if run.tool_version:
            recorded += f" by passk {code(run.tool_version, 40)}"
            if reader is not None and reader != run.tool_version:
                recorded += (
                    f" (another version than this passk {code(reader, 40)}, which reads its "
                    "attempts as recorded; `passk baseline` records it again)"
                )
        lines.append(f"- **Recorded:** {recorded}")
    lines += [
        "",
        "| mean accuracy | pass^k | flip rate |",
        "|---:|---:|---:|",
        f"| {percent(m.mean_accuracy)} | {percent(m.pass_k)} | {percent(m.flip_rate)} |",
        "",
        f"**Rows by class:** {_class_counts(m)}",
    ]
    trials = trials_note([("run", m)])
    if trials is not None:
        lines += ["", trials]
    lines += [
        "",
        "**Errors by reason:** "
        + (counts_text(view.errors_by_reason.items()) if view.errors_by_reason else "none"),
    ]
    by_cause = run_errors_line(run)
    if by_cause is not None:
        lines += ["", by_cause]
    judged = run_noise_sentence(judge_noise(run.attempts, run.settings.scoring))
    if judged is not None:
        lines += ["", f"**Judge:** {inline(judged, 2000)}"]
    lines += run_spend_lines(summarize_spend(run))
    if any(r.expected_checks for r in run.rows):
        checks = check_stability(
            run.rows, run.attempts_by_row(), run.settings.scoring, k=run.settings.k
        )
        lines += check_lines([(run.agent.version.value, checks)])

    lines += _imported_lines(run, view.summaries)

    lines += _unstable_rows(view, records, rows_limit)
    lines += _error_details(view)
    return "\n".join(lines) + "\n"


def _unstable_rows(view: _RunView, records: Mapping[str, RowRecord], rows_limit: int) -> list[str]:
    """The rows that are not stable-correct, must-not-break ones first, worst class first."""
    lines: list[str] = []
    shaky = sorted(
        (s for s in view.summaries if s.row_class is not RowClass.STABLE_CORRECT),
        key=lambda s: (not records[s.id].must_not_break, CLASS_RANK[s.row_class]),
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
                f"| {label} | {s.row_class.value} | {inline(expected_words(record), VALUE_LEN)} "
                f"| {counts_text(ranked_counts(shown_decisions(s.decisions)))} "
                f"| {counts_text(view.row_errors.get(s.id, []))} |"
            )
        if len(shaky) > rows_limit:
            lines += ["", f"… and {len(shaky) - max(rows_limit, 0)} more"]
    return lines


def _error_details(view: _RunView) -> list[str]:
    """The first recorded error of each reason, in full."""
    lines: list[str] = []
    if view.first_error:
        lines += ["", "## Error details", ""]
        lines.append("The first recorded error of each reason:")
        for reason in view.errors_by_reason:
            attempt = view.first_error[reason]
            count = plural(view.errors_by_reason[reason], "attempt")
            lines += [
                "",
                f"**{inline(reason, VALUE_LEN)}** ({count}), "
                f"first on row {code(attempt.row_id, ID_LEN)}, attempt {attempt.number}:",
                "",
                block(attempt.detail or "(no detail recorded)", DETAIL_LEN),
            ]
    return lines


def _imported_lines(run: Run, summaries: Sequence[RowSummary]) -> list[str]:
    """What an imported run's harness user looks for: pass^1 … pass^k, and what was left out.

    pass^j is the mean over rows of C(c, j)/C(n, j), as in the tau-bench
    paper's table (see :func:`~passk_action.core.pass_curve.pass_curve`).
    """
    info = run.imported
    if info is None:
        return []
    k = run.settings.k
    curve = pass_curve([(s.attempts, s.correct) for s in summaries], max_j=k)
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


def run_analysis_json(version: VersionAnalysis, power: Power, k: int) -> dict[str, Json]:
    """One run's error bars, pass^j curve, check stability and power, as data.

    The keys of one side of :meth:`~.analysis.Analysis.to_json` plus ``k``
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
                "decisions": [None if d is None else expected_json(d) for d in s.decisions],
                "correct": s.correct,
                "valid": s.valid,
                "errors": s.errors,
            }
            for s in view.summaries
        ],
        "analysis": run_analysis_json(version, power_analysis(summaries), run.settings.k),
        "spend": summarize_spend(run).to_json(),
    }


def run_noise_sentence(noise: JudgeNoise) -> str | None:
    """The judge's noise in one run (``passk report``): None when no answer was judged
    twice."""
    if not noise.judged:
        return None
    rows = "; ".join(f"{row} {s} of {n}" for row, n, s in noise.rows[:10])
    return (
        f"the judge judged the same answer differently on {noise.split} of {noise.judged} "
        "answers: that is the judge's noise, not the agent's (the flip rate counts answers "
        "the agent gave differently)"
        + (f"; per row: {rows}; raise scoring.judge_repeats, or fix the rubric" if rows else "")
    )
