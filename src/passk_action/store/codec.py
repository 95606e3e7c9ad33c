"""Runs, rows, attempts and usage to and from JSON, and the artifact's text layout.

The codec of the run artifact (schema ``schemas/run.schema.json``,
``schema_version`` first): ``*_to_json`` build the documents passk writes,
``*_from_json`` check one row, attempt or usage by hand (the same rules as
the schema, and the value rules of ``core/values.py``) and build it.
:func:`dump_run` lays a run out with one row and one attempt per line, so
a committed baseline diffs readably in a pull request and the fast reader
(``lines.py``) can take it line by line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..core import values
from ..core.model import (
    Attempt,
    ExpectedChecks,
    Phase,
    RowRecord,
    Run,
    Usage,
    Verdict,
    canonical_json,
    expected_json,
    is_object_text,
    object_text,
)
from ..core.shard import Shard
from ..errors import ArtifactError

SCHEMA_VERSION = 5
"""The version passk writes. 5 added an attempt's ``verdicts`` (what the scorer program
said of its answer) and the scoring's ``command``, ``judge_repeats`` and ``timeout_s``.
4 added the ``measure`` phase: a baseline's extra attempts at
its gated rows, which the relative gate rule reads. 3 added structured decisions and
expected objects (JSON objects), a row's ``expected_checks`` and an environment-scored row
without ``expected``, an attempt's ``answer``, ``correct`` and ``score``, and the scoring's
``fields``, ``extract``, ``checks``, ``by`` and ``threshold``. 2 added an attempt's
``usage`` and ``warnings``."""
OLDEST_READ_VERSION = 1
"""Versions 1 and 2 read as they are: their rows expect labels, their attempts hold
labels, and no attempt in a version 1 file has a usage."""
RUN_KIND = "passk-run"
DIGEST_PREFIX = "sha256:"

DURATION_DIGITS = 4
"""Attempt durations are stored and read to 0.1 ms."""


# --- attempts and rows --------------------------------------------------------


def decision_json(decision: str) -> Any:
    """A decision as artifacts write it: a structured one as its object, a label as itself."""
    return json.loads(decision) if is_object_text(decision) else decision


def attempt_to_json(attempt: Attempt) -> dict[str, Any]:
    out: dict[str, Any] = {"row": attempt.row_id, "n": attempt.number, "phase": attempt.phase.value}
    if attempt.decision is not None:
        out["decision"] = decision_json(attempt.decision)
    if attempt.checks:
        out["checks"] = dict(attempt.checks)
    if attempt.error is not None:
        out["error"] = attempt.error
    if attempt.detail:
        out["detail"] = attempt.detail
    if attempt.correct is not None:
        out["correct"] = attempt.correct
    out["duration_s"] = round(attempt.duration_s, DURATION_DIGITS)
    # After duration_s: the score, the answer and the usage differ in every attempt, so
    # they stay out of the "middle" the streaming reader learns once (see AttemptLines).
    if attempt.score is not None:
        out["score"] = attempt.score
    if attempt.answer is not None:
        out["answer"] = attempt.answer
    if attempt.usage is not None:
        out["usage"] = usage_to_json(attempt.usage)
    if attempt.warnings:
        out["warnings"] = list(attempt.warnings)
    if attempt.retries:
        out["retries"] = list(attempt.retries)
    if attempt.verdicts:
        out["verdicts"] = [verdict_to_json(v) for v in attempt.verdicts]
    return out


def verdict_to_json(verdict: Verdict) -> dict[str, Any]:
    """One scorer verdict: what it said (or why it said nothing), and how long it took."""
    out: dict[str, Any] = {}
    if verdict.correct is not None:
        out["correct"] = verdict.correct
    if verdict.score is not None:
        out["score"] = verdict.score
    if verdict.error is not None:
        out["error"] = verdict.error
    if verdict.detail:
        out["detail"] = verdict.detail
    if verdict.reason:
        out["reason"] = verdict.reason
    out["duration_s"] = round(verdict.duration_s, DURATION_DIGITS)
    return out


def verdicts_from_json(doc: Any, where: str) -> tuple[Verdict, ...]:
    """An attempt's recorded ``verdicts`` (the schema's ``verdict``), each checked."""
    if doc is None:
        return ()
    if not isinstance(doc, list) or not all(isinstance(v, dict) for v in doc):
        raise ArtifactError("'verdicts' must be a list of objects", where=where)
    out = []
    for item in doc:
        extra = item.keys() - _VERDICT_KEYS
        if extra:
            raise ArtifactError(f"unknown verdict field {sorted(extra)[0]!r}", where=where)
        correct, score = outcome_from_json(item, where)
        texts = []
        for key in ("error", "detail", "reason"):
            value = item.get(key)
            if value is not None and (not isinstance(value, str) or not value):
                raise ArtifactError(f"a verdict's '{key}' must be a non-empty string", where=where)
            texts.append(value)
        if texts[0] is None and correct is None and score is None:
            raise ArtifactError("a verdict has 'correct', 'score' or an 'error'", where=where)
        duration = values.seconds(item.get("duration_s", 0.0))
        if duration is None:
            raise ArtifactError(
                f"a verdict's 'duration_s' must be {values.SECONDS_TEXT}", where=where
            )
        out.append(Verdict(correct, score, texts[0], texts[1], texts[2], duration))
    return tuple(out)


_VERDICT_KEYS = frozenset({"correct", "score", "error", "detail", "reason", "duration_s"})


def usage_to_json(usage: Usage) -> dict[str, Any]:
    """The known keys first, then the extra counters by name."""
    out: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens", "cost_usd", "model"):
        value = getattr(usage, key)
        if value is not None:
            out[key] = value
    if usage.priced:
        out["priced"] = True
    for name, value in usage.extra:
        if name not in out and name != "priced":
            out[name] = int(value) if float(value).is_integer() and abs(value) < 2**53 else value
    return out


_USAGE_COUNTS = ("input_tokens", "output_tokens")


def usage_from_json(doc: Any, where: str) -> Usage:
    """Validate a recorded ``usage`` object (the schema's ``usage``) and build it.

    Token counts follow :func:`~passk_action.core.values.count`, the cost and
    every extra counter :func:`~passk_action.core.values.amount`.
    """
    if not isinstance(doc, dict):
        raise ArtifactError("'usage' must be an object", where=where)
    counts: list[int | None] = []
    for key in _USAGE_COUNTS:
        raw = doc.get(key, _ABSENT)
        number = None if raw is _ABSENT else values.count(raw)
        if raw is not _ABSENT and number is None:
            raise ArtifactError(f"'usage.{key}' must be {values.COUNT_TEXT}", where=where)
        counts.append(number)
    model, priced = doc.get("model"), doc.get("priced", False)
    if "model" in doc and (type(model) is not str or not model):
        raise ArtifactError("'usage.model' must be a non-empty string", where=where)
    if type(priced) is not bool:
        raise ArtifactError("'usage.priced' must be true or false", where=where)
    cost: float | None = None
    extra: list[tuple[str, float]] = []
    for key, value in doc.items():
        if key in _USAGE_NOT_AMOUNTS:
            continue
        spent = values.amount(value)
        if spent is None:
            raise ArtifactError(f"'usage.{key}' must be {values.AMOUNT_TEXT}", where=where)
        if key == "cost_usd":
            cost = spent
        else:
            extra.append((key, spent))
    return Usage(counts[0], counts[1], cost, model, priced, tuple(extra))


_ABSENT: Any = object()
_USAGE_NOT_AMOUNTS = frozenset({"input_tokens", "output_tokens", "model", "priced"})


ATTEMPT_KEYS = frozenset(
    {
        "row",
        "n",
        "phase",
        "decision",
        "checks",
        "error",
        "detail",
        "duration_s",
        "retries",
        "usage",
        "warnings",
        "answer",
        "correct",
        "score",
        "verdicts",
    }
)
PHASES = {p.value: p for p in Phase}


def decision_from_json(value: Any, key: str, where: str) -> str | None:
    """A recorded decision (or expected one): a non-empty string, or an object as its text."""
    if value is None:
        return None
    if isinstance(value, dict):
        try:
            return object_text(value)
        except (ValueError, RecursionError):
            raise ArtifactError(f"'{key}' cannot be read as a JSON object", where=where) from None
    if not isinstance(value, str) or not value:
        raise ArtifactError(f"'{key}' must be a non-empty string or an object", where=where)
    return value


def outcome_from_json(doc: Mapping[str, Any], where: str) -> tuple[bool | None, float | None]:
    """An attempt's optional ``correct`` (true or false) and ``score`` (a finite number)."""
    correct, score = doc.get("correct"), doc.get("score")
    if correct is not None and not isinstance(correct, bool):
        raise ArtifactError("'correct' must be true or false", where=where)
    number = None if score is None else values.finite(score)
    if score is not None and number is None:
        raise ArtifactError("'score' must be a finite number", where=where)
    return correct, number


def attempt_from_json(doc: Any, where: str) -> Attempt:
    """Validate one attempt object (same rules as the schema's ``attempt``) and build it."""
    if not isinstance(doc, dict):
        raise ArtifactError("an attempt must be a JSON object", where=where)
    extra = doc.keys() - ATTEMPT_KEYS
    if extra:
        raise ArtifactError(f"unknown attempt field {sorted(extra)[0]!r}", where=where)
    row, n, phase = doc.get("row"), doc.get("n"), doc.get("phase")
    if not isinstance(row, str) or not row:
        raise ArtifactError("'row' must be a non-empty string", where=where)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ArtifactError("'n' must be an integer >= 1", where=where)
    if not isinstance(phase, str) or phase not in PHASES:
        raise ArtifactError("'phase' must be 'main', 'confirm' or 'measure'", where=where)
    decision, error = doc.get("decision"), doc.get("error")
    if (decision is None) == (error is None):
        raise ArtifactError("an attempt has exactly one of 'decision' and 'error'", where=where)
    if error is not None and (not isinstance(error, str) or not error):
        raise ArtifactError("'error' must be a non-empty string", where=where)
    decision = decision_from_json(decision, "decision", where)
    correct, score = outcome_from_json(doc, where)
    answer = doc.get("answer")
    if answer is not None:
        try:
            canonical_json(answer)  # written back as it is read: JSON, no NaN
        except (ValueError, TypeError, RecursionError):
            raise ArtifactError(
                "'answer' must be a JSON value passk can store", where=where
            ) from None
    checks = doc.get("checks", {})
    if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
        raise ArtifactError("'checks' must be an object of strings", where=where)
    detail = doc.get("detail")
    if detail is not None and not isinstance(detail, str):
        raise ArtifactError("'detail' must be a string", where=where)
    detail = detail or None  # an empty detail is no detail: the writer omits it
    duration = values.seconds(doc.get("duration_s", 0.0))
    if duration is None:
        raise ArtifactError(f"'duration_s' must be {values.SECONDS_TEXT}", where=where)
    retries = doc.get("retries", [])
    if not isinstance(retries, list) or not all(isinstance(r, str) for r in retries):
        raise ArtifactError("'retries' must be a list of strings", where=where)
    warnings = doc.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise ArtifactError("'warnings' must be a list of strings", where=where)
    usage = doc.get("usage")
    return Attempt(
        row_id=row,
        number=n,
        phase=PHASES[phase],
        decision=decision,
        checks=tuple(checks.items()),
        error=error,
        detail=detail,
        # Stored to 0.1 ms (attempt_to_json); read the same way so a run reads
        # back equal to itself after it is written again.
        duration_s=round(duration, DURATION_DIGITS),
        retries=tuple(retries),
        usage=None if usage is None else usage_from_json(usage, where),
        warnings=tuple(warnings),
        answer=answer,
        correct=correct,
        score=score,
        verdicts=verdicts_from_json(doc.get("verdicts"), where),
    )


def expected_to_json(row: RowRecord) -> dict[str, Any]:
    """A row's ``expected`` (absent for a task its environment scores) and ``expected_checks``."""
    out: dict[str, Any] = {}
    if row.expected is not None:
        out["expected"] = expected_json(row.expected)
    if row.expected_checks:
        out["expected_checks"] = dict(row.expected_checks)
    return out


def row_to_json(row: RowRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id,
        "input_digest": row.input_digest,
        **expected_to_json(row),
        "must_not_break": row.must_not_break,
    }
    if row.tags:
        out["tags"] = list(row.tags)
    if row.cluster is not None:
        out["cluster"] = row.cluster
    return out


ROW_KEYS = frozenset(
    {"id", "input_digest", "expected", "expected_checks", "must_not_break", "tags", "cluster"}
)


def expected_from_json(doc: Mapping[str, Any], where: str) -> tuple[str | None, ExpectedChecks]:
    """A recorded row's ``expected`` (a label, an object, or absent) and ``expected_checks``."""
    expected = decision_from_json(doc.get("expected"), "expected", where)
    checks = doc.get("expected_checks", {})
    if not isinstance(checks, dict) or any(not k or v is None for k, v in checks.items()):
        raise ArtifactError(
            "'expected_checks' must be an object of check names and values", where=where
        )
    for name, value in checks.items():
        try:
            canonical_json(value)  # written back as read, and digested: JSON, no NaN
        except (ValueError, TypeError, RecursionError):
            raise ArtifactError(
                f"'expected_checks.{name}' must be a JSON value passk can store (no NaN or "
                "Infinity)",
                where=where,
            ) from None
    return expected, tuple(checks.items())


def row_from_json(doc: Any, where: str) -> RowRecord:
    if not isinstance(doc, dict):
        raise ArtifactError("a row must be a JSON object", where=where)
    extra = doc.keys() - ROW_KEYS
    if extra:
        raise ArtifactError(f"unknown row field {sorted(extra)[0]!r}", where=where)
    row_id, digest = doc.get("id"), doc.get("input_digest")
    mnb, tags = doc.get("must_not_break"), doc.get("tags", [])
    if not isinstance(row_id, str) or not row_id:
        raise ArtifactError("'id' must be a non-empty string", where=where)
    if not isinstance(digest, str) or not digest.startswith(DIGEST_PREFIX) or len(digest) != 71:
        raise ArtifactError("'input_digest' must be 'sha256:' and 64 hex digits", where=where)
    expected, expected_checks = expected_from_json(doc, where)
    if not isinstance(mnb, bool):
        raise ArtifactError("'must_not_break' must be true or false", where=where)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ArtifactError("'tags' must be a list of strings", where=where)
    return RowRecord(
        row_id,
        digest,
        expected,
        mnb,
        tuple(tags),
        cluster_from_json(doc, where),
        expected_checks,
    )


def cluster_from_json(doc: Mapping[str, Any], where: str) -> str | None:
    """A row's optional ``cluster``: a non-empty string, or absent (older artifacts)."""
    cluster = doc.get("cluster")
    if cluster is not None and (not isinstance(cluster, str) or not cluster):
        raise ArtifactError("'cluster' must be a non-empty string", where=where)
    return cluster


# --- whole runs ----------------------------------------------------------------


def header_to_json(run: Run) -> dict[str, Any]:
    """Everything but rows and attempts, ``schema_version`` first."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": RUN_KIND,
        "tool_version": run.tool_version,
        "created_at": run.created_at,
        "dataset_digest": run.dataset_digest,
        "settings": run.settings.to_json(),
        "agent": {
            "version": run.agent.version.value,
            "description": run.agent.description,
            "commit": run.agent.commit,
            # Optional, written only when known, so older readers and goldens hold.
            **({"dirty": True} if run.agent.dirty else {}),
            **(
                {"fingerprint": dict(run.agent.fingerprint)}
                if run.agent.fingerprint is not None
                else {}
            ),
        },
        "ratchet": list(run.ratchet),
        **({"imported": run.imported.to_json()} if run.imported is not None else {}),
    }


def run_to_json(run: Run, shard: Shard | None = None) -> dict[str, Any]:
    """The artifact document; ``shard`` marks a run of one slice of the dataset."""
    doc = header_to_json(run)
    if shard is not None:
        doc["shard"] = shard.to_json()
    doc["rows"] = [row_to_json(r) for r in run.rows]
    doc["attempts"] = [attempt_to_json(a) for a in run.attempts]
    return doc


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dump_run(run: Run, shard: Shard | None = None) -> str:
    """The artifact text: pretty header, then one row / attempt per line.

    Attempts are written by :func:`attempt_line`: the same text as
    ``compact_json(attempt_to_json(a))``, three times faster on the plain
    attempts that make up most of a large run.
    """
    doc = header_to_json(run)
    if shard is not None:
        doc["shard"] = shard.to_json()
    doc["rows"] = [row_to_json(r) for r in run.rows]
    doc["attempts"] = []
    raw = None
    if run.attempts:
        strings: dict[str, str] = {}
        lines = ",\n    ".join(attempt_line(a, strings) for a in run.attempts)
        raw = {"attempts": f"[\n    {lines}\n  ]"}
    return dump_document(doc, line_lists=("rows",), raw=raw)


_PHASE_TEXT = {phase: json.dumps(phase.value) for phase in Phase}


def attempt_line(attempt: Attempt, strings: dict[str, str]) -> str:
    """``compact_json(attempt_to_json(attempt))``, built by hand when the attempt is plain.

    Plain: no checks, retries, detail, usage, warnings, answer or score, a label (not
    an object's text) and a finite duration; ``correct`` may be set (every imported
    trial carries the harness's grade).  ``strings``
    caches the JSON text of row ids and decisions, which repeat k times and
    more.  Anything else takes the general way; a test holds both to the
    same text.
    """
    duration = attempt.duration_s
    if (
        attempt.checks
        or attempt.retries
        or attempt.detail
        or attempt.usage is not None
        or attempt.warnings
        or attempt.answer is not None
        or attempt.score is not None
        or attempt.verdicts
        or not math.isfinite(duration)
        or (attempt.decision is not None and attempt.decision.startswith("{"))
    ):
        return compact_json(attempt_to_json(attempt))
    row = strings.get(attempt.row_id)
    if row is None:
        row = strings[attempt.row_id] = json.dumps(attempt.row_id, ensure_ascii=False)
    text = f'{{"row":{row},"n":{attempt.number},"phase":{_PHASE_TEXT[attempt.phase]}'
    for name, value in (("decision", attempt.decision), ("error", attempt.error)):
        if value is not None:
            encoded = strings.get(value)
            if encoded is None:
                encoded = strings[value] = json.dumps(value, ensure_ascii=False)
            text += f',"{name}":{encoded}'
    if attempt.correct is not None:
        text += ',"correct":true' if attempt.correct else ',"correct":false'
    return f'{text},"duration_s":{round(duration, DURATION_DIGITS)!r}}}'


def dump_document(
    doc: Mapping[str, Any], line_lists: Iterable[str], raw: Mapping[str, str] | None = None
) -> str:
    """JSON with the named top-level lists written one item per line.

    ``raw`` maps keys to already-formatted JSON text (for nested documents).
    """
    listed = set(line_lists)
    parts = []
    for key, value in doc.items():
        if raw and key in raw:
            parts.append(f"  {json.dumps(key)}: {raw[key]}")
        elif key in listed and isinstance(value, list) and value:
            items = ",\n".join("    " + compact_json(item) for item in value)
            parts.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {json.dumps(key)}: {compact_json(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"
