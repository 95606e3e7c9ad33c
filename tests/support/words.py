"""A gate's failures and warnings in words, as the renderers say them (``report/reasons.py``).

The gate keeps them as kinds with fields; tests that check what a reader is
told word them the one way every renderer does.
"""

from __future__ import annotations

from typing import Any

from passk_action.core.gate import GateDecision, GateFailure, Rule
from passk_action.core.kinds import kind_from_json
from passk_action.core.notes import NOTE_KINDS
from passk_action.core.reasons import REASON_KINDS, WARNING_KINDS
from passk_action.core.sequential import DEFAULT_RULE, RuleSettings
from passk_action.report.notes import sentence
from passk_action.report.reasons import reason, warnings


def said(failure: GateFailure, settings: RuleSettings = DEFAULT_RULE) -> str:
    """``failure``'s reason in words (``settings``: the gate's rule, the default unless given)."""
    return reason(failure, settings)


def warned(gate: GateDecision) -> tuple[str, ...]:
    """The gate's warnings in words."""
    return tuple(warnings(gate.warnings))


def worded(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A result document's gate failures as stored, each reason put into words."""
    settings = RuleSettings(**doc["policy"]["rule"])
    out = []
    for stored in doc["gate"]["failures"]:
        why = kind_from_json(stored["reason"], REASON_KINDS)
        failure = GateFailure(Rule(stored["rule"]), why, stored["id"])
        out.append({**stored, "reason": reason(failure, settings)})
    return out


def notes_of(doc: dict[str, Any], key: str = "notes") -> list[str]:
    """A result document's notes (or ``warnings``) in words."""
    kinds = {**NOTE_KINDS}
    return [sentence(kind_from_json(note, kinds)) for note in doc.get(key, [])]


def gate_warnings_of(doc: dict[str, Any]) -> list[str]:
    """A result document's gate warnings in words."""
    return warnings(tuple(kind_from_json(w, WARNING_KINDS) for w in doc["gate"]["warnings"]))
