"""Analysis at scale: the streaming reader and the fast paths give what the plain ones give.

The streaming reader (``lines.stream_canonical``) reads files in our own
one-item-per-line layout without holding the parsed document; anything else
goes through the whole-document path.  Its contract: an accepted file loads
*equal* to the whole-document path, and any file (valid, invalid or laid out
by another tool) gets the same value or the same error.  The core fast paths
are checked against straightforward reference implementations (the formulas
as first written) on random attempts.
"""

from __future__ import annotations

import gc
import json
import math
from collections import Counter
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from passk_action.core.check_stability import check_stability
from passk_action.core.classify import classify
from passk_action.core.diff import check_flips, compare_runs
from passk_action.core.model import Attempt, Phase, RowClass, RowRecord, Scoring, group_attempts
from passk_action.core.paired import mcnemar_exact_p
from passk_action.core.pass_curve import pass_at_k, pass_curve
from passk_action.core.scoring import normalize
from passk_action.core.stats import compute_metrics, pass_hat_k, summarize_row, summarize_run
from passk_action.errors import ArtifactError
from passk_action.store import results
from passk_action.store.artifact import read_run, write_run
from passk_action.store.codec import compact_json, dump_document, dump_run
from passk_action.store.document import run_from_json
from passk_action.store.jsonfile import parse_json_file
from passk_action.store.lines import stream_canonical, stream_run_document
from passk_action.store.results import (
    AuditedResult,
    dump_result,
    read_result,
    read_run_or_result,
    result_from_json,
)
from support.artifacts import make_result, normalized, small_run_v3
from support.artifacts import small_run_v2 as small_run
from support.json_mutations import finite_json, json_values, mutated, structured

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def whole_result(path: Path) -> AuditedResult:
    return result_from_json(parse_json_file(path), str(path))


def outcome(read: Any, path: Path) -> tuple[str, Any]:
    """A read's value, or the type and one line of whatever it raised."""
    try:
        return ("value", read(path))
    except Exception as exc:  # both paths must fail the same way, whatever the way
        return (type(exc).__name__, str(exc))


def streamed(path: Path) -> Any:
    return stream_canonical(path, results._stream_run_or_result)


# ------------------------------------------------------------- valid files


def test_a_result_streams_equal_to_the_whole_document(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(dump_result(make_result()), encoding="utf-8")
    fast = stream_canonical(path, results._stream_result)
    assert fast is not None, "our own layout must take the streaming path"
    assert fast == whole_result(path)
    assert read_result(path) == fast
    assert read_run_or_result(path) == fast


def test_a_reindented_result_reads_whole_and_equal(tmp_path: Path) -> None:
    canonical, pretty = tmp_path / "result.json", tmp_path / "pretty.json"
    canonical.write_text(dump_result(make_result()), encoding="utf-8")
    pretty.write_text(json.dumps(json.loads(canonical.read_text()), indent=2), encoding="utf-8")
    assert stream_canonical(pretty, results._stream_result) is None
    assert read_result(pretty) == read_result(canonical)
    assert read_run_or_result(pretty) == read_run_or_result(canonical)


def test_a_run_streams_equal_and_reindented_reads_equal(tmp_path: Path) -> None:
    run = run_from_json(json.loads(dump_run(small_run())), "x")  # durations rounded as written
    canonical, pretty = tmp_path / "run.json", tmp_path / "pretty.json"
    write_run(run, canonical)
    pretty.write_text(json.dumps(json.loads(dump_run(run)), indent=2), encoding="utf-8")
    assert stream_canonical(canonical, stream_run_document) == run
    assert stream_canonical(pretty, stream_run_document) is None
    assert read_run(canonical) == read_run(pretty) == run
    assert read_run_or_result(canonical) == run


def test_a_run_of_version_3_streams_equal_and_reindented_reads_equal(tmp_path: Path) -> None:
    """Structured decisions, answers and outcomes take the fast path and read as the whole."""
    run = normalized(small_run_v3())
    canonical, pretty = tmp_path / "run.json", tmp_path / "pretty.json"
    write_run(run, canonical)
    pretty.write_text(json.dumps(json.loads(dump_run(run)), indent=2), encoding="utf-8")
    fast = stream_canonical(canonical, stream_run_document)
    assert fast is not None and fast == run
    assert read_run(pretty) == run
    result = tmp_path / "result.json"
    result.write_text(dump_result(make_result(run)), encoding="utf-8")
    assert stream_canonical(result, results._stream_result) == whole_result(result)


@st.composite
def v3_runs(draw: st.DrawFn) -> Any:
    """Runs with everything version 3 holds: expected labels, objects or none, expected
    checks, and attempts with labels, structured decisions, answers, outcomes, errors."""
    expected = st.none() | st.sampled_from(["deny", "approve"]) | structured
    checks = st.dictionaries(st.sampled_from(["a", "tools"]), finite_json.filter(
        lambda v: v is not None), max_size=2)  # fmt: skip
    rows = []
    for i in range(draw(st.integers(1, 3))):
        rows.append(
            RowRecord(f"r{i}", "sha256:" + "0" * 64, draw(expected), False, (), None,
                      tuple(draw(checks).items()))
        )  # fmt: skip
    made: list[Attempt] = []
    for r in rows:
        for n in range(1, draw(st.integers(2, 4)) + 1):
            decision = draw(st.none() | st.sampled_from(["deny", "success"]) | structured)
            made.append(
                Attempt(
                    r.id, n, Phase.MAIN, decision,
                    tuple(draw(st.dictionaries(st.sampled_from(["a", "b"]), st.text(max_size=3),
                                               max_size=2)).items()),
                    error=None if decision is not None else "bad-output",
                    detail=None if decision is not None else "unread",
                    duration_s=round(draw(st.floats(0, 100)), 4),
                    answer=draw(st.none() | finite_json.filter(lambda v: v is not None)),
                    correct=draw(st.none() | st.booleans()),
                    score=draw(st.none() | st.floats(allow_nan=False, allow_infinity=False)),
                )
            )  # fmt: skip
    base = small_run()
    return replace(base, rows=tuple(rows), attempts=tuple(made), ratchet=())


@PROPERTY
@given(run=v3_runs())
def test_any_run_of_version_3_reads_equal_through_both_readers(
    tmp_path_factory: pytest.TempPathFactory, run: Any
) -> None:
    path = tmp_path_factory.mktemp("v3") / "run.json"
    write_run(run, path)
    fast = stream_canonical(path, stream_run_document)
    whole = run_from_json(parse_json_file(path), str(path))
    assert fast is not None, "passk's own layout takes the fast path"
    assert fast == whole == run
    assert [type(a.decision) for a in fast.attempts] == [type(a.decision) for a in run.attempts]


def test_lines_the_text_fast_path_must_not_take_still_read_equal(tmp_path: Path) -> None:
    """Escapes, an integer duration, retries, a repeated key: decoded, not pattern-matched."""
    run = small_run()
    doc = json.loads(dump_run(run))
    odd = [
        '{"row":"refund-\\u0030\\u00301","n":1,"phase":"main","decision":"deny","duration_s":2}',
        '{"row":"refund-001","n":2,"phase":"main","row":"refund-002","decision":"deny",'
        '"duration_s":0.5}',
        '{"row":"refund-001","n":3,"phase":"main","decision":"d\\"en\\\\y","checks":'
        '{"a":"x\\"duration_s\\":1.0}"},"detail":"\\n","duration_s":1e-3}',
        '{"row":"refund-002","n":9,"phase":"confirm","error":"timeout","detail":"",'
        '"duration_s":0.0,"retries":["a"]}',
        '{"row":"refund-002","n":10,"phase":"main","decision":"deny","usage":{"input_tokens":5},'
        '"duration_s":0.5}',
        '{"row":"refund-002","n":11,"phase":"main","decision":"deny","duration_s":0.5,'
        '"usage":{"duration_s":3.0}}',
    ]
    doc["attempts"] = []
    text = dump_document(doc, line_lists=("rows",)).replace(
        '  "attempts": []', '  "attempts": [\n    ' + ",\n    ".join(odd) + "\n  ]"
    )
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    fast = stream_canonical(path, stream_run_document)
    assert fast is not None
    assert fast == run_from_json(json.loads(text), str(path))
    assert fast.attempts[0].row_id == "refund-001" and fast.attempts[0].duration_s == 2.0
    assert fast.attempts[1].row_id == "refund-002"  # json keeps the last of a repeated key
    assert fast.attempts[2].checks == (("a", 'x"duration_s":1.0}'),)
    # A usage before duration_s, or a counter named like an attempt key, is kept.
    assert fast.attempts[4].usage is not None and fast.attempts[4].usage.input_tokens == 5
    assert fast.attempts[5].usage is not None
    assert fast.attempts[5].usage.extra == (("duration_s", 3.0),)


def test_repeated_strings_and_check_lists_are_shared(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(dump_result(make_result()), encoding="utf-8")
    audited = read_result(path)
    run = audited.result.candidate
    ids = {id(r.id) for r in run.rows}
    assert all(id(a.row_id) in ids for a in run.attempts)
    checks = [a.checks for a in run.attempts if a.checks]
    assert len(checks) >= 2 and len({id(c) for c in checks}) == len(set(checks))
    baseline_ids = {r.id: r.id for r in audited.result.baseline.rows}
    assert all(baseline_ids[r.id] is r.id for r in run.rows)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(tmp_path: Path, enabled: bool) -> None:
    path = tmp_path / "result.json"
    path.write_text(dump_result(make_result()), encoding="utf-8")
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        read_result(path)
        assert gc.isenabled() is enabled
        path.write_text("{not json", encoding="utf-8")
        with pytest.raises(ArtifactError):
            read_result(path)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


# ------------------------------------------- any file: same value or same error

VALID_RESULT_TEXT = dump_result(make_result())
VALID_RESULT = json.loads(VALID_RESULT_TEXT)
VALID_RESULT_V3 = json.loads(dump_result(make_result(small_run_v3())))


def result_text(doc: Any) -> str:
    """``doc`` laid out as :func:`dump_result` lays out a result, as far as it has the shape."""
    if not isinstance(doc, dict):
        return compact_json(doc) + "\n"
    raw = {}
    for side in ("baseline", "candidate"):
        value = doc.get(side)
        if (
            isinstance(value, dict)
            and list(value) == ["metrics", "run"]
            and isinstance(value["run"], dict)
        ):
            run_text = dump_document(value["run"], line_lists=("rows", "attempts"))
            run_text = run_text.rstrip("\n").replace("\n", "\n  ")
            raw[side] = (
                '{"metrics": ' + compact_json(value["metrics"]) + ', "run": ' + run_text + "}"
            )
    return dump_document(doc, line_lists=("rows",), raw=raw)


def same_either_way(path: Path) -> None:
    fast = outcome(read_result, path)
    assert fast == outcome(whole_result, path)
    either = outcome(read_run_or_result, path)
    if fast[0] == "value":
        assert either == fast


def laid_out_reads_like_the_whole_document(doc: Any, folder: Path) -> None:
    """``doc`` in passk's layout reads the same through both readers (value or error)."""
    try:
        text = result_text(doc)
    except (ValueError, TypeError):
        assume(False)  # NaN cannot be written by passk, or the shape is not a document
        raise
    path = folder / "result.json"
    path.write_text(text, encoding="utf-8")
    same_either_way(path)


@PROPERTY
@given(doc=mutated(VALID_RESULT))
def test_a_mutated_result_in_our_layout_reads_like_the_whole_document(
    tmp_path_factory: pytest.TempPathFactory, doc: Any
) -> None:
    laid_out_reads_like_the_whole_document(doc, tmp_path_factory.mktemp("m"))


@PROPERTY
@given(doc=mutated(VALID_RESULT_V3))
def test_a_mutated_result_of_version_3_runs_reads_like_the_whole_document(
    tmp_path_factory: pytest.TempPathFactory, doc: Any
) -> None:
    laid_out_reads_like_the_whole_document(doc, tmp_path_factory.mktemp("m3"))


EDITS = st.sampled_from(["delete", "duplicate", "drop-comma", "space", "char", "swap"])


@PROPERTY
@given(
    edits=st.lists(
        st.tuples(
            EDITS,
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            st.sampled_from([*',{}[]:" \\0a\n\t', "\\u0041", "NaN", "1e999", "\ufeff", "\u00e9"]),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_an_edited_result_text_reads_like_the_whole_document(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int, int, str]]
) -> None:
    """Hand edits, merges and truncations of the text: the layout check must hold."""
    lines = VALID_RESULT_TEXT.splitlines(keepends=True)
    for how, at, column, char in edits:
        i = at % len(lines)
        line = lines[i]
        j = column % max(len(line), 1)
        if how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, line)
        elif how == "drop-comma":
            lines[i] = line.replace(",\n", "\n")
        elif how == "space":
            lines[i] = line[:j] + " " + line[j:]
        elif how == "char":
            lines[i] = line[:j] + char + line[j + 1 :]
        else:
            lines[i], lines[(i + 1) % len(lines)] = lines[(i + 1) % len(lines)], line
    path = tmp_path_factory.mktemp("e") / "result.json"
    path.write_text("".join(lines), encoding="utf-8")
    same_either_way(path)


@PROPERTY
@given(doc=json_values)
def test_random_json_reads_like_the_whole_document(
    tmp_path_factory: pytest.TempPathFactory, doc: Any
) -> None:
    laid_out_reads_like_the_whole_document(doc, tmp_path_factory.mktemp("r"))


def test_a_truncated_result_gets_the_whole_document_error(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(VALID_RESULT_TEXT[: len(VALID_RESULT_TEXT) // 2], encoding="utf-8")
    kind, message = outcome(read_result, path)
    assert kind == "ArtifactError" and "invalid JSON" in message
    assert (kind, message) == outcome(whole_result, path)


# ------------------------------------------- core fast paths vs the formulas

decisions_st = st.one_of(st.none(), st.sampled_from(["deny", "approve", " Deny", "DENY"]))
checks_st = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y"])), max_size=3
).map(tuple)
scoring_st = st.sampled_from([Scoring(), Scoring(("strip", "casefold"))])


@st.composite
def row_attempts(draw: st.DrawFn) -> list[Attempt]:
    made = []
    for n in range(1, draw(st.integers(0, 8)) + 1):
        decision = draw(decisions_st)
        phase = draw(st.sampled_from([Phase.MAIN, Phase.MAIN, Phase.CONFIRM]))
        checks = draw(checks_st) if decision is not None else ()
        error = "timeout" if decision is None else None
        made.append(Attempt("r", n, phase, decision, checks, error))
    return made


def classify_reference(decisions: list[str | None], expected: str, k: int, s: Scoring) -> RowClass:
    valid = [normalize(d, s) for d in decisions if d is not None]
    if len(valid) < k:
        return RowClass.UNCLASSIFIED
    if any(d != valid[0] for d in valid):
        return RowClass.FLIP
    return RowClass.STABLE_CORRECT if valid[0] == normalize(expected, s) else RowClass.STABLE_WRONG


@PROPERTY
@given(attempts=row_attempts(), k=st.integers(1, 4), scoring=scoring_st)
def test_row_summaries_match_the_formulas(
    attempts: list[Attempt], k: int, scoring: Scoring
) -> None:
    row = RowRecord("r", "sha256:" + "0" * 64, "deny", False)
    decisions = [a.decision for a in attempts if a.phase is Phase.MAIN]
    summary = summarize_row(row, attempts, k, scoring)
    assert summary.row_class is classify_reference(decisions, "deny", k, scoring)
    main = [a for a in attempts if a.phase is Phase.MAIN]
    assert classify(main, row, k, scoring) is summary.row_class
    valid = [d for d in decisions if d is not None]
    assert summary.valid == len(valid) and summary.errors == len(decisions) - len(valid)
    right = normalize("deny", scoring)
    assert summary.correct == sum(normalize(d, scoring) == right for d in valid)


def check_flips_reference(attempts: list[Attempt], row_class: RowClass) -> tuple[str, ...]:
    if row_class not in (RowClass.STABLE_CORRECT, RowClass.STABLE_WRONG):
        return ()
    valid = [a for a in attempts if a.valid]
    names = list(dict.fromkeys(name for a in valid for name, _ in a.checks))
    return tuple(n for n in names if len({dict(a.checks).get(n, "(absent)") for a in valid}) > 1)


@PROPERTY
@given(attempts=row_attempts(), row_class=st.sampled_from(list(RowClass)))
def test_check_flips_match_the_definition(attempts: list[Attempt], row_class: RowClass) -> None:
    assert check_flips(attempts, row_class) == check_flips_reference(attempts, row_class)


@PROPERTY
@given(rows=st.lists(row_attempts(), min_size=1, max_size=6), scoring=scoring_st)
def test_check_stability_matches_the_definition(
    rows: list[list[Attempt]], scoring: Scoring
) -> None:
    records = [RowRecord(f"r{i}", "sha256:" + "0" * 64, "deny", False) for i in range(len(rows))]
    by_row = {f"r{i}": [replace(a, row_id=f"r{i}") for a in row] for i, row in enumerate(rows)}
    eligible: Counter[str] = Counter()
    flipped: Counter[str] = Counter()
    held: dict[str, list[str]] = {}
    order: dict[str, None] = {}
    for record in records:
        valid = [a for a in by_row[record.id] if a.valid and a.phase is Phase.MAIN]
        decisions = {normalize(a.decision or "", scoring) for a in valid}
        values: dict[str, list[str]] = {}
        for a in valid:
            for name, value in a.checks:  # a repeated name counts each time it is reported
                order.setdefault(name, None)
                values.setdefault(name, []).append(value)
        for name, seen in values.items():
            if len(seen) >= 2:
                eligible[name] += 1
                if len(set(seen)) > 1:
                    flipped[name] += 1
                    if len(decisions) == 1:
                        held.setdefault(name, []).append(record.id)
    got = check_stability(records, by_row, scoring)
    assert [c.name for c in got] == list(order)
    for c in got:
        assert (c.eligible, c.flipped, list(c.held_rows)) == (
            eligible[c.name],
            flipped[c.name],
            held.get(c.name, []),
        )


@PROPERTY
@given(
    counts=st.lists(
        st.integers(0, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
        max_size=40,
    ),
    max_j=st.one_of(st.none(), st.integers(0, 14)),
)
def test_the_pass_curve_is_the_per_row_mean_to_the_last_bit(
    counts: list[tuple[int, int]], max_j: int | None
) -> None:
    curve = pass_curve(counts, max_j)
    if not counts:
        assert curve.points == ()
        return
    top = max(n for n, _ in counts) if max_j is None else max_j
    assert [p.j for p in curve.points] == list(range(1, top + 1))
    for p in curve.points:
        assert p.pass_hat == math.fsum(pass_hat_k(n, c, p.j) for n, c in counts) / len(counts)
        assert p.pass_at == math.fsum(pass_at_k(n, c, p.j) for n, c in counts) / len(counts)
        assert p.short_rows == sum(1 for n, _ in counts if n < p.j)


@pytest.mark.parametrize(
    ("b", "c"), [(0, 0), (0, 1), (1, 0), (3, 5), (10, 2), (40, 60), (700, 650), (2000, 2100)]
)
def test_mcnemar_is_the_exact_binomial_tail(b: int, c: int) -> None:
    total = b + c
    tail = Fraction(sum(math.comb(total, i) for i in range(min(b, c) + 1)), 2**total)
    expected = 1.0 if total == 0 else float(min(Fraction(1), 2 * tail))
    assert mcnemar_exact_p(b, c) == expected


@PROPERTY
@given(
    base=st.lists(row_attempts(), min_size=1, max_size=5),
    cand=st.lists(row_attempts(), min_size=1, max_size=5),
    scoring=scoring_st,
)
def test_compare_runs_metrics_and_classes_match_summaries(
    base: list[list[Attempt]], cand: list[list[Attempt]], scoring: Scoring
) -> None:
    n = min(len(base), len(cand))
    records = [RowRecord(f"r{i}", "sha256:" + "0" * 64, "deny", i % 2 == 0) for i in range(n)]

    def grouped(side: list[list[Attempt]]) -> Any:
        return group_attempts(replace(a, row_id=f"r{i}") for i, row in enumerate(side) for a in row)

    b, c = grouped(base[:n]), grouped(cand[:n])
    comparison = compare_runs(records, b, c, k=2, scoring=scoring)
    assert comparison.baseline_metrics == compute_metrics(summarize_run(records, b, 2, scoring), 2)
    assert comparison.candidate_metrics == compute_metrics(summarize_run(records, c, 2, scoring), 2)
    for record, row in zip(records, comparison.rows, strict=True):
        for attempts, final in ((b, row.baseline_final_class), (c, row.candidate_final_class)):
            every = [a.decision for a in attempts.get(record.id, ())]
            assert final is classify_reference(every, "deny", 2, scoring)
