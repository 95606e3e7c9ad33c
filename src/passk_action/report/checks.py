"""The intermediate checks rows expect: each one's accuracy and pass^k beside its flip rate.

One table for the job summary, ``passk compare`` and ``passk report`` alike,
shown when some row has ``expected_checks`` (a check no row expects has a
flip rate only, which the HTML report draws).  Pure: analyses in, lines out.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.check_stability import CheckStability
from .escape import code
from .phrases import VALUE_LEN, percent


def _cell(check: CheckStability | None) -> str:
    if check is None or not check.expected_rows:
        return "n/a | n/a | " + ("n/a" if check is None else percent(check.flip_rate))
    return f"{percent(check.accuracy)} | {percent(check.pass_k)} | {percent(check.flip_rate)}"


def check_lines(versions: Sequence[tuple[str, Sequence[CheckStability]]]) -> list[str]:
    """``## Intermediate checks`` with one row per expected check and three columns per version:
    accuracy (right values over valid attempts), pass^k (right on all k attempts) and flip
    rate (rows whose values varied); none when no row expects a check."""
    names: dict[str, None] = {}
    for _, checks in versions:
        for check in checks:
            if check.expected_rows:
                names.setdefault(check.name, None)
    if not names:
        return []
    head = " | ".join(
        f"{label} accuracy | {label} pass^k | {label} flip rate" for label, _ in versions
    )
    lines = [
        "",
        "## Intermediate checks",
        "",
        "Over the rows that expect a value for the check (`expected_checks`): accuracy is "
        "the share of valid attempts that reported it, pass^k the share of those rows right "
        "on all k attempts (errors count as not right), flip rate the share whose values "
        "varied.",
        "",
        f"| check | {head} |",
        "|---|" + "---:|" * (3 * len(versions)),
    ]
    for name in names:
        cells = []
        for _, checks in versions:
            found = next((c for c in checks if c.name == name), None)
            cells.append(_cell(found))
        lines.append(f"| {code(name, VALUE_LEN)} | {' | '.join(cells)} |")
    return lines


def check_sentence(versions: Sequence[tuple[str, Sequence[CheckStability]]]) -> str:
    """The same figures in one plain sentence (the HTML report's caption); empty when no row
    expects a check: ``Expected checks: tools: baseline accuracy 83.3%, pass^k 80.0%; ...``."""
    parts = []
    for label, checks in versions:
        for check in checks:
            if check.expected_rows:
                parts.append(
                    f"{check.name}: {label} accuracy {percent(check.accuracy)}, "
                    f"pass^k {percent(check.pass_k)}"
                )
    return ("Expected checks: " + "; ".join(parts) + ".") if parts else ""
