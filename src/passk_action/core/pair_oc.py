"""The paired comparison's exact operating characteristic: its block chance and pairs read.

The relative rule's confirmation (``core/relative.py``) reads fresh answers of both
versions in pairs; this computes, without simulation, what it does for versions right
with fixed probabilities (independent attempts, no errors).  Its own module because
both the rule (which designs its screen around the confirmation's figures) and
``core/operating.py`` (which states the rule's figures) need it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .sequential import Boundaries, Ending, SprtSpec, boundaries


def check_probability(name: str, p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {p}")


def theta(baseline: float, candidate: float) -> float:
    """P(loss | the pair disagrees) for versions right with these probabilities (1 if never)."""
    loss = baseline * (1.0 - candidate)
    win = (1.0 - baseline) * candidate
    return loss / (loss + win) if loss + win > 0 else 1.0


@dataclass(frozen=True, slots=True)
class PairOC:
    """The paired comparison at accuracies (p_b, p_c): its block chance and pairs read."""

    block: float
    pairs: float


def pair_oc(
    spec: SprtSpec, baseline: float, candidate: float, max_pairs: int, quiet: int = 0
) -> PairOC:
    """Exact :class:`PairOC` of the paired SPRT ``spec`` (``core/relative.py``).

    Pairs disagree independently with d = p_b (1 - p_c) + (1 - p_b) p_c, a
    disagreement being a loss with theta (:func:`theta`) whatever
    came before.  So the SPRT on disagreements is the one-sample test of
    :func:`ending_times` at "right" = 1 - theta, and its N-th disagreement
    arrives by pair ``max_pairs`` iff Bin(max_pairs, d) >= N (else the
    comparison ends "not shown" at ``max_pairs``).  Block = sum over N of
    P(ends unreliable at N) P(Bin(P, d) >= N); pairs read = sum over N of
    P(ends at N) E[min(T_N, P)], T_N the pair of the N-th disagreement, and
    E[min(T_N, P)] = sum_{i < P} P(Bin(i, d) < N).

    With a quiet stop at m pairs (``quiet`` > 0, :func:`~.relative.quiet_pairs`), the
    comparison also ends "not shown" when its first m pairs agree, which happens with
    (1 - d)^m; after it the pairs are a fresh sequence of P - m, so
    P(T_N <= P, T_1 <= m) = P(Bin(P, d) >= N) - (1 - d)^m P(Bin(P - m, d) >= N), and
    E[min(T_N, P); T_1 <= m] = E[min(T_N, P)] - (1 - d)^m (m + E[min(T'_N, P - m)]);
    a quiet stop reads m pairs.
    """
    check_probability("baseline accuracy", baseline)
    check_probability("candidate accuracy", candidate)
    return _pair_oc(boundaries(spec), baseline, candidate, max_pairs, quiet)


@lru_cache(maxsize=4096)
def _pair_oc(bounds: Boundaries, p_b: float, p_c: float, max_pairs: int, quiet: int) -> PairOC:
    d = p_b * (1.0 - p_c) + (1.0 - p_b) * p_c
    quiet = quiet if 0 < quiet < max_pairs else 0
    if d <= 0.0:
        return PairOC(0.0, float(quiet or max_pairs))
    unreliable_at, reliable_at = ending_times(bounds, 1.0 - theta(p_b, p_c))
    last = bounds.max_decisions
    reach, waits = _arrivals(last, d, max_pairs)
    block = sum(unreliable_at[n] * reach[n] for n in range(1, last + 1))
    pairs = sum((unreliable_at[n] + reliable_at[n]) * waits[n] for n in range(1, last + 1))
    if quiet:
        silent = (1.0 - d) ** quiet
        reach_after, waits_after = _arrivals(last, d, max_pairs - quiet)
        block -= silent * sum(unreliable_at[n] * reach_after[n] for n in range(1, last + 1))
        pairs -= silent * sum(
            (unreliable_at[n] + reliable_at[n]) * (quiet + waits_after[n])
            for n in range(1, last + 1)
        )
        pairs += silent * quiet
    return PairOC(block, pairs)


def _arrivals(last: int, d: float, max_pairs: int) -> tuple[list[float], list[float]]:
    """reach[N] = P(Bin(P, d) >= N) and waits[N] = E[min(T_N, P)] for N = 1 .. last
    (P = ``max_pairs``, T_N the pair of the N-th disagreement; index 0 unused).

    T_N is negative binomial, and t C(t - 1, N - 1) = N C(t, N) gives
    E[T_N; T_N <= P] = (N / d) P(T_{N+1} <= P + 1) = (N / d) P(Bin(P + 1, d) >= N + 1),
    so E[min(T_N, P)] = (N / d) P(Bin(P + 1, d) >= N + 1) + P P(Bin(P, d) < N).
    """
    at_least = _at_least(max_pairs, d)
    one_more = _at_least(max_pairs + 1, d)
    reach = [0.0] * (last + 1)
    waits = [0.0] * (last + 1)
    for n in range(1, last + 1):
        reach[n] = at_least[n] if n <= max_pairs else 0.0
        above = one_more[n + 1] if n + 1 <= max_pairs + 1 else 0.0
        waits[n] = n / d * above + max_pairs * (1.0 - reach[n])
    return reach, waits


def _at_least(trials: int, d: float) -> list[float]:
    """P(Bin(trials, d) >= j) for j = 0 .. trials, summed from the top (small tails exact)."""
    if d >= 1.0:
        return [1.0] * (trials + 1)
    log_d, log_rest = math.log(d), math.log1p(-d)
    whole = math.lgamma(trials + 1)
    pmf = [
        math.exp(
            whole - math.lgamma(j + 1) - math.lgamma(trials - j + 1)
            + j * log_d + (trials - j) * log_rest
        )
        for j in range(trials + 1)
    ]  # fmt: skip
    tails = [0.0] * (trials + 1)
    total = 0.0
    for j in range(trials, -1, -1):
        total += pmf[j]
        tails[j] = min(1.0, total)
    return tails


@lru_cache(maxsize=1024)
def ending_times(bounds: Boundaries, p: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """P(the test ends unreliable / reliable at answer n), answers read one at a time."""
    last = bounds.max_decisions
    unreliable = [0.0] * (last + 1)
    reliable = [0.0] * (last + 1)
    live = {0: 1.0}
    for n in range(1, last + 1):
        step: dict[int, float] = {}
        for w, mass in live.items():
            step[w] = step.get(w, 0.0) + mass * p
            step[w + 1] = step.get(w + 1, 0.0) + mass * (1.0 - p)
        live = {}
        for w, mass in step.items():
            ending = bounds.ending(n, w)
            if ending is Ending.UNRELIABLE:
                unreliable[n] += mass
            elif ending is Ending.RELIABLE:
                reliable[n] += mass
            else:
                live[w] = mass
    return tuple(unreliable), tuple(reliable)
