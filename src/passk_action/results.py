"""Result files: what ``passk compare`` writes and ``passk gate`` audits.

A result holds both runs with every attempt, so the gate can be recomputed
from it alone.  Reading a result never trusts its recorded comparison or
gate: both are derived again from the attempts through the same function
``passk compare`` used (:func:`passk_action.core.result.evaluate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .artifact import (
    DAMAGED_HINT,
    SCHEMA_VERSION,
    _check_version,
    compact_json,
    dump_document,
    parse_json_file,
    run_from_json,
    run_to_json,
    validate_header,
    with_hint,
    write_text_atomic,
)
from .core.diff import RowComparison
from .core.gate import GateDecision, GateFailure, GatePolicy, ProtectedChange, Rule
from .core.model import RowRecord
from .core.result import CompareResult, Executions, evaluate
from .errors import ArtifactError

RESULT_KIND = "passk-result"


def _row_to_json(record: RowRecord, row: RowComparison) -> dict[str, Any]:
    divergent = row.first_divergent_check
    return {
        "id": row.id,
        "input_digest": record.input_digest,
        "expected": record.expected,
        "must_not_break": row.must_not_break,
        "tags": list(record.tags),
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
    }


def result_to_json(result: CompareResult) -> dict[str, Any]:
    comparison = result.comparison
    records = {r.id: r for r in result.rows}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": RESULT_KIND,
        "tool_version": result.tool_version,
        "created_at": result.created_at,
        "dataset_digest": result.candidate.dataset_digest,
        "settings": result.candidate.settings.to_json(),
        "gate": result.gate.to_json(),
        "policy": {"block_on_any_regression": result.policy.block_on_any_regression},
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
        "rows": [_row_to_json(records[r.id], r) for r in comparison.rows],
        "notes": list(result.notes),
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
        return self.result.gate.to_json() == self.recorded_gate.to_json()


def _gate_from_json(doc: dict[str, Any]) -> GateDecision:
    return GateDecision(
        passed=doc["passed"],
        failures=tuple(GateFailure(Rule(f["rule"]), f["reason"], f["id"]) for f in doc["failures"]),
        warnings=tuple(doc["warnings"]),
    )


def _record_from_json(row: Any, where: str) -> RowRecord:
    """The authoritative label and mark of one row: what the gate is recomputed from."""
    if not isinstance(row, dict):
        raise ArtifactError("a row must be a JSON object", where=where)
    row_id, expected, mnb = row.get("id"), row.get("expected"), row.get("must_not_break")
    digest, tags = row.get("input_digest", ""), row.get("tags", [])
    if not isinstance(row_id, str) or not row_id:
        raise ArtifactError("'id' must be a non-empty string", where=where)
    if not isinstance(expected, str) or not expected:
        raise ArtifactError("'expected' must be a non-empty string", where=where)
    if not isinstance(mnb, bool):
        raise ArtifactError("'must_not_break' must be true or false", where=where)
    if not isinstance(digest, str):
        raise ArtifactError("'input_digest' must be a string", where=where)
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ArtifactError("'tags' must be a list of strings", where=where)
    return RowRecord(row_id, digest, expected, mnb, tuple(tags))


def result_from_json(doc: Any, where: str) -> AuditedResult:
    """Validate a result document and re-derive its comparison and gate from the attempts."""
    try:
        return _result_from_json(doc, where)
    except ArtifactError as exc:
        raise with_hint(exc, DAMAGED_HINT) from exc.__cause__


def _result_from_json(doc: Any, where: str) -> AuditedResult:
    _check_version(doc, where, RESULT_KIND)
    validate_header(doc, where, "result.schema.json", big_lists=("rows",))
    baseline = run_from_json(doc["baseline"]["run"], f"{where}: baseline.run")
    candidate = run_from_json(doc["candidate"]["run"], f"{where}: candidate.run")
    if candidate.settings != baseline.settings:
        raise ArtifactError("the two runs were recorded with different settings", where=where)
    candidate_rows = {r.id: r for r in candidate.rows}
    records = [_record_from_json(row, f"{where}: rows[{i}]") for i, row in enumerate(doc["rows"])]
    for i, record in enumerate(records):
        if record.id not in candidate_rows:
            raise ArtifactError(
                f"row {record.id!r} is not in the candidate run", where=f"{where}: rows[{i}]"
            )
    if len({r.id for r in records}) != len(records):
        raise ArtifactError("a row appears twice in 'rows'", where=where)
    policy = GatePolicy(block_on_any_regression=doc["policy"]["block_on_any_regression"])
    protected = tuple(
        ProtectedChange(c["kind"], c["detail"], c["id"]) for c in doc["protected_changes"]
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
        notes=tuple(doc["notes"]),
        executions=executions,
        reused=doc["reused"],
        created_at=doc["created_at"],
        tool_version=doc["tool_version"],
    )
    return AuditedResult(result=result, recorded_gate=_gate_from_json(doc["gate"]))


def read_result(path: Path) -> AuditedResult:
    return result_from_json(parse_json_file(path), str(path))
