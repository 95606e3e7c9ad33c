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
  vars), and it has no expected decision: these harnesses grade each trial
  themselves, so the run is scored by its environment (``scoring.by:
  environment``): stable-correct when every trial succeeded, stable-wrong
  when every one failed, a flip when they are mixed;
- each **trial** becomes one main attempt that reports the harness's grade
  (``correct``: true or false), read as the decision ``success`` or
  ``failure``;
- a trial that **errored** (a harness exception, an infrastructure error,
  no answer) is scored the way the harness itself scores it, so the import
  reproduces the harness's headline numbers (``--errors harness``, the
  default): tau-bench and promptfoo count it as a failure, Inspect and
  tau2 (for infrastructure errors) leave it out.  ``--errors passk`` keeps
  it as an *error* attempt instead, which passk never counts as a decision.
  The run records which convention was used (``imported`` in the artifact),
  and the import summary shows the other one's numbers beside it;
- a trial is imported **once**: a second entry with the same harness key
  (tau-bench task and trial, Inspect task, sample and epoch, promptfoo test
  and repeat), in the same file or a later one, is skipped and reported with
  its file and index and where the first one is.  Without this, passing
  the same results twice would silently double k.  Two *different* runs
  that both number their trials from 0 are joined with ``--concat-runs``:
  each file's trials then come after the previous file's;
- a row is keyed by the harness's task *and* id where ids are only unique
  within a task (two Inspect tasks both have a sample 1): with several
  tasks, the row id is ``<task>/<id>``;
- **k** is the smallest number of trials of any task (at least 2), or
  ``--k`` (at least 2: pass^k over one trial is just accuracy).  Tasks with
  fewer trials are not imported and are listed in the
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
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..core import values
from ..core.model import (
    BY_ENVIRONMENT,
    DURATION_UNKNOWN,
    AgentInfo,
    Attempt,
    Dataset,
    EvalSettings,
    ImportInfo,
    Json,
    Phase,
    Row,
    RowRecord,
    Run,
    Scoring,
    Usage,
    Version,
    dataset_digest,
)
from ..core.scoring import FAILURE, SUCCESS
from ..core.stats import compute_metrics, pass_hat_k, summarize_run
from ..errors import ArtifactError, UsageError

PASS = SUCCESS
FAIL = FAILURE
"""A trial the harness graded a success, or not (the outcome passk records as ``correct``)."""
DROP = "drop"
"""How a harness scores an errored trial: as a failure (FAIL), or not at all (DROP)."""
SCORED_BY_HARNESS = Scoring(by=BY_ENVIRONMENT)
"""The scoring of an imported run: each trial's grade is its outcome."""
MIN_TRIALS = 2
HARNESS = "harness"
PASSK = "passk"
ERROR_CONVENTIONS = (HARNESS, PASSK)
PASSK_CONVENTION = (
    "passk's convention: a trial that errored is an error attempt, never a decision "
    "(a task with fewer than k decisions is unclassified)"
)


def harness_usage(
    input_tokens: object = None,
    output_tokens: object = None,
    cost_usd: object = None,
    model: object = None,
    left_out: list[str] | None = None,
) -> Usage | None:
    """A trial's usage from what a harness logged; a value that breaks its rule is left out.

    The same rules as an agent's ``usage`` (``core/values.py``): token
    counts and a cost in their ranges, a model a non-empty name.  None when
    nothing usable was logged.  Each value logged but left out is named in
    ``left_out`` (:data:`LEFT_OUT_VALUES`), for the import's report.
    """
    if input_tokens is None and output_tokens is None and cost_usd is None and model is None:
        return None  # nothing logged (most trials of most harnesses): nothing to check
    name = model.strip() if isinstance(model, str) and model.strip() else None
    usage = Usage(
        values.count(input_tokens), values.count(output_tokens), values.amount(cost_usd), name
    )
    if left_out is not None:
        given = (input_tokens, output_tokens, cost_usd, model)
        kept = (usage.input_tokens, usage.output_tokens, usage.cost_usd, name)
        for what, value, held in zip(_USAGE_VALUES, given, kept, strict=True):
            if value is not None and held is None:
                left_out.append(what)
    return None if usage == Usage() else usage


LEFT_OUT_VALUES = {
    "input tokens": "not a whole number from 0 to 10^12",
    "output tokens": "not a whole number from 0 to 10^12",
    "cost": "not a number of dollars from 0 to 10^12",
    "model": "not a non-empty name",
    "duration": "not a number of seconds from 0 to 10^9",
}
"""The values of a trial an import may leave out, and the rule they broke (``core/values.py``)."""
_USAGE_VALUES = ("input tokens", "output tokens", "cost", "model")
UNTIMED_WARNING = (
    f"{DURATION_UNKNOWN}: the harness logged a latency that is "
    f"{LEFT_OUT_VALUES['duration']}; left out of the latency figures"
)
"""The warning of an imported attempt whose logged latency is no duration (NaN, -1 ms)."""


def seconds(value: object, per_second: float = 1.0, left_out: list[str] | None = None) -> float:
    """A trial's duration in seconds from a harness's number of ``1 / per_second`` units.

    0.0 when it is missing or breaks the duration rule (``core/values.py``):
    not a number, negative, or beyond 10^9 seconds; then, when it was
    logged, ``duration`` is added to ``left_out``.
    """
    if value is None:
        return 0.0  # not logged: nothing to check, nothing left out
    number = values.finite(value)
    duration = None if number is None else values.seconds(number / per_second)
    if duration is None:
        if value is not None and left_out is not None:
            left_out.append("duration")
        return 0.0
    return duration


class Trial(NamedTuple):
    """One graded trial of one task, as a harness recorded it.

    ``order`` sorts a task's trials (file index, trial or epoch number,
    position in the file), so attempt numbers follow the harness's order.
    Exactly one of ``decision`` and ``error`` is set.  A named tuple, not a
    frozen dataclass: as immutable, and built five times faster, which
    counts for a file of half a million trials.
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
    key: str | tuple[str, int] | None = None
    """What names this trial in the harness, e.g. ``sample '3' epoch 1``.

    A (task id, trial number) pair for tau-bench, read as ``task '3' trial 0``.

    Two trials with the same task and key are the same trial seen twice; None
    when the harness gives no such key (a tau2 simulation without ``trial``),
    so nothing can be told apart and every entry is kept.
    """
    group: str = ""
    """The harness task ``task`` is an id within (an Inspect eval's task), if any."""
    harness_scores: str = FAIL
    """For an errored trial: how its harness scores it, FAIL or DROP."""
    usage: Usage | None = None
    """Tokens and cost the harness logged for the trial (see :func:`harness_usage`)."""
    left_out: tuple[str, ...] = ()
    """The trial's values logged but left out for breaking their rule (:data:`LEFT_OUT_VALUES`)."""


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
    convention: str = ""
    """How this file's harness scores errored trials, in one sentence."""


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
    errors_convention: str = HARNESS
    convention: str = ""
    """The sentence saying how errored trials were scored."""
    scored_as_failures: int = 0
    """Errored trials counted as failures (the harness's convention)."""
    errored_left_out: int = 0
    """Errored trials left out (the harness's convention)."""
    headline: str = ""
    """Mean accuracy and pass^k as imported, when trials errored (see :func:`headline`)."""
    beside: str = ""
    """The same numbers under the other convention, when trials errored."""
    values_left_out: tuple[tuple[str, int], ...] = ()
    """Values of imported trials left out for breaking their rule, by name: (``cost``, 1)."""

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
        if self.scored_as_failures or self.errored_left_out:
            done = []
            if self.scored_as_failures:
                done.append(f"{self.scored_as_failures} scored as failures")
            if self.errored_left_out:
                done.append(f"{self.errored_left_out} left out")
            text += f"; errored trials as {self.source} scores them: {', '.join(done)}"
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
        if self.values_left_out:
            named = ", ".join(
                f"{what} of {n} trial(s) ({LEFT_OUT_VALUES[what]})"
                for what, n in self.values_left_out
            )
            text += f"; values left out: {named}"
        return text

    def left_out(self) -> tuple[tuple[str, int], ...]:
        """What the import did not carry over, counted by reason (zero counts omitted)."""
        counts = (
            ("tasks with too few trials", len(self.dropped)),
            ("duplicate trials", self.duplicates),
            ("entries that could not be mapped", len(self.skipped) - self.duplicates),
            ("errored trials left out", self.errored_left_out),
            *(
                (f"trials with their {what} left out ({LEFT_OUT_VALUES[what]})", n)
                for what, n in self.values_left_out
            ),
        )
        return tuple((reason, n) for reason, n in counts if n)

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
            "errors_convention": self.errors_convention,
            "convention": self.convention,
            "scored_as_failures": self.scored_as_failures,
            "errored_left_out": self.errored_left_out,
            "headline": self.headline,
            "beside": self.beside,
            "values_left_out": dict(self.values_left_out),
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
    errors: str = HARNESS
    """Whose convention scores errored trials: HARNESS (reproduce its numbers) or PASSK."""
    concat_runs: bool = False
    """Join files as consecutive runs: each file's trials follow the previous file's."""
    allow_incomplete: bool = False
    """Inspect only: import the finished samples of an eval that failed or was cancelled."""


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
    skipped as a duplicate, and the first one is kept; with
    ``options.concat_runs`` keys are per file, and each file's trials follow
    the previous file's.  Errored trials are scored by ``options.errors``
    (see the package docstring); the report also carries the headline
    numbers under the other convention.  Pure apart from calling ``now``
    once.  Raises :class:`ArtifactError` when nothing could be imported
    (every entry skipped, or no task with enough trials), naming the first
    reasons, and :class:`UsageError` for a ``--k`` below 2.
    """
    if options.k is not None and options.k < MIN_TRIALS:
        raise UsageError(
            f"--k must be at least {MIN_TRIALS}, got {options.k}",
            where="--k",
            hint="pass^k needs repeated trials; a run with k=1 cannot be gated or compared",
        )
    if options.errors not in ERROR_CONVENTIONS:
        raise UsageError(
            f"unknown --errors {options.errors!r}",
            where="--errors",
            hint=f"use one of: {', '.join(ERROR_CONVENTIONS)}",
        )
    grouped = _group(parsed, options.concat_runs)
    imported = _assemble(grouped, parsed, source, files, options, now, tool_version)
    other = replace(options, errors=PASSK if options.errors == HARNESS else HARNESS)
    if grouped.errored:
        report = replace(
            imported.report,
            headline=_headline(grouped, options),
            beside=f"with --errors {other.errors}: {_headline(grouped, other)}",
        )
        imported = Imported(imported.run, imported.dataset, report)
    return imported


@dataclass
class _Grouped:
    """Trials by row, before any error convention is applied."""

    by_task: dict[str, list[Trial]]
    inputs: dict[str, Json]
    files_of: dict[str, set[int]]
    skipped: tuple[Skipped, ...]
    duplicates: int
    errored: int


def _group(parsed: Sequence[Parsed], concat_runs: bool) -> _Grouped:
    """Trials by row, duplicates set aside.  The hot loop of a large import."""
    skipped_list: list[Skipped] = []
    duplicates = errored = 0
    seen: dict[tuple[int, str, str, str | tuple[str, int]], Trial] = {}
    groups = {t.group for p in parsed for t in p.trials}
    qualify = len(groups) > 1
    by_task: dict[str, list[Trial]] = {}
    inputs: dict[str, Json] = {}
    files_of: dict[str, set[int]] = {}
    for file_index, p in enumerate(parsed):
        skipped_list.extend(p.skipped)
        scope = file_index if concat_runs else 0
        for trial in p.trials:
            task, key, group = trial.task, trial.key, trial.group
            if key is not None:
                name = (scope, group, task, key)
                first = seen.get(name)
                if first is not None:
                    duplicates += 1
                    skipped_list.append(Skipped(trial.where, _duplicate_reason(trial, first)))
                    continue
                seen[name] = trial
            row_id = f"{group}/{task}" if qualify else task
            trials = by_task.get(row_id)
            if trials is None:
                trials = by_task[row_id] = []
                inputs[row_id] = {"task": group, "id": trial.input} if qualify else trial.input
                files_of[row_id] = {file_index}
            elif file_index:
                files_of[row_id].add(file_index)
            trials.append(trial)
            if trial.error is not None:
                errored += 1
    return _Grouped(by_task, inputs, files_of, tuple(skipped_list), duplicates, errored)


def _assemble(
    grouped: _Grouped,
    parsed: Sequence[Parsed],
    source: str,
    files: Sequence[str],
    options: ImportOptions,
    now: Callable[[], str],
    tool_version: str,
) -> Imported:
    skipped = grouped.skipped
    if not grouped.by_task:
        raise ArtifactError(
            "nothing could be imported" + _first_reasons(skipped),
            where=", ".join(files),
            hint=f"check that the files are {source} results with repeated trials",
        )
    harness = options.errors == HARNESS
    by_task, left_out = _trials_kept(grouped, harness)
    counts = {task: len(trials) for task, trials in by_task.items()}
    kept, dropped = _enough_trials(counts, options.k, files)
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
    values_left_out: dict[str, int] = {}
    as_failures = 0
    for task in kept:
        rows.append(Row(id=task, input=grouped.inputs[task], expected=None))
        # Usually in order already: then sorting is one linear pass.
        trials = sorted(by_task[task], key=_ORDER)
        for number, trial in enumerate(trials, start=1):
            if harness and trial.error is not None:
                as_failures += 1
            for what in trial.left_out:
                values_left_out[what] = values_left_out.get(what, 0) + 1
            attempts.append(_attempt(task, number, trial, harness))
    digest = dataset_digest(rows)
    descriptions = sorted({p.description for p in parsed if p.description})
    what = f" ({'; '.join(descriptions)})" if descriptions else ""
    conventions = list(dict.fromkeys(p.convention for p in parsed if p.convention))
    convention = "; ".join(conventions) if harness else PASSK_CONVENTION
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
        duplicates=grouped.duplicates,
        trials_per_task=(min(counts[t] for t in kept), max(counts[t] for t in kept)),
        files_per_task=(
            min(len(grouped.files_of[t]) for t in kept),
            max(len(grouped.files_of[t]) for t in kept),
        ),
        errors_convention=options.errors,
        convention=convention,
        scored_as_failures=as_failures,
        errored_left_out=left_out,
        values_left_out=tuple(
            (what, values_left_out[what]) for what in LEFT_OUT_VALUES if what in values_left_out
        ),
    )
    run = Run(
        tool_version=tool_version,
        dataset_digest=digest,
        settings=EvalSettings(k=k, scoring=SCORED_BY_HARNESS),
        agent=AgentInfo(
            options.version,
            f"imported from {source}{what}: {', '.join(Path(f).name for f in files)}",
        ),
        created_at=now(),
        rows=tuple(RowRecord(r.id, r.input_digest, None, False, ()) for r in rows),
        attempts=tuple(attempts),
        ratchet=(),
        imported=ImportInfo(source, options.errors, convention, report.left_out()),
    )
    dataset = Dataset(rows=tuple(rows), source=f"imported from {source}", digest=digest)
    return Imported(run, dataset, report)


def _enough_trials(
    counts: Mapping[str, int], k: int | None, files: Sequence[str]
) -> tuple[list[str], tuple[Skipped, ...]]:
    """The tasks with at least k trials (at least 2 when k is not given: pass^k needs
    repeated trials), and the others, each with why; none kept is an error."""
    floor = k if k is not None else MIN_TRIALS
    dropped = tuple(
        Skipped(
            f"task {task!r}",
            f"has {n} trial(s), fewer than {floor}"
            + ("" if k is not None else " (pass^k needs repeated trials)"),
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
    return kept, dropped


def _trials_kept(grouped: _Grouped, harness: bool) -> tuple[dict[str, list[Trial]], int]:
    """Each task's trials, without the errored ones the harness dropped from its own
    scores (under ``--errors harness``); and how many were left out so."""
    by_task: dict[str, list[Trial]] = {}
    left_out = 0
    for task, trials in grouped.by_task.items():
        if harness and grouped.errored:
            kept_trials = [t for t in trials if t.error is None or t.harness_scores != DROP]
            left_out += len(trials) - len(kept_trials)
            trials = kept_trials
        if trials:
            by_task[task] = trials
    return by_task, left_out


def _attempt(task: str, number: int, trial: Trial, harness: bool) -> Attempt:
    """One trial as an attempt: its pass or fail; its error an error, or under
    ``--errors harness`` a failure that says what went wrong."""
    main = Phase.MAIN
    if trial.error is None:
        attempt = Attempt(
            task, number, main, trial.decision, (), None, trial.detail, trial.duration_s,
            correct=trial.decision == PASS,
        )  # fmt: skip
    elif harness:
        detail = f"{trial.error}: {trial.detail}" if trial.detail else trial.error
        attempt = Attempt(
            task, number, main, FAIL, (), None, detail, trial.duration_s, correct=False
        )
    else:
        attempt = Attempt(task, number, main, None, (), trial.error, trial.detail, trial.duration_s)
    if trial.usage is not None:
        attempt = replace(attempt, usage=trial.usage)
    if "duration" in trial.left_out:
        # Its 0.0 is no time: never a 0 s latency that passes any limit.
        attempt = replace(attempt, warnings=(UNTIMED_WARNING,))
    return attempt


_ORDER = operator.attrgetter("order")


def _headline(grouped: _Grouped, options: ImportOptions) -> str:
    """:func:`headline` of the run ``options`` would give, counted from the trials.

    The same rules as :func:`_assemble` (errored trials by convention, tasks
    with too few trials left out, k the fewest trials) without building the
    run: half a million attempts cost a second to build and summarise.
    """
    harness = options.errors == HARNESS
    counts: list[tuple[int, int, int]] = []  # (trials, valid, right) per task
    errors = 0
    for trials in grouped.by_task.values():
        valid = right = failed = 0
        for trial in trials:
            if trial.error is None:
                valid += 1
                right += trial.decision == PASS
            elif not harness:
                failed += 1
            elif trial.harness_scores != DROP:
                valid += 1
        if valid + failed:
            counts.append((valid + failed, valid, right))
            errors += failed
    floor = options.k if options.k is not None else MIN_TRIALS
    kept = [c for c in counts if c[0] >= floor]
    if not kept:
        return f"nothing to import (no task has at least {floor} trials)"
    k = options.k if options.k is not None else min(n for n, _, _ in kept)
    errors -= sum(n - valid for n, valid, _ in counts if n < floor)
    valid_total = sum(valid for _, valid, _ in kept)
    accuracy = sum(right for _, _, right in kept) / valid_total if valid_total else None
    # Over attempts, errors included (core/stats.Metrics: errors are never right).
    pass_k = math.fsum(pass_hat_k(n, right, k) for n, _, right in kept) / len(kept)
    return _headline_text(accuracy, k, pass_k, len(kept), errors)


def _headline_text(
    accuracy: float | None, k: int, pass_k: float | None, rows: int, errors: int
) -> str:
    accuracy_text = "n/a" if accuracy is None else f"{accuracy:.3f}"
    pass_text = "n/a" if pass_k is None else f"{pass_k:.3f}"
    return (
        f"mean accuracy {accuracy_text}, pass^{k} {pass_text} over {rows} row(s), "
        f"{errors} error attempt(s)"
    )


def headline(run: Run) -> str:
    """Mean accuracy and pass^k of a run, for the import summary."""
    k = run.settings.k
    metrics = compute_metrics(
        summarize_run(run.rows, run.attempts_by_row(), k, run.settings.scoring), k
    )
    return _headline_text(metrics.mean_accuracy, k, metrics.pass_k, metrics.rows, metrics.errors)


def _duplicate_reason(trial: Trial, first: Trial) -> str:
    """Why a repeated trial is left out, and whether the two copies even agree.

    Copies that disagree are not the same file passed twice but two runs
    numbering their trials alike: worth saying, as one of them is lost.
    """
    where = f" (first at {first.where})" if first.where else ""
    text = f"duplicate {_key_text(trial.key)}{where}, not imported twice"
    here, there = _outcome(trial), _outcome(first)
    if here != there:
        text += f"; the two disagree ({here} here, {there} there)"
    return text


def _key_text(key: str | tuple[str, int] | None) -> str:
    if isinstance(key, tuple):
        return f"task {key[0]!r} trial {key[1]}"
    return str(key)


def _outcome(trial: Trial) -> str:
    return trial.decision if trial.decision is not None else f"error {trial.error}"


def _first_reasons(entries: Sequence[Skipped], limit: int = 3) -> str:
    if not entries:
        return ""
    shown = "; ".join(str(e) for e in entries[:limit])
    more = f" and {len(entries) - limit} more" if len(entries) > limit else ""
    return f": {shown}{more}"


def dataset_jsonl(rows: Iterable[Row]) -> str:
    """The rows as a passk JSONL dataset; loading it (``scoring.by: environment``) gives the same
    digest."""
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
    if isinstance(value, str) and values.row_id_problem(value) is None:
        return value  # the dataset loader's rule: what --dataset-out writes, it reads
    return None


def number(value: Any) -> float | None:
    """A finite JSON number (not a boolean, NaN, infinity or beyond a float), else None."""
    return values.finite(value)


def shown(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a message about a bad value."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
