"""The words for a protected change (:mod:`passk_action.core.protected`): one sentence each.

A scoring rule's value is said as a person writes it in YAML's flow style,
a structured expected decision field by field, never as two JSON texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..core.gate import ProtectedChange
from ..core.model import Json
from ..core.protected import (
    BaselineArtifactChanged,
    Change,
    ChecksChanged,
    FileTypeChanged,
    FingerprintChanged,
    GatedBy,
    InputChanged,
    LabelChanged,
    NormalizeChanged,
    OwnMarkRemoved,
    RecordedFailure,
    RegressionBlockOff,
    RowRemoved,
    RuleEdit,
    RuleLoosened,
    RuleNoLongerStrict,
    ScorerChanged,
    ScoringRulesChanged,
    SettingLowered,
    SpendLimitLoosened,
    TagsDropped,
    TagUnprotected,
    WhenStaleChanged,
    WrittenChange,
)

RECORDED_FAILURE = (
    "a re-run cannot overturn the recorded failure for this content; push a commit that "
    "changes a file (an empty or amended commit with the same files keeps the failure)"
)

EDITS_SHOWN = 4
"""Rule changes said in one scoring change's sentence; the rest are counted."""

_NOUNS = {
    GatedBy.MUST_NOT_BREAK: "must-not-break row",
    GatedBy.RATCHET_LOCKED: "ratchet-locked row",
}
_TAILS = {GatedBy.ANY_REGRESSION: " (gate.block_on_any_regression is on)"}
_REMOVED = {
    GatedBy.MUST_NOT_BREAK: "",
    GatedBy.RATCHET_LOCKED: " (the ratchet locked it stable-correct on a recorded baseline)",
    GatedBy.ANY_REGRESSION: _TAILS[GatedBy.ANY_REGRESSION],
}


def change_said(what: Change) -> str:
    """One protected change in words."""
    return _WORDS[type(what)](what)


def change_lines(changes: Sequence[ProtectedChange], *, allowed: bool, label: str) -> list[str]:
    """One log line per protected change, saying when the label allowed it."""
    return [
        f"passk: protected change: {change_said(change.what)}"
        + (f" ({change.id})" if change.id else "")
        + (f" — allowed by the label {label!r}" if allowed else "")
        for change in changes
    ]


def _limit(value: float) -> str:
    """A relative limit as people write it: 0.25 -> ``+25%``."""
    return f"{value * 100:+.10g}%"


def _spend(c: SpendLimitLoosened) -> str:
    old = _limit(c.before)
    if c.after is None:
        what, held = "removed", "no limit"
    else:
        what, held = f"raised to {_limit(c.after)}", _limit(c.after)
    return (
        f"{c.key} {old} is {what}: with the allow label this pull request is "
        f"held to {held}, the new setting; without it, to the base's {old}"
    )


def _loosened(c: RuleLoosened) -> str:
    changed = ", ".join(f"{s.key} {s.before:g} -> {s.after:g}" for s in c.settings)
    return (
        f"gate.sequential changes ({changed}): a gated row whose accuracy drops from "
        f"{c.baseline:.0%} to {c.candidate:.0%} would block {c.before:.1%} of the "
        f"time, now {c.after:.1%}"
    )


def _scoring(c: ScoringRulesChanged) -> str:
    said = [_edit(edit) for edit in c.edits]
    shown = said[:EDITS_SHOWN]
    if len(said) > EDITS_SHOWN:
        shown.append(f"and {len(said) - EDITS_SHOWN} more")
    return "; ".join(shown)


def _edit(edit: RuleEdit) -> str:
    before, after = _rule_said(_load(edit.before)), _rule_said(_load(edit.after))
    if edit.before is None:
        return f"{edit.name} is set to {after}"
    if edit.after is None:
        return f"{edit.name} is removed (it was {before}; the default applies)"
    return f"{edit.name} changes from {before} to {after}"


def _load(text: str | None) -> Json:
    return None if text is None else json.loads(text)


def _rule_said(value: Json) -> str:
    """A rule's value as a person writes it in YAML's flow style: no JSON quoting."""
    if isinstance(value, dict):
        inner = ", ".join(f"{key}: {_rule_said(item)}" for key, item in sorted(value.items()))
        text = f"{{{inner}}}"
    elif isinstance(value, list):
        text = "[" + ", ".join(_rule_said(item) for item in value) + "]"
    elif isinstance(value, str):
        text = repr(value)
    elif value is None:
        text = "none"
    else:
        text = json.dumps(value)
    return text if len(text) <= 200 else text[:199] + "…"


def _noun(gated_by: GatedBy) -> str:
    return _NOUNS.get(gated_by, "row")


def _said(expected: str | None) -> str:
    return "none (its environment scores it)" if expected is None else repr(expected)


def _relabel_said(old: str | None, new: str | None) -> str:
    """``expected label changes from 'approve' to 'deny'``; a structured decision field by
    field (``expected decision changes: action 'refund' → 'deny'``), never as two JSON texts."""
    before, after = _decision_object(old), _decision_object(new)
    if before is None or after is None:
        return f"expected label changes from {_said(old)} to {_said(new)}"
    fields = [
        f"{key} {_rule_said(before.get(key))} → {_rule_said(after.get(key))}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]
    return "expected decision changes: " + ", ".join(fields)


def _decision_object(expected: str | None) -> dict[str, Json] | None:
    """A structured expected decision's fields (rows hold it as JSON text); None otherwise."""
    if expected is None or not expected.startswith("{"):
        return None
    try:
        value = json.loads(expected)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _checks_said(text: str) -> str:
    checks = json.loads(text)
    return _rule_said(checks) if checks else "none"


def _checks(c: ChecksChanged) -> str:
    return (
        f"{_noun(c.gated_by)}'s expected checks change from {_checks_said(c.before)} "
        f"to {_checks_said(c.after)}{_TAILS.get(c.gated_by, '')}"
    )


_WORDS: dict[type[Any], Callable[[Any], str]] = {
    FileTypeChanged: lambda c: f"{c.path} changes from {c.before} to {c.after}",
    BaselineArtifactChanged: lambda c: (
        f"the committed baseline artifact ({c.artifact}) is "
        f"{'deleted' if c.deleted else 'changed'} by this pull request"
    ),
    SettingLowered: lambda c: f"{c.key} is lowered from {c.before} to {c.after}",
    RegressionBlockOff: lambda c: "gate.block_on_any_regression is turned off",
    RuleNoLongerStrict: lambda c: (
        f"gate.rule changes from strict to {c.rule} (a wrong answer no longer blocks)"
    ),
    RuleLoosened: _loosened,
    SpendLimitLoosened: _spend,
    NormalizeChanged: lambda c: (
        f"scoring.normalize changes from {list(c.before)} to {list(c.after)}"
    ),
    ScoringRulesChanged: _scoring,
    ScorerChanged: lambda c: (
        f"the scorer program's {c.path} is {'deleted' if c.deleted else 'changed'} by this "
        "pull request (the gate runs the base commit's copy)"
    ),
    WhenStaleChanged: lambda c: f"baseline.when_stale changes from {c.before} to {c.after}",
    FingerprintChanged: lambda c: (
        f"agent.fingerprint changes from {list(c.before)} to {list(c.after)}"
    ),
    TagUnprotected: lambda c: f"the tag {c.tag!r} is removed from must_not_break.tags",
    RowRemoved: lambda c: f"{_noun(c.gated_by)} is removed from the dataset{_REMOVED[c.gated_by]}",
    InputChanged: lambda c: (
        f"{_noun(c.gated_by)}'s input is changed (its baseline verdicts are for the old input)"
        f"{_TAILS.get(c.gated_by, '')}"
    ),
    LabelChanged: lambda c: (
        f"{_noun(c.gated_by)}'s {_relabel_said(c.before, c.after)}{_TAILS.get(c.gated_by, '')}"
    ),
    ChecksChanged: _checks,
    OwnMarkRemoved: lambda c: "must-not-break row's own mark is removed",
    TagsDropped: lambda c: f"must-not-break row loses the protecting tag(s) {', '.join(c.tags)}",
    RecordedFailure: lambda c: RECORDED_FAILURE,
    WrittenChange: lambda c: str(c.text),
}
if set(_WORDS) != set(Change.KINDS.values()):  # pragma: no cover - a kind added without words
    raise AssertionError("every protected change kind needs its words")
