"""Comparing a candidate with its baseline: the release procedure's steps 3–6, as phases.

1. the baseline side (``baseline.py``): committed attempts reused, new rows
   topped up, a stale baseline re-measured;
2. the candidate side (``candidate.py``): recorded, or measured now;
3. confirmation (``confirm.py``): gated rows in rounds until the gate's rule
   has what it needs, other lost rows once on both versions;
4. the decision, from the recorded attempts only (:func:`core.result.evaluate`).

Every phase returns what it made and what it has to say (notes as data); a
re-run replays what passk recorded and asks only for the rest (``asking.py``).
"""

from __future__ import annotations

from dataclasses import replace

from .. import __version__
from ..core.cost import priced_run
from ..core.gate import RECORDED_FAILURE_KIND, ProtectedChange
from ..core.model import Phase, Run, Version
from ..core.notes import Note, RatchetExits, RemeasuredOnRequest, Rescored, VerdictsReused
from ..core.protected import RecordedFailure
from ..core.result import CompareResult, Executions, evaluate
from ..core.sequential import SEQUENTIAL
from ..store.compare_journal import CompareJournal
from .agents import AgentSource
from .asking import Asker
from .baseline import baseline_side
from .candidate import CandidateSide, candidate_side
from .confirm import Confirmed, confirm
from .journaled import comparison_journal
from .measuring import check_settings, row_records, scored_recording
from .request import CompareInputs, Rerun
from .session import Session


def _without(run: Run, ids: frozenset[str]) -> Run:
    """``run`` less the rows ``ids`` and their attempts."""
    return replace(
        run,
        rows=tuple(r for r in run.rows if r.id not in ids),
        attempts=tuple(a for a in run.attempts if a.row_id not in ids),
    )


def compare(inputs: CompareInputs, agents: AgentSource, session: Session) -> CompareResult:
    """The release procedure's steps 3–6 for one candidate (see DEVELOPERS.md).

    Every attempt is journaled before it counts (``journaled.py``); the shell
    discards the comparison's journal once the result is written.
    """
    with comparison_journal(inputs, agents, session) as journal:
        return _compare(inputs, agents, session, journal)


def _compare(
    inputs: CompareInputs, agents: AgentSource, session: Session, journal: CompareJournal
) -> CompareResult:
    config, dataset = inputs.config, inputs.dataset
    where = str(config.baseline.artifact)
    check_settings(inputs.baseline, config.settings, where, "baseline")
    # The gate's scoring rules judge every recorded answer, whatever rules it was recorded under.
    committed_run, changed = scored_recording(inputs.baseline, config.scoring, where)
    rescored: tuple[Note, ...] = ()
    if committed_run is not inputs.baseline:
        rescored = (Rescored("the committed baseline", len(committed_run.attempts), changed),)
        inputs = replace(inputs, baseline=committed_run)
    rerun = inputs.rerun or Rerun()
    # The ratchet's rows are gated like must-not-break ones: theirs get a second chance too.
    # Under the sequential rule that second chance is the next confirmation round (an errored
    # attempt is not an answer, so the round asks again in its place): nothing is held back.
    session = replace(
        session,
        gated=session.gated | frozenset(inputs.baseline.ratchet),
        held_back=config.gate.rule.rule != SEQUENTIAL,
    )
    asker = Asker(agents, session, rerun.replay, journal=journal)
    rows = row_records(dataset)
    baseline = baseline_side(inputs, rows, asker)
    candidate = candidate_side(inputs, asker)
    unmeasured = frozenset(inputs.base.unmeasured if inputs.base is not None else ())
    if unmeasured:
        # Added rows past the limit have no baseline: they are left out of the
        # comparison (listed as not measured), not counted as gained or as new.
        rows = tuple(r for r in rows if r.id not in unmeasured)
        baseline = replace(baseline, run=_without(baseline.run, unmeasured))
        candidate = replace(candidate, run=_without(candidate.run, unmeasured))
    committed = inputs.baseline.ratchet
    in_dataset = {r.id for r in dataset.rows}
    ratchet = frozenset(committed) & in_dataset
    left = sorted(set(committed) - in_dataset)
    exits: tuple[Note, ...] = (RatchetExits(tuple(left)),) if left else ()
    policy = config.gate.policy

    # Compare on main attempts, then confirm: gated rows until the rule decides them,
    # other lost rows once on both versions.
    comparison, _ = evaluate(rows, baseline.run, candidate.run, ratchet=ratchet, policy=policy)
    confirmed = confirm(inputs, rows, comparison, baseline.run, candidate.run, asker)
    reused = _reused(rerun, asker)
    notes = [*rescored, *baseline.notes, *candidate.notes, *exits, *confirmed.notes]
    if reused is not None:
        notes.append(reused)
    if rerun.remeasured_label is not None:
        notes.append(RemeasuredOnRequest(rerun.remeasured_label))

    # Both runs priced alike with this config's prices (see priced_usage).
    baseline_run = priced_run(confirmed.baseline, config.pricing)
    candidate_run = priced_run(confirmed.candidate, config.pricing)
    changes, allowed = _protected_changes(inputs, rerun)
    comparison, gate = evaluate(
        rows,
        baseline_run,
        candidate_run,
        ratchet=ratchet,
        policy=policy,
        protected_changes=changes,
        protected_changes_allowed=allowed,
    )
    return CompareResult(
        rows=rows,
        baseline=baseline_run,
        candidate=candidate_run,
        ratchet=ratchet,
        policy=policy,
        comparison=comparison,
        gate=gate,
        protected_changes=changes,
        protected_changes_allowed=allowed,
        notes=tuple(notes),
        warnings=(*baseline.warnings, *confirmed.warnings),
        executions=_executions(inputs, candidate, asker, confirmed),
        reused=reused is not None,
        created_at=session.now(),
        tool_version=__version__,
    )


def _protected_changes(
    inputs: CompareInputs, rerun: Rerun
) -> tuple[tuple[ProtectedChange, ...], bool]:
    """The base's protected changes; a recorded failure that stands goes in as one more.

    As a protected change, the result file still re-derives its own gate
    (``passk gate`` agrees with it); no label allows it.
    """
    base = inputs.base
    changes = base.protected_changes if base is not None else ()
    allowed = base.protected_changes_allowed if base is not None else False
    if rerun.failure_stands:
        changes = (*changes, ProtectedChange(RECORDED_FAILURE_KIND, RecordedFailure()))
    return changes, allowed


def _reused(rerun: Rerun, asker: Asker) -> VerdictsReused | None:
    """The note that verdicts were replayed from passk's record, when they were."""
    if not rerun.replay.candidate:
        return None
    asked = sum(asker.asked.values())
    return VerdictsReused(sum(asker.replayed.values()), asked, rerun.recorded_for)


def _executions(
    inputs: CompareInputs, candidate: CandidateSide, asker: Asker, confirmed: Confirmed
) -> Executions:
    """Agent executions made now (recorded ones made earlier count), and the naive way's.

    The naive way runs both versions on every row, k times, plus the same
    confirmations.  Replayed attempts were made by an earlier run: they are not.
    """
    made = asker.count

    # The two-job mode's candidate attempts were made by the pull request's job (its
    # recorded answers may be asked again, for the base's scorer to judge: no execution).
    by_pull_request = inputs.candidate.measured_by_pull_request
    return Executions(
        candidate=candidate.recorded_main
        + (0 if by_pull_request else made(Version.CANDIDATE, Phase.MAIN)),
        baseline_topup=made(Version.BASELINE, Phase.MAIN),
        confirm_baseline=made(Version.BASELINE, Phase.CONFIRM),
        confirm_candidate=0 if by_pull_request else made(Version.CANDIDATE, Phase.CONFIRM),
        naive=2 * len(inputs.dataset.rows) * inputs.config.settings.k + confirmed.made,
        candidate_recorded=candidate.recorded_main,
        confirm_rounds=confirmed.rounds,
    )
