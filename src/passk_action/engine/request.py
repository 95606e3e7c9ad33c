"""What a comparison is given: what every comparison needs, and what a base commit adds.

Every comparison has a config, the dataset to gate, the committed baseline
and a candidate (recorded, or run now).  Against a base commit (a pull
request in the action, ``passk compare --base REF`` on a laptop) it also has
the base commit itself, the protected changes the head makes, and what to do
about a stale baseline.  A re-run of the same content in the action adds what
passk recorded for it (:class:`Rerun`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.gate import ProtectedChange
from ..core.model import Dataset, Run
from ..core.notes import Note, StaleBaseline, WhereFrom
from ..inputs.config import Config
from .asking import Replay


@dataclass(frozen=True)
class CandidateSource:
    """Where the candidate's attempts come from, and what its run records about its code."""

    out: Path
    """Where a candidate run now is journaled and written."""
    recorded: Run | None = None
    """A recorded candidate run (``--candidate``, ``candidate-run``): nothing runs."""
    resume: bool = False
    """Continue an interrupted candidate run at ``out``."""
    commit: str | None = None
    dirty: bool = False
    """The candidate runs from a working tree with uncommitted changes (labelled so)."""
    measured_by_pull_request: bool = False
    """``recorded`` is the two-job mode's measured run, the pull request's own word: it is
    held to the dataset exactly (rows, inputs, digest, settings, attempt numbers and
    ``commit``), and only its main attempts are the candidate's run here (its
    confirmation attempts answer confirmation, ``agents/recorded.py``)."""


def stale_reason(note: StaleBaseline) -> str:
    """Why the committed baseline is stale, as an error that stops on it says it.

    An error is worded where it is raised; the note itself is worded by the
    renderers (``report/notes.stale``, held to these same words by a test).
    """
    at = f" (measured at {note.measured_at[:7]})" if note.measured_at else ""
    if note.changed is None:
        why = f"records no fingerprint of {', '.join(note.paths)}"
    else:
        why = f"was measured on other files: {', '.join(note.changed)} changed"
    return f"the committed baseline{at} is stale: it {why} at the base {note.base[:7]}"


@dataclass(frozen=True)
class StalePlan:
    """What the comparison does about the committed baseline's freshness."""

    remeasure: StaleBaseline | None = None
    """Why the committed baseline is stale; set, the baseline is measured anew (k per row)."""
    warning: Note | None = None
    """A stale baseline used anyway (``baseline.when_stale: warn``), or one only behind."""
    fingerprint: tuple[tuple[str, str], ...] | None = None
    """The base commit's fingerprint, recorded on a re-measured baseline."""


@dataclass(frozen=True)
class AgainstBase:
    """A comparison against a base commit: a pull request's, or one a developer named."""

    commit: str
    """The base commit: the baseline side runs there (recorded on a re-measured baseline)."""
    ref: str | None = None
    """The name a developer gave it (``--base main``); None for a pull request's base."""
    protected_changes: tuple[ProtectedChange, ...] = ()
    protected_changes_allowed: bool = False
    stale: StalePlan = field(default_factory=StalePlan)
    warnings: tuple[Note, ...] = ()
    """What the preparation said of the pull request's own config (settings it changes that
    its run does not use): kept with the result's warnings."""
    added_rows: tuple[str, ...] = ()
    """Rows the pull request adds (or whose input it changes), in the dataset's order."""
    added_rows_limit: int | None = None
    """In the two-job mode's gating job, the base agent runs at most this many of
    ``added_rows`` (``baseline.added_rows_limit``); None: no limit (the other modes)."""

    @property
    def unmeasured(self) -> tuple[str, ...]:
        """The added rows the base agent does not run: those beyond the limit."""
        if self.added_rows_limit is None:
            return ()
        return self.added_rows[self.added_rows_limit :]

    @property
    def baseline_from(self) -> WhereFrom:
        return WhereFrom.PULL_REQUEST_BASE if self.ref is None else WhereFrom.BASE_REF


@dataclass(frozen=True)
class Rerun:
    """What passk recorded for an earlier run of the same content (the action's record)."""

    replay: Replay = field(default_factory=Replay)
    """Its attempts, answered again instead of asking the agent."""
    recorded_for: str | None = None
    """The head commit the record was made for; None when it is this one."""
    failure_stands: bool = False
    """A failure recorded without its attempts (too large to keep): a re-run keeps it."""
    remeasured_label: str | None = None
    """The label that asked to measure again instead of replaying (nothing is replayed)."""


@dataclass(frozen=True)
class CompareInputs:
    config: Config
    dataset: Dataset
    baseline: Run
    """The committed baseline; its ratchet is the comparison's."""
    candidate: CandidateSource
    base: AgainstBase | None = None
    rerun: Rerun | None = None
