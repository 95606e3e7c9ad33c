"""The outcome of comparing a candidate with its baseline, as one value.

A :class:`CompareResult` holds both recorded runs (every attempt), the
authoritative row labels and marks, the row-by-row comparison and the gate.
It is what ``passk compare`` writes, what ``passk gate`` re-derives the gate
from, and what every renderer (Markdown, PR comment, HTML, JUnit) reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .cost import compare_spend
from .diff import Comparison, compare_runs
from .gate import GateDecision, GatePolicy, ProtectedChange, decide
from .judging import judge_noise, noise_seen, spare_judge_noise
from .model import RowRecord, Run
from .notes import Note
from .reasons import GatedRowsUnmeasured
from .scoring import rescore_run
from .verdicts import gated_verdicts, unmeasured, with_verdicts


@dataclass(frozen=True, slots=True)
class Executions:
    """How many agent executions a comparison used, and what the naive way costs.

    The naive way re-runs the baseline on every row for every pull request:
    rows x k on each version, plus the same confirmations.
    """

    candidate: int = 0
    baseline_topup: int = 0
    confirm_baseline: int = 0
    confirm_candidate: int = 0
    naive: int = 0
    candidate_recorded: int = 0
    """Of ``candidate``, the main attempts recorded before this comparison (a run given
    with ``--candidate``: merged shards, an import), which ran no agent now."""
    confirm_rounds: int = 0
    """Rounds of confirmation (each runs what every row asked for, on each version)."""

    @property
    def ran_now(self) -> int:
        """The agent executions this comparison made itself."""
        return self.total - self.candidate_recorded

    @property
    def total(self) -> int:
        return self.candidate + self.baseline_topup + self.confirm_baseline + self.confirm_candidate

    def to_json(self) -> dict[str, int]:
        """The counts; ``candidate_recorded`` only when some were (results before it had none)."""
        recorded = {"candidate_recorded": self.candidate_recorded}
        if not self.candidate_recorded:
            recorded = {}
        return {
            "candidate": self.candidate,
            "baseline_topup": self.baseline_topup,
            "confirm_baseline": self.confirm_baseline,
            "confirm_candidate": self.confirm_candidate,
            "total": self.total,
            "naive": self.naive,
            "confirm_rounds": self.confirm_rounds,
            **recorded,
        }


@dataclass(frozen=True)
class CompareResult:
    rows: tuple[RowRecord, ...]
    """Authoritative labels and must-not-break marks (from the PR's base in CI)."""
    baseline: Run
    candidate: Run
    ratchet: frozenset[str]
    policy: GatePolicy
    comparison: Comparison
    gate: GateDecision
    protected_changes: tuple[ProtectedChange, ...] = ()
    protected_changes_allowed: bool = False
    notes: tuple[Note, ...] = ()
    """Plain facts the report must state (top-ups, relabeled rows, reuse, ratchet exits)."""
    executions: Executions = field(default_factory=Executions)
    warnings: tuple[Note, ...] = ()
    """What a reader must see first: a stale baseline, a confirmation that was skipped."""
    reused: bool = False
    """True when the verdicts were reused from an earlier run on the same head commit."""
    created_at: str = ""
    tool_version: str = ""


def evaluate(
    rows: Sequence[RowRecord],
    baseline: Run,
    candidate: Run,
    *,
    ratchet: frozenset[str],
    policy: GatePolicy,
    protected_changes: Sequence[ProtectedChange] = (),
    protected_changes_allowed: bool = False,
) -> tuple[Comparison, GateDecision]:
    """Compare two recorded runs and decide the gate: the only path to a decision.

    ``passk compare`` and ``passk gate`` both call this, so a decision can
    always be reproduced from the recorded attempts alone: the gated rows'
    verdicts (``core/verdicts.py``) are judged here from every recorded
    attempt, with no attempt more possible.
    """
    settings = candidate.settings
    # The candidate's rules are the gate's: a baseline recorded under others is read again.
    baseline = rescore_run(baseline, settings.scoring)

    def decide_on(candidate: Run) -> tuple[Comparison, GateDecision]:
        return _decided(
            rows,
            baseline,
            candidate,
            ratchet=ratchet,
            policy=policy,
            protected_changes=protected_changes,
            protected_changes_allowed=protected_changes_allowed,
        )

    comparison, gate = decide_on(candidate)
    if settings.scoring.by_scorer:
        # Never blocked on the judge's disagreement alone (core/judging.py).
        gate = spare_judge_noise(gate, candidate, lambda doubted: decide_on(doubted)[1])
        said = noise_seen(
            judge_noise(baseline.attempts, settings.scoring),
            judge_noise(candidate.attempts, settings.scoring),
        )
        if said is not None:
            gate = replace(gate, warnings=(*gate.warnings, said))
    return comparison, gate


def _decided(
    rows: Sequence[RowRecord],
    baseline: Run,
    candidate: Run,
    *,
    ratchet: frozenset[str],
    policy: GatePolicy,
    protected_changes: Sequence[ProtectedChange],
    protected_changes_allowed: bool,
) -> tuple[Comparison, GateDecision]:
    settings = candidate.settings
    base_rows, cand_rows = baseline.attempts_by_row(), candidate.attempts_by_row()
    comparison = compare_runs(
        rows, base_rows, cand_rows, k=settings.k, scoring=settings.scoring, ratchet=ratchet
    )
    verdicts = gated_verdicts(
        rows,
        comparison,
        base_rows,
        cand_rows,
        policy,
        settings,
        more_possible=False,
    )
    comparison = with_verdicts(comparison, verdicts, base_rows, cand_rows)
    gate = decide(
        comparison.rows,
        policy,
        verdicts=verdicts,
        protected_changes=protected_changes,
        protected_changes_allowed=protected_changes_allowed,
        spend=compare_spend(baseline, candidate) if policy.limits_spend else None,
    )
    missing = unmeasured(verdicts, base_rows, policy.rule, settings.k)
    if missing:
        said = GatedRowsUnmeasured(missing, settings.k, policy.rule.measure)
        gate = replace(gate, warnings=(*gate.warnings, said))
    return comparison, gate
