"""The crash-safe journal of a run in progress: one attempt per line, fsync'd as written.

While a run is in progress its attempts go to a *journal* next to the
artifact (``<artifact>.journal.jsonl``): a header line, then one attempt per
line, each flushed and fsync'd as it completes, so a run killed at any moment
loses at most the attempts in flight and can be resumed.  A failed try that
will be retried is journaled too, as ``{"tried": {"row", "n"}, "retry":
"<reason>"}``: an attempt killed between its tries keeps, after
``--resume``, the tries it made before (in its ``retries``).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.model import Attempt, Run
from ..errors import ArtifactError
from ..files import read_bounded
from .atomic import write_text_atomic, writing
from .codec import attempt_from_json, attempt_to_json, compact_json, header_to_json, row_to_json
from .document import check_consistency, run_from_json, with_hint
from .jsonfile import SURROGATE_ESCAPE, unstorable_path
from .side_files import beside


def journal_path(artifact: Path) -> Path:
    """Beside ``artifact`` (or, for a device or FIFO, where ``side_files`` says)."""
    return beside(artifact, ".journal.jsonl")


TryKey = tuple[str, int]
"""(row id, attempt number): the attempt a failed try belongs to."""


@dataclass(frozen=True)
class JournalContents:
    header: Run
    """The run as the journal's header line describes it, with no attempts."""
    attempts: tuple[Attempt, ...]
    warnings: tuple[str, ...]
    tries: Mapping[TryKey, tuple[str, ...]] = field(default_factory=dict)
    """Failed tries of attempts not recorded yet, in order: what their ``retries`` start with."""


def _journal_header_line(header: Run) -> str:
    doc = header_to_json(header)
    doc["rows"] = [row_to_json(r) for r in header.rows]
    return compact_json(doc) + "\n"


class Journal:
    """Append-only log of attempts, one JSON line each, fsync'd as written."""

    def __init__(self, path: Path, handle: IO[str]):
        self.path = path
        self._handle = handle
        self._broken = False
        self._lock = threading.Lock()  # tries come from the attempts' threads

    @classmethod
    def create(cls, path: Path, header: Run) -> Journal:
        """Start a new journal (replacing any old one) with the run's header line.

        The header is written atomically: a disk that fills up here leaves no
        journal with half a header, which no resume could read.
        """
        write_text_atomic(path, _journal_header_line(header))
        return cls.reopen(path)

    @classmethod
    def rewrite(
        cls,
        path: Path,
        header: Run,
        attempts: Iterable[Attempt],
        tries: Mapping[TryKey, Iterable[str]] | None = None,
    ) -> Journal:
        """Replace a journal by ``header``, ``attempts`` and pending ``tries`` at once.

        Atomic (temporary file, fsync, rename): a resumed run killed while the
        journal is rewritten still finds every attempt and try recorded before.
        """
        lines = [_journal_header_line(header)]
        lines.extend(compact_json(attempt_to_json(a)) + "\n" for a in attempts)
        for (row_id, number), notes in (tries or {}).items():
            lines.extend(_try_line(row_id, number, note) for note in notes)
        return cls.replace_lines(path, lines)

    @classmethod
    def replace_lines(cls, path: Path, lines: Iterable[str]) -> Journal:
        """Replace a journal by ``lines`` (each ending in a newline) at once, then append."""
        write_text_atomic(path, "".join(lines))
        return cls.reopen(path)

    @classmethod
    def reopen(cls, path: Path) -> Journal:
        """Continue appending to an existing journal (after :func:`read_journal`)."""
        with writing(path):
            return cls(path, path.open("a", encoding="utf-8", newline="\n"))

    def append(self, attempt: Attempt) -> None:
        self._write(compact_json(attempt_to_json(attempt)) + "\n")

    def append_try(self, row_id: str, number: int, note: str) -> None:
        """Journal a failed try of attempt ``number`` of ``row_id`` that will be retried."""
        self._write(_try_line(row_id, number, note))

    def write_line(self, line: str) -> None:
        """Append ``line`` (ending in a newline), fsync'd; safe from any thread."""
        self._write(line)

    def _write(self, line: str) -> None:
        with self._lock:
            try:
                with writing(self.path):
                    self._handle.write(line)
                    self._sync()
            except ArtifactError:
                # Part of the line may be on disk: a resume drops it as a torn
                # last line.  Nothing more is appended after it.
                self._broken = True
                raise

    def _sync(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._broken:
            # A failed write was reported already; the buffered rest is lost.
            with contextlib.suppress(OSError):
                self._handle.close()
            return
        with writing(self.path):
            self._handle.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def journal_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """Each line of a journal: its number, its bytes, and whether it is the last."""
    data = read_bounded(path)
    lines = data.split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines, start=1):
        if line or number - 1 != last:
            yield number, line, number - 1 == last


def _try_line(row_id: str, number: int, note: str) -> str:
    return compact_json({"tried": {"row": row_id, "n": number}, "retry": note}) + "\n"


def _try_from_json(doc: dict[str, Any], where: str) -> tuple[TryKey, str]:
    tried, note = doc.get("tried"), doc.get("retry")
    if (
        doc.keys() != {"tried", "retry"}
        or not isinstance(tried, dict)
        or tried.keys() != {"row", "n"}
        or not isinstance(tried["row"], str)
        or type(tried["n"]) is not int
        or not isinstance(note, str)
    ):
        raise ArtifactError("damaged journal line (a failed try)", where=where)
    return (tried["row"], tried["n"]), note


def read_journal(path: Path) -> JournalContents:
    """See :func:`_read_journal`; every error says how to get going again."""
    try:
        return _read_journal(path)
    except ArtifactError as exc:
        raise with_hint(exc, "start the run anew without --resume") from exc.__cause__


def _read_journal(path: Path) -> JournalContents:
    """Read a journal back; a torn last line (a crash mid-write) is dropped with a warning.

    Any other damaged line is an error: it means the file was edited, and
    silently skipping it could drop recorded attempts.
    """
    warnings: list[str] = []
    header: Run | None = None
    attempts: list[Attempt] = []
    tries: dict[TryKey, list[str]] = {}
    try:
        lines = list(journal_lines(path))
    except OSError as exc:
        raise ArtifactError(f"cannot read journal: {exc.strerror}", where=str(path)) from exc
    if not lines:
        raise ArtifactError("journal is empty", where=str(path), hint="start the run anew")
    for number, raw, is_last in lines:
        where = f"{path}:{number}"
        try:
            text = raw.decode("utf-8")
            doc = json.loads(text)
            if "\\u" in text and SURROGATE_ESCAPE.search(text) and unstorable_path(doc) is not None:
                # passk writes storable text only: this line was edited.
                raise ValueError("a lone surrogate")
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            # ValueError: JSONDecodeError, and an integer of more than 4,300 digits.
            # Only the final line can be torn: every earlier one ended with "\n".
            if is_last and number > 1:
                warnings.append(f"{where}: dropped a torn last line (the run was killed mid-write)")
                continue
            raise ArtifactError(
                "damaged journal line", where=where, hint="start the run anew without --resume"
            ) from exc
        if header is None:
            doc = dict(doc) if isinstance(doc, dict) else doc
            if isinstance(doc, dict):
                doc["attempts"] = []
            header = run_from_json(doc, where)
            continue
        if isinstance(doc, dict) and "tried" in doc:
            key, note = _try_from_json(doc, where)
            tries.setdefault(key, []).append(note)
            continue
        attempts.append(attempt_from_json(doc, where))
    assert header is not None
    check_consistency(header.rows, tuple(attempts), str(path))
    done = {(a.row_id, a.number) for a in attempts}  # their retries hold their tries already
    pending = {key: tuple(notes) for key, notes in tries.items() if key not in done}
    return JournalContents(header, tuple(attempts), tuple(warnings), pending)
