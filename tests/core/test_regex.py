"""The extractor's regex search: Python's answers, without the runaway (issue 31).

The matcher of ``core/regex.py`` must give group 1 exactly as
``re.search`` does (a differential property over patterns a config writes
and texts drawn around them), and must not take exponential time on an
answer crafted against a pattern with nested repetition: such an answer is
read (or found unreadable) within a bound, where Python's ``re`` ran 24 s
and was killed.  A pattern only backtracking can match is refused.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passk_action.core import regex
from passk_action.core.model import Attempt, Extractor, Phase, Scoring, Version
from passk_action.core.scoring import BAD_OUTPUT, scored_attempt
from support.fuzzing import time_bound

PATTERNS = [
    r"DECISION: (\w+)",
    r"(?i)decision:\s*(approve|deny)\b",
    r"(approve|deny)",
    r"^(\d+)$",
    r"(?m)^answer: (.*)$",
    r"(?s)<d>(.*?)</d>",
    r"(a|ab)(?:c|bcd)?",
    r"([^,]+),",
    r"(\w+\s?)+:",
    r"x{2,3}(y?)",
    r"(?:a|b)*(c)",
    r"\b(\w)\b",
    r"(\d{1,3})\.\d",
    r"\B(o+)",
    r"([A-Z][a-z]*)\Z",
    r"(?x) ( [0-9]+ ) \s* %",
    r"(?i:[a-c]+)(D)",
    r"(.)\s*$",
]
TEXT = st.text(alphabet="abcdxyoAZ \n:,.<>/%0123456789DECISIONdeny", max_size=14)


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(pattern=st.sampled_from(PATTERNS), text=TEXT)
def test_group_one_is_what_python_finds(pattern: str, text: str) -> None:
    found = re.search(pattern, text)
    expected = None if found is None else (found.group(1) or "")
    assert regex.search(regex.compile_pattern(pattern), text) == expected


RUNAWAY = Scoring(extract=Extractor(regex=r"DECISION: ((\w+\s?)+):"))
"""A plausible config pattern with nested repetition."""
ATTACK = "DECISION: " + "approve " * 40 + "!"


def _scored(raw: str) -> Attempt:
    attempt = Attempt("r1", 1, Phase.MAIN, Version.CANDIDATE, None, 0.1)
    return scored_attempt(attempt, raw, RUNAWAY)


def test_an_answer_crafted_to_backtrack_is_read_within_a_bound() -> None:
    with time_bound():
        attempt = _scored(ATTACK)
    assert attempt.error == BAD_OUTPUT
    assert attempt.detail is not None and "matched nothing" in attempt.detail


def test_control_the_same_pattern_reads_an_honest_answer() -> None:
    assert _scored("DECISION: approve now: ok").decision == "approve now"


def test_a_search_past_its_step_bound_is_a_bad_output_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(regex, "MAX_STEPS", 500)
    attempt = _scored("DECISION: " + "a" * 400)
    assert attempt.error == BAD_OUTPUT
    assert attempt.detail is not None and "gave up after 500 steps" in attempt.detail


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "a backreference"),
        (r"(?=x)(a)", "a lookahead or lookbehind"),
        (r"(?<!x)(a)", "a lookahead or lookbehind"),
        (r"(?>a+)(b)", "an atomic group"),
        (r"(a{100}){300}", "instructions"),
    ],
)
def test_what_needs_backtracking_is_refused(pattern: str, reason: str) -> None:
    with pytest.raises(regex.Unsupported, match=reason):
        regex.compile_pattern(pattern)
