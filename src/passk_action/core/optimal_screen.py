"""The relative rule's screen, designed: the stopping table that asks a harmless row least.

The screen (``core/relative.py``) reads the candidate's answers on a gated row, one at a
time, and after each either passes the row, sends it to the confirmation (the paired
comparison on fresh answers of both versions) or asks for one more.  Its third design
(``screen: optimal``; a result without ``screen`` was decided by the SPRT) is the table
that minimises, for the baseline's recorded answers on the row (c right of n),

    E_h[answers read] + sum_p weight_p P_p(a drop of ``drop`` passes)

where E_h is at a harmless row right h = :data:`HARMLESS_AT` of the time on both versions
and P_p at a baseline right p of the time whose candidate is right p - ``drop``; both
sides weigh each accuracy by its likelihood of c right of n (Bin(c; n, p)): the screen
knows the row's accuracy only as the recorded answers tell it.  The answers cost 1 each
(the confirmation, its pairs read); a drop the screen passes, or the confirmation misses,
costs its weight.  Backward induction over (answers, wrong), Bellman's principle: the
Bayes sequential decision of DeGroot, "Optimal Statistical Decisions", 1970, ch. 12.

The weights (:data:`WEIGHTS`, on :data:`GRID`) are the Lagrange multipliers that
``bench/gate_bound.py`` found for a catch of 90% at every p from 0.80 to 1.00 in steps of
0.01, with the defaults (drop 0.2, 60 recorded answers, k = 3, the confirmation's
``pair_beta`` 0.005); another drop scales them (:func:`weights_for`), and with any other
settings the screen is still the optimum for these weights, and ``passk plan`` states
its rates exactly.  The weights are part of the design: changing them changes which
recorded attempts pass, so a new set is a new ``screen`` name, never an edit.  What the
design guarantees is the confirmation's: a harmless row blocks only when fresh pairs show
losses.

Edge cases: the answers before ``first`` never end the screen (the k main answers run
anyway); at ``last`` it must end; a state every weight makes equally likely (all masses
underflow to 0) continues below the confirmation's boundary and confirms above it, so
the table is always two boundaries (:class:`~.sequential.Boundaries`).  "Straight to the
confirmation" (its main answers paired) is one more choice, at no answer read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .sequential import Boundaries

HARMLESS_AT = 0.95
"""The harmless row whose answers the screen minimises (the gate's reference row for cost)."""
GRID = tuple(round(0.80 + 0.01 * i, 2) for i in range(21))
"""The baseline accuracies at which a drop must be caught."""
WEIGHTS = (
    0.00373, 0.000462, 8.48e-05, 2.48e-05, 1.21e-05, 9.96e-06, 1.37e-05, 3.01e-05, 9.92e-05,
    0.000458, 0.00274, 0.0194, 0.145, 0.994, 5.22, 17.4, 30.6, 24.1, 7.51, 0.797, 0.0233,
)  # fmt: skip
"""A missed drop's cost at each :data:`GRID` accuracy, in answers, for a drop of
:data:`TUNED_DROP` (bench/gate_bound.md)."""
TUNED_DROP = 0.2


def weights_for(drop: float) -> tuple[float, ...]:
    """:data:`WEIGHTS` for a drop of ``drop``: scaled by (0.2 / drop)^2.

    An answer tells p from p - drop by about drop^2 / (2 p (1 - p)) nats (the
    Kullback-Leibler divergence, to second order), so a catch costs about 1 / drop^2
    times as many answers, and a miss's weight, the price of a catch in answers, scales
    alike.  Tuned only at 0.2: ``bench/gate_relative.md`` states what smaller drops get.
    """
    scale = (TUNED_DROP / drop) ** 2
    return tuple(w * scale for w in WEIGHTS)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What the confirmation does for one baseline count: pairs read on the harmless row
    (candidate answers), and its chance of blocking the drop at each :data:`GRID` p."""

    pairs: float
    caught: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Screen:
    """The designed screen: straight to the confirmation, or these boundaries; ``risk`` is
    the least value of the weighted sum (module doc), up to the factor comb(n, c)."""

    direct: bool
    bounds: Boundaries
    risk: float


_GO_ON, _PASS, _CONFIRM = 0, 1, 2


def design(
    right: int,
    answers: int,
    confirmation: Confirmation,
    *,
    drop: float,
    first: int,
    last: int,
    weights: Sequence[float] = WEIGHTS,
) -> Screen:
    """The optimal screen for a baseline with ``right`` of ``answers`` recorded (module doc)."""
    h = HARMLESS_AT
    # Bin(c; n, p) up to the factor comb(n, c) that every term shares.
    harmless = h**right * (1 - h) ** (answers - right)
    live = [
        (weight * p**right * (1 - p) ** (answers - right), p - drop, 1 - caught)
        for weight, p, caught in zip(weights, GRID, confirmation.caught, strict=True)
        if weight > 0 and p - drop > 0
    ]
    scale = max([harmless] + [m for m, _, _ in live])
    if scale <= 0:
        scale = 1.0
    harmless /= scale
    live = [(m / scale, q, miss) for m, q, miss in live]
    h_right = [h**i for i in range(last + 1)]
    h_wrong = [(1 - h) ** i for i in range(last + 1)]
    d_right = [[q**i for i in range(last + 1)] for _, q, _ in live]
    d_wrong = [[(1 - q) ** i for i in range(last + 1)] for _, q, _ in live]
    acts: list[list[int]] = [[] for _ in range(last + 1)]
    nxt: list[float] = []
    for n in range(last, -1, -1):
        risks = []
        row = acts[n]
        for w in range(n + 1):
            mh = harmless * h_right[n - w] * h_wrong[w]
            passing = confirming = 0.0
            for i, (m, _, miss) in enumerate(live):
                md = m * d_right[i][n - w] * d_wrong[i][w]
                passing += md
                confirming += md * miss
            confirming += mh * confirmation.pairs
            going = mh + nxt[w] + nxt[w + 1] if n < last else math.inf
            if n < first:
                risks.append(going)
                row.append(_GO_ON)
                continue
            best, act = min((going, _GO_ON), (passing, _PASS), (confirming, _CONFIRM))
            risks.append(best)
            row.append(act)
        nxt = risks
    straight = harmless * max(first, confirmation.pairs) + sum(m * miss for m, _, miss in live)
    return Screen(straight < nxt[0], _boundaries(acts, last), min(straight, nxt[0]) * scale)


def _boundaries(acts: list[list[int]], last: int) -> Boundaries:
    """The table as two boundaries: pass up to the last of the leading passes, confirm from
    the first confirmation after them (and always at ``last``)."""
    block_from = [1]
    pass_up_to = [-1]
    for n in range(1, last + 1):
        row = acts[n]
        passing = -1
        while passing + 1 <= n and row[passing + 1] == _PASS:
            passing += 1
        block = next((w for w in range(passing + 1, n + 1) if row[w] == _CONFIRM), n + 1)
        if n == last:
            block = passing + 1
        pass_up_to.append(passing)
        block_from.append(block)
    return Boundaries(last, tuple(block_from), tuple(pass_up_to))
