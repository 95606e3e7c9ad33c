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

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import IO, Any

import jsonschema

from .core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowRecord,
    Run,
    Scoring,
    Version,
)
from .core.shard import Shard
from .errors import ArtifactError, UsageError

SCHEMA_VERSION = 1
RUN_KIND = "passk-run"
_DIGEST_PREFIX = "sha256:"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in the package (``schemas/<name>``)."""
    text = resources.files("passk_action").joinpath("schemas", name).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


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
    out["duration_s"] = round(attempt.duration_s, 4)
    if attempt.retries:
        out["retries"] = list(attempt.retries)
    return out


_ATTEMPT_KEYS = frozenset(
    {"row", "n", "phase", "decision", "checks", "error", "detail", "duration_s", "retries"}
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
    return Attempt(
        row_id=row,
        number=n,
        phase=_PHASES[phase],
        decision=decision,
        checks=tuple(checks.items()),
        error=error,
        detail=detail,
        duration_s=float(duration),
        retries=tuple(retries),
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
    return out


_ROW_KEYS = frozenset({"id", "input_digest", "expected", "must_not_break", "tags"})


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
    return RowRecord(row_id, digest, expected, mnb, tuple(tags))


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
        },
        "ratchet": list(run.ratchet),
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
    """The artifact text: pretty header, then one row / attempt per line."""
    return dump_document(run_to_json(run, shard), line_lists=("rows", "attempts"))


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
    if version < SCHEMA_VERSION:
        raise ArtifactError(
            f"schema_version {version} is older than this passk reads ({SCHEMA_VERSION})",
            where=where,
            hint="record the run again, e.g. with `passk baseline`",
        )


# jsonschema counts 2.0 as an "integer" (it is one, mathematically); passk then
# builds k=2.0, which breaks C(c, k) in the statistics.  JSON integers only.
_StrictValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
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
    light = {k: ([] if k in big_lists else v) for k, v in doc.items()}
    validator = _StrictValidator(load_schema(schema_name))
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
    _check_consistency(rows, attempts, where)
    agent = doc["agent"]
    return Run(
        tool_version=doc["tool_version"],
        dataset_digest=doc["dataset_digest"],
        settings=_settings_from_json(doc["settings"]),
        agent=AgentInfo(Version(agent["version"]), agent["description"], agent.get("commit")),
        created_at=doc["created_at"],
        rows=rows,
        attempts=attempts,
        ratchet=tuple(doc["ratchet"]),
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


def parse_json_file(path: Path) -> Any:
    """Read and parse a JSON file, translating every failure to an ArtifactError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError("file not found", where=str(path), hint="check the path") from None
    except OSError as exc:
        raise ArtifactError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArtifactError(
            f"not UTF-8 (byte {exc.start})", where=str(path), hint="passk writes UTF-8 JSON"
        ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            f"invalid JSON: {exc.msg}", where=f"{path}:{exc.lineno}", hint="restore the file"
        ) from exc
    except RecursionError as exc:
        raise ArtifactError("JSON nested too deeply", where=str(path)) from exc


def read_run(path: Path) -> Run:
    return run_from_json(parse_json_file(path), str(path))


def _file_mode() -> int:
    """The mode a plain ``open()`` would give a new file (mkstemp uses 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, fsync, rename: a reader never sees half a file."""
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

    @classmethod
    def create(cls, path: Path, header: Run) -> Journal:
        """Start a new journal (replacing any old one) with the run's header line."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("w", encoding="utf-8", newline="\n")
        handle.write(_journal_header_line(header))
        journal = cls(path, handle)
        journal._sync()
        return journal

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
        return cls(path, path.open("a", encoding="utf-8", newline="\n"))

    def append(self, attempt: Attempt) -> None:
        self._handle.write(compact_json(attempt_to_json(attempt)) + "\n")
        self._sync()

    def _sync(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
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
