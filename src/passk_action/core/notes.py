"""What a comparison tells its reader besides the numbers, as data: notes and warnings.

The engine and the preparation of the two sides say *what happened* (rows
dropped, a baseline topped up, a confirmation skipped and why, a stale
baseline); :mod:`passk_action.report.notes` words it.  A result file keeps
each as its kind and fields (:mod:`.kinds`, :data:`NOTE_KINDS`); one written
before it did (result schema 5 and older) kept the words, read back as
:class:`Written`.

A warning is what a reader must see first (a stale baseline, a skipped
confirmation); a note is a plain fact.  Which list a kind goes to is the
engine's choice, not the kind's: :class:`ConfirmationSkipped` is a note when
nothing could have run, a warning when only the baseline agent was missing.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .kinds import registry

IDS_SHOWN = 10
"""Row ids a note (or an error naming rows) lists before "… and N more"."""


def ids(row_ids: Sequence[str], limit: int = IDS_SHOWN) -> str:
    """``a, b, c`` and, past ``limit``, `` and N more``: row ids as one list for people."""
    shown = ", ".join(row_ids[:limit])
    return shown + (f" and {len(row_ids) - limit} more" if len(row_ids) > limit else "")


@dataclass(frozen=True)
class Note:
    """A fact about one comparison, in fields; every kind below is one."""

    announced: ClassVar[bool] = False
    """Said when the comparison was prepared, before any agent ran (the CLI does not
    print it again with the result's warnings)."""


# --- the baseline side ---------------------------------------------------------------


@dataclass(frozen=True)
class DroppedRows(Note):
    """Rows of the committed baseline that are no longer in the dataset."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class RelabeledRows(Note):
    """Rows whose expected label changed since the baseline: its decisions are re-scored."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class ToppedUp(Note):
    """The baseline agent ran on new or changed rows (k attempts each) before the candidate."""

    ids: tuple[str, ...]
    executions: int


@dataclass(frozen=True)
class AddedRowsNotMeasured(Note):
    """Rows the pull request adds beyond ``baseline.added_rows_limit``: the two-job mode's
    gating job did not run the base agent on them (the base repository's key pays)."""

    ids: tuple[str, ...]
    limit: int


@dataclass(frozen=True)
class BaselineReused(Note):
    """The committed baseline matches the dataset: nothing of it was run again."""


@dataclass(frozen=True)
class Rescored(Note):
    """A recorded run (the committed baseline, a recorded candidate) was recorded under other
    scoring rules: its answers were read again under the gate's, with no agent run."""

    run: str
    """``the committed baseline`` or ``the recorded candidate``."""
    attempts: int
    changed: int
    """Attempts whose decision (or error) the gate's rules read otherwise."""


@dataclass(frozen=True)
class RatchetExits(Note):
    """Rows the committed ratchet locked that left it because they left the dataset."""

    ids: tuple[str, ...]


# --- how fresh the committed baseline is -----------------------------------------------


@dataclass(frozen=True)
class StaleBaseline(Note):
    """The committed baseline measured other files than the base commit's agent runs.

    ``changed`` lists the fingerprint paths whose content differs; None when
    the baseline records no fingerprint at all (``paths`` are those named).
    """

    measured_at: str | None
    """The commit the baseline was measured at (None: not recorded)."""
    base: str
    """The base commit's sha."""
    paths: tuple[str, ...]
    changed: tuple[str, ...] | None


class StalePolicy(enum.Enum):
    """What ``baseline.when_stale`` did about a :class:`StaleBaseline`."""

    USED_ANYWAY = "warn"
    REMEASURING = "remeasure"


@dataclass(frozen=True)
class StaleBaselineHandled(Note):
    """A stale baseline and what ``baseline.when_stale`` does about it."""

    announced: ClassVar[bool] = True
    stale: StaleBaseline
    policy: StalePolicy


@dataclass(frozen=True)
class BaselineAgeUnknown(Note):
    """The commit the baseline was measured at is not in this checkout (a shallow fetch)."""

    announced: ClassVar[bool] = True
    measured_at: str


@dataclass(frozen=True)
class BaselineBehind(Note):
    """The baseline was measured commits before the base, and files changed since.

    Never stale (no fingerprint paths name what the agent runs): said so a
    reader can judge, and can name them.
    """

    announced: ClassVar[bool] = True
    measured_at: str
    base: str
    commits: int
    files: tuple[str, ...]


@dataclass(frozen=True)
class Remeasured(Note):
    """A stale baseline measured anew by the base's agent: k attempts on every row."""

    stale: StaleBaseline
    at: str | None
    """The commit the baseline side ran at (None: not known)."""
    executions: int
    k: int
    rows: int


@dataclass(frozen=True)
class RemeasuredOnRequest(Note):
    """The pull request carries the base config's remeasure label: nothing was replayed."""

    label: str


# --- what the pull request's config may change -----------------------------------------


@dataclass(frozen=True)
class HeadSettingsIgnored(Note):
    """Settings the pull request's config changes that its run does not use: the base
    commit's hold (one that weakens the gate is a protected change too)."""

    announced: ClassVar[bool] = True
    config: str
    """The pull request's config file, as named."""
    keys: tuple[str, ...]


@dataclass(frozen=True)
class HeadLimitCapped(Note):
    """A limit the pull request's config raises above the base's: the base's holds (a pull
    request may lower a limit, never raise it)."""

    announced: ClassVar[bool] = True
    config: str
    key: str
    value: float
    bound: float
    unit: str
    """``s`` for a timeout, empty for a count."""


# --- the candidate side ----------------------------------------------------------------


@dataclass(frozen=True)
class RecordedCandidate(Note):
    """The candidate was a recorded run (``--candidate``), not run now."""

    attempts: int


@dataclass(frozen=True)
class MeasuredByPullRequest(Note):
    """The two-job mode: the candidate's answers come from the pull request's own job.

    The gating job checked that run's rows, inputs, settings and attempt
    numbers, and judged its decisions by the base commit's labels; it cannot
    check that the decisions are what the pull request's agent answers.
    """

    main: int
    confirm: int


@dataclass(frozen=True)
class VerdictsReused(Note):
    """A re-run replayed the attempts passk recorded for this content.

    ``recorded_for`` is the commit the record was made for, None when it is
    this one.
    """

    replayed: int
    asked: int
    recorded_for: str | None


# --- confirmation ----------------------------------------------------------------------


@dataclass(frozen=True)
class NothingRun(Note):
    """Both runs were recorded, no agent is configured, and no lost row needed confirming."""


class WhereFrom(enum.Enum):
    """Where the baseline agent of a comparison comes from: what to set to get one."""

    CONFIG = "config"
    """The config itself (``passk compare``): its ``baseline.agent``."""
    PULL_REQUEST_BASE = "pull-request-base"
    """The pull request's base commit (the action): its ``passk.yml``."""
    BASE_REF = "base-ref"
    """A base a developer named (``passk compare --base REF``)."""


class SkipReason(enum.Enum):
    NO_AGENT = "no-agent"
    """Both runs are recorded and the config names no agent at all."""
    NO_BASELINE_AGENT = "no-baseline-agent"
    """Only one version can run: no baseline agent is available."""
    NO_CANDIDATE_AGENT = "no-candidate-agent"
    """Only one version can run: the candidate is a recorded run and no agent can add to it."""


@dataclass(frozen=True)
class ConfirmationSkipped(Note):
    """Lost rows were not run again; the gate used the attempts it had."""

    lost: int
    reason: SkipReason
    baseline_from: WhereFrom = WhereFrom.CONFIG
    base_ref: str | None = None
    """The base a developer named (with ``BASE_REF``)."""


@dataclass(frozen=True)
class GatedRowsAsRecorded(Note):
    """Gated rows wanted more attempts of a version that cannot run: judged as recorded.

    The gated-row rule asks for attempts while a row's evidence is unclear
    (``core/sequential.py``); with none possible it decides on what it has,
    and an unclear candidate blocks.  ``version`` is the side that could not
    run ("baseline" or "candidate").
    """

    ids: tuple[str, ...]
    version: str
    reason: SkipReason
    baseline_from: WhereFrom = WhereFrom.CONFIG
    base_ref: str | None = None


# --- read back -------------------------------------------------------------------------


@dataclass(frozen=True)
class Written(Note):
    """A note as an older result file words it (schema 5 and older kept the sentence)."""

    text: str


NOTE_KINDS = registry(
    DroppedRows,
    RelabeledRows,
    ToppedUp,
    AddedRowsNotMeasured,
    BaselineReused,
    Rescored,
    RatchetExits,
    StaleBaseline,
    StaleBaselineHandled,
    BaselineAgeUnknown,
    BaselineBehind,
    Remeasured,
    RemeasuredOnRequest,
    RecordedCandidate,
    MeasuredByPullRequest,
    VerdictsReused,
    NothingRun,
    ConfirmationSkipped,
    GatedRowsAsRecorded,
    HeadSettingsIgnored,
    HeadLimitCapped,
    Written,
)
"""Every kind a result file stores, by its name (:class:`Written`: an older file's words,
kept as words when its result is written again)."""
