"""A comparison's journal: opened before any agent runs, kept until its result is written.

Every attempt a comparison asks besides the candidate's main run (which its
run's journal keeps) reaches ``store/compare_journal.py`` before it counts:
the baseline's top-up and re-measurement, and both versions' confirmation
rounds, in ``passk compare`` and in the two-job mode's measuring job alike.
The shell discards it once the result is written
(:func:`store.compare_journal.discard_compare_journal`): a comparison killed
in its rounds, or stopped by a full disk while writing its result, resumes
(``--resume``) asking nothing again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..core.model import Version
from ..errors import AgentCouldNotRun
from ..store.compare_journal import CompareJournal, compare_journal_path
from .agents import AgentSource
from .request import CompareInputs
from .session import Session


def identity(inputs: CompareInputs, agents: AgentSource) -> dict[str, Any]:
    """What a comparison's attempts are answers of: a resume of anything else is refused."""

    def agent(version: Version) -> str | None:
        return agents.describe(version) if agents.available(version) else None

    source, base = inputs.candidate, inputs.base
    return {
        "dataset": inputs.dataset.digest,
        "settings": inputs.config.settings.to_json(),
        "candidate": agent(Version.CANDIDATE),
        "candidate_commit": source.commit,
        "candidate_dirty": source.dirty,
        "baseline": agent(Version.BASELINE),
        "base_commit": base.commit if base is not None else None,
    }


@contextmanager
def comparison_journal(
    inputs: CompareInputs, agents: AgentSource, session: Session
) -> Iterator[CompareJournal]:
    """The comparison's journal beside the candidate's run; with the candidate's ``resume``,
    what an interrupted run of it recorded is kept.

    A version that could not run at all (:class:`AgentCouldNotRun`) leaves
    nothing to resume from when no attempt ever answered: its crashes would
    otherwise be replayed once the agent is fixed.
    """
    source = inputs.candidate
    journal = CompareJournal.open(
        source.out, identity(inputs, agents), resume=source.resume, warn=session.warn
    )
    try:
        yield journal
    except AgentCouldNotRun:
        journal.close()
        if not journal.answered:
            compare_journal_path(source.out).unlink(missing_ok=True)
        raise
    finally:
        journal.close()
