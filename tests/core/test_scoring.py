"""core/scoring: how an answer becomes a decision, and whether it is right, rule by rule."""

from __future__ import annotations

import pytest

from passk_action.core.classify import classify
from passk_action.core.model import (
    Attempt,
    Extractor,
    FieldRule,
    Phase,
    RowClass,
    RowRecord,
    Scoring,
    object_text,
)
from passk_action.core.scoring import (
    BAD_OUTPUT,
    FAILURE,
    MISSING,
    SUCCESS,
    Unreadable,
    agreement_key,
    check_value_right,
    checks_right,
    decision_text,
    field_values,
    is_correct,
    is_right,
    pointer_parts,
    read_decision,
    rescore_run,
    resolve_pointer,
    right_attempt,
    scored_attempt,
    unreadable_everywhere,
)
from support.runs import attempts, record, run_of

PLAIN = Scoring()
REFUND = Scoring(
    fields=(
        FieldRule("action", normalize=("strip", "casefold")),
        FieldRule("amount", tolerance=0.5),
    )
)


def read(
    raw: object, scoring: Scoring = PLAIN, correct: object = None, score: object = None
) -> str:
    return read_decision(raw, correct, score, scoring)


def why(raw: object, scoring: Scoring = PLAIN, correct: object = None, score: object = None) -> str:
    with pytest.raises(Unreadable) as caught:
        read_decision(raw, correct, score, scoring)
    return str(caught.value)


def structured(expected: dict[str, object], checks: dict[str, object] | None = None) -> RowRecord:
    return RowRecord(
        "r", "sha256:" + "0" * 64, object_text(expected), True, (), None,
        tuple((checks or {}).items()),
    )  # fmt: skip


def decided(*values: dict[str, object]) -> list[Attempt]:
    return [Attempt("r", n, Phase.MAIN, object_text(v)) for n, v in enumerate(values, start=1)]


# --- reading: labels -----------------------------------------------------------------


def test_a_label_is_read_as_sent() -> None:
    assert read("approve") == "approve"
    assert read(" Approve ") == " Approve "  # normalize is judging's, not reading's


def test_a_number_or_boolean_an_extractor_read_is_its_json_text() -> None:
    assert read({"d": 120}, Scoring(extract=Extractor(json_pointer="/d"))) == "120"
    assert read({"d": True}, Scoring(extract=Extractor(json_pointer="/d"))) == "true"
    assert why(120) == "the decision must be a string, got a JSON number"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (
            {"action": "refund"},
            "the decision is a JSON object (list its fields under scoring.fields",
        ),
        ([1, 2], "the decision must be a string, got a JSON array"),
        ("  ", "the decision is empty"),
        (MISSING, 'the answer has no "decision"'),
    ],
)
def test_a_label_that_cannot_be_read_says_why(raw: object, reason: str) -> None:
    assert why(raw).startswith(reason)


def test_an_outcome_without_scoring_by_environment_is_no_decision() -> None:
    assert "scoring.by: environment" in why(MISSING, correct=True)


# --- reading: extractors --------------------------------------------------------------


REGEX = Scoring(extract=Extractor(regex=r"DECISION:\s*(\w+)"))


def test_the_regex_group_is_the_decision() -> None:
    assert read("Let me think. DECISION: deny. DECISION: approve", REGEX) == "deny"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("I would approve it", r"scoring.extract.regex 'DECISION:\s*(\w+)' matched nothing"),
        ({"text": "DECISION: deny"}, "reads text; the answer is a JSON object"),
    ],
)
def test_a_regex_that_cannot_read_the_answer_says_why(raw: object, reason: str) -> None:
    assert reason in why(raw, REGEX)


def test_an_empty_capture_is_no_decision() -> None:
    optional = Scoring(extract=Extractor(regex=r"DECISION: (\w*)"))
    assert "captured nothing" in why("DECISION: ", optional)


def test_reasons_name_the_rule_not_the_answer() -> None:
    """Answers that fail alike read alike: the answer is kept beside the reason instead."""
    assert why("first answer", REGEX) == why("another answer entirely", REGEX)


POINTER = Scoring(extract=Extractor(json_pointer="/result/decision"))


def test_a_json_pointer_reads_an_object_or_json_text() -> None:
    answer = {"result": {"decision": "deny", "why": "late"}}
    assert read(answer, POINTER) == "deny"
    assert read('{"result": {"decision": "deny"}}', POINTER) == "deny"
    assert read({"result": {"decision": 3}}, POINTER) == "3"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"result": {}}, "the answer has no /result/decision"),
        ({"result": "deny"}, "the answer has no /result/decision"),
        ("not json", "the answer is not JSON (Expecting value)"),
        ('{"result": NaN}', "the answer is not valid JSON (NaN is not JSON)"),
    ],
)
def test_a_json_pointer_that_finds_nothing_says_where(raw: object, reason: str) -> None:
    assert why(raw, POINTER) == reason


def test_json_pointers_follow_rfc_6901() -> None:
    assert pointer_parts("") == ()
    assert pointer_parts("/a~1b/~0c/0") == ("a/b", "~c", "0")
    assert pointer_parts("a") is None
    assert pointer_parts("/a~2") is None
    document = {"a/b": {"~c": ["x", "y"]}, "": 1}
    assert resolve_pointer(document, "/a~1b/~0c/1") == "y"
    assert resolve_pointer(document, "/") == 1
    assert resolve_pointer(document, "") == document
    with pytest.raises(Unreadable, match="no /a~1b/~0c/2"):
        resolve_pointer(document, "/a~1b/~0c/2")
    with pytest.raises(Unreadable, match="no /a~1b/~0c/01"):
        resolve_pointer(document, "/a~1b/~0c/01")


# --- reading: structured decisions and outcomes -----------------------------------------


def test_a_structured_decision_is_held_as_its_canonical_text() -> None:
    one = read({"amount": 120, "action": "refund"}, REFUND)
    assert one == '{"action":"refund","amount":120}'
    assert read('{"action": "refund", "amount": 120}', REFUND) == one  # JSON text, as LLMs send it
    pointed = Scoring(fields=REFUND.fields, extract=Extractor(json_pointer="/decision"))
    assert read({"decision": {"action": "refund", "amount": 120}}, pointed) == one


def test_a_structured_decision_must_be_an_object() -> None:
    assert why("refund", REFUND).startswith("the decision is not JSON")
    assert (
        why("[1]", REFUND) == "the decision must be a JSON object with its fields, got a JSON array"
    )


ENVIRONMENT = Scoring(by="environment", threshold=0.5)


@pytest.mark.parametrize(
    ("correct", "score", "decision"),
    [
        (True, None, SUCCESS),
        (False, None, FAILURE),
        (None, 0.5, SUCCESS),  # at the threshold counts
        (None, 0.49, FAILURE),
        (False, 1.0, FAILURE),  # correct, when given, decides
    ],
)
def test_the_environment_s_outcome_is_the_decision(
    correct: object, score: object, decision: str
) -> None:
    assert read("any text", ENVIRONMENT, correct, score) == decision
    assert read(MISSING, ENVIRONMENT, correct, score) == decision


def test_a_task_without_an_outcome_is_no_decision() -> None:
    assert "reports no outcome" in why("done", ENVIRONMENT)
    assert '"correct" must be true or false' in why(MISSING, ENVIRONMENT, correct="yes")
    assert '"score" must be a finite number' in why(MISSING, ENVIRONMENT, score="high")


# --- scored attempts and re-scoring ---------------------------------------------------------


def test_an_attempt_keeps_the_answer_only_when_it_is_not_the_decision() -> None:
    blank = Attempt("r", 1, Phase.MAIN, None)
    assert scored_attempt(blank, "deny", PLAIN).answer is None
    extracted = scored_attempt(blank, "so: DECISION: deny", REGEX)
    assert (extracted.decision, extracted.answer) == ("deny", "so: DECISION: deny")
    assert scored_attempt(blank, {"action": "refund", "amount": 1}, REFUND).answer is None
    unread = scored_attempt(blank, "no decision here", REGEX)
    assert (unread.decision, unread.error, unread.answer) == (None, BAD_OUTPUT, "no decision here")
    assert unread.answered and not unread.valid


def test_a_run_is_rescored_from_its_recorded_answers() -> None:
    rows = [record("a"), record("b")]
    made = [
        scored_attempt(Attempt("a", 1, Phase.MAIN, None), "DECISION: deny", REGEX),
        scored_attempt(Attempt("b", 1, Phase.MAIN, None), "VERDICT: deny", REGEX),
        Attempt("b", 2, Phase.MAIN, None, error="timeout", detail="killed"),
    ]
    run = run_of(rows, made, k=1)
    run = run.__class__(**{**run.__dict__, "settings": run.settings.__class__(1, REGEX)})
    wider = Scoring(extract=Extractor(regex=r"(?:DECISION|VERDICT): (\w+)"))
    again = rescore_run(run, wider)
    assert [a.decision for a in again.attempts] == ["deny", "deny", None]
    assert again.attempts[2] == made[2]  # a timeout answered nothing: it stays
    assert again.settings.scoring == wider
    back = rescore_run(again, REGEX)
    assert [(a.decision, a.error) for a in back.attempts] == [
        ("deny", None),
        (None, BAD_OUTPUT),
        (None, "timeout"),
    ]
    assert rescore_run(run, REGEX) is run


def test_rescoring_between_labels_and_outcomes_keeps_what_was_answered() -> None:
    blank = Attempt("r", 1, Phase.MAIN, None, correct=True)
    env = scored_attempt(blank, "I moved the booking", ENVIRONMENT)
    assert (env.decision, env.answer) == (SUCCESS, "I moved the booking")
    run = run_of([record("r")], [env], k=1)
    run = run.__class__(**{**run.__dict__, "settings": run.settings.__class__(1, ENVIRONMENT)})
    as_labels = rescore_run(run, PLAIN).attempts[0]
    assert (as_labels.decision, as_labels.correct) == ("I moved the booking", True)
    no_decision = scored_attempt(blank, MISSING, ENVIRONMENT)
    run = run.__class__(**{**run.__dict__, "attempts": (no_decision,)})
    assert rescore_run(run, PLAIN).attempts[0].error == BAD_OUTPUT


def test_every_answer_unreadable_is_found_once() -> None:
    bad = scored_attempt(Attempt("r", 1, Phase.MAIN, None), "x", REGEX)
    good = scored_attempt(Attempt("r", 2, Phase.MAIN, None), "DECISION: deny", REGEX)
    crash = Attempt("r", 3, Phase.MAIN, None, error="timeout")
    assert unreadable_everywhere([bad, bad]) is bad
    assert unreadable_everywhere([bad, good]) is None
    assert unreadable_everywhere([bad, crash]) is None  # a crash is the agent's, not the rules'
    assert unreadable_everywhere([]) is None


# --- judging structured decisions ------------------------------------------------------------


ROW = structured({"action": "refund", "amount": 120})


@pytest.mark.parametrize(
    ("decision", "right"),
    [
        ({"action": "refund", "amount": 120}, True),
        ({"action": " Refund", "amount": 120.4}, True),  # normalized, within the tolerance
        ({"action": "refund", "amount": 120.6}, False),
        ({"action": "refund", "amount": 150}, False),
        ({"action": "deny", "amount": 120}, False),
        ({"action": "refund"}, False),  # an expected field the answer lacks
        ({"action": "refund", "amount": 120, "note": "ok"}, True),  # one the row does not expect
        ({"action": "refund", "amount": "120"}, False),  # a string is not a number
    ],
)
def test_a_structured_decision_is_right_when_every_expected_field_matches(
    decision: dict[str, object], right: bool
) -> None:
    assert is_correct(object_text(decision), ROW.expected, REFUND) is right


def test_relative_tolerance_is_a_share_of_the_expected_number() -> None:
    rules = Scoring(fields=(FieldRule("total", relative_tolerance=0.02),))
    row = structured({"total": 200})
    assert is_correct(object_text({"total": 204}), row.expected, rules)
    assert not is_correct(object_text({"total": 204.1}), row.expected, rules)
    both = Scoring(fields=(FieldRule("total", tolerance=10, relative_tolerance=0.02),))
    assert is_correct(object_text({"total": 209}), row.expected, both)  # either is enough


def test_a_list_compared_as_a_set_ignores_order_and_repeats() -> None:
    rules = Scoring(fields=(FieldRule("tags", compare="set", normalize=("casefold",)),))
    row = structured({"tags": ["damaged", "late"]})
    assert is_correct(object_text({"tags": ["Late", "damaged", "late"]}), row.expected, rules)
    assert not is_correct(object_text({"tags": ["late"]}), row.expected, rules)
    assert not is_correct(object_text({"tags": "late"}), row.expected, rules)


def test_any_of_several_values_is_right() -> None:
    rules = Scoring(
        fields=(FieldRule("priority", compare="any_of"), FieldRule("eta", "any_of", None, 1))
    )
    row = structured({"priority": ["high", "urgent"], "eta": [2, 10]})
    assert is_correct(object_text({"priority": "urgent", "eta": 9.5}), row.expected, rules)
    assert not is_correct(object_text({"priority": "low", "eta": 2}), row.expected, rules)
    assert not is_correct(object_text({"priority": "high", "eta": 5}), row.expected, rules)


def test_scoring_normalize_is_every_string_field_s_default() -> None:
    rules = Scoring(normalize=("casefold",), fields=(FieldRule("a"), FieldRule("b", normalize=())))
    row = structured({"a": "X", "b": "Y"})
    assert is_correct(object_text({"a": "x", "b": "Y"}), row.expected, rules)
    assert not is_correct(object_text({"a": "x", "b": "y"}), row.expected, rules)


def test_a_changed_amount_with_the_same_action_is_a_flip() -> None:
    same_action = decided(
        {"action": "refund", "amount": 120},
        {"action": "refund", "amount": 120},
        {"action": "refund", "amount": 150},
    )
    assert classify(same_action, ROW, 3, REFUND) is RowClass.FLIP
    drifted = decided(
        *[{"action": "refund", "amount": 150}] * 2, {"action": "Refund", "amount": 150}
    )
    assert classify(drifted, ROW, 3, REFUND) is RowClass.STABLE_WRONG  # one decision, wrong
    apart = decided(*[{"action": "refund", "amount": 150}] * 2, {"action": "refund", "amount": 160})
    assert classify(apart, ROW, 3, REFUND) is RowClass.FLIP  # wrong, and not one decision
    close = decided(
        {"action": "refund", "amount": 120},
        {"action": "refund", "amount": 120.3},
        {"action": "refund", "amount": 119.8, "note": "x"},
    )
    assert classify(close, ROW, 3, REFUND) is RowClass.STABLE_CORRECT  # all right


def test_decisions_agree_on_the_fields_the_row_expects() -> None:
    one, other = decided(
        {"action": "refund", "amount": 120, "note": "a"},
        {"action": "REFUND ", "amount": 120.0, "note": "b"},
    )
    assert agreement_key(one, ROW, REFUND) == agreement_key(other, ROW, REFUND)
    (absent,) = decided({"action": "refund"})
    assert agreement_key(absent, ROW, REFUND) != agreement_key(one, ROW, REFUND)


def test_field_values_say_which_field_differed() -> None:
    made = decided(
        *[{"action": "refund", "amount": 120}] * 6, *[{"action": "refund", "amount": 150}] * 3
    )
    action, amount = field_values(made, ROW, REFUND)
    assert (action.name, action.values, action.wrong) == ("action", (("refund", 9),), 0)
    assert (amount.expected, amount.values, amount.wrong) == ("120", (("120", 6), ("150", 3)), 3)


def test_decision_text_shows_fields_in_order() -> None:
    assert decision_text(object_text({"amount": 120.5, "action": "refund"})) == (
        "action: refund, amount: 120.5"
    )
    assert decision_text("approve") == "approve"
    assert decision_text("{not json}") == "{not json}"


# --- judging expected checks --------------------------------------------------------------


def test_expected_checks_compare_exactly_and_lists_in_order() -> None:
    assert check_value_right("found", "found")
    assert not check_value_right("Found", "found")
    assert not check_value_right(None, "found")
    assert check_value_right('["lookup","refund"]', ["lookup", "refund"])
    assert not check_value_right('["refund","lookup"]', ["lookup", "refund"])
    assert check_value_right('{"b":1,"a":2}', {"a": 2, "b": 1})
    assert not check_value_right("lookup", ["lookup"])
    assert checks_right((("damage", "found"), ("x", "y")), (("damage", "found"),))
    assert not checks_right((("x", "y"),), (("damage", "found"),))


def test_required_checks_make_a_right_decision_wrong_for_the_wrong_reason() -> None:
    row = RowRecord("r", "sha256:" + "0" * 64, "approve", True, (), None, (("damage", "found"),))
    required = Scoring(checks="required")
    good = attempts("r", [("approve", {"damage": "found"})] * 3)
    reasonless = attempts("r", [("approve", {"damage": "found"})] * 2 + [("approve", {})])
    assert all(is_right(a, row, required) for a in good)
    assert not is_right(reasonless[2], row, required)
    assert is_right(reasonless[2], row, PLAIN)  # reported only: the decision alone counts
    assert classify(good, row, 3, required) is RowClass.STABLE_CORRECT
    assert classify(reasonless, row, 3, required) is RowClass.FLIP
    assert classify(reasonless, row, 3, PLAIN) is RowClass.STABLE_CORRECT
    missing = attempts("r", [("approve", {})] * 3)
    assert classify(missing, row, 3, required) is RowClass.STABLE_WRONG


def test_a_task_its_environment_scores_is_right_when_it_succeeded() -> None:
    row = RowRecord("r", "sha256:" + "0" * 64, None, True)
    made = attempts("r", [SUCCESS, SUCCESS, FAILURE])
    assert [is_right(a, row, ENVIRONMENT) for a in made] == [True, True, False]
    assert classify(made, row, 3, ENVIRONMENT) is RowClass.FLIP
    assert classify(made[:2], row, 2, ENVIRONMENT) is RowClass.STABLE_CORRECT
    assert classify(attempts("r", [FAILURE] * 2), row, 2, ENVIRONMENT) is RowClass.STABLE_WRONG


# --- an answer every rule judges right (the two-job mode's assumed baseline) ---------


@pytest.mark.parametrize(
    ("row", "rules"),
    [
        (RowRecord("r", "sha256:" + "0" * 64, " Deny", True), Scoring(normalize=("strip",))),
        (structured({"action": "partial_refund", "amount": 120}), REFUND),
        (
            structured({"priority": ["high", "urgent"], "tags": ["b", "a"]}),
            Scoring(fields=(FieldRule("priority", "any_of"), FieldRule("tags", "set"))),
        ),
        (
            RowRecord(
                "r",
                "sha256:" + "0" * 64,
                "approve",
                True,
                (),
                None,
                (("damage", "found"), ("tools", ["lookup", {"refund": 3}])),
            ),
            Scoring(checks="required"),
        ),
        (RowRecord("r", "sha256:" + "0" * 64, None, True), ENVIRONMENT),
    ],
)
def test_a_right_attempt_is_judged_right_by_its_rules(row: RowRecord, rules: Scoring) -> None:
    made = [right_attempt(row, "r", n, Phase.MAIN, rules) for n in (1, 2, 3)]
    assert all(is_right(a, row, rules) for a in made)
    assert classify(made, row, 3, rules) is RowClass.STABLE_CORRECT
    # Not right by accident: the same rules find a wrong answer wrong.
    assert not is_right(Attempt("r", 4, Phase.MAIN, FAILURE, ()), row, rules)
