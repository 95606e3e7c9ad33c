"""The artifact store: run artifacts on disk, and the crash-safe journal behind them.

A run artifact is one JSON document (schema ``schemas/run.schema.json``,
``schema_version`` first) written atomically, with one row and one attempt
per line so a committed baseline diffs readably in a pull request.

While a run is in progress its attempts go to a *journal* next to the
artifact (``<artifact>.journal.jsonl``): a header line, then one attempt per
line, each flushed and fsync'd as it completes, so a run killed at any moment
loses at most the attempts in flight and can be resumed.

Reading validates the document once: the header against the JSON Schema with
jsonschema, the (possibly hundreds of thousands of) rows and attempts with a
hand-written check of the same rules, because jsonschema is ~100x slower.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from ..core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    ImportInfo,
    Phase,
    RowRecord,
    Run,
    Scoring,
    Usage,
    Version,
)
from ..core.shard import Shard
from ..errors import ArtifactError, UsageError

if TYPE_CHECKING:
    import jsonschema

SCHEMA_VERSION = 2
"""The version passk writes.  2 added an attempt's ``usage`` and ``warnings``."""
OLDEST_READ_VERSION = 1
"""Version 1 files read as they are: no attempt in them has a usage."""
RUN_KIND = "passk-run"
_DIGEST_PREFIX = "sha256:"
_T = TypeVar("_T")


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in the package (``schemas/<name>``)."""
    text = resources.files("passk_action").joinpath("schemas", name).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


DURATION_DIGITS = 4
"""Attempt durations are stored and read to 0.1 ms."""


def schema_error_text(error: jsonschema.ValidationError) -> str:
    """One line naming the JSON path of a schema violation and what is wrong."""
    path = error.json_path.removeprefix("$").removeprefix(".") or "(top level)"
    return f"{path}: {error.message}"


# --- attempts and rows --------------------------------------------------------


def attempt_to_json(attempt: Attempt) -> dict[str, Any]:
    out: dict[str, Any] = {"row": attempt.row_id, "n": attempt.number, "phase": attempt.phase.value}
    if attempt.decision is not None:
        out["decision"] = attempt.decision
    if attempt.checks:
        out["checks"] = dict(attempt.checks)
    if attempt.error is not None:
        out["error"] = attempt.error
    if attempt.detail:
        out["detail"] = attempt.detail
    out["duration_s"] = round(attempt.duration_s, DURATION_DIGITS)
    # After duration_s: the usage differs in every attempt, so it stays out of
    # the "middle" the streaming reader learns once (see AttemptLines).
    if attempt.usage is not None:
        out["usage"] = usage_to_json(attempt.usage)
    if attempt.warnings:
        out["warnings"] = list(attempt.warnings)
    if attempt.retries:
        out["retries"] = list(attempt.retries)
    return out


_USAGE_NAMED = ("input_tokens", "output_tokens", "cost_usd", "model", "priced")


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


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_amount(value: Any) -> bool:
    return type(value) in (int, float) and 0 <= value < math.inf


_USAGE_PLAIN = frozenset(_USAGE_NAMED)


def usage_from_json(doc: Any, where: str) -> Usage:
    """Validate a recorded ``usage`` object (the schema's ``usage``) and build it."""
    if type(doc) is dict and doc.keys() <= _USAGE_PLAIN:
        # The usual usage, no extra counters: plain type checks (read per attempt).
        tokens_in, tokens_out = doc.get("input_tokens"), doc.get("output_tokens")
        cost, model, priced = doc.get("cost_usd"), doc.get("model"), doc.get("priced", False)
        if (
            (tokens_in is None or (type(tokens_in) is int and tokens_in >= 0))
            and (tokens_out is None or (type(tokens_out) is int and tokens_out >= 0))
            and (cost is None or (type(cost) in (int, float) and 0 <= cost < math.inf))
            and (model is None or (type(model) is str and model))
            and type(priced) is bool
        ):
            cost = None if cost is None else float(cost)
            return Usage(tokens_in, tokens_out, cost, model, priced)
    if not isinstance(doc, dict):
        raise ArtifactError("'usage' must be an object", where=where)
    for key in ("input_tokens", "output_tokens"):
        if key in doc and not _is_count(doc[key]):
            raise ArtifactError(f"'usage.{key}' must be an integer >= 0", where=where)
    if "model" in doc and (not isinstance(doc["model"], str) or not doc["model"]):
        raise ArtifactError("'usage.model' must be a non-empty string", where=where)
    if "priced" in doc and not isinstance(doc["priced"], bool):
        raise ArtifactError("'usage.priced' must be true or false", where=where)
    for key, value in doc.items():
        if key not in ("input_tokens", "output_tokens", "model", "priced") and not _is_amount(
            value
        ):
            raise ArtifactError(f"'usage.{key}' must be a finite number >= 0", where=where)
    cost = doc.get("cost_usd")
    return Usage(
        input_tokens=doc.get("input_tokens"),
        output_tokens=doc.get("output_tokens"),
        cost_usd=None if cost is None else float(cost),
        model=doc.get("model"),
        priced=doc.get("priced", False),
        extra=tuple((k, float(v)) for k, v in doc.items() if k not in _USAGE_NAMED),
    )


_ATTEMPT_KEYS = frozenset(
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
    }
)
_PHASES = {p.value: p for p in Phase}


def attempt_from_json(doc: Any, where: str) -> Attempt:
    """Validate one attempt object (same rules as the schema's ``attempt``) and build it."""
    if not isinstance(doc, dict):
        raise ArtifactError("an attempt must be a JSON object", where=where)
    extra = doc.keys() - _ATTEMPT_KEYS
    if extra:
        raise ArtifactError(f"unknown attempt field {sorted(extra)[0]!r}", where=where)
    row, n, phase = doc.get("row"), doc.get("n"), doc.get("phase")
    if not isinstance(row, str) or not row:
        raise ArtifactError("'row' must be a non-empty string", where=where)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ArtifactError("'n' must be an integer >= 1", where=where)
    if not isinstance(phase, str) or phase not in _PHASES:
        raise ArtifactError("'phase' must be 'main' or 'confirm'", where=where)
    decision, error = doc.get("decision"), doc.get("error")
    if (decision is None) == (error is None):
        raise ArtifactError("an attempt has exactly one of 'decision' and 'error'", where=where)
    for key, value in (("decision", decision), ("error", error)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ArtifactError(f"'{key}' must be a non-empty string", where=where)
    checks = doc.get("checks", {})
    if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
        raise ArtifactError("'checks' must be an object of strings", where=where)
    detail = doc.get("detail")
    if detail is not None and not isinstance(detail, str):
        raise ArtifactError("'detail' must be a string", where=where)
    duration = doc.get("duration_s", 0.0)
    if (
        not isinstance(duration, (int, float))
        or isinstance(duration, bool)
        or not 0 <= duration < math.inf  # NaN fails too; neither could be written back
    ):
        raise ArtifactError("'duration_s' must be a finite number >= 0", where=where)
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
        phase=_PHASES[phase],
        decision=decision,
        checks=tuple(checks.items()),
        error=error,
        detail=detail,
        # Stored to 0.1 ms (attempt_to_json); read the same way so a run reads
        # back equal to itself after it is written again.
        duration_s=round(float(duration), DURATION_DIGITS),
        retries=tuple(retries),
        usage=None if usage is None else usage_from_json(usage, where),
        warnings=tuple(warnings),
    )


def row_to_json(row: RowRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id,
        "input_digest": row.input_digest,
        "expected": row.expected,
        "must_not_break": row.must_not_break,
    }
    if row.tags:
        out["tags"] = list(row.tags)
    if row.cluster is not None:
        out["cluster"] = row.cluster
    return out


_ROW_KEYS = frozenset({"id", "input_digest", "expected", "must_not_break", "tags", "cluster"})


def row_from_json(doc: Any, where: str) -> RowRecord:
    if not isinstance(doc, dict):
        raise ArtifactError("a row must be a JSON object", where=where)
    extra = doc.keys() - _ROW_KEYS
    if extra:
        raise ArtifactError(f"unknown row field {sorted(extra)[0]!r}", where=where)
    row_id, digest, expected = doc.get("id"), doc.get("input_digest"), doc.get("expected")
    mnb, tags = doc.get("must_not_break"), doc.get("tags", [])
    if not isinstance(row_id, str) or not row_id:
        raise ArtifactError("'id' must be a non-empty string", where=where)
    if not isinstance(digest, str) or not digest.startswith(_DIGEST_PREFIX) or len(digest) != 71:
        raise ArtifactError("'input_digest' must be 'sha256:' and 64 hex digits", where=where)
    if not isinstance(expected, str) or not expected:
        raise ArtifactError("'expected' must be a non-empty string", where=where)
    if not isinstance(mnb, bool):
        raise ArtifactError("'must_not_break' must be true or false", where=where)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ArtifactError("'tags' must be a list of strings", where=where)
    return RowRecord(row_id, digest, expected, mnb, tuple(tags), cluster_from_json(doc, where))


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

    Plain: no checks, retries, detail, usage or warnings, and a finite duration.  ``strings``
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
        or not math.isfinite(duration)
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


def _settings_from_json(doc: Mapping[str, Any]) -> EvalSettings:
    scoring = doc["scoring"]
    return EvalSettings(k=doc["k"], scoring=Scoring(normalize=tuple(scoring["normalize"])))


def _check_version(doc: Any, where: str, kind: str) -> None:
    if not isinstance(doc, dict):
        raise ArtifactError("not a passk artifact (the top level is not an object)", where=where)
    version = doc.get("schema_version")
    if doc.get("kind", kind) != kind:
        raise ArtifactError(
            f"this is a {doc.get('kind')!r} file, not a {kind!r}",
            where=where,
            hint="pass the right file",
        )
    if not isinstance(version, int) or isinstance(version, bool):
        raise ArtifactError(
            "missing or invalid 'schema_version'",
            where=where,
            hint="this file was not written by passk",
        )
    if version > SCHEMA_VERSION:
        raise ArtifactError(
            f"schema_version {version} is newer than this passk reads ({SCHEMA_VERSION})",
            where=where,
            hint="upgrade passk",
        )
    if version < OLDEST_READ_VERSION:
        raise ArtifactError(
            f"schema_version {version} is older than this passk reads ({OLDEST_READ_VERSION})",
            where=where,
            hint="record the run again, e.g. with `passk baseline`",
        )


@cache
def _strict_validator() -> Any:
    """Draft 2020-12, with JSON integers only.

    jsonschema counts 2.0 as an "integer" (it is one, mathematically); passk
    then builds k=2.0, which breaks C(c, k) in the statistics.  Built on
    first use: importing jsonschema costs a tenth of a second, which
    commands that never validate a header (``passk import``) need not pay.
    """
    import jsonschema

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
            "integer",
            lambda _checker, value: isinstance(value, int) and not isinstance(value, bool),
        ),
    )


def validate_header(
    doc: Mapping[str, Any],
    where: str,
    schema_name: str,
    big_lists: tuple[str, ...] = ("rows", "attempts"),
) -> None:
    """Validate everything but the big lists against the JSON Schema.

    The big lists are checked item by item by hand-written code instead
    (jsonschema would take minutes on a run of 100,000 rows).
    """
    import jsonschema

    light = {k: ([] if k in big_lists else v) for k, v in doc.items()}
    validator = _strict_validator()(load_schema(schema_name))
    error = jsonschema.exceptions.best_match(validator.iter_errors(light))
    if error is not None:
        raise ArtifactError(schema_error_text(error), where=where) from None


DAMAGED_HINT = "passk wrote this file: restore it (e.g. from git) or record the run again"


def with_hint(error: ArtifactError, hint: str) -> ArtifactError:
    """``error`` with a fix, when the check that raised it could not know the fix."""
    if error.hint is not None:
        return error
    return ArtifactError(error.message, where=error.where, hint=hint)


def run_from_json(doc: Any, where: str) -> Run:
    """Validate a run document and build the :class:`Run`."""
    try:
        return _run_from_json(doc, where)
    except ArtifactError as exc:
        raise with_hint(exc, DAMAGED_HINT) from exc.__cause__


def _run_from_json(doc: Any, where: str) -> Run:
    _check_version(doc, where, RUN_KIND)
    validate_header(doc, where, "run.schema.json")
    rows_doc, attempts_doc = doc.get("rows"), doc.get("attempts")
    if not isinstance(rows_doc, list) or not isinstance(attempts_doc, list):
        raise ArtifactError("'rows' and 'attempts' must be lists", where=where)
    rows = tuple(row_from_json(r, f"{where}: rows[{i}]") for i, r in enumerate(rows_doc))
    attempts = tuple(
        attempt_from_json(a, f"{where}: attempts[{i}]") for i, a in enumerate(attempts_doc)
    )
    return _assemble_run(doc, rows, attempts, where)


def _assemble_run(
    doc: Mapping[str, Any], rows: tuple[RowRecord, ...], attempts: tuple[Attempt, ...], where: str
) -> Run:
    """The :class:`Run` of a validated header and its validated rows and attempts."""
    _check_consistency(rows, attempts, where)
    agent = doc["agent"]
    return Run(
        tool_version=doc["tool_version"],
        dataset_digest=doc["dataset_digest"],
        settings=_settings_from_json(doc["settings"]),
        agent=AgentInfo(
            Version(agent["version"]),
            agent["description"],
            agent.get("commit"),
            dirty=bool(agent.get("dirty", False)),
            fingerprint=(
                tuple(sorted(agent["fingerprint"].items())) if "fingerprint" in agent else None
            ),
        ),
        created_at=doc["created_at"],
        rows=rows,
        attempts=attempts,
        ratchet=tuple(doc["ratchet"]),
        imported=_imported_from_json(doc.get("imported")),
    )


def _imported_from_json(doc: Any) -> ImportInfo | None:
    """The optional ``imported`` block (the schema checked its shape)."""
    if doc is None:
        return None
    return ImportInfo(
        source=doc["source"],
        errors=doc["errors"],
        convention=doc["convention"],
        left_out=tuple((str(k), int(v)) for k, v in doc.get("left_out", {}).items()),
    )


def shard_from_json(doc: Mapping[str, Any], where: str) -> Shard | None:
    """The optional ``shard`` of a run document that :func:`run_from_json` accepted.

    The schema checked the shape; this checks that the index is within the count.
    """
    raw = doc.get("shard")
    if raw is None:
        return None
    try:
        return Shard(raw["index"], raw["count"])
    except UsageError as exc:
        raise ArtifactError(
            f"shard {raw['index']}/{raw['count']} does not exist",
            where=f"{where}: shard",
            hint="the index must be between 1 and the count; record the shard again",
        ) from exc


def _check_consistency(
    rows: tuple[RowRecord, ...], attempts: tuple[Attempt, ...], where: str
) -> None:
    ids: set[str] = set()
    for row in rows:
        if row.id in ids:
            raise ArtifactError(f"row {row.id!r} appears twice", where=where)
        ids.add(row.id)
    seen: set[tuple[str, int]] = set()
    for attempt in attempts:
        if attempt.row_id not in ids:
            raise ArtifactError(f"attempt for unknown row {attempt.row_id!r}", where=where)
        key = (attempt.row_id, attempt.number)
        if key in seen:
            raise ArtifactError(
                f"attempt {attempt.number} of row {attempt.row_id!r} is recorded twice",
                where=where,
            )
        seen.add(key)


def parse_json_file(path: Path, *, expected: str | None = None) -> Any:
    """Read and parse a JSON file, translating every failure to an ArtifactError.

    ``expected`` describes what the file should be (e.g. "a tau-bench results
    JSON"); by default the hints speak of passk's own files.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError("file not found", where=str(path), hint="check the path") from None
    except OSError as exc:
        raise ArtifactError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    hint = f"pass {expected}" if expected else None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArtifactError(
            f"not UTF-8 (byte {exc.start})",
            where=str(path),
            hint=hint or "passk writes UTF-8 JSON",
        ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            f"invalid JSON: {exc.msg}",
            where=f"{path}:{exc.lineno}",
            hint=hint or "pass a file written by passk, or restore it from git",
        ) from exc
    except RecursionError as exc:
        raise ArtifactError("JSON nested too deeply", where=str(path), hint=hint) from exc


def read_run(path: Path) -> Run:
    """Read and validate a run artifact.

    Streams a file in our own layout (see :func:`stream_canonical`); any other
    layout, and every invalid file, goes through the whole-document path, so
    results and error messages are the same either way.
    """
    run = stream_canonical(path, _stream_run_document)
    return run if run is not None else run_from_json(parse_json_file(path), str(path))


# --- streaming reader of our own layout --------------------------------------
#
# ``json.load`` of a 100,000-row x k=5 result holds ~1.3 GiB of dicts before a
# single Attempt exists.  A file passk wrote has one row / attempt per line
# (:func:`dump_document`), so each line can be parsed, validated and turned
# into an Attempt on its own, and the dicts dropped at once.  The layout is
# checked strictly; anything unexpected (another tool re-indented the file,
# an invalid value, an odd field) raises NotCanonical and the caller reads the
# file again as a whole document, so an accepted file gives exactly what the
# whole-document path gives, and a bad file gets exactly its error message.


class NotCanonical(Exception):
    """Not in our layout, or something in it needs the whole-document path."""


_raw_decode = json.JSONDecoder().raw_decode
_JSON_SPACE = " \t\n\r"
_ABSENT: Any = object()

ItemSink = Callable[[Any, int], object]
"""Receives each item of a one-item-per-line list with its index."""
TextSink = Callable[[str, int, int], int]
"""Takes an item as text (line, start, index): where the item ends, or -1 to decline."""


def _decode_at(line: str, start: int) -> tuple[Any, int]:
    try:
        return _raw_decode(line, start)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        raise NotCanonical from None


def _comma_follows(line: str, end: int) -> bool:
    """Whether ``line`` continues with a comma after ``end``; nothing else may follow."""
    tail = line[end:]
    if tail == ",\n" or tail == ",":
        return True
    if tail == "\n" or tail == "":
        return False
    raise NotCanonical


class CanonicalLines:
    """The lines of an open text file, read once from the start."""

    def __init__(self, handle: IO[str]):
        self.handle = handle

    def take(self) -> str:
        line = self.handle.readline()
        if not line:
            raise NotCanonical  # the document ended early
        return line

    def expect(self, text: str) -> bool:
        """Take a closing line ``text`` (with an optional comma); whether a comma followed."""
        line = self.take()
        if not line.startswith(text):
            raise NotCanonical
        return _comma_follows(line, len(text))

    def finish(self) -> None:
        """Only JSON whitespace may follow the document (``json.loads`` allows no more)."""
        for line in self.handle:
            if line.strip(_JSON_SPACE):
                raise NotCanonical

    def member(self, pad: int) -> tuple[str, str, int]:
        """The next member line ``<pad spaces>"key": value``: key, line, value start."""
        line = self.take()
        if not line.startswith(" " * pad):
            raise NotCanonical
        key, end = _decode_at(line, pad)
        if not isinstance(key, str) or not line.startswith(": ", end):
            raise NotCanonical
        return key, line, end + 2

    def items(self, pad: int, sink: ItemSink, text_sink: TextSink | None = None) -> bool:
        """The items of a list opened by a member at ``pad``, one per line at ``pad + 2``.

        Each item goes to ``text_sink`` as text first, when there is one (-1:
        it declined), else it is decoded and goes to ``sink``.  Returns
        whether a comma follows the closing bracket (another member).
        """
        handle, item_pad = self.handle, pad + 2
        spaces, close = " " * item_pad, " " * pad + "]"
        index, last = 0, False
        for line in handle:
            if line.startswith(spaces):
                if last:
                    raise NotCanonical  # a missing comma: not JSON
                end = -1 if text_sink is None else text_sink(line, item_pad, index)
                if end < 0:
                    try:
                        item, end = _raw_decode(line, item_pad)
                    except (ValueError, RecursionError):
                        raise NotCanonical from None
                    sink(item, index)
                tail = line[end:]
                if tail == ",\n":
                    pass
                elif tail == "\n" or tail == "":
                    last = True
                else:
                    raise NotCanonical
                index += 1
            elif line.startswith(close) and (last or index == 0):
                return _comma_follows(line, len(close))
            else:
                raise NotCanonical
        raise NotCanonical


def stream_canonical(path: Path, read: Callable[[CanonicalLines, str], _T]) -> _T | None:
    """``read`` over the lines of ``path``; None when the whole-document path must decide.

    The cyclic garbage collector is paused meanwhile (see :func:`gc_paused`).
    """
    with gc_paused():
        try:
            with path.open(encoding="utf-8-sig") as handle:
                lines = CanonicalLines(handle)
                value = read(lines, str(path))
                lines.finish()
                return value
        except (NotCanonical, ArtifactError, OSError, UnicodeDecodeError):
            return None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, then restore it as it was.

    Reading and analysing a large artifact creates millions of objects, none
    of them garbage, and the collector would scan them all again and again
    (a third of the reading time).  Reference counting still frees
    everything dropped meanwhile.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Interner:
    """One copy of each repeated string and check list across everything read.

    Row ids repeat in every attempt of both runs, decisions and check names
    and values in nearly every attempt: sharing them keeps a large artifact
    small in memory, and makes comparisons of equal check lists cheap.
    """

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.checks: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
        self.tags: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.row_lines: dict[str, RowRecord] = {}

    def string(self, value: str) -> str:
        return self.strings.setdefault(value, value)

    def shared_attempt(self, attempt: Attempt, ids: Mapping[str, str]) -> Attempt:
        """``attempt`` (built the careful way) sharing its row id, decision and checks."""
        checks = self.checks.setdefault(attempt.checks, attempt.checks)
        decision = None if attempt.decision is None else self.string(attempt.decision)
        row_id = ids.get(attempt.row_id, attempt.row_id)
        return replace(attempt, row_id=row_id, decision=decision, checks=checks)

    def tag_tuple(self, tags: list[str]) -> tuple[str, ...]:
        key = tuple(tags)
        return self.tags.setdefault(key, tuple(self.string(t) for t in key))


def row_fast(doc: Any, interner: Interner) -> RowRecord | None:
    """:func:`row_from_json` for a row that is plainly valid; None for any doubt."""
    if type(doc) is not dict or not doc.keys() <= _ROW_KEYS:
        return None
    row_id, digest, expected = doc.get("id"), doc.get("input_digest"), doc.get("expected")
    mnb, tags = doc.get("must_not_break"), doc.get("tags", _ABSENT)
    cluster = doc.get("cluster")
    if type(row_id) is not str or not row_id or type(expected) is not str or not expected:
        return None
    if type(digest) is not str or len(digest) != 71 or not digest.startswith(_DIGEST_PREFIX):
        return None
    if type(mnb) is not bool or (cluster is not None and (type(cluster) is not str or not cluster)):
        return None
    if tags is _ABSENT:
        tag_tuple: tuple[str, ...] = ()
    elif type(tags) is list and all(type(t) is str for t in tags):
        tag_tuple = interner.tag_tuple(tags)
    else:
        return None
    string = interner.string
    shared = None if cluster is None else string(cluster)
    return RowRecord(string(row_id), string(digest), string(expected), mnb, tag_tuple, shared)


def attempt_fast(doc: Any, ids: Mapping[str, str], interner: Interner) -> Attempt | None:
    """:func:`attempt_from_json` for a plainly valid attempt of a known row; None for any doubt.

    Runs a million times for a large artifact, hence the plain type checks.
    """
    if type(doc) is not dict or not doc.keys() <= _FAST_ATTEMPT_KEYS:
        return None
    row, n, phase = doc.get("row"), doc.get("n"), doc.get("phase")
    if type(row) is not str or type(n) is not int or n < 1 or type(phase) is not str:
        return None
    row_id, phase_value = ids.get(row), _PHASES.get(phase)
    if row_id is None or phase_value is None:
        return None
    decision, error = doc.get("decision"), doc.get("error")
    strings = interner.strings
    if decision is not None:
        if error is not None or type(decision) is not str or not decision:
            return None
        decision = strings.setdefault(decision, decision)
    elif type(error) is not str or not error:
        return None
    else:
        error = strings.setdefault(error, error)
    checks = doc.get("checks", _ABSENT)
    if checks is _ABSENT:
        pairs: tuple[tuple[str, str], ...] = ()
    elif type(checks) is dict:
        key = tuple(checks.items())
        try:
            found = interner.checks.get(key)
        except TypeError:  # a list or object among the values: not hashable, not valid
            return None
        if found is None:
            if not all(type(v) is str for _, v in key):
                return None
            found = interner.checks[key] = tuple(
                (strings.setdefault(name, name), strings.setdefault(value, value))
                for name, value in key
            )
        pairs = found
    else:
        return None
    detail = doc.get("detail")
    if detail is not None and type(detail) is not str:
        return None
    duration = doc.get("duration_s", 0.0)
    if type(duration) is not float or not 0.0 <= duration < math.inf:
        return None  # ints (and a huge one float() cannot take) go the careful way
    duration = round(duration, DURATION_DIGITS)
    raw_usage = doc.get("usage")
    if raw_usage is None:
        return Attempt(row_id, n, phase_value, decision, pairs, error, detail, duration, ())
    try:
        usage = usage_from_json(raw_usage, "")
    except ArtifactError:
        return None
    return Attempt(row_id, n, phase_value, decision, pairs, error, detail, duration, (), usage)


_FAST_ATTEMPT_KEYS = _ATTEMPT_KEYS - {"retries", "warnings"}
_ATTEMPT_HEAD = re.compile(r'\{"row":"([^"\\\x00-\x1f]*)","n":([1-9][0-9]{0,17}),')
_ATTEMPT_TAIL = re.compile(
    r'"duration_s":(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+))\}'
)
_ATTEMPT_USAGE = re.compile(
    r'"duration_s":(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)),"usage":'
)
_DURATION = '"duration_s":'
_OWN_KEYS = frozenset({"row", "n", "duration_s", "usage"})
_MIDDLES_KEPT = 10_000


class AttemptLines:
    """Attempts read straight from the text of their lines, skipping the JSON decoder.

    :func:`attempt_to_json` writes ``{"row":R,"n":N,<middle>"duration_s":D}``,
    or ``...,"duration_s":D,"usage":U}`` when the attempt reported a usage.
    Only R, N, D and U differ from attempt to attempt; the middle (phase,
    decision, checks, error) takes a handful of distinct values in a run.  A
    line is taken when R is a plain string (no escape), N a positive integer,
    D a JSON float, U (decoded on its own) a valid usage object that ends the
    line, and the middle, decoded on its own as an object, is a valid
    attempt's remaining fields: JSON's grammar then makes the line decode to
    exactly those fields.  Each distinct middle is validated once, by
    :func:`attempt_fast`; every other line is declined, to be decoded.
    """

    def __init__(self, ids: Mapping[str, str], interner: Interner, out: list[Attempt]):
        self.ids, self.interner, self.out = ids, interner, out
        self.middles: dict[str, Attempt] = {}

    def __call__(self, line: str, start: int, index: int) -> int:
        head = _ATTEMPT_HEAD.match(line, start)
        if head is None:
            return -1
        row_id = self.ids.get(head.group(1))
        cut = line.rfind(_DURATION, head.end())
        if row_id is None or cut < 0:
            return -1
        usage: Usage | None = None
        tail = _ATTEMPT_TAIL.match(line, cut)
        if tail is not None:
            duration, end = float(tail.group(1)), tail.end()
        else:
            with_usage = _ATTEMPT_USAGE.match(line, cut)
            if with_usage is None:
                return -1
            duration, usage, end = float(with_usage.group(1)), *self._usage(line, with_usage.end())
            if usage is None:
                return -1
        if not 0.0 <= duration < math.inf:
            return -1
        duration = round(duration, DURATION_DIGITS)
        middle = line[head.end() : cut]
        model = self.middles.get(middle)
        if model is None:
            model = self._learn(middle)
            if model is None:
                return -1
        self.out.append(
            Attempt(row_id, int(head.group(2)), model.phase, model.decision, model.checks,
                    model.error, model.detail, duration, (), usage)
        )  # fmt: skip
        return end

    @staticmethod
    def _usage(line: str, start: int) -> tuple[Usage | None, int]:
        """The usage object at ``start`` and where the attempt ends; None to decline."""
        try:
            doc, end = _raw_decode(line, start)
        except (ValueError, RecursionError):
            return None, -1
        if type(doc) is not dict or not line.startswith("}", end):
            return None, -1
        try:
            return usage_from_json(doc, ""), end + 1
        except ArtifactError:
            return None, -1

    def _learn(self, middle: str) -> Attempt | None:
        """Validate a middle never seen before; remember it if it is an attempt's fields."""
        if not middle.endswith(","):
            return None
        try:
            fields = json.loads("{" + middle[:-1] + "}")
        except (ValueError, RecursionError):
            return None
        if not isinstance(fields, dict) or fields.keys() & _OWN_KEYS:
            return None  # a repeated key: json would keep the last one
        probe = {"row": next(iter(self.ids), ""), "n": 1, **fields, "duration_s": 0.0}
        model = attempt_fast(probe, self.ids, self.interner)
        if model is not None and len(self.middles) < _MIDDLES_KEPT:
            self.middles[middle] = model
        return model


@dataclass
class RunSections:
    """A run object read from its lines: the header (big lists empty), rows and attempts."""

    header: dict[str, Any]
    rows: list[RowRecord]
    attempts: list[Attempt]


def stream_run_members(
    lines: CanonicalLines, pad: int, where: str, interner: Interner
) -> RunSections:
    """The members of a run object whose keys sit at ``pad`` spaces, up to its closing line.

    Rows and attempts are validated as they are read (the careful check
    decides whenever the quick one doubts); any error raises NotCanonical.
    """
    header: dict[str, Any] = {}
    rows: list[RowRecord] = []
    attempts: list[Attempt] = []
    ids: dict[str, str] = {}

    def add_row(doc: Any, index: int) -> RowRecord:
        row = row_fast(doc, interner)
        if row is None:
            row = _careful(row_from_json, doc, f"{where}: rows[{index}]")
        rows.append(row)
        ids.setdefault(row.id, row.id)
        return row

    def add_row_line(line: str, start: int, index: int) -> int:
        """A row line seen verbatim in the other run is that run's row (the usual case)."""
        text = line[start:].rstrip("\n").removesuffix(",")
        row = interner.row_lines.get(text)
        if row is None:
            item, end = _decode_at(line, start)
            if end != start + len(text):
                raise NotCanonical
            interner.row_lines[text] = add_row(item, index)
        else:
            rows.append(row)
            ids.setdefault(row.id, row.id)
        return start + len(text)

    def add_attempt(doc: Any, index: int) -> None:
        attempt = attempt_fast(doc, ids, interner)
        if attempt is None:
            attempt = _careful(attempt_from_json, doc, f"{where}: attempts[{index}]")
            attempt = interner.shared_attempt(attempt, ids)
        attempts.append(attempt)

    attempt_lines = AttemptLines(ids, interner, attempts)

    more = True
    while more:
        key, line, start = lines.member(pad)
        if key in header:
            raise NotCanonical  # a repeated key: json keeps the last one; let it
        if line[start:] in ("[\n", "["):
            header[key] = []
            if key == "rows" and not attempts:
                more = lines.items(pad, add_row, add_row_line)
            elif key == "attempts":
                more = lines.items(pad, add_attempt, attempt_lines)
            else:
                raise NotCanonical
        else:
            header[key], end = _decode_at(line, start)
            more = _comma_follows(line, end)
            if key in ("rows", "attempts") and header[key] != []:
                raise NotCanonical
    return RunSections(header, rows, attempts)


def _careful(check: Callable[[Any, str], _T], doc: Any, where: str) -> _T:
    try:
        return check(doc, where)
    except ArtifactError:
        raise NotCanonical from None


def run_from_sections(sections: RunSections, where: str) -> Run:
    """The Run of streamed sections, with every check :func:`run_from_json` makes."""
    doc = sections.header
    _check_version(doc, where, RUN_KIND)
    validate_header(doc, where, "run.schema.json")
    if not isinstance(doc.get("rows"), list) or not isinstance(doc.get("attempts"), list):
        raise NotCanonical
    return _assemble_run(doc, tuple(sections.rows), tuple(sections.attempts), where)


def _stream_run_document(lines: CanonicalLines, where: str) -> Run:
    if lines.take() != "{\n":
        raise NotCanonical
    sections = stream_run_members(lines, 2, where, Interner())
    if lines.expect("}"):
        raise NotCanonical
    return run_from_sections(sections, where)


def _file_mode() -> int:
    """The mode a plain ``open()`` would give a new file (mkstemp uses 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Translate a failure to write ``path`` (missing folder, no space, read-only)."""
    try:
        yield
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        raise ArtifactError(
            f"cannot write: {exc.strerror or exc}",
            where=str(path),
            hint="free some space and try again" if full else "choose a path in a writable folder",
        ) from exc


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, fsync, rename: a reader never sees half a file."""
    with writing(path):
        _write_text_atomic(path, text)


def _write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), _file_mode())
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(run: Run, path: Path, shard: Shard | None = None) -> None:
    write_text_atomic(path, dump_run(run, shard))


# --- the journal ---------------------------------------------------------------


def journal_path(artifact: Path) -> Path:
    return artifact.with_name(artifact.name + ".journal.jsonl")


@dataclass(frozen=True)
class JournalContents:
    header: Run
    """The run as the journal's header line describes it, with no attempts."""
    attempts: tuple[Attempt, ...]
    warnings: tuple[str, ...]


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

    @classmethod
    def create(cls, path: Path, header: Run) -> Journal:
        """Start a new journal (replacing any old one) with the run's header line.

        The header is written atomically: a disk that fills up here leaves no
        journal with half a header, which no resume could read.
        """
        write_text_atomic(path, _journal_header_line(header))
        return cls.reopen(path)

    @classmethod
    def rewrite(cls, path: Path, header: Run, attempts: Iterable[Attempt]) -> Journal:
        """Replace a journal by ``header`` and ``attempts`` at once, then append to it.

        Atomic (temporary file, fsync, rename): a resumed run killed while the
        journal is rewritten still finds every attempt recorded before.
        """
        lines = [_journal_header_line(header)]
        lines.extend(compact_json(attempt_to_json(a)) + "\n" for a in attempts)
        write_text_atomic(path, "".join(lines))
        return cls.reopen(path)

    @classmethod
    def reopen(cls, path: Path) -> Journal:
        """Continue appending to an existing journal (after :func:`read_journal`)."""
        with writing(path):
            return cls(path, path.open("a", encoding="utf-8", newline="\n"))

    def append(self, attempt: Attempt) -> None:
        try:
            with writing(self.path):
                self._handle.write(compact_json(attempt_to_json(attempt)) + "\n")
                self._sync()
        except ArtifactError:
            # Part of the line may be on disk: a resume drops it as a torn last
            # line.  Nothing more is appended after it.
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


def _journal_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines, start=1):
        if line or number - 1 != last:
            yield number, line, number - 1 == last


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
    try:
        lines = list(_journal_lines(path))
    except OSError as exc:
        raise ArtifactError(f"cannot read journal: {exc.strerror}", where=str(path)) from exc
    if not lines:
        raise ArtifactError("journal is empty", where=str(path), hint="start the run anew")
    for number, raw, is_last in lines:
        where = f"{path}:{number}"
        try:
            doc = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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
        attempts.append(attempt_from_json(doc, where))
    assert header is not None
    _check_consistency(header.rows, tuple(attempts), str(path))
    return JournalContents(header=header, attempts=tuple(attempts), warnings=tuple(warnings))
