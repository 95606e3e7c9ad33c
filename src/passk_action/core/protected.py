"""What a protected change is, as data: each shape of edit a kind with its fields.

``sides/protect`` finds the edits; :mod:`passk_action.report.protected` words
them.  A result file stores one as ``{"kind": ..., fields...}``
(:mod:`.kinds`, :data:`Change.KINDS`); one written before it did (result
schema 6 and older) kept the sentence, read back as :class:`WrittenChange`.
Scoring values are kept as JSON text (a rule's value may be any JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from .kinds import registry


class GatedBy(str, Enum):
    """Why a row of the base is gated: its mark, the ratchet, or ``block_on_any_regression``."""

    MUST_NOT_BREAK = "must-not-break"
    RATCHET_LOCKED = "ratchet-locked"
    ANY_REGRESSION = "any-regression"


@dataclass(frozen=True)
class Change:
    """One protected edit, in fields; every kind below is one."""

    KINDS: ClassVar[dict[str, type[Change]]]


@dataclass(frozen=True)
class FileTypeChanged(Change):
    """A protected path turned into another kind of file (``before``/``after`` in words)."""

    path: str
    before: str
    after: str


@dataclass(frozen=True)
class BaselineArtifactChanged(Change):
    """The committed baseline artifact edited (or deleted)."""

    artifact: str
    deleted: bool


@dataclass(frozen=True)
class SettingLowered(Change):
    """A count setting lowered (``k``, ``confirm.attempts``, …)."""

    key: str
    before: int
    after: int


@dataclass(frozen=True)
class RegressionBlockOff(Change):
    """``gate.block_on_any_regression`` turned off."""


@dataclass(frozen=True)
class RuleNoLongerStrict(Change):
    """``gate.rule`` changed from strict to ``rule``: a wrong answer no longer blocks."""

    rule: str


@dataclass(frozen=True)
class SettingMoved:
    """One numeric setting of the gated-row rule, before and after."""

    key: str
    before: float
    after: float


@dataclass(frozen=True)
class RuleLoosened(Change):
    """The rule's settings changed so that a row whose accuracy drops from ``baseline`` to
    ``candidate`` blocks ``after`` of the time instead of ``before`` (``core/operating``)."""

    settings: tuple[SettingMoved, ...]
    baseline: float
    candidate: float
    before: float
    after: float


@dataclass(frozen=True)
class SpendLimitLoosened(Change):
    """A relative spend limit raised (``after``) or removed (None)."""

    key: str
    before: float
    after: float | None = None


@dataclass(frozen=True)
class NormalizeChanged(Change):
    """``scoring.normalize`` changed."""

    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True)
class RuleEdit:
    """One leaf of a scoring rule that differs: its dotted name, its values as JSON text
    (None: not set)."""

    name: str
    before: str | None
    after: str | None


@dataclass(frozen=True)
class ScoringRulesChanged(Change):
    """A scoring rule but ``normalize`` changed: every leaf that differs."""

    edits: tuple[RuleEdit, ...]


@dataclass(frozen=True)
class ScorerChanged(Change):
    """A file of the scorer program edited (or deleted)."""

    path: str
    deleted: bool


@dataclass(frozen=True)
class WhenStaleChanged(Change):
    """``baseline.when_stale`` changed."""

    before: str
    after: str


@dataclass(frozen=True)
class FingerprintChanged(Change):
    """``agent.fingerprint``'s paths changed (relative to the config)."""

    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True)
class TagUnprotected(Change):
    """A tag removed from ``must_not_break.tags``."""

    tag: str


@dataclass(frozen=True)
class RowRemoved(Change):
    """A gated row removed from the dataset."""

    gated_by: GatedBy


@dataclass(frozen=True)
class InputChanged(Change):
    """A gated row's input changed."""

    gated_by: GatedBy


@dataclass(frozen=True)
class LabelChanged(Change):
    """A gated row's expected decision changed (None: its environment scores it)."""

    gated_by: GatedBy
    before: str | None
    after: str | None


@dataclass(frozen=True)
class ChecksChanged(Change):
    """A gated row's expected checks changed (each side as JSON text of an object)."""

    gated_by: GatedBy
    before: str
    after: str


@dataclass(frozen=True)
class OwnMarkRemoved(Change):
    """A must-not-break row's own mark removed."""


@dataclass(frozen=True)
class TagsDropped(Change):
    """A must-not-break row loses protecting tags."""

    tags: tuple[str, ...]


@dataclass(frozen=True)
class RecordedFailure(Change):
    """An earlier run on the same content failed; a re-run cannot overturn it."""


@dataclass(frozen=True)
class WrittenChange(Change):
    """A change as an older result file words it (schema 6 and older kept the sentence)."""

    text: str


Change.KINDS = registry(
    FileTypeChanged,
    BaselineArtifactChanged,
    SettingLowered,
    RegressionBlockOff,
    RuleNoLongerStrict,
    RuleLoosened,
    SpendLimitLoosened,
    NormalizeChanged,
    ScoringRulesChanged,
    ScorerChanged,
    WhenStaleChanged,
    FingerprintChanged,
    TagUnprotected,
    RowRemoved,
    InputChanged,
    LabelChanged,
    ChecksChanged,
    OwnMarkRemoved,
    TagsDropped,
    RecordedFailure,
    WrittenChange,
)
