"""How one gated row is decided: a sequential test per version, with stated error rates.

A gated row (must-not-break, ratchet-locked, or a baseline-stable-correct
row under ``gate.block_on_any_regression``; :func:`gated_kind`) blocks a
pull request only when the candidate has *really* become less reliable on
it.  The rule ``sequential`` decides that with Wald's sequential
probability ratio test (SPRT; Wald, "Sequential tests of statistical
hypotheses", Ann. Math. Statist. 16, 1945), truncated, on each version's
answers to the row; the default rule, ``relative``, runs this test as its
screen.

**The test.**  H0: each answer is right with probability p0; H1: with p1.
Reading a version's valid answers in recorded order (main attempts, then
confirmations; an errored attempt is not an answer and is skipped), with n
answers of which w are wrong, LLR(n, w) = w ln(q1 / q0) + (n - w)
ln((1 - q1) / (1 - q0)), q = 1 - p.  It ends "unreliable" at the first
answer where LLR >= ln((1 - beta) / alpha), "reliable" where LLR <=
ln(beta / (1 - alpha)) (Wald's thresholds), and at ``max_decisions``
answers as :class:`SprtSpec` says.  It looks first after the k main
attempts (they all run, whatever they show), then after every further
answer, so the verdict does not depend on how confirmations were batched;
answers recorded after it ended are kept and shown, not read.

**The verdict** (:func:`judge`):

1. The candidate's test: "as reliable as a stable-correct row" (p0 = 0.99)
   against "clearly less reliable" (p1 = 0.7, the drop the gate must
   catch), alpha 0.001, beta 0.1, 40 answers, the likelier hypothesis at
   the 40th.  As integer boundaries: reliable after 7 right answers and no
   wrong one (18 answers with one wrong, 29 with two); unreliable with 3
   wrong within 12 answers, 4 within 23, 5 within 34 (:func:`boundaries`).
   "Reliable" -> PASS (with a wrong answer among them: "within what a
   reliable row does by chance").
2. "Unreliable" -> the baseline's answers (main and confirmation) are
   tested: 0.99 against 0.9 (where the candidate's test starts failing
   rows), alpha 0.005, beta 0.1, 60 answers; only crossing its upper
   boundary (3 wrong within 20 answers, 4 within 46, ...) shows the
   baseline varies -> PASS ("baseline varies": the row was already that
   unreliable); otherwise -> BLOCK (a regression).
3. A test that has not ended asks for more attempts on its side: as many as
   would end it if every one were right.  When no more can be made
   (``more_possible=False``, or the side's ``max_attempts`` are spent), an
   unended candidate test BLOCKs (the row cannot be judged), and a
   candidate shown unreliable stays BLOCKed (only evidence lifts it).

**Why this rule** (chosen by measurement: ``bench/gate_rule.py``, table in
``bench/gate_rule.md``; k = 3, exact figures).  Harmless pull requests, both
versions right with probability 0.99 on every gated row: the literal rule
passk had blocked 26% of them at 10 gated rows and 78% at 50; this one
blocks 0.41% and 2.0% (goals: <= 1% and <= 5%), and it blocks a row whose
accuracy dropped to 0.7 91.0% of the time (goal >= 90%; the literal rule
66%).  No rule that passes a row after n right answers in a row can miss
that drop less than 0.7^n of the time, so 7 candidate answers (0.7^7 =
8.2% <= 10% < 0.7^6) are the floor for every gated row: this rule spends
7.86 on average at 0.99 (4.86 beyond k = 3), where "block only when the
failure reproduces in confirmation" needs 8.63 for the same goals.  The
baseline is re-run only for rows whose candidate failed (4 in 10,000
harmless rows; about 28 attempts each).  Testing the baseline against 0.9
rather than 0.7 costs those attempts and spares flaky rows: two versions
both right 90% of the time block 7.6% of the time instead of 24%.

``strict`` keeps the literal rule passk had (any wrong answer in any attempt
of a ratchet row blocks, of a must-not-break row unless the baseline erred
too; :func:`judge_strict`) for teams that want it; its rates are in the
same table.

Pure: outcomes in, a :class:`RowVerdict` (decision, finding, the evidence
as counts, any attempts still wanted) out; ``passk gate`` recomputes it
from the recorded attempts alone.  Rates are per row; a gate with G gated
rows blocks a harmless PR with probability 1 - (1 - rate)^G, computed
exactly in ``core/operating.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from . import values
from .causes import Kind, attempt_cause
from .model import Attempt, EvalSettings, Phase, Scoring, Version
from .scoring import Labeled, is_right

RELATIVE = "relative"
SEQUENTIAL = "sequential"
STRICT = "strict"
RULES = (RELATIVE, SEQUENTIAL, STRICT)
OPTIMAL = "optimal"
SPRT = "sprt"
SCREENS = (OPTIMAL, SPRT)
"""The relative rule's screens: the designed table (``core/optimal_screen.py``), or the SPRT
of its first two designs."""

# Two log likelihood ratios this close count as equal: with the defaults two
# wrong answers give exactly ln(30^2) = ln(0.9 / 0.001), the upper threshold.
_TIE = 1e-9


class Outcome(str, Enum):
    """One attempt at a row, scored: a right answer, a wrong one, or no answer at all."""

    RIGHT = "right"
    WRONG = "wrong"
    ERROR = "error"


class GatedKind(str, Enum):
    """Why the gate judges a row (the strict rule treats them as passk always did)."""

    MUST_NOT_BREAK = "must-not-break"
    RATCHET = "ratchet"
    REGRESSION = "regression"
    """A row judged because ``gate.block_on_any_regression`` is on."""


def gated_kind(
    *,
    must_not_break: bool,
    in_ratchet: bool,
    block_on_any_regression: bool,
    baseline_stable_correct: bool,
) -> GatedKind | None:
    """Whether the gate judges a row, and as what; None: it does not.

    Ratchet rows and must-not-break rows always (whatever the baseline did:
    the baseline's own test decides whether its wrong answers matter);
    under ``block_on_any_regression`` every other row whose baseline main
    attempts were stable-correct (a regression needs something to regress
    from).
    """
    if in_ratchet:
        return GatedKind.RATCHET
    if must_not_break:
        return GatedKind.MUST_NOT_BREAK
    if block_on_any_regression and baseline_stable_correct:
        return GatedKind.REGRESSION
    return None


class Decision(str, Enum):
    PASS = "pass"
    BLOCK = "block"
    MORE = "more"
    """Not decided yet: run the attempts in :attr:`RowVerdict.requests`, then judge again."""


class Ending(str, Enum):
    """How one version's test ended."""

    RELIABLE = "reliable"
    UNRELIABLE = "unreliable"
    UNDECIDED = "undecided"
    NOT_TESTED = "not-tested"
    """The baseline's test was not needed (the candidate's passed)."""


class Finding(str, Enum):
    """What the verdict rests on, for the report to put into words."""

    RELIABLE = "reliable"
    """Candidate as reliable as a stable-correct row, without a wrong answer."""
    WITHIN_CHANCE = "within-chance"
    """Candidate wrong at times, but no more than a reliable row is by chance."""
    BASELINE_VARIES = "baseline-varies"
    """Candidate clearly less reliable, and so is the baseline: not a regression."""
    REGRESSION = "regression"
    """Candidate clearly less reliable; the baseline was not shown to be."""
    UNDECIDED = "undecided"
    """The candidate's evidence is unclear (MORE), or stayed unclear with no attempts left."""
    WRONG_ANSWER = "wrong-answer"
    """Strict rule: a wrong answer on a row the rule locks."""
    UNCLASSIFIED = "unclassified"
    """Strict rule: fewer than k valid answers on a side."""
    UNABLE = "unable"
    """Not judged: the agent's last attempts at the row all errored (``unable_after``)."""
    MATCHES_BASELINE = "matches-baseline"
    """Relative rule: the screen flagged the candidate; side by side it is no worse."""


LIKELIER = "likelier"
"""At its last answer the test takes the likelier hypothesis (LLR >= 0: unreliable)."""
RELIABLE_UNLESS_SHOWN = "reliable"
"""At its last answer the test ends "reliable": only crossing the upper boundary shows otherwise."""


@dataclass(frozen=True, slots=True)
class SprtSpec:
    """One truncated SPRT: "right with ``reliable``" against "right with ``unreliable``".

    ``alpha`` and ``beta`` set Wald's thresholds ln((1 - beta) / alpha) and
    ln(beta / (1 - alpha)); ``max_decisions`` truncates it, ending there as
    ``truncation`` says (:data:`LIKELIER` or :data:`RELIABLE_UNLESS_SHOWN`).
    """

    reliable: float
    unreliable: float
    alpha: float
    beta: float
    max_decisions: int
    truncation: str = LIKELIER

    def __post_init__(self) -> None:
        if not 0.0 < self.unreliable < self.reliable < 1.0:
            raise ValueError("need 0 < unreliable < reliable < 1")
        if not (0.0 < self.alpha < 0.5 and 0.0 < self.beta < 0.5):
            raise ValueError("alpha and beta must be within (0, 0.5)")
        if self.max_decisions < 1:
            raise ValueError("max_decisions must be at least 1")
        if self.truncation not in (LIKELIER, RELIABLE_UNLESS_SHOWN):
            raise ValueError(f"unknown truncation {self.truncation!r}")


_CHANCES = (
    "reliable", "unreliable", "alpha", "beta", "baseline_unreliable", "baseline_alpha",
    "baseline_beta",
)  # fmt: skip
_COUNTS = ("max_decisions", "baseline_max_decisions", "max_attempts", "confirm_attempts")


def _check_values(settings: RuleSettings) -> None:
    """Each setting by its value rule (``core/values.py``), wherever the settings come from.

    A chance from 10^-6 to 1 - 10^-6 (a vanishing ``unreliable`` put log(0)
    in Wald's thresholds); a count of answers or attempts up to 1,000, the
    config's maximum (a result recording 10^9 hung ``passk gate``).
    """
    for name in _CHANCES:
        if values.chance(getattr(settings, name)) is None:
            raise ValueError(f"{name} must be {values.CHANCE_TEXT}")
    for name in _COUNTS:
        low = 0 if name == "confirm_attempts" else 1
        number = getattr(settings, name)
        if type(number) is not int or not low <= number <= values.MAX_K:
            raise ValueError(f"{name} must be a whole number from {low} to {values.MAX_K}")


@dataclass(frozen=True, slots=True)
class RuleSettings:
    """The rule and its settings (``gate.rule`` and friends, read from the base commit).

    The candidate's test (:attr:`candidate_test`): ``reliable`` (p0) against
    ``unreliable`` (p1), Wald's nominal error rates ``alpha`` (a harmless
    row blocked) and ``beta`` (a row at p1 passed), ``max_decisions``
    answers at most.  His thresholds keep the true rates below the nominal
    ones (0.00041 and 0.088 with the defaults, exactly in
    ``core/operating.py``).

    The baseline's test (:attr:`baseline_test`), run only when the
    candidate's ends "unreliable": ``reliable`` against
    ``baseline_unreliable`` (0.9: about where the candidate's test starts
    failing rows), ``baseline_alpha`` (a reliable baseline wrongly said to
    vary: a regression missed) and ``baseline_beta`` (a baseline at 0.9 not
    shown to vary: the block stands), ``baseline_max_decisions`` answers; it
    must cross its upper boundary to lift a block.

    ``max_attempts`` bounds the attempts per version and row, errors
    included.  ``confirm_attempts`` is the strict rule's confirmation of a
    lost row on both versions, as passk always ran it.

    The relative rule (``core/relative.py``) reads ``drop``, ``alpha`` (its
    paired comparison's), ``max_decisions`` and ``max_attempts`` (its
    screen's), and its own: ``screen_alpha``, ``screen_beta``, ``anchor_z``,
    ``screen_cap``, ``pair_beta``, ``pair_z``, ``pair_max_decisions``,
    ``pair_max_pairs``, ``pair_quiet``, ``direct_below``, ``measure``.  ``screen_cap``,
    ``pair_z`` and ``direct_below`` came with its second design (result
    schema 6); a result that lacks them was decided by the first, and is
    audited with :data:`~.relative.FIRST_DESIGN`.  ``screen`` came with the third
    (a result that lacks it was decided by ``sprt``): ``optimal``, the designed table
    of ``core/optimal_screen.py`` (``screen_alpha``, ``screen_beta`` and
    ``direct_below`` then unused; ``anchor_z`` and ``screen_cap`` still say which rows
    cannot drop by ``drop`` at all), or ``sprt``, the second design's screen.
    """

    rule: str = RELATIVE
    reliable: float = 0.99
    unreliable: float = 0.7
    alpha: float = 0.001
    beta: float = 0.1
    max_decisions: int = 40
    baseline_unreliable: float = 0.9
    baseline_alpha: float = 0.005
    baseline_beta: float = 0.1
    baseline_max_decisions: int = 60
    max_attempts: int = 80
    confirm_attempts: int = 6
    drop: float = 0.2
    screen_alpha: float = 0.01
    screen_beta: float = 0.08
    anchor_z: float = 0.5
    pair_beta: float = 0.005
    pair_max_decisions: int = 120
    pair_max_pairs: int = 300
    measure: int = 60
    unable_after: int = 5
    screen_cap: float = 0.98
    pair_z: float = 0.7
    direct_below: float = 0.85
    screen: str = OPTIMAL
    """The relative rule's screen (:data:`SCREENS`). A result that lacks it was decided by
    the SPRT screen, and is audited so."""
    pair_quiet: int = -1
    """Pairs with no disagreement after which the paired comparison ends "not shown" (0:
    never; -1: set from ``drop``, :func:`~.relative.quiet_pairs`). A result that lacks it
    was decided without it, and is audited so."""

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        _check_values(self)
        self.candidate_test  # noqa: B018 - validates both tests
        self.baseline_test  # noqa: B018
        if self.max_attempts < max(self.max_decisions, self.baseline_max_decisions):
            raise ValueError("max_attempts must be at least either test's max_decisions")
        if self.confirm_attempts < 0:
            raise ValueError("confirm_attempts must be >= 0")
        if not 0.0 < self.drop < 1.0:
            raise ValueError("drop must be within (0, 1)")
        for name in ("screen_alpha", "screen_beta", "pair_beta"):
            if not 0.0 < getattr(self, name) < 0.5:
                raise ValueError(f"{name} must be within (0, 0.5)")
        if self.anchor_z < 0 or self.pair_z < 0:
            raise ValueError("anchor_z and pair_z must be >= 0")
        if not 0.0 < self.screen_cap < 1.0:
            raise ValueError("screen_cap must be within (0, 1)")
        if not 0.0 <= self.direct_below < 1.0:
            raise ValueError("direct_below must be within [0, 1)")
        if self.pair_max_decisions < 1 or self.pair_max_pairs < 1 or self.unable_after < 1:
            raise ValueError("pair_max_decisions, pair_max_pairs and unable_after must be >= 1")
        if self.measure < 0:
            raise ValueError("measure must be >= 0")
        if self.screen not in SCREENS:
            raise ValueError(f"screen must be one of {', '.join(SCREENS)}, got {self.screen!r}")
        if self.pair_quiet < -1:
            raise ValueError("pair_quiet must be -1 (from drop), 0 (never) or a count of pairs")

    @property
    def candidate_test(self) -> SprtSpec:
        return SprtSpec(
            self.reliable, self.unreliable, self.alpha, self.beta, self.max_decisions, LIKELIER
        )

    @property
    def baseline_test(self) -> SprtSpec:
        return SprtSpec(
            self.reliable,
            self.baseline_unreliable,
            self.baseline_alpha,
            self.baseline_beta,
            self.baseline_max_decisions,
            RELIABLE_UNLESS_SHOWN,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "reliable": self.reliable,
            "unreliable": self.unreliable,
            "alpha": self.alpha,
            "beta": self.beta,
            "max_decisions": self.max_decisions,
            "baseline_unreliable": self.baseline_unreliable,
            "baseline_alpha": self.baseline_alpha,
            "baseline_beta": self.baseline_beta,
            "baseline_max_decisions": self.baseline_max_decisions,
            "max_attempts": self.max_attempts,
            "confirm_attempts": self.confirm_attempts,
            "drop": self.drop,
            "screen_alpha": self.screen_alpha,
            "screen_beta": self.screen_beta,
            "anchor_z": self.anchor_z,
            "pair_beta": self.pair_beta,
            "pair_max_decisions": self.pair_max_decisions,
            "pair_max_pairs": self.pair_max_pairs,
            "pair_quiet": self.pair_quiet,
            "measure": self.measure,
            "unable_after": self.unable_after,
            "screen_cap": self.screen_cap,
            "pair_z": self.pair_z,
            "direct_below": self.direct_below,
            "screen": self.screen,
        }


DEFAULT_RULE = RuleSettings()
"""The default rule and settings: ``gate.rule: relative`` as docs/gate-rule.md describes it."""


# ------------------------------------------------------------------ the test


@dataclass(frozen=True, slots=True)
class Boundaries:
    """The SPRT of some settings as integer boundaries on (answers n, wrong w).

    For n = 1 .. ``max_decisions``: the test ends "unreliable" when
    w >= ``block_from[n]`` and "reliable" when w <= ``pass_up_to[n]``
    (``block_from[n]`` > n: it cannot end unreliable there; ``pass_up_to[n]``
    = -1: nor reliable).  At n = ``max_decisions`` the two meet
    (``pass_up_to`` = ``block_from`` - 1): the test always ends there.
    Index 0 is unused (no answer, no ending).
    """

    max_decisions: int
    block_from: tuple[int, ...]
    pass_up_to: tuple[int, ...]

    def ending(self, n: int, w: int) -> Ending:
        """How the test stands after n answers with w wrong."""
        if n == 0:
            return Ending.UNDECIDED
        if w >= self.block_from[n]:
            return Ending.UNRELIABLE
        if w <= self.pass_up_to[n]:
            return Ending.RELIABLE
        return Ending.UNDECIDED

    def rights_to_pass(self, n: int, w: int) -> int:
        """How many more answers, all right, would end an undecided test (n, w).

        The smallest r >= 1 with w <= pass_up_to[n + r] or n + r the truncation.
        """
        for r in range(1, self.max_decisions - n + 1):
            if n + r == self.max_decisions or w <= self.pass_up_to[n + r]:
                return r
        raise ValueError(f"({n}, {w}) is past the test's last answer")


def log_likelihood_ratio(n: int, w: int, reliable: float, unreliable: float) -> float:
    """ln P(answers | unreliable) / P(answers | reliable) for n answers with w wrong."""
    q0, q1 = 1.0 - reliable, 1.0 - unreliable
    return w * math.log(q1 / q0) + (n - w) * math.log((1.0 - q1) / (1.0 - q0))


@lru_cache(maxsize=2048)
def boundaries(spec: SprtSpec) -> Boundaries:
    """The test ``spec`` as integer boundaries (computed once per spec, cached).

    Comparisons allow :data:`_TIE` so a ratio that equals a threshold in
    exact arithmetic reaches it whatever the rounding.
    """
    upper = math.log((1.0 - spec.beta) / spec.alpha)
    lower = math.log(spec.beta / (1.0 - spec.alpha))
    block_from = [1]
    pass_up_to = [-1]
    for n in range(1, spec.max_decisions + 1):
        llr = [log_likelihood_ratio(n, w, spec.reliable, spec.unreliable) for w in range(n + 1)]
        last = n == spec.max_decisions
        high = 0.0 if last and spec.truncation == LIKELIER else upper
        block = next((w for w in range(n + 1) if llr[w] >= high - _TIE), n + 1)
        if last:
            passing = block - 1
        else:
            passing = max((w for w in range(n + 1) if llr[w] <= lower + _TIE), default=-1)
        block_from.append(block)
        pass_up_to.append(passing)
    return Boundaries(spec.max_decisions, tuple(block_from), tuple(pass_up_to))


# ------------------------------------------------------------- the evidence


@dataclass(frozen=True, slots=True)
class SideEvidence:
    """One version's attempts at the row, and how its test read them.

    ``attempts``, ``decisions`` (valid answers), ``wrong`` and ``errors``
    count everything recorded; ``read`` and ``wrong_read`` are the answers
    the test read before it ended (all of them when it has not ended).
    """

    attempts: int
    decisions: int
    wrong: int
    errors: int
    read: int
    wrong_read: int
    ending: Ending

    def to_json(self) -> dict[str, object]:
        return {
            "attempts": self.attempts,
            "decisions": self.decisions,
            "wrong": self.wrong,
            "errors": self.errors,
            "read": self.read,
            "wrong_read": self.wrong_read,
            "ending": self.ending.value,
        }


@dataclass(frozen=True, slots=True)
class Request:
    """Run ``attempts`` more attempts of the row on ``version``, then judge again."""

    version: Version
    attempts: int

    def to_json(self) -> dict[str, object]:
        return {"version": self.version.value, "attempts": self.attempts}


@dataclass(frozen=True, slots=True)
class RowVerdict:
    """A gated row's verdict, what it rests on, and what is still wanted."""

    kind: GatedKind
    rule: str
    decision: Decision
    finding: Finding
    candidate: SideEvidence
    baseline: SideEvidence
    requests: tuple[Request, ...] = ()
    losses: int | None = None
    """Relative rule, paired comparison: pairs the baseline got right and the candidate not."""
    wins: int | None = None
    pairs: int | None = None

    @property
    def blocks(self) -> bool:
        return self.decision is Decision.BLOCK

    @property
    def unconfirmed_wrong(self) -> bool:
        """Passed with a wrong candidate answer: listed, never folded away, so none hides."""
        return self.decision is Decision.PASS and self.candidate.wrong > 0

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "rule": self.rule,
            "decision": self.decision.value,
            "finding": self.finding.value,
            "candidate": self.candidate.to_json(),
            "baseline": self.baseline.to_json(),
            "requests": [r.to_json() for r in self.requests],
            **(
                {"pairs": {"read": self.pairs, "losses": self.losses, "wins": self.wins}}
                if self.pairs is not None
                else {}
            ),
        }


@dataclass(frozen=True, slots=True)
class SideAttempts:
    """One version's scored attempts at a row, in recorded order; the first ``main`` are main."""

    outcomes: tuple[Outcome, ...]
    main: int
    measured: int = 0
    """Baseline only: the measurement attempts ``passk baseline`` recorded after the main ones."""
    outages: tuple[bool, ...] = ()
    """Per outcome, whether it errored as an outage does (429, 5xx, a timeout:
    ``core/causes.py``); empty when none did.  An outage says the service was away,
    not that the agent cannot answer the row (:func:`unable`)."""

    def __post_init__(self) -> None:
        if self.outages and len(self.outages) != len(self.outcomes):
            raise ValueError("outages must be empty or name every outcome")
        if not 0 <= self.main <= len(self.outcomes):
            raise ValueError("main must be between 0 and the number of outcomes")
        if not 0 <= self.main + self.measured <= len(self.outcomes):
            raise ValueError("main + measured must be at most the number of outcomes")

    @property
    def recorded(self) -> int:
        """The outcomes recorded with the baseline: main, then measurement."""
        return self.main + self.measured

    @property
    def confirm(self) -> int:
        return len(self.outcomes) - self.main


def score(attempts: Iterable[Attempt], row: Labeled, scoring: Scoring) -> SideAttempts:
    """A version's recorded attempts at a row as outcomes, main attempts first.

    Order: main attempts, then a baseline's measurement attempts, then
    confirmations, each by attempt number (the order they were recorded
    in).  Right and wrong are the scoring's judgment
    (:func:`~.scoring.is_right`).
    """
    ordered = sorted(attempts, key=lambda a: (_PHASE_ORDER[a.phase], a.number))
    outcomes = tuple(
        Outcome.ERROR
        if a.decision is None
        else Outcome.RIGHT
        if is_right(a, row, scoring)
        else Outcome.WRONG
        for a in ordered
    )
    outages = tuple(_outage(a) for a in ordered)
    return SideAttempts(
        outcomes,
        sum(1 for a in ordered if a.phase is Phase.MAIN),
        sum(1 for a in ordered if a.phase is Phase.MEASURE),
        outages if any(outages) else (),
    )


def _outage(attempt: Attempt) -> bool:
    found = attempt_cause(attempt)
    return found is not None and found.kind is Kind.TRANSIENT


_PHASE_ORDER = {Phase.MAIN: 0, Phase.MEASURE: 1, Phase.CONFIRM: 2}


def unable(side: SideAttempts, after: int) -> bool:
    """Whether the last ``after`` outcomes all errored, none as an outage: the agent is
    shown unable to answer.

    An outage (a 429, a 5xx, a timeout) shows the service was away, not that the
    agent cannot answer: a row's asking then goes on (after the engine's wait)
    within its attempt budget, which bounds it either way.  Read from the recorded
    attempts alone, so a replay ends where the run did.
    """
    n = len(side.outcomes)
    if n < after:
        return False
    return all(
        side.outcomes[i] is Outcome.ERROR and not (side.outages and side.outages[i])
        for i in range(n - after, n)
    )


def read(side: SideAttempts, bounds: Boundaries, tested: bool = True) -> SideEvidence:
    """Read a version's answers until the test ``bounds`` ends; count everything recorded.

    The test looks first after the main attempts (all k of them run
    whatever they show, so it reads them as one batch), then after every
    further answer; errored attempts are not answers.  A look at the
    truncation (``max_decisions`` answers) always ends it; answers after
    the end are counted, not read.  ``tested=False`` only counts (the
    ending is NOT_TESTED).
    """
    answers = [o is Outcome.WRONG for o in side.outcomes if o is not Outcome.ERROR]
    errors = len(side.outcomes) - len(answers)
    wrong = sum(answers)
    if not tested:
        return SideEvidence(
            len(side.outcomes), len(answers), wrong, errors, len(answers), wrong, Ending.NOT_TESTED
        )
    main = sum(1 for o in side.outcomes[: side.main] if o is not Outcome.ERROR)
    first = max(1, min(main, bounds.max_decisions))
    ending, n, w = Ending.UNDECIDED, 0, 0
    for n in range(1, min(len(answers), bounds.max_decisions) + 1):
        w += answers[n - 1]
        if n >= first:
            ending = bounds.ending(n, w)
            if ending is not Ending.UNDECIDED:
                break
    return SideEvidence(len(side.outcomes), len(answers), wrong, errors, n, w, ending)


def _request(
    version: Version,
    side: SideEvidence,
    bounds: Boundaries,
    settings: RuleSettings,
    attempts: SideAttempts,
) -> Request | None:
    """The attempts that could end an undecided test, within the side's attempt budget,
    unless the agent is shown unable to answer (its last ``unable_after`` attempts errored)."""
    left = settings.max_attempts - side.attempts
    if left <= 0 or unable(attempts, settings.unable_after):
        return None
    return Request(version, min(left, bounds.rights_to_pass(side.read, side.wrong_read)))


# --------------------------------------------------------------- the rules


def judge(
    candidate: SideAttempts,
    baseline: SideAttempts,
    settings: RuleSettings,
    *,
    kind: GatedKind,
    k: int,
    more_possible: bool = True,
    must_not_break: bool = False,
) -> RowVerdict:
    """The verdict of a gated row under ``settings.rule`` from both versions' outcomes.

    Deterministic: the same outcomes and settings always give the same
    verdict, so ``passk gate`` recomputes it from the recorded attempts
    (with ``more_possible=False``: an audit runs nothing).  ``k`` is the
    run's main attempts per row (the strict rule's classes need it);
    ``must_not_break`` marks a ratchet row that is also must-not-break (only
    the strict rule tells them apart).
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if settings.rule == RELATIVE:
        raise ValueError("the relative rule is judged by core/relative.py")
    if baseline.measured:
        # The measurement attempts serve the relative rule alone: the others read what
        # they always read (main attempts, then this comparison's confirmations).
        kept = baseline.outcomes[: baseline.main] + baseline.outcomes[baseline.recorded :]
        outages = baseline.outages
        if outages:
            outages = outages[: baseline.main] + outages[baseline.recorded :]
        baseline = SideAttempts(kept, baseline.main, outages=outages)
    if settings.rule == STRICT:
        return judge_strict(
            candidate,
            baseline,
            settings,
            kind=kind,
            k=k,
            more_possible=more_possible,
            must_not_break=must_not_break,
        )
    bounds = boundaries(settings.candidate_test)
    cand = read(candidate, bounds)
    if cand.ending is Ending.RELIABLE:
        finding = Finding.WITHIN_CHANCE if cand.wrong else Finding.RELIABLE
        base = read(baseline, bounds, tested=False)
        return RowVerdict(kind, SEQUENTIAL, Decision.PASS, finding, cand, base)
    if cand.ending is Ending.UNDECIDED:
        base = read(baseline, bounds, tested=False)
        wanted = (
            _request(Version.CANDIDATE, cand, bounds, settings, candidate)
            if more_possible
            else None
        )
        decision = Decision.MORE if wanted else Decision.BLOCK
        requests = (wanted,) if wanted else ()
        shown_unable = unable(candidate, settings.unable_after)
        finding = Finding.UNABLE if shown_unable else Finding.UNDECIDED
        return RowVerdict(kind, SEQUENTIAL, decision, finding, cand, base, requests)
    base_bounds = boundaries(settings.baseline_test)
    base = read(baseline, base_bounds)
    if base.ending is Ending.UNRELIABLE:
        return RowVerdict(kind, SEQUENTIAL, Decision.PASS, Finding.BASELINE_VARIES, cand, base)
    if base.ending is Ending.UNDECIDED and more_possible:
        wanted = _request(Version.BASELINE, base, base_bounds, settings, baseline)
        if wanted:
            return RowVerdict(
                kind, SEQUENTIAL, Decision.MORE, Finding.REGRESSION, cand, base, (wanted,)
            )
    return RowVerdict(kind, SEQUENTIAL, Decision.BLOCK, Finding.REGRESSION, cand, base)


def _stable_correct(outcomes: Sequence[Outcome], k: int) -> bool | None:
    """True/False: stable-correct or not; None: unclassified (fewer than k answers)."""
    answers = [o for o in outcomes if o is not Outcome.ERROR]
    if len(answers) < k:
        return None
    return Outcome.WRONG not in answers


def _counts(side: SideAttempts) -> SideEvidence:
    answers = [o for o in side.outcomes if o is not Outcome.ERROR]
    wrong = answers.count(Outcome.WRONG)
    errors = len(side.outcomes) - len(answers)
    return SideEvidence(
        len(side.outcomes), len(answers), wrong, errors, len(answers), wrong, Ending.NOT_TESTED
    )


def judge_strict(
    candidate: SideAttempts,
    baseline: SideAttempts,
    settings: RuleSettings,
    *,
    kind: GatedKind,
    k: int,
    more_possible: bool = True,
    must_not_break: bool = False,
) -> RowVerdict:
    """The literal rule passk had before the sequential one (``gate.rule: strict``).

    Classes as ``core/classify.py`` makes them (a right answer is equal to
    the expected one, so "all right" is stable-correct): main classes from
    the main attempts, final classes from all.  A row whose baseline is
    stable-correct and candidate not on the main attempts (a lost row) is
    confirmed once with ``confirm_attempts`` on both versions.  Then:

    - must-not-break rows (``must_not_break``, or ``kind`` MUST_NOT_BREAK)
      block when either side's final class is unclassified (fewer than k
      answers);
    - must-not-break and regression rows block when the baseline's final
      class is stable-correct and the candidate's is not;
    - ratchet rows block whenever the candidate's final class is not
      stable-correct.

    So any wrong candidate answer blocks a ratchet row, and blocks a
    must-not-break row unless the baseline also answered wrong: exactly
    what the gate decided before the sequential rule (a ratchet row that is
    also must-not-break needs ``must_not_break``, since its kind is
    RATCHET), so ``passk gate`` re-derives an older result's decision.
    """
    base_main = _stable_correct(baseline.outcomes[: baseline.main], k)
    cand_main = _stable_correct(candidate.outcomes[: candidate.main], k)
    requests: list[Request] = []
    if base_main is True and cand_main is not True and more_possible:
        for version, side in ((Version.BASELINE, baseline), (Version.CANDIDATE, candidate)):
            missing = min(settings.confirm_attempts, settings.max_attempts - len(side.outcomes))
            missing -= side.confirm
            if missing > 0:
                requests.append(Request(version, missing))
    base_evidence, cand_evidence = _counts(baseline), _counts(candidate)
    if requests:
        return RowVerdict(
            kind,
            STRICT,
            Decision.MORE,
            Finding.WRONG_ANSWER,
            cand_evidence,
            base_evidence,
            tuple(requests),
        )
    base_final = _stable_correct(baseline.outcomes, k)
    cand_final = _stable_correct(candidate.outcomes, k)
    marked = must_not_break or kind is GatedKind.MUST_NOT_BREAK
    lost = base_final is True and cand_final is not True
    if marked and (base_final is None or cand_final is None):
        finding, blocked = Finding.UNCLASSIFIED, True
    elif kind is GatedKind.RATCHET:
        finding, blocked = Finding.WRONG_ANSWER, cand_final is not True
    else:
        finding, blocked = Finding.WRONG_ANSWER, lost
    if blocked and cand_final is None:
        finding = Finding.UNCLASSIFIED
    if not blocked:
        finding = Finding.RELIABLE if cand_evidence.wrong == 0 else Finding.BASELINE_VARIES
    decision = Decision.BLOCK if blocked else Decision.PASS
    return RowVerdict(kind, STRICT, decision, finding, cand_evidence, base_evidence)


def judge_row(
    row: Labeled,
    baseline: Iterable[Attempt],
    candidate: Iterable[Attempt],
    settings: RuleSettings,
    *,
    kind: GatedKind,
    evals: EvalSettings,
    more_possible: bool = True,
    must_not_break: bool = False,
) -> RowVerdict:
    """:func:`judge` of a row's recorded attempts (all phases) on both versions, each
    judged right or not by ``evals.scoring``; k is ``evals.k``."""
    return judge(
        score(candidate, row, evals.scoring),
        score(baseline, row, evals.scoring),
        settings,
        kind=kind,
        k=evals.k,
        more_possible=more_possible,
        must_not_break=must_not_break,
    )
