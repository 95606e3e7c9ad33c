"""The gated-row rule ``relative``: a row judged against its own baseline accuracy.

A gated row blocks when the candidate has become less reliable *than the
baseline is on that row*, not than an assumed 99%.  The baseline's recorded
answers on the row (its k main attempts and the ``measure`` attempts
``passk baseline`` adds to every gated row, 60 answers with the defaults),
c right of n, decide the route:

1. **The screen** (``screen: optimal``, the default): the candidate's answers
   are read one at a time, and the table designed for c of n
   (``core/optimal_screen.py``: the screen that asks a harmless row right 95%
   of the time fewest answers for a 90% catch of a ``drop`` at every accuracy
   from 0.80 to 1.00) passes the row, asks for more, or sends it to the
   paired comparison, on answers given after the screen ended; or, where the
   table says so, straight there, every candidate answer paired.
2. **The SPRT screen** (``screen: sprt``, the second design): c / n above
   ``direct_below`` (0.85), the candidate's answers run a truncated SPRT
   (``core/sequential.py``) against the reference accuracy
   a = min(``screen_cap``, Wilson upper bound of c / n at z = ``anchor_z``)
   (Wilson, JASA 22, 1927): right with a against right with a - ``drop``,
   nominal ``screen_alpha`` and ``screen_beta``, ``max_decisions`` answers,
   the likelier hypothesis at the last.  "Reliable" -> PASS.  Not ended ->
   more candidate attempts.  "Unreliable" -> the paired comparison, on
   answers given after the screen ended.  c / n at most ``direct_below``:
   straight to the paired comparison, every candidate answer (main ones
   included: nothing selected them) paired.
3. **The paired comparison**: both versions answer again, fresh, paired
   in order: the i-th valid answer of one side with the i-th of the other.
   A pair where the baseline is right and the candidate wrong is a *loss*,
   the other way round a *win*, agreeing pairs tell nothing.  Given that a
   pair disagrees, it is a loss with probability
   theta = p_b (1 - p_c) / (p_b (1 - p_c) + (1 - p_b) p_c), which is exactly
   1/2 whenever the two versions are equally accurate, **whatever that
   accuracy** (the conditional argument of McNemar's test; Lehmann and
   Romano, "Testing Statistical Hypotheses", 2005, 4.6).  The losses among
   the disagreeing pairs run a truncated SPRT of theta = 1/2 against theta1,
   nominal ``alpha`` and ``pair_beta``, ``pair_max_decisions`` disagreeing
   pairs, ending "not shown" at its last; theta1 is theta at a row whose
   accuracy drops by ``drop`` from the Wilson lower bound (z = ``pair_z``)
   of c / n, kept within [0.6, 0.95].  Losses shown -> BLOCK (a
   regression); not shown -> PASS ("matches the baseline"); also PASS when
   ``pair_max_pairs`` pairs are read without an ending, or the first
   :func:`quiet_pairs` pairs (42 by default) all agree: a drop of ``drop``
   makes that happen at most 0.01% of the time.

A reference below ``drop`` + 0.005 cannot drop by ``drop``: the row passes
untested ("the baseline varies").

**What it guarantees.**  A harmless row (both versions equally accurate)
blocks only when the paired comparison shows losses, which Wald's threshold
keeps at most alpha / (1 - pair_beta) (0.1% with the defaults) *for every
accuracy*, times the chance the row gets there; per pull request
1 - (1 - rate)^G.  The catch rate and the attempts do depend on the
accuracy: ``core/operating.py`` computes them exactly (``relative_oc``),
``bench/gate_relative.md`` tabulates them and plays them through
``passk compare``.  Edge cases: n = 0 (no recorded answer) weighs
every accuracy alike (the SPRT screen: the reference ``screen_cap``, never
straight to the pairs); c = n is not taken to be never wrong (every
accuracy from 0.80 up stays possible; the SPRT screen: ``screen_cap``).

**Three designs.**  The first (result schema 5) screened every row against
the Wilson upper bound at z = 1.5 capped at ``reliable`` and set theta1 at
z = 1.2816: a harmless row at 0.95 cost 56.4 extra candidate attempts a
pull request.  The second (``screen_cap``, ``pair_z``, ``direct_below``;
schema 6) cost 22.0.  The third (``screen: optimal``, ``pair_beta`` 0.005)
costs 14.5 (``bench/gate_relative.md``; ``bench/gate_bound.md``: no screen
before this confirmation costs less than 14.4).  A result without the
second's settings is audited with :data:`FIRST_DESIGN`'s values, which are
exactly the first design; one without ``screen`` with the SPRT screen.

**Errors are not evidence.**  An errored attempt is not an answer; a side's
asking ends when its ``max_attempts`` are spent or its last
``unable_after`` attempts all errored (the agent is shown unable to answer
the row), never after one errored round.  A candidate that could not be
judged blocks, saying which of the two happened.

Pure: outcomes in, a :class:`~.sequential.RowVerdict` out; ``passk gate``
recomputes it from the recorded attempts alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .model import Version
from .optimal_screen import GRID, HARMLESS_AT, Confirmation, Screen, design, weights_for
from .pair_oc import pair_oc, theta
from .sequential import (
    LIKELIER,
    OPTIMAL,
    RELATIVE,
    RELIABLE_UNLESS_SHOWN,
    Boundaries,
    Decision,
    Ending,
    Finding,
    GatedKind,
    Outcome,
    Request,
    RowVerdict,
    RuleSettings,
    SideAttempts,
    SideEvidence,
    SprtSpec,
    boundaries,
    read,
    unable,
)

FIRST_DESIGN: dict[str, float | None] = {"screen_cap": None, "pair_z": 1.2816, "direct_below": 0.0}
"""The settings a result of the first design lacks, at the values that reproduce it exactly
(None: ``screen_cap`` is the result's own ``reliable``); :func:`first_design` fills them."""
THETA_RANGE = (0.6, 0.95)
QUIET_MISS = 1e-4
"""The most a quiet stop may cost the paired comparison's catch of a drop of ``drop``."""
FIRST = 3
"""The designed screen ends after 3 answers at the earliest (the default k's main ones)."""
MIN_GAP = 0.005
"""A reference below ``drop`` + this cannot drop by ``drop``: the row passes untested."""


def wilson(right: int, answers: int, z: float, upper: bool) -> float:
    """The Wilson score bound of right / answers at ``z`` (upper or lower); n = 0: 1 or 0.

    (p + z^2 / 2n +- z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n), p = right / n.
    """
    if answers == 0:
        return 1.0 if upper else 0.0
    p = right / answers
    z2 = z * z
    centre = p + z2 / (2 * answers)
    spread = z * math.sqrt(p * (1 - p) / answers + z2 / (4 * answers * answers))
    bound = (centre + spread if upper else centre - spread) / (1 + z2 / answers)
    return min(1.0, max(0.0, bound))


def first_design(rule: Mapping[str, object]) -> dict[str, object]:
    """A recorded rule's settings with those the first design lacked filled to reproduce it."""
    filled = dict(rule)
    for name, value in FIRST_DESIGN.items():
        if name not in filled:
            filled[name] = rule.get("reliable", 0.99) if value is None else value
    return filled


def reference(right: int, answers: int, settings: RuleSettings) -> float:
    """The screen's reference accuracy from the baseline's recorded answers (module doc)."""
    return min(settings.screen_cap, wilson(right, answers, settings.anchor_z, upper=True))


def direct(right: int, answers: int, settings: RuleSettings) -> bool:
    """Whether a row skips the screen: the designed screen's choice (``screen: optimal``),
    or c / n at most ``direct_below`` (``sprt``; n = 0: never)."""
    if settings.screen == OPTIMAL:
        return _designed(right, answers, settings).direct
    return answers > 0 and right <= settings.direct_below * answers + 1e-9


def screen_bounds(right: int, answers: int, settings: RuleSettings) -> Boundaries | None:
    """The screen as boundaries on (answers, wrong) for a baseline with ``right`` of
    ``answers`` recorded; None: the row cannot drop by ``drop`` and passes untested."""
    spec = screen_spec(right, answers, settings)
    if spec is None:
        return None
    if settings.screen == OPTIMAL:
        return _designed(right, answers, settings).bounds
    return boundaries(spec)


def confirmation(right: int, answers: int, settings: RuleSettings) -> Confirmation:
    """What this baseline's paired comparison does, exactly (``core/pair_oc.py``): the pairs
    it reads on a harmless row right :data:`~.optimal_screen.HARMLESS_AT` of the time, and
    its chance of blocking a drop of ``drop`` at each grid accuracy (0 where p <= drop)."""
    spec = pair_spec(right, answers, settings)
    quiet = quiet_pairs(settings)
    pairs = pair_oc(spec, HARMLESS_AT, HARMLESS_AT, settings.pair_max_pairs, quiet).pairs
    caught = tuple(
        pair_oc(spec, p, p - settings.drop, settings.pair_max_pairs, quiet).block
        if p - settings.drop > 0
        else 0.0
        for p in GRID
    )
    return Confirmation(pairs, caught)


@lru_cache(maxsize=1024)
def _designed(right: int, answers: int, settings: RuleSettings) -> Screen:
    """The designed screen (``core/optimal_screen.py``) around this baseline's confirmation."""
    return design(
        right, answers, confirmation(right, answers, settings),
        drop=settings.drop, first=FIRST, last=settings.max_attempts,
        weights=weights_for(settings.drop),
    )  # fmt: skip


def screen_spec(right: int, answers: int, settings: RuleSettings) -> SprtSpec | None:
    """The screen's SPRT for a baseline with ``right`` of ``answers`` recorded; None: no test."""
    a = round(reference(right, answers, settings), 6)
    if a - settings.drop < MIN_GAP:
        return None
    return SprtSpec(
        a, a - settings.drop, settings.screen_alpha, settings.screen_beta,
        settings.max_decisions, LIKELIER,
    )  # fmt: skip


def pair_spec(right: int, answers: int, settings: RuleSettings) -> SprtSpec:
    """The paired comparison's SPRT on disagreeing pairs ("right" = a win, "wrong" = a loss)."""
    low = max(settings.drop + 0.05, wilson(right, answers, settings.pair_z, upper=False))
    low = min(low, 0.999)
    lo, hi = THETA_RANGE
    theta1 = round(min(hi, max(lo, theta(low, low - settings.drop))), 2)
    return SprtSpec(
        0.5, 1.0 - theta1, settings.alpha, settings.pair_beta,
        settings.pair_max_decisions, RELIABLE_UNLESS_SHOWN,
    )  # fmt: skip


def quiet_pairs(settings: RuleSettings) -> int:
    """Pairs with no disagreement after which the paired comparison ends "not shown" (0: never).

    A candidate ``drop`` below the baseline disagrees with it on a pair with chance
    d = p_b (1 - p_c) + (1 - p_b) p_c >= p_b - p_c >= ``drop``, so m pairs without a
    disagreement happen to such a row with chance at most (1 - drop)^m.  With
    ``pair_quiet`` -1 (the default), m is the least with (1 - drop)^m <= :data:`QUIET_MISS`
    (42 at a drop of 20 points): the stop costs the catch at most 0.01%, and two versions
    that never disagree (both always right, or both always wrong) no longer read
    ``pair_max_pairs`` pairs.  Never more than ``pair_max_pairs``.
    """
    if settings.pair_quiet >= 0:
        quiet = settings.pair_quiet
    else:
        quiet = math.ceil(math.log(QUIET_MISS) / math.log1p(-settings.drop) - 1e-9)
    return min(quiet, settings.pair_max_pairs)


@dataclass(frozen=True, slots=True)
class Pairs:
    """The paired comparison's evidence: pairs read, of which losses and wins, and its ending."""

    pairs: int
    losses: int
    wins: int
    ending: Ending


def _answers(outcomes: Sequence[Outcome]) -> list[bool]:
    """Valid answers as right (True) / wrong (False), errors left out."""
    return [o is Outcome.RIGHT for o in outcomes if o is not Outcome.ERROR]


def read_pairs(
    baseline: Sequence[bool],
    candidate: Sequence[bool],
    spec: SprtSpec,
    max_pairs: int,
    quiet: int = 0,
) -> Pairs:
    """Read the fresh answers in pairs until the paired SPRT ends, or ``max_pairs`` are read,
    or ``quiet`` pairs (when above 0) without one disagreeing (:func:`quiet_pairs`)."""
    bounds = boundaries(spec)
    n = losses = pairs = 0
    ending = Ending.UNDECIDED
    for b, c in zip(baseline, candidate, strict=False):
        if pairs >= max_pairs:
            break
        pairs += 1
        if b == c:
            if n == 0 and pairs == quiet:
                ending = Ending.RELIABLE
                break
            continue
        n += 1
        losses += b
        ending = bounds.ending(n, losses)
        if ending is not Ending.UNDECIDED:
            break
    if ending is Ending.UNDECIDED and pairs >= max_pairs:
        ending = Ending.RELIABLE
    return Pairs(pairs, losses, n - losses, ending)


def _side(side: SideAttempts, read_n: int, wrong_read: int, ending: Ending) -> SideEvidence:
    answers = _answers(side.outcomes)
    return SideEvidence(
        len(side.outcomes), len(answers), answers.count(False),
        len(side.outcomes) - len(answers), read_n, wrong_read, ending,
    )  # fmt: skip


def _left(side: SideAttempts, settings: RuleSettings, paired: bool = False) -> int:
    """Attempts the side may still make (0: budget spent or the agent shown unable).

    The screen's budget is ``max_attempts``; the paired comparison adds
    ``pair_max_pairs`` (a baseline's recorded attempts do not count)."""
    if unable(side, settings.unable_after):
        return 0
    budget = settings.max_attempts + (settings.pair_max_pairs if paired else 0)
    return max(0, budget - (len(side.outcomes) - side.recorded + side.main))


def _cannot(side: SideAttempts, settings: RuleSettings) -> Finding:
    """Why a side's asking ended without an ending: the agent unable, or attempts spent."""
    return Finding.UNABLE if unable(side, settings.unable_after) else Finding.UNDECIDED


def judge_relative(
    candidate: SideAttempts,
    baseline: SideAttempts,
    settings: RuleSettings,
    *,
    kind: GatedKind,
    more_possible: bool = True,
) -> RowVerdict:
    """The ``relative`` rule's verdict from both versions' outcomes (module doc).

    ``baseline.recorded`` outcomes are the baseline's recorded answers (main
    and measurement); the rest are this comparison's fresh ones.
    """
    recorded = _answers(baseline.outcomes[: baseline.recorded])
    right = sum(recorded)
    bounds = screen_bounds(right, len(recorded), settings)
    if bounds is None:
        base = _side(baseline, len(recorded), len(recorded) - right, Ending.UNRELIABLE)
        cand = read(candidate, boundaries(SprtSpec(0.99, 0.5, 0.1, 0.1, 1)), tested=False)
        return RowVerdict(kind, RELATIVE, Decision.PASS, Finding.BASELINE_VARIES, cand, base)
    cand_answers = _answers(candidate.outcomes)
    if direct(right, len(recorded), settings):
        cand = read(candidate, bounds, tested=False)
        fresh_c = cand_answers
    else:
        cand = read(candidate, bounds)
        base_screen = _side(baseline, len(recorded), len(recorded) - right, Ending.NOT_TESTED)
        if cand.ending is Ending.RELIABLE:
            finding = Finding.WITHIN_CHANCE if cand.wrong else Finding.RELIABLE
            return RowVerdict(kind, RELATIVE, Decision.PASS, finding, cand, base_screen)
        if cand.ending is Ending.UNDECIDED:
            left = _left(candidate, settings) if more_possible else 0
            if left:
                more = bounds.rights_to_pass(cand.read, cand.wrong_read)
                wanted = Request(Version.CANDIDATE, min(left, more))
                return RowVerdict(
                    kind, RELATIVE, Decision.MORE, Finding.UNDECIDED, cand, base_screen, (wanted,)
                )
            return RowVerdict(
                kind, RELATIVE, Decision.BLOCK, _cannot(candidate, settings), cand, base_screen
            )
        # The screen ended "unreliable": answers given after it ended are fresh.
        fresh_c = cand_answers[cand.read :]
    # The paired comparison, on fresh answers only.
    fresh_b = _answers(baseline.outcomes[baseline.recorded :])
    pspec = pair_spec(right, len(recorded), settings)
    quiet = quiet_pairs(settings)
    pairs = read_pairs(fresh_b, fresh_c, pspec, settings.pair_max_pairs, quiet)
    base = _side(
        baseline, len(recorded) + pairs.pairs,
        len(recorded) - right + sum(1 for b in fresh_b[: pairs.pairs] if not b),
        pairs.ending,
    )  # fmt: skip
    verdict = RowVerdict(kind, RELATIVE, Decision.PASS, Finding.MATCHES_BASELINE, cand, base)
    if pairs.ending is Ending.RELIABLE:
        return _with_pairs(verdict, pairs)
    if pairs.ending is Ending.UNRELIABLE:
        return _with_pairs(_as(verdict, Decision.BLOCK, Finding.REGRESSION), pairs)
    # Undecided: more pairs, on each side up to the same count.
    bounds = boundaries(pspec)
    undecided_n = pairs.losses + pairs.wins
    step = max(10, 3 * bounds.rights_to_pass(undecided_n, pairs.losses))
    target = min(pairs.pairs + step, settings.pair_max_pairs)
    if undecided_n == 0 and quiet:
        target = min(target, quiet)  # no disagreement yet: the quiet stop may end it there
    requests = []
    stuck: Finding | None = None
    for version, side, have in (
        (Version.BASELINE, baseline, len(fresh_b)),
        (Version.CANDIDATE, candidate, len(fresh_c)),
    ):
        need = target - have
        if need <= 0:
            continue
        if unable(side, settings.unable_after):
            stuck = Finding.UNABLE
            continue
        if not more_possible:
            stuck = stuck or Finding.REGRESSION
            continue
        left = _left(side, settings, paired=True)
        if not left:
            # The budget spent without losses shown: the comparison ends, as at its cap.
            return _with_pairs(verdict, pairs)
        requests.append(Request(version, min(left, need)))
    if stuck is not None or not requests:
        # Only evidence lifts a screen's "unreliable": unconfirmed, it stands.
        return _with_pairs(_as(verdict, Decision.BLOCK, stuck or Finding.REGRESSION), pairs)
    return _with_pairs(
        RowVerdict(kind, RELATIVE, Decision.MORE, Finding.REGRESSION, cand, base, tuple(requests)),
        pairs,
    )


def _as(verdict: RowVerdict, decision: Decision, finding: Finding) -> RowVerdict:
    return RowVerdict(
        verdict.kind, verdict.rule, decision, finding, verdict.candidate, verdict.baseline,
        verdict.requests,
    )  # fmt: skip


def _with_pairs(verdict: RowVerdict, pairs: Pairs) -> RowVerdict:
    return RowVerdict(
        verdict.kind, verdict.rule, verdict.decision, verdict.finding, verdict.candidate,
        verdict.baseline, verdict.requests, losses=pairs.losses, wins=pairs.wins,
        pairs=pairs.pairs,
    )  # fmt: skip
