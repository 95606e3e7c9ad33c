"""Turn results of other harnesses that already hold repeated trials into a passk run.

A team that already ran tau-bench, Inspect (``--epochs``) or promptfoo
(``--repeat``) can gate on those trials without running anything again.  Each
format has a parser (``tau_bench``, ``inspect_ai``, ``promptfoo``) that maps
one parsed JSON document to :class:`Trial` values plus a list of entries it
could not map (:class:`Skipped`, with file and index); :func:`build_import`
turns the trials into a :class:`~passk_action.core.model.Run` and the
:class:`~passk_action.core.model.Dataset` it matches.

The mapping, the same for every format:

- a **row** is a task (tau-bench), a sample (Inspect) or a test (promptfoo);
  its ``input`` is what identifies it (the task or sample id, or the test's
  vars) and its ``expected`` label is ``"pass"``: these harnesses grade
  each trial themselves, so passk records the grade, not the agent's answer;
- each **trial** becomes one main attempt whose decision is ``"pass"`` or
  ``"fail"``; a trial that never produced a gradable outcome (a harness
  exception, an infrastructure error, no answer) is an *error* attempt, which
  passk never counts as a decision;
- a trial is imported **once**: a second entry with the same harness key
  (tau-bench task and trial, Inspect sample and epoch, promptfoo test and
  repeat), in the same file or a later one, is skipped and reported with
  its file and index and where the first one is.  Without this, passing
  the same results twice (or two runs that both number their trials 0-3)
  would silently double k;
- **k** is the smallest number of trials of any task (at least 2), or
  ``--k``.  Tasks with fewer trials are not imported and are listed in the
  report; tasks with more keep every trial (pass^k is C(c,k)/C(n,k) over all
  n of them) and are counted in a warning;
- the run's dataset digest is computed over the imported rows with
  :func:`~passk_action.core.model.dataset_digest`.  ``passk compare
  --candidate`` only accepts a run whose digest matches the dataset in
  ``passk.yml``, so the importer also writes that dataset (``--dataset-out``,
  JSONL): point ``dataset:`` at it to compare two imported runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.model import (
    AgentInfo,
    Attempt,
    Dataset,
    EvalSettings,
    Json,
    Phase,
    Row,
    RowRecord,
    Run,
    Version,
    dataset_digest,
)
from ..errors import ArtifactError, UsageError

PASS = "pass"
FAIL = "fail"
EXPECTED = PASS
MIN_TRIALS = 2


@dataclass(frozen=True, slots=True)
class Trial:
    """One graded trial of one task, as a harness recorded it.

    ``order`` sorts a task's trials (file index, trial or epoch number,
    position in the file), so attempt numbers follow the harness's order.
    Exactly one of ``decision`` and ``error`` is set.
    """

    task: str
    input: Json
    order: tuple[int, ...]
    decision: str | None
    error: str | None = None
    detail: str | None = None
    duration_s: float = 0.0
    where: str = ""
    """The entry's file and index, for reports (e.g. ``a.json: [4]``)."""
    key: str | None = None
    """What names this trial in the harness, e.g. ``task '3' trial 0``.

    Two trials with the same task and key are the same trial seen twice; None
    when the harness gives no such key (a tau2 simulation without ``trial``),
    so nothing can be told apart and every entry is kept.
    """


@dataclass(frozen=True, slots=True)
class Skipped:
    """An entry that could not be imported: where it is and why."""

    where: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"where": self.where, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Parsed:
    """What one parser made of one file."""

    trials: tuple[Trial, ...]
    skipped: tuple[Skipped, ...] = ()
    description: str = ""
    """What produced the file (model, task), for the run's agent description."""
    notes: tuple[str, ...] = ()
    """Facts the report must state (e.g. which of several scorers was used)."""


@dataclass(frozen=True)
class ImportReport:
    """What an import did, including everything it could not map and why.

    ``skipped`` are entries (one trial each) that could not be mapped;
    ``dropped`` are tasks left out for having fewer than k trials.
    """

    source: str
    files: tuple[str, ...]
    rows: int
    attempts: int
    errors: int
    k: int | None
    skipped: tuple[Skipped, ...] = ()
    dropped: tuple[Skipped, ...] = ()
    warnings: tuple[str, ...] = ()
    duplicates: int = 0
    """How many of ``skipped`` are trials seen before (same task and key)."""
    trials_per_task: tuple[int, int] = (0, 0)
    """Fewest and most trials of an imported task."""
    files_per_task: tuple[int, int] = (0, 0)
    """Fewest and most files an imported task's trials came from."""

    def summary(self) -> str:
        """The one line the CLI prints.

        With several files it also says how many trials each task has and
        from how many of the files, so "2 files, all trials from 1" (the
        second file repeated the first) is visible without the report.
        """
        text = (
            f"imported {self.rows} row(s), {self.attempts} attempt(s) "
            f"({self.errors} error(s)) from {len(self.files)} {self.source} file(s), k={self.k}"
        )
        if len(self.files) > 1:
            text += (
                f"; {_span(self.trials_per_task)} trial(s) per task "
                f"from {_span(self.files_per_task)} of the {len(self.files)} files"
            )
        if self.skipped:
            text += f"; {len(self.skipped)} entr{'y' if len(self.skipped) == 1 else 'ies'} skipped"
            if self.duplicates:
                text += f" ({self.duplicates} duplicate(s))"
        if self.dropped:
            text += f"; {len(self.dropped)} task(s) with too few trials left out"
        return text

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "files": list(self.files),
            "rows": self.rows,
            "attempts": self.attempts,
            "errors": self.errors,
            "k": self.k,
            "skipped": [s.to_json() for s in self.skipped],
            "dropped": [d.to_json() for d in self.dropped],
            "warnings": list(self.warnings),
            "duplicates": self.duplicates,
            "trials_per_task": list(self.trials_per_task),
            "files_per_task": list(self.files_per_task),
        }


def _span(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return str(low) if low == high else f"{low}-{high}"


@dataclass(frozen=True)
class Imported:
    run: Run
    dataset: Dataset
    report: ImportReport


@dataclass(frozen=True)
class ImportOptions:
    version: Version = Version.CANDIDATE
    k: int | None = None
    scorer: str | None = None
    """Inspect only: which scorer's value grades a sample (default: the first)."""
    prompt_idx: int | None = None
    """promptfoo only: which prompt (``promptIdx``) to import when there are several."""


def build_import(
    parsed: Sequence[Parsed],
    *,
    source: str,
    files: Sequence[str],
    options: ImportOptions,
    now: Callable[[], str],
    tool_version: str,
) -> Imported:
    """Group trials into rows and attempts; choose k; build the run and its dataset.

    ``parsed`` is one entry per file, in the order given: a trial whose task
    and key were already seen (earlier in its file or in an earlier file) is
    skipped as a duplicate, and the first one is kept.  Pure apart from
    calling ``now`` once.  Raises :class:`ArtifactError` when nothing could
    be imported (every entry skipped, or no task with enough trials), naming
    the first reasons.
    """
    skipped_list: list[Skipped] = []
    duplicates = 0
    seen: dict[tuple[str, str], Trial] = {}
    by_task: dict[str, list[Trial]] = {}
    inputs: dict[str, Json] = {}
    files_of: dict[str, set[int]] = {}
    for file_index, p in enumerate(parsed):
        skipped_list.extend(p.skipped)
        for trial in p.trials:
            if trial.key is not None:
                first = seen.setdefault((trial.task, trial.key), trial)
                if first is not trial:
                    duplicates += 1
                    skipped_list.append(Skipped(trial.where, _duplicate_reason(trial, first)))
                    continue
            by_task.setdefault(trial.task, []).append(trial)
            inputs.setdefault(trial.task, trial.input)
            files_of.setdefault(trial.task, set()).add(file_index)
    skipped = tuple(skipped_list)
    if not by_task:
        raise ArtifactError(
            "nothing could be imported" + _first_reasons(skipped),
            where=", ".join(files),
            hint=f"check that the files are {source} results with repeated trials",
        )
    if options.k is not None and options.k < 1:
        raise UsageError("--k must be at least 1", where="--k")
    counts = {task: len(trials) for task, trials in by_task.items()}
    floor = options.k if options.k is not None else MIN_TRIALS
    dropped = tuple(
        Skipped(
            f"task {task!r}",
            f"has {n} trial(s), fewer than {floor}"
            + ("" if options.k is not None else " (pass^k needs repeated trials)"),
        )
        for task, n in counts.items()
        if n < floor
    )
    kept = [task for task, n in counts.items() if n >= floor]
    if not kept:
        raise ArtifactError(
            f"no task has at least {floor} trials" + _first_reasons(dropped),
            where=", ".join(files),
            hint="run the harness with repeated trials (tau-bench --num-trials, "
            "inspect --epochs, promptfoo --repeat)",
        )
    k = options.k if options.k is not None else min(counts[t] for t in kept)
    more = sum(1 for t in kept if counts[t] > k)
    warnings: list[str] = [note for p in parsed for note in p.notes]
    if more:
        warnings.append(
            f"{more} task(s) have more than k={k} trials; all their trials are kept "
            f"and pass^k uses C(c,k)/C(n,k) over them"
        )
    rows: list[Row] = []
    attempts: list[Attempt] = []
    for task in kept:
        row = Row(id=task, input=inputs[task], expected=EXPECTED)
        rows.append(row)
        ordered = sorted(by_task[task], key=lambda t: t.order)
        for number, trial in enumerate(ordered, start=1):
            attempts.append(
                Attempt(
                    row_id=task,
                    number=number,
                    phase=Phase.MAIN,
                    decision=trial.decision,
                    error=trial.error,
                    detail=trial.detail,
                    duration_s=trial.duration_s,
                )
            )
    digest = dataset_digest(rows)
    descriptions = sorted({p.description for p in parsed if p.description})
    what = f" ({'; '.join(descriptions)})" if descriptions else ""
    run = Run(
        tool_version=tool_version,
        dataset_digest=digest,
        settings=EvalSettings(k=k),
        agent=AgentInfo(
            options.version,
            f"imported from {source}{what}: {', '.join(Path(f).name for f in files)}",
        ),
        created_at=now(),
        rows=tuple(RowRecord(r.id, r.input_digest, r.expected, False, ()) for r in rows),
        attempts=tuple(attempts),
        ratchet=(),
    )
    dataset = Dataset(rows=tuple(rows), source=f"imported from {source}", digest=digest)
    report = ImportReport(
        source=source,
        files=tuple(files),
        rows=len(rows),
        attempts=len(attempts),
        errors=sum(1 for a in attempts if a.error is not None),
        k=k,
        skipped=skipped,
        dropped=dropped,
        warnings=tuple(warnings),
        duplicates=duplicates,
        trials_per_task=(min(counts[t] for t in kept), max(counts[t] for t in kept)),
        files_per_task=(
            min(len(files_of[t]) for t in kept),
            max(len(files_of[t]) for t in kept),
        ),
    )
    return Imported(run, dataset, report)


def _duplicate_reason(trial: Trial, first: Trial) -> str:
    """Why a repeated trial is left out, and whether the two copies even agree.

    Copies that disagree are not the same file passed twice but two runs
    numbering their trials alike: worth saying, as one of them is lost.
    """
    where = f" (first at {first.where})" if first.where else ""
    text = f"duplicate {trial.key}{where}, not imported twice"
    here, there = _outcome(trial), _outcome(first)
    if here != there:
        text += f"; the two disagree ({here} here, {there} there)"
    return text


def _outcome(trial: Trial) -> str:
    return trial.decision if trial.decision is not None else f"error {trial.error}"


def _first_reasons(entries: Sequence[Skipped], limit: int = 3) -> str:
    if not entries:
        return ""
    shown = "; ".join(str(e) for e in entries[:limit])
    more = f" and {len(entries) - limit} more" if len(entries) > limit else ""
    return f": {shown}{more}"


def dataset_jsonl(rows: Iterable[Row]) -> str:
    """The rows as a passk JSONL dataset; loading it gives the same digest."""
    return "".join(
        json.dumps(row.content(), ensure_ascii=False, sort_keys=True) + "\n" for row in rows
    )


# --- shared field readers (the parsers' vocabulary) -------------------------------


def task_id(value: Any) -> str | None:
    """A task or sample id as a row id: a non-empty string, or an integer as text."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def number(value: Any) -> float | None:
    """A JSON number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def integer(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def first_line(text: Any, limit: int = 300) -> str | None:
    """A one-line excerpt of a harness's error message, for ``detail``."""
    if not isinstance(text, str) or not text.strip():
        return None
    line = text.strip().splitlines()[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"
