"""The gate rule's operating characteristics, exactly: false block, miss, attempts.

For the rules of ``core/sequential.py`` and answers that are right with a
fixed probability per attempt (independent attempts, no errors), this
computes without simulation:

- per gated row: the chance it blocks, the expected attempts on each version
  (the k main attempts always run; the baseline's main attempts are
  already recorded, so only its confirmations count), the most rounds of
  confirmation it can take;
- per pull request with G gated rows: the chance the gate blocks a harmless
  one (1 - (1 - b)^G, rows independent), and the chance it catches one row
  whose accuracy dropped, alone or among G - 1 harmless rows.

The sequential rule's figures come from dynamic programming over its test:
the probability of every undecided state (answers n, wrong w) is carried
forward one answer at a time, and the mass that crosses a boundary is where
the test ends (Wald 1945; the standard exact computation for a truncated
test with integer boundaries, e.g. Jennison and Turnbull, "Group Sequential
Methods", 2000, ch. 19).  The strict rule's are closed forms.  Both are
checked against simulation in ``tests/core/test_operating.py`` and
``bench/gate_rule.py``; these are the figures the comment's "How sure"
section and ``passk plan`` state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .pair_oc import check_probability, pair_oc
from .relative import direct, pair_spec, quiet_pairs, screen_bounds
from .sequential import (
    RELATIVE,
    SEQUENTIAL,
    Boundaries,
    GatedKind,
    RuleSettings,
    SprtSpec,
    boundaries,
)

DEFAULT_SETTINGS = RuleSettings()

HARMLESS = 0.99
"""The accuracy of a harmless gated row in the gate's goals (both versions)."""
DROPPED = 0.7
"""The accuracy a gated row drops to in the gate's goals (the candidate)."""


@dataclass(frozen=True, slots=True)
class SideOC:
    """One version's sequential test at per-answer accuracy ``accuracy``.

    ``unreliable`` is the chance it ends "unreliable" (else "reliable": the
    truncated test always ends); ``answers`` the expected answers it reads
    before ending; ``attempts`` the expected attempts made, which is more:
    the first ``main`` always run, and each round runs what the rule asked
    for whole, even when the test ends inside it; ``rounds`` the expected
    rounds after the main attempts.
    """

    accuracy: float
    unreliable: float
    answers: float
    attempts: float
    rounds: float


def side_oc(spec: SprtSpec, accuracy: float, main: int = 0) -> SideOC:
    """Exact :class:`SideOC` of the test ``spec`` by dynamic programming over (n, w).

    Within a round, P(n, w) of the undecided states is carried one answer
    at a time: (n, w) moves to (n + 1, w) with probability p and to
    (n + 1, w + 1) with 1 - p; mass landing on w >= block_from[n + 1] ends
    "unreliable", on w <= pass_up_to[n + 1] "reliable", and is removed
    (having read n + 1 answers and made all of the round's attempts).  The
    first round is the ``main`` attempts, looked at once, at its end; each
    later one, from an undecided
    (n, w), the answers that would end the test if all were right
    (:meth:`~.sequential.Boundaries.rights_to_pass`), as :func:`~.sequential.judge`
    asks.  The test ends by ``max_decisions``, so all mass has ended there.
    """
    check_probability("accuracy", accuracy)
    return _side_oc(boundaries(spec), accuracy, main)


def bounds_oc(bounds: Boundaries, accuracy: float, main: int = 0) -> SideOC:
    """:func:`side_oc` for a test given as its boundaries (the relative rule's designed screen)."""
    check_probability("accuracy", accuracy)
    return _side_oc(bounds, accuracy, main)


@lru_cache(maxsize=512)
def _side_oc(bounds: Boundaries, p: float, main: int) -> SideOC:
    # Every round that ends at the same answer ``made`` is stepped as one list, whatever
    # answer it started at: the undecided states of those rounds, indexed by wrong count
    # from ``lo``, step alike (an ending depends only on (answers, wrong)), a round's start
    # states joining the list at their answer.  Stepping each start state alone was about
    # 40x slower, and ``passk plan`` calls this a few hundred times.
    q = 1.0 - p
    block_from, pass_up_to = bounds.block_from, bounds.pass_up_to
    unreliable = answers = attempts = rounds = 0.0
    # rounds_to[made][n][w]: the chance a round starts undecided at (n, w) and runs to made.
    rounds_to: dict[int, dict[int, dict[int, float]]] = {}
    first_made = max(main, 1)
    joining: dict[int, dict[int, float]] = {0: {0: 1.0}}
    made, first = first_made, True
    while True:
        n = min(joining)
        lo, live = 0, list[float]()  # set by the first round that joins
        last = min(made, bounds.max_decisions)
        for m in range(n + 1, last + 1):
            for w, mass in joining.pop(m - 1, {}).items():  # rounds that start here
                if not live:
                    lo = w
                    live = [0.0]
                elif w < lo:
                    live[:0] = [0.0] * (lo - w)
                    lo = w
                elif w >= lo + len(live):
                    live.extend([0.0] * (w - lo - len(live) + 1))
                live[w - lo] += mass
            # live[j] is P(w = lo + j): a right answer keeps w, a wrong one moves it up.
            live = [a * p + b * q for a, b in zip([*live, 0.0], [0.0, *live], strict=True)]
            if first and m < last:
                continue  # the main attempts are one look, at their end
            top = max(block_from[m] - lo, 0)  # live[top:] ends "unreliable"
            if top < len(live):
                ended = math.fsum(live[top:])
                unreliable += ended
                answers += ended * m
                attempts += ended * made
                del live[top:]
            cut = min(pass_up_to[m] - lo + 1, len(live))  # live[:cut] ends "reliable"
            if cut > 0:
                ended = math.fsum(live[:cut])
                answers += ended * m
                attempts += ended * made
                del live[:cut]
                lo += cut
        # What is still undecided at made starts a round there, running to the answers
        # that would end it were all right.
        for j, mass in enumerate(live):
            if mass:
                w = lo + j
                ends = made + bounds.rights_to_pass(made, w)
                rounds += mass
                starts = rounds_to.setdefault(ends, {}).setdefault(made, {})
                starts[w] = starts.get(w, 0.0) + mass
        first = False
        if not rounds_to:
            break
        made = min(rounds_to)
        joining = rounds_to.pop(made)
    return SideOC(p, unreliable, answers, attempts, rounds)


# ------------------------------------------------------------ the relative rule


@dataclass(frozen=True, slots=True)
class RelativeOC:
    """The relative rule on one row: block chance, and expected attempts beyond the main ones.

    ``screened`` is the chance the paired comparison runs (the screen ended
    "unreliable", or the row went straight to it); ``candidate_extra`` the
    candidate's attempts beyond k (the screen's attempts as its rounds make
    them, then the pairs read);
    ``baseline_extra`` the baseline's pairs read in this comparison.
    """

    block: float
    screened: float
    candidate_extra: float
    baseline_extra: float


def binomial_pmf(n: int, p: float) -> list[float]:
    """P(Bin(n, p) = c) for c = 0 .. n."""
    return [math.comb(n, c) * p**c * (1.0 - p) ** (n - c) for c in range(n + 1)]


def relative_oc(
    settings: RuleSettings,
    *,
    k: int,
    candidate: float,
    baseline: float,
    answers: int | None = None,
    recorded: tuple[int, int] | None = None,
) -> RelativeOC:
    """The relative rule's :class:`RelativeOC`, exactly, for a baseline with ``answers``
    recorded answers on the row (default: k + its measurement, ``settings.measure``).

    Sum over the baseline's right count c ~ Bin(answers, p_b) of: the screen
    of c (:func:`~.relative.screen_bounds`) ending unreliable at p_c
    (:func:`bounds_oc`) times the paired comparison of c blocking
    (:func:`pair_oc`); attempts likewise.  A c whose reference cannot drop
    by ``drop`` passes untested; a c the screen sends straight to the paired
    comparison (:func:`~.relative.direct`) has as its
    candidate attempts the pairs read beyond the k main answers, which are
    paired too.  With ``recorded`` = (c, n) the baseline's
    recorded answers are those: the figures for the pull requests that
    baseline will judge (no sum over c).
    """
    check_probability("candidate accuracy", candidate)
    check_probability("baseline accuracy", baseline)
    n = max(k, settings.measure) if answers is None else answers
    weights = list(enumerate(binomial_pmf(n, baseline)))
    if recorded is not None:
        n = recorded[1]
        weights = [(recorded[0], 1.0)]
    block = screened = cand = base = 0.0
    for right, weight in weights:
        if weight < 1e-15:
            continue
        bounds = screen_bounds(right, n, settings)
        if bounds is None:
            continue
        pairing = pair_spec(right, n, settings)
        paired = pair_oc(
            pairing, baseline, candidate, settings.pair_max_pairs, quiet_pairs(settings)
        )
        if direct(right, n, settings):
            block += weight * paired.block
            screened += weight
            cand += weight * max(0.0, paired.pairs - k)
            base += weight * paired.pairs
            continue
        screen = bounds_oc(bounds, candidate, k)
        block += weight * screen.unreliable * paired.block
        screened += weight * screen.unreliable
        cand += weight * (screen.attempts - k + screen.unreliable * paired.pairs)
        base += weight * screen.unreliable * paired.pairs
    return RelativeOC(block, screened, cand, base)


@dataclass(frozen=True, slots=True)
class RowOC:
    """A gated row's operating characteristics under a rule.

    ``block`` is the chance the row blocks; ``candidate_attempts`` the
    expected candidate attempts, main included; ``baseline_extra`` the
    expected baseline attempts beyond its recorded main ones.
    """

    rule: str
    kind: GatedKind
    k: int
    candidate_accuracy: float
    baseline_accuracy: float
    block: float
    candidate_attempts: float
    baseline_extra: float

    def __post_init__(self) -> None:
        # A chance summed or subtracted in floats can stray an ulp past [0, 1] (a row
        # right 0.0002% of the time gave -2.2e-16): held to the range, never past it.
        if -1e-12 <= self.block < 0.0 or 1.0 < self.block <= 1.0 + 1e-12:
            object.__setattr__(self, "block", min(1.0, max(0.0, self.block)))
        check_probability("block", self.block)

    @property
    def candidate_extra(self) -> float:
        return self.candidate_attempts - self.k

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "kind": self.kind.value,
            "k": self.k,
            "candidate_accuracy": self.candidate_accuracy,
            "baseline_accuracy": self.baseline_accuracy,
            "block": self.block,
            "candidate_attempts": self.candidate_attempts,
            "baseline_extra": self.baseline_extra,
        }


def row_oc(
    settings: RuleSettings,
    *,
    k: int,
    candidate: float,
    baseline: float,
    kind: GatedKind = GatedKind.MUST_NOT_BREAK,
) -> RowOC:
    """The chance one gated row blocks, and the attempts it takes, exactly.

    Sequential rule: block = P(candidate's test ends unreliable) x
    P(baseline's test does not); candidate attempts E[max(N_c, k)];
    baseline extra P(candidate unreliable) x (E[max(N_b, k)] - k).

    Strict rule (c = ``confirm_attempts``, p_b and p_c the accuracies): a
    row is lost with probability p_b^k (1 - p_c^k); a ratchet row blocks
    with 1 - p_c^k, a must-not-break or regression row with
    p_b^(k + c) (1 - p_c^k) (the baseline's confirmations all right);
    each lost row costs c more attempts on both versions.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    check_probability("candidate accuracy", candidate)
    check_probability("baseline accuracy", baseline)
    if settings.rule == RELATIVE:
        oc = relative_oc(settings, k=k, candidate=candidate, baseline=baseline)
        return RowOC(
            RELATIVE,
            kind,
            k,
            candidate,
            baseline,
            block=oc.block,
            candidate_attempts=k + oc.candidate_extra,
            baseline_extra=oc.baseline_extra,
        )
    if settings.rule == SEQUENTIAL:
        cand = side_oc(settings.candidate_test, candidate, k)
        base = side_oc(settings.baseline_test, baseline, k)
        return RowOC(
            SEQUENTIAL,
            kind,
            k,
            candidate,
            baseline,
            block=cand.unreliable * (1.0 - base.unreliable),
            candidate_attempts=cand.attempts,
            baseline_extra=cand.unreliable * (base.attempts - k),
        )
    c = settings.confirm_attempts
    lost = baseline**k * (1.0 - candidate**k)
    block = 1.0 - candidate**k if kind is GatedKind.RATCHET else lost * baseline**c
    return RowOC(settings.rule, kind, k, candidate, baseline, block, k + c * lost, c * lost)


def any_of(rate: float, rows: int) -> float:
    """The chance at least one of ``rows`` independent rows does what one does with ``rate``.

    1 - (1 - rate)^rows, computed as -expm1(rows * log1p(-rate)) so tiny
    rates keep their digits.
    """
    if rows < 0:
        raise ValueError("rows must be >= 0")
    check_probability("rate", rate)
    if rate == 1.0:
        return 1.0 if rows else 0.0
    return -math.expm1(rows * math.log1p(-rate))


@dataclass(frozen=True, slots=True)
class GateOC:
    """What a gate with ``gated_rows`` rows does, under one rule and accuracy.

    - ``false_block``: a harmless PR (both versions at ``accuracy`` on every
      gated row) is blocked;
    - ``row_miss``: a row whose candidate accuracy dropped to ``dropped``
      (baseline still at ``accuracy``) does not block;
    - ``catch``: a PR with one such row among ``gated_rows - 1`` harmless
      ones is blocked (the other rows' false blocks help it);
    - ``candidate_extra`` / ``baseline_extra``: expected attempts beyond the
      k main ones, summed over the gated rows of a harmless PR;
    - ``max_rounds``: the most confirmation rounds one row can take
      (sequential rule; 1 for strict; 0: not bounded here, the relative
      rule's paired comparison asks rounds until it ends).
    """

    rule: str
    k: int
    gated_rows: int
    accuracy: float
    dropped: float
    false_block: float
    row_miss: float
    catch: float
    candidate_extra: float
    baseline_extra: float
    max_rounds: int

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "k": self.k,
            "gated_rows": self.gated_rows,
            "accuracy": self.accuracy,
            "dropped": self.dropped,
            "false_block": self.false_block,
            "row_miss": self.row_miss,
            "catch": self.catch,
            "candidate_extra": self.candidate_extra,
            "baseline_extra": self.baseline_extra,
            "max_rounds": self.max_rounds,
        }


def gate_oc(
    settings: RuleSettings,
    *,
    k: int,
    gated_rows: int,
    accuracy: float = HARMLESS,
    dropped: float = DROPPED,
    kind: GatedKind = GatedKind.MUST_NOT_BREAK,
) -> GateOC:
    """:class:`GateOC` from :func:`row_oc` (formulas there) and :func:`any_of`."""
    if gated_rows < 1:
        raise ValueError("gated_rows must be at least 1")
    harmless = row_oc(settings, k=k, candidate=accuracy, baseline=accuracy, kind=kind)
    broken = row_oc(settings, k=k, candidate=dropped, baseline=accuracy, kind=kind)
    others = any_of(harmless.block, gated_rows - 1)
    return GateOC(
        rule=settings.rule,
        k=k,
        gated_rows=gated_rows,
        accuracy=accuracy,
        dropped=dropped,
        false_block=any_of(harmless.block, gated_rows),
        row_miss=1.0 - broken.block,
        catch=1.0 - (1.0 - broken.block) * (1.0 - others),
        candidate_extra=gated_rows * harmless.candidate_extra,
        baseline_extra=gated_rows * harmless.baseline_extra,
        max_rounds=(
            max_rounds(settings.candidate_test, k) + max_rounds(settings.baseline_test, k)
            if settings.rule == SEQUENTIAL
            else 0
            if settings.rule == RELATIVE
            else 1
        ),
    )


def dataset_oc(
    settings: RuleSettings,
    *,
    k: int,
    kinds: Sequence[GatedKind],
    accuracy: float = HARMLESS,
    dropped: float = DROPPED,
) -> GateOC:
    """:func:`gate_oc` for a dataset's own gated rows, each judged as its kind.

    The strict rule treats a ratchet row apart from a must-not-break one
    (the sequential rule does not): a harmless PR passes only if every row
    does, 1 - prod over rows of (1 - block of its kind); the dropped row is
    one of the most common kind (the first in ``kinds`` on a tie), the
    others harmless.
    """
    if not kinds:
        raise ValueError("a dataset with no gated row has no gate figures")
    counts: dict[GatedKind, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    typical = max(counts, key=lambda kind: counts[kind])
    ocs = {
        kind: gate_oc(settings, k=k, gated_rows=n, accuracy=accuracy, dropped=dropped, kind=kind)
        for kind, n in counts.items()
    }
    passes = math.prod(1.0 - oc.false_block for oc in ocs.values())
    harmless_typical = row_oc(settings, k=k, candidate=accuracy, baseline=accuracy, kind=typical)
    others = passes / (1.0 - harmless_typical.block) if harmless_typical.block < 1.0 else 0.0
    miss = ocs[typical].row_miss
    return GateOC(
        rule=settings.rule,
        k=k,
        gated_rows=len(kinds),
        accuracy=accuracy,
        dropped=dropped,
        false_block=1.0 - passes,
        row_miss=miss,
        catch=1.0 - miss * others,
        candidate_extra=sum(oc.candidate_extra for oc in ocs.values()),
        baseline_extra=sum(oc.baseline_extra for oc in ocs.values()),
        max_rounds=max(oc.max_rounds for oc in ocs.values()),
    )


def max_rounds(spec: SprtSpec, k: int) -> int:
    """The most confirmation rounds one version's test can take, errors aside.

    A round runs what the rule asks (the answers that would end the test
    if all were right, :meth:`Boundaries.rights_to_pass`), so a round that
    does not end the test holds a wrong answer, and the test ends by
    ``max_decisions``.  Found by search over the undecided states each round
    can reach, starting after the k main answers (any undecided state
    reachable there).
    """
    bounds = boundaries(spec)
    start = _reachable(bounds, {0}, 0, min(k, bounds.max_decisions))
    rounds = [_rounds(bounds, min(k, bounds.max_decisions), w) for w in start]
    return max(rounds, default=0)


def _reachable(bounds: Boundaries, ws: set[int], n: int, steps: int) -> set[int]:
    """Wrong counts reachable after ``steps`` more answers from (n, w in ws), never ending.

    From a run of wrong counts an answer reaches the run one longer, less what
    ends there (above ``block_from``, below ``pass_up_to``): still one run.
    """
    if not ws:
        return set()
    lo, hi = min(ws), max(ws)
    if hi - lo + 1 != len(ws):  # not one run: each count alone, as the runs may differ
        return set().union(*(_reachable(bounds, {w}, n, steps) for w in ws))
    for m in range(n + 1, n + steps + 1):
        lo, hi = max(lo, bounds.pass_up_to[m] + 1), min(hi + 1, bounds.block_from[m] - 1)
        if lo > hi:
            return set()
    return set(range(lo, hi + 1))


@lru_cache(maxsize=4096)
def _rounds(bounds: Boundaries, n: int, w: int) -> int:
    if n >= bounds.max_decisions:
        return 0
    step = bounds.rights_to_pass(n, w)
    after = _reachable(bounds, {w}, n, step)
    return 1 + max((_rounds(bounds, n + step, v) for v in after), default=0)


# ------------------------------------------------------- a dataset's own rows


FEW_ANSWERS = 20
"""Fewer baseline answers than this measure a row's accuracy only roughly."""


@dataclass(frozen=True, slots=True)
class MeasuredRow:
    """A gated row and the baseline's answers on it (``right`` of ``answers``)."""

    id: str
    kind: GatedKind
    right: int
    answers: int

    @property
    def accuracy(self) -> float | None:
        return self.right / self.answers if self.answers else None


@dataclass(frozen=True, slots=True)
class RowRates:
    """What the gate does on one gated row, taking its measured accuracy p as both versions'.

    ``block``: a harmless pull request is blocked by this row; ``catch``: the
    row blocks when its candidate accuracy drops by ``drop`` (the row alone:
    blocks by other rows are not catches); attempts per pull request.
    Unmeasured rows (no answer) take :data:`HARMLESS`.
    """

    row: MeasuredRow
    accuracy: float
    block: float
    catch: float | None
    candidate_extra: float
    baseline_extra: float


@dataclass(frozen=True, slots=True)
class DatasetRates:
    """The gate's rates for a dataset's gated rows at their measured accuracies."""

    rule: str
    k: int
    drop: float
    rows: tuple[RowRates, ...]

    @property
    def false_block(self) -> float:
        """1 - prod(1 - block_i): rows independent."""
        return 1.0 - math.prod(1.0 - r.block for r in self.rows)

    @property
    def worst_catch(self) -> float | None:
        catches = [r.catch for r in self.rows if r.catch is not None]
        return min(catches) if catches else None

    @property
    def candidate_extra(self) -> float:
        return sum(r.candidate_extra for r in self.rows)

    @property
    def baseline_extra(self) -> float:
        return sum(r.baseline_extra for r in self.rows)

    def noisiest(self, count: int = 3) -> list[RowRates]:
        """The rows that block harmless pull requests most, worst first (ties: dataset order)."""
        ranked = sorted(self.rows, key=lambda r: -r.block)
        return [r for r in ranked[:count] if r.block > 0]

    def costliest(self, count: int = 3) -> list[RowRates]:
        """The rows that cost the most candidate attempts, costliest first."""
        return sorted(self.rows, key=lambda r: -r.candidate_extra)[:count]


def measured_rates(settings: RuleSettings, *, k: int, rows: Sequence[MeasuredRow]) -> DatasetRates:
    """:class:`DatasetRates` for ``rows``, exactly, each at its measured accuracy p = c / n.

    Sequential and strict rules: :func:`row_oc` at (p, p) and (p, p - drop);
    relative rule: :func:`relative_oc` given the recorded (c, n), the figures
    the pull requests this baseline judges get.  ``drop`` is the rule's
    (``gate.sequential.drop``, 0.2 by default) for every rule: the same
    question, "is a 20-point drop from this row's own accuracy caught".
    A point estimate: a row measured on fewer than :data:`FEW_ANSWERS`
    answers is known only roughly, and taken as right at most
    :data:`HARMLESS` of the time.
    """
    out = []
    for row in rows:
        p = row.accuracy if row.accuracy is not None else HARMLESS
        if row.answers < FEW_ANSWERS:
            # Three right answers do not show a row is never wrong: assume the goals' accuracy.
            p = min(p, HARMLESS)
        dropped = p - settings.drop
        if settings.rule == RELATIVE and row.answers:
            recorded = (row.right, row.answers)
            harmless = relative_oc(settings, k=k, candidate=p, baseline=p, recorded=recorded)
            catch = (
                relative_oc(settings, k=k, candidate=dropped, baseline=p, recorded=recorded).block
                if dropped > 0
                else None
            )
            out.append(
                RowRates(
                    row,
                    p,
                    harmless.block,
                    catch,
                    harmless.candidate_extra,
                    harmless.baseline_extra,
                )
            )
            continue
        oc = row_oc(settings, k=k, candidate=p, baseline=p, kind=row.kind)
        catch = (
            row_oc(settings, k=k, candidate=dropped, baseline=p, kind=row.kind).block
            if dropped > 0
            else None
        )
        out.append(RowRates(row, p, oc.block, catch, oc.candidate_extra, oc.baseline_extra))
    return DatasetRates(settings.rule, k, settings.drop, tuple(out))


# ---------------------------------------------------------------- loosening

LOOSENING_GRID = (
    (None, 0.9),
    (None, 0.8),
    (None, None),
    (None, 0.5),
    (0.95, 0.7),
    (0.95, 0.5),
    (0.9, 0.7),
    (0.9, 0.5),
)
"""(baseline accuracy, candidate accuracy) pairs at which a rule change must not block a
worse candidate less often; None stands for the base's own ``reliable`` (baseline) or
``unreliable`` (candidate)."""
_LOOSER_BY = 1e-9


@dataclass(frozen=True, slots=True)
class Loosening:
    """Where a changed rule blocks a worse candidate less often than the old one."""

    baseline: float
    candidate: float
    before: float
    after: float


def loosening(
    base: RuleSettings, head: RuleSettings, *, k: int, kind: GatedKind = GatedKind.MUST_NOT_BREAK
) -> Loosening | None:
    """The point where ``head`` blocks a degraded gated row least often below ``base``.

    A pull request must not weaken its own gate (``sides/protect.py``): a
    change of the rule or its settings is a loosening when, for some row
    whose candidate is less accurate than its baseline
    (:data:`LOOSENING_GRID`), the head's rule blocks it less often than the
    base's, exactly (:func:`row_oc`).  Blocking harmless rows less often is
    not a loosening: only lost power is.  None: never looser.  ``strict``
    to ``sequential`` is a loosening by the project's rule whatever the
    figures (the strict rule blocks any wrong answer); the caller says so.
    """
    worst: Loosening | None = None
    for base_p, cand_p in LOOSENING_GRID:
        baseline = base.reliable if base_p is None else base_p
        candidate = base.unreliable if cand_p is None else cand_p
        if candidate >= baseline:
            continue
        before = row_oc(base, k=k, candidate=candidate, baseline=baseline, kind=kind).block
        after = row_oc(head, k=k, candidate=candidate, baseline=baseline, kind=kind).block
        if after < before - _LOOSER_BY and (
            worst is None or before - after > worst.before - worst.after
        ):
            worst = Loosening(baseline, candidate, before, after)
    return worst
