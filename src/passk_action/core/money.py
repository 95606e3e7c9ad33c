"""Amounts written as people and workflow expressions read them: plain decimals, never ``e-05``.

Dollars for reading (:func:`usd`, three significant digits, every report),
dollars whose digits back a stated percentage (:func:`usd_plain`, a gate's
reason) and a bare number a later workflow step compares (:func:`plain_decimal`).
Python's ``g`` format switches to exponent notation below 1e-4, so a model
cheaper than $0.0001 per decision read ``$4.55788e-05``.
"""

from __future__ import annotations

import math

#: Below a millionth of a dollar an amount reads as "under $0.000001": a
#: reported cost of 5e-324 would otherwise print 324 digits.
SMALLEST_SHOWN = 1e-6


def usd(value: float, extra: int = 0) -> str:
    """US dollars to three significant digits, at least cents: $0.000164, $0.0123, $1,234.50.

    ``extra`` more decimals when two figures would otherwise read alike.  Zero is
    ``$0``; a negative amount keeps its sign before the dollar sign; a non-zero
    amount under ``SMALLEST_SHOWN`` reads ``<$0.000001``.
    """
    if value == 0:
        return "$0"
    magnitude = abs(value)
    if magnitude < SMALLEST_SHOWN:
        return ("-" if value < 0 else "") + "<$0.000001"
    decimals = 2 if magnitude >= 1 else max(2, 2 - math.floor(math.log10(magnitude)))
    sign = "-" if value < 0 else ""
    return f"{sign}${magnitude:,.{decimals + extra}f}"


def plain_decimal(value: float, significant: int = 6) -> str:
    """``value`` to ``significant`` digits as a plain decimal: 0.0000455788, 1.5, 1234.57.

    No exponent, no grouping, no trailing zeros: a number a workflow expression
    (``fromJSON``) or a shell comparison reads as it is.  Non-finite values have
    no such form and raise ``ValueError``.
    """
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no plain decimal form")
    if value == 0:
        return "0"
    decimals = max(0, significant - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def usd_plain(value: float) -> str:
    """US dollars to six significant digits, no trailing zeros: $0.001254, $0.0000455788.

    For a gate's reason, where both amounts must show the increase it states
    (+25.4% is $0.001 -> $0.001254, not $0.00100 -> $0.00125).  A non-zero
    amount under ``SMALLEST_SHOWN`` reads ``<$0.000001``, as in :func:`usd`.
    """
    if value != 0 and abs(value) < SMALLEST_SHOWN:
        return usd(value)
    text = plain_decimal(value)
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"
