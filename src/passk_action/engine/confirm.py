"""Confirmation: attempts after the main ones, in rounds, until no row wants more.

Two kinds of row are run again, each numbered after the row's last attempt
(Phase.CONFIRM), so a re-run asks for the same attempts and replays them:

- **gated rows** (must-not-break, ratchet-locked, and baseline-stable-correct
  rows under ``gate.block_on_any_regression``): the gate's rule
  (``core/sequential.py``, through ``core/verdicts.py``) judges each after
  every round and asks for more attempts on a version while the row's
  evidence is unclear; rounds go on until no row asks.  Errored attempts
  count toward a row's attempts and are not answers, so the next round
  asks again in their place: errors are not evidence.  The rule itself
  stops asking a row's version once its attempts are spent or its last
  ``unable_after`` attempts all errored (the agent shown unable to answer
  it), never after one errored round, and says which.  The rule bounds the
  attempts of a row and version (``max_attempts``), so the rounds end.
- **other lost rows**: once, ``confirm.attempts`` on both versions, as
  passk always confirmed them (the report names the first divergent check).

A version that cannot run adds nothing: its rows are judged on what was
recorded, and the result says so (a warning naming the rows and the fix).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..agents.runner import AttemptRequest
from ..core.causes import Kind, cause
from ..core.diff import Change, Comparison
from ..core.gate import GatePolicy
from ..core.model import Attempt, Phase, Row, RowRecord, Run, Version
from ..core.notes import (
    ConfirmationSkipped,
    GatedRowsAsRecorded,
    Note,
    NothingRun,
    SkipReason,
    WhereFrom,
)
from ..core.sequential import RELATIVE
from ..core.verdicts import gated_verdicts, kind_of, wanted
from .asking import Asker
from .request import CompareInputs
from .session import raise_if_stopped, wait


@dataclass(frozen=True)
class Confirmed:
    baseline: Run
    candidate: Run
    notes: tuple[Note, ...] = ()
    warnings: tuple[Note, ...] = ()
    made: int = 0
    """Confirmation attempts on both versions (replayed ones included)."""
    rounds: int = 0
    """Confirmation rounds run (a round runs what every row asked for, on each version)."""


Plan = dict[Version, dict[str, int]]
"""Version -> row id -> attempts to add."""


def lost_plan(comparison: Comparison, policy: GatePolicy, attempts: int) -> dict[str, int]:
    """The lost rows the gate does not judge: ``attempts`` more on both versions, once."""
    return {
        r.id: attempts
        for r in comparison.rows
        if r.change is Change.LOST and kind_of(r, policy.block_on_any_regression) is None
    }


@dataclass
class Rounds:
    """What the rounds made, and what they could not."""

    baseline: Run
    candidate: Run
    made: int = 0
    rounds: int = 0
    left_out: dict[Version, dict[str, None]] = field(
        default_factory=lambda: {Version.BASELINE: {}, Version.CANDIDATE: {}}
    )
    """Rows that asked only a version that cannot run, by that version."""
    unconfirmed: dict[str, None] = field(default_factory=dict)
    """Rows that asked both versions, one of which cannot run: confirmed on neither."""


def confirm(
    inputs: CompareInputs,
    records: tuple[RowRecord, ...],
    comparison: Comparison,
    baseline: Run,
    candidate: Run,
    asker: Asker,
) -> Confirmed:
    """Both runs with every confirmation round added, and what could not be run, said.

    ``comparison`` is of the main attempts (it names the lost and the gated
    rows); ``records`` hold the authoritative labels the rule scores against.
    """
    config = inputs.config
    lost = lost_plan(comparison, config.gate.policy, config.confirm.attempts)
    can_run = {v: asker.available(v) for v in Version}
    done = run_rounds(
        inputs,
        records,
        comparison,
        Rounds(baseline, candidate),
        asker,
        lost={version: lost for version in Version},
        can_run=can_run,
    )
    notes, warnings = _what_was_not_run(
        inputs, can_run, len(done.unconfirmed), done.left_out, done.rounds
    )
    return Confirmed(done.baseline, done.candidate, notes, warnings, done.made, done.rounds)


def run_rounds(
    inputs: CompareInputs,
    records: tuple[RowRecord, ...],
    comparison: Comparison,
    runs: Rounds,
    asker: Asker,
    *,
    lost: Mapping[Version, Mapping[str, int]],
    can_run: Mapping[Version, bool],
    one_side: bool = False,
) -> Rounds:
    """Every confirmation round: the gated rows' requests (``lost``'s rows too, in the first),
    run on each version that can run, until no row asks.

    A row that asks a version that cannot run is left out of every round;
    with ``one_side`` (the two-job mode's measuring job, whose baseline
    side the gating job runs) only that version's request is.  Numbered and
    decided from the recorded attempts alone, so any run over the same
    attempts asks for the same rounds.
    """
    config = inputs.config
    policy = config.gate.policy
    settings = runs.candidate.settings
    rows = inputs.dataset.by_id()
    waited: set[tuple[Version, str, int]] = set()
    """Transient errors a wait before a round has already given their second chance."""
    unmeasured = inputs.base.unmeasured if inputs.base is not None else ()
    # Each round adds an attempt to every row that asks, on a side holding at most
    # max_attempts: no row asks more than 2 x max_attempts times.
    for _ in range(2 * policy.rule.max_attempts + 1):
        verdicts = gated_verdicts(
            records,
            comparison,
            runs.baseline.attempts_by_row(),
            runs.candidate.attempts_by_row(),
            policy,
            settings,
            more_possible=True,
        )
        plan = wanted(verdicts)
        if runs.rounds == 0:
            for version in Version:
                plan[version].update(lost[version])
        for row_id in unmeasured:  # the base agent runs no added row past the limit
            plan[Version.BASELINE].pop(row_id, None)
        paired = {row_id for row_id, v in verdicts.items() if v.rule == RELATIVE and v.requests}
        _drop_unrunnable(plan, can_run, runs.left_out, runs.unconfirmed, one_side, paired)
        if not any(plan.values()):
            break
        if _outage(runs.baseline, runs.candidate, plan, waited, asker.session.retry.attempts > 0):
            # The second chance: a short outage costs the longest backoff, not a row.
            wait(asker.session, asker.session.retry.max_backoff_s)
            raise_if_stopped(asker.session, "wait for the next confirmation round")
        runs.rounds += 1
        before = len(runs.baseline.attempts) + len(runs.candidate.attempts)
        runs.baseline = again(runs.baseline, plan[Version.BASELINE], rows, asker, Version.BASELINE)
        runs.candidate = again(
            runs.candidate, plan[Version.CANDIDATE], rows, asker, Version.CANDIDATE
        )
        runs.made += len(runs.baseline.attempts) + len(runs.candidate.attempts) - before
    return runs


def _transient(attempts: Sequence[Attempt], retries: bool) -> bool:
    """Whether some of ``attempts`` errored as an outage would, with retries on."""
    return retries and any(
        a.error is not None and cause(a.error, a.detail).kind is Kind.TRANSIENT for a in attempts
    )


def _outage(
    baseline: Run,
    candidate: Run,
    plan: Plan,
    waited: set[tuple[Version, str, int]],
    retries: bool,
) -> bool:
    """Whether a row this round asks for erred as an outage would since the last wait: then
    the round waits the longest backoff first (and those errors are marked waited for).
    ``retries`` off (a replayed re-run, which asks nothing): no wait."""
    runs = {Version.BASELINE: baseline, Version.CANDIDATE: candidate}
    fresh = {
        (version, row_id, a.number)
        for version in Version
        for row_id in plan[version]
        for a in runs[version].attempts_by_row().get(row_id, ())
        if _transient((a,), retries)
    } - waited
    waited |= fresh
    return bool(fresh)


def _drop_unrunnable(
    plan: Plan,
    can_run: Mapping[Version, bool],
    left_out: dict[Version, dict[str, None]],
    unconfirmed: dict[str, None],
    one_side: bool = False,
    paired: Collection[str] = (),
) -> None:
    """Leave out every row that asks anything of a version that cannot run.

    A row that asks both versions (a lost row's confirmation; the strict
    rule's) is confirmed on both or not at all, since one side alone tells
    nothing: it goes to ``unconfirmed``.  A row that asks one version (the
    sequential rule's), or a gated row in ``paired`` (the relative rule's
    side-by-side comparison), goes to ``left_out`` under every version it
    asks that cannot run: the rule judges it on what was recorded.  With
    ``one_side`` the other version's request stays: another job runs it.
    """
    for version in Version:
        if can_run[version]:
            continue
        for row_id in list(plan[version]):
            asked = [side for side in Version if row_id in plan[side]]
            if len(asked) == len(Version) and row_id not in paired:
                unconfirmed[row_id] = None
            else:
                for side in asked:
                    if not can_run[side]:
                        left_out[side][row_id] = None
            for side in Version if not one_side else (version,):
                plan[side].pop(row_id, None)


def _what_was_not_run(
    inputs: CompareInputs,
    can_run: Mapping[Version, bool],
    unconfirmed: int,
    left_out: Mapping[Version, Mapping[str, None]],
    rounds: int,
) -> tuple[tuple[Note, ...], tuple[Note, ...]]:
    """The notes and warnings for attempts that were wanted and could not be made."""
    nothing_runs = not any(can_run.values())
    if nothing_runs:
        reason = SkipReason.NO_AGENT
    elif not can_run[Version.BASELINE]:
        reason = SkipReason.NO_BASELINE_AGENT
    else:
        reason = SkipReason.NO_CANDIDATE_AGENT
    base = inputs.base
    where = base.baseline_from if base is not None else WhereFrom.CONFIG
    ref = base.ref if base is not None else None
    notes: list[Note] = []
    warnings: list[Note] = []
    if unconfirmed:
        skipped = ConfirmationSkipped(unconfirmed, reason, where, ref)
        (notes if nothing_runs else warnings).append(skipped)
    for version in Version:
        if left_out[version]:
            warnings.append(
                GatedRowsAsRecorded(tuple(left_out[version]), version.value, reason, where, ref)
            )
    if (
        not rounds
        and not notes
        and not warnings
        and inputs.config.agent is None
        and inputs.config.baseline.agent is None
    ):
        notes.append(NothingRun())
    return tuple(notes), tuple(warnings)


def again(
    run: Run, plan: Mapping[str, int], rows: Mapping[str, Row], asker: Asker, version: Version
) -> Run:
    """``run`` with the planned confirmation attempts of ``version`` added."""
    if not plan:
        return run
    top: dict[str, int] = {}
    for a in run.attempts:
        top[a.row_id] = max(top.get(a.row_id, 0), a.number)
    requests = [
        AttemptRequest(
            rows[row_id], top.get(row_id, 0) + i, Phase.CONFIRM, version, run.settings.scoring
        )
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
