"""A gate's failures and warnings in words, as the renderers say them (``report/reasons.py``).

The gate keeps them as kinds with fields; tests that check what a reader is
told word them the one way every renderer does.
"""

from __future__ import annotations

from passk_action.core.gate import GateDecision, GateFailure
from passk_action.core.sequential import DEFAULT_RULE, RuleSettings
from passk_action.report.reasons import reason, warnings


def said(failure: GateFailure, settings: RuleSettings = DEFAULT_RULE) -> str:
    """``failure``'s reason in words (``settings``: the gate's rule, the default unless given)."""
    return reason(failure, settings)


def warned(gate: GateDecision) -> tuple[str, ...]:
    """The gate's warnings in words."""
    return tuple(warnings(gate.warnings))
