"""Student's t distribution: its CDF and quantile, and the regularized incomplete beta.

Pure and dependency-free (no scipy in the container), so every core module
can use it: the error bars and the power figures, and the paired cost and
latency intervals.

Formulas from Abramowitz and Stegun, Handbook of Mathematical Functions
(1964), 26.5 and 26.7; accurate to about 1e-12, checked against scipy and
printed tables in ``tests/core/test_uncertainty.py`` and ``tests/core/test_cost.py``.
"""

from __future__ import annotations

import math
from functools import lru_cache


def regularized_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0.

    Formula: I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) * CF, CF the continued
    fraction 1 / (1 + d_1 / (1 + d_2 / (1 + ...))) with d_{2m+1} =
    -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) and d_{2m} =
    m (b - m) x / ((a + 2m - 1)(a + 2m)), evaluated by the modified Lentz
    method; for x > (a + 1) / (a + b + 2) through I_x(a, b) = 1 - I_{1-x}(b, a),
    where the fraction converges fast (Abramowitz and Stegun 26.5.8).
    Edge cases: 0 at x <= 0, 1 at x >= 1.  Accurate to about 1e-14.
    """
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - regularized_beta(1.0 - x, b, a)
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    tiny = 1e-300

    def nonzero(value: float) -> float:
        return value if abs(value) > tiny else tiny

    c, d = 1.0, 1.0 / nonzero(1.0 - (a + b) * x / (a + 1.0))
    fraction = d
    for m in range(1, 100_000):
        even = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        d = 1.0 / nonzero(1.0 + even * d)
        c = nonzero(1.0 + even / c)
        fraction *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
        d = 1.0 / nonzero(1.0 + odd * d)
        c = nonzero(1.0 + odd / c)
        step = d * c
        fraction *= step
        if abs(step - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` > 0 degrees of freedom.

    Formula: for t >= 0, 1 - I_{df / (df + t^2)}(df / 2, 1 / 2) / 2, and by
    symmetry for t < 0 (Abramowitz and Stegun 26.7.1 and 26.5.27).
    Edge cases: 1/2 at t = 0; tends to 0 and 1 as t goes to -inf and +inf;
    df <= 0 raises ValueError.
    """
    if df <= 0:
        raise ValueError("degrees of freedom must be > 0")
    tail = 0.5 * regularized_beta(df / (df + t * t), df / 2.0, 0.5)
    return 1.0 - tail if t >= 0 else tail


@lru_cache(maxsize=256)
def student_t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = ``p`` for Student's t (Student 1908), 0.5 <= p < 1.

    By bisection on :func:`student_t_cdf` to 1e-12 (no scipy in the
    container); cached, since a report asks for a handful of df.  Examples:
    df = 1 gives 12.7062 at p = 0.975, df = 9 gives 2.2622, a large df tends
    to z = 1.95996.  Edge cases: p outside [0.5, 1) raises ValueError (the
    lower half is -quantile(1 - p) by symmetry), as does df <= 0.
    """
    return _bisect_quantile(p, df)


def _bisect_quantile(p: float, df: float) -> float:
    """:func:`student_t_quantile` uncached (undecorated, so mutation testing reaches it)."""
    if not 0.5 <= p < 1.0:
        raise ValueError("p must be in [0.5, 1)")
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        low, high = high, high * 2.0
    while high - low > 1e-12 * max(1.0, high):
        mid = (low + high) / 2.0
        if student_t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def t_975(df: int) -> float:
    """Two-sided 95% quantile t_{0.975, df}: the multiplier of passk's t intervals.

    :func:`student_t_quantile` at p = 0.975 (Student 1908): 12.7062 at df = 1,
    2.2622 at df = 9, towards z = 1.95996 as df grows.  Edge case: df < 1
    raises ValueError.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return student_t_quantile(0.975, float(df))
