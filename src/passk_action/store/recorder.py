"""One run's attempts on their way to disk: the journal while it runs, the artifact after.

The engine asks a :class:`RunRecorder` once: it starts a journal, or continues
an interrupted one (``--resume``), or picks up a finished run's attempts, and
refuses every mix-up that would lose or mislabel recorded attempts (another
dataset, settings, agent, version or shard).  Each attempt is fsync'd as it
arrives, so a killed run loses at most the attempt being written.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..core.model import Attempt, Phase, Run
from ..core.scoring import rescore_attempt
from ..errors import ArtifactError
from ..files import read_bounded
from .artifact import read_run, write_run
from .atomic import write_text_atomic
from .journal import Journal, TryKey, journal_path, read_journal
from .side_files import beside, refuse_resume


def retry_after_path(out: Path) -> Path:
    """Beside the journal: Retry-Afters still pending when the run stopped (HTTP agents)."""
    return beside(out, ".retry-after.json")


class RunRecorder:
    """Records the attempts of the run ``header`` describes into ``out`` and its journal."""

    def __init__(
        self,
        out: Path,
        header: Run,
        journal: Journal,
        kept: tuple[Attempt, ...],
        tries: Mapping[TryKey, tuple[str, ...]] | None = None,
    ):
        self.out = out
        self.header = header
        """The run being recorded; on resume, with the interrupted run's start time."""
        self.kept = kept
        """Attempts recorded before this process started (resume), asked no more."""
        self.tries: Mapping[TryKey, tuple[str, ...]] = tries or {}
        """Failed tries of attempts a stopped run was still retrying (resume): they count."""
        self._journal = journal
        self._retry_lock = threading.Lock()

    @property
    def journal_file(self) -> Path:
        return self._journal.path

    @classmethod
    def open(
        cls,
        out: Path,
        header: Run,
        *,
        resume: bool = False,
        warn: Callable[[str], None] = lambda message: None,
    ) -> RunRecorder:
        """Start recording ``header``'s run; with ``resume`` keep what was recorded before."""
        if resume:
            refuse_resume(out)
        journal_file = journal_path(out)
        kept: tuple[Attempt, ...] = ()
        tries: Mapping[TryKey, tuple[str, ...]] = {}
        if resume and journal_file.exists():
            contents = read_journal(journal_file)
            for warning in contents.warnings:
                warn(warning)
            _check_resumable(contents.header, header, journal_file)
            kept = _read_again(contents.header, header, contents.attempts, warn, "journal")
            tries = contents.tries
            header = replace(header, created_at=contents.header.created_at)
            # Rewrite the journal without a torn tail so appends start on a clean line.
            journal = Journal.rewrite(journal_file, header, kept, tries)
        elif resume and out.exists():
            # The run had finished (its journal is gone): its attempts are just as
            # recorded, so resuming asks nothing again rather than starting over.
            finished = read_run(out)
            _check_resumable(finished, header, out, "the run artifact")
            wanted = {r.id for r in header.rows}
            kept = tuple(
                a
                for a in finished.attempts
                if a.phase is Phase.MAIN and a.row_id in wanted and a.number <= header.settings.k
            )
            kept = _read_again(finished, header, kept, warn, "run artifact")
            header = replace(header, created_at=finished.created_at)
            journal = Journal.rewrite(journal_file, header, kept)
        else:
            _refuse_to_discard(journal_file)
            journal = Journal.create(journal_file, header)
        return cls(out, header, journal, kept, tries)

    def append(self, attempt: Attempt) -> None:
        """Journal one attempt now (fsync'd), so a crash cannot lose it."""
        self._journal.append(attempt)

    def append_try(self, row_id: str, number: int, note: str) -> None:
        """Journal a failed try that will be retried (any thread), so a crash cannot lose it."""
        self._journal.append_try(row_id, number, note)

    @property
    def retry_after_file(self) -> Path:
        return retry_after_path(self.out)

    def pending_retry_after(self) -> dict[str, str]:
        """The Retry-Afters an interrupted run of this artifact was still waiting out."""
        try:
            doc = json.loads(read_bounded(self.retry_after_file).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(doc, dict):
            return {}
        return {str(key): str(value) for key, value in doc.items()}

    def save_retry_after(self, pending: Mapping[str, str]) -> None:
        """Keep the Retry-Afters still to wait out beside the journal (atomic; none: no file)."""
        with self._retry_lock:
            if pending:
                write_text_atomic(self.retry_after_file, json.dumps(dict(pending), indent=1))
            else:
                self.retry_after_file.unlink(missing_ok=True)

    def finish(self, attempts: Sequence[Attempt]) -> Run:
        """Write the complete run as the artifact and drop the journal; the run written."""
        self.close()
        run = replace(self.header, attempts=tuple(attempts))
        write_run(run, self.out)
        self.journal_file.unlink(missing_ok=True)
        self.retry_after_file.unlink(missing_ok=True)
        return run

    def close(self) -> None:
        self._journal.close()

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _refuse_to_discard(journal_file: Path) -> None:
    """Starting anew over an interrupted run would silently drop its attempts."""
    if not journal_file.exists():
        return
    try:
        with journal_file.open("rb") as handle:
            # Less the header; a failed try is not a recorded attempt.
            recorded = (
                sum(1 for line in handle if line.strip() and not line.startswith(b'{"tried"')) - 1
            )
    except OSError:
        return
    if recorded > 0:
        raise ArtifactError(
            f"an interrupted run with {recorded} recorded attempt(s) is here",
            where=str(journal_file),
            hint="continue it with --resume (under changed scoring rules its answers are read "
            "again), or delete this journal to start anew",
        )


def _read_again(
    recorded: Run,
    wanted: Run,
    attempts: tuple[Attempt, ...],
    warn: Callable[[str], None],
    what: str,
) -> tuple[Attempt, ...]:
    """``attempts`` recorded under ``recorded``'s scoring rules, read under ``wanted``'s.

    A run stopped because the rules could read none of its answers (an
    extractor that matched nothing) resumes once the rules are fixed: every
    answer was kept, so it is read again, and nothing is asked twice.
    """
    before, after = recorded.settings.scoring, wanted.settings.scoring
    if before == after:
        return attempts
    again = tuple(rescore_attempt(a, before, after) for a in attempts)
    changed = sum(
        1
        for old, new in zip(attempts, again, strict=True)
        if (old.decision, old.error) != (new.decision, new.error)
    )
    warn(
        f"the {what}'s {len(attempts)} attempt(s) were recorded under other scoring rules: "
        f"their answers are read again under the current ones ({changed} changed)"
    )
    return again


def _check_resumable(recorded: Run, wanted: Run, where: Path, what: str = "the journal") -> None:
    if recorded.dataset_digest != wanted.dataset_digest:
        raise ArtifactError(
            f"{what} was recorded on another version of the dataset",
            where=str(where),
            hint="start the run anew without --resume",
        )
    if recorded.settings.k != wanted.settings.k:
        raise ArtifactError(
            f"{what} was recorded with k={recorded.settings.k}, not {wanted.settings.k}",
            where=str(where),
            hint="start the run anew without --resume",
        )
    if recorded.agent.version != wanted.agent.version:
        raise ArtifactError(
            f"{what} is a {recorded.agent.version.value} run",
            where=str(where),
            hint="resume with the same --version, or start anew",
        )
    if recorded.agent.description != wanted.agent.description:
        raise ArtifactError(
            f"{what} was recorded by another agent ({recorded.agent.description!r}, "
            f"not {wanted.agent.description!r})",
            where=str(where),
            hint="resume with the same agent command, or start anew without --resume",
        )
    if [r.id for r in recorded.rows] != [r.id for r in wanted.rows]:
        raise ArtifactError(
            f"{what} covers other rows than this run (another --shard, or rows were added)",
            where=str(where),
            hint="resume with the same --shard, or start anew without --resume",
        )
