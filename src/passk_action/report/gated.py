"""The gated rows in words: each verdict's evidence, unconfirmed wrong answers, how sure.

The evidence behind each verdict, the wrong answers the rule did not
confirm, how sure the gate is for this dataset and its settings, and what
``passk plan`` prints.  Nothing hidden (issue 20): a gated row the rule passed despite a wrong
candidate answer is listed, one line each with its evidence, below the rows
that block.  The "How sure" sentence states the chance the gate blocks a
harmless pull request and catches a drop in a gated row's accuracy, exactly
(``core/operating.py``), for this result's rule, k and gated rows.  Pure.
"""

from __future__ import annotations

from ..core.gate import evidence, judgement
from ..core.operating import DROPPED, HARMLESS, GateOC, Plan, dataset_oc
from ..core.result import CompareResult
from ..core.sequential import SEQUENTIAL, RowVerdict, RuleSettings
from .phrases import capped, plural, row_label

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
    rule = "sequential" if settings.rule == SEQUENTIAL else "strict"
    cost = (
        f", at about {oc.candidate_extra / oc.gated_rows:.1f} extra candidate attempts a gated row"
        if oc.candidate_extra > 0
        else ""
    )
    return (
        f"**The gate** (rule {rule}, k = {oc.k}, {plural(oc.gated_rows, 'gated row')}): it "
        f"blocks a harmless pull request (every gated row right {HARMLESS:.0%} of the time on "
        f"both versions) {_pct(oc.false_block)} of the time, and catches a gated row whose "
        f"accuracy drops from {HARMLESS:.0%} to {DROPPED:.0%} {_pct(oc.catch)} of the "
        f"time{cost}. Exact figures (`passk plan`), checked by simulation through `passk compare` "
        "(bench/gate_rule_compare.md)."
    )


def settings_text(settings: RuleSettings) -> str:
    """The rule and the settings that matter to it, on one line."""
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
        f"  a gated row whose accuracy drops to {oc.dropped:.0%} is caught {_pct(oc.catch)} of "
        f"the time (that row alone blocks {_pct(1 - oc.row_miss)})",
        f"  extra attempts a gated row: {oc.candidate_extra / oc.gated_rows:.2f} candidate, "
        f"{oc.baseline_extra / oc.gated_rows:.2f} baseline; at most {oc.max_rounds} "
        f"confirmation round(s)",
    ]


def plan_lines(
    oc: GateOC | None, settings: RuleSettings, plan: Plan, *, false_block: float, miss: float
) -> list[str]:
    """What ``passk plan`` prints: the rule now, whether it meets the targets, and a suggestion."""
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
    return lines
