"""Every gated row's verdict under the gate's rule, from the recorded attempts.

Which rows the gate judges (:func:`~.sequential.gated_kind`: must-not-break,
ratchet-locked, and baseline-stable-correct rows under
``gate.block_on_any_regression``) and what :func:`~.sequential.judge_row`
says of each, over every recorded attempt of both versions, confirmations
included.  The engine asks this after each confirmation round
(``more_possible=True``: which rows want more attempts, and how many);
:func:`~.result.evaluate` asks it once more with ``more_possible=False``,
so a decision never waits for attempts and ``passk gate`` recomputes it from
a result file alone.  A verdict that asks for nothing is the same either
way, so the audit meets the engine's verdicts.

Pure: comparison rows, attempts and the rule's settings in, verdicts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .diff import Change, Comparison, Confirmation, RowComparison, first_divergent_check
from .gate import GatePolicy
from .model import Attempt, EvalSettings, Phase, RowClass, RowRecord, Version
from .relative import judge_relative
from .sequential import (
    RELATIVE,
    SEQUENTIAL,
    Finding,
    GatedKind,
    RowVerdict,
    RuleSettings,
    gated_kind,
    judge_row,
    score,
)


def kind_of(row: RowComparison, block_on_any_regression: bool) -> GatedKind | None:
    """Why the gate judges ``row`` (None: it does not); the baseline's class is its main one."""
    return gated_kind(
        must_not_break=row.must_not_break,
        in_ratchet=row.in_ratchet,
        block_on_any_regression=block_on_any_regression,
        baseline_stable_correct=row.baseline_class is RowClass.STABLE_CORRECT,
    )


def gated_verdicts(
    records: Sequence[RowRecord],
    comparison: Comparison,
    baseline: Mapping[str, Sequence[Attempt]],
    candidate: Mapping[str, Sequence[Attempt]],
    policy: GatePolicy,
    evals: EvalSettings,
    *,
    more_possible: bool,
) -> dict[str, RowVerdict]:
    """Row id -> verdict, for every gated row, in dataset order.

    ``baseline`` and ``candidate`` map a row to all its recorded attempts;
    ``records`` give each row's expected decision and checks (authoritative:
    the base's), judged by ``evals.scoring`` (:func:`~.scoring.is_right`);
    ``policy`` says which rows are gated and by which rule.
    """
    settings, scoring = policy.rule, evals.scoring
    labeled = {r.id: r for r in records}
    verdicts: dict[str, RowVerdict] = {}
    for row in comparison.rows:
        kind = kind_of(row, policy.block_on_any_regression)
        if kind is None:
            continue
        if settings.rule == RELATIVE:
            verdicts[row.id] = judge_relative(
                score(candidate.get(row.id, ()), labeled[row.id], scoring),
                score(baseline.get(row.id, ()), labeled[row.id], scoring),
                settings,
                kind=kind,
                more_possible=more_possible,
            )
            continue
        verdicts[row.id] = judge_row(
            labeled[row.id],
            baseline.get(row.id, ()),
            candidate.get(row.id, ()),
            settings,
            kind=kind,
            evals=evals,
            more_possible=more_possible,
            must_not_break=row.must_not_break,
        )
    return verdicts


MEASURED_KINDS = (GatedKind.MUST_NOT_BREAK, GatedKind.RATCHET)
"""The gated rows a baseline recorded for the relative rule measures (``engine/measuring.py``);
the rows ``gate.block_on_any_regression`` adds are known only from the run, never measured."""


def unmeasured(
    verdicts: Mapping[str, RowVerdict],
    baseline: Mapping[str, Sequence[Attempt]],
    settings: RuleSettings,
    k: int,
) -> tuple[str, ...]:
    """The gated rows the relative rule wanted measured that the baseline did not measure.

    A baseline recorded before the relative rule existed (or before a row became
    must-not-break) holds only a row's k main answers: the rule then judges the row
    against those alone (``core/relative.py``), which keeps its bound on harmless
    blocks (the paired comparison's, whatever the accuracy) but costs more attempts.
    Empty under the other rules, or when ``measure`` adds nothing to k.
    """
    if settings.rule != RELATIVE or settings.measure <= k:
        return ()
    return tuple(
        row_id
        for row_id, verdict in verdicts.items()
        if verdict.kind in MEASURED_KINDS
        and not any(a.phase is Phase.MEASURE for a in baseline.get(row_id, ()))
    )


def wanted(verdicts: Mapping[str, RowVerdict]) -> dict[Version, dict[str, int]]:
    """The attempts the verdicts still ask for: version -> row id -> how many, in row order."""
    out: dict[Version, dict[str, int]] = {Version.BASELINE: {}, Version.CANDIDATE: {}}
    for row_id, verdict in verdicts.items():
        for request in verdict.requests:
            out[request.version][row_id] = request.attempts
    return out


_CONFIRMATION = {
    Finding.REGRESSION: Confirmation.CONFIRMED_REGRESSION,
    Finding.BASELINE_VARIES: Confirmation.BASELINE_VARIES,
    Finding.RELIABLE: Confirmation.NOT_REPRODUCED,
    Finding.WITHIN_CHANCE: Confirmation.NOT_REPRODUCED,
    Finding.UNDECIDED: Confirmation.INCONCLUSIVE,
    Finding.UNABLE: Confirmation.INCONCLUSIVE,
    Finding.MATCHES_BASELINE: Confirmation.BASELINE_VARIES,
}
"""What the sequential rule's finding says a lost row's confirmation showed."""


def with_verdicts(
    comparison: Comparison,
    verdicts: Mapping[str, RowVerdict],
    baseline: Mapping[str, Sequence[Attempt]],
    candidate: Mapping[str, Sequence[Attempt]],
) -> Comparison:
    """The comparison, each lost (or blocking) row the sequential rule judged confirmed as its
    verdict says.

    Under the sequential rule a gated row's confirmation attempts are the
    rule's rounds, and what they showed is its finding: a regression (the
    first divergent check named; also on a row stable-correct on the k main
    attempts whose later answers showed it), a baseline that varies as
    much, a candidate within chance, or nothing decided.  Reading the confirmation
    attempts on their own (:func:`~.diff.confirmation_outcome`) could call a
    blocking row "baseline varies" for one wrong baseline answer in twenty.
    Rows the strict rule judged keep the outcome it always had.
    """
    changed = False
    rows = []
    for row in comparison.rows:
        verdict = verdicts.get(row.id)
        if (
            verdict is None
            or verdict.rule not in (SEQUENTIAL, RELATIVE)
            or (row.change is not Change.LOST and verdict.finding is not Finding.REGRESSION)
        ):
            rows.append(row)
            continue
        confirmation = _CONFIRMATION[verdict.finding]
        divergent = (
            first_divergent_check(baseline.get(row.id, ()), candidate.get(row.id, ()))
            if confirmation is Confirmation.CONFIRMED_REGRESSION
            else None
        )
        if (confirmation, divergent) != (row.confirmation, row.first_divergent_check):
            row = replace(row, confirmation=confirmation, first_divergent_check=divergent)
            changed = True
        rows.append(row)
    return replace(comparison, rows=tuple(rows)) if changed else comparison
