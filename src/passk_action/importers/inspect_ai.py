"""Import Inspect eval logs (JSON format) run with ``--epochs`` > 1.

Format (``UKGovernmentBEIS/inspect_ai``, ``src/inspect_ai/log/_log.py``,
classes ``EvalLog``, ``EvalSpec``, ``EvalSample``): a JSON object
``{"version", "status", "eval": {"task", "model", "config": {"epochs"}, ...},
"results", "samples": [...]}``; every sample is one epoch of one dataset
sample: ``{"id": int | str, "epoch": int, "target", "scores": {"<scorer>":
{"value", "answer", "explanation"}}, "error": {"message", ...} | null,
"total_time"}``.  Score values follow ``src/inspect_ai/scorer/_metric.py``:
``"C"`` (CORRECT), ``"I"`` (INCORRECT), ``"P"`` (PARTIAL), ``"N"`` (NOANSWER).
Binary ``.eval`` logs are not JSON: convert them first with ``inspect log
convert LOG --to json --output-dir DIR``.  ``status`` is ``"success"`` for
an eval that finished; ``"error"`` or ``"cancelled"`` (with ``"error":
{"message"}``) for one that stopped, whose log holds only the samples that
finished.

Mapping (see the package docstring for what is common):

- a row is a sample of a task: sample ids are unique within a task only,
  so with logs of several tasks (``eval.task``) the row id is
  ``<task>/<sample id>``; with one task it is the sample id.  Its input is
  that id.  The sample's ``target``,
  ``input`` and messages are deliberately not copied anywhere: the artifact
  is committed and must not leak the answer key;
- the grading scorer is ``--scorer NAME``, or else the first scorer of the
  first scored sample (JSON key order, which is the task's scorer order);
  when samples carry several scorers the report says which one was used;
- value ``C``, ``1``/``1.0`` or ``true`` -> a success (``correct``: true);
  ``I``, ``0`` or ``false`` -> a failure; ``N`` (no answer) and a sample with an ``error``
  are errored trials, scored as Inspect scores them by default (its
  ``value_to_float`` makes ``N`` 0, a failure; a sample that errored has no
  score and is left out of the metrics) or, with ``--errors passk``, error
  attempts (never decisions); any other value (``P``, 0.5, lists,
  objects) cannot be reduced to pass/fail without a threshold passk would
  have to invent, so the sample is skipped and reported;
- skipped and reported, with file and sample index: a sample with no id,
  no integer epoch, no score from the chosen scorer, or an unknown value;
  and a (task, sample id, epoch) seen before, in this log or an earlier one
  (imported once: two logs that both ran epochs 1-3 are not six epochs,
  unless ``--concat-runs`` says they are two runs to join);
- an eval that did not finish (``status`` other than ``success``) is
  refused: its missing samples would silently lower k.  ``--allow-incomplete``
  imports what finished and says so in the report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import values
from ..core.model import Usage
from ..errors import ArtifactError
from . import (
    DROP,
    FAIL,
    PASS,
    ImportOptions,
    Parsed,
    Skipped,
    Trial,
    first_line,
    harness_usage,
    integer,
    seconds,
    task_id,
)

NAME = "inspect"
EXPECTED = (
    "an Inspect eval log in JSON (an object with 'eval' and 'samples'; "
    "`inspect log convert LOG --to json --output-dir DIR` converts .eval logs)"
)
"""What a file must be, for hints when it is not."""

CONVENTION = (
    "Inspect's convention: a sample that errored is left out of the scores; "
    "a no-answer (N) score counts as incorrect"
)
FINISHED = "success"
_PASS_TEXT = frozenset({"C"})
_FAIL_TEXT = frozenset({"I"})
_NO_ANSWER = "N"


def _samples(doc: Any, where: str) -> list[Any]:
    """The log's samples; an error naming the fix when it is no eval log or has none."""
    if not isinstance(doc, dict) or "eval" not in doc:
        raise ArtifactError(
            "not an Inspect eval log",
            where=where,
            hint=f"pass {EXPECTED}",
        )
    samples = doc.get("samples")
    if samples is None:
        raise ArtifactError(
            "the log has no samples",
            where=where,
            hint="it was written with --no-log-samples or before any sample finished; "
            "run the eval again with sample logging on",
        )
    if not isinstance(samples, list):
        raise ArtifactError("'samples' must be a list", where=where)
    return samples


def _task_name(spec: Any) -> str:
    """The eval's task name (the trials' group); empty when the log names none."""
    task_name = spec.get("task") if isinstance(spec, dict) else None
    return task_name if isinstance(task_name, str) else ""


def parse(doc: Any, where: str, file_index: int, options: ImportOptions) -> Parsed:
    """Map an Inspect ``EvalLog`` JSON document to trials."""
    samples = _samples(doc, where)
    unfinished = _unfinished(doc, where, options)
    scorer, notes = _choose_scorer(samples, options.scorer, where)
    notes = (*unfinished, *notes)
    spec = doc.get("eval")
    group = _task_name(spec)
    trials: list[Trial] = []
    skipped: list[Skipped] = []
    for position, sample in enumerate(samples):
        here = f"{where}: samples[{position}]"
        if not isinstance(sample, dict):
            skipped.append(Skipped(here, "not a JSON object"))
            continue
        sample_id = task_id(sample.get("id"))
        if sample_id is None:
            skipped.append(Skipped(here, "no sample 'id'"))
            continue
        epoch = integer(sample.get("epoch"))
        if epoch is None:
            skipped.append(Skipped(here, f"sample {sample_id!r} has no integer 'epoch'"))
            continue
        order = (file_index, epoch, position)
        key = f"sample {sample_id!r} epoch {epoch}"
        dropped: list[str] = []
        duration = seconds(sample.get("total_time"), left_out=dropped)
        usage = _usage(sample.get("model_usage"), dropped)
        left_out = tuple(dropped)
        error = sample.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            trials.append(
                Trial(
                    sample_id,
                    sample_id,
                    order,
                    decision=None,
                    error="sample-error",
                    detail=first_line(message),
                    duration_s=duration,
                    where=here,
                    key=key,
                    group=group,
                    usage=usage,
                    harness_scores=DROP,
                    left_out=left_out,
                )
            )
            continue
        scores = sample.get("scores")
        score = scores.get(scorer) if isinstance(scores, dict) and scorer else None
        if not isinstance(score, dict) or "value" not in score:
            skipped.append(
                Skipped(here, f"sample {sample_id!r} epoch {epoch} has no score from {scorer!r}")
            )
            continue
        value = score["value"]
        if value == _NO_ANSWER:
            trials.append(
                Trial(
                    sample_id,
                    sample_id,
                    order,
                    decision=None,
                    error="no-answer",
                    detail="scored N (no answer)",
                    duration_s=duration,
                    where=here,
                    key=key,
                    group=group,
                    usage=usage,
                    left_out=left_out,
                )
            )
            continue
        decision = _decision(value)
        if decision is None:
            skipped.append(
                Skipped(
                    here,
                    f"score value {value!r} of {scorer!r} is not C/I, 1/0 or true/false",
                )
            )
            continue
        trials.append(
            Trial(
                sample_id,
                sample_id,
                order,
                decision,
                duration_s=duration,
                where=here,
                key=key,
                group=group,
                usage=usage,
                left_out=left_out,
            )
        )
    return Parsed(tuple(trials), tuple(skipped), _description(spec), notes, convention=CONVENTION)


def _unfinished(doc: dict[str, Any], where: str, options: ImportOptions) -> tuple[str, ...]:
    """Refuse an eval that did not finish, or with --allow-incomplete, say so."""
    status = doc.get("status", FINISHED)
    if status == FINISHED:
        return ()
    error = doc.get("error")
    message = first_line(error.get("message") if isinstance(error, dict) else error, 160)
    why = f"the eval's status is {status!r}" + (f" ({message})" if message else "")
    if not options.allow_incomplete:
        raise ArtifactError(
            f"{why}: the log holds only the samples that finished, which would lower k",
            where=where,
            hint="finish it (inspect eval-retry LOG) and import the new log, "
            "or pass --allow-incomplete to import what finished",
        )
    return (f"{where}: {why}; imported the samples that finished (--allow-incomplete)",)


def _decision(value: Any) -> str | None:
    if isinstance(value, bool):
        return PASS if value else FAIL
    if isinstance(value, str):
        if value in _PASS_TEXT:
            return PASS
        if value in _FAIL_TEXT:
            return FAIL
        return None
    if isinstance(value, (int, float)):
        if value == 1:
            return PASS
        if value == 0:
            return FAIL
    return None


def _choose_scorer(
    samples: list[Any], wanted: str | None, where: str
) -> tuple[str | None, tuple[str, ...]]:
    names: dict[str, None] = {}
    for sample in samples:
        if isinstance(sample, dict) and isinstance(sample.get("scores"), dict):
            for name in sample["scores"]:
                names.setdefault(name, None)
    if wanted is not None:
        if names and wanted not in names:
            raise ArtifactError(
                f"no scorer named {wanted!r} in the log",
                where=where,
                hint=f"--scorer must be one of: {', '.join(names)}",
            )
        return wanted, ()
    if not names:
        return None, ()
    first = next(iter(names))
    if len(names) == 1:
        return first, ()
    return first, (
        f"{where}: samples carry {len(names)} scorers ({', '.join(names)}); "
        f"graded with the first, {first!r} (choose another with --scorer NAME)",
    )


def _description(spec: Any) -> str:
    if not isinstance(spec, dict):
        return ""
    parts = [spec.get("model"), spec.get("task")]
    text = [p for p in parts if isinstance(p, str) and p]
    return " on ".join(text)


_USAGE_RULES: tuple[tuple[str, Callable[[object], float | None]], ...] = (
    ("input_tokens", values.count),
    ("output_tokens", values.count),
    ("total_cost", values.amount),
)


def _usage(model_usage: Any, left_out: list[str]) -> Usage | None:
    """A sample's ``model_usage`` (tokens, and ``total_cost`` where Inspect logs it) summed.

    The model is named when the sample used one (``openai/gpt-4o-mini`` is
    priced as ``gpt-4o-mini``); a grader model's tokens count too: they
    were spent on this sample.  A value logged but breaking its rule is
    named in ``left_out``, once per sample.
    """
    if not isinstance(model_usage, dict) or not model_usage:
        return None
    totals: dict[str, float] = {}
    for usage in model_usage.values():
        if not isinstance(usage, dict):
            continue
        for key, rule in _USAGE_RULES:
            given = usage.get(key)
            value = rule(given)
            if value is not None:  # each within its rule, so the sum cannot overflow
                totals[key] = totals.get(key, 0) + value
            elif given is not None and _LEFT_OUT_NAMES[key] not in left_out:
                left_out.append(_LEFT_OUT_NAMES[key])
    models = [str(name) for name in model_usage]
    model = models[0].rpartition("/")[2] if len(models) == 1 else None
    return harness_usage(
        totals.get("input_tokens"), totals.get("output_tokens"), totals.get("total_cost"), model
    )


_LEFT_OUT_NAMES = {
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "total_cost": "cost",
}
