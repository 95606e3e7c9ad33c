"""Comparing a candidate with its baseline: top-up, candidate, confirmation, decision."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import __version__
from ..agents.runner import Agent, AttemptRequest, run_attempts
from ..core.cost import priced_run
from ..core.diff import confirmation_plan
from ..core.gate import ProtectedChange
from ..core.model import (
    AgentInfo,
    Attempt,
    Dataset,
    EvalSettings,
    Phase,
    Row,
    RowRecord,
    Run,
    Version,
)
from ..core.notes import (
    BaselineReused,
    ConfirmationSkipped,
    DroppedRows,
    Note,
    NothingRun,
    RatchetExits,
    RecordedCandidate,
    RelabeledRows,
    Remeasured,
    SkipReason,
    StaleBaseline,
    ToppedUp,
    WhereFrom,
)
from ..core.result import CompareResult, Executions, evaluate
from ..errors import ArtifactError, ConfigError
from ..inputs.config import Config
from ..report.notes import ids, sentence
from .recording import main_requests, record_run, row_records
from .session import Session, raise_if_stopped

AgentFactory = Callable[[Version], Agent | None]
"""Builds the agent for a version; None when that version cannot be run here."""


@dataclass(frozen=True)
class CompareInputs:
    config: Config
    dataset: Dataset
    baseline: Run
    candidate: Run | None
    """A recorded candidate run, or None to run the candidate now."""
    candidate_out: Path
    agents: AgentFactory
    ratchet_source: Run | None = None
    """Where the ratchet comes from (the base commit's baseline); defaults to ``baseline``."""
    protected_changes: tuple[ProtectedChange, ...] = ()
    protected_changes_allowed: bool = False
    resume: bool = False
    candidate_commit: str | None = None
    candidate_dirty: bool = False
    """The candidate runs from a working tree with uncommitted changes (labelled so)."""
    remeasure: StaleBaseline | None = None
    """Why the committed baseline is stale; set, the baseline is measured anew (k per row)."""
    baseline_commit: str | None = None
    """The commit the baseline side runs at (the base), recorded on a re-measured baseline."""
    baseline_fingerprint: tuple[tuple[str, str], ...] | None = None
    stale_warning: Note | None = None
    """A stale baseline used anyway (``baseline.when_stale: warn``), or one only behind."""
    baseline_from: WhereFrom = WhereFrom.CONFIG
    """Where the baseline agent comes from: what a skipped confirmation tells to set."""
    base_ref: str | None = None
    """The base a developer named (``passk compare --base REF``)."""


def _check_settings(run: Run, settings: EvalSettings, where: str, name: str) -> None:
    if run.settings != settings:
        raise ArtifactError(
            f"the {name} was recorded with k={run.settings.k}, scoring "
            f"{list(run.settings.scoring.normalize) or 'exact'}; the config has k={settings.k}, "
            f"scoring {list(settings.scoring.normalize) or 'exact'}",
            where=where,
            hint="record it again with the current config (`passk baseline`)"
            if name == "baseline"
            else "record it again with the current config",
        )


def _next_numbers(attempts: Sequence[Attempt]) -> dict[str, int]:
    top: dict[str, int] = {}
    for a in attempts:
        top[a.row_id] = max(top.get(a.row_id, 0), a.number)
    return top


def compare(inputs: CompareInputs, session: Session) -> CompareResult:
    """The release procedure's steps 3–6 for one candidate (see DEVELOPERS.md)."""
    config, dataset = inputs.config, inputs.dataset
    settings = config.settings
    rows = row_records(dataset)
    dataset_rows = dataset.by_id()
    notes: list[Note] = []
    baseline_where = str(config.baseline.artifact)
    _check_settings(inputs.baseline, settings, baseline_where, "baseline")

    warnings: list[Note] = []
    if inputs.stale_warning is not None:
        warnings.append(inputs.stale_warning)
    committed = inputs.baseline
    remeasured = 0
    if inputs.remeasure is not None:
        committed = _remeasure(inputs, rows, session, warnings)
        remeasured = len(committed.attempts)
    # 1. Reuse baseline attempts for rows whose input is unchanged; top up the rest.
    baseline_rows = {r.id: r for r in committed.rows}
    by_row = committed.attempts_by_row()
    reused: list[Attempt] = []
    topup_rows: list[Row] = []
    relabeled: list[str] = []
    for row in dataset.rows:
        old = baseline_rows.get(row.id)
        if old is None or old.input_digest != row.input_digest:
            topup_rows.append(row)
            continue
        reused.extend(by_row.get(row.id, ()))
        if old.expected != row.expected:
            relabeled.append(row.id)
    dropped = sorted(set(baseline_rows) - set(dataset_rows))
    if dropped:
        notes.append(DroppedRows(tuple(dropped)))
    if relabeled:
        notes.append(RelabeledRows(tuple(relabeled)))
    topup_attempts: list[Attempt] = []
    if topup_rows:
        agent = inputs.agents(Version.BASELINE)
        if agent is None:
            raise ConfigError(
                f"{len(topup_rows)} row(s) are new or changed since the baseline was recorded "
                f"({ids([r.id for r in topup_rows])}) and no baseline agent is available",
                where=f"{config.path}: baseline.agent",
                hint="set baseline.agent, or record the baseline again with `passk baseline`",
            )
        topup_attempts = run_attempts(
            main_requests(topup_rows, settings.k, Version.BASELINE, set()),
            agent,
            concurrency=session.concurrency,
            retry=session.retry,
            progress=session.progress,
            stop=session.stop,
            fail_fast=True,
        )
        raise_if_stopped(session, "baseline top-up")
        notes.append(ToppedUp(tuple(r.id for r in topup_rows), len(topup_attempts)))
    elif remeasured == 0 and inputs.baseline.dataset_digest == dataset.digest:
        notes.append(BaselineReused())

    baseline = replace(
        committed,
        dataset_digest=dataset.digest,
        rows=rows,
        attempts=tuple(reused) + tuple(topup_attempts),
    )

    # 2. The candidate: recorded, or run now.
    candidate_runs = 0
    if inputs.candidate is not None:
        candidate = inputs.candidate
        _check_settings(candidate, settings, "--candidate", "candidate run")
        # Decisions depend on a row's input alone (as for baseline reuse): a
        # recorded run still holds when only labels, tags or marks changed.
        recorded = {r.id: r.input_digest for r in candidate.rows}
        other = [r.id for r in dataset.rows if recorded.get(r.id) != r.input_digest]
        if other:
            raise ArtifactError(
                f"the candidate run was recorded on another version of the dataset: "
                f"{len(other)} row(s) are missing or have another input ({ids(other, 3)})",
                where="--candidate",
                hint="run the candidate again on the current dataset",
            )
        # Those executions happened, just earlier (e.g. in sharded jobs): count them.
        candidate_runs = sum(1 for a in candidate.attempts if a.phase is Phase.MAIN)
        notes.append(RecordedCandidate(candidate_runs))
    else:
        agent = inputs.agents(Version.CANDIDATE)
        if agent is None:
            raise ConfigError(
                "no candidate run was given and the config has no `agent:` to record one",
                where=f"{config.path}: agent",
                hint="pass a recorded run (--candidate RUN, e.g. from `passk import`), "
                "or add `agent:`",
            )
        info = AgentInfo(
            Version.CANDIDATE,
            agent.description,
            inputs.candidate_commit,
            dirty=inputs.candidate_dirty,
        )
        candidate, candidate_runs = record_run(
            dataset,
            dataset.rows,
            settings,
            agent,
            info,
            inputs.candidate_out,
            session,
            resume=inputs.resume,
        )

    ratchet_run = inputs.ratchet_source or inputs.baseline
    ratchet = frozenset(ratchet_run.ratchet) & set(dataset_rows)
    left = sorted(set(ratchet_run.ratchet) - set(dataset_rows))
    if left:
        notes.append(RatchetExits(tuple(left)))
    policy = config.gate.policy

    # 3. Compare on main attempts, then confirm every lost row on both versions.
    comparison, _ = evaluate(rows, baseline, candidate, ratchet=ratchet, policy=policy)
    plan = confirmation_plan(
        comparison,
        attempts=config.confirm.attempts,
        must_not_break_attempts=config.confirm.must_not_break_attempts,
    )
    confirm_counts = {Version.BASELINE: 0, Version.CANDIDATE: 0}
    if not plan and config.agent is None and config.baseline.agent is None:
        notes.append(NothingRun())
    if plan:
        baseline_agent = inputs.agents(Version.BASELINE)
        candidate_agent = inputs.agents(Version.CANDIDATE)
        if baseline_agent is None and candidate_agent is None:
            notes.append(ConfirmationSkipped(len(plan), SkipReason.NO_AGENT))
        elif baseline_agent is None or candidate_agent is None:
            warnings.append(
                ConfirmationSkipped(
                    len(plan),
                    SkipReason.NO_BASELINE_AGENT,
                    inputs.baseline_from,
                    inputs.base_ref,
                )
            )
        else:
            baseline, confirm_counts[Version.BASELINE] = _confirm(
                baseline, plan, dataset_rows, baseline_agent, Version.BASELINE, session
            )
            candidate, confirm_counts[Version.CANDIDATE] = _confirm(
                candidate, plan, dataset_rows, candidate_agent, Version.CANDIDATE, session
            )

    # Both runs priced alike with this config's prices (see priced_usage).
    baseline = priced_run(baseline, config.pricing)
    candidate = priced_run(candidate, config.pricing)
    comparison, gate = evaluate(
        rows,
        baseline,
        candidate,
        ratchet=ratchet,
        policy=policy,
        protected_changes=inputs.protected_changes,
        protected_changes_allowed=inputs.protected_changes_allowed,
    )
    confirm_total = sum(confirm_counts.values())
    executions = Executions(
        candidate=candidate_runs,
        baseline_topup=remeasured + len(topup_attempts),
        confirm_baseline=confirm_counts[Version.BASELINE],
        confirm_candidate=confirm_counts[Version.CANDIDATE],
        naive=2 * len(rows) * settings.k + confirm_total,
    )
    return CompareResult(
        rows=rows,
        baseline=baseline,
        candidate=candidate,
        ratchet=ratchet,
        policy=policy,
        comparison=comparison,
        gate=gate,
        protected_changes=inputs.protected_changes,
        protected_changes_allowed=inputs.protected_changes_allowed,
        notes=tuple(notes),
        warnings=tuple(warnings),
        executions=executions,
        created_at=session.now(),
        tool_version=__version__,
    )


def _remeasure(
    inputs: CompareInputs, rows: tuple[RowRecord, ...], session: Session, warnings: list[Note]
) -> Run:
    """The baseline measured anew on every row (k attempts each) by the baseline agent.

    Used when the committed baseline is stale: the base commit's agent is not
    the one it measured.  Only its attempts are replaced; the ratchet stays
    the committed artifact's (the caller passes it as ``ratchet_source``).
    """
    config, dataset = inputs.config, inputs.dataset
    k = config.settings.k
    agent = inputs.agents(Version.BASELINE)
    assert inputs.remeasure is not None
    if agent is None:
        raise ConfigError(
            f"{sentence(inputs.remeasure)}, and no baseline agent is available to measure it again",
            where=f"{config.path}: baseline.when_stale",
            hint="record the baseline again at the base commit (`passk baseline`), "
            "or set baseline.when_stale: warn",
        )
    fresh = run_attempts(
        main_requests(dataset.rows, k, Version.BASELINE, set()),
        agent,
        concurrency=session.concurrency,
        retry=session.retry,
        progress=session.progress,
        stop=session.stop,
    )
    raise_if_stopped(session, "baseline re-measurement")
    warnings.append(
        Remeasured(inputs.remeasure, inputs.baseline_commit, len(fresh), k, len(dataset.rows))
    )
    order = {r.id: i for i, r in enumerate(dataset.rows)}
    fresh.sort(key=lambda a: (order[a.row_id], a.number))
    return replace(
        inputs.baseline,
        dataset_digest=dataset.digest,
        rows=rows,
        attempts=tuple(fresh),
        agent=AgentInfo(
            Version.BASELINE,
            agent.description,
            inputs.baseline_commit,
            fingerprint=inputs.baseline_fingerprint,
        ),
    )


def _confirm(
    run: Run,
    plan: Mapping[str, int],
    rows: Mapping[str, Row],
    agent: Agent,
    version: Version,
    session: Session,
) -> tuple[Run, int]:
    """Run the planned confirmation attempts, numbered after the row's last attempt."""
    top = _next_numbers(run.attempts)
    requests = [
        AttemptRequest(rows[row_id], top.get(row_id, 0) + i, Phase.CONFIRM, version)
        for row_id, count in plan.items()
        for i in range(1, count + 1)
    ]
    # Lost rows may crash by nature (a candidate that crashes on a row loses it);
    # failing alike in confirmation means "could not run" only for a version that
    # answered on every one of those rows before.
    answered = {a.row_id for a in run.attempts if a.valid}
    fresh = run_attempts(
        requests,
        agent,
        concurrency=session.concurrency,
        retry=session.retry,
        progress=session.progress,
        stop=session.stop,
        fail_fast=all(row_id in answered for row_id in plan),
    )
    raise_if_stopped(session, f"{version.value} confirmation")
    order = {r.id: i for i, r in enumerate(run.rows)}
    attempts = sorted((*run.attempts, *fresh), key=lambda a: (order.get(a.row_id, 0), a.number))
    return replace(run, attempts=tuple(attempts)), len(fresh)
