"""The gate: pass or fail, from recorded verdicts only.

The gate never runs an agent.  A gated row (must-not-break, ratchet-locked,
or any baseline-stable-correct row under ``block_on_any_regression``)
fails when its verdict under the gate's rule (``core/sequential.py``, every
recorded attempt read by ``core/verdicts.py``) blocks; the reason states
the evidence.  Under ``gate.rule: strict`` the reasons are the ones passk
gave before the sequential rule, from the rows' final classes
(:func:`strict_failure`), so older results decide as they did.
Anyone holding a result file can recompute the decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from .cost import LimitCheck, SpendComparison, Unchecked
from .diff import RowComparison
from .kinds import kind_to_json
from .model import RowClass
from .protected import Change
from .reasons import (
    CostUnreported,
    GateWarning,
    LimitUnchecked,
    OverLimit,
    ProtectedChangeAllowed,
    ProtectedChangeMade,
    Reason,
    StrictLost,
    StrictUnclassified,
    VerdictBlocks,
    WithinNoise,
)
from .sequential import DEFAULT_RULE, STRICT, Finding, RowVerdict, RuleSettings


class Rule(str, Enum):
    """Why a gate failed: four are about rows, two about the PR, two about what it spends."""

    UNCLASSIFIED = "unclassified"
    MUST_NOT_BREAK = "must-not-break"
    RATCHET = "ratchet"
    REGRESSION = "regression"
    PROTECTED_CHANGE = "protected-change"
    RECORDED_FAILURE = "recorded-failure"
    COST = "cost"
    LATENCY = "latency"


RECORDED_FAILURE_KIND = "recorded-failure"
"""A :class:`ProtectedChange` kind: an earlier run on the same commit failed.

Used when the verdicts of that run could not be kept (too large for the
record): a re-run must not be a way to get a different answer, so the
failure stands, and no label can allow it.
"""


@dataclass(frozen=True, slots=True)
class GateFailure:
    """One rule broken, on one row (``id``) or by the pull request; ``reason`` in fields."""

    rule: Rule
    reason: Reason
    id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "rule": self.rule.value, "reason": kind_to_json(self.reason)}


@dataclass(frozen=True, slots=True)
class ProtectedChange:
    """An edit in the pull request to something that protects the gate itself.

    Examples: the committed baseline artifact changed, a must-not-break row
    was removed or relabeled, a must-not-break tag was dropped, k lowered.
    ``kind`` names the rule the edit breaks; ``what`` is the edit in fields
    (:mod:`.protected`; only ``report/`` words it).
    """

    kind: str
    what: Change
    id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "what": kind_to_json(self.what), "id": self.id}


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """The config's ``gate`` rules (read from the base commit in CI).

    ``rule`` decides the gated rows (``gate.rule`` and its settings:
    ``relative``, the default, ``sequential`` or ``strict``).  ``max_cost_increase``
    and ``max_latency_p95_increase`` are relative limits (0.25 = 25% more)
    on the candidate's cost per decision and p95 latency per attempt; None
    (the default) leaves them unchecked.  Each fails only when the increase
    is over the limit beyond noise, so a candidate exactly at the limit
    fails at most 5% of the time (``core/cost.py``:
    :meth:`~.cost.SpendComparison.cost_check`,
    :meth:`~.cost.SpendComparison.latency_check`).
    """

    block_on_any_regression: bool = False
    max_cost_increase: float | None = None
    max_latency_p95_increase: float | None = None
    rule: RuleSettings = DEFAULT_RULE

    @property
    def limits_spend(self) -> bool:
        return self.max_cost_increase is not None or self.max_latency_p95_increase is not None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "block_on_any_regression": self.block_on_any_regression,
            "rule": self.rule.to_json(),
        }
        if self.max_cost_increase is not None:
            out["max_cost_increase"] = self.max_cost_increase
        if self.max_latency_p95_increase is not None:
            out["max_latency_p95_increase"] = self.max_latency_p95_increase
        return out


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    failures: tuple[GateFailure, ...]
    warnings: tuple[GateWarning, ...] = ()
    verdicts: Mapping[str, RowVerdict] = field(default_factory=dict)
    """Every gated row's verdict, in dataset order (a result file keeps them with its rows;
    the audit compares the decision, which they make)."""

    def to_json(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "failures": [f.to_json() for f in self.failures],
            "warnings": [kind_to_json(w) for w in self.warnings],
        }


def strict_failure(row: RowComparison, policy: GatePolicy) -> GateFailure | None:
    """The one rule a row breaks under ``gate.rule: strict``, the most fundamental first.

    The rule passk had before the sequential rule, from the row's final classes (over
    every attempt, confirmation included); its verdict
    (:func:`~.sequential.judge_strict`) blocks exactly when this fails.

    Order: unclassified (we cannot even tell), must-not-break regression,
    ratchet, then any regression when the policy blocks on those.
    """
    base, cand = row.baseline_final_class, row.candidate_final_class
    if row.must_not_break and RowClass.UNCLASSIFIED in (base, cand):
        unclassified = StrictUnclassified(
            baseline=base is RowClass.UNCLASSIFIED, candidate=cand is RowClass.UNCLASSIFIED
        )
        return GateFailure(Rule.UNCLASSIFIED, unclassified, row.id)
    lost = StrictLost(cand, base, row.confirmation)
    regressed = base is RowClass.STABLE_CORRECT and cand is not RowClass.STABLE_CORRECT
    if row.must_not_break and regressed:
        return GateFailure(Rule.MUST_NOT_BREAK, lost, row.id)
    if row.in_ratchet and cand is not RowClass.STABLE_CORRECT:
        return GateFailure(Rule.RATCHET, lost, row.id)
    if policy.block_on_any_regression and regressed:
        return GateFailure(Rule.REGRESSION, lost, row.id)
    return None


def _sequential_failure(row: RowComparison, verdict: RowVerdict) -> GateFailure:
    """A gated row the sequential or relative rule blocks: which rule, and the evidence."""
    undecided = verdict.finding in (Finding.UNDECIDED, Finding.UNABLE)
    blocks = VerdictBlocks(verdict)
    if row.must_not_break:
        rule = Rule.UNCLASSIFIED if undecided else Rule.MUST_NOT_BREAK
        return GateFailure(rule, blocks, row.id)
    if row.in_ratchet:
        return GateFailure(Rule.RATCHET, blocks, row.id)
    return GateFailure(Rule.REGRESSION, blocks, row.id)


def row_failure(
    row: RowComparison, verdict: RowVerdict | None, policy: GatePolicy
) -> GateFailure | None:
    """The failure of one row: none unless its verdict blocks (a row without one is not gated)."""
    if verdict is None or not verdict.blocks:
        return None
    if verdict.rule == STRICT:
        failure = strict_failure(row, policy)
        if failure is None:  # pragma: no cover - judge_strict and strict_failure agree
            raise AssertionError(f"the strict rule blocks {row.id!r} without a reason")
        return failure
    return _sequential_failure(row, verdict)


LIMIT_SLACK = 1e-9
"""A relative change within this of the limit counts as at the limit (float noise)."""


def decide(
    rows: Sequence[RowComparison],
    policy: GatePolicy = GatePolicy(),
    *,
    verdicts: Mapping[str, RowVerdict],
    protected_changes: Iterable[ProtectedChange] = (),
    protected_changes_allowed: bool = False,
    spend: SpendComparison | None = None,
) -> GateDecision:
    """Fail on any gated row whose verdict blocks, an unallowed protected change, or a spend
    limit passed.

    ``verdicts`` are the gated rows' (:func:`~.verdicts.gated_verdicts`,
    judged with nothing more possible).  A better pass^k or accuracy
    elsewhere never overrides a failure: the headline numbers are not
    inputs to the gate at all.  The spend limits
    (``spend`` is needed when the policy sets one) add their own failures
    beside the row failures; neither hides the other.
    """
    failures: list[GateFailure] = []
    warnings: list[GateWarning] = []
    for change in protected_changes:
        made = ProtectedChangeMade(change.kind, change.what)
        if change.kind == RECORDED_FAILURE_KIND:
            failures.append(GateFailure(Rule.RECORDED_FAILURE, made, change.id))
        elif protected_changes_allowed:
            warnings.append(ProtectedChangeAllowed(change.kind, change.what))
        else:
            failures.append(GateFailure(Rule.PROTECTED_CHANGE, made, change.id))
    for row in rows:
        failure = row_failure(row, verdicts.get(row.id), policy)
        if failure is not None:
            failures.append(failure)
    if policy.limits_spend:
        if spend is None:
            raise ValueError("a gate with spend limits needs the spend comparison")
        _spend_rules(spend, policy, failures, warnings)
    return GateDecision(
        passed=not failures,
        failures=tuple(failures),
        warnings=tuple(warnings),
        verdicts=dict(verdicts),
    )


def _spend_rules(
    spend: SpendComparison,
    policy: GatePolicy,
    failures: list[GateFailure],
    warnings: list[GateWarning],
) -> None:
    """The cost and latency limits: each a failure with its own reason."""
    base, cand = spend.baseline, spend.candidate
    limit = policy.max_cost_increase
    if limit is not None:
        key = "gate.max_cost_increase"
        missing = cand.decisions - cand.cost_decisions
        if base.cost_per_decision is None or base.cost_per_decision <= 0:
            warnings.append(LimitUnchecked(key, Unchecked.NO_BASELINE_COST))
        elif cand.decisions == 0:
            warnings.append(LimitUnchecked(key, Unchecked.NO_CANDIDATE_DECISIONS))
        elif missing > 0:
            failures.append(GateFailure(Rule.COST, CostUnreported(missing, cand.decisions)))
        else:
            figures = (base.cost_per_decision, cand.cost_per_decision or 0.0)
            _limit_rule(Rule.COST, key, figures, spend.cost_check(limit), failures, warnings)
    limit = policy.max_latency_p95_increase
    if limit is not None:
        key = "gate.max_latency_p95_increase"
        if spend.latency_p95_increase is None:
            why = (
                Unchecked.NO_CANDIDATE_LATENCY
                if cand.latency_p95 is None and base.latency_p95
                else Unchecked.NO_BASELINE_LATENCY
            )
            warnings.append(LimitUnchecked(key, why))
        else:
            assert base.latency_p95 is not None and cand.latency_p95 is not None
            figures = (base.latency_p95, cand.latency_p95)
            check = spend.latency_check(limit, LIMIT_SLACK)
            _limit_rule(Rule.LATENCY, key, figures, check, failures, warnings)


def _limit_rule(
    rule: Rule,
    key: str,
    figures: tuple[float, float],
    check: LimitCheck,
    failures: list[GateFailure],
    warnings: list[GateWarning],
) -> None:
    """A spend limit fails only beyond noise (false alarm at most 5% at the limit itself).

    ``figures`` are the baseline's and the candidate's (cost per decision,
    or p95 latency).  Over the limit by the point estimate but not by the
    confidence bound is a warning that says so: the increase is not shown to
    be real.
    """
    if check.exceeded is None:
        assert check.why is not None
        warnings.append(LimitUnchecked(key, check.why, check.fewest))
        return
    assert check.estimate is not None
    over = check.estimate > check.limit + LIMIT_SLACK
    beyond = check.bound is None or check.bound > check.limit + LIMIT_SLACK
    fields = (key, *figures, check.estimate, check.limit, check.bound, check.p_value)
    if check.exceeded and beyond:
        failures.append(GateFailure(rule, OverLimit(*fields)))
    elif over:
        warnings.append(WithinNoise(*fields))
