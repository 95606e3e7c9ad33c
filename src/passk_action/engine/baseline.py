"""The baseline side of a comparison: the committed attempts reused, the rest run now.

A row whose input is unchanged since the baseline was recorded keeps its
recorded attempts (re-scored against its current label); a new or changed
row is topped up, k attempts on the baseline agent.  A committed baseline
that is stale (the base commit's agent is not the one it measured, and
``baseline.when_stale: remeasure``) is measured anew on every row first; its
ratchet stays the committed one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.model import AgentInfo, Attempt, Row, RowRecord, Run, Version
from ..core.notes import (
    AddedRowsNotMeasured,
    BaselineReused,
    DroppedRows,
    Note,
    RelabeledRows,
    Remeasured,
    StaleBaseline,
    ToppedUp,
    ids,
)
from ..errors import ConfigError
from .asking import Asker
from .measuring import main_requests
from .request import CompareInputs, stale_reason
from .session import raise_if_stopped


@dataclass(frozen=True)
class BaselineSide:
    """The baseline the comparison uses, on the dataset's rows, and what was done to get it."""

    run: Run
    notes: tuple[Note, ...] = ()
    warnings: tuple[Note, ...] = ()


@dataclass(frozen=True)
class Reuse:
    """What of a recorded baseline holds for the current dataset."""

    attempts: tuple[Attempt, ...]
    """Every recorded attempt of a row whose input is unchanged."""
    topup: tuple[Row, ...]
    """Rows that are new, or whose input changed: they need k attempts now."""
    relabeled: tuple[str, ...]
    dropped: tuple[str, ...]
    """Rows of the baseline that left the dataset."""


def reuse(committed: Run, rows: tuple[Row, ...]) -> Reuse:
    """Decisions depend on a row's input alone: a row keeps its attempts while that holds."""
    recorded = {r.id: r for r in committed.rows}
    by_row = committed.attempts_by_row()
    attempts: list[Attempt] = []
    topup: list[Row] = []
    relabeled: list[str] = []
    for row in rows:
        old = recorded.get(row.id)
        if old is None or old.input_digest != row.input_digest:
            topup.append(row)
            continue
        attempts.extend(by_row.get(row.id, ()))
        if old.expected != row.expected:
            relabeled.append(row.id)
    dropped = sorted(set(recorded) - {r.id for r in rows})
    return Reuse(tuple(attempts), tuple(topup), tuple(relabeled), tuple(dropped))


def baseline_side(
    inputs: CompareInputs, records: tuple[RowRecord, ...], asker: Asker
) -> BaselineSide:
    """The committed baseline, re-measured if stale, reused where it holds, topped up."""
    dataset = inputs.dataset
    committed = inputs.baseline
    notes: list[Note] = []
    warnings: list[Note] = []
    stale = inputs.base.stale if inputs.base is not None else None
    if inputs.base is not None:
        warnings += inputs.base.warnings
    if stale is not None and stale.warning is not None:
        warnings.append(stale.warning)
    remeasured = False
    unmeasured = frozenset(inputs.base.unmeasured if inputs.base is not None else ())
    if unmeasured:
        assert inputs.base is not None and inputs.base.added_rows_limit is not None
        ordered = tuple(r.id for r in dataset.rows if r.id in unmeasured)
        warnings.append(AddedRowsNotMeasured(ordered, inputs.base.added_rows_limit))
    if stale is not None and stale.remeasure is not None:
        committed, measured = remeasure(inputs, records, asker, stale.remeasure, unmeasured)
        warnings.append(measured)
        remeasured = True
    held = reuse(committed, dataset.rows)
    held = replace(held, topup=tuple(r for r in held.topup if r.id not in unmeasured))
    if held.dropped:
        notes.append(DroppedRows(held.dropped))
    if held.relabeled:
        notes.append(RelabeledRows(held.relabeled))
    topped_up: list[Attempt] = []
    if held.topup:
        topped_up = top_up(inputs, held.topup, asker)
        notes.append(ToppedUp(tuple(r.id for r in held.topup), len(topped_up)))
    elif not remeasured and inputs.baseline.dataset_digest == dataset.digest:
        notes.append(BaselineReused())
    run = replace(
        committed,
        dataset_digest=dataset.digest,
        rows=records,
        attempts=held.attempts + tuple(topped_up),
    )
    return BaselineSide(run, tuple(notes), tuple(warnings))


def top_up(inputs: CompareInputs, rows: tuple[Row, ...], asker: Asker) -> list[Attempt]:
    """k attempts of the baseline agent on each of ``rows`` (new or changed since)."""
    config = inputs.config
    if not asker.available(Version.BASELINE):
        raise ConfigError(
            f"{len(rows)} row(s) are new or changed since the baseline was recorded "
            f"({ids([r.id for r in rows])}) and no baseline agent is available",
            where=f"{config.path}: baseline.agent",
            hint="set baseline.agent, or record the baseline again with `passk baseline`",
        )
    requests = main_requests(rows, config.settings, Version.BASELINE, set())
    attempts = asker.ask(requests, Version.BASELINE, fail_fast=True)
    raise_if_stopped(asker.session, "baseline top-up")
    return attempts


def remeasure(
    inputs: CompareInputs,
    records: tuple[RowRecord, ...],
    asker: Asker,
    why: StaleBaseline,
    unmeasured: frozenset[str] = frozenset(),
) -> tuple[Run, Remeasured]:
    """The baseline measured anew on every row (k attempts each) by the baseline agent.

    Used when the committed baseline is stale: the base commit's agent is not
    the one it measured.  Only its attempts are replaced; the ratchet stays
    the committed artifact's.
    """
    config, dataset = inputs.config, inputs.dataset
    k = config.settings.k
    if not asker.available(Version.BASELINE):
        raise ConfigError(
            f"{stale_reason(why)}, and no baseline agent is available to measure it again",
            where=f"{config.path}: baseline.when_stale",
            hint="record the baseline again at the base commit (`passk baseline`), "
            "or set baseline.when_stale: warn",
        )
    rows = tuple(r for r in dataset.rows if r.id not in unmeasured)
    requests = main_requests(rows, config.settings, Version.BASELINE, set())
    # A base agent that cannot run stops after its first attempts, as every run does.
    fresh = asker.ask(requests, Version.BASELINE, fail_fast=True)
    raise_if_stopped(asker.session, "baseline re-measurement")
    base = inputs.base
    commit = base.commit if base is not None else None
    order = {r.id: i for i, r in enumerate(dataset.rows)}
    fresh.sort(key=lambda a: (order[a.row_id], a.number))
    run = replace(
        inputs.baseline,
        dataset_digest=dataset.digest,
        rows=records,
        attempts=tuple(fresh),
        agent=AgentInfo(
            Version.BASELINE,
            asker.describe(Version.BASELINE),
            commit,
            fingerprint=base.stale.fingerprint if base is not None else None,
        ),
    )
    return run, Remeasured(why, commit, len(fresh), k, len(dataset.rows))
