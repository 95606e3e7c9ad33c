"""Confirmation: every lost row run again on both versions, numbered after its last attempt.

It separates "the baseline varies too" from a confirmed regression.  When
only one version can run, or neither, nothing is confirmed and the result
says why (a warning when only the baseline agent was missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..agents.runner import AttemptRequest
from ..core.model import Phase, Row, Run, Version
from ..core.notes import ConfirmationSkipped, Note, NothingRun, SkipReason, WhereFrom
from .asking import Asker
from .request import CompareInputs
from .session import raise_if_stopped


@dataclass(frozen=True)
class Confirmed:
    baseline: Run
    candidate: Run
    notes: tuple[Note, ...] = ()
    warnings: tuple[Note, ...] = ()
    made: int = 0
    """Confirmation attempts on both versions (replayed ones included)."""


def confirm(
    inputs: CompareInputs, plan: Mapping[str, int], baseline: Run, candidate: Run, asker: Asker
) -> Confirmed:
    """Both runs with the planned confirmation attempts added, or as they were, saying why."""
    config = inputs.config
    if not plan:
        if config.agent is None and config.baseline.agent is None:
            return Confirmed(baseline, candidate, (NothingRun(),))
        return Confirmed(baseline, candidate)
    can_run = [asker.available(v) for v in (Version.BASELINE, Version.CANDIDATE)]
    if not any(can_run):
        return Confirmed(
            baseline, candidate, (ConfirmationSkipped(len(plan), SkipReason.NO_AGENT),)
        )
    if not all(can_run):
        base = inputs.base
        skipped = ConfirmationSkipped(
            len(plan),
            SkipReason.NO_BASELINE_AGENT,
            base.baseline_from if base is not None else WhereFrom.CONFIG,
            base.ref if base is not None else None,
        )
        return Confirmed(baseline, candidate, warnings=(skipped,))
    rows = inputs.dataset.by_id()
    confirmed_baseline = again(baseline, plan, rows, asker, Version.BASELINE)
    confirmed_candidate = again(candidate, plan, rows, asker, Version.CANDIDATE)
    made = (
        len(confirmed_baseline.attempts)
        - len(baseline.attempts)
        + len(confirmed_candidate.attempts)
        - len(candidate.attempts)
    )
    return Confirmed(confirmed_baseline, confirmed_candidate, made=made)


def again(
    run: Run, plan: Mapping[str, int], rows: Mapping[str, Row], asker: Asker, version: Version
) -> Run:
    """``run`` with the planned confirmation attempts of ``version`` added."""
    top: dict[str, int] = {}
    for a in run.attempts:
        top[a.row_id] = max(top.get(a.row_id, 0), a.number)
    requests = [
        AttemptRequest(rows[row_id], top.get(row_id, 0) + i, Phase.CONFIRM, version)
        for row_id, count in plan.items()
        for i in range(1, count + 1)
    ]
    # Lost rows may crash by nature (a candidate that crashes on a row loses it);
    # failing alike in confirmation means "could not run" only for a version that
    # answered on every one of those rows before.
    answered = {a.row_id for a in run.attempts if a.valid}
    fresh = asker.ask(requests, version, fail_fast=all(row_id in answered for row_id in plan))
    raise_if_stopped(asker.session, f"{version.value} confirmation")
    order = {r.id: i for i, r in enumerate(run.rows)}
    attempts = sorted((*run.attempts, *fresh), key=lambda a: (order.get(a.row_id, 0), a.number))
    return replace(run, attempts=tuple(attempts))
