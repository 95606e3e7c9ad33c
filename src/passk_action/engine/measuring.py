"""Measuring one version: k attempts per row, journaled, written as a run artifact.

(Not to be confused with ``store/recorder.py``, which journals the attempts a
measurement makes, nor with the action's record of verdicts in its comment.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import __version__
from ..agents.runner import Agent, AttemptRequest, could_not_run
from ..core.classify import classify_attempts
from ..core.cost import priced_attempt
from ..core.model import (
    AgentInfo,
    Attempt,
    Dataset,
    EvalSettings,
    Phase,
    Row,
    RowClass,
    RowRecord,
    Run,
    Scoring,
    Version,
)
from ..core.scoring import rescore_run, unreadable_everywhere, unreadable_message
from ..core.sequential import RELATIVE, RuleSettings
from ..errors import AgentCouldNotRun, ArtifactError, Interrupted, UnreadableAnswers
from ..store.artifact import read_run, write_run
from ..store.recorder import RunRecorder
from .agents import ReadyAgents, closing
from .asking import Asker
from .session import Session


def row_records(dataset: Dataset) -> tuple[RowRecord, ...]:
    return _records(dataset.rows)


def _records(rows: Iterable[Row]) -> tuple[RowRecord, ...]:
    return tuple(
        RowRecord(
            r.id,
            r.input_digest,
            r.expected,
            r.must_not_break,
            r.tags,
            r.cluster,
            r.expected_checks,
        )
        for r in rows
    )


def main_requests(
    rows: Iterable[Row],
    settings: EvalSettings,
    version: Version,
    recorded: set[tuple[str, int]],
) -> list[AttemptRequest]:
    """k main attempts per row, less those ``recorded``; answers read by ``settings.scoring``."""
    return [
        AttemptRequest(row, number, Phase.MAIN, version, settings.scoring)
        for row in rows
        for number in range(1, settings.k + 1)
        if (row.id, number) not in recorded
    ]


def measurement_requests(
    rows: Iterable[Row],
    settings: EvalSettings,
    version: Version,
    recorded: set[tuple[str, int]],
    measured: Measured,
) -> list[AttemptRequest]:
    """The measurement attempts of the gated rows, numbered k + 1 .. ``measured.to``, less
    those ``recorded`` (``gate.sequential.measure``: what the relative rule reads)."""
    return [
        AttemptRequest(row, number, Phase.MEASURE, version, settings.scoring)
        for row in rows
        if row.id in measured.rows
        for number in range(settings.k + 1, measured.to + 1)
        if (row.id, number) not in recorded
    ]


@dataclass(frozen=True)
class Measured:
    """The rows a baseline measures beyond k attempts, and to how many attempts in all."""

    rows: frozenset[str] = frozenset()
    to: int = 0


NOTHING_MEASURED = Measured()


@dataclass(frozen=True)
class Measurement:
    """What one version's run measures: ``rows`` of ``dataset``, k times under ``settings``,
    journaled and written to ``out``.

    ``resume`` continues an existing journal for ``out``; ``ratchet`` names the rows
    locked stable-correct (recorded in the run, gated like must-not-break rows);
    ``measured`` the rows a baseline measures beyond k attempts.
    """

    dataset: Dataset
    rows: Sequence[Row]
    settings: EvalSettings
    out: Path
    resume: bool = False
    ratchet: tuple[str, ...] = ()
    measured: Measured = NOTHING_MEASURED


def rows_to_measure(rule: RuleSettings, rows: Iterable[Row], ratchet: Iterable[str]) -> Measured:
    """What a baseline recorded for ``rule`` measures: under the relative rule, every
    must-not-break row and every row of the ratchet it carries, to ``rule.measure`` attempts
    (the rows ``gate.block_on_any_regression`` adds are known only from the run itself:
    they keep their k attempts, and the rule reads those)."""
    if rule.rule != RELATIVE or rule.measure <= 0:
        return NOTHING_MEASURED
    locked = set(ratchet)
    return Measured(
        frozenset(r.id for r in rows if r.must_not_break or r.id in locked), rule.measure
    )


def measure_run(
    what: Measurement, agent: Agent, info: AgentInfo, session: Session
) -> tuple[Run, int]:
    """Run ``agent`` k times on ``rows``, journaling every attempt; write the artifact.

    Returns the run and the number of agent executions made now.  With
    ``resume`` an existing journal for ``out`` is continued: every recorded
    attempt is kept and only missing attempt numbers are asked.  When the
    session is stopped the journal stays and :class:`Interrupted` is raised.
    """
    # The ratchet's rows are gated like must-not-break ones: theirs get a second chance too.
    gated = replace(session, gated=session.gated | frozenset(what.ratchet))
    asker = Asker(ReadyAgents({info.version: agent}), gated)
    run = measure(what, asker, info)
    return run, asker.count(info.version, Phase.MAIN) + asker.count(info.version, Phase.MEASURE)


def measure(what: Measurement, asker: Asker, info: AgentInfo) -> Run:
    """:func:`measure_run` for the version ``info`` names, asked through ``asker`` (which
    replays what a record holds, and builds the agent only if something is missing)."""
    session = asker.session
    dataset, rows, settings, out = what.dataset, what.rows, what.settings, what.out
    resume, ratchet, measured = what.resume, what.ratchet, what.measured
    header = Run(
        tool_version=__version__,
        dataset_digest=dataset.digest,
        settings=settings,
        agent=info,
        created_at=session.now(),
        rows=_records(rows),
        attempts=(),
        ratchet=tuple(sorted(set(ratchet))),
    )
    recorder = RunRecorder.open(out, header, resume=resume, warn=session.warn)

    def carry_retry_after(agent: Agent) -> None:
        # A Retry-After the endpoint gave before a stop still holds on --resume.
        pending = recorder.pending_retry_after() if resume else {}
        agent.carry_retry_after(pending, recorder.save_retry_after)

    recorded = {(a.row_id, a.number) for a in recorder.kept}
    requests = main_requests(rows, settings, info.version, recorded)
    requests += measurement_requests(rows, settings, info.version, recorded, measured)
    pricing = session.pricing

    def journal(attempt: Attempt) -> None:
        recorder.append(priced_attempt(attempt, pricing))

    with recorder:
        try:
            fresh = asker.ask(
                requests,
                info.version,
                fail_fast=True,
                on_attempt=journal,
                on_built=carry_retry_after,
                on_retry=lambda r, note: recorder.append_try(r.row.id, r.number, note),
                earlier_tries=recorder.tries,
            )
        except AgentCouldNotRun:
            # Crashes of an agent that never ran are nothing to resume from;
            # a journal kept from an earlier, working run stays.
            if not recorder.kept:
                recorder.close()
                recorder.journal_file.unlink(missing_ok=True)
            raise
        except UnreadableAnswers as exc:
            # The answers are kept in the journal: fixed rules read them again.
            raise UnreadableAnswers(
                exc.message,
                where=exc.where,
                hint=f"{exc.hint}; then continue with --resume: the answers recorded in "
                f"{recorder.journal_file.name} are read again under the new rules",
            ) from exc
    fresh = [priced_attempt(a, pricing) for a in fresh]
    done = len(recorder.kept) + len(fresh)
    expected_total = len(rows) * settings.k + sum(
        max(0, measured.to - settings.k) for r in rows if r.id in measured.rows
    )
    if (session.stop is not None and session.stop.is_set()) or done < expected_total:
        raise Interrupted(
            f"run stopped with {done} of {expected_total} attempts recorded",
            where=str(recorder.journal_file),
            hint=f"continue it with --resume (out: {out})",
        )
    order = {r.id: i for i, r in enumerate(rows)}
    attempts = sorted((*recorder.kept, *fresh), key=lambda a: (order[a.row_id], a.number))
    return recorder.finish(attempts)


def check_settings(run: Run, settings: EvalSettings, where: str, name: str) -> None:
    """A recorded run was measured with the config's k, or it cannot be used.

    Other scoring rules are no reason to refuse it: the run is scored again
    from its recorded answers (:func:`scored_recording`).
    """
    if run.settings.k != settings.k:
        raise ArtifactError(
            f"the {name} was recorded with k={run.settings.k}; the config has k={settings.k}",
            where=where,
            hint="record it again with the current config (`passk baseline`)"
            if name == "baseline"
            else "record it again with the current config",
        )


def scored_recording(run: Run, scoring: Scoring, where: str) -> tuple[Run, int]:
    """A recorded run under ``scoring`` (the gate's rules), and how many decisions that changed.

    Refused (one line, exit 2) when the rules can read none of its answers:
    the rules are wrong for this agent, said once with a sample answer.
    """
    rescored = rescore_run(run, scoring)
    first = unreadable_everywhere(rescored.attempts)
    if first is not None:
        key, message, hint = unreadable_message(first, len(rescored.attempts), scoring)
        raise UnreadableAnswers(f"{where}: {message}", where=key, hint=hint)
    changed = sum(
        1
        for old, new in zip(run.attempts, rescored.attempts, strict=True)
        if (old.decision, old.error) != (new.decision, new.error)
    )
    return rescored, changed


def carried_ratchet(
    previous: Run | None, new_run: Run, dataset: Dataset
) -> tuple[set[str], list[str]]:
    """The ratchet after recording ``new_run`` as the baseline, and the rows that left it.

    ratchet' = (ratchet ∩ dataset ids) ∪ {must-not-break rows stable-correct in
    ``new_run``}.  A row leaves only when it leaves the dataset.
    """
    ids = {r.id for r in dataset.rows}
    old = set(previous.ratchet) if previous is not None else set()
    grouped = new_run.attempts_by_row()
    settings = new_run.settings
    locked = {
        r.id
        for r in new_run.rows
        if r.must_not_break
        and classify_attempts(grouped.get(r.id, ()), r, settings.k, settings.scoring)
        is RowClass.STABLE_CORRECT
    }
    return (old & ids) | locked, sorted(old - ids)


def previous_baseline(path: Path) -> Run | None:
    """The baseline being replaced, if any: its ratchet must survive."""
    if not path.exists():
        return None
    try:
        return read_run(path)
    except ArtifactError as exc:
        # Refusing would block recording any new baseline; silently dropping
        # the ratchet would unlock rows.  Refuse, and say how to proceed.
        raise ArtifactError(
            "the existing baseline cannot be read, so its ratchet cannot be carried: "
            f"{exc.message}",
            where=str(path),
            hint="restore it from git, or delete it to start a new ratchet deliberately",
        ) from exc


def record_agent(agent: Agent, what: Measurement, info: AgentInfo, session: Session) -> Run:
    """Record ``agent`` on ``what`` and close it; refuse a run without a decision.

    What ``passk run``, ``passk baseline`` and the action's baseline mode all
    do: the agent is closed when the run ends, so persistent workers and HTTP
    connections do not outlive it.  A run whose every attempt failed is kept
    on disk (nothing is lost) but measured nothing, so it raises
    ``AgentCouldNotRun`` rather than becoming a baseline.
    """
    with closing(agent):
        run, _ = measure_run(what, agent, info, session)
    if run.attempts and not any(a.valid for a in run.attempts):
        raise could_not_run(run.attempts, info.version, alike=False)
    return run


def install_baseline(
    previous: Run | None, run: Run, dataset: Dataset, staging: Path, out: Path
) -> tuple[Run, list[str]]:
    """Write ``run`` over the baseline at ``out`` with the ratchet carried forward.

    The run was recorded to ``staging`` so that the committed baseline is
    replaced only once the new run is complete and its ratchet computed
    (``carried_ratchet``).  Returns the run as written and the rows that left
    the ratchet because they left the dataset, for the caller to announce.
    """
    ratchet, left = carried_ratchet(previous, run, dataset)
    installed = replace(run, ratchet=tuple(sorted(ratchet)))
    write_run(installed, out)
    staging.unlink(missing_ok=True)
    return installed, left
