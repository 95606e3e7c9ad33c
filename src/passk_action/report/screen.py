"""``passk compare``'s verdict on a terminal: one screen, read in ten seconds.

The gate (passed or failed), each blocking reason with its row, the three
numbers for both versions and their change, and where the full report went.
Plain text, not Markdown: every value from a user or an agent goes through
:func:`.escape.plain` (one line, no control characters), and colour, when
asked for, is only ever the verdict's own.  Pure: the caller decides whether
stdout is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.result import CompareResult
from ..core.stats import Metrics
from .compare_report import verdict_line
from .escape import plain
from .phrases import ID_LEN, REASON_LEN, percent, plural, points
from .reasons import reason as reason_text

SCREEN_BLOCKING = 10
"""Blocking reasons shown on the screen; the rest are counted, and in the full report."""
_GREEN, _RED, _BOLD, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[1m", "\x1b[0m"


def _numbers(base: Metrics, cand: Metrics) -> list[str]:
    """The three numbers for both versions and their change, in aligned columns."""
    rows = [
        ("", "mean accuracy", "pass^k", "flip rate"),
        ("baseline", percent(base.mean_accuracy), percent(base.pass_k), percent(base.flip_rate)),
        ("candidate", percent(cand.mean_accuracy), percent(cand.pass_k), percent(cand.flip_rate)),
        (
            "change",
            points(base.mean_accuracy, cand.mean_accuracy),
            points(base.pass_k, cand.pass_k),
            points(base.flip_rate, cand.flip_rate),
        ),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  " + row[0].ljust(widths[0]) + "".join("   " + c for c in cells))
    return lines


def render_screen(
    result: CompareResult, *, outputs: Sequence[tuple[str, str]] = (), colour: bool = False
) -> str:
    """The verdict screen of ``result``; ``outputs`` say where the rest went, (what, path):
    ``("Full report", ".passk/report.md")``."""
    head = verdict_line(result).removeprefix("✅ ").removeprefix("❌ ")
    if colour:
        word = "gate passed" if result.gate.passed else "gate failed"
        tint = _GREEN if result.gate.passed else _RED
        head = head.replace(word, f"{_BOLD}{tint}{word}{_RESET}", 1)
    lines = [head]
    failures = result.gate.failures
    if failures:
        lines += ["", f"Blocking ({plural(len(failures), 'reason')}):"]
        for failure in failures[:SCREEN_BLOCKING]:
            reason = plain(reason_text(failure, result.policy.rule), REASON_LEN)
            if failure.id is None:
                lines.append(f"  - {failure.rule.value}: {reason}")
            else:
                lines.append(f"  - {plain(failure.id, ID_LEN)} ({failure.rule.value}): {reason}")
        if len(failures) > SCREEN_BLOCKING:
            lines.append(f"  … and {len(failures) - SCREEN_BLOCKING} more in the full report")
    cmp = result.comparison
    lines += ["", *_numbers(cmp.baseline_metrics, cmp.candidate_metrics), ""]
    lines += [f"{what}: {plain(path, 300)}" for what, path in outputs]
    return "\n".join(lines).rstrip("\n") + "\n"
