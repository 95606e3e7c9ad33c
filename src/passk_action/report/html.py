"""The HTML report of a comparison or of one run: summary, statistics, charts, every row.

Pure: a :class:`CompareResult` (or a :class:`Run`) in, one self-contained
HTML document out (the page itself: :mod:`.html_page`).  Escaping, in two
layers:

- Markdown fragments (the reports :mod:`.compare_report` and
  :mod:`.run_report` write, whose values are already made inert by
  :mod:`.escape`) go through :func:`.html_page.markdown_html`, raw HTML
  disabled;
- every other value (row ids, decisions, check names, error details) goes
  through :func:`.charts.xml_text` (``html.escape`` after replacing the
  characters XML forbids) where it is placed, as text or as a quoted
  attribute, never anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.analysis import Analysis, VersionAnalysis, analyze
from ..core.analysis import analyze_run as analyze_one_run
from ..core.check_stability import CheckStability
from ..core.diff import Change, RowComparison
from ..core.error_bars import ErrorBar
from ..core.gate import GateFailure, Rule
from ..core.history import History
from ..core.model import Attempt, Phase, RowClass, RowRecord, Run, Scoring
from ..core.power import Power
from ..core.result import CompareResult
from ..core.scoring import decision_text, expected_text, is_right
from ..core.sequential import RuleSettings
from ..core.stats import RowSummary, summarize_run
from .charts import (
    BASELINE_COLOR,
    CANDIDATE_COLOR,
    CLASS_RANK,
    CURVE_TITLE,
    FlipBar,
    Series,
    curve_series,
    svg_curve,
    svg_flip_rates,
    svg_transition_matrix,
    transition_counts,
    xml_text,
)
from .checks import check_sentence
from .compare_report import render_compare_report
from .history_html import history_section
from .how_sure import ERROR_BAR_NOTE, STATISTICS_TITLE, noise_sentence, power_paragraphs
from .html_page import markdown_html, page
from .phrases import DETAIL_LEN, interval_text, percent, se_text
from .reasons import reason
from .run_report import render_run_report

_CHECKS_SHOWN = 12
"""Checks listed per attempt in the row details before "… and N more"."""


def _e(value: object) -> str:
    return xml_text(str(value))


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[len(text) - limit + 1 :]


# --- statistics --------------------------------------------------------------------


def _interval(bar: ErrorBar) -> str:
    if bar.low is None or bar.high is None:
        return '<span class="muted">n/a (fewer than 2 rows)</span>'
    return interval_text(bar)


def _error_bar_rows(versions: Sequence[VersionAnalysis]) -> list[str]:
    out = []
    for v in versions:
        clustered = f" ({v.accuracy.clusters} clusters)" if v.accuracy.method == "clustered" else ""
        out.append(
            f"<tr><th>{_e(v.version)}</th>"
            f'<td class="num">{percent(v.accuracy.estimate)}</td>'
            f'<td class="num">{_interval(v.accuracy)}</td>'
            f'<td class="num">{se_text(v.accuracy)}</td>'
            f'<td class="num">{percent(v.pass_k.estimate)}</td>'
            f'<td class="num">{_interval(v.pass_k)}</td>'
            f'<td class="num">{se_text(v.pass_k)}</td>'
            f'<td class="num">{v.accuracy.n}{_e(clustered)}</td></tr>'
        )
    return out


def _error_bar_table(versions: Sequence[VersionAnalysis]) -> str:
    return "\n".join(
        [
            '<table id="error-bars">',
            '<thead><tr><th></th><th class="num">mean accuracy (per row)</th>'
            '<th class="num">95% CI</th><th class="num">SE</th>'
            '<th class="num">pass^k</th><th class="num">95% CI</th><th class="num">SE</th>'
            '<th class="num">rows</th></tr></thead>',
            "<tbody>",
            *_error_bar_rows(versions),
            "</tbody>",
            "</table>",
            f'<p class="muted">{_e(ERROR_BAR_NOTE)}</p>',
        ]
    )


def _power_text(power: Power) -> str:
    # The Markdown report says the same words: one wording, two renderings.
    return "".join(markdown_html(part) for part in power_paragraphs(power))


def _flip_bars(versions: Sequence[Sequence[CheckStability]]) -> list[FlipBar]:
    """One bar group per check any version reported, the most flippy first."""
    order: dict[str, None] = {}
    rates: list[dict[str, float | None]] = []
    for checks in versions:
        rates.append({c.name: c.flip_rate for c in checks})
        for c in checks:
            order.setdefault(c.name, None)
    bars = [FlipBar(name, tuple(r.get(name) for r in rates)) for name in order]
    position = {name: i for i, name in enumerate(order)}
    return sorted(
        bars,
        key=lambda b: (
            -max((r for r in b.rates if r is not None), default=-1.0),
            position[b.label],
        ),
    )


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


def _checked(versions: Sequence[tuple[str, Sequence[CheckStability]]]) -> str:
    """The expected checks' accuracy and pass^k, escaped, after a caption (or nothing)."""
    sentence = check_sentence(versions)
    return f" {_e(sentence)}" if sentence else ""


_CURVE_CAPTION = (
    "Solid: pass^j, the share of rows right on all of j attempts; dashed: pass@j, right on at "
    "least one. The gap between them is answers that are right only sometimes."
)


# --- the row table -------------------------------------------------------------------


def _cls(row_class: RowClass) -> str:
    return f'<span class="cls cls-{row_class.value}">{row_class.value}</span>'


def _checks_text(checks: Sequence[tuple[str, str]]) -> str:
    shown = [f"<code>{_e(n)}</code>={_e(v)}" for n, v in checks[:_CHECKS_SHOWN]]
    if len(checks) > _CHECKS_SHOWN:
        shown.append(f"… and {len(checks) - _CHECKS_SHOWN} more")
    return ", ".join(shown) or '<span class="muted">—</span>'


def _attempts_table(
    title: str, attempts: Sequence[Attempt], record: RowRecord, scoring: Scoring
) -> str:
    if not attempts:
        return f"<div><p><strong>{_e(title)}</strong>: no attempts recorded.</p></div>"
    lines = [
        f"<div><p><strong>{_e(title)}</strong></p>",
        "<table><thead><tr><th>#</th><th>phase</th><th>decision</th><th>checks</th>"
        '<th class="num">seconds</th></tr></thead><tbody>',
    ]
    for a in attempts:
        if a.decision is not None:
            right = is_right(a, record, scoring)
            mark = "✓" if right else "✗"
            shown = decision_text(a.decision)
            decision = f'<span class="{"right" if right else "wrong"}">{mark} {_e(shown)}</span>'
        else:
            decision = f'<span class="err">error: {_e(a.error or "unknown")}</span>'
            if a.detail:
                decision += f"<pre>{_e(_tail(a.detail, DETAIL_LEN))}</pre>"
        if a.retries:
            decision += f'<br><span class="muted">retried after: {_e(", ".join(a.retries))}</span>'
        lines.append(
            f"<tr><td>{a.number}</td><td>{_e(a.phase.value)}</td><td>{decision}</td>"
            f'<td class="checks">{_checks_text(a.checks)}</td>'
            f'<td class="num">{a.duration_s:.2f}</td></tr>'
        )
    lines.append("</tbody></table></div>")
    return "\n".join(lines)


def _search_text(*values: str) -> str:
    return _e(" ".join(values).lower())


def _counts(summary: RowSummary) -> tuple[str, str]:
    """Right answers over valid ones, as text and as a sortable share."""
    if not summary.valid:
        return "0/0", "-1"
    return f"{summary.correct}/{summary.valid}", f"{summary.correct / summary.valid:.6f}"


@dataclass(frozen=True)
class _Column:
    key: str
    label: str
    numeric: bool = False


_COMPARE_COLUMNS = (
    _Column("id", "row"),
    _Column("gate", "gate"),
    _Column("mnb", "must-not-break"),
    _Column("baseline", "baseline"),
    _Column("candidate", "candidate"),
    _Column("change", "change"),
    _Column("confirmation", "confirmation"),
    _Column("base_right", "baseline right", True),
    _Column("cand_right", "candidate right", True),
)


def _head(columns: Sequence[_Column]) -> str:
    num = ' class="num"'
    cells = "".join(
        f"<th{num if c.numeric else ''}>"
        f'<button type="button" data-key="{c.key}">{_e(c.label)}</button></th>'
        for c in columns
    )
    return f"<thead><tr>{cells}</tr></thead>"


def _controls(options: Sequence[tuple[str, str]]) -> str:
    choices = "".join(f'<option value="{_e(v)}">{_e(label)}</option>' for v, label in options)
    # Hidden until the script runs: without it there is nothing to filter with.
    return (
        '<div class="controls" id="row-controls" hidden>'
        '<label>Filter <input id="row-filter" type="search" placeholder="row id, class, answer…" '
        'autocomplete="off"></label>'
        f'<label>Show <select id="row-show">{choices}</select></label>'
        '<span id="row-count" aria-live="polite"></span></div>'
    )


def _worded(failure: GateFailure | None, settings: RuleSettings) -> tuple[Rule, str] | None:
    """A blocking row's rule and its reason in words (None: the row does not block)."""
    return None if failure is None else (failure.rule, reason(failure, settings))


def _compare_row(
    row: RowComparison,
    record: RowRecord,
    failure: tuple[Rule, str] | None,
    base: Sequence[Attempt],
    cand: Sequence[Attempt],
    base_summary: RowSummary,
    cand_summary: RowSummary,
    scoring: Scoring,
) -> str:
    tags = ["all"]
    if failure is not None:
        tags.append("blocking")
    if row.change is not Change.UNCHANGED:
        tags.append(row.change.value)
    if row.baseline_class is not row.candidate_class:
        tags.append("changed")
    if row.must_not_break:
        tags.append("must-not-break")
    if row.in_ratchet:
        tags.append("ratchet")
    if row.candidate_check_flips or row.baseline_check_flips:
        tags.append("check-flips")
    gate = (
        f'<span class="gate-fail" title="{_e(failure[1])}">blocks: {_e(failure[0].value)}</span>'
        if failure is not None
        else '<span class="muted">—</span>'
    )
    marks = ", ".join(
        label for label, on in (("yes", row.must_not_break), ("ratchet", row.in_ratchet)) if on
    )
    base_right, base_share = _counts(base_summary)
    cand_right, cand_share = _counts(cand_summary)
    confirmation = row.confirmation.value if row.confirmation else ""
    details = [
        f"<details><summary><code>{_e(row.id)}</code></summary>",
        f"<p>expected <code>{_e(expected_text(record.expected))}</code>"
        + (
            f" · tags {', '.join(f'<code>{_e(t)}</code>' for t in record.tags)}"
            if record.tags
            else ""
        )
        + "</p>",
    ]
    if failure is not None:
        details.append(f'<p class="gate-fail">{_e(failure[0].value)}: {_e(failure[1])}</p>')
    if row.first_divergent_check is not None:
        check = row.first_divergent_check
        details.append(
            f"<p>first divergent check <code>{_e(check.name)}</code>: baseline "
            + ", ".join(f"{_e(v)} ×{n}" for v, n in check.baseline)
            + " · candidate "
            + ", ".join(f"{_e(v)} ×{n}" for v, n in check.candidate)
            + "</p>"
        )
    for side, flips in (
        ("baseline", row.baseline_check_flips),
        ("candidate", row.candidate_check_flips),
    ):
        if flips:
            names = ", ".join(f"<code>{_e(n)}</code>" for n in flips)
            details.append(
                f"<p>checks that flipped on the {side} while the decision held: {names}</p>"
            )
    details.append('<div class="attempts">')
    details.append(_attempts_table("baseline attempts", base, record, scoring))
    details.append(_attempts_table("candidate attempts", cand, record, scoring))
    details.append("</div>")
    details.append("</details>")
    search = _search_text(
        row.id,
        row.baseline_class.value,
        row.candidate_class.value,
        row.change.value,
        confirmation,
        expected_text(record.expected),
        *record.tags,
        *(a.decision or a.error or "" for a in (*base, *cand)),
    )
    css = ' class="blocking"' if failure is not None else ""
    return (
        f'<tr{css} data-id="{_e(row.id)}" data-tags="{" ".join(tags)}" data-search="{search}">'
        f'<td data-key="id" data-sort="{_e(row.id.lower())}">{"".join(details)}</td>'
        f'<td data-key="gate" data-sort="{0 if failure is not None else 1}">{gate}</td>'
        f'<td data-key="mnb" data-sort="{0 if row.must_not_break else 1}">{_e(marks)}</td>'
        f'<td data-key="baseline" data-sort="{CLASS_RANK[row.baseline_class]}">'
        f"{_cls(row.baseline_class)}</td>"
        f'<td data-key="candidate" data-sort="{CLASS_RANK[row.candidate_class]}">'
        f"{_cls(row.candidate_class)}</td>"
        f'<td data-key="change">{_e(row.change.value)}</td>'
        f'<td data-key="confirmation">{_e(confirmation)}</td>'
        f'<td data-key="base_right" class="num" data-sort="{base_share}">{base_right}</td>'
        f'<td data-key="cand_right" class="num" data-sort="{cand_share}">{cand_right}</td>'
        "</tr>"
    )


def _row_order(rows: Sequence[RowComparison], blocking: Mapping[str, GateFailure]) -> list[int]:
    """Blocking rows first, then lost, gained, other changes, then the rest, in dataset order."""

    def rank(row: RowComparison) -> int:
        if row.id in blocking:
            return 0
        if row.change is Change.LOST:
            return 1
        if row.change is Change.GAINED:
            return 2
        if row.baseline_class is not row.candidate_class:
            return 3
        return 4

    return sorted(range(len(rows)), key=lambda i: rank(rows[i]))


_COMPARE_SHOW = (
    ("all", "all rows"),
    ("blocking", "blocking the gate"),
    ("lost", "lost"),
    ("gained", "gained"),
    ("changed", "changed class"),
    ("must-not-break", "must-not-break"),
    ("ratchet", "ratchet-locked"),
    ("check-flips", "checks flipped"),
)


def render_html_report(
    result: CompareResult, *, analysis: Analysis | None = None, history: History | None = None
) -> str:
    """The self-contained HTML report of a comparison (``passk report --format html``).

    Sections: the report text (via :func:`.compare_report.render_compare_report`),
    statistics (error bars, the paired comparison, the smallest detectable
    change), charts (pass^j/pass@j curve, transition matrix, per-check flip
    rates), with ``history`` the three numbers over the base branch's
    baselines (:mod:`.history_html`), and every row in a sortable, filterable
    table whose first cell opens the row's attempts.  ``analysis`` as in the
    Markdown report.
    """
    stats = analysis if analysis is not None else analyze(result)
    cmp = result.comparison
    scoring = result.candidate.settings.scoring
    k = result.candidate.settings.k
    # Charts and statistics have their own sections below, drawn for the page.
    report = render_compare_report(result, analysis=stats, charts=False, statistics=False)
    blocking: dict[str, GateFailure] = {}
    for failure in result.gate.failures:
        if failure.rule is not Rule.PROTECTED_CHANGE and failure.id is not None:
            blocking.setdefault(failure.id, failure)
    base_by_row = result.baseline.attempts_by_row()
    cand_by_row = result.candidate.attempts_by_row()
    base_summaries = {
        s.id: s for s in summarize_run(result.rows, base_by_row, k, scoring, (Phase.MAIN,))
    }
    cand_summaries = {
        s.id: s for s in summarize_run(result.rows, cand_by_row, k, scoring, (Phase.MAIN,))
    }
    records = {r.id: r for r in result.rows}

    charts = []
    if min(len(stats.baseline.curve.points), len(stats.candidate.curve.points)):
        charts.append(
            _figure(
                svg_curve(curve_series(stats, pass_at=True), title=CURVE_TITLE),
                _CURVE_CAPTION,
            )
        )
    charts.append(
        _figure(
            svg_transition_matrix(transition_counts(cmp.rows)),
            "Rows by class over the k main attempts. Green: gained (into stable-correct); "
            "vermillion: lost (out of stable-correct); gray: unchanged.",
        )
    )
    charts.append(
        _figure(
            svg_flip_rates(_flip_bars([stats.baseline.checks, stats.candidate.checks])),
            "Share of rows (with the check reported on at least 2 valid attempts) whose "
            "check value changed between attempts, main attempts only."
            + _checked(
                [("baseline", stats.baseline.checks), ("candidate", stats.candidate.checks)]
            ),
        )
    )
    table_rows = [
        _compare_row(
            cmp.rows[i],
            records[cmp.rows[i].id],
            _worded(blocking.get(cmp.rows[i].id), result.policy.rule),
            base_by_row.get(cmp.rows[i].id, []),
            cand_by_row.get(cmp.rows[i].id, []),
            base_summaries[cmp.rows[i].id],
            cand_summaries[cmp.rows[i].id],
            scoring,
        )
        for i in _row_order(cmp.rows, blocking)
    ]
    sections = [
        f'<section id="summary">{markdown_html(report)}</section>',
        f'<section id="statistics"><h2>{STATISTICS_TITLE}</h2>',
        f'<div class="noise">{markdown_html(noise_sentence(stats.paired))}</div>',
        _error_bar_table([stats.baseline, stats.candidate]),
        _power_text(stats.power),
        "</section>",
        '<section id="charts"><h2>Charts</h2><div class="figures">',
        *charts,
        "</div></section>",
        *([history_section(history)] if history is not None else []),
        f'<section id="rows"><h2>Rows ({len(cmp.rows)})</h2>',
        "<p>Rows that block the gate come first, then rows lost, gained and otherwise changed. "
        "Click a row id for its attempts; click a column title to sort.</p>",
        _controls(_COMPARE_SHOW),
        f'<table id="rows-table" data-sorted="">{_head(_COMPARE_COLUMNS)}<tbody>',
        *table_rows,
        "</tbody></table></section>",
    ]
    title = "passk: gate " + ("passed" if result.gate.passed else "failed")
    nav = [
        ("summary", "Summary"),
        ("statistics", "Statistics"),
        ("charts", "Charts"),
        *([("history", "History")] if history is not None else []),
        ("rows", "Rows"),
    ]
    return page(title, nav, sections)


# --- a single run ------------------------------------------------------------------------

_RUN_COLUMNS = (
    _Column("id", "row"),
    _Column("mnb", "must-not-break"),
    _Column("class", "class"),
    _Column("right", "right", True),
    _Column("errors", "errors", True),
)

_RUN_SHOW = (
    ("all", "all rows"),
    ("not-stable", "not stable-correct"),
    ("must-not-break", "must-not-break"),
    ("errors", "with errors"),
)


def _run_row(
    summary: RowSummary, record: RowRecord, attempts: Sequence[Attempt], scoring: Scoring
) -> str:
    tags = ["all"]
    if summary.row_class is not RowClass.STABLE_CORRECT:
        tags.append("not-stable")
    if record.must_not_break:
        tags.append("must-not-break")
    if summary.errors:
        tags.append("errors")
    right, share = _counts(summary)
    details = (
        f"<details><summary><code>{_e(record.id)}</code></summary>"
        f"<p>expected <code>{_e(expected_text(record.expected))}</code></p>"
        + '<div class="attempts">'
        + _attempts_table("attempts", attempts, record, scoring)
        + "</div></details>"
    )
    search = _search_text(
        record.id,
        summary.row_class.value,
        expected_text(record.expected),
        *record.tags,
        *(a.decision or a.error or "" for a in attempts),
    )
    return (
        f'<tr data-id="{_e(record.id)}" data-tags="{" ".join(tags)}" data-search="{search}">'
        f'<td data-key="id" data-sort="{_e(record.id.lower())}">{details}</td>'
        f'<td data-key="mnb" data-sort="{0 if record.must_not_break else 1}">'
        f"{'yes' if record.must_not_break else ''}</td>"
        f'<td data-key="class" data-sort="{CLASS_RANK[summary.row_class]}">'
        f"{_cls(summary.row_class)}</td>"
        f'<td data-key="right" class="num" data-sort="{share}">{right}</td>'
        f'<td data-key="errors" class="num">{summary.errors}</td>'
        "</tr>"
    )


def render_run_html(run: Run, *, history: History | None = None) -> str:
    """The self-contained HTML report of one recorded run: its numbers, charts and rows.

    With ``history``, the three numbers over the base branch's baselines too.
    """
    version, summaries = analyze_one_run(run.rows, run)
    by_row = run.attempts_by_row()
    records = {r.id: r for r in run.rows}
    scoring = run.settings.scoring
    color = BASELINE_COLOR if run.agent.version.value == "baseline" else CANDIDATE_COLOR
    charts = []
    if version.curve.points:
        series = [
            Series(
                f"{version.version} pass^j", tuple(p.pass_hat for p in version.curve.points), color
            ),
            Series(
                f"{version.version} pass@j",
                tuple(p.pass_at for p in version.curve.points),
                color,
                True,
            ),
        ]
        charts.append(_figure(svg_curve(series, title=CURVE_TITLE), _CURVE_CAPTION))
    charts.append(
        _figure(
            svg_flip_rates(_flip_bars([version.checks]), versions=((version.version, color),)),
            "Share of rows (with the check reported on at least 2 valid attempts) whose "
            "check value changed between attempts." + _checked([(version.version, version.checks)]),
        )
    )
    order = sorted(
        range(len(summaries)),
        key=lambda i: (
            not records[summaries[i].id].must_not_break
            or summaries[i].row_class is RowClass.STABLE_CORRECT,
            CLASS_RANK[summaries[i].row_class],
        ),
    )
    table_rows = [
        _run_row(
            summaries[i],
            records[summaries[i].id],
            [a for a in by_row.get(summaries[i].id, []) if a.phase is Phase.MAIN],
            scoring,
        )
        for i in order
    ]
    sections = [
        f'<section id="summary">{markdown_html(render_run_report(run))}</section>',
        f'<section id="statistics"><h2>{STATISTICS_TITLE}</h2>',
        _error_bar_table([version]),
        "</section>",
        '<section id="charts"><h2>Charts</h2><div class="figures">',
        *charts,
        "</div></section>",
        *([history_section(history)] if history is not None else []),
        f'<section id="rows"><h2>Rows ({len(summaries)})</h2>',
        "<p>Must-not-break rows that are not stable-correct come first. Click a row id for its "
        "attempts; click a column title to sort.</p>",
        _controls(_RUN_SHOW),
        f'<table id="rows-table" data-sorted="">{_head(_RUN_COLUMNS)}<tbody>',
        *table_rows,
        "</tbody></table></section>",
    ]
    nav = [
        ("summary", "Summary"),
        ("statistics", "Statistics"),
        ("charts", "Charts"),
        *([("history", "History")] if history is not None else []),
        ("rows", "Rows"),
    ]
    return page(f"passk: {run.agent.version.value} run", nav, sections)
