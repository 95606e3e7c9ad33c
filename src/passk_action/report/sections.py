"""A comparison reduced to the row lists its reports show, and the list item of each row.

The Markdown report and the PR comment list the same rows (confirmed
regressions, rows less stable, lost and gained, checks that flipped) in the
same words; both take them from :func:`sections`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..core.diff import Change, Confirmation, RowComparison
from ..core.model import RowClass
from ..core.result import CompareResult
from .escape import code
from .gated import evidence_line
from .phrases import (
    CONFIRMATION_TEXT,
    VALUE_LEN,
    counts_text,
    divergence_text,
    errors_by_row,
    row_label,
    transition,
)


@dataclass(frozen=True)
class Sections:
    """The rows of a comparison each list shows, protected rows first where it matters."""

    regressions: tuple[RowComparison, ...]
    less_stable: tuple[RowComparison, ...]
    lost: tuple[RowComparison, ...]
    gained: tuple[RowComparison, ...]
    candidate_check_flips: tuple[RowComparison, ...]
    baseline_check_flips: tuple[RowComparison, ...]
    baseline_errors: dict[str, list[tuple[str, int]]]
    candidate_errors: dict[str, list[tuple[str, int]]]
    """Error reasons per row over all attempts: why a row is unclassified."""
    rule_lines: dict[str, str] = field(default_factory=dict)
    """What the gate's rule saw on each gated row (its evidence and judgement)."""


def _protected_first(rows: Iterable[RowComparison]) -> tuple[RowComparison, ...]:
    """Must-not-break (or ratchet-locked) rows first, then dataset order."""
    return tuple(sorted(rows, key=lambda r: not (r.must_not_break or r.in_ratchet)))


def sections(result: CompareResult) -> Sections:
    """Sort the rows of ``result`` into the lists a report shows."""
    rows = result.comparison.rows
    lost = tuple(r for r in rows if r.change is Change.LOST)
    stable = (RowClass.STABLE_CORRECT, RowClass.STABLE_WRONG)
    return Sections(
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
        rule_lines={
            row_id: evidence_line(verdict, result.policy.rule)
            for row_id, verdict in result.gate.verdicts.items()
        },
    )


def _label(row: RowComparison) -> str:
    return row_label(row.id, must_not_break=row.must_not_break, ratchet=row.in_ratchet)


def regression_item(row: RowComparison) -> str:
    """A confirmed regression: its label, classes and first divergent check."""
    return f"{_label(row)}: {transition(row)}; {divergence_text(row.first_divergent_check)}"


def _unclassified_why(row: RowComparison, s: Sections) -> str:
    """The error reasons of a side left unclassified: the first thing to fix."""
    parts = []
    for side, row_class, errors in (
        ("baseline", row.baseline_final_class, s.baseline_errors),
        ("candidate", row.candidate_final_class, s.candidate_errors),
    ):
        if row_class is RowClass.UNCLASSIFIED and row.id in errors:
            parts.append(f"; {side} errors: {counts_text(errors[row.id])}")
    return "".join(parts)


def lost_item(row: RowComparison, s: Sections) -> str:
    """A row lost or less stable: its classes, what confirmation showed, its errors."""
    text = f"{_label(row)}: {transition(row)}"
    rule_line = s.rule_lines.get(row.id)
    if rule_line is not None:
        text += f"; gate rule: {rule_line}"
    elif row.change is Change.LOST:
        if row.confirmation is None:
            text += "; not confirmed: no confirmation attempts were recorded"
        else:
            text += f"; {CONFIRMATION_TEXT[row.confirmation]}"
    return text + _unclassified_why(row, s)


def gained_item(row: RowComparison) -> str:
    """A row gained: its label and classes."""
    return f"{_label(row)}: {transition(row)}"


def _flip_item(row: RowComparison, names: Sequence[str], row_class: RowClass) -> str:
    checks = ", ".join(code(n, VALUE_LEN) for n in names)
    return f"{_label(row)} ({row_class.value}): {checks}"


def check_flip_items(s: Sections) -> list[str]:
    """Rows whose checks flipped while the decision held: the candidate's, then the baseline's."""
    return [
        f"candidate: {_flip_item(r, r.candidate_check_flips, r.candidate_final_class)}"
        for r in s.candidate_check_flips
    ] + [
        f"baseline: {_flip_item(r, r.baseline_check_flips, r.baseline_final_class)}"
        for r in s.baseline_check_flips
    ]
