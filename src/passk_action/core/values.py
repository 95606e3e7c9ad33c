"""What a token count, an amount in US dollars, a duration, a relative limit and a price may be.

One definition of each value rule, used by every reader: an agent's
``usage`` (agents/answer.py), the three importers (fast paths included),
the artifact reader (whole document and fast lines) and the config
(pricing, ``gate.max_*``).  Each rule takes a decoded JSON or YAML value
and returns it as a Python number, or None when it breaks the rule; the
caller decides what breaking it costs (a warning on an agent's answer, a
value left out of an import, an error naming the key in a file passk
reads).

Every rule is a range, finite at both ends, chosen so that no real value is
refused and no arithmetic passk does on accepted values can overflow:

- a **token count** is a whole number from 0 to 10^12 (given as an integer
  or as a float with no fraction, ``12.0``); real attempts spend at most
  millions;
- a **price** is US dollars per million tokens, from 0 to 10^5 (the
  dearest model today costs hundreds);
- an **amount** is US dollars, from 0 to 10^12.  A cost priced from the
  config is at most 2 x 10^12 tokens x 10^5 $/Mtok / 10^6 = 2 x 10^11,
  within the rule, so whatever passk writes it reads back;
- a **duration** is seconds, from 0 to 10^9 (about 32 years);
- a **relative limit** (``gate.max_cost_increase``) is a share, from 0 to
  10^6 (+100,000,000%);
- a **tolerance** (``scoring.fields.*.tolerance``) is a number in the
  field's own unit, from 0 to 10^12, and a **relative tolerance** a share
  of the expected value, from 0 to 1 (100%: anything between 0 and twice
  the expected value).  The numbers they compare are any finite JSON
  numbers (:func:`finite`).

- a **chance** (a rate or an accuracy ``passk plan`` is given) is a number
  from 10^-6 to 1 - 10^-6: the exact figures are sums of probabilities in
  floats, and rarer events than one in a million cost searches of minutes
  (``--false-block 1e-30``) while meaning nothing a gate can measure;
- **k**, the attempts per row, is a whole number from 2 (one attempt has no
  flip) to 1,000, in the config and in ``passk plan --k`` alike.

Why sums are safe: a float overflows past 1.8 x 10^308.  A sum (or mean)
of n amounts is at most n x 10^12, and a variance term (a squared
difference) at most 10^24, so nothing overflows below n = 10^280 attempts,
which no file holds.  A ratio of two amounts is the one unbounded figure
(a baseline that cost almost nothing): ``core.cost.relative_change`` caps
it at :data:`MAX_RELATIVE_CHANGE`, above every limit a config can set.

Integers are compared before any conversion to float, so an integer of
400 digits is refused by the rule instead of raising ``OverflowError``.
"""

from __future__ import annotations

import math
import unicodedata

MAX_TOKENS = 10**12
MAX_PRICE = 10**5
MAX_USD = 10**12
MAX_SECONDS = 10**9
MAX_RELATIVE = 10**6
MAX_TOLERANCE = 10**12
MAX_RELATIVE_TOLERANCE = 1
MAX_RELATIVE_CHANGE = 10**12
"""Where a relative change is capped: above every limit (a baseline near 0 makes it huge)."""

COUNT_TEXT = "a whole number from 0 to 10^12"
AMOUNT_TEXT = "a number from 0 to 10^12"
SECONDS_TEXT = "a number of seconds from 0 to 10^9"
MAX_NESTING = 100
"""Levels of lists and mappings a config, a YAML dataset or an answer may nest (recursion-safe)."""
MIN_CHANCE = 1e-6
MIN_K = 2
MAX_K = 1000
CHANCE_TEXT = "a number from 10^-6 to 1 - 10^-6 (e.g. 0.05)"
K_TEXT = "a whole number from 2 to 1000"
RELATIVE_TEXT = "a share from 0 to 10^6 (e.g. 0.25 for +25%)"
PRICE_TEXT = "a price from 0 to 10^5 dollars per million tokens"
TOLERANCE_TEXT = "a number from 0 to 10^12, in the field's own unit"
RELATIVE_TOLERANCE_TEXT = "a share of the expected value from 0 to 1 (e.g. 0.02 for 2%)"


def _within(value: object, high: int) -> float | None:
    """``value`` as a float when it is a JSON number (not a boolean) in [0, high].

    The comparison comes first, on the value as given: exact for an integer
    of any size, and false for NaN.
    """
    # A float first (the common case, one cheap test), then any other number.
    if type(value) is float or (not isinstance(value, bool) and isinstance(value, (int, float))):
        return float(value) if 0 <= value <= high else None
    return None


def count(value: object) -> int | None:
    """A token count: a whole number from 0 to :data:`MAX_TOKENS` (``12.0`` is 12)."""
    if type(value) is int:
        return value if 0 <= value <= MAX_TOKENS else None
    number = _within(value, MAX_TOKENS)
    return int(number) if number is not None and number.is_integer() else None


def amount(value: object) -> float | None:
    """An amount in US dollars: a number from 0 to :data:`MAX_USD`."""
    return _within(value, MAX_USD)


def seconds(value: object) -> float | None:
    """A duration: a number of seconds from 0 to :data:`MAX_SECONDS`."""
    return _within(value, MAX_SECONDS)


def relative_limit(value: object) -> float | None:
    """A relative limit (a share, 0.25 = +25%): a number from 0 to :data:`MAX_RELATIVE`."""
    return _within(value, MAX_RELATIVE)


def price(value: object) -> float | None:
    """US dollars per million tokens: a number from 0 to :data:`MAX_PRICE`."""
    return _within(value, MAX_PRICE)


def tolerance(value: object) -> float | None:
    """An absolute tolerance: a number from 0 to :data:`MAX_TOLERANCE`."""
    return _within(value, MAX_TOLERANCE)


def relative_tolerance(value: object) -> float | None:
    """A relative tolerance: a share of the expected value from 0 to 1."""
    return _within(value, MAX_RELATIVE_TOLERANCE)


def chance(value: object) -> float | None:
    """A chance: a number from :data:`MIN_CHANCE` to 1 - :data:`MIN_CHANCE` (not NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if MIN_CHANCE <= value <= 1 - MIN_CHANCE else None


def attempts_per_row(value: object) -> int | None:
    """k: a whole number from :data:`MIN_K` to :data:`MAX_K`."""
    return value if type(value) is int and MIN_K <= value <= MAX_K else None


def nested_deeper(value: object, limit: int) -> bool:
    """Whether lists and mappings in ``value`` nest more than ``limit`` levels (iteratively)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def row_id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a row id, or None: an id is non-empty text without controls.

    Ids are shown in logs, annotations, file names and the comment, where a
    NUL or a newline cuts or forges lines (``"a\nb::error::x"``).  The
    dataset loader and every importer apply this one rule, so a dataset
    ``passk import --dataset-out`` writes is one its loader reads.
    """
    if not value.strip():
        return "is empty"
    control = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        return f"contains the control character U+{ord(control):04X}"
    return None


def within_tolerance(
    got: float, expected: float, absolute: float | None, relative: float | None
) -> bool:
    """Whether ``got`` is within ``absolute`` of ``expected``, or within ``relative`` x |expected|.

    Exact equality always counts; either tolerance is enough when both are
    set; None sets none.  Both numbers are finite floats (:func:`finite`),
    so the difference cannot overflow to NaN (it may be inf, which no
    tolerance reaches).
    """
    if got == expected:
        return True
    gap = abs(got - expected)
    if absolute is not None and gap <= absolute:
        return True
    return relative is not None and gap <= relative * abs(expected)


_FLOAT_MAX = int(1.7976931348623157e308)


def finite(value: object) -> float | None:
    """Any finite JSON number as a float (a reward, a score); None for what float() cannot hold.

    Not a boolean, NaN or an infinity, and no integer beyond a float's
    range (10^400 would raise ``OverflowError``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return float(value) if -_FLOAT_MAX <= value <= _FLOAT_MAX else None
    return value if math.isfinite(value) else None
