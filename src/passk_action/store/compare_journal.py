"""The crash-safe journal of a comparison's other attempts: top-ups and every confirmation round.

The candidate's main attempts have their run's journal (``journal.py``).
Everything else a comparison asks an agent for (the baseline's top-up and
re-measurement, and both versions' confirmation rounds) goes here, beside
the candidate's artifact (``<candidate>.compare.journal.jsonl``), one
attempt per line, fsync'd before the attempt counts::

    {"schema_version": 1, "kind": "passk-compare-journal", "for": {…what was compared…}}
    {"version": "baseline", "row": "r1", "n": 4, "phase": "confirm", "decision": "deny", …}
    {"tried": {"version": "candidate", "row": "r1", "n": 5}, "retry": "<reason>"}

``passk compare --resume`` answers every request it holds from it, so a
comparison killed during its rounds, or stopped by a full disk while its
result was written, asks nothing again.  The file is created with its first
attempt and removed once the comparison's result is written.  ``for`` names
what the attempts are answers of (dataset, settings, both agents and
commits); a resume of anything else is refused.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.model import Attempt, Version
from ..errors import ArtifactError
from .codec import attempt_from_json, attempt_to_json, compact_json
from .journal import Journal, TryKey, journal_lines
from .side_files import beside, refuse_resume

COMPARE_JOURNAL_KIND = "passk-compare-journal"
COMPARE_JOURNAL_VERSION = 1
START_ANEW = "start the comparison anew without --resume"

Identity = Mapping[str, Any]
"""What the attempts are answers of: plain JSON values by name (see ``engine``)."""


def compare_journal_path(out: Path) -> Path:
    """Beside the candidate's artifact ``out`` (or where ``side_files`` says)."""
    return beside(out, ".compare.journal.jsonl")


@dataclass(frozen=True)
class Recorded:
    """What an interrupted comparison journaled, by version."""

    attempts: Mapping[Version, tuple[Attempt, ...]]
    tries: Mapping[Version, Mapping[TryKey, tuple[str, ...]]]
    """Failed tries of attempts not recorded yet: what their ``retries`` start with."""
    warnings: tuple[str, ...] = ()


NOTHING = Recorded({v: () for v in Version}, {v: {} for v in Version})


class CompareJournal:
    """Appends a comparison's attempts, each fsync'd; the file is made with the first one."""

    def __init__(self, path: Path, identity: Identity, recorded: Recorded = NOTHING):
        self.path = path
        self.identity = dict(identity)
        self.recorded = recorded
        """What an interrupted run of this comparison recorded (``--resume``)."""
        self.answered = any(a.valid for attempts in recorded.attempts.values() for a in attempts)
        """Whether an attempt it holds has a decision (else a fixed agent starts anew)."""
        self._journal: Journal | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        out: Path,
        identity: Identity,
        *,
        resume: bool = False,
        warn: Callable[[str], None] = lambda message: None,
    ) -> CompareJournal:
        """The comparison's journal beside ``out``; with ``resume``, what it holds is kept.

        Without ``resume`` a journal that holds attempts is refused: starting
        anew would silently drop them.
        """
        if resume:
            refuse_resume(out)
        path = compare_journal_path(out)
        if not path.exists():
            return cls(path, identity)
        if not resume:
            _refuse_to_discard(path)
            return cls(path, identity)
        recorded = read_compare_journal(path, identity)
        for warning in recorded.warnings:
            warn(warning)
        journal = cls(path, identity, recorded)
        # Rewritten whole (atomic) without a torn tail, so appends start on a clean line.
        journal._journal = Journal.replace_lines(path, journal._lines(recorded))
        return journal

    def _lines(self, recorded: Recorded) -> list[str]:
        lines = [_header_line(self.identity)]
        for version, attempts in recorded.attempts.items():
            lines.extend(_attempt_line(version, a) for a in attempts)
        for version, tries in recorded.tries.items():
            for (row_id, number), notes in tries.items():
                lines.extend(_try_line(version, row_id, number, note) for note in notes)
        return lines

    def append(self, version: Version, attempt: Attempt) -> None:
        """Journal one attempt of ``version`` now (fsync'd), before it counts."""
        self._started().write_line(_attempt_line(version, attempt))
        self.answered = self.answered or attempt.valid

    def append_try(self, version: Version, row_id: str, number: int, note: str) -> None:
        """Journal a failed try that will be retried (from the attempt's thread)."""
        self._started().write_line(_try_line(version, row_id, number, note))

    def _started(self) -> Journal:
        with self._lock:
            if self._journal is None:
                self._journal = Journal.replace_lines(self.path, [_header_line(self.identity)])
            return self._journal

    def close(self) -> None:
        with self._lock:
            if self._journal is not None:
                self._journal.close()

    def __enter__(self) -> CompareJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def discard_compare_journal(out: Path) -> None:
    """The comparison's result is written: its journal is no longer needed."""
    compare_journal_path(out).unlink(missing_ok=True)


def _header_line(identity: Identity) -> str:
    return (
        compact_json(
            {
                "schema_version": COMPARE_JOURNAL_VERSION,
                "kind": COMPARE_JOURNAL_KIND,
                "for": dict(identity),
            }
        )
        + "\n"
    )


def _attempt_line(version: Version, attempt: Attempt) -> str:
    return compact_json({"version": version.value, **attempt_to_json(attempt)}) + "\n"


def _try_line(version: Version, row_id: str, number: int, note: str) -> str:
    tried = {"version": version.value, "row": row_id, "n": number}
    return compact_json({"tried": tried, "retry": note}) + "\n"


def _refuse_to_discard(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            recorded = sum(1 for line in handle if line.startswith(b'{"version"'))
    except OSError:
        return
    if recorded:
        raise ArtifactError(
            f"an interrupted comparison with {recorded} recorded attempt(s) is here",
            where=str(path),
            hint="continue it with --resume, or delete this journal to start anew",
        )


def _version(value: Any, where: str) -> Version:
    try:
        return Version(value)
    except ValueError:
        raise ArtifactError("damaged journal line (no version)", where=where) from None


def read_compare_journal(path: Path, identity: Identity) -> Recorded:
    """Read a comparison journal back for ``identity``'s comparison.

    A torn last line (a crash mid-write) is dropped with a warning; any other
    damaged line, a journal of another comparison, or an attempt recorded
    twice is an error naming the line and how to start anew.
    """
    try:
        lines = list(journal_lines(path))
    except OSError as exc:
        raise ArtifactError(
            f"cannot read journal: {exc.strerror}", where=str(path), hint=START_ANEW
        ) from exc
    warnings: list[str] = []
    attempts: dict[Version, dict[TryKey, Attempt]] = {v: {} for v in Version}
    tries: dict[Version, dict[TryKey, list[str]]] = {v: {} for v in Version}
    for number, raw, is_last in lines:
        where = f"{path}:{number}"
        try:
            doc = json.loads(raw.decode("utf-8"))
            if not isinstance(doc, dict):
                raise ValueError("not an object")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            if is_last and number > 1:
                warnings.append(f"{where}: dropped a torn last line (the run was killed mid-write)")
                continue
            raise ArtifactError("damaged journal line", where=where, hint=START_ANEW) from exc
        if number == 1:
            _check_header(doc, identity, where)
        elif "tried" in doc:
            version, key, note = _try_from_json(doc, where)
            tries[version].setdefault(key, []).append(note)
        else:
            version = _version(doc.pop("version", None), where)
            attempt = attempt_from_json(doc, where)
            key = (attempt.row_id, attempt.number)
            if key in attempts[version]:
                raise ArtifactError(
                    f"attempt {attempt.number} of row {attempt.row_id!r} ({version.value}) "
                    "is recorded twice",
                    where=where,
                    hint=START_ANEW,
                )
            attempts[version][key] = attempt
    return Recorded(
        {v: tuple(attempts[v].values()) for v in Version},
        {
            v: {key: tuple(notes) for key, notes in tries[v].items() if key not in attempts[v]}
            for v in Version
        },
        tuple(warnings),
    )


def _check_header(doc: Mapping[str, Any], identity: Identity, where: str) -> None:
    if doc.get("kind") != COMPARE_JOURNAL_KIND:
        raise ArtifactError("not a comparison journal", where=where, hint=START_ANEW)
    version = doc.get("schema_version")
    if version != COMPARE_JOURNAL_VERSION:
        raise ArtifactError(
            f"schema_version {version!r} is not one this passk reads ({COMPARE_JOURNAL_VERSION})",
            where=where,
            hint="resume with the passk version that started it, or " + START_ANEW,
        )
    recorded = doc.get("for")
    if not isinstance(recorded, dict):
        raise ArtifactError("damaged journal header (no 'for')", where=where, hint=START_ANEW)
    other = [
        key for key in sorted({*recorded, *identity}) if recorded.get(key) != identity.get(key)
    ]
    if other:
        raise ArtifactError(
            f"the journal is of another comparison (its {', '.join(other)} differ)",
            where=where,
            hint=START_ANEW,
        )


def _try_from_json(doc: dict[str, Any], where: str) -> tuple[Version, TryKey, str]:
    tried, note = doc.get("tried"), doc.get("retry")
    if (
        doc.keys() != {"tried", "retry"}
        or not isinstance(tried, dict)
        or tried.keys() != {"version", "row", "n"}
        or not isinstance(tried["row"], str)
        or type(tried["n"]) is not int
        or not isinstance(note, str)
    ):
        raise ArtifactError("damaged journal line (a failed try)", where=where, hint=START_ANEW)
    return _version(tried["version"], where), (tried["row"], tried["n"]), note
