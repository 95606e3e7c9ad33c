"""The gated rows in words: each verdict's evidence, unconfirmed wrong answers, how sure.

The evidence behind each verdict, the wrong answers the rule did not
confirm, how sure the gate is for this dataset and its settings, and what
``passk plan`` prints.  Nothing hidden: a gated row the rule passed despite a
wrong candidate answer is listed, one line each with its evidence, below the
rows that block, so a reviewer sees every wrong answer the rule let through.
The "How sure" sentence states the chance the gate blocks a harmless pull
request and catches a drop in a gated row's accuracy, computed exactly for
this result's rule, k and gated rows.  Pure.
"""

from __future__ import annotations

from ..core.operating import (
    DROPPED,
    FEW_ANSWERS,
    HARMLESS,
    DatasetRates,
    GateOC,
    MeasuredRow,
    dataset_oc,
    measured_rates,
)
from ..core.planning import Plan
from ..core.result import CompareResult
from ..core.sequential import (
    OPTIMAL,
    RELATIVE,
    SEQUENTIAL,
    STRICT,
    Outcome,
    RowVerdict,
    RuleSettings,
    score,
)
from .phrases import capped, plural, row_label
from .reasons import evidence, judgement

UNCONFIRMED_TITLE = "Wrong answers the rule did not confirm"


def evidence_line(verdict: RowVerdict, settings: RuleSettings) -> str:
    """``1 wrong of 9 attempts; baseline 0 of 9; within what a row right 99% …``."""
    return f"{evidence(verdict)}; {judgement(verdict, settings)}"


def unconfirmed_items(result: CompareResult) -> list[str]:
    """One item per gated row that passed with a wrong candidate answer, in dataset order."""
    rows = {r.id: r for r in result.comparison.rows}
    settings = result.policy.rule
    items = []
    for row_id, verdict in result.gate.verdicts.items():
        if not verdict.unconfirmed_wrong:
            continue
        row = rows[row_id]
        label = row_label(row_id, must_not_break=row.must_not_break, ratchet=row.in_ratchet)
        items.append(f"{label}: {evidence_line(verdict, settings)}")
    return items


def unconfirmed_lines(result: CompareResult, limit: int) -> list[str]:
    """The list under its title, or nothing when every gated row's answers were right."""
    items = unconfirmed_items(result)
    if not items:
        return []
    return [
        "",
        f"**{UNCONFIRMED_TITLE}** ({len(items)}): these rows pass; each line is what the "
        "gate's rule saw",
        "",
        *capped(items, limit),
    ]


def gate_oc_of(result: CompareResult) -> GateOC | None:
    """What the gate does for this result's gated rows (None: no row is gated)."""
    kinds = [v.kind for v in result.gate.verdicts.values()]
    if not kinds:
        return None
    return dataset_oc(result.policy.rule, k=result.candidate.settings.k, kinds=kinds)


NOISY = 0.001
"""A row that alone blocks a harmless pull request more often than this is named: the
per-row share of the relative rule's targets (a harmless pull request blocked at most 1%
of the time with 10 gated rows, 5% with 50: ``docs/gate-rule.md``)."""
COSTLY = 15.0
"""A row that costs more extra candidate attempts a pull request than this is named."""


def measured_rows_of(result: CompareResult) -> list[MeasuredRow]:
    """Each gated row with the baseline's answers on it: its recorded ones (main and
    measurement) under the relative rule, which judges against those; every one otherwise."""
    records = {r.id: r for r in result.rows}
    by_row = result.baseline.attempts_by_row()
    scoring = result.candidate.settings.scoring
    out = []
    for row_id, verdict in result.gate.verdicts.items():
        side = score(by_row.get(row_id, ()), records[row_id], scoring)
        outcomes = side.outcomes
        if result.policy.rule.rule == RELATIVE:
            outcomes = outcomes[: side.recorded]
        right = sum(1 for o in outcomes if o is Outcome.RIGHT)
        answers = sum(1 for o in outcomes if o is not Outcome.ERROR)
        out.append(MeasuredRow(row_id, verdict.kind, right, answers))
    return out


def rates_of(result: CompareResult) -> DatasetRates | None:
    """The gate's rates at this result's gated rows' measured accuracies (None: none gated)."""
    rows = measured_rows_of(result)
    if not rows:
        return None
    return measured_rates(result.policy.rule, k=result.candidate.settings.k, rows=rows)


def rates_sentence(rates: DatasetRates | None, settings: RuleSettings) -> str:
    """How sure the gate is for this dataset's gated rows, at their measured accuracies, and
    the rows that make it noisy or expensive, named, so the reader knows what to fix."""
    if rates is None or not rates.rows:
        return gate_sentence(None, settings)
    name = settings.rule if settings.rule in (RELATIVE, SEQUENTIAL, STRICT) else "?"
    n = len(rates.rows)
    catch = rates.worst_catch
    caught = (
        f", and catches a gated row whose accuracy drops {rates.drop * 100:.0f} points below "
        f"its own at least {_pct(catch)} of the time (that row alone)"
        if catch is not None
        else ""
    )
    text = (
        f"**The gate** (rule {name}, k = {rates.k}, {plural(n, 'gated row')}, each taken as "
        "accurate on both versions as the baseline's answers show): it blocks a harmless pull "
        f"request {_pct(rates.false_block)} of the time{caught}, at about "
        f"{rates.candidate_extra / n:.1f} extra candidate and {rates.baseline_extra / n:.1f} "
        "baseline attempts a gated row."
    )
    noisy = [r for r in rates.noisiest() if r.block > NOISY]
    if noisy:
        text += (
            " Noisiest: "
            + "; ".join(
                f"`{r.row.id}` (right {_share(r.accuracy)} of {r.row.answers} baseline answers: "
                f"blocks a harmless pull request {_pct(r.block)} of the time)"
                for r in noisy
            )
            + "."
        )
    costly = [r for r in rates.costliest() if r.candidate_extra > COSTLY]
    if costly:
        text += (
            " Costliest: "
            + "; ".join(
                f"`{r.row.id}` (right {_share(r.accuracy)} of the time on the baseline: about "
                f"{r.candidate_extra:.0f} candidate and {r.baseline_extra:.0f} baseline attempts a "
                "pull request)"
                for r in costly
            )
            + "."
        )
    if settings.rule == RELATIVE:
        text += (
            f" The baseline measures each gated row {settings.measure} times when it is recorded."
        )
    few = sum(1 for r in rates.rows if r.row.answers < FEW_ANSWERS)
    if few:
        text += (
            f" {plural(few, 'gated row')} measured on fewer than {FEW_ANSWERS} answers, so taken "
            f"as right at most {HARMLESS:.0%} of the time ({_measure_fix(settings)})."
        )
    return (
        text + " Exact figures (`passk plan`), checked by simulation through `passk compare` "
        "(bench/gate_relative.md)."
    )


def rates_lines(rates: DatasetRates, settings: RuleSettings) -> list[str]:
    """What ``passk plan`` prints of the gated rows at the committed baseline's accuracies."""
    n = len(rates.rows)
    catch = rates.worst_catch
    lines = [
        f"at the accuracy the committed baseline shows on each gated row ({plural(n, 'row')}):",
        f"  a harmless pull request is blocked {_pct(rates.false_block)} of the time",
    ]
    if catch is not None:
        lines.append(
            f"  a gated row whose accuracy drops {rates.drop * 100:.0f} points below its own is "
            f"caught at least {_pct(catch)} of the time (that row alone)"
        )
    lines.append(
        f"  extra attempts a pull request: {rates.candidate_extra:.0f} candidate, "
        f"{rates.baseline_extra:.0f} baseline"
        + (
            f"; {settings.measure} attempts a gated row per recorded baseline"
            if settings.rule == RELATIVE
            else ""
        )
    )
    for r in [r for r in rates.noisiest() if r.block > NOISY]:
        lines.append(
            f"  noisy: {r.row.id} is right {_share(r.accuracy)} of {r.row.answers} baseline "
            f"answers: it alone blocks a harmless pull request {_pct(r.block)} of the time"
        )
    for r in [r for r in rates.costliest() if r.candidate_extra > COSTLY]:
        lines.append(
            f"  costly: {r.row.id} is right {_share(r.accuracy)} of the time on the baseline: "
            f"gating it costs about {r.candidate_extra:.0f} candidate and "
            f"{r.baseline_extra:.0f} baseline attempts a pull request"
        )
    few = sum(1 for r in rates.rows if r.row.answers < FEW_ANSWERS)
    if few:
        lines.append(
            f"  {plural(few, 'row')} measured on fewer than {FEW_ANSWERS} answers, taken as right "
            f"at most {HARMLESS:.0%} of the time ({_measure_fix(settings)})"
        )
    return lines


def _measure_fix(settings: RuleSettings) -> str:
    """How a team gets a gated row measured, under the rule it has."""
    if settings.rule == RELATIVE:
        return (
            "re-record the baseline with `passk baseline` to measure each gated row "
            f"{settings.measure} times"
        )
    return "`gate.rule: relative` measures each gated row when the baseline is recorded"


def rates_json(rates: DatasetRates) -> dict[str, object]:
    """:func:`rates_lines` as JSON: the dataset's figures and each row's."""
    return {
        "false_block": rates.false_block,
        "worst_catch": rates.worst_catch,
        "drop": rates.drop,
        "candidate_extra": rates.candidate_extra,
        "baseline_extra": rates.baseline_extra,
        "rows": [
            {
                "id": r.row.id,
                "right": r.row.right,
                "answers": r.row.answers,
                "accuracy": r.accuracy,
                "block": r.block,
                "catch": r.catch,
                "candidate_extra": r.candidate_extra,
                "baseline_extra": r.baseline_extra,
            }
            for r in rates.rows
        ],
    }


def _share(value: float) -> str:
    return f"{value:.0%}" if value * 100 == int(value * 100) else f"{value:.1%}"


def _pct(share: float) -> str:
    """A rate with the digits it needs: 0.41%, 91.1%, 0.004%."""
    value = share * 100
    if value >= 10:
        return f"{value:.1f}%"
    if value >= 0.1:
        return f"{value:.2f}%"
    return f"{value:.1g}%"


def gate_sentence(oc: GateOC | None, settings: RuleSettings) -> str:
    """How sure the gate is, for these gated rows and settings, in one paragraph."""
    if oc is None:
        return (
            "**The gate:** no row is gated (no must-not-break or ratchet-locked row), so only "
            "protected changes and spend limits can block."
        )
    rule = settings.rule
    cost = (
        f", at about {oc.candidate_extra / oc.gated_rows:.1f} extra candidate attempts a gated row"
        if oc.candidate_extra > 0
        else ""
    )
    return (
        f"**The gate** (rule {rule}, k = {oc.k}, {plural(oc.gated_rows, 'gated row')}): it "
        f"blocks a harmless pull request (every gated row right {HARMLESS:.0%} of the time on "
        f"both versions) {_pct(oc.false_block)} of the time, and catches a gated row whose "
        f"accuracy drops from {HARMLESS:.0%} to {DROPPED:.0%} {_pct(1 - oc.row_miss)} of the "
        f"time (that row's own block: blocks by other rows are not catches){cost}. Exact "
        "figures (`passk plan`), checked by simulation through `passk compare` "
        "(bench/gate_rule_compare.md)."
    )


def settings_text(settings: RuleSettings) -> str:
    """The rule and the settings that matter to it, on one line."""
    if settings.rule == RELATIVE:
        screen = (
            "the screen designed to ask a harmless row least"
            if settings.screen == OPTIMAL
            else f"SPRT screen alpha {settings.screen_alpha:g}, beta {settings.screen_beta:g}, "
            f"against at most {settings.screen_cap:g}; rows the baseline got right at most "
            f"{settings.direct_below:.0%} of the time compared side by side at once"
        )
        return (
            f"relative (a drop of {settings.drop * 100:g} points from each row's own baseline "
            f"accuracy; {screen}; paired comparison alpha {settings.alpha:g}, beta "
            f"{settings.pair_beta:g}; {settings.measure} attempts a gated row per recorded "
            "baseline)"
        )
    if settings.rule != SEQUENTIAL:
        return (
            f"strict (any wrong answer blocks; lost rows confirmed with "
            f"{settings.confirm_attempts} attempts a version)"
        )
    return (
        f"sequential ({settings.reliable:g} against {settings.unreliable:g}, alpha "
        f"{settings.alpha:g}, beta {settings.beta:g}, {settings.max_decisions} answers at most; "
        f"baseline {settings.reliable:g} against {settings.baseline_unreliable:g}, alpha "
        f"{settings.baseline_alpha:g}, beta {settings.baseline_beta:g})"
    )


def _decimal(value: float) -> str:
    """Three significant digits, never in e-notation (YAML 1.1 reads ``5e-05`` as a string)."""
    text = f"{float(f'{value:.3g}'):.12f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _oc_lines(oc: GateOC) -> list[str]:
    return [
        f"  a harmless pull request (every gated row right {oc.accuracy:.1%} of the time on both "
        f"versions) is blocked {_pct(oc.false_block)} of the time",
        f"  a gated row whose accuracy drops to {oc.dropped:.0%} is caught "
        f"{_pct(1 - oc.row_miss)} of the time (that row's own block: blocks by other rows are "
        "not catches)",
        f"  extra attempts a gated row: {oc.candidate_extra / oc.gated_rows:.2f} candidate, "
        f"{oc.baseline_extra / oc.gated_rows:.2f} baseline"
        + (f"; at most {oc.max_rounds} confirmation round(s)" if oc.max_rounds else ""),
    ]


def plan_lines(
    oc: GateOC | None,
    settings: RuleSettings,
    plan: Plan,
    *,
    false_block: float,
    miss: float,
    less_accurate: GateOC | None = None,
) -> list[str]:
    """What ``passk plan`` prints: the rule now, whether it meets the targets, and a suggestion.

    ``less_accurate``: the suggestion's figures for harmless rows a little less accurate
    than the settings assume (:func:`~..core.planning.less_accurate`), said after them:
    the sequential rule holds its rates only at the accuracy it was set for.
    """
    targets = f"false block at most {_pct(false_block)}, miss at most {_pct(miss)}"
    if oc is None:
        lines = ["no gated row (no must-not-break or ratchet-locked row): the gate blocks only "
                 "on protected changes and spend limits"]  # fmt: skip
    else:
        met = oc.false_block <= false_block and oc.row_miss <= miss
        lines = [
            f"gate.rule: {settings_text(settings)}",
            f"k = {oc.k}, {plural(oc.gated_rows, 'gated row')}:",
            *_oc_lines(oc),
            f"targets ({targets}): {'met' if met else 'NOT met'}",
        ]
    s = plan.settings
    head = "settings that meet the targets" if plan.met else "no setting searched meets both;"
    lines += [
        "",
        f"suggested ({head} with the fewest attempts), for passk.yml:",
        "  gate:",
        "    rule: sequential",
        "    sequential: {"
        f"reliable: {s.reliable:g}, unreliable: {s.unreliable:g}, alpha: {_decimal(s.alpha)}, "
        f"beta: {_decimal(s.beta)}, max_decisions: {s.max_decisions}, "
        f"max_attempts: {s.max_attempts}"
        "}",
        *_oc_lines(plan.oc),
    ]
    if less_accurate is not None:
        lines.append(
            f"  these settings assume every gated row is right {plan.oc.accuracy:.1%} of the "
            f"time: were they right {less_accurate.accuracy:.1%}, a harmless pull request "
            f"would be blocked {_pct(less_accurate.false_block)} of the time (the relative "
            "rule judges each row against its own baseline instead)"
        )
    return lines
