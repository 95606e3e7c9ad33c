"""Protected changes: edits in a pull request to what protects the gate itself.

A pull request must not be able to pass the gate by weakening it.  This
module compares the base commit's snapshot with the head's and lists every
such edit.  Pure: snapshots in, changes out.

- **Gated rows, judged by the row** (:func:`gated_rows`): every row the base
  gates, whichever setting gates it (a must-not-break mark or tag, the
  base's ratchet, ``gate.block_on_any_regression``), keeps its presence, its
  input, its expected label and its expected checks; a must-not-break row
  keeps its own mark and its protecting tags.  Deleting a gated row, swapping
  its input, relabeling it or unmarking it is a protected change under every
  gating setting.
- **The settings that decide how rows are judged**: lowering ``k`` or the
  confirmation attempts, switching off ``block_on_any_regression``, removing
  a tag from ``must_not_break.tags``, loosening the gated-row rule
  (``gate.rule`` from strict to another rule, or settings under which a row
  that got worse blocks less often), raising or removing a
  spend limit (``max_cost_increase``, ``max_latency_p95_increase``), changing
  any scoring rule (how answers are normalized, read, compared field by field,
  checked, or scored by their environment or a scorer program), the scorer
  program's files (the gate runs the base's copy anyway), or how a stale
  baseline is detected and handled (``agent.fingerprint``, ``baseline.when_stale``).
- **The protected files**: the committed baseline artifact edited or deleted,
  and the config, dataset or artifact turned into another kind of file.

The gate runs on the base's settings whatever the head says
(``head_settings.py``); these are the edits that also fail it, unless the
base's allow label approves them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..core.gate import ProtectedChange
from ..core.model import Dataset, ExpectedChecks, Json
from ..core.operating import loosening
from ..core.sequential import STRICT, RuleSettings
from ..inputs.config import Config

BASELINE_CHANGED = "baseline-artifact-changed"
ROW_REMOVED = "must-not-break-row-removed"
ROW_RELABELED = "must-not-break-row-relabeled"
LOCKED_ROW_REMOVED = "ratchet-locked-row-removed"
LOCKED_ROW_RELABELED = "ratchet-locked-row-relabeled"
ANY_ROW_RELABELED = "row-relabeled"
ANY_ROW_REMOVED = "row-removed"
MARK_REMOVED = "must-not-break-mark-removed"
INPUT_CHANGED = "input-changed"
TAG_UNPROTECTED = "must-not-break-tag-removed"
K_LOWERED = "k-lowered"
CONFIRM_LOWERED = "confirm-attempts-lowered"
REGRESSION_BLOCK_OFF = "block-on-any-regression-off"
SCORING_CHANGED = "scoring-normalize-changed"
SCORING_RULES_CHANGED = "scoring-rules-changed"
"""Any scoring rule but ``normalize`` (kept apart: results before it name that one so)."""
FILE_TYPE_CHANGED = "protected-file-type-changed"
STALE_POLICY_CHANGED = "baseline-staleness-changed"
SPEND_LIMIT_LOOSENED = "spend-limit-loosened"
RULE_LOOSENED = "gate-rule-loosened"
SCORER_CHANGED = "scorer-changed"
"""The head edits the scorer program's files (the gate runs the base commit's copy anyway)."""


@dataclass(frozen=True)
class ProtectedInputs:
    """What protects the gate on one side of the pull request: its config, its dataset and
    its baseline artifact's bytes."""

    config: Config
    dataset: Dataset
    baseline: bytes | None
    files: Mapping[str, str] = field(default_factory=dict)
    """The protected git paths (config, dataset, baseline artifact) and what each is, in words
    (``a regular file``, ``a symlink``, …); a head path absent from both tree and checkout
    is left out (a moved or deleted file is judged by its content instead)."""
    scorer: Mapping[str, str] = field(default_factory=dict)
    """The base scorer program's git paths and the object each holds on this side (mode and
    id; ``missing``): the gate runs the base's copy, an edit is a protected change."""


def _limit(value: float) -> str:
    """A relative limit as people write it: 0.25 -> ``+25%``."""
    return f"{value * 100:+.10g}%"


def _spend_limit_changes(base: Config, head: Config) -> list[ProtectedChange]:
    """A spend limit removed or raised, saying which limit holds the pull request."""
    changes: list[ProtectedChange] = []
    for key, old_limit, new_limit in (
        ("gate.max_cost_increase", base.gate.max_cost_increase, head.gate.max_cost_increase),
        (
            "gate.max_latency_p95_increase",
            base.gate.max_latency_p95_increase,
            head.gate.max_latency_p95_increase,
        ),
    ):
        if old_limit is not None and (new_limit is None or new_limit > old_limit):
            old_text = _limit(old_limit)
            if new_limit is None:
                what, held = "removed", "no limit"
            else:
                what, held = f"raised to {_limit(new_limit)}", _limit(new_limit)
            changes.append(
                ProtectedChange(
                    SPEND_LIMIT_LOOSENED,
                    f"{key} {old_text} is {what}: with the allow label this pull request is "
                    f"held to {held}, the new setting; without it, to the base's {old_text}",
                )
            )
    return changes


def protected_changes(
    base: ProtectedInputs, head: ProtectedInputs, *, ratchet: Iterable[str] = ()
) -> tuple[ProtectedChange, ...]:
    """Every protected edit from ``base`` to ``head``, config first, then rows by id.

    ``ratchet`` is the base baseline's ratchet: those rows are locked even
    when no mark protects them any more, so their input is protected too.
    """
    changes: list[ProtectedChange] = []
    bc, hc = base.config, head.config
    for path, kind in base.files.items():
        now = head.files.get(path)
        if now is not None and now != kind:
            changes.append(
                ProtectedChange(FILE_TYPE_CHANGED, f"{path} changes from {kind} to {now}")
            )
    artifact = base.config.baseline.artifact.name
    if base.baseline != head.baseline:
        what = "deleted" if head.baseline is None else "changed"
        changes.append(
            ProtectedChange(
                BASELINE_CHANGED,
                f"the committed baseline artifact ({artifact}) is {what} by this pull request",
            )
        )
    if hc.k < bc.k:
        changes.append(ProtectedChange(K_LOWERED, f"k is lowered from {bc.k} to {hc.k}"))
    for key, old, new in (
        ("confirm.attempts", bc.confirm.attempts, hc.confirm.attempts),
        (
            "confirm.must_not_break_attempts",
            bc.confirm.must_not_break_attempts,
            hc.confirm.must_not_break_attempts,
        ),
    ):
        if new < old:
            changes.append(
                ProtectedChange(CONFIRM_LOWERED, f"{key} is lowered from {old} to {new}")
            )
    if bc.gate.block_on_any_regression and not hc.gate.block_on_any_regression:
        changes.append(
            ProtectedChange(REGRESSION_BLOCK_OFF, "gate.block_on_any_regression is turned off")
        )
    rule_change = _rule_loosened(bc.gate.rule, hc.gate.rule, k=bc.k)
    if rule_change is not None:
        changes.append(ProtectedChange(RULE_LOOSENED, rule_change))
    changes += _spend_limit_changes(bc, hc)
    if bc.scoring.normalize != hc.scoring.normalize:
        changes.append(
            ProtectedChange(
                SCORING_CHANGED,
                f"scoring.normalize changes from {list(bc.scoring.normalize)} "
                f"to {list(hc.scoring.normalize)}",
            )
        )
    changes += _scoring_changes(bc.scoring.to_json(), hc.scoring.to_json())
    for path, held in base.scorer.items():
        now = head.scorer.get(path, held)
        if now != held:
            what = "deleted" if now == "missing" else "changed"
            changes.append(
                ProtectedChange(
                    SCORER_CHANGED,
                    f"the scorer program's {path} is {what} by this pull request (the gate "
                    "runs the base commit's copy)",
                )
            )
    if bc.baseline.when_stale != hc.baseline.when_stale:
        changes.append(
            ProtectedChange(
                STALE_POLICY_CHANGED,
                f"baseline.when_stale changes from {bc.baseline.when_stale} "
                f"to {hc.baseline.when_stale}",
            )
        )
    old_paths, new_paths = _fingerprint_paths(bc), _fingerprint_paths(hc)
    if old_paths != new_paths:
        changes.append(
            ProtectedChange(
                STALE_POLICY_CHANGED,
                f"agent.fingerprint changes from {old_paths} to {new_paths}",
            )
        )
    base_tags = set(bc.must_not_break_tags)
    for tag in sorted(base_tags - set(hc.must_not_break_tags)):
        changes.append(
            ProtectedChange(TAG_UNPROTECTED, f"the tag {tag!r} is removed from must_not_break.tags")
        )
    changes += _row_changes(base, head, frozenset(ratchet))
    return tuple(changes)


MUST_NOT_BREAK = "must-not-break"
RATCHET_LOCKED = "ratchet-locked"
ANY_REGRESSION = "any-regression"
"""Why a row of the base is gated: its mark, the ratchet, or ``block_on_any_regression``."""


def gated_rows(base: ProtectedInputs, locked: frozenset[str]) -> dict[str, str]:
    """Every row of the base the gate judges, by id, and why (the strongest reason first).

    A must-not-break row (its own mark or a tag the base protects); a row the
    base's ratchet locks (its mark may be gone, the lock stays); and, with the
    base's ``block_on_any_regression`` on, every other row of the base: any of
    them that was stable-correct on the baseline blocks when it regresses, and
    which ones were can change when the baseline is measured again.
    """
    any_row = base.config.gate.block_on_any_regression
    gated: dict[str, str] = {}
    for row in base.dataset.rows:
        if row.must_not_break:
            gated[row.id] = MUST_NOT_BREAK
        elif row.id in locked:
            gated[row.id] = RATCHET_LOCKED
        elif any_row:
            gated[row.id] = ANY_REGRESSION
    return gated


_KINDS = {
    MUST_NOT_BREAK: (ROW_REMOVED, ROW_RELABELED),
    RATCHET_LOCKED: (LOCKED_ROW_REMOVED, LOCKED_ROW_RELABELED),
    ANY_REGRESSION: (ANY_ROW_REMOVED, ANY_ROW_RELABELED),
}
_NOUNS = {MUST_NOT_BREAK: "must-not-break row", RATCHET_LOCKED: "ratchet-locked row"}
_TAILS = {ANY_REGRESSION: " (gate.block_on_any_regression is on)"}
_REMOVED = {
    MUST_NOT_BREAK: "",
    RATCHET_LOCKED: " (the ratchet locked it stable-correct on a recorded baseline)",
    ANY_REGRESSION: _TAILS[ANY_REGRESSION],
}


def _row_changes(
    base: ProtectedInputs, head: ProtectedInputs, locked: frozenset[str]
) -> list[ProtectedChange]:
    """What the head does to each gated row of the base (:func:`gated_rows`), by id.

    Judged by the row, not by a list of edits: every gated row keeps its
    presence, its input (the baseline would be topped up on a new input and
    the gate would judge another, maybe easier, row under the same id), its
    expected label and its expected checks, whichever setting gates it; a
    must-not-break row keeps its marks too.  Relabeling a row to what the
    candidate now answers, or deleting it, would make its regression vanish.
    """
    changes: list[ProtectedChange] = []
    head_rows = head.dataset.by_id()
    base_tags = set(base.config.must_not_break_tags)
    gated = gated_rows(base, locked)
    for row in sorted(base.dataset.rows, key=lambda r: r.id):
        why = gated.get(row.id)
        if why is None:
            continue
        removed, relabeled = _KINDS[why]
        noun, tail = _NOUNS.get(why, "row"), _TAILS.get(why, "")
        after = head_rows.get(row.id)
        if after is None:
            changes.append(
                ProtectedChange(
                    removed, f"{noun} is removed from the dataset{_REMOVED[why]}", row.id
                )
            )
            continue
        if after.input_digest != row.input_digest:
            changes.append(
                ProtectedChange(
                    INPUT_CHANGED,
                    f"{noun}'s input is changed (its baseline verdicts are for the old input)"
                    f"{tail}",
                    row.id,
                )
            )
        if after.expected != row.expected:
            changes.append(
                ProtectedChange(
                    relabeled,
                    f"{noun}'s {_relabel_said(row.expected, after.expected)}{tail}",
                    row.id,
                )
            )
        if after.expected_checks != row.expected_checks:
            changes.append(
                ProtectedChange(
                    relabeled,
                    f"{noun}'s expected checks change from {_checks_said(row.expected_checks)} "
                    f"to {_checks_said(after.expected_checks)}{tail}",
                    row.id,
                )
            )
        if why != MUST_NOT_BREAK:
            continue
        if row.marked and not after.marked:
            changes.append(
                ProtectedChange(MARK_REMOVED, "must-not-break row's own mark is removed", row.id)
            )
        dropped = sorted((set(row.tags) & base_tags) - set(after.tags))
        if dropped:
            changes.append(
                ProtectedChange(
                    MARK_REMOVED,
                    f"must-not-break row loses the protecting tag(s) {', '.join(dropped)}",
                    row.id,
                )
            )
    return changes


def _scoring_changes(base: Mapping[str, Json], head: Mapping[str, Json]) -> list[ProtectedChange]:
    """Every scoring rule but ``normalize`` that the head changes, one change per key.

    Any change, not only a looser one: no order says which rules are stricter
    (a new extractor, a tolerance, ``checks: reported``, another threshold all
    decide which answers count as right).
    """
    changes = []
    for key in sorted((set(base) | set(head)) - {"match", "normalize"}):
        old, new = base.get(key), head.get(key)
        if old != new:
            said = _rule_changes(f"scoring.{key}", old, new)
            shown = said[:_CHANGES_SHOWN]
            if len(said) > _CHANGES_SHOWN:
                shown.append(f"and {len(said) - _CHANGES_SHOWN} more")
            changes.append(ProtectedChange(SCORING_RULES_CHANGED, "; ".join(shown)))
    return changes


_CHANGES_SHOWN = 4
"""Rule changes said in one protected change's detail; the rest are counted."""


def _rule_changes(name: str, old: Json, new: Json) -> list[str]:
    """What changed between two rules, each leaf that differs in words: a person reads
    ``scoring.fields.amount.tolerance changes from 1.0 to 50.0``, not two JSON objects."""
    if isinstance(old, dict) and isinstance(new, dict):
        said: list[str] = []
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                said += _rule_changes(f"{name}.{key}", old.get(key), new.get(key))
        return said
    if old is None:
        return [f"{name} is set to {_rule_said(new)}"]
    if new is None:
        return [f"{name} is removed (it was {_rule_said(old)}; the default applies)"]
    return [f"{name} changes from {_rule_said(old)} to {_rule_said(new)}"]


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


def _checks_said(checks: ExpectedChecks) -> str:
    return _rule_said(dict(checks)) if checks else "none"


def _fingerprint_paths(config: Config) -> list[str]:
    """The fingerprint paths, relative to the config (what the base uses to judge staleness)."""
    named = config.baseline.agent.fingerprint if config.baseline.agent is not None else ()
    if not named and config.agent is not None:
        named = config.agent.fingerprint
    root = config.path.parent
    return sorted(
        path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
        for path in named
    )


def _rule_loosened(base: RuleSettings, head: RuleSettings, *, k: int) -> str | None:
    """How the head's gated-row rule is looser than the base's, in words; None: it is not.

    ``strict`` to ``sequential`` always (any wrong answer no longer blocks);
    otherwise a change of ``gate.sequential`` under which some row whose
    accuracy dropped blocks less often, exactly (``core/operating.loosening``).
    """
    if base.rule == STRICT:
        if head.rule != STRICT:
            return f"gate.rule changes from strict to {head.rule} (a wrong answer no longer blocks)"
        return None
    if head.rule == STRICT or head == base:
        return None
    looser = loosening(base, head, k=k)
    if looser is None:
        return None
    changed = [
        f"{key} {old:g} -> {new:g}"
        for key, old in base.to_json().items()
        if isinstance(old, (int, float)) and (new := head.to_json()[key]) != old
    ]
    return (
        f"gate.sequential changes ({', '.join(changed)}): a gated row whose accuracy drops from "
        f"{looser.baseline:.0%} to {looser.candidate:.0%} would block {looser.before:.1%} of the "
        f"time, now {looser.after:.1%}"
    )
