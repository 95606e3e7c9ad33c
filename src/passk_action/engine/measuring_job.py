"""The two-job mode's measuring job: the candidate alone, k times per row, then confirmed.

The job that runs the pull request's code holds no write token and runs no
baseline agent, so it cannot decide the gate: it measures the candidate on
every row and makes the confirmation attempts of every row the gating job
may find lost (:func:`core.diff.measuring_job_plan`), numbered as
:func:`engine.confirm.again` numbers them, so the gating job's confirmation
finds each of them under the same row, number and phase.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.diff import measuring_job_plan
from ..core.model import Run, Version
from ..core.notes import Note
from .agents import AgentSource
from .asking import Asker
from .candidate import candidate_side
from .confirm import again
from .measuring import row_records
from .request import CompareInputs
from .session import Session


@dataclass(frozen=True)
class MeasuredCandidate:
    run: Run
    """The candidate's main attempts and its confirmation attempts."""
    confirmed_rows: int
    notes: tuple[Note, ...] = ()


def measure_candidate(
    inputs: CompareInputs, agents: AgentSource, session: Session
) -> MeasuredCandidate:
    """The candidate's run for the gating job: k attempts per row, then the planned
    confirmation attempts; nothing of the baseline side runs."""
    config, dataset = inputs.config, inputs.dataset
    ratchet = frozenset(inputs.baseline.ratchet) & {r.id for r in dataset.rows}
    session = replace(session, gated=session.gated | ratchet)
    asker = Asker(agents, session)
    candidate = candidate_side(inputs, asker)
    stale = inputs.base is not None and inputs.base.stale.remeasure is not None
    plan = measuring_job_plan(
        row_records(dataset),
        None if stale else inputs.baseline,
        candidate.run.attempts_by_row(),
        k=config.settings.k,
        scoring=config.settings.scoring,
        ratchet=ratchet,
        attempts=config.confirm.attempts,
        must_not_break_attempts=config.confirm.must_not_break_attempts,
    )
    run = candidate.run
    if plan:
        run = again(run, plan, dataset.by_id(), asker, Version.CANDIDATE)
    return MeasuredCandidate(run, len(plan), candidate.notes)
