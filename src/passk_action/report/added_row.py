"""What ``passk add`` says once the row is in the dataset: what it added, and what happens next.

The loop from production back to the gate: the pull request that adds the
row measures the baseline on it (a top-up, since no recorded baseline has
it) next to the candidate; once a baseline recorded on the default branch
is stable-correct on a must-not-break row, the ratchet locks it.  Pure:
plain text for the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.scoring import expected_text
from .phrases import plain_id, plural


@dataclass(frozen=True)
class AddedRow:
    """The row ``passk add`` appended (or, on a dry run, would append), and where."""

    id: str
    dataset: str
    line: int
    expected: str | None
    """A label, a structured decision's canonical text, or None (its environment scores it)."""
    must_not_break: bool
    marked: bool
    """The row's own mark (``--must-not-break``), as opposed to a protecting tag."""
    protecting_tags: tuple[str, ...]
    tags: tuple[str, ...]
    generated: str | None
    k: int
    origin: str | None = None
    """Where the input came from, when it was a recorded run's attempt."""
    top_up: bool = True
    """Whether the gate can run the baseline on the new row (the config names an agent)."""


def added_lines(row: AddedRow, *, dry_run: bool = False) -> list[str]:
    """The lines ``passk add`` prints, each its own sentence."""
    row_id = plain_id(row.id, 80)
    marks = []
    if row.must_not_break:
        why = (
            ""
            if row.marked
            else f" (tag {', '.join(row.protecting_tags)} is protected by the config)"
        )
        marks.append(f"must-not-break{why}")
    if row.tags:
        marks.append(f"tags {', '.join(row.tags)}")
    what = "would add" if dry_run else "added"
    lines = [
        f"passk: {what} row {row_id} to {row.dataset} (line {row.line}): "
        + ", ".join([f"expected {expected_text(row.expected)}", *marks])
    ]
    if row.generated is not None:
        lines.append(f"passk: no --id given: {row_id} is {row.generated}")
    if row.origin is not None:
        lines.append(f"passk: its input is {row.origin}")
    if dry_run:
        return [*lines, "passk: dry run: nothing was written"]
    if row.top_up:
        lines.append(
            f"next: commit {row.dataset} in a pull request. Its gate runs the baseline on "
            f"{row_id} ({plural(row.k, 'attempt')}: a top-up, since no recorded baseline has "
            "the row) next to the candidate; adding a row is not a protected change."
        )
    else:
        lines.append(
            f"next: the config names no agent, so no gate can run the baseline on {row_id}: "
            "record a baseline that includes it (e.g. `passk import` of a run over the new "
            "dataset) and commit both to the default branch."
        )
    if row.must_not_break:
        lines.append(
            "then: once a baseline recorded on the default branch (the action's "
            f"`mode: baseline`, or `passk baseline`) is stable-correct on {row_id}, the ratchet "
            "locks it: no later pull request may break it. `passk history` shows when."
        )
    else:
        lines.append(
            f"then: {row_id} is not must-not-break, so the ratchet never locks it: losing it is "
            "reported, not blocking (unless gate.block_on_any_regression is on); mark it "
            "`must_not_break: true` in the dataset to protect it."
        )
    return lines
