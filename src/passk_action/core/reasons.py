"""Why a gate failed, and what it warns of, as data: each a kind with its fields.

:mod:`.gate` decides; :mod:`passk_action.report.reasons` words each kind
(a failure's with the rule that failed and the gate's settings).  A result
file stores them as ``{"kind": ..., fields...}`` (:mod:`.kinds`,
:data:`REASON_KINDS`, :data:`WARNING_KINDS`); one written before it did
(result schema 5 and older) kept the words, read back as :class:`WrittenReason`
and :class:`WrittenWarning`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cost import Unchecked
from .diff import Confirmation
from .kinds import registry
from .model import RowClass
from .protected import Change
from .sequential import RowVerdict


@dataclass(frozen=True)
class Reason:
    """Why one failure fails, in fields; every kind below is one."""


@dataclass(frozen=True)
class StrictUnclassified(Reason):
    """``gate.rule: strict``: a must-not-break row has fewer than k valid decisions."""

    baseline: bool
    """The baseline's attempts are too few to classify the row."""
    candidate: bool


@dataclass(frozen=True)
class StrictLost(Reason):
    """``gate.rule: strict``: a gated row is not stable-correct on the candidate.

    The failure's rule says which rows it gates (must-not-break, the
    ratchet, or any regression); ``confirmation`` is what re-running the row
    on both versions showed (None: not run).
    """

    candidate_class: RowClass
    baseline_class: RowClass
    confirmation: Confirmation | None = None


@dataclass(frozen=True)
class VerdictBlocks(Reason):
    """The sequential or relative rule blocks a gated row: its verdict and evidence."""

    verdict: RowVerdict


@dataclass(frozen=True)
class ProtectedChangeMade(Reason):
    """The pull request changed something that protects the gate (or an earlier run on the
    same commit failed): ``what`` is the change in fields (:mod:`.protected`)."""

    change: str
    """The :class:`~.gate.ProtectedChange`'s kind."""
    what: Change


@dataclass(frozen=True)
class CostUnreported(Reason):
    """Candidate decisions without a cost: ``gate.max_cost_increase`` cannot be checked."""

    missing: int
    decisions: int


@dataclass(frozen=True)
class OverLimit(Reason):
    """A spend figure over its limit beyond noise (``core/cost.py``'s check).

    ``key`` is the limit's config key (``gate.max_cost_increase``: the cost
    per decision, in dollars; ``gate.max_latency_p95_increase``: the p95
    latency per attempt, in seconds).  ``estimate``, ``limit`` and ``bound``
    are relative increases (0.25 = 25% more); ``bound`` is the 95% lower
    confidence bound (None: the quantile test decided, with ``p_value``).
    """

    key: str
    baseline: float
    candidate: float
    estimate: float
    limit: float
    bound: float | None = None
    p_value: float | None = None


@dataclass(frozen=True)
class WrittenReason(Reason):
    """A reason as an older result file words it (schema 5 and older kept the sentence)."""

    text: str


@dataclass(frozen=True)
class GateWarning:
    """What a gate says beside its decision; every kind below is one."""


@dataclass(frozen=True)
class ProtectedChangeAllowed(GateWarning):
    """A protected change the allow label approved."""

    change: str
    what: Change


@dataclass(frozen=True)
class LimitUnchecked(GateWarning):
    """A spend limit the gate could not check, and why (``fewest``: with ``FEW_ATTEMPTS``)."""

    key: str
    why: Unchecked
    fewest: int | None = None


@dataclass(frozen=True)
class WithinNoise(GateWarning):
    """A spend figure over its limit by the estimate, not beyond noise: it does not fail.

    The fields are :class:`OverLimit`'s.
    """

    key: str
    baseline: float
    candidate: float
    estimate: float
    limit: float
    bound: float | None = None
    p_value: float | None = None


@dataclass(frozen=True)
class JudgeNoiseOnly(GateWarning):
    """A row blocked on the judge's disagreement alone: spared (``core/judging.py``)."""

    row: str


@dataclass(frozen=True)
class RowNoise:
    """One row's answers judged two or more times, and those the judge split on."""

    row: str
    split: int
    judged: int


@dataclass(frozen=True)
class JudgeNoiseSeen(GateWarning):
    """How often the judge judged the same answer differently, on each version and per row
    (rows with a split only, sorted)."""

    baseline_split: int
    baseline_judged: int
    candidate_split: int
    candidate_judged: int
    rows: tuple[RowNoise, ...] = ()


@dataclass(frozen=True)
class GatedRowsUnmeasured(GateWarning):
    """Gated rows the committed baseline did not measure for the relative rule
    (``core/verdicts.unmeasured``): judged on their ``k`` recorded answers alone."""

    ids: tuple[str, ...]
    k: int
    measure: int


@dataclass(frozen=True)
class WrittenWarning(GateWarning):
    """A warning as an older result file words it (schema 5 and older kept the sentence)."""

    text: str


WARNING_KINDS = registry(
    ProtectedChangeAllowed,
    LimitUnchecked,
    WithinNoise,
    JudgeNoiseOnly,
    JudgeNoiseSeen,
    GatedRowsUnmeasured,
    WrittenWarning,
)
"""Every gate warning a result file stores, by its name (:class:`WrittenWarning`: an older
file's words, kept as words when its result is written again)."""

REASON_KINDS = registry(
    StrictUnclassified,
    StrictLost,
    VerdictBlocks,
    ProtectedChangeMade,
    CostUnreported,
    OverLimit,
    WrittenReason,
)
"""Every reason a result file stores, by its name (:class:`WrittenReason`: as its warnings)."""
