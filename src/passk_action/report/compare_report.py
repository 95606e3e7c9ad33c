"""The full Markdown report of a comparison: the job summary and ``passk compare --markdown``.

Pure: a :class:`CompareResult` in, text out.  Every value that came from a
user or an agent goes through :mod:`.escape` exactly once, where it is placed
(``inline`` in tables and prose, ``code`` for ids and check names in lists,
``block`` for stderr), so nothing in a row id, a decision or an error detail
can format, link, ping or forge our markers.

The three numbers always appear together, side by side; every list states its
exact count and is capped with "… and N more" so a report stays readable.
The PR comment (:mod:`.comment`) shows the same sections, shorter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ..core.analysis import Analysis, analyze
from ..core.cost import compare_spend
from ..core.gate import GateDecision, GateFailure, Rule
from ..core.history import History
from ..core.model import RowRecord
from ..core.result import CompareResult
from ..core.sequential import RuleSettings
from ..core.stats import Metrics
from .charts import curve_lines, transition_lines
from .checks import check_lines
from .comment import CommentContext, why_it_failed
from .escape import code, inline
from .gated import rates_of, rates_sentence, unconfirmed_lines
from .history import marks as history_marks
from .history import notes as history_notes
from .history import with_mark
from .how_sure import noise_sentence, statistics_lines
from .notes import sentences
from .phrases import (
    ID_LEN,
    REASON_LEN,
    agent_text,
    capped,
    errors_line,
    errors_note,
    executions_text,
    percent,
    plural,
    points,
    short_digest,
    signed,
    trials_note,
)
from .reasons import reason, warnings
from .sections import (
    Sections,
    check_flip_items,
    gained_item,
    lost_item,
    regression_item,
    sections,
)
from .spend import cost_line, spend_lines

REPORT_LIST_LIMIT = 200
"""Items per list in the full reports (the counts stay exact)."""


def _numbers_table(base: Metrics, cand: Metrics) -> list[str]:
    """Baseline, candidate and change: the three numbers side by side, rows and errors."""
    lines = [
        "| | mean accuracy | pass^k | flip rate | rows | errors |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, m in (("baseline", base), ("candidate", cand)):
        lines.append(
            f"| {name} | {percent(m.mean_accuracy)} | {percent(m.pass_k)} "
            f"| {percent(m.flip_rate)} | {m.rows} | {m.errors} |"
        )
    lines.append(
        f"| change | {points(base.mean_accuracy, cand.mean_accuracy)} "
        f"| {points(base.pass_k, cand.pass_k)} | {points(base.flip_rate, cand.flip_rate)} |"
        f" {signed(base.rows, cand.rows)} | {signed(base.errors, cand.errors)} |"
    )
    return lines


def _failure_item(failure: GateFailure, settings: RuleSettings) -> str:
    rule = f"**{failure.rule.value}**"
    said = inline(reason(failure, settings), REASON_LEN)
    if failure.id is None:
        return f"{rule}: {said}"
    return f"{code(failure.id, ID_LEN)}: {rule}: {said}"


def _failure_summary(gate: GateDecision) -> str:
    by_rule = Counter(f.rule for f in gate.failures)
    parts = [f"{by_rule[rule]} {rule.value}" for rule in Rule if by_rule[rule]]
    return f"{plural(len(gate.failures), 'failure')} ({', '.join(parts)})"


def verdict_line(result: CompareResult, sorted_rows: Sections | None = None) -> str:
    """One line: the gate, why, and the row movement."""
    s = sorted_rows or sections(result)
    gate = result.gate
    head = "✅ passk: gate passed" if gate.passed else "❌ passk: gate failed"
    parts = [] if gate.passed else [_failure_summary(gate)]
    parts += [
        plural(len(s.regressions), "confirmed regression"),
        f"{len(s.gained)} gained",
        f"{len(s.lost)} lost",
    ]
    return f"{head}: {' · '.join(parts)}"


def _gate_items(gate: GateDecision, settings: RuleSettings, limit: int) -> list[str]:
    if not gate.failures:
        lines = ["- No gate rule is broken."]
    else:
        lines = capped([_failure_item(f, settings) for f in gate.failures], limit)
    lines += capped([f"⚠️ {inline(w, REASON_LEN)}" for w in warnings(gate.warnings)], limit)
    return lines


def dataset_changes(before: Sequence[RowRecord], after: Sequence[RowRecord]) -> str:
    """What differs between two versions of a dataset's rows, e.g. ``1 row added, 2 changed
    (expected ×2)``; empty when only the row order or a field passk does not record differs."""
    old, new = {r.id: r for r in before}, {r.id: r for r in after}
    added, removed = len(new.keys() - old.keys()), len(old.keys() - new.keys())
    fields: Counter[str] = Counter()
    changed = 0
    for row_id in old.keys() & new.keys():
        was, now = old[row_id], new[row_id]
        differ = [
            name
            for name, a, b in (
                ("input", was.input_digest, now.input_digest),
                ("expected", was.expected, now.expected),
                ("expected_checks", was.expected_checks, now.expected_checks),
                ("must_not_break", was.must_not_break, now.must_not_break),
                ("tags", was.tags, now.tags),
                ("cluster", was.cluster, now.cluster),
            )
            if a != b
        ]
        changed += bool(differ)
        fields.update(differ)
    parts = [f"{plural(added, 'row')} added"] if added else []
    parts += [f"{plural(removed, 'row')} removed"] if removed else []
    if changed:
        which = ", ".join(f"{name} ×{n}" for name, n in sorted(fields.items()))
        parts.append(f"{plural(changed, 'row')} changed ({which})")
    return ", ".join(parts)


def _header_facts(result: CompareResult) -> list[str]:
    base, cand = result.baseline, result.candidate
    dataset = code(short_digest(base.dataset_digest), 40)
    facts = f"{dataset} · {plural(len(result.rows), 'row')} · k = {cand.settings.k}"
    if cand.dataset_digest != base.dataset_digest:
        # A candidate run recorded earlier, on a version of the dataset whose inputs
        # match (labels, tags or marks moved since): say what moved.
        changes = dataset_changes(cand.rows, base.rows) or "the same rows in another form"
        facts += (
            f" · the candidate run was recorded on {code(short_digest(cand.dataset_digest), 40)}"
            f"; since then: {changes}"
        )
    return [
        f"- **Baseline:** {agent_text(base.agent)}",
        f"- **Candidate:** {agent_text(cand.agent)}",
        f"- **Dataset:** {facts}",
    ]


def render_compare_report(
    result: CompareResult,
    *,
    list_limit: int = REPORT_LIST_LIMIT,
    analysis: Analysis | None = None,
    charts: bool = True,
    statistics: bool = True,
    context: CommentContext | None = None,
) -> str:
    """The full Markdown report of a comparison (job summary, ``passk compare``).

    It starts, as the pull-request comment does, with "Why it failed" (every
    blocking row in full; ``context`` adds the rows' inputs, and with its
    ``history`` each lost row's history on the base branch), then the facts
    and the numbers.

    ``analysis`` defaults to :func:`~.analysis.analyze` of ``result``
    without clusters; pass one computed with the dataset's clusters when you
    have them.  ``charts=False`` leaves out the Mermaid chart and the
    transition table, ``statistics=False`` the error-bar table and the
    power paragraph (the HTML report has its own section for each).
    """
    s = sections(result)
    history = context.history if context is not None else None
    marks = history_marks(result, history)
    gate = result.gate
    cmp = result.comparison
    stats = analysis if analysis is not None else analyze(result)
    spend = compare_spend(result.baseline, result.candidate)
    why, _ = why_it_failed(
        result, context or CommentContext(), blocking=list_limit, items=list_limit
    )
    lines = [f"# {verdict_line(result, s)}", *why, "", *_header_facts(result), ""]
    for warning in sentences(result.warnings):
        lines += [f"> ⚠️ {inline(warning, REASON_LEN)}", ""]
    lines += _numbers_table(cmp.baseline_metrics, cmp.candidate_metrics)
    errors = errors_line(result.baseline, result.candidate)
    if errors is not None:
        lines += ["", errors]
    note = errors_note(cmp.baseline_metrics, cmp.candidate_metrics)
    if note:
        lines += ["", note]
    trials = trials_note([("baseline", cmp.baseline_metrics), ("candidate", cmp.candidate_metrics)])
    if trials:
        lines += ["", trials]
    summary = cost_line(spend)
    if summary is not None:
        lines += ["", summary]
    lines += check_lines(
        [("baseline", stats.baseline.checks), ("candidate", stats.candidate.checks)]
    )
    lines += ["", rates_sentence(rates_of(result), result.policy.rule)]
    lines += ["", noise_sentence(stats.paired)]
    if statistics:
        lines += statistics_lines([stats.baseline, stats.candidate], stats.power)
    lines += [
        "",
        f"**Rows:** {len(s.gained)} gained · {len(s.lost)} lost "
        f"({plural(len(s.regressions), 'confirmed regression')})",
    ]
    if charts:
        lines += curve_lines(stats) + transition_lines(cmp.rows)
    lines += spend_lines(spend)
    lines += [
        "",
        "## Gate: " + ("✅ passed" if gate.passed else f"❌ failed, {_failure_summary(gate)}"),
        "",
        "The gate reads recorded verdicts only; better numbers elsewhere never override "
        "a broken rule.",
        "",
        *_gate_items(gate, result.policy.rule, list_limit),
        *unconfirmed_lines(result, list_limit),
    ]
    lines += _row_sections(result, s, marks, history, list_limit)
    executions = executions_text(result.executions, result.reused)
    lines += ["", "## Executions", "", executions[:1].upper() + executions[1:]]
    return "\n".join(lines) + "\n"


def _row_sections(
    result: CompareResult,
    s: Sections,
    marks: Mapping[str, str],
    history: History | None,
    list_limit: int,
) -> list[str]:
    """The rows by what happened to them, each list under its heading (none when empty)."""
    lines: list[str] = []

    def section(title: str, items: list[str], intro: str | None = None) -> None:
        if not items:
            return
        lines.extend(["", f"## {title} ({len(items)})", ""])
        if intro:
            lines.extend([intro, ""])
        lines.extend(capped(items, list_limit))

    section(
        "Confirmed regressions",
        [with_mark(regression_item(r), marks.get(r.id)) for r in s.regressions],
        "Lost rows where, on confirmation, the baseline was right every time and the "
        "candidate was not.",
    )
    section(
        "Less stable without a confirmed regression",
        [with_mark(lost_item(r, s), marks.get(r.id)) for r in s.less_stable],
    )
    section("Rows gained", [gained_item(r) for r in s.gained])
    section(
        "Intermediate checks that flipped while the decision held",
        check_flip_items(s),
        "The decision stayed the same on every attempt, but these checks took different "
        "values: that variation is hidden by the verdict alone.",
    )
    section(
        "Notes",
        [inline(n, REASON_LEN) for n in (*sentences(result.notes), *history_notes(history))],
    )
    return lines
