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
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.classify import is_correct
from ..core.cost import compare_spend
from ..core.diff import Change, Confirmation, RowComparison
from ..core.gate import GateFailure, Rule
from ..core.model import Attempt, Json, Phase, Scoring
from ..core.result import CompareResult
from ..core.stats import Metrics
from ..core.uncertainty import Analysis, analyze
from .escape import block, code, inline
from .fit import COMMENT_LIMIT
from .markdown import (
    REASON_LEN,
    VALUE_LEN,
    _curve_lines,
    _executions_text,
    _flip_item,
    _gained_item,
    _lost_item,
    _Sections,
    _sections,
    _transition,
    _transition_lines,
    capped,
    could_not_run_title,
    counts_text,
    divergence_text,
    interval_line,
    noise_sentence,
    percent,
    points,
    power_text,
    ranked_counts,
)
from .spend import cost_line

ID_LEN = 80
INPUT_PREVIEW_LEN = 100
INPUT_FULL_LEN = 1500
STDERR_LEN = 1500
TITLE_IDS = 3
"""Row ids a verdict line or check title names before "+N more"."""

_SAFE_URL = re.compile(r"https://[^\s<>()\[\]`\"'\\]+")


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
    result_path: str | None = None
    """Where the job wrote the result file, relative to the workspace."""
    details_url: str | None = None
    """The workflow run's page, where the job summary is."""
    resolved_from: str | None = None
    """Head commit of an earlier failing run on this pull request, when this one passes."""


# --- the verdict and the check title ------------------------------------------

_RULE_NOUNS: dict[Rule, tuple[str, str, str]] = {
    # rule: (one, many, what happened)
    Rule.MUST_NOT_BREAK: ("must-not-break row", "must-not-break rows", "broke"),
    Rule.UNCLASSIFIED: ("must-not-break row", "must-not-break rows", "got too few answers"),
    Rule.RATCHET: ("ratchet-locked row", "ratchet-locked rows", "broke"),
    Rule.REGRESSION: ("row", "rows", "regressed"),
    Rule.PROTECTED_CHANGE: (
        "protected change",
        "protected changes",
        "not allowed by label",
    ),
    Rule.RECORDED_FAILURE: (
        "earlier run of this commit",
        "earlier runs of this commit",
        "failed",
    ),
    Rule.COST: ("cost limit", "cost limits", "failed"),
    Rule.LATENCY: ("latency limit", "latency limits", "failed"),
}

_RULE_ORDER = (
    Rule.MUST_NOT_BREAK,
    Rule.UNCLASSIFIED,
    Rule.RATCHET,
    Rule.REGRESSION,
    Rule.PROTECTED_CHANGE,
    Rule.RECORDED_FAILURE,
    Rule.COST,
    Rule.LATENCY,
)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _reason_parts(failures: Sequence[GateFailure]) -> list[tuple[str, list[str]]]:
    """``("2 must-not-break rows broke", ["r-007", "r-016"])`` per rule, in a fixed order."""
    parts = []
    for rule in _RULE_ORDER:
        hits = [f for f in failures if f.rule is rule]
        if not hits:
            continue
        one, many, what = _RULE_NOUNS[rule]
        phrase = f"{_plural(len(hits), one, many)} {what}"
        parts.append((phrase, [f.id for f in hits if f.id is not None]))
    return parts


def _id_list(ids: Sequence[str], show: object) -> str:
    shown = [str(show(i)) if callable(show) else i for i in ids[:TITLE_IDS]]
    more = len(ids) - len(shown)
    return ", ".join(shown) + (f" +{more} more" if more > 0 else "")


def _plain(row_id: str, max_len: int = 40) -> str:
    """A row id for plain text: one line, at most ``max_len`` characters."""
    text = " ".join(row_id.split())
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


def check_title(result: CompareResult) -> str:
    """The check run's title, naming the reason: ``2 must-not-break rows broke: r-007, r-016``.

    Plain text (GitHub shows a check title as is), one line, at most ~200
    characters; a passing gate gives ``passed: 13 gained, 0 lost``.
    """
    cmp = result.comparison
    if result.gate.passed:
        return f"passed: {len(cmp.gained)} gained, {len(cmp.lost)} lost"
    texts = []
    for phrase, ids in _reason_parts(result.gate.failures):
        shown = [_plain(i) for i in ids]
        texts.append(f"{phrase}: {_id_list(shown, None)}" if ids else phrase)
    return " · ".join(texts)[:200]


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
    for phrase, ids in _reason_parts(result.gate.failures):
        texts.append(f"{phrase}: {_id_list(ids, lambda i: code(i, 40))}" if ids else phrase)
    return _heading(f"❌ passk: {' · '.join(texts)}", context)


# --- one blocking row ------------------------------------------------------------


def _answers(attempts: Sequence[Attempt]) -> str:
    """``approve ×4, deny ×5`` and the errors: what one version did over every attempt."""
    text = counts_text(ranked_counts([a.decision for a in attempts]))
    errors = Counter(a.error for a in attempts if a.error is not None)
    if errors:
        ranked = sorted(errors.items(), key=lambda item: (-item[1], item[0]))
        text = ("" if text == "—" else text + ", ") + (
            f"{_plural(sum(errors.values()), 'error')} ({counts_text(ranked)})"
        )
    return text


def _right_wrong(attempts: Sequence[Attempt], expected: str, scoring: Scoring) -> tuple[int, int]:
    answered = [a.decision for a in attempts if a.decision is not None]
    right = sum(1 for d in answered if is_correct(d, expected, scoring))
    return right, len(answered) - right


def confirmation_words(
    row: RowComparison,
    baseline: Sequence[Attempt],
    candidate: Sequence[Attempt],
    expected: str,
    scoring: Scoring,
) -> str:
    """What re-running the row on both versions showed, in plain words.

    ``baseline`` and ``candidate`` are the row's confirmation attempts.  A
    side that gave no valid answer is never said to have been right.
    """
    if row.change is not Change.LOST and row.confirmation is None:
        return "not re-run: confirmation runs for rows that were stable-correct on the baseline"
    if row.confirmation is None:
        return "not re-run: no confirmation attempts were recorded"
    b_right, b_wrong = _right_wrong(baseline, expected, scoring)
    c_right, c_wrong = _right_wrong(candidate, expected, scoring)
    if row.confirmation is Confirmation.CONFIRMED_REGRESSION:
        return (
            f"**confirmed** on re-run: the baseline was right on all {b_right} of its attempts, "
            f"the candidate wrong on {c_wrong} of {c_right + c_wrong}"
        )
    if row.confirmation is Confirmation.BASELINE_VARIES:
        return (
            f"not confirmed: on re-run the baseline was wrong too ({b_wrong} of "
            f"{b_right + b_wrong}), so this row varies on both versions"
        )
    if c_right + c_wrong == 0:
        return (
            f"not confirmed: the candidate gave no valid answer on its {len(candidate)} "
            "confirmation attempts"
        )
    if b_right + b_wrong == 0:
        return (
            f"not confirmed: the baseline gave no valid answer on its {len(baseline)} "
            "confirmation attempts"
        )
    return (
        f"not reproduced on re-run: the candidate was right on all {c_right} of its attempts; "
        "the wrong answers came from the first k"
    )


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
    expected: Mapping[str, str],
) -> list[str]:
    if failure.rule is Rule.PROTECTED_CHANGE or failure.rule is Rule.RECORDED_FAILURE:
        what = "protected change" if failure.rule is Rule.PROTECTED_CHANGE else "earlier run"
        at = f" (row {code(failure.id, ID_LEN)})" if failure.id is not None else ""
        return ["", f"- **{what}**{at}: {inline(failure.reason, REASON_LEN)}"]
    if row is None or failure.id is None:
        return ["", f"- **{inline(failure.rule.value, 40)}:** {inline(failure.reason, REASON_LEN)}"]
    base_all, base_confirm = _side_attempts(by_row[0].get(row.id, ()))
    cand_all, cand_confirm = _side_attempts(by_row[1].get(row.id, ()))
    want = expected.get(row.id, "")
    scoring = result.candidate.settings.scoring
    head = f"**{code(row.id, ID_LEN)}**"
    badges = [
        b for b, on in (("must-not-break", row.must_not_break), ("ratchet", row.in_ratchet)) if on
    ]
    head += "".join(f" · {b}" for b in badges) + f" · {_transition(row)}"
    lines = [
        "",
        head,
        "",
        f"- expected {inline(want, VALUE_LEN)} · baseline {_answers(base_all)} "
        f"· candidate {_answers(cand_all)}",
    ]
    if failure.rule is Rule.UNCLASSIFIED:
        lines.append(
            "- cannot be judged: fewer than k valid answers; fix these errors, then re-run"
        )
    else:
        lines.append("- " + confirmation_words(row, base_confirm, cand_confirm, want, scoring))
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


# --- annotations on the dataset's lines ------------------------------------------


def _plain_answers(attempts: Sequence[Attempt]) -> str:
    pairs = ranked_counts([a.decision for a in attempts])
    text = ", ".join(f"{' '.join(v.split())[:VALUE_LEN]} ×{n}" for v, n in pairs) or "—"
    errors = sum(1 for a in attempts if a.error is not None)
    return text + (f", {_plural(errors, 'error')}" if errors else "")


def row_annotations(result: CompareResult) -> list[tuple[str, str, str, bool]]:
    """``(row id, title, message, blocking)`` for each blocking row, then other confirmed ones.

    Plain text, for check-run annotations on the row's line of the dataset
    (GitHub shows them as text, in "Files changed" when the file is in the PR).
    """
    by_row = (result.baseline.attempts_by_row(), result.candidate.attempts_by_row())
    expected = {r.id: r.expected for r in result.rows}
    rows = {r.id: r for r in result.comparison.rows}
    scoring = result.candidate.settings.scoring
    out: list[tuple[str, str, str, bool]] = []

    def message(row: RowComparison, lead: str) -> str:
        base, cand = by_row[0].get(row.id, ()), by_row[1].get(row.id, ())
        want = expected.get(row.id, "")
        confirm = confirmation_words(
            row,
            [a for a in base if a.phase is Phase.CONFIRM],
            [a for a in cand if a.phase is Phase.CONFIRM],
            want,
            scoring,
        ).replace("**", "")
        return (
            f"{lead}\nexpected {' '.join(want.split())[:VALUE_LEN]} · baseline "
            f"{_plain_answers(base)} · candidate {_plain_answers(cand)}\n{confirm}"
        )

    blocking = set()
    for failure in result.gate.failures:
        row = rows.get(failure.id) if failure.id is not None else None
        if row is None or failure.rule in (Rule.PROTECTED_CHANGE, Rule.RECORDED_FAILURE):
            continue
        blocking.add(row.id)
        one, _, what = _RULE_NOUNS[failure.rule]
        title = f"passk: {one} {what}: {_plain(row.id)}"
        out.append((row.id, title, message(row, failure.reason), True))
    for row in result.comparison.rows:
        if row.confirmation is Confirmation.CONFIRMED_REGRESSION and row.id not in blocking:
            title = f"passk: confirmed regression (not blocking): {_plain(row.id)}"
            lead = f"{_transition(row)}; not blocking: the row is not must-not-break"
            out.append((row.id, title, message(row, lead), False))
    return out


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


def _sha(value: str | None) -> str | None:
    return code(value[:12], 12) if value else None


def _compared_line(result: CompareResult, context: CommentContext) -> str:
    head = _sha(context.head_sha) or _sha(result.candidate.agent.commit)
    base = _sha(context.base_sha)
    recorded = _sha(result.baseline.agent.commit)
    text = "**Compared:** candidate " + (f"at head {head}" if head else "(this checkout)")
    text += " with the baseline " + (f"committed on base {base}" if base else "artifact")
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
    protected = [f for f in result.gate.failures if f.rule is Rule.PROTECTED_CHANGE]
    if protected:
        label = (
            code(context.allow_label, 100)
            if context.allow_label
            else "named by `gate.allow_label` in the config"
        )
        items.append(
            f"**To allow the protected {'change' if len(protected) == 1 else 'changes'}:** "
            f"a maintainer who reviewed {'it' if len(protected) == 1 else 'them'} (triage or "
            f"write access; not the pull request's author alone) adds the label {label} to this "
            "pull request, then re-runs this job"
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


def _body(
    result: CompareResult,
    s: _Sections,
    stats: Analysis,
    context: CommentContext,
    budget: _Budget,
    spend: str | None = None,
) -> list[str]:
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
            f"**Resolved:** the earlier run on {_sha(context.resolved_from)} failed; this one "
            "passes.",
        ]
    cut = False
    by_row = (result.baseline.attempts_by_row(), result.candidate.attempts_by_row())
    expected = {r.id: r.expected for r in result.rows}
    rows = {r.id: r for r in cmp.rows}
    if gate.failures:
        lines += ["", f"**Why it failed** ({_plural(len(gate.failures), 'blocking reason')})"]
        for failure in gate.failures[: budget.blocking]:
            row = rows.get(failure.id) if failure.id is not None else None
            lines += _blocking_row(failure, row, result, context, by_row, expected)
        rest = gate.failures[budget.blocking :]
        if rest:
            cut = True
            shown = [
                f"{code(f.id, ID_LEN)}: {inline(f.reason, REASON_LEN)}"
                if f.id is not None
                else inline(f.reason, REASON_LEN)
                for f in rest
            ]
            more, _ = _list_details("More blocking reasons", shown, max(budget.items, 3))
            lines += more
    for warning in (*result.warnings, *gate.warnings):
        lines += ["", f"⚠️ {inline(warning, REASON_LEN)}"]
    lines += ["", *numbers_table(cmp.baseline_metrics, cmp.candidate_metrics)]
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
    sure = [noise_sentence(stats.paired), "", interval_line(stats), "", power_text(stats.power)]
    lines += _details("How sure are these numbers? Noise, 95% intervals, power", sure)
    chart = _curve_lines(stats) + _transition_lines(cmp.rows)
    lines += _details("pass^j chart and rows by class", chart)
    lists = [
        ("Rows lost that do not block", [_lost_item(r, s) for r in other_lost]),
        ("Rows gained", [_gained_item(r) for r in s.gained]),
        (
            "Checks that flipped while the decision held",
            [
                f"candidate: {_flip_item(r, r.candidate_check_flips, r.candidate_final_class)}"
                for r in s.candidate_check_flips
            ]
            + [
                f"baseline: {_flip_item(r, r.baseline_check_flips, r.baseline_final_class)}"
                for r in s.baseline_check_flips
            ],
        ),
        ("Notes", [inline(n, REASON_LEN) for n in result.notes]),
    ]
    for title, items in lists:
        block_lines, was_cut = _list_details(title, items, budget.items)
        lines += block_lines
        cut = cut or was_cut
    executions = _executions_text(result.executions, result.reused)
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
    to :func:`~.uncertainty.analyze` of ``result``.  ``details_url`` (a plain
    https URL) overrides ``context.details_url``.
    """
    _check_hidden(marker, record)
    ctx = context or CommentContext()
    url = details_url if details_url is not None else ctx.details_url
    if url is not None and not _SAFE_URL.fullmatch(url):
        raise ValueError(f"details_url must be a plain https:// URL, got {url!r}")
    if url != ctx.details_url:
        ctx = CommentContext(**{**ctx.__dict__, "details_url": url})
    s = _sections(result)
    stats = analysis if analysis is not None else analyze(result)
    spend = cost_line(compare_spend(result.baseline, result.candidate))
    text = ""
    for budget in _BUDGETS:
        lines = _body(result, s, stats, ctx, budget, spend)
        text = "\n".join([marker, *lines, "", record])
        if len(text) <= limit:
            break
    return text


def render_agent_failure_comment(
    *,
    version: str,
    reason: str,
    stderr_tail: str,
    hint: str | None,
    marker: str,
    record: str | None = None,
    context: CommentContext | None = None,
    where: str | None = None,
    during_setup: bool = False,
) -> str:
    """The comment when an agent could not run at all: nothing was measured, the gate fails.

    Shows the reason, where (a config key or file), the end of the agent's
    stderr, the fix and how to reproduce; no numbers, since every attempt
    would only have recorded the same crash (``during_setup``: its
    ``agent.setup`` failed, else its first attempts all failed alike).
    """
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
        "**Full log:** "
        + (
            f"the job log of [this workflow run]({ctx.details_url})"
            if ctx.details_url
            else "the job log of this workflow run"
        ),
    ]
    if ctx.head_sha:
        items.insert(0, f"**Commit:** head {_sha(ctx.head_sha)}")
    lines += ["", "**What next**", "", *capped(items, len(items)), "", "---", "", "passk"]
    parts = [marker, *lines]
    if record is not None:
        parts += ["", record]
    return "\n".join(parts)
