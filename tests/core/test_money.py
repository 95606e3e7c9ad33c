"""core/money: dollars and bare numbers in plain decimals, everywhere they are printed.

A model cheaper than $0.0001 per decision used to read ``$4.55788e-05`` in the
gate's reason, ``passk gate`` and the ``cost-per-decision`` output.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from passk_action.action.publish import _number
from passk_action.core.gate import GatePolicy, Rule
from passk_action.core.money import plain_decimal, usd, usd_plain
from passk_action.report.spend import money
from support.spend import _gate
from support.words import said


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (4.55788e-05, "$0.0000456"),
        (0.000164, "$0.000164"),
        (0.0123, "$0.0123"),
        (0.5, "$0.500"),
        (1234.5, "$1,234.50"),
        (0, "$0"),
        (-0.0000686, "-$0.0000686"),
        (0.000001, "$0.00000100"),
        (5e-324, "<$0.000001"),  # not 324 digits
        (-1e-9, "-<$0.000001"),
    ],
)
def test_dollars_read_as_decimals(value: float, text: str) -> None:
    assert usd(value) == text
    assert money(value) == text  # the reports' name for the same formatter


def test_a_reasons_dollars_have_a_floor_too() -> None:
    assert usd_plain(5e-324) == "<$0.000001"
    assert usd_plain(0.000001) == "$0.000001"


def test_more_digits_on_request_and_unknown_is_a_dash() -> None:
    assert usd(0.0000686, extra=1) == "$0.00006860"
    assert money(None) == "—"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (4.55788e-05, "0.0000455788"),
        (1.5, "1.5"),
        (1234.5678, "1234.57"),
        (0.1, "0.1"),
        (0, "0"),
        (-2.5e-7, "-0.00000025"),
        (123456789.0, "123456789"),
    ],
)
def test_plain_decimals_for_workflow_expressions(value: float, text: str) -> None:
    assert plain_decimal(value) == text


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False))
def test_a_plain_decimal_has_no_exponent_and_reads_back_close(value: float) -> None:
    text = plain_decimal(value)
    assert "e" not in text.lower() and "," not in text
    if abs(value) >= 1e-300:
        assert math.isclose(float(text), value, rel_tol=1e-5, abs_tol=0)


def test_no_plain_decimal_for_infinity() -> None:
    with pytest.raises(ValueError, match="no plain decimal"):
        plain_decimal(math.inf)


def test_a_cheap_models_cost_failure_and_output_read_as_decimals() -> None:
    _, gate = _gate(0.00003, 4.55788e-05, GatePolicy(max_cost_increase=0.25))
    assert [f.rule for f in gate.failures] == [Rule.COST]
    assert said(gate.failures[0]) == (
        "cost per decision +52% ($0.00003 -> $0.0000455788), at least +52% with 95% confidence, "
        "over gate.max_cost_increase +25%"
    )
    assert _number(4.55788e-05) == "0.0000455788"  # the cost-per-decision output
    assert _number(None) == ""


def test_a_reasons_dollars_keep_the_digits_of_its_percentage() -> None:
    assert usd_plain(0.001254) == "$0.001254"
    assert usd_plain(4.55788e-05) == "$0.0000455788"
    assert usd_plain(-0.5) == "-$0.5"
