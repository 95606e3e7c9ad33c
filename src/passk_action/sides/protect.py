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
from ..core.protected import (
    BaselineArtifactChanged,
    ChecksChanged,
    FileTypeChanged,
    FingerprintChanged,
    GatedBy,
    InputChanged,
    LabelChanged,
    NormalizeChanged,
    OwnMarkRemoved,
    RegressionBlockOff,
    RowRemoved,
    RuleEdit,
    RuleLoosened,
    RuleNoLongerStrict,
    ScorerChanged,
    ScoringRulesChanged,
    SettingLowered,
    SettingMoved,
    SpendLimitLoosened,
    TagsDropped,
    TagUnprotected,
    WhenStaleChanged,
)
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
            changes.append(
                ProtectedChange(SPEND_LIMIT_LOOSENED, SpendLimitLoosened(key, old_limit, new_limit))
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
            changes.append(ProtectedChange(FILE_TYPE_CHANGED, FileTypeChanged(path, kind, now)))
    artifact = base.config.baseline.artifact.name
    if base.baseline != head.baseline:
        changes.append(
            ProtectedChange(
                BASELINE_CHANGED, BaselineArtifactChanged(artifact, head.baseline is None)
            )
        )
    if hc.k < bc.k:
        changes.append(ProtectedChange(K_LOWERED, SettingLowered("k", bc.k, hc.k)))
    for key, old, new in (
        ("confirm.attempts", bc.confirm.attempts, hc.confirm.attempts),
        (
            "confirm.must_not_break_attempts",
            bc.confirm.must_not_break_attempts,
            hc.confirm.must_not_break_attempts,
        ),
    ):
        if new < old:
            changes.append(ProtectedChange(CONFIRM_LOWERED, SettingLowered(key, old, new)))
    if bc.gate.block_on_any_regression and not hc.gate.block_on_any_regression:
        changes.append(ProtectedChange(REGRESSION_BLOCK_OFF, RegressionBlockOff()))
    rule_change = _rule_loosened(bc.gate.rule, hc.gate.rule, k=bc.k)
    if rule_change is not None:
        changes.append(ProtectedChange(RULE_LOOSENED, rule_change))
    changes += _spend_limit_changes(bc, hc)
    if bc.scoring.normalize != hc.scoring.normalize:
        changes.append(
            ProtectedChange(
                SCORING_CHANGED, NormalizeChanged(bc.scoring.normalize, hc.scoring.normalize)
            )
        )
    changes += _scoring_changes(bc.scoring.to_json(), hc.scoring.to_json())
    for path, held in base.scorer.items():
        now = head.scorer.get(path, held)
        if now != held:
            changes.append(ProtectedChange(SCORER_CHANGED, ScorerChanged(path, now == "missing")))
    if bc.baseline.when_stale != hc.baseline.when_stale:
        changes.append(
            ProtectedChange(
                STALE_POLICY_CHANGED,
                WhenStaleChanged(bc.baseline.when_stale, hc.baseline.when_stale),
            )
        )
    old_paths, new_paths = _fingerprint_paths(bc), _fingerprint_paths(hc)
    if old_paths != new_paths:
        changes.append(
            ProtectedChange(
                STALE_POLICY_CHANGED, FingerprintChanged(tuple(old_paths), tuple(new_paths))
            )
        )
    base_tags = set(bc.must_not_break_tags)
    for tag in sorted(base_tags - set(hc.must_not_break_tags)):
        changes.append(ProtectedChange(TAG_UNPROTECTED, TagUnprotected(tag)))
    changes += _row_changes(base, head, frozenset(ratchet))
    return tuple(changes)


MUST_NOT_BREAK = GatedBy.MUST_NOT_BREAK
RATCHET_LOCKED = GatedBy.RATCHET_LOCKED
ANY_REGRESSION = GatedBy.ANY_REGRESSION


def gated_rows(base: ProtectedInputs, locked: frozenset[str]) -> dict[str, GatedBy]:
    """Every row of the base the gate judges, by id, and why (the strongest reason first).

    A must-not-break row (its own mark or a tag the base protects); a row the
    base's ratchet locks (its mark may be gone, the lock stays); and, with the
    base's ``block_on_any_regression`` on, every other row of the base: any of
    them that was stable-correct on the baseline blocks when it regresses, and
    which ones were can change when the baseline is measured again.
    """
    any_row = base.config.gate.block_on_any_regression
    gated: dict[str, GatedBy] = {}
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
        after = head_rows.get(row.id)
        if after is None:
            changes.append(ProtectedChange(removed, RowRemoved(why), row.id))
            continue
        if after.input_digest != row.input_digest:
            changes.append(ProtectedChange(INPUT_CHANGED, InputChanged(why), row.id))
        if after.expected != row.expected:
            changes.append(
                ProtectedChange(relabeled, LabelChanged(why, row.expected, after.expected), row.id)
            )
        if after.expected_checks != row.expected_checks:
            changes.append(
                ProtectedChange(
                    relabeled,
                    ChecksChanged(
                        why, _checks_json(row.expected_checks), _checks_json(after.expected_checks)
                    ),
                    row.id,
                )
            )
        if why != MUST_NOT_BREAK:
            continue
        if row.marked and not after.marked:
            changes.append(ProtectedChange(MARK_REMOVED, OwnMarkRemoved(), row.id))
        dropped = sorted((set(row.tags) & base_tags) - set(after.tags))
        if dropped:
            changes.append(ProtectedChange(MARK_REMOVED, TagsDropped(tuple(dropped)), row.id))
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
            edits = tuple(_rule_edits(f"scoring.{key}", old, new))
            changes.append(ProtectedChange(SCORING_RULES_CHANGED, ScoringRulesChanged(edits)))
    return changes


def _rule_edits(name: str, old: Json, new: Json) -> list[RuleEdit]:
    """Each leaf that differs between two rules: a person reads
    ``scoring.fields.amount.tolerance changes from 1.0 to 50.0``, not two JSON objects."""
    if isinstance(old, dict) and isinstance(new, dict):
        edits: list[RuleEdit] = []
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                edits += _rule_edits(f"{name}.{key}", old.get(key), new.get(key))
        return edits
    return [RuleEdit(name, _json_text(old), _json_text(new))]


def _json_text(value: Json) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


def _checks_json(checks: ExpectedChecks) -> str:
    return json.dumps(dict(checks), sort_keys=True)


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


def _rule_loosened(
    base: RuleSettings, head: RuleSettings, *, k: int
) -> RuleNoLongerStrict | RuleLoosened | None:
    """How the head's gated-row rule is looser than the base's; None: it is not.

    ``strict`` to another rule always (any wrong answer no longer blocks);
    otherwise a change of the rule's settings under which some row whose
    accuracy dropped blocks less often, exactly (``core/operating.loosening``).
    """
    if base.rule == STRICT:
        if head.rule != STRICT:
            return RuleNoLongerStrict(head.rule)
        return None
    if head.rule == STRICT or head == base:
        return None
    looser = loosening(base, head, k=k)
    if looser is None:
        return None
    after = head.to_json()
    moved = tuple(
        SettingMoved(key, float(old), float(new))
        for key, old in base.to_json().items()
        if isinstance(old, (int, float))
        and isinstance(new := after[key], (int, float))
        and new != old
    )
    return RuleLoosened(moved, looser.baseline, looser.candidate, looser.before, looser.after)
