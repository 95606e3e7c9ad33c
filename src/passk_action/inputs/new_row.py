"""The row ``passk add`` appends, checked against the dataset before a byte is written.

A production failure becomes a row: its input (given as JSON, or taken from
one attempt of a recorded run), the decision it should have got, tags and
the must-not-break mark.  Checked here, each refusal one line naming the
flag or the dataset line and the fix:

- the id is new (or, with none given, generated in the dataset's own
  pattern, ``r-65`` after ``r-64``, and said so);
- the input is not in the dataset already under another id: one input is
  one row, its label edited in place;
- the expected decision is one some row already expects (a typo in a
  must-not-break row's label would block every pull request, and relabeling
  it later is a protected change), unless ``new_label`` says it is new; a
  structured decision is a JSON object of the fields ``scoring.fields``
  names (the dataset's loader checks them on reading the row back), each
  word in it one some row's same field holds, unless ``new_label`` says it
  is new, and a task its environment scores has none;
- a row taken from a run is the input that run measured (same input
  digest), and a named attempt did get it wrong.

Pure: the dataset and run are already loaded; the bytes are written by
:mod:`.dataset_writer`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.model import (
    Attempt,
    Dataset,
    Json,
    Row,
    Run,
    Scoring,
    canonical_json,
    object_text,
    sha256_hex,
)
from ..core.scoring import decision_text, field_words, is_correct, normalize
from ..errors import UsageError

_NUMBERED = re.compile(r"^(.*?)(\d+)$")
GENERATED_PREFIX = "row-"
"""Generated ids of a dataset whose ids follow no numbered pattern: ``row-`` and a digest."""


@dataclass(frozen=True)
class NewRow:
    """What the user asked to add."""

    input: Json
    expected: str | None
    """As given on the command line: a label, a JSON object's text, or None."""
    id: str | None = None
    tags: tuple[str, ...] = ()
    must_not_break: bool = False
    cluster: str | None = None


@dataclass(frozen=True)
class PlannedRow:
    """The row to append, as the dataset file will state it, and how its id was chosen."""

    id: str
    record: dict[str, Json]
    generated: str | None
    """How a generated id was made (``the next of r-1 … r-64``); None when given."""
    must_not_break: bool
    """The effective mark: the row's own, or one of its tags the config protects."""
    protecting_tags: tuple[str, ...]


@dataclass(frozen=True)
class FailedAttempt:
    """The input one attempt of a recorded run failed on, and what that attempt did."""

    input: Json
    answered: str
    """``approve``, or ``error: timeout``: what the attempt (or the row's attempts) did."""


def plan_row(
    dataset: Dataset,
    new: NewRow,
    *,
    scoring: Scoring | None = None,
    must_not_break_tags: Iterable[str] = (),
    new_label: bool = False,
) -> PlannedRow:
    """Check ``new`` against ``dataset`` and give the row to append; UsageError if it cannot be."""
    scoring = scoring or Scoring()
    expected = expected_value(new.expected, scoring)
    if isinstance(expected, str):
        labels = sorted({row.expected for row in dataset.rows if row.expected is not None})
        known = {normalize(label, scoring) for label in labels}
        if not new_label and normalize(expected, scoring) not in known:
            raise UsageError(
                f"no row expects {expected!r}; the dataset's decisions are {_listed(labels)}",
                where="--expected",
                hint="check the spelling, or pass --new-label if it is a decision no row has yet",
            )
    elif isinstance(expected, dict) and not new_label:
        _check_field_words(expected, dataset, scoring)
    by_id = dataset.by_id()
    if new.id is not None and new.id in by_id:
        raise UsageError(
            f"the dataset already has a row {new.id!r} (line {by_id[new.id].line})",
            where="--id",
            hint="choose another id, or leave --id out to get the next one",
        )
    wanted = canonical_json(new.input)
    for row in dataset.rows:
        if canonical_json(row.input) == wanted:
            raise UsageError(
                f"this input is already in the dataset as row {row.id!r}",
                where=f"{dataset.source}:{row.line}",
                hint="one input is one row: edit that row instead; relabeling or unmarking a "
                "must-not-break row is a protected change",
            )
    tags = tuple(dict.fromkeys(new.tags))
    for tag in tags:
        if not tag.strip():
            raise UsageError("a tag is empty", where="--tag", hint="e.g. --tag production")
    row_id, generated = (new.id, None) if new.id is not None else next_id(dataset.rows, wanted)
    record: dict[str, Json] = {"id": row_id, "input": new.input}
    if expected is not None:
        record["expected"] = expected
    if tags:
        record["tags"] = list(tags)
    if new.must_not_break:
        record["must_not_break"] = True
    if new.cluster is not None:
        record["cluster"] = new.cluster
    protecting = tuple(t for t in tags if t in set(must_not_break_tags))
    return PlannedRow(
        id=row_id,
        record=record,
        generated=generated,
        must_not_break=new.must_not_break or bool(protecting),
        protecting_tags=protecting,
    )


def _check_field_words(expected: dict[str, Json], dataset: Dataset, scoring: Scoring) -> None:
    """Refuse a word in a field of ``expected`` that no row's same field holds (a typo:
    ``"refnud"``), as for a label.  A field whose rows hold no words (amounts, dates
    compared with a tolerance, a free field) is not checked."""
    used: dict[str, set[str]] = {}
    for row in dataset.rows:
        fields = _object_of(row.expected)
        for name, value in fields.items():
            if name in expected:
                used.setdefault(name, set()).update(field_words(value, name, scoring))
    for name, value in expected.items():
        known = used.get(name)
        if not known:
            continue
        new_words = sorted(field_words(value, name, scoring) - known)
        if new_words:
            raise UsageError(
                f"no row's {name!r} is {new_words[0]!r}; the dataset's {name!r} values are "
                f"{_listed(sorted(known))}",
                where="--expected",
                hint="check the spelling, or pass --new-label if it is a value no row has yet",
            )


def _object_of(text: str | None) -> dict[str, Json]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def expected_value(given: str | None, scoring: Scoring) -> Json:
    """``--expected`` as the dataset states it: a label, a JSON object, or None (a task its
    environment scores); UsageError when it does not fit the scoring rules."""
    if scoring.by_environment:
        if given is not None:
            raise UsageError(
                "scoring.by is environment: a task its environment scores has no expected decision",
                where="--expected",
                hint="leave --expected out",
            )
        return None
    if given is None or not given.strip():
        raise UsageError(
            "the expected decision is missing"
            if given is None
            else "the expected decision is empty",
            where="--expected",
            hint="e.g. --expected deny, or a JSON object of the decision's fields, "
            '--expected \'{"action": "refund", "amount": 120}\'',
        )
    if not scoring.structured:
        return given
    try:
        value = json.loads(given)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UsageError(
            "a structured decision is a JSON object of the fields scoring.fields names",
            where="--expected",
            hint='e.g. --expected \'{"action": "refund", "amount": 120}\'',
        )
    return value


def expected_text_of(value: Json) -> str | None:
    """The expected value as rows hold it in memory (a JSON object as its canonical text)."""
    if isinstance(value, dict):
        return object_text(value)
    return None if value is None else str(value)


def next_id(rows: Sequence[Row], input_json: bytes) -> tuple[str, str]:
    """A new id in the dataset's own pattern, and how it was made.

    The numbered pattern most ids share (``r-7``, ``refund-007``: a prefix,
    then digits, zero-padded alike) gives the next number; a dataset without
    one gets ``row-`` and the first hex digits of the input's digest.
    """
    ids = {row.id for row in rows}
    numbered = [m for m in (_NUMBERED.match(i) for i in ids) if m]
    prefixes = Counter(m.group(1) for m in numbered)
    if prefixes:
        prefix, count = prefixes.most_common(1)[0]
        if count * 2 > len(ids):
            ours = [m for m in numbered if m.group(1) == prefix]
            widths = {len(m.group(2)) for m in ours}
            padded = len(widths) == 1 and any(m.group(2).startswith("0") for m in ours)
            width = widths.pop() if padded else 0
            top = max(int(m.group(2)) for m in ours)
            number = top + 1
            while f"{prefix}{number:0{width}d}" in ids:
                number += 1
            first = min(ours, key=lambda m: int(m.group(2))).group(0)
            last = max(ours, key=lambda m: int(m.group(2))).group(0)
            return f"{prefix}{number:0{width}d}", f"the next of {first} … {last}"
    digest = sha256_hex(input_json).removeprefix("sha256:")
    for size in range(8, len(digest) + 1):
        candidate = GENERATED_PREFIX + digest[:size]
        if candidate not in ids:
            return candidate, "from its input's digest (the ids follow no numbered pattern)"
    raise UsageError("cannot make a new id", where="--id", hint="give one with --id")


def failed_attempt(
    run: Run,
    rows: Dataset,
    row_id: str,
    *,
    attempt: int | None,
    expected: str | None,
    where: str,
) -> FailedAttempt:
    """The input row ``row_id`` of ``run`` was measured on, from ``rows`` (its dataset).

    ``attempt`` names the failing attempt; it must not have answered ``expected``.
    """
    records = {r.id: r for r in run.rows}
    recorded = records.get(row_id)
    if recorded is None:
        raise UsageError(
            f"the run has no row {row_id!r}",
            where=where,
            hint=f"name one of its {len(records)} row ids with --row",
        )
    source = rows.by_id().get(row_id)
    if source is None:
        raise UsageError(
            f"{rows.source} has no row {row_id!r}",
            where="--rows",
            hint="pass the dataset the run was recorded over (it holds the inputs)",
        )
    if source.input_digest != recorded.input_digest:
        raise UsageError(
            f"row {row_id!r} of {rows.source} has another input than the run measured "
            "(its input digest differs)",
            where=f"{rows.source}:{source.line}",
            hint="pass the dataset the run was recorded over",
        )
    attempts = run.attempts_by_row().get(row_id, ())
    scoring = run.settings.scoring
    if attempt is None:
        return FailedAttempt(source.input, _answers(attempts))
    chosen = next((a for a in attempts if a.number == attempt), None)
    if chosen is None:
        numbers = ", ".join(str(a.number) for a in attempts) or "none"
        raise UsageError(
            f"row {row_id!r} has no attempt {attempt} in the run (its attempts: {numbers})",
            where="--attempt",
            hint="name one of its attempts, or leave --attempt out",
        )
    if chosen.decision is not None and is_correct(chosen.decision, expected, scoring):
        raise UsageError(
            f"attempt {attempt} of row {row_id!r} answered {decision_text(chosen.decision)!r}, "
            "the expected decision: it is not a failure",
            where="--attempt",
            hint="name an attempt that answered otherwise, or check --expected",
        )
    return FailedAttempt(source.input, _answer(chosen))


def _answer(attempt: Attempt) -> str:
    if attempt.decision is not None:
        return decision_text(attempt.decision)
    return f"error: {attempt.error}"


def _answers(attempts: Sequence[Attempt]) -> str:
    counted = Counter(_answer(a) for a in attempts)
    return ", ".join(f"{answer} ×{n}" for answer, n in counted.most_common()) or "no attempt"


def _listed(labels: Sequence[str]) -> str:
    shown = [repr(label) for label in labels[:8]]
    return ", ".join(shown) + (f" and {len(labels) - 8} more" if len(labels) > 8 else "")
