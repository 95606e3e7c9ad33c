"""Property tests: whatever a run artifact, result file or journal holds, passk answers
with data it can use or an ArtifactError, never another exception.

A committed baseline is edited by hand, merged by git, truncated by a full
disk, or written by another version of passk.  Hypothesis feeds random JSON,
random bytes, and (most usefully) valid documents with one value replaced,
deleted or wrapped, and checks the loaders' contract: a clean load, or a
one-line :class:`ArtifactError` naming the file.  A clean load must also be
*usable*: it writes back, reads back equal, and renders, because a document
that loads but breaks the report later is the same traceback, only later.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passk_action.core.model import Attempt, Phase, Run, Usage
from passk_action.errors import ArtifactError
from passk_action.report.compare_report import render_compare_report
from passk_action.report.run_report import render_run_report, run_report_json
from passk_action.store.codec import (
    attempt_line,
    attempt_to_json,
    compact_json,
    dump_run,
    header_to_json,
    row_to_json,
)
from passk_action.store.document import run_from_json
from passk_action.store.journal import Journal, read_journal
from passk_action.store.results import AuditedResult, dump_result, result_from_json, result_to_json
from support.artifacts import make_result, small_run_v3
from support.artifacts import small_run_v2 as small_run
from support.json_mutations import finite_json, json_values, mutate, mutated, structured

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WHERE = "base.json"


def check_error(error: ArtifactError, where: str) -> None:
    assert error.where is not None and error.where.startswith(where), error.where
    assert "\n" not in str(error)


# ----------------------------------------------------------------------- runs


def assert_usable_run(run: Run) -> None:
    """A loaded run writes back, reads back equal, and renders."""
    text = dump_run(run)
    assert run_from_json(json.loads(text), WHERE) == run
    run_report_json(run)
    render_run_report(run)


def run_or_error(doc: Any) -> Run | None:
    try:
        run = run_from_json(doc, WHERE)
    except ArtifactError as error:
        check_error(error, WHERE)
        return None
    assert_usable_run(run)
    return run


VALID_RUN = json.loads(dump_run(small_run()))


def test_the_unmutated_documents_load() -> None:
    """Keeps the properties honest: the seeds they mutate are valid."""
    assert run_or_error(VALID_RUN) is not None
    assert run_or_error(VALID_RUN_V3) is not None
    assert result_or_error(VALID_RESULT) is not None
    assert result_or_error(VALID_RESULT_V3) is not None


@PROPERTY
@given(doc=json_values)
def test_random_json_is_a_run_or_an_artifact_error(doc: Any) -> None:
    run_or_error(doc)


@PROPERTY
@given(doc=mutated(VALID_RUN))
def test_mutated_run_is_a_run_or_an_artifact_error(doc: Any) -> None:
    run_or_error(doc)


VALID_RUN_V3 = json.loads(dump_run(small_run_v3()))


@PROPERTY
@given(doc=mutated(VALID_RUN_V3))
def test_a_mutated_run_of_version_3_is_a_run_or_an_artifact_error(doc: Any) -> None:
    """Structured decisions, answers, outcomes, expected objects and checks, mutated."""
    run_or_error(doc)


DURATION_RULE = "'duration_s' must be a number of seconds from 0 to 10^9"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # Each of these once loaded and then broke later with a TypeError/ValueError.
        (
            ("attempts", 0, "phase"),
            ["main"],
            "attempts[0]: 'phase' must be 'main', 'confirm' or 'measure'",
        ),
        (("settings", "k"), 3.0, "settings.k: 3.0 is not of type 'integer'"),
        (("attempts", 0, "duration_s"), float("nan"), DURATION_RULE),
        (("attempts", 0, "duration_s"), float("inf"), DURATION_RULE),
        (("attempts", 0, "duration_s"), 10**400, DURATION_RULE),
    ],
)
def test_found_by_hypothesis(path: tuple[Any, ...], value: Any, message: str) -> None:
    with pytest.raises(ArtifactError) as caught:
        run_from_json(mutate(VALID_RUN, path, "replace", value), WHERE)
    assert message in str(caught.value)


# -------------------------------------------------------------------- results


VALID_RESULT = json.loads(dump_result(make_result()))
VALID_RESULT_V3 = json.loads(dump_result(make_result(small_run_v3())))


def result_or_error(doc: Any) -> AuditedResult | None:
    try:
        audited = result_from_json(doc, WHERE)
    except ArtifactError as error:
        check_error(error, WHERE)
        return None
    result = audited.result
    again = result_from_json(json.loads(dump_result(result)), WHERE)
    assert result_to_json(again.result) == result_to_json(result)
    render_compare_report(result)
    return audited


@PROPERTY
@given(doc=json_values)
def test_random_json_is_a_result_or_an_artifact_error(doc: Any) -> None:
    result_or_error(doc)


@PROPERTY
@given(doc=mutated(VALID_RESULT))
def test_mutated_result_is_a_result_or_an_artifact_error(doc: Any) -> None:
    result_or_error(doc)


@PROPERTY
@given(doc=mutated(VALID_RESULT_V3))
def test_a_mutated_result_of_version_3_is_a_result_or_an_artifact_error(doc: Any) -> None:
    result_or_error(doc)


# -------------------------------------------------------------------- journals


def journal_lines() -> list[str]:
    run = small_run()
    header = header_to_json(run)
    header["rows"] = [row_to_json(r) for r in run.rows]
    return [compact_json(header), *(compact_json(attempt_to_json(a)) for a in run.attempts)]


VALID_JOURNAL = journal_lines()


def journal_or_error(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        contents = read_journal(path)
    except ArtifactError as error:
        check_error(error, str(path))
        return
    for warning in contents.warnings:
        assert warning.startswith(f"{path}:") and "\n" not in warning
    assert_usable_run(replace(contents.header, attempts=contents.attempts))
    # What was read can be journaled again and reads back the same.
    with Journal.create(path, contents.header) as journal:
        for attempt in contents.attempts:
            journal.append(attempt)
    again = read_journal(path)
    assert (again.header, again.attempts, again.warnings) == (
        contents.header,
        contents.attempts,
        (),
    )


@pytest.fixture(scope="module")
def journal_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("journal") / "run.json.journal.jsonl"


@PROPERTY
@given(data=st.binary(max_size=300))
def test_random_bytes_are_a_journal_or_an_artifact_error(journal_file: Path, data: bytes) -> None:
    journal_or_error(journal_file, data)


@PROPERTY
@given(
    index=st.integers(min_value=0, max_value=len(VALID_JOURNAL) - 1),
    doc=st.data(),
    cut=st.integers(min_value=0),
    trailing_newline=st.booleans(),
)
def test_mutated_journal_is_a_journal_or_an_artifact_error(
    journal_file: Path, index: int, doc: st.DataObject, cut: int, trailing_newline: bool
) -> None:
    lines = list(VALID_JOURNAL)
    # json.dumps writes NaN/Infinity as such: the reader must refuse them, not crash.
    lines[index] = json.dumps(doc.draw(mutated(json.loads(lines[index]))), ensure_ascii=False)
    data = ("\n".join(lines) + ("\n" if trailing_newline else "")).encode("utf-8")
    journal_or_error(journal_file, data)
    # The same journal cut at any byte: a crash mid-write.
    journal_or_error(journal_file, data[: cut % (len(data) + 1)])


def test_an_empty_detail_reads_as_no_detail_on_every_path(journal_file: Path) -> None:
    # Found by Hypothesis: the writer omits an empty detail, so a reader that
    # kept "" read a journal back differently once it was written again.
    lines = list(VALID_JOURNAL)
    attempt = json.loads(lines[6])
    attempt["detail"] = ""
    lines[6] = json.dumps(attempt)
    journal_or_error(journal_file, ("\n".join(lines) + "\n").encode("utf-8"))
    assert read_journal(journal_file).attempts[5].detail is None


@PROPERTY
@given(cut=st.integers(min_value=0))
def test_a_valid_journal_cut_anywhere_loses_at_most_the_torn_attempt(
    journal_file: Path, cut: int
) -> None:
    data = ("\n".join(VALID_JOURNAL) + "\n").encode("utf-8")
    cut %= len(data) + 1
    journal_file.write_bytes(data[:cut])
    complete = data[:cut].count(b"\n")  # whole lines, header included
    try:
        contents = read_journal(journal_file)
    except ArtifactError as error:
        # Only a journal whose header itself is incomplete cannot be read.
        assert complete == 0 or (complete == 1 and cut == data.index(b"\n"))
        check_error(error, str(journal_file))
        return
    kept = len(contents.attempts)
    assert kept in (complete - 1, complete)  # a line cut before its "\n" may still be whole
    assert contents.attempts == small_run_attempts()[:kept]


def small_run_attempts() -> tuple[Any, ...]:
    from support.artifacts import normalized

    return normalized(small_run()).attempts


def test_a_duration_finer_than_stored_reads_back_equal_after_a_write() -> None:
    # Found by Hypothesis: 0.03125 was kept on read but written as 0.0312.
    doc = mutate(VALID_RUN, ("attempts", 0, "duration_s"), "replace", 0.03125)
    run = run_or_error(doc)
    assert run is not None and run.attempts[0].duration_s == 0.0312


attempts = st.builds(
    Attempt,
    row_id=st.text(min_size=1, max_size=12),
    number=st.integers(min_value=1, max_value=10**6),
    phase=st.sampled_from(list(Phase)),
    decision=st.none() | st.text(max_size=8) | structured | st.just('{"a":1}'),
    checks=st.lists(st.tuples(st.text(max_size=4), st.text(max_size=4)), max_size=2).map(tuple),
    error=st.none() | st.sampled_from(["crash", "timeout", 'a "quoted"\nerror', "é"]),
    detail=st.none() | st.text(max_size=8),
    duration_s=st.floats(min_value=0, max_value=1e9) | st.sampled_from([0.0, 1e-05, 2.00005]),
    retries=st.lists(st.text(max_size=4), max_size=2).map(tuple),
    usage=st.none()
    | st.builds(Usage, st.none() | st.integers(0, 10**6), st.none() | st.integers(0, 99)),
    warnings=st.lists(st.text(max_size=4), max_size=1).map(tuple),
    answer=st.none() | finite_json.filter(lambda v: v is not None),
    correct=st.none() | st.booleans(),
    score=st.none() | st.floats(allow_nan=False, allow_infinity=False),
)


@PROPERTY
@given(attempts)
def test_the_fast_attempt_line_is_the_general_one(attempt: Attempt) -> None:
    """dump_run writes plain attempts by hand: the text must be compact_json's, to the byte."""
    assert attempt_line(attempt, {}) == compact_json(attempt_to_json(attempt))


@pytest.mark.parametrize("correct", [True, False, None])
def test_a_graded_attempt_is_written_by_hand_not_by_json_dumps(
    correct: bool | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every imported trial carries its grade (``correct``): the hand path must take it.

    The general way (``compact_json``) made ``passk import`` of 500,000 trials
    1.4x slower (bench/README.md, "Import speed").
    """
    attempt = Attempt("r1", 2, Phase.MAIN, "success", duration_s=0.5, correct=correct)
    expected = compact_json(attempt_to_json(attempt))

    def refuse(value: Any) -> str:
        raise AssertionError(f"took the general way for {value!r}")

    monkeypatch.setattr("passk_action.store.codec.compact_json", refuse)
    assert attempt_line(attempt, {}) == expected
