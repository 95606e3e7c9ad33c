"""Golden comments and reports for rows judged in parts: a structured decision whose amount
drifts while its action holds, and a right decision whose required check went wrong.

Regenerate with ``PASSK_UPDATE_GOLDEN=1 python -m pytest tests/report/test_render_scoring.py -q``
after a deliberate change, and review the diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from passk_action.core.model import (
    AgentInfo,
    EvalSettings,
    FieldRule,
    Phase,
    RowRecord,
    Run,
    Scoring,
    Version,
    object_text,
)
from passk_action.core.result import CompareResult, Executions
from passk_action.report.comment import CommentContext, render_comment
from passk_action.report.compare_report import render_compare_report
from support.render_goldens import assert_golden
from support.scenarios import DIGEST, MARKER, RECORD, Attempts, K, compare

REFUND = Scoring(
    fields=(FieldRule("action", normalize=("strip", "casefold")), FieldRule("amount", tolerance=1))
)
CHECKED = Scoring(checks="required")


def make_run(
    version: Version, rows: Sequence[RowRecord], attempts: Attempts, scoring: Scoring
) -> Run:
    return Run(
        tool_version="0.1.0",
        dataset_digest=DIGEST,
        settings=EvalSettings(k=K, scoring=scoring),
        agent=AgentInfo(version, f"refund agent ({version.value})", "9f8e7d6c5b4a"),
        created_at="2024-05-01T12:00:00Z",
        rows=tuple(rows),
        attempts=tuple(attempts.attempts),
    )


def decided(action: str, amount: float) -> str:
    return object_text({"action": action, "amount": amount})


def structured_scenario() -> CompareResult:
    """The amount drifts on a must-not-break row while the action holds; elsewhere the
    tolerance keeps close amounts right, a wrong action is a plain flip, and a must-not-break
    row right on every attempt passes."""
    rows = [
        RowRecord("r-1", "sha256:" + "0" * 64, decided("refund", 120), True),
        RowRecord("r-2", "sha256:" + "0" * 64, decided("partial_refund", 85), False),
        RowRecord("r-3", "sha256:" + "0" * 64, decided("deny", 0), True),
    ]
    refund, drifted = decided("refund", 120), decided("refund", 150)
    base = (
        Attempts()
        .ok("r-1", refund, times=3)
        .ok("r-1", refund, phase=Phase.CONFIRM, times=6)
        .ok("r-2", decided("partial_refund", 85), times=2)
        .ok("r-2", decided("refund", 85))
        .ok("r-3", decided("deny", 0), times=3)
    )
    cand = (
        Attempts()
        .ok("r-1", refund)
        .ok("r-1", drifted)
        .ok("r-1", refund)
        .ok("r-1", refund, phase=Phase.CONFIRM, times=2)
        .ok("r-1", drifted, phase=Phase.CONFIRM)
        .ok("r-1", refund, phase=Phase.CONFIRM, times=2)
        .ok("r-1", drifted, phase=Phase.CONFIRM)
        .ok("r-2", decided("partial_refund", 85.4))
        .ok("r-2", decided(" Partial_Refund", 85))
        .ok("r-2", decided("partial_refund", 84.5))
        .ok("r-3", decided("deny", 0), times=3)
        # The sequential rule asked again until 7 right answers showed the row reliable.
        .ok("r-3", decided("deny", 0), phase=Phase.CONFIRM, times=4)
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, REFUND),
        make_run(Version.CANDIDATE, rows, cand, REFUND),
        executions=Executions(candidate=9, confirm_baseline=6, confirm_candidate=10, naive=30),
    )


def checks_required_scenario() -> CompareResult:
    """Every decision is right, but on the candidate the damage check that makes it right
    for the right reason goes missing: with ``checks: required`` that is a wrong answer."""
    found = [("damage", "found"), ("return_window", "ok")]
    skipped = [("return_window", "ok")]
    rows = [
        RowRecord("c-1", "sha256:" + "0" * 64, "approve", True, (), None, (("damage", "found"),)),
        RowRecord("c-2", "sha256:" + "0" * 64, "deny", False),
    ]
    base = (
        Attempts()
        .ok("c-1", "approve", found, times=3)
        .ok("c-1", "approve", found, phase=Phase.CONFIRM, times=6)
        .ok("c-2", "deny", times=3)
    )
    cand = (
        Attempts()
        .ok("c-1", "approve", found, times=2)
        .ok("c-1", "approve", skipped)
        .ok("c-1", "approve", found, phase=Phase.CONFIRM, times=4)
        .ok("c-1", "approve", skipped, phase=Phase.CONFIRM, times=2)
        .ok("c-2", "deny", times=3)
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, CHECKED),
        make_run(Version.CANDIDATE, rows, cand, CHECKED),
        executions=Executions(candidate=6, confirm_baseline=6, confirm_candidate=6, naive=24),
    )


CONTEXT = CommentContext(
    head_sha="0123abcdef9988776655443322110000ffffeeee",
    base_sha="9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    base_ref="main",
    inputs={"r-1": {"item": "Espresso machine", "price_usd": 120, "condition": "damaged"}},
)


def test_the_comment_names_the_field_that_differed() -> None:
    result = structured_scenario()
    assert [(f.id, f.rule.value) for f in result.gate.failures] == [("r-1", "must-not-break")]
    text = render_comment(result, marker=MARKER, record=RECORD, context=CONTEXT)
    assert_golden("comment_structured.md", text)
    assert (
        "- field `amount` differed (expected 120): baseline 120 ×9 · candidate 120 ×6, 150 ×3"
        in text
    )
    assert "field `action`" not in text  # it held: only what differed is named


def test_the_report_names_the_field_that_differed() -> None:
    assert_golden("compare_structured.md", render_compare_report(structured_scenario()))


def test_the_comment_names_the_required_check_that_went_wrong() -> None:
    result = checks_required_scenario()
    assert [(f.id, f.rule.value) for f in result.gate.failures] == [("c-1", "must-not-break")]
    text = render_comment(result, marker=MARKER, record=RECORD, context=CONTEXT)
    assert_golden("comment_checks_required.md", text)
    assert "- expected approve, check `damage` found · baseline right ×9" in text
    assert (
        "- check `damage` differed (expected found): baseline found ×9 · candidate found ×6, "
        "(absent) ×3" in text
    )


def test_the_same_answers_pass_when_checks_are_only_reported() -> None:
    result = checks_required_scenario()
    reported = replace(
        result.candidate, settings=EvalSettings(k=K, scoring=Scoring(checks="reported"))
    )
    again = compare(result.rows, result.baseline, reported)
    assert again.gate.passed
    report = render_compare_report(again)
    # The flip rate counts reported values only (a missing check is not a value).
    assert "| `damage` | 100.0% | 100.0% | 0.0% | 66.7% | 0.0% | 0.0% |" in report
