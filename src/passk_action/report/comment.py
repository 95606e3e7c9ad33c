"""The sticky PR comment, laid out for a reviewer who reads it for ten seconds.

First screen: the verdict with its reason, the rows that block (each once,
with its input, the expected label against what each version answered, what
confirmation showed in plain words and the first check that diverged), the
three numbers with the direction of each change, and what to do next.
Everything else (noise, intervals, power, the pass^j chart, rows by class,
rows gained, other rows lost, checks that flipped, notes, executions) sits in
collapsed ``<details>`` sections.  A passing gate gets a short comment.

Pure like the rest of :mod:`passk_action.report`: data in, text out.  Every
value from a user or an agent goes through :mod:`.escape` once, where placed.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.analysis import Analysis, analyze
from ..core.causes import Kind, causes_of, dominant_kind
from ..core.cost import compare_spend
from ..core.diff import RowComparison
from ..core.gate import GateFailure, Rule
from ..core.history import History
from ..core.model import Attempt, Json, Phase, RowRecord
from ..core.result import CompareResult
from ..core.sequential import STRICT
from ..core.stats import Metrics
from ..errors import AgentCouldNotRun
from ..truncate import COMMENT_LIMIT
from .charts import curve_lines, transition_lines
from .could_not_run import could_not_finish_title, could_not_run_title
from .escape import block, code, inline
from .gated import evidence_line, rates_of, rates_sentence, unconfirmed_lines
from .history import marks as history_marks
from .history import notes as history_notes
from .history import with_mark
from .how_sure import STATISTICS_TITLE, interval_line, noise_sentence, power_text
from .notes import sentences
from .phrases import (
    ID_LEN,
    KIND_ADVICE,
    REASON_LEN,
    capped,
    confirmation_words,
    counts_text,
    differed_parts,
    divergence_text,
    errors_line,
    errors_note,
    executions_text,
    expected_line_text,
    id_list,
    judged_in_parts,
    judged_text,
    percent,
    plural,
    points,
    ranked_counts,
    reason_parts,
    short_sha,
    shown_decisions,
    transition,
    trials_note,
)
from .reasons import reason, warnings
from .sections import Sections, check_flip_items, gained_item, lost_item, sections
from .spend import cost_line

INPUT_PREVIEW_LEN = 100
INPUT_FULL_LEN = 1500
STDERR_LEN = 1500

_SAFE_URL = re.compile(r"https://[^\s<>()\[\]`\"'\\]+")


@dataclass(frozen=True)
class LabelApproval:
    """Who approved the protected changes with the allow label, for which head and base."""

    label: str
    login: str
    role: str
    head_sha: str
    base_ref: str


@dataclass(frozen=True)
class CommentContext:
    """What the comment says beyond the result: where it ran and how to follow up.

    All optional: the CLI and tests render without a pull request.
    """

    step: str | None = None
    """Names this passk step when a workflow has several (config and check name)."""
    head_sha: str | None = None
    base_sha: str | None = None
    base_ref: str | None = None
    """The branch the pull request merges into: "Reproduce locally" passes it to ``--base``."""
    config: str = "passk.yml"
    """The config path a reader passes to ``passk compare --config``."""
    inputs: Mapping[str, Json] = field(default_factory=dict)
    """Row id -> the row's input, from the dataset, for the blocking rows."""
    allow_label: str | None = None
    """The label that allows a protected change (``gate.allow_label``)."""
    approval: LabelApproval | None = None
    """The allow label's approval this verdict counted (a person with write access)."""
    label_refusal: str | None = None
    """Why the allow label on the pull request did not count (plain text, one line)."""
    result_path: str | None = None
    """Where the job wrote the result file, relative to the workspace."""
    details_url: str | None = None
    """The workflow run's page, where the job summary is."""
    resolved_from: str | None = None
    """Head commit of an earlier failing run on this pull request, when this one passes."""
    history: History | None = None
    """Each row's class in the base branch's recorded baselines: marks lost rows new or old."""


# --- the verdict ------------------------------------------


def _heading(verdict: str, context: CommentContext) -> str:
    step = f" · {inline(context.step, 80)}" if context.step else ""
    return f"### {verdict}".replace("passk:", f"passk{step}:", 1)


def verdict_heading(result: CompareResult, context: CommentContext) -> str:
    """``### ❌ passk: 1 must-not-break row broke: `r-1` · …`` or ``### ✅ passk: passed …``."""
    cmp = result.comparison
    if result.gate.passed:
        return _heading(
            f"✅ passk: passed: {len(cmp.gained)} gained, {len(cmp.lost)} lost", context
        )
    texts = []
    for phrase, ids in reason_parts(result.gate.failures):
        texts.append(f"{phrase}: {id_list(ids, lambda i: code(i, 40))}" if ids else phrase)
    return _heading(f"❌ passk: {' · '.join(texts)}", context)


# --- one blocking row ------------------------------------------------------------


def _answers(attempts: Sequence[Attempt], judged: str | None = None) -> str:
    """``approve ×4, deny ×5`` (or ``judged``: ``right ×6, wrong ×3``) and the errors: what
    one version did over every attempt."""
    text = judged or counts_text(ranked_counts(shown_decisions(a.decision for a in attempts)))
    causes = causes_of(attempts)
    if causes:
        ranked = [(c.name, n) for c, n in causes]
        text = ("" if text == "—" else text + ", ") + (
            f"{plural(sum(n for _, n in ranked), 'error')} ({counts_text(ranked)})"
        )
    return text


def _input_preview(value: Json) -> tuple[str, str]:
    """The input on one line (for the summary) and in full (for the expanded block)."""
    if isinstance(value, str):
        return value, value
    return (
        json.dumps(value, ensure_ascii=False, separators=(", ", ": ")),
        json.dumps(value, ensure_ascii=False, indent=2),
    )


def _side_attempts(attempts: Sequence[Attempt]) -> tuple[list[Attempt], list[Attempt]]:
    return list(attempts), [a for a in attempts if a.phase is Phase.CONFIRM]


def _blocking_row(
    failure: GateFailure,
    row: RowComparison | None,
    result: CompareResult,
    context: CommentContext,
    by_row: tuple[Mapping[str, Sequence[Attempt]], Mapping[str, Sequence[Attempt]]],
    records: Mapping[str, RowRecord],
    marks: Mapping[str, str],
) -> list[str]:
    settings = result.policy.rule
    if failure.rule is Rule.PROTECTED_CHANGE or failure.rule is Rule.RECORDED_FAILURE:
        what = "protected change" if failure.rule is Rule.PROTECTED_CHANGE else "earlier run"
        at = f" (row {code(failure.id, ID_LEN)})" if failure.id is not None else ""
        return ["", f"- **{what}**{at}: {inline(reason(failure, settings), REASON_LEN)}"]
    if row is None or failure.id is None:
        said = inline(reason(failure, settings), REASON_LEN)
        return ["", f"- **{inline(failure.rule.value, 40)}:** {said}"]
    base_all, base_confirm = _side_attempts(by_row[0].get(row.id, ()))
    cand_all, cand_confirm = _side_attempts(by_row[1].get(row.id, ()))
    record = records[row.id]
    scoring = result.candidate.settings.scoring
    in_parts = judged_in_parts(record, scoring)
    base_text = _answers(base_all, judged_text(base_all, record, scoring) if in_parts else None)
    cand_text = _answers(cand_all, judged_text(cand_all, record, scoring) if in_parts else None)
    head = f"**{code(row.id, ID_LEN)}**"
    badges = [
        b for b, on in (("must-not-break", row.must_not_break), ("ratchet", row.in_ratchet)) if on
    ]
    head += "".join(f" · {b}" for b in badges) + f" · {transition(row)}"
    lines = [
        "",
        head,
        "",
        f"- expected {expected_line_text(record, scoring)} · baseline {base_text} "
        f"· candidate {cand_text}",
    ]
    if in_parts:
        lines += [f"- {line}" for line in differed_parts(base_all, cand_all, record, scoring)]
    if row.id in marks:
        lines.append(f"- history: {marks[row.id]}")
    verdict = result.gate.verdicts.get(row.id)
    if verdict is not None:
        lines.append(f"- **evidence:** {evidence_line(verdict, result.policy.rule)}")
    if failure.rule is Rule.UNCLASSIFIED:
        if verdict is None or verdict.candidate.errors or verdict.baseline.errors:
            kind = dominant_kind([*base_all, *cand_all])
            if kind is Kind.TRANSIENT or kind is Kind.KEY:
                looks, advice = KIND_ADVICE[kind]
                lines.append(
                    f"- cannot be judged: too few valid answers; they look {looks}: {advice}"
                )
            else:
                lines.append(
                    "- cannot be judged: too few valid answers; fix these errors, then re-run"
                )
    else:
        if verdict is None or verdict.rule == STRICT:
            lines.append(
                "- "
                + confirmation_words(row, base_confirm, cand_confirm, record, scoring, blocks=True)
            )
        lines.append(f"- {divergence_text(row.first_divergent_check)}")
    if row.id in context.inputs:
        short, full = _input_preview(context.inputs[row.id])
        lines += [
            "",
            f"<details><summary>input: {inline(short, INPUT_PREVIEW_LEN)}</summary>",
            "",
            block(full, INPUT_FULL_LEN, keep="head"),
            "",
            "</details>",
        ]
    return lines


# --- the three numbers, with direction -----------------------------------------


def _direction(before: float | None, after: float | None, higher_is_better: bool) -> str:
    change = points(before, after)
    if change in ("n/a", "0.0 pts") or before is None or after is None:
        return change
    better = (after > before) == higher_is_better
    return f"{change} {'better' if better else '**worse**'}"


def numbers_table(base: Metrics, cand: Metrics) -> list[str]:
    """Both versions' three numbers; the change row says better or worse for each."""
    return [
        "| | mean accuracy (higher is better) | pass^k (higher is better) "
        "| flip rate (lower is better) |",
        "|---|---:|---:|---:|",
        f"| baseline | {percent(base.mean_accuracy)} | {percent(base.pass_k)} "
        f"| {percent(base.flip_rate)} |",
        f"| candidate | {percent(cand.mean_accuracy)} | {percent(cand.pass_k)} "
        f"| {percent(cand.flip_rate)} |",
        f"| change | {_direction(base.mean_accuracy, cand.mean_accuracy, True)} "
        f"| {_direction(base.pass_k, cand.pass_k, True)} "
        f"| {_direction(base.flip_rate, cand.flip_rate, False)} |",
    ]


# --- what next ------------------------------------------------------------------


def _compared_line(result: CompareResult, context: CommentContext) -> str:
    head = short_sha(context.head_sha) or short_sha(result.candidate.agent.commit)
    base = short_sha(context.base_sha)
    recorded = short_sha(result.baseline.agent.commit)
    if result.candidate.agent.dirty:
        # A preview of uncommitted work: its commit is where the work sits, not the head.
        on = f" on top of {head}" if head else ""
        text = f"**Compared:** candidate the working tree (uncommitted changes{on})"
    else:
        text = "**Compared:** candidate " + (f"at head {head}" if head else "(this checkout)")
    branch = f"{code(context.base_ref, 100)} at " if context.base_ref and base else ""
    text += " with the baseline " + (f"committed on base {branch}{base}" if base else "artifact")
    if recorded:
        text += f" (recorded from agent commit {recorded})"
    return text


def _what_next(result: CompareResult, context: CommentContext) -> list[str]:
    result_path = context.result_path or "result.json"
    # With --base, a laptop gates as this pull request does (same base, same rules).
    base = f" --base {shlex.quote(context.base_ref)}" if context.base_ref else ""
    compare = f"passk compare --config {context.config}{base} --json {result_path}"
    report = f"passk report {result_path} --format html --out report.html"
    items = [
        _compared_line(result, context),
        f"**Reproduce locally:** {code(compare, 200)}, then {code(report, 200)}",
    ]
    where = (
        f"the job summary of [this workflow run]({context.details_url})"
        if context.details_url
        else "the job summary of this workflow run"
    )
    full = f"**Full result:** {where}"
    if context.result_path:
        full += (
            f"; every attempt is in {code(context.result_path, 200)} (the step's `result` "
            "output), for `actions/upload-artifact`"
        )
    items.append(full)
    approval = context.approval
    if approval is not None:
        items.append(
            # inline() keeps the @ from mentioning (notifying) the approver.
            f"**Protected changes approved:** by {inline('@' + approval.login, 60)} "
            f"({inline(approval.role, 40)} access) with the label {code(approval.label, 100)}, "
            f"for head {short_sha(approval.head_sha)} against {code(approval.base_ref, 100)}; "
            "a later push or another base needs the label again"
        )
    if context.label_refusal:
        items.append(f"**The allow label does not count:** {inline(context.label_refusal, 400)}")
    protected = [f for f in result.gate.failures if f.rule is Rule.PROTECTED_CHANGE]
    if protected:
        label = (
            code(context.allow_label, 100)
            if context.allow_label
            else "named by `gate.allow_label` in the config"
        )
        items.append(
            f"**To allow the protected {'change' if len(protected) == 1 else 'changes'}:** "
            f"a person with write, maintain or admin access who reviewed "
            f"{'it' if len(protected) == 1 else 'them'} adds the label {label} to this pull "
            "request (the author's own label does not count); it approves this head only: "
            "after a push, remove the label and add it again"
        )
    return ["", "**What next**", "", *capped(items, len(items))]


# --- collapsed sections -----------------------------------------------------------


def _details(title: str, body: Sequence[str]) -> list[str]:
    if not body:
        return []
    while body and body[0] == "":
        body = body[1:]
    return ["", f"<details><summary>{title}</summary>", "", *body, "", "</details>"]


def _list_details(title: str, items: list[str], limit: int) -> tuple[list[str], bool]:
    if not items:
        return [], False
    return _details(f"{title} ({len(items)})", capped(items, limit)), len(items) > limit


@dataclass(frozen=True)
class _Budget:
    """How much a comment shows; tried from generous to minimal until it fits."""

    blocking: int
    items: int


_BUDGETS = (
    _Budget(blocking=10, items=50),
    _Budget(blocking=10, items=20),
    _Budget(blocking=5, items=5),
    _Budget(blocking=3, items=0),
    _Budget(blocking=1, items=0),
)


def _hidden_comment(value: str, name: str) -> None:
    if not (value.startswith("<!--") and value.endswith("-->") and len(value) >= 7):
        raise ValueError(f"{name} must be a hidden HTML comment '<!-- ... -->', got {value!r}")


def _check_hidden(marker: str, record: str) -> None:
    _hidden_comment(marker, "marker")
    _hidden_comment(record, "record")
    if marker in record or record in marker:
        raise ValueError("marker and record must differ and not contain each other")


def _footer(result: CompareResult) -> list[str]:
    footer = f"passk {code(result.tool_version, 40)}" if result.tool_version else "passk"
    return ["", "---", "", footer]


def why_it_failed(
    result: CompareResult, context: CommentContext, *, blocking: int, items: int
) -> tuple[list[str], bool]:
    """The "Why it failed" block: each blocking row once, with the expected label against
    each version's answers, what confirmation showed and the first divergent check.

    The comment, the job summary and the CLI report start with it.  ``blocking``
    rows are shown in full, the rest by id in a folded list of at most ``items``
    (at least 3).  Returns the lines (none when the gate passed) and whether
    anything was left out.
    """
    gate = result.gate
    if not gate.failures:
        return [], False
    by_row = (result.baseline.attempts_by_row(), result.candidate.attempts_by_row())
    records = {r.id: r for r in result.rows}
    rows = {r.id: r for r in result.comparison.rows}
    marks = history_marks(result, context.history)
    lines = ["", f"**Why it failed** ({plural(len(gate.failures), 'blocking reason')})"]
    for failure in gate.failures[:blocking]:
        row = rows.get(failure.id) if failure.id is not None else None
        lines += _blocking_row(failure, row, result, context, by_row, records, marks)
    rest = gate.failures[blocking:]
    if not rest:
        return lines, False
    shown = [
        f"{code(f.id, ID_LEN)}: {inline(reason(f, result.policy.rule), REASON_LEN)}"
        if f.id is not None
        else inline(reason(f, result.policy.rule), REASON_LEN)
        for f in rest
    ]
    more, _ = _list_details("More blocking reasons", shown, max(items, 3))
    return lines + more, True


def _body(
    result: CompareResult,
    s: Sections,
    stats: Analysis,
    context: CommentContext,
    budget: _Budget,
    spend: str | None = None,
    marks: Mapping[str, str] | None = None,
) -> list[str]:
    marks = marks or {}
    gate = result.gate
    cmp = result.comparison
    lines = [verdict_heading(result, context)]
    if result.reused:
        lines += [
            "",
            "Re-run of the same commit: the verdicts recorded by the first run were replayed; "
            "the agent was not asked again, so the gate cannot change.",
        ]
    if context.resolved_from and gate.passed:
        lines += [
            "",
            f"**Resolved:** the earlier run on {short_sha(context.resolved_from)} failed; this one "
            "passes.",
        ]
    why, cut = why_it_failed(result, context, blocking=budget.blocking, items=budget.items)
    lines += why
    lines += unconfirmed_lines(result, max(budget.items, budget.blocking))
    for warning in (*sentences(result.warnings), *warnings(gate.warnings)):
        lines += ["", f"⚠️ {inline(warning, REASON_LEN)}"]
    lines += ["", *numbers_table(cmp.baseline_metrics, cmp.candidate_metrics)]
    errors = errors_line(result.baseline, result.candidate)
    if errors is not None:
        lines += ["", errors]
    note = errors_note(cmp.baseline_metrics, cmp.candidate_metrics)
    if note:
        lines += ["", note]
    trials = trials_note([("baseline", cmp.baseline_metrics), ("candidate", cmp.candidate_metrics)])
    if trials:
        lines += ["", trials]
    if spend is not None:
        lines += ["", spend]
    blocking = {f.id for f in gate.failures if f.id is not None}
    other_lost = [r for r in s.lost if r.id not in blocking]
    lines += [
        "",
        f"**Rows:** {len(s.gained)} gained · {len(s.lost)} lost"
        + (f" ({len(s.lost) - len(other_lost)} blocking)" if len(other_lost) < len(s.lost) else ""),
    ]
    if not gate.passed:
        lines += _what_next(result, context)
    sure = [
        rates_sentence(rates_of(result), result.policy.rule),
        "",
        noise_sentence(stats.paired),
        "",
        interval_line(stats),
        "",
        power_text(stats.power),
    ]
    lines += _details(f"{STATISTICS_TITLE} The gate, noise, 95% intervals, power", sure)
    chart = curve_lines(stats) + transition_lines(cmp.rows)
    lines += _details("pass^j chart and rows by class", chart)
    lists = [
        (
            "Rows lost that do not block",
            [with_mark(lost_item(r, s), marks.get(r.id)) for r in other_lost],
        ),
        ("Rows gained", [gained_item(r) for r in s.gained]),
        (
            "Checks that flipped while the decision held",
            check_flip_items(s),
        ),
        (
            "Notes",
            [
                inline(n, REASON_LEN)
                for n in (*sentences(result.notes), *history_notes(context.history))
            ],
        ),
    ]
    for title, items in lists:
        block_lines, was_cut = _list_details(title, items, budget.items)
        lines += block_lines
        cut = cut or was_cut
    executions = executions_text(result.executions, result.reused)
    lines += _details("Agent executions", [executions[:1].upper() + executions[1:] + "."])
    if gate.passed:
        lines += _details("Compared, and how to reproduce", _what_next(result, context)[3:])
    if cut:
        where = (
            f"[full report]({context.details_url})"
            if context.details_url
            else "full report in the job summary"
        )
        lines += ["", f"Some lists are shortened to fit a pull-request comment: {where}."]
    return lines + _footer(result)


def render_comment(
    result: CompareResult,
    *,
    marker: str,
    record: str,
    limit: int = COMMENT_LIMIT,
    details_url: str | None = None,
    analysis: Analysis | None = None,
    context: CommentContext | None = None,
) -> str:
    """The sticky PR comment: ``marker`` first, ``record`` last, at most ``limit`` chars.

    ``marker`` and ``record`` are the caller's hidden HTML comments; no
    escaped value can contain ``<!--``, so each appears exactly once.  When
    the comment is too long, fewer blocking rows are shown in full (the rest
    by id, then only counted), the lists shrink, then the chart goes; the
    verdict, the numbers and the record always stay.  ``analysis`` defaults
    to :func:`~.analysis.analyze` of ``result``.  ``details_url`` (a plain
    https URL) overrides ``context.details_url``.
    """
    _check_hidden(marker, record)
    ctx = context or CommentContext()
    url = details_url if details_url is not None else ctx.details_url
    if url is not None and not _SAFE_URL.fullmatch(url):
        raise ValueError(f"details_url must be a plain https:// URL, got {url!r}")
    if url != ctx.details_url:
        ctx = CommentContext(**{**ctx.__dict__, "details_url": url})
    s = sections(result)
    stats = analysis if analysis is not None else analyze(result)
    spend = cost_line(compare_spend(result.baseline, result.candidate))
    marks = history_marks(result, ctx.history)
    text = ""
    for budget in _BUDGETS:
        lines = _body(result, s, stats, ctx, budget, spend, marks)
        text = "\n".join([marker, *lines, "", record])
        if len(text) <= limit:
            break
    return text


def render_agent_failure_comment(
    error: AgentCouldNotRun,
    *,
    marker: str,
    record: str | None = None,
    context: CommentContext | None = None,
) -> str:
    """The comment when an agent could not run at all: nothing was measured, the gate fails.

    Shows the reason, where (a config key or file), the end of the agent's
    stderr, the fix and how to reproduce; no numbers, since every attempt
    would only have recorded the same crash (``error.during_setup``: its
    ``agent.setup`` failed, else its first attempts all failed alike).
    """
    version, reason, stderr_tail = error.version, error.reason, error.stderr_tail
    hint, where, during_setup = error.hint, error.where, error.during_setup
    _hidden_comment(marker, "marker")
    if record is not None:
        _check_hidden(marker, record)
    ctx = context or CommentContext()
    who = "candidate" if version == "candidate" else inline(version, 20)
    lines = [
        _heading(f"❌ {inline(could_not_run_title(version, reason, stderr_tail), 200)}", ctx),
        "",
        f"**The gate did not decide.** passk stopped before measuring the {who}: no further "
        "attempts and no confirmation were run, because its "
        + ("setup failed." if during_setup else "first attempts all failed.")
        + " There are no numbers, and the check fails until it runs.",
        "",
        f"**Reason:** {inline(reason, REASON_LEN)}",
    ]
    if where:
        lines += ["", f"**Where:** {code(where, 120)}"]
    if stderr_tail.strip():
        lines += ["", "The end of its stderr:", "", block(stderr_tail, STDERR_LEN)]
    if hint:
        lines += ["", f"**Fix:** {inline(hint, REASON_LEN)}"]
    run_one = f"passk run --config {ctx.config}"
    items = [
        f"**Reproduce locally:** {code(run_one, 200)} runs the agent the same way",
        _full_log(ctx),
    ]
    if ctx.head_sha:
        items.insert(0, f"**Commit:** head {short_sha(ctx.head_sha)}")
    lines += ["", "**What next**", "", *capped(items, len(items)), "", "---", "", "passk"]
    parts = [marker, *lines]
    if record is not None:
        parts += ["", record]
    return "\n".join(parts)


def render_could_not_finish_comment(
    reason: str,
    *,
    marker: str,
    record: str | None = None,
    context: CommentContext | None = None,
    report_at: str | None = None,
) -> str:
    """The comment when passk stopped on an error before deciding: the gate failed closed.

    ``reason`` is the one line passk exits with; ``report_at`` (a bug in
    passk, not the user's input) is where to report it; ``record`` keeps the
    record an earlier run left in this comment, so an error never wipes the
    verdicts a re-run must replay.
    """
    _hidden_comment(marker, "marker")
    if record is not None:
        _check_hidden(marker, record)
    ctx = context or CommentContext()
    lines = [
        _heading(f"❌ {inline(could_not_finish_title(reason), 200)}", ctx),
        "",
        "**The gate did not decide, so it fails.** passk stopped on the error below before "
        "it could decide; the check fails until a run finishes.",
        "",
        f"**Reason:** {inline(reason, REASON_LEN)}",
    ]
    if report_at is not None:
        lines += ["", f"**This is a bug in passk:** please [report it]({report_at}) with the log."]
    lines += ["", _full_log(ctx)]
    if ctx.head_sha:
        lines += ["", f"**Commit:** head {short_sha(ctx.head_sha)}"]
    parts = [marker, *lines, "", "---", "", "passk"]
    if record is not None:
        parts += ["", record]
    return "\n".join(parts)


def _full_log(ctx: CommentContext) -> str:
    if ctx.details_url:
        return f"**Full log:** the job log of [this workflow run]({ctx.details_url})"
    return "**Full log:** the job log of this workflow run"
