"""The words every renderer shares: numbers, counts, ids, and what rows and rules are called.

One wording, many screens: the Markdown report, the PR comment, the check
run and the HTML page say "2 must-not-break rows broke", "approve ×2" or
"+4.2 pts" through the same function, so they cannot drift apart.  Pure:
values in, text out; every value from a user or an agent goes through
:mod:`.escape` where it is placed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from ..core.causes import Kind, causes_of
from ..core.diff import Change, Confirmation, DivergentCheck, RowComparison
from ..core.error_bars import ErrorBar
from ..core.gate import GateFailure, Rule
from ..core.model import AgentInfo, Attempt, Phase, Run, Scoring
from ..core.paired import p_value_text
from ..core.result import Executions
from ..core.scoring import (
    Labeled,
    PartValues,
    check_shown,
    check_values,
    decision_text,
    expected_text,
    field_values,
    is_right,
)
from ..core.stats import Metrics
from .escape import code, inline

ID_LEN = 80
"""Characters of a row id shown in Markdown."""
VALUE_LEN = 40
"""Characters of a decision, check name or check value."""
REASON_LEN = 300
"""Characters of a gate failure's reason, a warning or a note."""
DETAIL_LEN = 2000
"""Characters of an error detail (the tail: where the error is)."""
TITLE_IDS = 3
"""Row ids a verdict line or check title names before "+N more"."""


# --- counts and numbers -------------------------------------------------------


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 row``, ``2 rows``; ``many`` for an irregular plural."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def percent(value: float | None) -> str:
    """A share as a percentage with one decimal; "n/a" when undefined."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def points(before: float | None, after: float | None) -> str:
    """The change of a share in percentage points, signed ("+4.2 pts")."""
    if before is None or after is None:
        return "n/a"
    delta = round((after - before) * 100, 1)
    if delta == 0:
        return "0.0 pts"  # never "-0.0": a rounding artifact looks like a loss
    return f"{delta:+.1f} pts"


def pts(value: float | None) -> str:
    """Percentage points with one decimal; two significant digits below 0.1, never "0.0"."""
    if value is None:
        return "n/a"
    if 0 < abs(value) * 100 < 0.095:
        return f"{value * 100:.2g} pts"
    return f"{value * 100:.1f} pts"


def signed(before: int, after: int) -> str:
    """The change of a count, signed ("+2"), or "0"."""
    delta = after - before
    return f"{delta:+d}" if delta else "0"


def signed_points(value: float, decimals: int = 1) -> str:
    """A difference of shares in points, signed, without the unit ("+4.2"); never "-0.0"."""
    delta = round(value * 100, decimals)
    return f"{0:.{decimals}f}" if delta == 0 else f"{delta:+.{decimals}f}"


def percent_to(value: float, decimals: int) -> str:
    """A share as a percentage with ``decimals`` decimals."""
    return f"{value * 100:.{decimals}f}%"


def distinct_ends(low: float, high: float, show: Callable[[float, int], str]) -> tuple[str, str]:
    """Both ends of an interval with one decimal, more while they would print alike.

    The intervals are never of zero width (``core/error_bars``), and neither
    is their text: 99.996%-100% over 100,000 rows shows as "99.996% – 100.000%",
    not "100.0% – 100.0%".  Stops at 6 decimals (a width below 1e-8 pts).
    """
    for decimals in range(1, 7):
        ends = show(low, decimals), show(high, decimals)
        if ends[0] != ends[1]:
            break
    return ends


def interval_text(bar: ErrorBar) -> str:
    """``53.0% – 100.0%``; "n/a" when there were too few rows for an interval.

    Never two equal ends: one decimal, more while they would print alike.
    """
    if bar.low is None or bar.high is None:
        return "n/a"
    low, high = distinct_ends(bar.low, bar.high, percent_to)
    return f"{low} – {high}"


def se_text(bar: ErrorBar) -> str:
    """The standard error in percentage points ("8.0 pts"); "n/a" when undefined."""
    return pts(bar.se)


def p_value_relation(p: float) -> str:
    """``= 0.049`` or ``< 0.001``: :func:`p_value_text` after a relation sign."""
    text = p_value_text(p)
    return text if text.startswith("<") else f"= {text}"


def ranked_counts(values: Sequence[str | None]) -> list[tuple[str, int]]:
    """Distinct values with their counts, most frequent first, then first seen.

    ``None`` (an error attempt, not a decision) is left out.
    """
    counts = Counter(v for v in values if v is not None)
    order = {v: i for i, v in reversed(list(enumerate(v for v in values if v is not None)))}
    return sorted(counts.items(), key=lambda item: (-item[1], order[item[0]]))


def shown_decisions(decisions: Iterable[str | None]) -> list[str | None]:
    """Decisions as reports show them (``action: refund, amount: 120`` for a structured one)."""
    return [None if d is None else decision_text(d) for d in decisions]


def expected_words(record: Labeled) -> str:
    """A row's expected decision as a list item says it: ``approve``, ``action: refund, ...``,
    or ``success`` for a task its environment scores."""
    return expected_text(record.expected)


def counts_text(pairs: Iterable[tuple[str, int]]) -> str:
    """``approve ×2, deny ×1``, each value inert; "—" when there is none."""
    text = ", ".join(f"{inline(value, VALUE_LEN)} ×{n}" for value, n in pairs)
    return text or "—"


def errors_by_row(attempts: Iterable[Attempt]) -> dict[str, list[tuple[str, int]]]:
    """Error reasons of each row's error attempts, most frequent first (for :func:`counts_text`)."""
    per_row: dict[str, Counter[str]] = {}
    for a in attempts:
        if a.error is not None:
            per_row.setdefault(a.row_id, Counter())[a.error] += 1
    return {
        row: sorted(c.items(), key=lambda item: (-item[1], item[0])) for row, c in per_row.items()
    }


def capped(items: Sequence[str], limit: int) -> list[str]:
    """Markdown list items, at most ``limit`` of them plus "… and N more"."""
    lines = [f"- {item}" for item in items[: max(limit, 0)]]
    hidden = len(items) - len(lines)
    if hidden > 0:
        lines.append(f"- … and {hidden} more")
    return lines


# --- ids, digests and versions --------------------------------------------------


def short_digest(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to tell datasets apart."""
    algorithm, sep, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:12]}" if sep else digest[:19]


def short_sha(value: str | None) -> str | None:
    """A commit as code, its first 12 hex digits; None for no commit."""
    return code(value[:12], 12) if value else None


def plain_id(row_id: str, max_len: int = 40) -> str:
    """A row id for plain text: one line, at most ``max_len`` characters."""
    text = " ".join(row_id.split())
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


def id_list(ids: Sequence[str], show: Callable[[str], str] | None = None) -> str:
    """The first :data:`TITLE_IDS` ids, each through ``show``, then "+N more"."""
    shown = [show(i) if show is not None else i for i in ids[:TITLE_IDS]]
    more = len(ids) - len(shown)
    return ", ".join(shown) + (f" +{more} more" if more > 0 else "")


def row_label(row_id: str, *, must_not_break: bool = False, ratchet: bool = False) -> str:
    """``r-7`` as code, with "(must-not-break, ratchet)" when it is either."""
    tags = [t for t, on in (("must-not-break", must_not_break), ("ratchet", ratchet)) if on]
    return code(row_id, ID_LEN) + (f" ({', '.join(tags)})" if tags else "")


def agent_text(agent: AgentInfo) -> str:
    """A version's label: its command "at `abc1234` (+ uncommitted changes)"."""
    text = inline(agent.description, 120) if agent.description else "*(no description)*"
    if agent.commit:
        text += f" at {code(agent.commit[:12], 12)}"
    if agent.dirty:
        text += " (+ uncommitted changes)"
    return text


# --- what happened to a row ---------------------------------------------------------


def transition(row: RowComparison) -> str:
    """``stable-correct → flip``, and the final classes when confirmation changed them."""
    text = f"{row.baseline_class.value} → {row.candidate_class.value}"
    if (row.baseline_final_class, row.candidate_final_class) != (
        row.baseline_class,
        row.candidate_class,
    ):
        text += (
            f" (with confirmation attempts: baseline {row.baseline_final_class.value}, "
            f"candidate {row.candidate_final_class.value})"
        )
    return text


def divergence_text(check: DivergentCheck | None) -> str:
    """``first divergent check `return_window`: baseline ok ×9 · candidate ok ×5, expired ×4``."""
    if check is None:
        return "no intermediate check diverged: the versions differ at the decision itself"
    return (
        f"first divergent check {code(check.name, VALUE_LEN)}: "
        f"baseline {_check_counts(check.baseline)} · candidate {_check_counts(check.candidate)}"
    )


def _check_counts(pairs: Sequence[tuple[str, int]]) -> str:
    """A check's values; an ordered list of tool calls shows as ``[lookup, refund]``."""
    parts = []
    for value, n in pairs:
        shown = check_shown(value)
        parts.append(f"{inline(shown, VALUE_LEN if shown == value else 2 * VALUE_LEN)} ×{n}")
    return ", ".join(parts) or "—"


CONFIRMATION_TEXT = {
    Confirmation.BASELINE_VARIES: "the baseline also varies: it answered wrong on confirmation",
    Confirmation.NOT_REPRODUCED: "not reproduced: every confirmation answer of the "
    "candidate was right",
    Confirmation.INCONCLUSIVE: "inconclusive: a version gave no valid answer on "
    "confirmation (its attempts failed)",
    Confirmation.CONFIRMED_REGRESSION: "confirmed regression",
}
"""A lost row's confirmation outcome, as a list item says it."""


def _right_wrong(attempts: Sequence[Attempt], record: Labeled, scoring: Scoring) -> tuple[int, int]:
    answered = [a for a in attempts if a.decision is not None]
    right = sum(1 for a in answered if is_right(a, record, scoring))
    return right, len(answered) - right


def judged_text(attempts: Sequence[Attempt], record: Labeled, scoring: Scoring) -> str:
    """``right ×6, wrong ×3``: a version's answers judged, when the decisions are too long to list
    (structured ones) or are right only with their checks."""
    right, wrong = _right_wrong(attempts, record, scoring)
    parts = [f"{name} ×{n}" for name, n in (("right", right), ("wrong", wrong)) if n]
    return ", ".join(parts) or "—"


def judged_in_parts(record: Labeled, scoring: Scoring) -> bool:
    """Whether a row's answers are judged in parts (fields, or required checks) that reports
    name one by one instead of listing whole decisions."""
    return scoring.structured or (scoring.checks_required and bool(record.expected_checks))


def _differed(
    noun: str, base: Sequence[PartValues], cand: Sequence[PartValues], plain: bool
) -> list[str]:
    def named(text: str) -> str:
        return " ".join(text.split())[:VALUE_LEN] if plain else code(text, VALUE_LEN)

    def values(pairs: Sequence[tuple[str, int]]) -> str:
        if not plain:
            return counts_text(pairs)
        return ", ".join(f"{' '.join(v.split())[:VALUE_LEN]} ×{n}" for v, n in pairs) or "—"

    lines = []
    for b, c in zip(base, cand, strict=True):
        if b.wrong or c.wrong or {v for v, _ in b.values} != {v for v, _ in c.values}:
            expected = named(b.expected) if plain else inline(b.expected, VALUE_LEN)
            lines.append(
                f"{noun} {named(b.name)} differed (expected {expected}): "
                f"baseline {values(b.values)} · candidate {values(c.values)}"
            )
    return lines


def differed_parts(
    baseline: Sequence[Attempt],
    candidate: Sequence[Attempt],
    record: Labeled,
    scoring: Scoring,
    *,
    plain: bool = False,
) -> list[str]:
    """Which fields of a structured decision, and which required checks, took a value other
    than the expected one (or other values on each version): ``field `amount` differed
    (expected 120): baseline 120 ×9 · candidate 120 ×6, 150 ×3``.  ``plain``: text for a
    check run or a CI log, not Markdown."""
    lines = _differed(
        "field",
        field_values(baseline, record, scoring),
        field_values(candidate, record, scoring),
        plain,
    )
    if scoring.checks_required:
        lines += _differed(
            "check", check_values(baseline, record), check_values(candidate, record), plain
        )
    return lines


def expected_line_text(record: Labeled, scoring: Scoring) -> str:
    """The expected decision, and the checks when they must be right too: ``approve, check
    `damage` found``."""
    text = inline(expected_words(record), 2 * VALUE_LEN)
    if scoring.checks_required and record.expected_checks:
        text += "".join(
            f", check {code(name, VALUE_LEN)} {inline(value, VALUE_LEN)}"
            for name, value in _shown_checks(record)
        )
    return text


def _shown_checks(record: Labeled) -> list[tuple[str, str]]:
    return [(p.name, p.expected) for p in check_values((), record)]


def confirmation_words(
    row: RowComparison,
    baseline: Sequence[Attempt],
    candidate: Sequence[Attempt],
    record: Labeled,
    scoring: Scoring,
    *,
    blocks: bool = False,
) -> str:
    """What re-running the row on both versions showed, in plain words.

    ``baseline`` and ``candidate`` are the row's confirmation attempts.  A
    side that gave no valid answer is never said to have been right.  On a
    row that ``blocks`` (the strict rule blocks on any wrong answer, re-run
    or not) the words never suggest the re-run cleared it.
    """
    if row.change is not Change.LOST and row.confirmation is None:
        return "not re-run: confirmation runs for rows that were stable-correct on the baseline"
    if row.confirmation is None:
        return "not re-run: no confirmation attempts were recorded"
    b_right, b_wrong = _right_wrong(baseline, record, scoring)
    c_right, c_wrong = _right_wrong(candidate, record, scoring)
    still = "; the strict rule blocks on the wrong answers already given" if blocks else ""
    if row.confirmation is Confirmation.CONFIRMED_REGRESSION:
        return (
            f"**confirmed** on re-run: the baseline was right on all {b_right} of its attempts, "
            f"the candidate wrong on {c_wrong} of {c_right + c_wrong}"
        )
    if row.confirmation is Confirmation.BASELINE_VARIES:
        if blocks:
            return (
                f"on re-run the baseline was wrong too ({b_wrong} of {b_right + b_wrong}), so "
                f"this row varies on both versions{still}"
            )
        return (
            f"not confirmed: on re-run the baseline was wrong too ({b_wrong} of "
            f"{b_right + b_wrong}), so this row varies on both versions"
        )
    if c_right + c_wrong == 0:
        return (
            f"not confirmed: the candidate gave no valid answer on its {len(candidate)} "
            f"confirmation attempts{still}"
        )
    if b_right + b_wrong == 0:
        return (
            f"not confirmed: the baseline gave no valid answer on its {len(baseline)} "
            f"confirmation attempts{still}"
        )
    if blocks:
        return (
            f"on re-run the candidate was right on all {c_right} of its attempts, but a wrong "
            "answer among the first k still blocks (the strict rule: any wrong answer blocks)"
        )
    return (
        f"not reproduced on re-run: the candidate was right on all {c_right} of its attempts; "
        "the wrong answers came from the first k"
    )


# --- the gate's rules ------------------------------------------------------------

RULE_NOUNS: dict[Rule, tuple[str, str, str]] = {
    # rule: (one, many, what happened)
    Rule.MUST_NOT_BREAK: ("must-not-break row", "must-not-break rows", "broke"),
    Rule.UNCLASSIFIED: ("must-not-break row", "must-not-break rows", "got too few answers"),
    Rule.RATCHET: ("ratchet-locked row", "ratchet-locked rows", "broke"),
    Rule.REGRESSION: ("row", "rows", "regressed"),
    Rule.PROTECTED_CHANGE: (
        "protected change",
        "protected changes",
        "not allowed by label",
    ),
    Rule.RECORDED_FAILURE: (
        "earlier run of this commit",
        "earlier runs of this commit",
        "failed",
    ),
    Rule.COST: ("cost limit", "cost limits", "failed"),
    Rule.LATENCY: ("latency limit", "latency limits", "failed"),
}
"""What a failure of each rule is about, for titles: (one, many, what happened)."""

RULE_ORDER = (
    Rule.MUST_NOT_BREAK,
    Rule.UNCLASSIFIED,
    Rule.RATCHET,
    Rule.REGRESSION,
    Rule.PROTECTED_CHANGE,
    Rule.RECORDED_FAILURE,
    Rule.COST,
    Rule.LATENCY,
)
"""The order a verdict names the rules it failed on."""


def reason_parts(failures: Sequence[GateFailure]) -> list[tuple[str, list[str]]]:
    """``("2 must-not-break rows broke", ["r-007", "r-016"])`` per rule, in a fixed order."""
    parts = []
    for rule in RULE_ORDER:
        hits = [f for f in failures if f.rule is rule]
        if not hits:
            continue
        one, many, what = RULE_NOUNS[rule]
        phrase = f"{plural(len(hits), one, many)} {what}"
        parts.append((phrase, [f.id for f in hits if f.id is not None]))
    return parts


# --- what ran ------------------------------------------------------------------------


def executions_text(executions: Executions, reused: bool) -> str:
    """How many times the agent ran, by side and phase, or that a re-run replayed them.

    Attempts recorded before the comparison (a ``--candidate`` run: merged shards,
    an import) ran no agent now, and are said apart.
    """
    if reused:
        text = "reused recorded verdicts for this commit: no agent was run again"
        if executions.total:
            text += f" ({plural(executions.total, 'agent execution')} recorded)"
        return text
    recorded = executions.candidate_recorded
    earlier = (
        f"the candidate's {plural(recorded, 'main attempt')} {'was' if recorded == 1 else 'were'} "
        "recorded earlier"
    )
    if executions.ran_now == 0:
        return "no agent was run" + (f": {earlier}" if recorded else "")
    text = f"{plural(executions.ran_now, 'agent execution')}"
    detail = [
        f"candidate {executions.candidate - recorded}",
        f"baseline top-up {executions.baseline_topup}",
        f"confirmation {executions.confirm_baseline} baseline + "
        f"{executions.confirm_candidate} candidate",
    ]
    text += f" ({', '.join(detail)})"
    if executions.naive:
        text += f" instead of {executions.naive} for re-running both versions on every row"
    if recorded:
        text += f"; {earlier}"
    return text


def errors_note(base: Metrics, cand: Metrics) -> str | None:
    """How the numbers treat errored attempts, said once, when either version had one.

    The convention is :class:`~passk_action.core.stats.Metrics`': never a decision,
    never right.
    Mean accuracy over all attempts is the other reading, shown beside it.
    """
    if not (base.errors or cand.errors):
        return None
    return (
        "Errored attempts are never decisions and never right: mean accuracy leaves them "
        f"out (over all attempts it is {percent(base.attempt_accuracy)} on the baseline, "
        f"{percent(cand.attempt_accuracy)} on the candidate); pass^k counts them as "
        "attempts that were not right."
    )


# --- errors by cause ------------------------------------------------------------------

KIND_ADVICE = {
    Kind.TRANSIENT: (
        "transient (rate limits, server errors, timeouts, dropped connections)",
        "run again later, or give `retry:` a longer `max_backoff_s` for longer outages",
    ),
    Kind.KEY: (
        "like a missing or refused API key",
        "set the key where the agent runs (the step's `env:` in a workflow; pull requests "
        "from forks get no secrets)",
    ),
}
"""What each kind of cause looks like, and what to do about it."""


def errors_line(baseline: Run, candidate: Run) -> str | None:
    """``**Errors:** baseline none · candidate 4: RateLimitError 429 ×3, ...`` and what they
    look like; None when neither version's main attempts errored.

    Main attempts only, as the numbers' ``errors`` count them; each error is the
    attempt's last try (its retries are in the result).
    """
    return _errors_text((("baseline", baseline), ("candidate", candidate)))


def run_errors_line(run: Run) -> str | None:
    """One run's errors by cause (``passk report`` of a run), as :func:`errors_line` says them."""
    return _errors_text(((run.agent.version.value, run),))


def _errors_text(named: Sequence[tuple[str, Run]]) -> str | None:
    sides = []
    every = []
    for name, run in named:
        main = [a for a in run.attempts if a.phase is Phase.MAIN and a.error is not None]
        every += main
        found = causes_of(main)
        if not found:
            sides.append(f"{name} none")
            continue
        listed = ", ".join(f"{inline(c.name, VALUE_LEN)} ×{n}" for c, n in found)
        sides.append(f"{name} {len(main)}: {listed}")
    if not every:
        return None
    text = "**Errors:** " + " · ".join(sides)
    found = causes_of(every)
    kinds = Counter({c.kind: 0 for c, _ in found})
    for c, n in found:
        kinds[c.kind] += n
    for kind in (Kind.TRANSIENT, Kind.KEY):
        if kinds[kind]:
            looks, advice = KIND_ADVICE[kind]
            who = "They look" if kinds[kind] == len(every) else f"{kinds[kind]} of them look"
            if kinds[kind] == 1 and len(every) > 1:
                who = "1 of them looks"
            text += f". {who} {looks}: {advice}"
    return text + "."


def trials_note(sides: Sequence[tuple[str, Metrics]]) -> str | None:
    """How pass^k and the classes read rows with more than k trials, said once where it applies.

    Imported runs keep every trial (``passk import``); pass^k stays the
    harness's own unbiased C(c, k)/C(n, k) over all of them, and the class
    uses them all too.  ``sides`` are (name, metrics), e.g. ("baseline", …).
    """
    counts = [(name, m.beyond_k, m.k) for name, m in sides if m.beyond_k]
    if not counts:
        return None
    k = counts[0][2]
    if len(sides) == 1:
        rows = plural(counts[0][1], "row")
        have = "has" if counts[0][1] == 1 else "have"
    else:
        rows = " and ".join(f"{plural(n, 'row')} of the {name}" for name, n, _ in counts)
        have = "have"
    return (
        f"{rows} {have} more than k = {k} trials: pass^k counts k-in-a-row chances on all of "
        "them (C(c,k)/C(n,k), the harness's own figure), while a row is stable-correct only "
        "if every trial was right."
    )
