"""The words for a gate's failures and warnings (:mod:`passk_action.core.reasons`).

Pure: a failure (its rule and reason) and the gate's rule settings in, one
line out.  Every renderer and both shells print these lines; a result file
keeps the kinds, so the words may improve without a stored file changing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.cost import Unchecked
from ..core.diff import Confirmation
from ..core.gate import GateFailure, Rule
from ..core.model import RowClass
from ..core.money import usd_plain
from ..core.reasons import (
    CostUnreported,
    GatedRowsUnmeasured,
    GateWarning,
    JudgeNoiseOnly,
    JudgeNoiseSeen,
    LimitUnchecked,
    OverLimit,
    ProtectedChangeAllowed,
    ProtectedChangeMade,
    StrictLost,
    StrictUnclassified,
    VerdictBlocks,
    WithinNoise,
    WrittenReason,
    WrittenWarning,
)
from ..core.sequential import RELATIVE, STRICT, Decision, Finding, RowVerdict, RuleSettings
from ..core.sequential import SideEvidence as Side
from .protected import change_said

_SLACK = 1e-9
"""A relative change within this of the limit reads as at the limit (the gate's own slack)."""

_GATED = {
    Rule.MUST_NOT_BREAK: "must-not-break row",
    Rule.UNCLASSIFIED: "must-not-break row",
    Rule.RATCHET: "row is locked by the ratchet (stable-correct on a recorded baseline) and",
    Rule.REGRESSION: "row was stable-correct on the baseline and",
}


def reason(failure: GateFailure, settings: RuleSettings) -> str:
    """The one line that says why ``failure`` fails (``settings``: the gate's rule)."""
    why = failure.reason
    if isinstance(why, WrittenReason):
        return why.text
    if isinstance(why, StrictUnclassified):
        side = "baseline and the candidate" if why.baseline and why.candidate else "candidate"
        side = "baseline" if why.baseline and not why.candidate else side
        return f"must-not-break row has fewer than k valid decisions on the {side}"
    if isinstance(why, StrictLost):
        return _strict_lost(failure.rule, why)
    if isinstance(why, VerdictBlocks):
        return _verdict_blocks(failure.rule, why.verdict, settings)
    if isinstance(why, ProtectedChangeMade):
        return change_said(why.what)
    if isinstance(why, CostUnreported):
        return (
            f"{why.missing} of {why.decisions} candidate decisions report no cost, so "
            "gate.max_cost_increase cannot be checked (report usage with every answer)"
        )
    if isinstance(why, OverLimit):
        return _over(why)
    raise TypeError(f"no words for {type(why).__name__}")  # a kind added without words


def _strict_lost(rule: Rule, why: StrictLost) -> str:
    is_ = f"is {why.candidate_class.value} on the candidate{_confirmed(why)}"
    if rule is Rule.MUST_NOT_BREAK:
        return f"must-not-break row was stable-correct on the baseline and {is_}"
    if rule is Rule.RATCHET:
        return f"row is locked by the ratchet (stable-correct on a recorded baseline) and {is_}"
    return f"row was stable-correct on the baseline and {is_} (gate.block_on_any_regression is on)"


def _confirmed(why: StrictLost) -> str:
    """What confirmation showed, after a strict failure's reason (nothing when not run).

    The row blocks whatever it showed: the words never suggest the re-run
    cleared it (a row right on every re-run still blocks on its wrong answer).
    A baseline wrong on every answer is said to be, not to vary.
    """
    confirmation = why.confirmation
    if confirmation is None:
        return ""
    if confirmation is Confirmation.NOT_REPRODUCED:
        return " (right on every re-run; under the strict rule a wrong answer blocks)"
    if confirmation is Confirmation.BASELINE_VARIES:
        if why.baseline_class is RowClass.STABLE_WRONG:
            return " (the baseline is stable-wrong too; the ratchet blocks all the same)"
        return " (the baseline varies too; the ratchet blocks all the same)"
    return f" ({confirmation.value})"


def _verdict_blocks(rule: Rule, verdict: RowVerdict, settings: RuleSettings) -> str:
    """A gated row the sequential or relative rule blocks: which rule, and the evidence."""
    undecided = verdict.finding in (Finding.UNDECIDED, Finding.UNABLE)
    said = "cannot be judged" if undecided else "is less reliable"
    because = f"{evidence(verdict)}; {judgement(verdict, settings)}"
    line = f"{_GATED[rule]} {said} on the candidate: {because}"
    return line + (" (gate.block_on_any_regression is on)" if rule is Rule.REGRESSION else "")


def _share(share: float) -> str:
    return f"{share * 100:.10g}%"


def _errored(side: Side) -> str:
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


def _always_wrong(side: Side) -> bool:
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
        return _strict_judgement(verdict)
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
        return _baseline_varies(verdict, settings)
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


def _strict_judgement(verdict: RowVerdict) -> str:
    if verdict.finding is Finding.UNCLASSIFIED:
        return "fewer than k valid answers (strict rule)"
    if verdict.blocks:
        return "the strict rule blocks on any wrong answer"
    if verdict.finding is Finding.BASELINE_VARIES:
        return "the baseline answered wrong too (strict rule)"
    return "no wrong answer (strict rule)"


def _baseline_varies(verdict: RowVerdict, settings: RuleSettings) -> str:
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


# --- spend limits ----------------------------------------------------------------------


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


def _increase_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"


def _p_text(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"


def _figure(why: OverLimit | WithinNoise) -> str:
    """The figure and its increase: ``cost per decision +40% ($0.01 -> $0.014)``."""
    over = why.estimate > why.limit + _SLACK
    increase = _over_limit(why.estimate, why.limit)[0] if over else _increase_text(why.estimate)
    if why.key == "gate.max_cost_increase":
        detail = f"({usd_plain(why.baseline)} -> {usd_plain(why.candidate)})"
        return f"cost per decision {increase} {detail}"
    detail = f"({why.baseline:.3g} s -> {why.candidate:.3g} s)"
    return f"p95 latency per attempt {increase} {detail}"


def _over(why: OverLimit) -> str:
    _, limit_text = _over_limit(why.estimate, why.limit)
    if why.bound is not None:
        bound_text, limit_text = _over_limit(why.bound, why.limit)
        shown = f"at least {bound_text} with 95% confidence"
    else:
        shown = f"beyond noise (quantile test p {_p_text(why.p_value)})"
    return f"{_figure(why)}, {shown}, over {why.key} {limit_text}"


def _within_noise(why: WithinNoise) -> str:
    _, limit_text = _over_limit(why.estimate, why.limit)
    shown = (
        f"at least {_increase_text(why.bound)} with 95% confidence"
        if why.bound is not None
        else f"quantile test p {_p_text(why.p_value)}"
    )
    return (
        f"{_figure(why)} is over {why.key} {limit_text} but within noise "
        f"({shown}; a candidate exactly at the limit fails at most 5% of the time), "
        "so it does not fail the gate"
    )


_UNCHECKED = {
    Unchecked.NO_BASELINE_COST: "the baseline reports no cost (have the agent report usage, "
    "or set pricing, and record the baseline again)",
    Unchecked.NO_CANDIDATE_DECISIONS: "the candidate made no decisions",
    Unchecked.FEW_COST_ROWS: "fewer than 2 rows with a cost on both versions",
    Unchecked.NO_CANDIDATE_LATENCY: "the candidate has no attempt with a measured latency",
    Unchecked.NO_BASELINE_LATENCY: "the baseline has no latency above 0 s",
    Unchecked.NO_ATTEMPTS: "no attempts",
}


def _unchecked(why: LimitUnchecked) -> str:
    if why.why is Unchecked.FEW_ATTEMPTS:
        said = (
            f"{why.fewest} attempts on a version are too few to tell a p95 latency over "
            "the limit from noise (at 5% false alarms)"
        )
    else:
        said = _UNCHECKED[why.why]
    return f"{why.key} was not checked: {said}"


# --- the judge's noise -----------------------------------------------------------------


def _noise_only(why: JudgeNoiseOnly) -> str:
    return (
        f"{why.row}: blocked on the judge's disagreement alone (it judged the same answer both "
        "right and wrong), so it does not fail the gate; raise scoring.judge_repeats, or make "
        "the rubric decide this answer"
    )


def _noise_seen(why: JudgeNoiseSeen) -> str:
    """The one line that tells the judge's noise from the agent's."""
    split = why.baseline_split + why.candidate_split
    judged = why.baseline_judged + why.candidate_judged
    rows = [r.row for r in why.rows]
    named = f" (rows: {', '.join(rows[:10])}{', …' if len(rows) > 10 else ''})" if rows else ""
    each = "; ".join(f"{r.row} {r.split} of {r.judged}" for r in why.rows[:10])
    return (
        f"the judge judged the same answer differently on {split} of {judged} answers "
        f"(candidate {why.candidate_split} of {why.candidate_judged}, baseline "
        f"{why.baseline_split} of {why.baseline_judged}){named}: that is the judge's noise, "
        "not the agent's (the flip rate counts answers the agent gave differently)"
        + (f"; per row, of the answers judged there: {each}" if each else "")
        + ("; raise scoring.judge_repeats, or fix the rubric" if split else "")
    )


SHOWN_IDS = 5


def _unmeasured(why: GatedRowsUnmeasured) -> str:
    """What the gate does with gated rows the committed baseline did not measure, and the fix."""
    ids = why.ids
    shown = ", ".join(f"`{i}`" for i in ids[:SHOWN_IDS]) + (", ..." if len(ids) > SHOWN_IDS else "")
    many = len(ids) != 1
    return (
        f"{len(ids)} gated row{'s' if many else ''} ({shown}) {'have' if many else 'has'} no "
        "measurement in the committed baseline (recorded before `gate.rule: relative` measured "
        f"gated rows, or the row{'s' if many else ''} became gated since): "
        f"{'each is' if many else 'it is'} judged against its {why.k} recorded answers alone, "
        "which blocks a harmless pull request no more often (the side-by-side comparison's "
        "bound needs no measurement) but costs more attempts in every pull request where the "
        "row is not right every time; re-record the baseline with `passk baseline` (or the "
        f"`mode: baseline` job on main) to measure each gated row {why.measure} times"
    )


_WARNINGS: dict[type[GateWarning], Callable[[Any], str]] = {
    GatedRowsUnmeasured: _unmeasured,
    WrittenWarning: lambda why: str(why.text),
    ProtectedChangeAllowed: lambda why: f"allowed protected change: {change_said(why.what)}",
    LimitUnchecked: _unchecked,
    WithinNoise: _within_noise,
    JudgeNoiseOnly: _noise_only,
    JudgeNoiseSeen: _noise_seen,
}


def warning(said: GateWarning) -> str:
    """The one line that says a gate's warning."""
    words = _WARNINGS.get(type(said))
    if words is None:  # a kind added without words
        raise TypeError(f"no words for {type(said).__name__}")
    return words(said)


def warnings(gate_warnings: tuple[GateWarning, ...]) -> list[str]:
    return [warning(w) for w in gate_warnings]
