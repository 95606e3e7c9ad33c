"""Each row's class over the baselines recorded on a branch: the maths of ``passk history``.

Every committed version of the baseline artifact is a measurement of the
branch's agent: k attempts per row.  Read newest first (the reader in
``sides/history.py`` takes them from git objects), each version is
reduced at once to a :class:`VersionSummary` (the three numbers, each row's
class, the ratchet), and the summaries are folded into one :class:`History`:
a line of class codes per row, the three numbers per version, and the rows
that left the ratchet.  Nothing here reads git or files.

A row's history follows its id *and* its input: a version that held the
same id with another input measured another question, so for the current
row it counts as absent.  Classes are the ones each version recorded, with
that version's label, k and scoring (:func:`~.stats.summarize_run` over its
main attempts, as the ratchet judges them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .model import Attempt, Phase, RowClass, Run
from .stats import Metrics, compute_metrics, summarize_attempts

CODES: Mapping[RowClass, str] = {
    RowClass.STABLE_CORRECT: "C",
    RowClass.STABLE_WRONG: "W",
    RowClass.FLIP: "F",
    RowClass.UNCLASSIFIED: "U",
}
"""One letter per class, as a row's line of codes holds it."""
ABSENT = "-"
"""The code of a version that did not hold the row (or held its id with another input)."""
_CLASS_OF = {code: row_class for row_class, code in CODES.items()}
TROUBLE = (RowClass.FLIP, RowClass.UNCLASSIFIED, RowClass.STABLE_WRONG)
"""The classes that are not stable-correct, in the order a mark names them."""


@dataclass(frozen=True, slots=True)
class VersionSummary:
    """One version of the baseline artifact reduced to what its history needs.

    ``rows`` holds (id, input digest, class code) in the artifact's row order.
    """

    metrics: Metrics
    rows: tuple[tuple[str, str, str], ...]
    ratchet: frozenset[str]
    agent_commit: str | None
    created_at: str


def summarize_version(run: Run) -> VersionSummary:
    """Reduce a baseline run to its numbers, row classes (main attempts) and ratchet.

    The same summaries as :func:`~.stats.summarize_run` over main attempts,
    gathered in one pass: a version is read once and dropped, so grouping
    every attempt by row first would only cost time.
    """
    settings = run.settings
    main: dict[str, list[Attempt]] = {row.id: [] for row in run.rows}
    for attempt in run.attempts:
        if attempt.phase is Phase.MAIN:
            main[attempt.row_id].append(attempt)
    summaries = [
        summarize_attempts(row, sorted(main[row.id], key=_number), settings.k, settings.scoring)
        for row in run.rows
    ]
    return VersionSummary(
        metrics=compute_metrics(summaries, settings.k),
        rows=tuple(
            (row.id, row.input_digest, CODES[summary.row_class])
            for row, summary in zip(run.rows, summaries, strict=True)
        ),
        ratchet=frozenset(run.ratchet),
        agent_commit=run.agent.commit,
        created_at=run.created_at,
    )


def _number(attempt: Attempt) -> int:
    return attempt.number


@dataclass(frozen=True, slots=True)
class BaselinePoint:
    """One readable version of the baseline artifact: where it was committed, and its numbers."""

    commit: str
    committed_at: str
    """The commit's committer date (ISO 8601), as git reports it."""
    metrics: Metrics
    locked: int
    """Rows in its ratchet."""
    agent_commit: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class RowHistory:
    """One row over the baselines read: ``codes`` has one letter per version, newest first.

    ``C`` stable-correct, ``W`` stable-wrong, ``F`` flip, ``U`` unclassified,
    ``-`` not in that version (or there with another input).  ``locked``:
    in the newest version's ratchet.
    """

    id: str
    input_digest: str
    codes: str
    locked: bool = False

    def classes(self) -> tuple[RowClass | None, ...]:
        """The class in each version, newest first; None where the row was absent."""
        return tuple(_CLASS_OF.get(code) for code in self.codes)

    def count(self, row_class: RowClass) -> int:
        return self.codes.count(CODES[row_class])

    @property
    def present(self) -> int:
        """How many of the versions read held the row."""
        return len(self.codes) - self.codes.count(ABSENT)

    @property
    def changed(self) -> bool:
        """Whether the versions that held the row did not all give it one class."""
        return len(set(self.codes) - {ABSENT}) > 1

    @property
    def current(self) -> bool:
        """Whether the newest version holds the row."""
        return self.codes[:1] not in ("", ABSENT)

    @property
    def since(self) -> int | None:
        """How many versions ago the row joined, if it joined within those read.

        The length of the run of versions holding it that ends at the newest;
        None when the row is in every version read (it is older than them)
        or not in the newest.
        """
        if not self.current or ABSENT not in self.codes:
            return None
        return self.codes.index(ABSENT)


@dataclass(frozen=True, slots=True)
class RatchetExit:
    """A row in one version's ratchet and not in the next's (it left the dataset, or was reset)."""

    id: str
    commit: str
    """The version without it: the first baseline that no longer locks the row."""
    left_dataset: bool
    """True when that version no longer holds the row at all."""


@dataclass(frozen=True, slots=True)
class SkippedVersion:
    """A version of the artifact that could not be read, and why (one line)."""

    commit: str
    reason: str


@dataclass(frozen=True)
class History:
    """Every row's class over the last ``wanted`` readable baselines on a branch.

    ``baselines`` and each row's codes are newest first.  ``more``: older
    versions exist that were not read (the window was full); ``shallow``:
    the clone is shallow, so older versions may exist that git does not have.
    ``problem`` is set, with nothing read, when the history could not be
    read at all (git failed); a gate goes on without it.
    """

    branch: str | None
    artifact: str
    wanted: int
    baselines: tuple[BaselinePoint, ...] = ()
    rows: Mapping[str, RowHistory] = field(default_factory=dict)
    ratchet_exits: tuple[RatchetExit, ...] = ()
    skipped: tuple[SkippedVersion, ...] = ()
    more: bool = False
    shallow: bool = False
    problem: str | None = None

    @property
    def cut_short(self) -> bool:
        """A shallow clone gave fewer baselines than asked: fetching more would show more."""
        return self.shallow and len(self.baselines) < self.wanted

    def row(self, row_id: str, input_digest: str | None = None) -> RowHistory | None:
        """The row's history; None when no version read held this id with ``input_digest``."""
        found = self.rows.get(row_id)
        if found is None or (input_digest is not None and found.input_digest != input_digest):
            return None
        return found

    def flipped(self) -> list[RowHistory]:
        """Rows still in the newest baseline that were a flip in at least one version read."""
        return [r for r in self.rows.values() if r.current and r.count(RowClass.FLIP)]

    def moved(self) -> list[RowHistory]:
        """Rows still in the newest baseline that were a flip, or whose class changed, in the
        versions read: right, then always wrong, then right again is one of them."""
        return [
            r for r in self.rows.values() if r.current and (r.count(RowClass.FLIP) or r.changed)
        ]

    def joined(self) -> list[RowHistory]:
        """Rows of the newest baseline that joined within the versions read."""
        return [r for r in self.rows.values() if r.since is not None]

    def left(self) -> list[RowHistory]:
        """Rows an older version held that the newest one does not."""
        return [r for r in self.rows.values() if not r.current]

    def unmeasured(self, ids: Iterable[str]) -> list[str]:
        """Those of ``ids`` (a dataset's rows) that no version read has measured."""
        return [i for i in ids if i not in self.rows or not self.rows[i].present]


class HistoryBuilder:
    """Folds version summaries, newest first, into a :class:`History`.

    Only the fold is kept (a line of codes per row), never the runs, so
    hundreds of versions of a large artifact fit in little memory.
    """

    def __init__(self, wanted: int):
        if wanted < 1:
            raise ValueError("wanted must be at least 1")
        self.wanted = wanted
        self._points: list[BaselinePoint] = []
        self._codes: dict[str, list[str]] = {}
        self._digests: dict[str, str] = {}
        self._exits: list[RatchetExit] = []
        self._skipped: list[SkippedVersion] = []
        self._newer: tuple[str, frozenset[str], frozenset[str]] | None = None
        self._newest_ratchet: frozenset[str] = frozenset()

    @property
    def full(self) -> bool:
        return len(self._points) >= self.wanted

    def skip(self, commit: str, reason: str) -> None:
        """A version that could not be read: listed, not counted."""
        self._skipped.append(SkippedVersion(commit, reason))

    def add(self, commit: str, committed_at: str, version: VersionSummary) -> None:
        """The next older version (``commit`` committed it)."""
        if self.full:
            raise ValueError("the history already holds the versions wanted")
        index = len(self._points)
        ids: set[str] = set()
        for row_id, digest, code in version.rows:
            ids.add(row_id)
            codes = self._codes.get(row_id)
            if codes is None:
                codes = self._codes[row_id] = [ABSENT] * index
                self._digests[row_id] = digest
            # The newest version that held the id decides which input the row is.
            codes.append(code if self._digests[row_id] == digest else ABSENT)
        for codes in self._codes.values():
            if len(codes) == index:
                codes.append(ABSENT)
        if self._newer is None:
            self._newest_ratchet = version.ratchet
        else:
            newer_commit, newer_ids, newer_ratchet = self._newer
            for row_id in sorted(version.ratchet - newer_ratchet):
                self._exits.append(RatchetExit(row_id, newer_commit, row_id not in newer_ids))
        self._newer = (commit, frozenset(ids), version.ratchet)
        self._points.append(
            BaselinePoint(
                commit=commit,
                committed_at=committed_at,
                metrics=version.metrics,
                locked=len(version.ratchet),
                agent_commit=version.agent_commit,
                created_at=version.created_at,
            )
        )

    def build(
        self,
        *,
        branch: str | None,
        artifact: str,
        more: bool = False,
        shallow: bool = False,
    ) -> History:
        rows = {
            row_id: RowHistory(
                row_id,
                self._digests[row_id],
                "".join(codes),
                locked=row_id in self._newest_ratchet,
            )
            for row_id, codes in self._codes.items()
        }
        return History(
            branch=branch,
            artifact=artifact,
            wanted=self.wanted,
            baselines=tuple(self._points),
            rows=rows,
            ratchet_exits=tuple(self._exits),
            skipped=tuple(self._skipped),
            more=more,
            shallow=shallow,
        )


def history_of(
    versions: Sequence[tuple[str, str, Run]],
    *,
    wanted: int,
    branch: str | None = None,
    artifact: str = "",
) -> History:
    """The history of ``versions`` ((commit, date, run), newest first): for tests and tools."""
    builder = HistoryBuilder(wanted)
    for commit, date, run in versions:
        if builder.full:
            return builder.build(branch=branch, artifact=artifact, more=True)
        builder.add(commit, date, summarize_version(run))
    return builder.build(branch=branch, artifact=artifact)
