"""The whole-document reader of a run: version, schema, rows, attempts and what ties them.

:func:`run_from_json` validates a decoded run document once: the header
against the JSON Schema with jsonschema, the (possibly hundreds of
thousands of) rows and attempts with the codec's hand-written check of the
same rules, because jsonschema is ~100x slower; then that every attempt
names a known row once, and that ``settings.k`` is no larger than what the
file holds.  The fast reader (``lines.py``) ends in the same checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace as dataclass_replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..core import values
from ..core.model import (
    BY_ENVIRONMENT,
    BY_EXPECTED,
    CHECKS_REPORTED,
    DEFAULT_SCORER_TIMEOUT_S,
    DEFAULT_THRESHOLD,
    AgentInfo,
    Attempt,
    EvalSettings,
    Extractor,
    FieldRule,
    ImportInfo,
    Phase,
    RowRecord,
    Run,
    Scoring,
    Version,
)
from ..core.scoring import FAILURE, SUCCESS
from ..core.shard import Shard
from ..errors import ArtifactError, UsageError
from .codec import (
    OLDEST_READ_VERSION,
    RUN_KIND,
    SCHEMA_VERSION,
    attempt_from_json,
    row_from_json,
)

if TYPE_CHECKING:
    import jsonschema

K_WITHOUT_ATTEMPTS = 1000
"""The largest k a run may declare beyond what its rows hold: the config's maximum.

A larger k needs a row with that many main attempts (an import of that
many trials): a file that declares k = 10^12 over three attempts is not a
run, and computing its pass^j curve up to k would never end.
"""


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


def settings_from_json(doc: Mapping[str, Any], where: str) -> EvalSettings:
    """The settings of a header the schema accepted (older versions have only ``normalize``)."""
    return EvalSettings(k=doc["k"], scoring=scoring_from_json(doc["scoring"], where))


def scoring_from_json(doc: Mapping[str, Any], where: str) -> Scoring:
    """The scoring rules a run recorded, as :meth:`Scoring.to_json` wrote them.

    The schema checked the shape; tolerances and the threshold follow the
    value rules of ``core/values.py``, as the config's do.
    """
    extract = doc.get("extract")
    threshold = _ruled(doc, "threshold", values.finite, where)
    return Scoring(
        normalize=tuple(doc["normalize"]),
        fields=tuple(
            FieldRule(
                name,
                compare=rule["compare"],
                normalize=tuple(rule["normalize"]) if "normalize" in rule else None,
                tolerance=_ruled(rule, "tolerance", values.tolerance, f"{where}.{name}"),
                relative_tolerance=_ruled(
                    rule, "relative_tolerance", values.relative_tolerance, f"{where}.{name}"
                ),
            )
            for name, rule in doc.get("fields", {}).items()
        ),
        extract=None if extract is None else Extractor(**extract),
        checks=doc.get("checks", CHECKS_REPORTED),
        by=doc.get("by", BY_EXPECTED),
        threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
        command=tuple(doc.get("command", ())),
        judge_repeats=int(doc.get("judge_repeats", 1)),
        timeout_s=float(doc.get("timeout_s", DEFAULT_SCORER_TIMEOUT_S)),
    )


def _ruled(
    doc: Mapping[str, Any], key: str, rule: Callable[[object], float | None], where: str
) -> float | None:
    if key not in doc:
        return None
    number = rule(doc[key])
    if number is None:
        raise ArtifactError(f"'{key}' is {doc[key]!r}, out of its range", where=where)
    return number


def check_version(doc: Any, where: str, kind: str, newest: int = SCHEMA_VERSION) -> None:
    """The document is a ``kind`` whose version this passk reads (up to ``newest``)."""
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
    if version > newest:
        raise ArtifactError(
            f"schema_version {version} is newer than this passk reads ({newest})",
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
    check_version(doc, where, RUN_KIND)
    validate_header(doc, where, "run.schema.json")
    rows_doc, attempts_doc = doc.get("rows"), doc.get("attempts")
    if not isinstance(rows_doc, list) or not isinstance(attempts_doc, list):
        raise ArtifactError("'rows' and 'attempts' must be lists", where=where)
    rows = tuple(row_from_json(r, f"{where}: rows[{i}]") for i, r in enumerate(rows_doc))
    attempts = tuple(
        attempt_from_json(a, f"{where}: attempts[{i}]") for i, a in enumerate(attempts_doc)
    )
    return assemble_run(doc, rows, attempts, where)


def assemble_run(
    doc: Mapping[str, Any], rows: tuple[RowRecord, ...], attempts: tuple[Attempt, ...], where: str
) -> Run:
    """The :class:`Run` of a validated header and its validated rows and attempts."""
    most = check_consistency(rows, attempts, where)
    k = doc["settings"]["k"]
    if k > max(most, K_WITHOUT_ATTEMPTS):
        raise ArtifactError(
            f"is {k}, more than {K_WITHOUT_ATTEMPTS} and more than the {most} main attempts "
            "of the row with the most",
            where=f"{where}: settings.k",
            hint="k is the attempts per row the run was recorded with; record it again",
        )
    agent = doc["agent"]
    run = Run(
        tool_version=doc["tool_version"],
        dataset_digest=doc["dataset_digest"],
        settings=settings_from_json(doc["settings"], f"{where}: settings.scoring"),
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
    if doc["schema_version"] < LEGACY_IMPORTS_BEFORE and run.imported is not None:
        return graded_by_harness(run)
    return run


LEGACY_IMPORTS_BEFORE = 3
"""Runs ``passk import`` made before this version recorded a harness's grade as a label."""
LEGACY_PASS, LEGACY_FAIL = "pass", "fail"


def graded_by_harness(run: Run) -> Run:
    """An import recorded before version 3, as the environment-scored run it stands for.

    Those runs made up a label: every row expected ``"pass"`` and each trial
    decided ``"pass"`` or ``"fail"``.  Read now, each trial reports its grade
    (``correct``) and the rows expect nothing (``scoring.by: environment``):
    the same three numbers, comparable with a run imported today.  A run
    whose rows expect anything else is read as it is.
    """
    scoring = run.settings.scoring
    if scoring != Scoring() or any(r.expected != LEGACY_PASS for r in run.rows):
        return run
    graded = {LEGACY_PASS: (SUCCESS, True), LEGACY_FAIL: (FAILURE, False)}
    attempts = []
    for attempt in run.attempts:
        decision, correct = graded.get(attempt.decision or "", (None, None))
        if attempt.decision is not None and decision is None:
            return run  # a decision no import made: not one of its runs
        if decision is not None:
            attempt = dataclass_replace(attempt, decision=decision, correct=correct)
        attempts.append(attempt)
    return dataclass_replace(
        run,
        settings=dataclass_replace(run.settings, scoring=Scoring(by=BY_ENVIRONMENT)),
        rows=tuple(dataclass_replace(r, expected=None) for r in run.rows),
        attempts=tuple(attempts),
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


def check_consistency(
    rows: tuple[RowRecord, ...], attempts: tuple[Attempt, ...], where: str
) -> int:
    """Check that row ids are unique and each attempt is of a known row, once.

    Returns the most main attempts any row has (what bounds ``k``).
    """
    ids: set[str] = set()
    for row in rows:
        if row.id in ids:
            raise ArtifactError(f"row {row.id!r} appears twice", where=where)
        ids.add(row.id)
    seen: set[tuple[str, int]] = set()
    main: dict[str, int] = {}
    main_phase = Phase.MAIN  # an enum member looked up once, not per attempt
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
        if attempt.phase is main_phase:
            main[attempt.row_id] = main.get(attempt.row_id, 0) + 1
    return max(main.values(), default=0)
