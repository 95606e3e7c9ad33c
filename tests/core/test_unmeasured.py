"""A baseline recorded before the relative rule measured gated rows: said, never silent.

The relative rule (the default) judges a gated row against the baseline's
recorded answers on it, ``gate.sequential.measure`` of them.  A baseline
recorded before that (or before the row became must-not-break) holds only
its k main answers: the gate still judges the row (the paired comparison's
bound on harmless blocks needs no measurement), and says which rows are
unmeasured, what it does with them, and how to measure them.
"""

from __future__ import annotations

from passk_action.core.gate import GatePolicy
from passk_action.core.model import Phase, Version
from passk_action.core.result import evaluate
from passk_action.core.sequential import RuleSettings
from passk_action.report.reasons import warning
from support.runs import attempts, record, run_of

RIGHT = ["deny"] * 3
RELATIVE = GatePolicy()
MEASURE = RELATIVE.rule.measure


def _warnings(base: list, policy: GatePolicy = RELATIVE) -> tuple[str, ...]:  # type: ignore[type-arg]
    rows = [record("m", mnb=True), record("other")]
    cand = attempts("m", RIGHT) + attempts("other", RIGHT)
    baseline = run_of(rows, base + attempts("other", RIGHT), version=Version.BASELINE)
    _, gate = evaluate(rows, baseline, run_of(rows, cand), ratchet=frozenset(), policy=policy)
    return tuple(warning(said) for said in gate.warnings)


def test_the_default_rule_is_relative() -> None:
    assert RuleSettings().rule == "relative" and RELATIVE.rule.rule == "relative"


def test_a_baseline_without_measurement_says_so_and_how_to_measure() -> None:
    [warning] = _warnings(attempts("m", RIGHT))
    assert warning.startswith(
        "1 gated row (`m`) has no measurement in the committed baseline (recorded before "
        "`gate.rule: relative` measured gated rows, or the row became gated since): it is "
        "judged against its 3 recorded answers alone, which blocks a harmless pull request no "
        "more often"
    ), warning
    assert warning.endswith(
        "re-record the baseline with `passk baseline` (or the `mode: baseline` job on main) "
        f"to measure each gated row {MEASURE} times"
    ), warning


def test_a_measured_baseline_says_nothing() -> None:
    """Control: the same row, measured as `passk baseline` measures it."""
    measured = attempts("m", RIGHT) + attempts(
        "m", ["deny"] * (MEASURE - 3), start=4, phase=Phase.MEASURE
    )
    assert _warnings(measured) == ()


def test_the_other_rules_read_no_measurement_and_say_nothing() -> None:
    for rule in ("sequential", "strict"):
        assert _warnings(attempts("m", RIGHT), GatePolicy(rule=RuleSettings(rule=rule))) == ()
