"""Result files: what ``passk compare`` writes and ``passk gate`` audits.

A result holds both runs with every attempt, so the gate can be recomputed
from it alone.  Reading a result never trusts its recorded comparison or
gate: both are derived again from the attempts through the same function
``passk compare`` used (:func:`passk_action.core.result.evaluate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import values
from ..core.diff import RowComparison
from ..core.gate import GateDecision, GateFailure, GatePolicy, ProtectedChange, Rule
from ..core.kinds import kind_from_json, kind_to_json
from ..core.model import RowRecord, Run
from ..core.notes import NOTE_KINDS, Note, Written
from ..core.protected import Change, WrittenChange
from ..core.reasons import (
    REASON_KINDS,
    WARNING_KINDS,
    GateWarning,
    Reason,
    WrittenReason,
    WrittenWarning,
)
from ..core.relative import FIRST_DESIGN, first_design
from ..core.result import CompareResult, Executions, evaluate
from ..core.sequential import SPRT, STRICT, RowVerdict, RuleSettings
from ..errors import ArtifactError
from .atomic import write_text_atomic
from .codec import (
    cluster_from_json,
    compact_json,
    dump_document,
    expected_from_json,
    expected_to_json,
    run_to_json,
)
from .document import DAMAGED_HINT, check_version, run_from_json, validate_header, with_hint
from .jsonfile import parse_json_file
from .lines import (
    CanonicalLines,
    Interner,
    NotCanonical,
    RunSections,
    comma_follows,
    decode_at,
    run_from_sections,
    stream_canonical,
    stream_run_members,
)

RESULT_KIND = "passk-result"
RESULT_SCHEMA_VERSION = 7
"""The result version passk writes. 7 stores notes, warnings and the gate's failure reasons and
warnings as data (``{"kind": ..., fields...}``, ``core/kinds.py``) where 6 and older kept
sentences (read back as words: ``Written``). 6 added the relative rule's second design
(``policy.rule``'s ``screen_cap``, ``pair_z`` and ``direct_below``): a result of 5 lacks them,
was decided by the first, and is audited with it (``core/relative.first_design``). 5 added the
relative rule (``policy.rule`` with its settings, a verdict's ``pairs``) and runs of version 4;
a result of 3 or 4 names the rule it was decided by (``sequential`` or ``strict``), and is
audited with it. 4 lets a row's ``expected`` be a structured decision, carry ``expected_checks``
or be absent (a task its environment scores), beside version-3 runs; 3 added the gated-row rule
(``policy.rule``) and each gated row's ``verdict``; results of 1 and 2 were decided by what is
now ``gate.rule: strict`` and are audited with it. Run artifacts keep their own version
(``store/artifact.py``). ``policy.rule``'s ``screen`` came within 7: a result without it
was decided by the SPRT screen, and is audited with it."""
SECOND_DESIGN = 6
"""The first result version whose relative rule is the second design."""
LEGACY_RULE = RuleSettings(rule=STRICT)
"""The rule an older result (schema 1 or 2) was decided by."""


def comparison_row_to_json(
    record: RowRecord, row: RowComparison, verdict: RowVerdict | None = None
) -> dict[str, Any]:
    divergent = row.first_divergent_check
    return {
        "id": row.id,
        "input_digest": record.input_digest,
        **expected_to_json(record),
        "must_not_break": row.must_not_break,
        "tags": list(record.tags),
        **({"cluster": record.cluster} if record.cluster is not None else {}),
        "in_ratchet": row.in_ratchet,
        "baseline_class": row.baseline_class.value,
        "candidate_class": row.candidate_class.value,
        "change": row.change.value,
        "confirmation": row.confirmation.value if row.confirmation else None,
        "baseline_final_class": row.baseline_final_class.value,
        "candidate_final_class": row.candidate_final_class.value,
        "first_divergent_check": divergent.to_json() if divergent else None,
        "check_flips": {
            "baseline": list(row.baseline_check_flips),
            "candidate": list(row.candidate_check_flips),
        },
        **({"verdict": verdict.to_json()} if verdict is not None else {}),
    }


def result_to_json(result: CompareResult) -> dict[str, Any]:
    comparison = result.comparison
    records = {r.id: r for r in result.rows}
    verdicts = result.gate.verdicts
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "kind": RESULT_KIND,
        "tool_version": result.tool_version,
        "created_at": result.created_at,
        "dataset_digest": result.candidate.dataset_digest,
        "settings": result.candidate.settings.to_json(),
        "gate": result.gate.to_json(),
        "policy": result.policy.to_json(),
        "ratchet": sorted(result.ratchet),
        "protected_changes": [c.to_json() for c in result.protected_changes],
        "protected_changes_allowed": result.protected_changes_allowed,
        "baseline": {
            "metrics": comparison.baseline_metrics.to_json(),
            "run": run_to_json(result.baseline),
        },
        "candidate": {
            "metrics": comparison.candidate_metrics.to_json(),
            "run": run_to_json(result.candidate),
        },
        "gained": list(comparison.gained),
        "lost": list(comparison.lost),
        "rows": [
            comparison_row_to_json(records[r.id], r, verdicts.get(r.id)) for r in comparison.rows
        ],
        "notes": [kind_to_json(note) for note in result.notes],
        # Optional (older result files have none), written only when there are some.
        **({"warnings": [kind_to_json(w) for w in result.warnings]} if result.warnings else {}),
        "executions": result.executions.to_json(),
        "reused": result.reused,
    }


def dump_result(result: CompareResult) -> str:
    """Readable JSON: one row per line, and each run's attempts one per line."""
    doc = result_to_json(result)
    raw = {}
    for side in ("baseline", "candidate"):
        run_text = dump_document(doc[side]["run"], line_lists=("rows", "attempts"))
        run_text = run_text.rstrip("\n").replace("\n", "\n  ")
        raw[side] = (
            '{"metrics": ' + compact_json(doc[side]["metrics"]) + ', "run": ' + run_text + "}"
        )
    return dump_document(doc, line_lists=("rows",), raw=raw)


def write_result(result: CompareResult, path: Path) -> None:
    write_text_atomic(path, dump_result(result))


@dataclass(frozen=True)
class AuditedResult:
    """A result re-derived from its attempts, next to what the file claimed."""

    result: CompareResult
    recorded_gate: GateDecision

    @property
    def consistent(self) -> bool:
        """Whether the file's gate is the recomputed one: passed or not, each rule on each row.

        The words of a reason may change between passk versions (an older
        result says "(not-reproduced)" where this one explains why the row
        still blocks); the decision may not.
        """
        return _decision(self.result.gate) == _decision(self.recorded_gate)


def _decision(gate: GateDecision) -> tuple[bool, list[tuple[str, str]]]:
    return gate.passed, sorted((f.rule.value, f.id or "") for f in gate.failures)


DATA_SINCE = 7
"""The first result version that stores kinds, not sentences."""


def _gate_from_json(doc: dict[str, Any], version: int, where: str) -> GateDecision:
    failures = []
    for i, failure in enumerate(doc["failures"]):
        here = f"{where}: gate.failures[{i}].reason"
        reason = _kind(failure["reason"], version, REASON_KINDS, WrittenReason, here)
        failures.append(GateFailure(Rule(failure["rule"]), reason, failure["id"]))
    warnings = tuple(
        _kind(w, version, WARNING_KINDS, WrittenWarning, f"{where}: gate.warnings[{i}]")
        for i, w in enumerate(doc["warnings"])
    )
    return GateDecision(passed=doc["passed"], failures=tuple(failures), warnings=warnings)


def _kind(
    doc: Any,
    version: int,
    kinds: Mapping[str, type[Any]],
    written: type[Note | Reason | GateWarning],
    where: str,
) -> Any:
    """One stored note, warning or reason: a kind (schema 6 on), or an older file's words."""
    if version < DATA_SINCE:
        if not isinstance(doc, str):
            raise ArtifactError(f"must be a string in a version-{version} result", where=where)
        return written(doc)  # type: ignore[call-arg]
    try:
        return kind_from_json(doc, kinds)
    except ValueError as exc:
        raise ArtifactError(str(exc), where=where) from None


def _notes_from_json(doc: Mapping[str, Any], key: str, where: str) -> tuple[Note, ...]:
    version = doc["schema_version"]
    return tuple(
        _kind(note, version, NOTE_KINDS, Written, f"{where}: {key}[{i}]")
        for i, note in enumerate(doc.get(key, ()))
    )


def _record_from_json(row: Any, where: str) -> RowRecord:
    """The authoritative label and mark of one row: what the gate is recomputed from."""
    if not isinstance(row, dict):
        raise ArtifactError("a row must be a JSON object", where=where)
    row_id, mnb = row.get("id"), row.get("must_not_break")
    digest, tags = row.get("input_digest", ""), row.get("tags", [])
    if not isinstance(row_id, str) or not row_id:
        raise ArtifactError("'id' must be a non-empty string", where=where)
    expected, expected_checks = expected_from_json(row, where)
    if not isinstance(mnb, bool):
        raise ArtifactError("'must_not_break' must be true or false", where=where)
    if not isinstance(digest, str):
        raise ArtifactError("'input_digest' must be a string", where=where)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ArtifactError("'tags' must be a list of strings", where=where)
    cluster = cluster_from_json(row, where)
    return RowRecord(row_id, digest, expected, mnb, tuple(tags), cluster, expected_checks)


def result_from_json(doc: Any, where: str) -> AuditedResult:
    """Validate a result document and re-derive its comparison and gate from the attempts."""
    try:
        return _result_from_json(doc, where)
    except ArtifactError as exc:
        raise with_hint(exc, DAMAGED_HINT) from exc.__cause__


def _result_from_json(doc: Any, where: str) -> AuditedResult:
    check_version(doc, where, RESULT_KIND, RESULT_SCHEMA_VERSION)
    validate_header(doc, where, "result.schema.json", big_lists=("rows",))
    baseline = run_from_json(doc["baseline"]["run"], f"{where}: baseline.run")
    candidate = run_from_json(doc["candidate"]["run"], f"{where}: candidate.run")
    if candidate.settings != baseline.settings:
        raise ArtifactError("the two runs were recorded with different settings", where=where)
    if not isinstance(doc["rows"], list):  # the schema saw it as [] (see validate_header)
        raise ArtifactError("'rows' must be a list", where=where)
    records = [_record_from_json(row, f"{where}: rows[{i}]") for i, row in enumerate(doc["rows"])]
    return _assemble_result(doc, baseline, candidate, records, where)


def _assemble_result(
    doc: Mapping[str, Any], baseline: Run, candidate: Run, records: list[RowRecord], where: str
) -> AuditedResult:
    """Check the rows against the candidate run and re-derive comparison and gate."""
    candidate_rows = {r.id: r for r in candidate.rows}
    for i, record in enumerate(records):
        if record.id not in candidate_rows:
            raise ArtifactError(
                f"row {record.id!r} is not in the candidate run", where=f"{where}: rows[{i}]"
            )
    if len({r.id for r in records}) != len(records):
        raise ArtifactError("a row appears twice in 'rows'", where=where)
    policy_doc = doc["policy"]
    policy = GatePolicy(
        block_on_any_regression=policy_doc["block_on_any_regression"],
        max_cost_increase=_limit(policy_doc, "max_cost_increase", where),
        max_latency_p95_increase=_limit(policy_doc, "max_latency_p95_increase", where),
        rule=_rule_from_json(doc, where),
    )
    protected = tuple(
        _protected_from_json(c, doc["schema_version"], f"{where}: protected_changes[{i}]")
        for i, c in enumerate(doc["protected_changes"])
    )
    ratchet = frozenset(doc["ratchet"])
    comparison, gate = evaluate(
        records,
        baseline,
        candidate,
        ratchet=ratchet,
        policy=policy,
        protected_changes=protected,
        protected_changes_allowed=doc["protected_changes_allowed"],
    )
    executions = Executions(
        **{
            key: int(doc["executions"].get(key, 0))
            for key in (
                "candidate",
                "baseline_topup",
                "confirm_baseline",
                "confirm_candidate",
                "naive",
                "candidate_recorded",
                "confirm_rounds",
            )
        }
    )
    result = CompareResult(
        rows=tuple(records),
        baseline=baseline,
        candidate=candidate,
        ratchet=ratchet,
        policy=policy,
        comparison=comparison,
        gate=gate,
        protected_changes=protected,
        protected_changes_allowed=doc["protected_changes_allowed"],
        notes=_notes_from_json(doc, "notes", where),
        warnings=_notes_from_json(doc, "warnings", where),
        executions=executions,
        reused=doc["reused"],
        created_at=doc["created_at"],
        tool_version=doc["tool_version"],
    )
    recorded_gate = _gate_from_json(doc["gate"], doc["schema_version"], where)
    return AuditedResult(result=result, recorded_gate=recorded_gate)


def _protected_from_json(doc: Mapping[str, Any], version: int, where: str) -> ProtectedChange:
    """One protected change: its kind and fields (schema 7 on), or an older file's words."""
    if version < DATA_SINCE:
        if not isinstance(doc.get("detail"), str):
            raise ArtifactError(
                f"'detail' must be a string in a version-{version} result", where=where
            )
        return ProtectedChange(doc["kind"], WrittenChange(doc["detail"]), doc["id"])
    if "what" not in doc:
        raise ArtifactError("lacks 'what', the change's kind and fields", where=where)
    try:
        what = kind_from_json(doc["what"], Change.KINDS)
    except ValueError as exc:
        raise ArtifactError(f"'what': {exc}", where=where) from None
    return ProtectedChange(doc["kind"], what, doc["id"])


def _limit(policy: Mapping[str, Any], key: str, where: str) -> float | None:
    """A recorded relative limit, by the config's rule (``core/values.py``)."""
    if policy.get(key) is None:
        return None
    limit = values.relative_limit(policy[key])
    if limit is None:
        raise ArtifactError(f"must be {values.RELATIVE_TEXT}", where=f"{where}: policy.{key}")
    return limit


def _rule_from_json(doc: Mapping[str, Any], where: str) -> RuleSettings:
    """The rule a result was decided by: its own (schema 3), or the strict rule (older)."""
    rule = doc["policy"].get("rule")
    if rule is None:
        if doc["schema_version"] >= 3:
            raise ArtifactError("'policy.rule' is missing", where=where)
        return LEGACY_RULE
    if doc["schema_version"] < SECOND_DESIGN:
        rule = first_design(rule)
    missing = [name for name in FIRST_DESIGN if name not in rule]
    if missing:
        raise ArtifactError(f"'policy.rule' lacks {', '.join(missing)}", where=where)
    # A result without a quiet stop was decided without one (passk before it wrote none),
    # one without a screen by the SPRT screen (passk before the designed one).
    rule = {"pair_quiet": 0, "screen": SPRT, **rule}
    try:
        return RuleSettings(**rule)
    except (ValueError, TypeError) as exc:
        raise ArtifactError(f"'policy.rule' is not a valid rule: {exc}", where=where) from None


def read_result(path: Path) -> AuditedResult:
    """Read a result file, streaming it when it is in our layout (see ``read_run``)."""
    audited = stream_canonical(path, _stream_result)
    return audited if audited is not None else result_from_json(parse_json_file(path), str(path))


def read_run_or_result(path: Path) -> Run | AuditedResult:
    """A run artifact or a result file, told apart by its ``kind`` (``passk report``)."""
    streamed = stream_canonical(path, _stream_run_or_result)
    if streamed is not None:
        return streamed
    doc = parse_json_file(path)
    if isinstance(doc, dict) and doc.get("kind") == RESULT_KIND:
        return result_from_json(doc, str(path))
    return run_from_json(doc, str(path))


def _record_fast(doc: Any, interner: Interner) -> RowRecord | None:
    """:func:`_record_from_json` for a plainly valid row; None for any doubt.

    Only the authoritative fields are read; the recorded verdicts next to
    them are never trusted (the comparison is derived again).
    """
    if type(doc) is not dict:
        return None
    row_id, expected, mnb = doc.get("id"), doc.get("expected"), doc.get("must_not_break")
    digest, tags = doc.get("input_digest", ""), doc.get("tags", _NO_TAGS)
    if type(row_id) is not str or not row_id or "expected_checks" in doc:
        return None  # an expected object or expected checks: the careful way
    if expected is not None and (type(expected) is not str or not expected):
        return None
    if type(mnb) is not bool or type(digest) is not str or type(tags) is not list:
        return None
    if not all(type(t) is str for t in tags):
        return None
    cluster = doc.get("cluster")
    if cluster is not None and (type(cluster) is not str or not cluster):
        return None
    string = interner.string
    tag_tuple = interner.tag_tuple(tags)
    shared = None if cluster is None else string(cluster)
    label = None if expected is None else string(expected)
    return RowRecord(string(row_id), string(digest), label, mnb, tag_tuple, shared)


_NO_TAGS: list[str] = []
_SIDE_OPEN = '{"metrics": '
_SIDE_RUN = ', "run": {'


def _stream_run_or_result(lines: CanonicalLines, where: str) -> Run | AuditedResult:
    return _stream_document(lines, where, result_only=False)


def _stream_result(lines: CanonicalLines, where: str) -> AuditedResult:
    streamed = _stream_document(lines, where, result_only=True)
    if not isinstance(streamed, AuditedResult):
        raise NotCanonical
    return streamed


def _stream_document(
    lines: CanonicalLines, where: str, *, result_only: bool
) -> Run | AuditedResult:
    """A result (as :func:`dump_result` lays it out) or, unless ``result_only``, a run.

    Both start with ``schema_version`` and ``kind`` on their own lines, which
    say how to read the rest.
    """
    if lines.take() != "{\n":
        raise NotCanonical
    first: dict[str, Any] = {}
    for _ in range(2):
        key, line, start = lines.member(2)
        first[key], end = decode_at(line, start)
        if not comma_follows(line, end) or key in ("rows", "attempts"):
            raise NotCanonical
    if list(first) != ["schema_version", "kind"]:
        raise NotCanonical
    interner = Interner()
    if first["kind"] != RESULT_KIND:
        if result_only:
            raise NotCanonical
        sections = stream_run_members(lines, 2, where, interner)
        if lines.expect("}"):
            raise NotCanonical
        if first.keys() & sections.header.keys():
            raise NotCanonical  # a repeated key: json keeps the last one; let it
        sections.header = {**first, **sections.header}
        return run_from_sections(sections, where)
    return _stream_result_members(lines, where, first, interner)


def _stream_result_members(
    lines: CanonicalLines, where: str, header: dict[str, Any], interner: Interner
) -> AuditedResult:
    runs: dict[str, RunSections] = {}
    records: list[RowRecord] = []

    def add_record(doc: Any, index: int) -> None:
        record = _record_fast(doc, interner)
        if record is None:
            try:
                record = _record_from_json(doc, f"{where}: rows[{index}]")
            except ArtifactError:
                raise NotCanonical from None
        records.append(record)

    more = True
    while more:
        key, line, start = lines.member(2)
        if key in header:
            raise NotCanonical
        rest = line[start:]
        if rest in ("[\n", "["):
            if key != "rows":
                raise NotCanonical
            header[key] = []
            more = lines.items(2, add_record)
        elif key in ("baseline", "candidate") and rest.startswith(_SIDE_OPEN):
            metrics, end = decode_at(line, start + len(_SIDE_OPEN))
            if line[end:] not in (_SIDE_RUN + "\n", _SIDE_RUN):
                raise NotCanonical
            side_where = f"{where}: {key}.run"
            runs[key] = sections = stream_run_members(lines, 4, side_where, interner)
            # The side's own schema asks only that "run" be an object with a
            # version and a kind: the header stands in for the whole run.
            header[key] = {"metrics": metrics, "run": sections.header}
            more = lines.expect("  }}")
        else:
            header[key], end = decode_at(line, start)
            more = comma_follows(line, end)
            if key in ("rows", "baseline", "candidate"):
                raise NotCanonical
    if lines.expect("}"):
        raise NotCanonical
    if set(runs) != {"baseline", "candidate"} or "rows" not in header:
        raise NotCanonical
    check_version(header, where, RESULT_KIND, RESULT_SCHEMA_VERSION)
    validate_header(header, where, "result.schema.json", big_lists=("rows",))
    baseline = run_from_sections(runs["baseline"], f"{where}: baseline.run")
    candidate = run_from_sections(runs["candidate"], f"{where}: candidate.run")
    if candidate.settings != baseline.settings:
        raise NotCanonical
    return _assemble_result(header, baseline, candidate, records, where)
