"""The check run's plain text: its title, and the annotations on the dataset's lines.

GitHub shows a check title and an annotation as text, not Markdown, so
everything here is one-line plain text with values cut to length; the
comment (:mod:`.comment`) says the same things in Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.diff import Confirmation, RowComparison
from ..core.gate import Rule
from ..core.model import Attempt, Phase
from ..core.result import CompareResult
from ..core.sequential import SEQUENTIAL
from .phrases import (
    RULE_NOUNS,
    VALUE_LEN,
    confirmation_words,
    differed_parts,
    expected_words,
    id_list,
    judged_in_parts,
    plain_id,
    plural,
    ranked_counts,
    reason_parts,
    shown_decisions,
    transition,
)
from .reasons import reason


def check_title(result: CompareResult) -> str:
    """The check run's title, naming the reason: ``2 must-not-break rows broke: r-007, r-016``.

    Plain text (GitHub shows a check title as is), one line, at most ~200
    characters; a passing gate gives ``passed: 13 gained, 0 lost``.
    """
    cmp = result.comparison
    if result.gate.passed:
        return f"passed: {len(cmp.gained)} gained, {len(cmp.lost)} lost"
    texts = []
    for phrase, ids in reason_parts(result.gate.failures):
        shown = [plain_id(i) for i in ids]
        texts.append(f"{phrase}: {id_list(shown)}" if ids else phrase)
    return " · ".join(texts)[:200]


def with_base(title: str, base_ref: str | None, base_sha: str | None, limit: int = 200) -> str:
    """``title · vs main at 1a2b3c4d5e6f``: a verdict names the base it was made against.

    The base is kept whole and the title cut to make room, so a check from a
    retargeted pull request cannot pass for one against the current base.
    """
    if not base_sha:
        return title[:limit]
    branch = " ".join((base_ref or "").split())[:60]
    suffix = f" · vs {branch + ' at ' if branch else ''}{base_sha[:12]}"
    room = max(limit - len(suffix), 0)
    cut = title if len(title) <= room else title[: max(room - 1, 0)] + "…"
    return cut + suffix


def _plain_answers(attempts: Sequence[Attempt]) -> str:
    pairs = ranked_counts(shown_decisions(a.decision for a in attempts))
    text = ", ".join(f"{' '.join(v.split())[:VALUE_LEN]} ×{n}" for v, n in pairs) or "—"
    errors = sum(1 for a in attempts if a.error is not None)
    return text + (f", {plural(errors, 'error')}" if errors else "")


def row_annotations(result: CompareResult) -> list[tuple[str, str, str, bool]]:
    """``(row id, title, message, blocking)`` for each blocking row, then other confirmed ones.

    Plain text, for check-run annotations on the row's line of the dataset
    (GitHub shows them as text, in "Files changed" when the file is in the PR).
    """
    by_row = (result.baseline.attempts_by_row(), result.candidate.attempts_by_row())
    records = {r.id: r for r in result.rows}
    rows = {r.id: r for r in result.comparison.rows}
    scoring = result.candidate.settings.scoring
    out: list[tuple[str, str, str, bool]] = []

    def message(row: RowComparison, lead: str, blocks: bool) -> str:
        base, cand = by_row[0].get(row.id, ()), by_row[1].get(row.id, ())
        record = records[row.id]
        want = expected_words(record)
        parts, room = "", VALUE_LEN
        if judged_in_parts(record, scoring):
            room = 2 * VALUE_LEN  # ``action: partial_refund, amount: 102``
            differed = differed_parts(base, cand, record, scoring, plain=True)
            parts = "".join(f"\n{line}" for line in differed)
        answers = (
            f"{lead}\nexpected {' '.join(want.split())[:room]} · baseline "
            f"{_plain_answers(base)} · candidate {_plain_answers(cand)}{parts}"
        )
        verdict = result.gate.verdicts.get(row.id)
        if verdict is not None and verdict.rule == SEQUENTIAL:
            return answers  # the reason states the rule's evidence
        confirm = confirmation_words(
            row,
            [a for a in base if a.phase is Phase.CONFIRM],
            [a for a in cand if a.phase is Phase.CONFIRM],
            record,
            scoring,
            blocks=blocks,
        ).replace("**", "")
        return f"{answers}\n{confirm}"

    blocking = set()
    for failure in result.gate.failures:
        row = rows.get(failure.id) if failure.id is not None else None
        if row is None or failure.rule in (Rule.PROTECTED_CHANGE, Rule.RECORDED_FAILURE):
            continue
        blocking.add(row.id)
        one, _, what = RULE_NOUNS[failure.rule]
        title = f"passk: {one} {what}: {plain_id(row.id)}"
        out.append((row.id, title, message(row, reason(failure, result.policy.rule), True), True))
    for row in result.comparison.rows:
        if row.confirmation is Confirmation.CONFIRMED_REGRESSION and row.id not in blocking:
            title = f"passk: confirmed regression (not blocking): {plain_id(row.id)}"
            lead = not_blocking_words(row)
            out.append((row.id, title, message(row, lead, False), False))
    return out


def not_blocking_words(row: RowComparison) -> str:
    """A confirmed regression the gate does not block on, as the annotation and the log say it:
    the same classes as every other place (:func:`~.phrases.transition`)."""
    return f"{transition(row)}; not blocking: the row is not must-not-break"
