"""The two-job mode's measuring job: the candidate alone, k times per row, then its side of
the confirmation rounds.

The job that runs the pull request's code holds no write token and runs no
baseline agent, so it cannot decide the gate: it measures the candidate on
every row, then runs the candidate's side of the very rounds the gating job
will run (``engine/confirm.run_rounds``), numbered as they number them, so the
gating job finds each candidate attempt it asks for under the same row,
number and phase.  The candidate's side of the gated-row rule reads the
candidate's answers alone, so the rounds are the same; where the baseline
matters (which rows are lost or gated under ``block_on_any_regression``) the
job assumes what may be: a row the committed baseline does not show on the
same input (a new row, a stale baseline the gating job measures anew) counts
as stable-correct on the baseline, so the job makes every attempt the gating
job can ask for, and perhaps a few it will not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.model import Attempt, Dataset, Phase, Run, Scoring, Version
from ..core.notes import Note
from ..core.result import evaluate
from ..core.scoring import rescore_run, right_attempt
from ..core.sequential import SEQUENTIAL
from ..store.compare_journal import CompareJournal
from .agents import AgentSource
from .asking import Asker
from .candidate import candidate_side
from .confirm import Rounds, lost_plan, run_rounds
from .journaled import comparison_journal
from .measuring import row_records
from .request import CompareInputs
from .session import Session


@dataclass(frozen=True)
class MeasuredCandidate:
    run: Run
    """The candidate's main attempts and its confirmation attempts."""
    confirmed_rows: int
    notes: tuple[Note, ...] = ()


def assumed_baseline(
    committed: Run, dataset: Dataset, k: int, scoring: Scoring, *, stale: bool
) -> Run:
    """The baseline as the measuring job may assume it: the committed attempts of every row
    it holds on the same input (none when ``stale``), read by the gate's ``scoring`` as the
    gating job reads them, and k answers those rules judge right for every other row."""
    recorded = {} if stale else {r.id: r.input_digest for r in committed.rows}
    committed = rescore_run(committed, scoring)
    grouped = committed.attempts_by_row()
    attempts: list[Attempt] = []
    for row in dataset.rows:
        if recorded.get(row.id) == row.input_digest:
            attempts += [a for a in grouped.get(row.id, ()) if a.phase is Phase.MAIN]
        else:
            attempts += [
                right_attempt(row, row.id, n, Phase.MAIN, scoring) for n in range(1, k + 1)
            ]
    return replace(committed, rows=row_records(dataset), attempts=tuple(attempts))


def measure_candidate(
    inputs: CompareInputs, agents: AgentSource, session: Session
) -> MeasuredCandidate:
    """The candidate's run for the gating job: k attempts per row, then its side of every
    confirmation round; nothing of the baseline side runs.  Every attempt is journaled
    before it counts, the rounds' in the comparison's journal (``journaled.py``), which the
    shell discards once the measured file is written."""
    with comparison_journal(inputs, agents, session) as journal:
        return _measure_candidate(inputs, agents, session, journal)


def _measure_candidate(
    inputs: CompareInputs, agents: AgentSource, session: Session, journal: CompareJournal
) -> MeasuredCandidate:
    config, dataset = inputs.config, inputs.dataset
    ratchet = frozenset(inputs.baseline.ratchet) & {r.id for r in dataset.rows}
    # As engine/compare does: a gated row's second chance is the next round under the
    # sequential rule, the held-back retry under the strict one.
    session = replace(
        session,
        gated=session.gated | ratchet,
        held_back=config.gate.rule.rule != SEQUENTIAL,
    )
    asker = Asker(agents, session, journal=journal)
    candidate = candidate_side(inputs, asker)
    stale = inputs.base is not None and inputs.base.stale.remeasure is not None
    baseline = assumed_baseline(
        inputs.baseline, dataset, config.settings.k, config.scoring, stale=stale
    )
    records = row_records(dataset)
    policy = config.gate.policy
    comparison, _ = evaluate(records, baseline, candidate.run, ratchet=ratchet, policy=policy)
    lost = lost_plan(comparison, policy, config.confirm.attempts)
    done = run_rounds(
        inputs,
        records,
        comparison,
        Rounds(baseline, candidate.run),
        asker,
        lost={Version.CANDIDATE: lost, Version.BASELINE: {}},
        can_run={Version.BASELINE: False, Version.CANDIDATE: True},
        one_side=True,
    )
    confirmed = {a.row_id for a in done.candidate.attempts if a.phase is Phase.CONFIRM}
    return MeasuredCandidate(done.candidate, len(confirmed), candidate.notes)
