"""Small builders shared by the tests: attempts and runs written by hand."""

from __future__ import annotations

from collections.abc import Sequence

from passk_action.core.classify import classify
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowClass,
    RowRecord,
    Run,
    Scoring,
    Version,
    canonical_json,
    sha256_hex,
)

DIGEST = "sha256:" + "0" * 64


def digest_of(row_id: str) -> str:
    return sha256_hex(canonical_json({"id": row_id, "input": row_id}))


def record(row_id: str, expected: str = "deny", mnb: bool = False) -> RowRecord:
    return RowRecord(row_id, digest_of(row_id), expected, mnb)


def attempts(
    row_id: str,
    outcomes: Sequence[str | tuple[str, dict[str, str]] | None],
    *,
    start: int = 1,
    phase: Phase = Phase.MAIN,
) -> list[Attempt]:
    """Attempts from a compact list: a decision, ``None`` for an error, or (decision, checks)."""
    made = []
    for i, outcome in enumerate(outcomes):
        number = start + i
        if outcome is None:
            made.append(Attempt(row_id, number, phase, None, error="timeout", detail="timed out"))
        elif isinstance(outcome, tuple):
            decision, checks = outcome
            made.append(Attempt(row_id, number, phase, decision, checks=tuple(checks.items())))
        else:
            made.append(Attempt(row_id, number, phase, outcome))
    return made


def classify_decisions(
    decisions: Sequence[str | None], expected: str, k: int, scoring: Scoring
) -> RowClass:
    """The class of a row ``r`` expecting ``expected`` from plain decisions (None: an error)."""
    return classify(attempts("r", decisions), record("r", expected), k, scoring)


def run_of(
    rows: Sequence[RowRecord],
    all_attempts: Sequence[Attempt],
    *,
    version: Version = Version.CANDIDATE,
    k: int = 3,
    ratchet: Sequence[str] = (),
    dataset_digest: str = DIGEST,
) -> Run:
    return Run(
        tool_version="0.1.0",
        dataset_digest=dataset_digest,
        settings=EvalSettings(k=k),
        agent=AgentInfo(version, f"python3 agent.py --{version.value}"),
        created_at="2026-11-30T09:00:00Z",
        rows=tuple(rows),
        attempts=tuple(all_attempts),
        ratchet=tuple(ratchet),
    )
