"""How an answer becomes a decision, and whether a decision is right: where the rules apply.

Exact and deterministic: no model is asked whether two answers agree.

**Reading** (:func:`read_decision`, :func:`scored_attempt`): the agent's
answer becomes the decision the rules compare.  An extractor (a JSON
pointer into a JSON answer, or a regular expression's one group over a
text answer) reads it out of the answer; a structured decision is a JSON
object, held as its canonical JSON text; a task its environment scores
has the outcome the agent reported as its decision (``success`` when
``correct`` is true, or its ``score`` is at or above the threshold).  An
answer the rules cannot read is a ``bad-output`` error attempt with the
reason, never a decision, and it keeps the answer.  Reading happens when
an attempt is recorded, and again when a recorded run is scored under
other rules (:func:`rescore_run`): the base commit's rules decide, and
nothing is asked of any agent.

**Judging** (:func:`is_right`, the one entry point, and :func:`judge`): a
label is right when it equals the expected one after ``normalize``; a
structured decision when every field the row expects matches by its rule
(exact, a list as a set, any of several values, a number within a
tolerance); with ``checks: required``, only when the row's expected checks
are right too.  Two decisions *agree* when their keys (:func:`agreement_key`)
are equal: the label after ``normalize``, or the canonical values of the
fields the row expects, and the expected checks' values when they are
required.  So a changed amount with the same action is another decision.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Protocol

from . import values
from .model import (
    ANY_OF,
    Attempt,
    ExpectedChecks,
    Extractor,
    FieldRule,
    Json,
    Phase,
    Run,
    Scoring,
    Verdict,
    canonical_json,
    object_text,
)
from .regex import TooLong, compile_pattern, search

BAD_OUTPUT = "bad-output"
"""The reason code of an answer that breaks the protocol, or that the rules cannot read."""
UNSCORED = "unscored"
"""The reason code of an answer the scorer program has not judged (yet): never a decision."""
SCORER_ERROR = "scorer-error"
"""The reason code of an answer the scorer program could not judge (it crashed, hung, said
garbage or too much): never a decision, never the agent's fault alone."""
SUCCESS = "success"
FAILURE = "failure"
"""The decision of a task its environment scored: it succeeded, or it did not."""
ABSENT = "(absent)"
"""Stands for a field or a check an answer did not have."""
_MISSING: Any = object()


# --------------------------------------------------------------------- reading


class Unreadable(ValueError):
    """The rules cannot read a decision from the answer; ``str()`` says why, in one line.

    The reason names the rule, never the answer's text: the attempt keeps the
    answer beside it, and answers that fail alike read alike (a report counts
    them as one cause; the first attempts of a run that all fail alike are an
    input error, said once with a sample answer).
    """


class Unscored(Unreadable):
    """Under a scorer program the agent's answer is no decision until the scorer judges it."""


def _preview(value: Json, limit: int = 60) -> str:
    text = value if isinstance(value, str) else _compact(value)
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _compact(value: Json) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return f"a {type(value).__name__}"


def _reject_constant(name: str) -> Any:
    raise Unreadable(f"{name} is not JSON")


def _json_text(text: str, what: str) -> Json:
    """A JSON value from a text answer (an LLM's JSON output), or Unreadable."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except Unreadable as exc:
        raise Unreadable(f"{what} is not valid JSON ({exc})") from None
    except (ValueError, RecursionError) as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise Unreadable(f"{what} is not JSON ({message})") from None


def pointer_parts(pointer: str) -> tuple[str, ...] | None:
    """An RFC 6901 JSON pointer as its reference tokens; None when it is not one.

    ``""`` is the whole document; ``"/a/0"`` is ``("a", "0")``; ``~1`` stands
    for ``/`` and ``~0`` for ``~`` (a ``~`` followed by anything else is an error).
    """
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        return None
    parts = []
    for token in pointer[1:].split("/"):
        if re.search(r"~(?![01])", token):
            return None
        parts.append(token.replace("~1", "/").replace("~0", "~"))
    return tuple(parts)


def resolve_pointer(document: Json, pointer: str) -> Json:
    """The value ``pointer`` names in ``document`` (RFC 6901); Unreadable says what is missing."""
    parts = pointer_parts(pointer)
    if parts is None:  # pragma: no cover - the config refuses such a pointer
        raise Unreadable(f"{pointer!r} is not a JSON pointer")
    value = document
    for depth, token in enumerate(parts):
        here = "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts[: depth + 1])
        if isinstance(value, dict):
            if token not in value:
                raise Unreadable(f"the answer has no {here}")
            value = value[token]
        elif isinstance(value, list):
            if not re.fullmatch(r"0|[1-9][0-9]*", token) or int(token) >= len(value):
                raise Unreadable(f"the answer has no {here}")
            value = value[int(token)]
        else:
            raise Unreadable(f"the answer has no {here}")
    return value


def _extract(raw: Json, extract: Extractor) -> Json:
    if extract.regex is not None:
        if not isinstance(raw, str):
            raise Unreadable(f"{extract.describe()} reads text; the answer is {_kind(raw)}")
        try:
            found = search(compile_pattern(extract.regex), raw)
        except TooLong as exc:
            raise Unreadable(f"{extract.describe()} on this answer: {exc}") from None
        if found is None:
            raise Unreadable(f"{extract.describe()} matched nothing in the answer")
        if not found:
            raise Unreadable(f"{extract.describe()} captured nothing in the answer")
        return found
    pointer = extract.json_pointer or ""
    document = _json_text(raw, "the answer") if isinstance(raw, str) else raw
    return resolve_pointer(document, pointer)


def _kind(value: Json) -> str:
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, str):
        return "a text"
    if value is None:
        return "null"
    return "a JSON " + ("boolean" if isinstance(value, bool) else "number")


def _as_label(value: Json, scoring: Scoring) -> str:
    """A plain decision: a non-empty string; a number or boolean an extractor read, as its
    JSON text (``/approved`` -> ``true``)."""
    if isinstance(value, str):
        if not value.strip():
            raise Unreadable("the decision is empty")
        return value
    scalar = isinstance(value, bool) or (isinstance(value, (int, float)) and values.finite(value))
    if scalar and scoring.extract is not None:
        return _compact(value)
    if isinstance(value, dict):
        how = "list its fields under scoring.fields"
        if scoring.extract is None:
            how += " or read one of them with scoring.extract.json_pointer"
        raise Unreadable(f"the decision is a JSON object ({how})")
    raise Unreadable(f"the decision must be a string, got {_kind(value)}")


def _as_object(value: Json) -> str:
    """A structured decision: a JSON object, or a text holding one, as its canonical text."""
    if isinstance(value, str):
        value = _json_text(value, "the decision")
    if not isinstance(value, dict):
        raise Unreadable(f"the decision must be a JSON object with its fields, got {_kind(value)}")
    try:
        return object_text(value)
    except (ValueError, RecursionError):
        raise Unreadable("the decision cannot be stored as JSON (too deep, or NaN)") from None


def outcome(correct: Json, score: Json, threshold: float) -> bool:
    """Whether a task its environment scored succeeded: ``correct``, else ``score >= threshold``.

    Raises Unreadable when the answer reports neither (or a malformed one).
    """
    if correct is not None:
        if not isinstance(correct, bool):
            raise Unreadable(f'"correct" must be true or false, got {_preview(correct)}')
        return correct
    if score is not None:
        number = values.finite(score)
        if number is None:
            raise Unreadable(f'"score" must be a finite number, got {_preview(score)}')
        return number >= threshold
    raise Unreadable(
        'the answer reports no outcome: send "correct": true or false, or a "score" '
        "(scoring.by is environment)"
    )


def read_decision(raw: Json, correct: Json, score: Json, scoring: Scoring) -> str:
    """The decision ``scoring`` reads from an answer, or Unreadable saying why not.

    ``raw`` is the answer's ``decision`` (``_MISSING`` when it has none);
    ``correct`` and ``score`` the outcome it reported (None when absent).
    """
    if scoring.by_scorer:
        raise Unscored("the scorer program has not judged this answer")
    if scoring.by_environment:
        return SUCCESS if outcome(correct, score, scoring.threshold) else FAILURE
    if raw is _MISSING or raw is None:
        if correct is not None or score is not None:
            raise Unreadable(
                "the answer reports an outcome but no decision: a task its environment "
                "scores needs scoring.by: environment"
            )
        raise Unreadable('the answer has no "decision"')
    value = raw if scoring.extract is None else _extract(raw, scoring.extract)
    return _as_object(value) if scoring.structured else _as_label(value, scoring)


def _kept_answer(raw: Json, decision: str | None) -> Json:
    """What the attempt keeps of the answer: nothing when it is the decision itself."""
    if raw is _MISSING or raw is None:
        return None
    if isinstance(raw, str) and raw == decision:
        return None
    if isinstance(raw, dict) and decision is not None and decision.startswith("{"):
        try:
            if object_text(raw) == decision:
                return None
        except (ValueError, RecursionError):
            pass
    return raw


def scored_attempt(attempt: Attempt, raw: Json, scoring: Scoring) -> Attempt:
    """``attempt`` with the decision ``scoring`` reads from the answer, or a bad-output error.

    ``raw`` is what the agent answered as its decision (``_MISSING``: no
    decision); ``attempt`` carries the outcome it reported (``correct``,
    ``score``).  The attempt keeps the answer whenever it is not the
    decision itself, so it can be read again under other rules.
    """
    if scoring.by_scorer:
        # What the agent says of itself ("correct": true) is not kept, let alone believed.
        plain = replace(attempt, correct=None, score=None, answer=_kept(raw))
        return scorer_decision(plain, attempt.verdicts, scoring)
    outcome_keys = (attempt.correct, attempt.score)
    try:
        decision = read_decision(raw, *outcome_keys, scoring)
    except Unreadable as exc:
        return replace(attempt, decision=None, error=BAD_OUTPUT, detail=str(exc), answer=_kept(raw))
    return replace(
        attempt, decision=decision, error=None, detail=None, answer=_kept_answer(raw, decision)
    )


def _kept(raw: Json) -> Json:
    return None if raw is _MISSING else raw


def verdict_right(verdict: Verdict, threshold: float) -> bool | None:
    """Whether one verdict says right: ``correct``, else ``score >= threshold``; None for a
    verdict that is an error (or says neither)."""
    if verdict.error is not None:
        return None
    if verdict.correct is not None:
        return verdict.correct
    if verdict.score is not None:
        return verdict.score >= threshold
    return None


def scorer_decision(attempt: Attempt, verdicts: Sequence[Verdict], scoring: Scoring) -> Attempt:
    """``attempt`` with the decision its scorer verdicts make, or an error attempt.

    - no verdict yet: an ``unscored`` error (the scorer never ran on it);
    - any verdict an error: a ``scorer-error`` attempt with the first reason
      (a scorer that crashed, hung, or answered garbage is never a decision);
    - every verdict right: ``success``; every verdict wrong: ``failure``;
    - verdicts that split (a judge asked ``judge_repeats`` times disagreed with
      itself on this one answer): the majority, a tie counted ``failure``; the
      split stays recorded and is reported as the judge's noise, not the agent's
      (:func:`judge_split`).

    The verdicts are kept on the attempt either way; the answer is kept too.
    """
    kept = replace(attempt, verdicts=tuple(verdicts))
    if not verdicts:
        return replace(
            kept, decision=None, error=UNSCORED, detail="the scorer program did not judge it"
        )
    failed = next((v for v in verdicts if verdict_right(v, scoring.threshold) is None), None)
    if failed is not None:
        detail = failed.detail or "the scorer answered no verdict"
        return replace(kept, decision=None, error=SCORER_ERROR, detail=f"scorer: {detail}")
    right = sum(1 for v in verdicts if verdict_right(v, scoring.threshold))
    decision = SUCCESS if 2 * right > len(verdicts) else FAILURE
    return replace(kept, decision=decision, error=None, detail=None)


def judge_split(attempt: Attempt, threshold: float) -> bool:
    """Whether the scorer's verdicts on this one answer disagree (a judge's own noise)."""
    said = {verdict_right(v, threshold) for v in attempt.verdicts}
    return len(said) > 1 and None not in said


def answer_of(attempt: Attempt, recorded: Scoring) -> Json:
    """What the agent answered as its decision, from an attempt recorded under ``recorded``.

    ``_MISSING`` when it answered no decision.  A recorded attempt keeps the
    answer whenever it is not the decision itself; when the decision was the
    outcome of a task its environment scored, only a kept answer is one.
    """
    if attempt.answer is not None:
        return attempt.answer
    if attempt.decision is not None and not recorded.by_outcome:
        return attempt.decision
    return _MISSING


MISSING = _MISSING
"""Passed as ``raw`` to :func:`scored_attempt` for an answer with no decision."""


def reads_alike(one: Scoring, other: Scoring) -> bool:
    """Whether both rules read every answer into the same decision (they may judge apart)."""
    return (
        one.extract,
        one.structured,
        one.by,
        one.by_scorer,
        one.threshold if one.by_outcome else 0,
    ) == (
        other.extract,
        other.structured,
        other.by,
        other.by_scorer,
        other.threshold if other.by_outcome else 0,
    )


def rescore_attempt(attempt: Attempt, recorded: Scoring, scoring: Scoring) -> Attempt:
    """An attempt recorded under ``recorded``, read again under ``scoring``.

    A crash, a timeout or a broken answer (nothing answered) stays as it is.
    Under a scorer program the recorded verdicts decide again (no scorer
    runs here); an attempt recorded without them is ``unscored``.
    """
    if scoring.by_scorer and attempt.verdicts:
        return scorer_decision(attempt, attempt.verdicts, scoring)
    if not attempt.answered:
        return attempt
    return scored_attempt(attempt, answer_of(attempt, recorded), scoring)


def unjudged(attempt: Attempt) -> Attempt:
    """``attempt`` back to its answer alone, for a scorer program to judge again.

    Its verdicts, its decision and a scorer's error are dropped (an ``unscored``
    attempt, as the agent's process returns it); what the agent's own process
    did (a crash, a timeout, a broken answer) stays as it is.  The two-job
    mode's gating job reads the measuring job's file this way: verdicts made
    there are the pull request's word, the base's scorer judges again.
    """
    if attempt.error not in (None, UNSCORED, SCORER_ERROR):
        return attempt
    return replace(
        attempt,
        decision=None,
        error=UNSCORED,
        detail="the scorer program did not judge it",
        verdicts=(),
        correct=None,
        score=None,
    )


def rescore_run(run: Run, scoring: Scoring) -> Run:
    """``run`` scored under ``scoring``: every answer read again from what was recorded.

    The gate's rules are the base commit's; a run recorded under others
    (an older baseline, a candidate recorded elsewhere) is judged by them
    without asking any agent.  Unchanged when the rules already match.
    """
    recorded = run.settings.scoring
    if recorded == scoring:
        return run
    settings = replace(run.settings, scoring=scoring)
    if reads_alike(recorded, scoring):
        return replace(run, settings=settings)
    attempts = tuple(rescore_attempt(a, recorded, scoring) for a in run.attempts)
    return replace(run, settings=settings, attempts=attempts)


def unreadable_everywhere(attempts: Sequence[Attempt]) -> Attempt | None:
    """The first attempt, when every attempt answered and none could be read; else None.

    Then the rules, not the agent, are wrong (an extractor that matches
    nothing): that is an input error, said once, with a sample answer.
    """
    if not attempts or any(a.valid or not a.answered for a in attempts):
        return None
    return attempts[0]


def unreadable_message(first: Attempt, count: int, scoring: Scoring) -> tuple[str, str, str]:
    """(key, message, hint) for :func:`unreadable_everywhere`: the rule, and a sample answer."""
    sample = first.answer if first.answer is not None else first.decision
    reason = (first.detail or "").splitlines()[0] if first.detail else "unreadable"
    if scoring.by_scorer:
        key = "scoring.command"
        hint = (
            "the scorer program could not judge any answer: run it by hand on one request "
            '(one JSON object on stdin) and make it print {"correct": true|false} or '
            '{"score": n}'
        )
    elif scoring.extract is not None:
        key = "scoring.extract"
        hint = "fix the extractor so it finds the decision in answers like this one"
    elif scoring.by_environment:
        key = "scoring.by"
        hint = 'the agent must report "correct" or "score" with each answer'
    else:
        key = "scoring"
        hint = "make the rules match what the agent answers (scoring.fields, scoring.extract)"
    said = "" if sample is None else f"; a sample answer: {_preview(sample, 120)}"
    message = f"none of the {count} answers could be read ({reason}){said}"
    return key, message, hint


# --------------------------------------------------------------------- judging


def normalize(decision: str, scoring: Scoring) -> str:
    """Apply the scoring's normalization rules, in order, to one label."""
    return _normalized(decision, scoring.normalize)


def _normalized(text: str, rules: Iterable[str]) -> str:
    for rule in rules:
        if rule == "strip":
            text = text.strip()
        elif rule == "casefold":
            text = text.casefold()
        else:  # pragma: no cover - the config schema admits only known rules
            raise ValueError(f"unknown normalization rule {rule!r}")
    return text


def expected_decision(expected: str | None) -> str:
    """What a right decision is: the expected one, or ``success`` for a task its environment
    scores."""
    return SUCCESS if expected is None else expected


@lru_cache(maxsize=65536)
def _object(text: str) -> Mapping[str, Json] | None:
    """A structured decision's fields, from its canonical text; None when it is not one."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _number(value: Json) -> float | None:
    if isinstance(value, bool):
        return None
    return values.finite(value)


def _canonical(value: Json, rule: FieldRule, rules: Sequence[str]) -> Json:
    """One field's value as two agreeing answers share it (strings normalized, numbers alike)."""
    if isinstance(value, str):
        return _normalized(value, rules)
    number = _number(value)
    if number is not None:
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if isinstance(value, list):
        items = [_canonical(v, rule, rules) for v in value]
        if rule.compare == "set":  # sorted and once each: equal lists are equal sets
            unique = {canonical_json(item).decode("utf-8"): item for item in items}
            return [unique[key] for key in sorted(unique)]
        return items
    return value


def _field_norm(rule: FieldRule, scoring: Scoring) -> tuple[str, ...]:
    return scoring.normalize if rule.normalize is None else rule.normalize


def _value_right(got: Json, expected: Json, rule: FieldRule, norm: Sequence[str]) -> bool:
    if rule.numeric:
        number, want = _number(got), _number(expected)
        if number is not None and want is not None:
            return values.within_tolerance(number, want, rule.tolerance, rule.relative_tolerance)
    return _same(_canonical(got, rule, norm), _canonical(expected, rule, norm))


def _same(one: Json, other: Json) -> bool:
    try:
        return canonical_json(one) == canonical_json(other)
    except (ValueError, TypeError, RecursionError):
        return False


def field_right(got: Json, expected: Json, rule: FieldRule, scoring: Scoring) -> bool:
    """Whether a field's value matches the row's expected value by the field's rule."""
    if got is _MISSING:
        return False
    norm = _field_norm(rule, scoring)
    if rule.compare == "set":
        if not isinstance(got, list):
            return False
        want = expected if isinstance(expected, list) else [expected]
        return _same(_canonical(got, rule, norm), _canonical(want, rule, norm))
    if rule.compare == "any_of":
        options = expected if isinstance(expected, list) else [expected]
        return any(_value_right(got, option, rule, norm) for option in options)
    return _value_right(got, expected, rule, norm)


def field_words(value: Json, name: str, scoring: Scoring) -> frozenset[str]:
    """The words a structured decision's field ``name`` holds: its strings (a list's too),
    normalized by the field's rule; none for a numeric field (tolerances compare numbers)."""
    rule = _rule(name, scoring)
    if rule.numeric:
        return frozenset()
    items = value if isinstance(value, list) else [value]
    norm = _field_norm(rule, scoring)
    return frozenset(_normalized(item, norm) for item in items if isinstance(item, str))


def _rule(name: str, scoring: Scoring) -> FieldRule:
    """A field's rule; exact for a field the rules do not name (the head's rows under the base's
    rules: the dataset of its own config would have refused it)."""
    return scoring.field(name) or FieldRule(name)


def is_correct(decision: str, expected: str | None, scoring: Scoring) -> bool:
    """Whether a decision matches the expected one (the decision alone, checks aside).

    A label: equal after ``normalize``.  A structured decision: every field
    of the expected object matches by its rule; a field the answer lacks is
    wrong, one the row does not expect is not judged.  A task its
    environment or a scorer program scored: the decision is ``success``.
    """
    if scoring.by_scorer:
        return decision == SUCCESS
    want = expected_decision(expected)
    if not scoring.structured or expected is None:
        return normalize(decision, scoring) == normalize(want, scoring)
    got, fields = _object(decision), _object(want)
    if got is None or fields is None:
        return False
    return all(
        field_right(got.get(name, _MISSING), value, _rule(name, scoring), scoring)
        for name, value in fields.items()
    )


def checks_right(checks: Sequence[tuple[str, str]], expected: ExpectedChecks) -> bool:
    """Whether every expected check has its expected value (exact; JSON values as JSON)."""
    if not expected:
        return True
    reported = dict(checks)
    return all(check_value_right(reported.get(name), value) for name, value in expected)


def check_value_right(reported: str | None, expected: Json) -> bool:
    """A reported check's value (text, as recorded) against its expected value.

    A string compares exactly; any other JSON value (an ordered list of tool
    calls) compares with the reported value read as JSON, in canonical form
    (keys in any order, lists in order).
    """
    if reported is None:
        return False
    if isinstance(expected, str):
        return reported == expected
    try:
        value = json.loads(reported)
    except (ValueError, RecursionError):
        return False
    return _same(value, expected)


class Labeled(Protocol):
    """What judging needs of a row: a dataset :class:`~.model.Row`, or a
    :class:`~.model.RowRecord`."""

    @property
    def expected(self) -> str | None: ...

    @property
    def expected_checks(self) -> ExpectedChecks: ...


def is_right(attempt: Attempt, row: Labeled, scoring: Scoring) -> bool:
    """Whether one attempt is right for its row: the one entry point of judging.

    An error attempt is never right.  The decision must match the row's
    expected one (:func:`is_correct`); with ``checks: required``, the row's
    expected checks must be right too (:func:`checks_right`).
    """
    if attempt.decision is None:
        return False
    if not is_correct(attempt.decision, row.expected, scoring):
        return False
    return not scoring.checks_required or checks_right(attempt.checks, row.expected_checks)


def right_attempt(
    row: Labeled, row_id: str, number: int, phase: Phase, scoring: Scoring
) -> Attempt:
    """An attempt at ``row`` that ``scoring`` judges right (:func:`is_right` holds).

    The expected decision (a field ruled ``any_of`` takes its first allowed
    value; ``success``, reported as correct, for a task its environment
    scores) with every expected check at its expected value.  The two-job
    mode's measuring job assumes such answers for a baseline it cannot see.
    """
    checks = tuple(
        (name, value if isinstance(value, str) else canonical_json(value).decode("utf-8"))
        for name, value in row.expected_checks
    )
    if scoring.by_scorer:
        return Attempt(row_id, number, phase, SUCCESS, checks, verdicts=(Verdict(correct=True),))
    if scoring.by_environment or row.expected is None:
        return Attempt(row_id, number, phase, SUCCESS, checks, correct=True)
    decision = row.expected
    fields = _object(decision) if scoring.structured else None
    if fields is not None:
        chosen = {
            name: value[0]
            if _rule(name, scoring).compare == ANY_OF and isinstance(value, list) and value
            else value
            for name, value in fields.items()
        }
        decision = object_text(chosen)
    return Attempt(row_id, number, phase, decision, checks)


def agreement_key(attempt: Attempt, row: Labeled, scoring: Scoring) -> str:
    """What two agreeing answers share (None is never asked: ``attempt`` is valid).

    A label after ``normalize``; a structured decision's fields the row
    expects, in canonical form (absent ones included); with ``checks:
    required``, the expected checks' values too.
    """
    decision = attempt.decision
    assert decision is not None
    key = _decision_key(decision, row.expected, scoring)
    if scoring.checks_required and row.expected_checks:
        reported = dict(attempt.checks)
        key += "\n" + canonical_json(
            [reported.get(name, ABSENT) for name, _ in row.expected_checks]
        ).decode("utf-8")
    return key


def _decision_key(decision: str, expected: str | None, scoring: Scoring) -> str:
    if not scoring.structured or expected is None:
        return normalize(decision, scoring)
    got, fields = _object(decision), _object(expected)
    if got is None or fields is None:
        return decision
    return canonical_json(
        [_field_key(got.get(name, _MISSING), _rule(name, scoring), scoring) for name in fields]
    ).decode("utf-8")


def _field_key(value: Json, rule: FieldRule, scoring: Scoring) -> Json:
    if value is _MISSING:
        return ABSENT
    return [_canonical(value, rule, _field_norm(rule, scoring))]


@dataclass(frozen=True, slots=True)
class Judged:
    """A row's attempts as judging sees them: each valid one's key, and how many were right."""

    keys: tuple[str, ...]
    right: int
    errors: int


def judge(attempts: Iterable[Attempt], row: Labeled, scoring: Scoring) -> Judged:
    """Every attempt of a row judged once: keys of the valid ones, right ones, errors.

    Runs for every row of every run: with plain labels it is list operations
    in C, no call per decision.
    """
    chosen = attempts if isinstance(attempts, Sequence) else tuple(attempts)
    if scoring.plain:
        keys = [a.decision for a in chosen if a.decision is not None]
        want = expected_decision(row.expected)
        if scoring.normalize:
            keys = [normalize(d, scoring) for d in keys]
            want = normalize(want, scoring)
        return Judged(tuple(keys), keys.count(want), len(chosen) - len(keys))
    valid = [a for a in chosen if a.decision is not None]
    return Judged(
        tuple(agreement_key(a, row, scoring) for a in valid),
        sum(1 for a in valid if is_right(a, row, scoring)),
        len(chosen) - len(valid),
    )


# ------------------------------------------------------------ what differed


@dataclass(frozen=True, slots=True)
class PartValues:
    """The values one part of a decision (a field, or an expected check) took over some attempts.

    ``values`` are (shown value, count), most frequent first; ``wrong``
    counts the answers whose value did not match ``expected``.
    """

    name: str
    expected: str
    values: tuple[tuple[str, int], ...]
    wrong: int


def shown(value: Json) -> str:
    """A field's or check's value as reports show it: text as is, anything else as JSON."""
    if value is _MISSING:
        return ABSENT
    if isinstance(value, str):
        return value
    number = _number(value)
    if number is not None:
        return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "[" + ", ".join(value) + "]"
    return _compact(value)


def _ranked(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def field_values(
    attempts: Iterable[Attempt], row: Labeled, scoring: Scoring
) -> tuple[PartValues, ...]:
    """Each field the row expects, with the values the valid attempts gave it (structured only)."""
    if not scoring.structured or row.expected is None:
        return ()
    fields = _object(row.expected)
    if fields is None:
        return ()
    valid = [a for a in attempts if a.decision is not None]
    out = []
    for name, want in fields.items():
        rule = _rule(name, scoring)
        norm = _field_norm(rule, scoring)
        counts: Counter[str] = Counter()
        wrong = 0
        for attempt in valid:
            got = (_object(attempt.decision or "") or {}).get(name, _MISSING)
            shown_value = ABSENT if got is _MISSING else shown(_canonical(got, rule, norm))
            counts[shown_value] += 1
            wrong += not field_right(got, want, rule, scoring)
        if rule.compare == "any_of" and isinstance(want, list):
            expected = " or ".join(shown(w) for w in want)
        else:
            expected = shown(want)
        out.append(PartValues(name, expected, _ranked(counts), wrong))
    return tuple(out)


def check_values(attempts: Iterable[Attempt], row: Labeled) -> tuple[PartValues, ...]:
    """Each check the row expects, with the values the valid attempts reported for it."""
    valid = [a for a in attempts if a.decision is not None]
    out = []
    for name, want in row.expected_checks:
        counts: Counter[str] = Counter()
        wrong = 0
        for attempt in valid:
            reported = dict(attempt.checks).get(name)
            counts[ABSENT if reported is None else check_shown(reported)] += 1
            wrong += not check_value_right(reported, want)
        out.append(PartValues(name, shown(want), _ranked(counts), wrong))
    return tuple(out)


def check_shown(reported: str) -> str:
    """A reported check's value as reports show it: a JSON list or object it holds (an
    ordered list of tool calls) as :func:`shown` shows it, any other text as it is."""
    if not reported.startswith(("[", "{")):
        return reported
    try:
        value = json.loads(reported)
    except (ValueError, RecursionError):
        return reported
    return shown(value) if isinstance(value, (list, dict)) else reported


def decision_text(decision: str) -> str:
    """A decision as reports show it: a label as is, a structured one as ``action: refund,
    amount: 120``."""
    fields = _object(decision) if decision.startswith("{") else None
    if fields is None:
        return decision
    return ", ".join(f"{name}: {shown(value)}" for name, value in fields.items())


def expected_text(expected: str | None) -> str:
    """A row's expected decision as reports show it; ``success (its environment scores it)``
    for a task its environment scores."""
    if expected is None:
        return f"{SUCCESS} (its environment scores it)"
    return decision_text(expected)
