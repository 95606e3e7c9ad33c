"""Answers read by the scoring rules as they are recorded: extractors, structured decisions,
outcomes, and the answers no rule can read (never retried, said once when none can be)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from passk_action.agents.answer import BadOutput, parse_output_object
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent
from passk_action.agents.scheduler import RetryPolicy, Schedule, run_attempts
from passk_action.core.model import Extractor, FieldRule, Json, Phase, Row, Scoring, Version
from passk_action.errors import UnreadableAnswers

REGEX = Scoring(extract=Extractor(regex=r"DECISION: (\w+)"))
REFUND = Scoring(fields=(FieldRule("action"), FieldRule("amount", tolerance=1)))
ENVIRONMENT = Scoring(by="environment", threshold=0.5)


def request(scoring: Scoring, number: int = 1, row_id: str = "r1") -> AttemptRequest:
    row = Row(id=row_id, input={}, expected=None if scoring.by_environment else "deny")
    return AttemptRequest(row, number, Phase.MAIN, Version.CANDIDATE, scoring)


def answering(*answers: Mapping[str, Json]) -> tuple[FunctionAgent, list[int]]:
    """An agent that answers in turn (the last one again and again), counting the calls."""
    calls: list[int] = []

    def answer(req: AttemptRequest) -> Mapping[str, Json]:
        calls.append(req.number)
        return answers[min(len(calls), len(answers)) - 1]

    return FunctionAgent(answer), calls


def test_an_extractor_reads_the_decision_and_the_answer_is_kept() -> None:
    agent, _ = answering({"decision": "I checked the receipt. DECISION: deny"})
    attempt = agent.run(request(REGEX))
    assert (attempt.decision, attempt.answer) == ("deny", "I checked the receipt. DECISION: deny")


def test_a_structured_decision_is_an_object_or_json_text() -> None:
    for sent in ({"amount": 120, "action": "refund"}, '{"action": "refund", "amount": 120}'):
        agent, _ = answering({"decision": sent})
        attempt = agent.run(request(REFUND))
        assert attempt.decision == '{"action":"refund","amount":120}'


def test_an_environment_s_outcome_is_the_decision() -> None:
    agent, _ = answering({"correct": True})
    assert agent.run(request(ENVIRONMENT)).decision == "success"
    agent, _ = answering({"score": 0.2, "decision": "moved the booking"})
    attempt = agent.run(request(ENVIRONMENT))
    assert (attempt.decision, attempt.score, attempt.answer) == (
        "failure",
        0.2,
        "moved the booking",
    )
    agent, _ = answering({"correct": "yes"})
    attempt = agent.run(request(ENVIRONMENT))
    assert (attempt.error, attempt.detail) == (
        "bad-output",
        '"correct" must be true or false, got "yes"',
    )


def test_the_protocol_still_needs_a_decision_or_an_outcome() -> None:
    with pytest.raises(BadOutput, match='the answer has no "decision" key'):
        parse_output_object({"checks": {}})
    with pytest.raises(BadOutput, match='"decision" must be a string or a JSON object, got null'):
        parse_output_object({"decision": None})
    assert parse_output_object({"correct": False}).correct is False


def test_an_answer_the_rules_cannot_read_is_a_bad_output_never_retried() -> None:
    agent, calls = answering({"decision": "I would deny it"}, {"decision": "DECISION: deny"})
    [attempt] = run_attempts(
        [request(REGEX)], agent, Schedule(concurrency=1, retry=RetryPolicy(attempts=2, backoff_s=0))
    )
    assert calls == [1]  # answered: asking again would hide how often it answers so
    assert (attempt.error, attempt.answer, attempt.retries) == ("bad-output", "I would deny it", ())
    assert (
        attempt.detail == r"scoring.extract.regex 'DECISION: (\w+)' matched nothing in the answer"
    )


def test_an_extractor_that_matches_nothing_on_every_attempt_is_said_once() -> None:
    agent, calls = answering({"decision": "I would deny it, as the receipt is missing"})
    requests = [request(REGEX, number=n, row_id=f"r{n}") for n in range(1, 21)]
    with pytest.raises(UnreadableAnswers) as caught:
        run_attempts(requests, agent, Schedule(concurrency=2, fail_fast=True))
    assert len(calls) == 4  # the first 2 x concurrency answers settle it
    assert str(caught.value) == (
        "scoring.extract: none of the 4 answers could be read (scoring.extract.regex "
        "'DECISION: (\\w+)' matched nothing in the answer); a sample answer: 'I would deny "
        "it, as the receipt is missing' (fix the extractor so it finds the decision in "
        "answers like this one)"
    )


def test_one_readable_answer_settles_it_the_other_way() -> None:
    agent, calls = answering({"decision": "DECISION: deny"}, {"decision": "no idea"})
    requests = [request(REGEX, number=n, row_id=f"r{n}") for n in range(1, 7)]
    made = run_attempts(requests, agent, Schedule(concurrency=1, fail_fast=True))
    assert [a.decision for a in made] == ["deny", None, None, None, None, None]
    assert len(calls) == 6
