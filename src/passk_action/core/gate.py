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

from .cost import LimitCheck, SpendComparison
from .diff import Confirmation, RowComparison
from .model import RowClass
from .money import usd_plain
from .sequential import (
    DEFAULT_RULE,
    RELATIVE,
    STRICT,
    Decision,
    Finding,
    RowVerdict,
    RuleSettings,
    SideEvidence,
)


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
    rule: Rule
    reason: str
    id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "rule": self.rule.value, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ProtectedChange:
    """An edit in the pull request to something that protects the gate itself.

    Examples: the committed baseline artifact changed, a must-not-break row
    was removed or relabeled, a must-not-break tag was dropped, k lowered.
    """

    kind: str
    detail: str
    id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "detail": self.detail, "id": self.id}


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """The config's ``gate`` rules (read from the base commit in CI).

    ``rule`` decides the gated rows (``gate.rule`` and its settings:
    ``sequential``, the default, or ``strict``).  ``max_cost_increase``
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
    warnings: tuple[str, ...] = ()
    verdicts: Mapping[str, RowVerdict] = field(default_factory=dict)
    """Every gated row's verdict, in dataset order (a result file keeps them with its rows;
    the audit compares the decision, which they make)."""

    def to_json(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "failures": [f.to_json() for f in self.failures],
            "warnings": list(self.warnings),
        }


def _confirmed(row: RowComparison) -> str:
    """What confirmation showed, after a strict failure's reason (nothing when not run).

    The row blocks whatever it showed: the words never suggest the re-run
    cleared it (a row right on every re-run still blocks on its wrong answer).
    A baseline wrong on every answer is said to be, not to vary.
    """
    confirmation = row.confirmation
    if confirmation is None:
        return ""
    if confirmation is Confirmation.NOT_REPRODUCED:
        return " (right on every re-run; under the strict rule a wrong answer blocks)"
    if confirmation is Confirmation.BASELINE_VARIES:
        if row.baseline_final_class is RowClass.STABLE_WRONG:
            return " (the baseline is stable-wrong too; the ratchet blocks all the same)"
        return " (the baseline varies too; the ratchet blocks all the same)"
    return f" ({confirmation.value})"


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
        side = "baseline" if base is RowClass.UNCLASSIFIED else "candidate"
        if base is RowClass.UNCLASSIFIED and cand is RowClass.UNCLASSIFIED:
            side = "baseline and the candidate"
        return GateFailure(
            Rule.UNCLASSIFIED,
            f"must-not-break row has fewer than k valid decisions on the {side}",
            row.id,
        )
    confirmed = _confirmed(row)
    if (
        row.must_not_break
        and base is RowClass.STABLE_CORRECT
        and cand is not RowClass.STABLE_CORRECT
    ):
        return GateFailure(
            Rule.MUST_NOT_BREAK,
            f"must-not-break row was stable-correct on the baseline and is {cand.value} "
            f"on the candidate{confirmed}",
            row.id,
        )
    if row.in_ratchet and cand is not RowClass.STABLE_CORRECT:
        return GateFailure(
            Rule.RATCHET,
            f"row is locked by the ratchet (stable-correct on a recorded baseline) and is "
            f"{cand.value} on the candidate{confirmed}",
            row.id,
        )
    if (
        policy.block_on_any_regression
        and base is RowClass.STABLE_CORRECT
        and cand is not RowClass.STABLE_CORRECT
    ):
        return GateFailure(
            Rule.REGRESSION,
            f"row was stable-correct on the baseline and is {cand.value} on the candidate"
            f"{confirmed} (gate.block_on_any_regression is on)",
            row.id,
        )
    return None


def _share(share: float) -> str:
    return f"{share * 100:.10g}%"


def _errored(side: SideEvidence) -> str:
    return f" ({side.errors} errored)" if side.errors else ""


def evidence(verdict: RowVerdict) -> str:
    """``1 wrong of 9 attempts; baseline 0 of 3``: what a gated row's verdict rests on.

    Every recorded attempt counts, main and confirmation; an errored one is
    an attempt without an answer, said apart.
    """
    cand, base = verdict.candidate, verdict.baseline
    return (
        f"{cand.wrong} wrong of {cand.attempts} attempts{_errored(cand)}; "
        f"baseline {base.wrong} of {base.attempts}{_errored(base)}"
    )


def _always_wrong(side: SideEvidence) -> bool:
    """Every valid answer of a side was wrong (and it gave one): it never varied."""
    return side.decisions > 0 and side.wrong == side.decisions


def judgement(verdict: RowVerdict, settings: RuleSettings) -> str:
    """What the rule made of the evidence, in words (the finding, with the rule's accuracies).

    "Varies" is said only of a baseline seen both right and wrong; a side
    wrong on every answer is stable-wrong, whatever the test's hypothesis.
    """
    reliable = f"a row right {_share(settings.reliable)} of the time"
    finding = verdict.finding
    if verdict.rule == STRICT:
        if finding is Finding.UNCLASSIFIED:
            return "fewer than k valid answers (strict rule)"
        if verdict.blocks:
            return "the strict rule blocks on any wrong answer"
        if finding is Finding.BASELINE_VARIES:
            return "the baseline answered wrong too (strict rule)"
        return "no wrong answer (strict rule)"
    if finding is Finding.UNABLE:
        return (
            f"the agent could not answer: its last {settings.unable_after} attempts at the row "
            "all errored, so it was not asked again"
        )
    if verdict.rule == RELATIVE:
        return _relative_judgement(verdict, settings)
    if finding is Finding.RELIABLE:
        return f"as reliable as {reliable}"
    if finding is Finding.WITHIN_CHANCE:
        return f"within what {reliable} does by chance"
    if finding is Finding.BASELINE_VARIES:
        if _always_wrong(verdict.baseline):
            # It never varied: say what was seen, not what the test's hypothesis calls it.
            if _always_wrong(verdict.candidate):
                return "wrong on every answer on both versions (stable-wrong): not a regression"
            return (
                "clearly less reliable, but the baseline was wrong on every answer "
                "(stable-wrong): not a regression"
            )
        return (
            "clearly less reliable, but the baseline varies too (its answers fit a row right "
            f"{_share(settings.baseline_unreliable)} of the time better than "
            f"{_share(settings.reliable)}): not a regression"
        )
    if finding is Finding.REGRESSION:
        return (
            f"more wrong answers than {reliable} gives by chance, and the baseline was not "
            "shown to vary as much"
        )
    wait = " (more attempts asked)" if verdict.decision is Decision.MORE else ""
    return (
        f"too few answers to tell {reliable} from one right "
        f"{_share(settings.unreliable)} of the time{wait}"
    )


def _relative_judgement(verdict: RowVerdict, settings: RuleSettings) -> str:
    """The relative rule's finding in words (``core/relative.py``)."""
    base = verdict.baseline
    recorded = base.decisions - (verdict.pairs or 0)
    measured = f"the baseline's {recorded} recorded answers"
    finding = verdict.finding
    if finding in (Finding.RELIABLE, Finding.WITHIN_CHANCE):
        return f"as accurate as {measured} show the baseline to be"
    paired = (
        f"side by side on {verdict.pairs} fresh pairs: {verdict.losses} the baseline got right "
        f"and the candidate not, {verdict.wins} the other way"
    )
    if finding is Finding.MATCHES_BASELINE:
        return f"{paired}; no worse than the baseline"
    if finding is Finding.BASELINE_VARIES:
        return f"{measured} are right too rarely to drop by {_share(settings.drop)}"
    if finding is Finding.REGRESSION:
        if verdict.pairs:
            return f"{paired}: less accurate than the baseline"
        return (
            f"less accurate than {measured} show the baseline to be, not yet compared side by side"
        )
    wait = " (more attempts asked)" if verdict.decision is Decision.MORE else ""
    return f"too few answers to tell it from the baseline, its attempts spent{wait}"


def _sequential_failure(
    row: RowComparison, verdict: RowVerdict, settings: RuleSettings
) -> GateFailure:
    """A gated row the sequential or relative rule blocks: which rule, and the evidence."""
    undecided = verdict.finding in (Finding.UNDECIDED, Finding.UNABLE)
    said = "cannot be judged" if undecided else "is less reliable"
    because = f"{evidence(verdict)}; {judgement(verdict, settings)}"
    if row.must_not_break:
        rule = Rule.UNCLASSIFIED if undecided else Rule.MUST_NOT_BREAK
        return GateFailure(rule, f"must-not-break row {said} on the candidate: {because}", row.id)
    if row.in_ratchet:
        return GateFailure(
            Rule.RATCHET,
            f"row is locked by the ratchet (stable-correct on a recorded baseline) and {said} "
            f"on the candidate: {because}",
            row.id,
        )
    return GateFailure(
        Rule.REGRESSION,
        f"row was stable-correct on the baseline and {said} on the candidate: {because} "
        "(gate.block_on_any_regression is on)",
        row.id,
    )


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
    return _sequential_failure(row, verdict, policy.rule)


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
    warnings: list[str] = []
    for change in protected_changes:
        if change.kind == RECORDED_FAILURE_KIND:
            failures.append(GateFailure(Rule.RECORDED_FAILURE, change.detail, change.id))
        elif protected_changes_allowed:
            warnings.append(f"allowed protected change: {change.detail}")
        else:
            failures.append(GateFailure(Rule.PROTECTED_CHANGE, change.detail, change.id))
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


# A relative change within this of the limit counts as at the limit (float noise).
_LIMIT_SLACK = 1e-9


def _over_limit(increase: float, limit: float) -> tuple[str, str]:
    """The increase and the limit as signed percentages, for a reason that says "over".

    The limit reads as configured (0.125 -> +12.5%); the increase with the
    fewest decimals (up to 7) that still read above it, so a 25.4% increase
    never reads "+25%, over ... +25%".
    """
    limit_text = f"{limit * 100:+.10g}"
    for decimals in range(8):
        text = f"{increase * 100:+.{decimals}f}"
        if float(text) > float(limit_text):
            break
    return f"{text}%", f"{limit_text}%"


def _spend_rules(
    spend: SpendComparison,
    policy: GatePolicy,
    failures: list[GateFailure],
    warnings: list[str],
) -> None:
    """The cost and latency limits: each a failure with its own reason."""
    base, cand = spend.baseline, spend.candidate
    limit = policy.max_cost_increase
    if limit is not None:
        missing = cand.decisions - cand.cost_decisions
        increase = spend.cost_increase
        if base.cost_per_decision is None or base.cost_per_decision <= 0:
            warnings.append(
                "gate.max_cost_increase was not checked: the baseline reports no cost "
                "(have the agent report usage, or set pricing, and record the baseline again)"
            )
        elif cand.decisions == 0:
            warnings.append(
                "gate.max_cost_increase was not checked: the candidate made no decisions"
            )
        elif missing > 0:
            failures.append(
                GateFailure(
                    Rule.COST,
                    f"{missing} of {cand.decisions} candidate decisions report no cost, so "
                    "gate.max_cost_increase cannot be checked (report usage with every answer)",
                )
            )
        else:
            cost = cand.cost_per_decision or 0
            detail = f"({usd_plain(base.cost_per_decision)} -> {usd_plain(cost)})"
            _limit_rule(
                Rule.COST,
                "gate.max_cost_increase",
                f"cost per decision {{}} {detail}",
                spend.cost_check(limit),
                failures,
                warnings,
            )
    limit = policy.max_latency_p95_increase
    if limit is not None:
        increase = spend.latency_p95_increase
        if increase is None:
            why = (
                "the candidate has no attempt with a measured latency"
                if cand.latency_p95 is None and base.latency_p95
                else "the baseline has no latency above 0 s"
            )
            warnings.append(f"gate.max_latency_p95_increase was not checked: {why}")
        else:
            detail = f"({base.latency_p95:.3g} s -> {cand.latency_p95:.3g} s)"
            _limit_rule(
                Rule.LATENCY,
                "gate.max_latency_p95_increase",
                f"p95 latency per attempt {{}} {detail}",
                spend.latency_check(limit, _LIMIT_SLACK),
                failures,
                warnings,
            )


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"


def _limit_rule(
    rule: Rule,
    key: str,
    what: str,
    check: LimitCheck,
    failures: list[GateFailure],
    warnings: list[str],
) -> None:
    """A spend limit fails only beyond noise (false alarm at most 5% at the limit itself).

    ``what`` names the figure, ``{}`` standing for its increase.  Over the
    limit by the point estimate but not by the confidence bound is a
    warning that says so: the increase is not shown to be real.
    """
    if check.exceeded is None:
        warnings.append(f"{key} was not checked: {check.why}")
        return
    assert check.estimate is not None
    over = check.estimate > check.limit + _LIMIT_SLACK
    increase = _over_limit(check.estimate, check.limit)[0] if over else _percent(check.estimate)
    beyond = check.bound is None or check.bound > check.limit + _LIMIT_SLACK
    if check.exceeded and beyond:
        _, limit_text = _over_limit(check.estimate, check.limit)
        if check.bound is not None:
            bound_text, limit_text = _over_limit(check.bound, check.limit)
            evidence = f"at least {bound_text} with 95% confidence"
        else:
            evidence = f"beyond noise (quantile test p {_p_text(check.p_value)})"
        failures.append(
            GateFailure(rule, f"{what.format(increase)}, {evidence}, over {key} {limit_text}")
        )
    elif over:
        _, limit_text = _over_limit(check.estimate, check.limit)
        evidence = (
            f"at least {_percent(check.bound)} with 95% confidence"
            if check.bound is not None
            else f"quantile test p {_p_text(check.p_value)}"
        )
        warnings.append(
            f"{what.format(increase)} is over {key} {limit_text} but within noise "
            f"({evidence}; a candidate exactly at the limit fails at most 5% of the time), "
            "so it does not fail the gate"
        )


def _p_text(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"
