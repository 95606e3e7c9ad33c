"""The run artifact and its journal: golden files, round trips, and refused versions.

The golden files in ``tests/golden/artifacts/`` pin the exact bytes passk
writes (a committed baseline must diff the same way on every machine) and
the exact message a user gets for an invalid, an old and a newer artifact.
Regenerate the valid one with ``PASSK_UPDATE_GOLDEN=1`` after a deliberate
format change, and review the diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core.model import (
    Run,
    Scoring,
)
from passk_action.core.scoring import rescore_run
from passk_action.errors import ArtifactError
from passk_action.store.artifact import (
    SCHEMA_VERSION,
    Journal,
    dump_run,
    journal_path,
    read_journal,
    read_run,
    run_from_json,
    write_run,
)
from support.artifacts import (
    normalized,
    small_run,
    small_run_v2,
    small_run_v3,
    small_run_v4,
    small_run_v5,
)
from support.paths import TESTS

GOLDEN = TESTS / "golden" / "artifacts"
UPDATE = os.environ.get("PASSK_UPDATE_GOLDEN") == "1"


# ------------------------------------------------------------------ golden files


def test_valid_v4_artifact_is_what_dump_run_wrote_then() -> None:
    """Version 4 (before scorer verdicts) is what this passk writes, but for the version."""
    golden = GOLDEN / "valid_v4.json"
    text = dump_run(small_run_v4()).replace(
        f'"schema_version": {SCHEMA_VERSION},', '"schema_version": 4,', 1
    )
    assert golden.read_text(encoding="utf-8") == text
    # schema_version first, then one row / one attempt per line (readable diffs).
    lines = text.splitlines()
    assert sum(1 for line in lines if line.startswith('    {"row":')) == 12
    # Version 4: a baseline's measurement attempts at a gated row.
    assert sum(1 for line in lines if '"phase":"measure"' in line) == 2
    # A structured decision and an expected object are written as objects, not as text.
    assert '"expected":{"action":"refund","amount":120,"reasons":["damaged"]}' in text
    assert '"decision":{"action":"refund","amount":120,"reasons":["damaged"]}' in text


def test_valid_v4_golden_reads_back_to_the_run_through_both_readers() -> None:
    path = GOLDEN / "valid_v4.json"
    run = read_run(path)
    assert run == normalized(small_run_v4())
    assert run_from_json(json.loads(path.read_text()), str(path)) == run


def test_valid_v5_artifact_is_exactly_what_dump_run_writes() -> None:
    golden = GOLDEN / "valid_v5.json"
    text = dump_run(small_run_v5())
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert golden.read_text(encoding="utf-8") == text
    lines = text.splitlines()
    assert lines[1] == f'  "schema_version": {SCHEMA_VERSION},'
    # Version 5: what the scorer program said of each answer, and the scorer's command.
    assert '"verdicts":[{"correct":true,"reason":"names the refund","duration_s":0.5}' in text
    assert '"command":["python3","scorer.py"],"judge_repeats":3' in text


def test_valid_v5_golden_reads_back_and_decides_again_without_a_scorer() -> None:
    path = GOLDEN / "valid_v5.json"
    run = read_run(path)
    assert run == normalized(small_run_v5())
    assert run_from_json(json.loads(path.read_text()), str(path)) == run
    # The recorded verdicts decide again, without any scorer: one split judge is a
    # majority "success", the crashed scorer an error, never a decision.
    again = rescore_run(run, replace(run.settings.scoring, threshold=0.5))
    assert [a.decision or a.error for a in again.attempts] == [
        *("success", "success", "scorer-error"),
        *("failure", "failure", "failure"),
    ]


def test_old_v3_golden_still_reads_as_it_was() -> None:
    path = GOLDEN / "valid_v3.json"
    run = read_run(path)
    assert run == normalized(small_run_v3())
    assert run_from_json(json.loads(path.read_text()), str(path)) == run


def test_old_v2_golden_still_reads_as_it_was() -> None:
    """Version 2 (labels only, no answers or outcomes) is read as it is, by both readers."""
    path = GOLDEN / "valid_v2.json"
    assert json.loads(path.read_text())["schema_version"] == 2
    run = read_run(path)
    assert run == normalized(small_run_v2())
    assert run_from_json(json.loads(path.read_text()), str(path)) == run


def test_old_v1_golden_still_reads_with_no_usage() -> None:
    """Version 1 (before usage) is read as it is, through both reader paths."""
    path = GOLDEN / "valid_v1.json"
    assert json.loads(path.read_text())["schema_version"] == 1
    run = read_run(path)
    assert run == normalized(small_run())
    assert all(a.usage is None and not a.warnings for a in run.attempts)
    assert run_from_json(json.loads(path.read_text()), str(path)) == run


def test_v2_round_trip_through_the_whole_document_path_matches_the_streaming_one() -> None:
    path = GOLDEN / "valid_v2.json"
    assert run_from_json(json.loads(path.read_text()), str(path)) == read_run(path)


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ({"input_tokens": -1}, "'usage.input_tokens' must be a whole number from 0 to 10^12"),
        ({"input_tokens": 1.5}, "'usage.input_tokens' must be a whole number from 0 to 10^12"),
        ({"input_tokens": 10**13}, "'usage.input_tokens' must be a whole number from 0"),
        ({"cost_usd": "1"}, "'usage.cost_usd' must be a number from 0 to 10^12"),
        ({"cost_usd": 10**400}, "'usage.cost_usd' must be a number from 0 to 10^12"),
        ({"cost_usd": 1e308}, "'usage.cost_usd' must be a number from 0 to 10^12"),
        ({"model": ""}, "'usage.model' must be a non-empty string"),
        ({"cached": True}, "'usage.cached' must be a number from 0 to 10^12"),
        ([], "'usage' must be an object"),
    ],
)
def test_a_damaged_usage_is_refused_with_its_key(
    tmp_path: Path, usage: object, message: str
) -> None:
    doc = json.loads((GOLDEN / "valid_v2.json").read_text())
    doc["attempts"][0]["usage"] = usage
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ArtifactError) as caught:
        read_run(path)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "invalid_v1.json",
            "invalid_v1.json: attempts[1]: an attempt has exactly one of 'decision' and 'error' "
            "(passk wrote this file: restore it (e.g. from git) or record the run again)",
        ),
        (
            "old_v0.json",
            "old_v0.json: schema_version 0 is older than this passk reads (1) "
            "(record the run again, e.g. with `passk baseline`)",
        ),
        (
            "newer_v6.json",
            "newer_v6.json: schema_version 6 is newer than this passk reads (5) (upgrade passk)",
        ),
    ],
)
def test_refused_golden_artifacts_say_why(name: str, message: str) -> None:
    path = GOLDEN / name
    with pytest.raises(ArtifactError) as caught:
        read_run(path)
    assert str(caught.value) == f"{GOLDEN}/{message}"


@pytest.mark.parametrize("name", ["invalid_v1.json", "old_v0.json", "newer_v6.json"])
def test_refused_golden_artifacts_exit_2_with_one_line_through_the_cli(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(GOLDEN / name)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"passk: error: {GOLDEN / name}")


def test_golden_refusals_differ_from_the_valid_file_only_where_they_claim() -> None:
    """Guards the goldens themselves: each is the valid file with one deliberate fault."""
    valid = json.loads((GOLDEN / "valid_v1.json").read_text())
    for name, version in (("old_v0.json", 0), ("newer_v6.json", 6)):
        doc = json.loads((GOLDEN / name).read_text())
        assert doc["schema_version"] == version
        assert {k: v for k, v in doc.items() if k != "schema_version"} == {
            k: v for k, v in valid.items() if k != "schema_version"
        }
    invalid = json.loads((GOLDEN / "invalid_v1.json").read_text())
    assert invalid["attempts"][1] == {**valid["attempts"][1], "error": "timeout"}


# ---------------------------------------------------------------- round trips


def test_run_json_run_round_trip(tmp_path: Path) -> None:
    run = small_run()
    path = tmp_path / "run.json"
    write_run(run, path)
    back = read_run(path)
    assert back == normalized(run)
    # Stable: writing what was read gives the same bytes.
    assert dump_run(back) == path.read_text(encoding="utf-8")


def test_round_trip_keeps_non_ascii_and_check_order(tmp_path: Path) -> None:
    run = small_run()
    path = tmp_path / "run.json"
    write_run(run, path)
    text = path.read_text(encoding="utf-8")
    assert "retrying…" in text  # written as UTF-8, not \u escapes
    first = read_run(path).attempts[0]
    assert [name for name, _ in first.checks] == ["return_window", "proof_of_purchase"]


def test_bom_is_accepted_when_reading(tmp_path: Path) -> None:
    """Editors on Windows add a BOM when a user touches a committed baseline."""
    path = tmp_path / "run.json"
    path.write_bytes(b"\xef\xbb\xbf" + dump_run(small_run()).encode("utf-8"))
    assert read_run(path) == normalized(small_run())


def test_run_from_json_names_the_field_and_index() -> None:
    doc = json.loads(dump_run(small_run()))
    doc["rows"][1]["must_not_break"] = "yes"
    with pytest.raises(ArtifactError) as caught:
        run_from_json(doc, "base.json")
    assert str(caught.value) == (
        "base.json: rows[1]: 'must_not_break' must be true or false "
        "(passk wrote this file: restore it (e.g. from git) or record the run again)"
    )


def test_a_rows_cluster_is_kept_and_older_rows_without_one_still_read(tmp_path: Path) -> None:
    from dataclasses import replace

    run = small_run()
    clustered = replace(run, rows=(replace(run.rows[0], cluster="order-77"), run.rows[1]))
    path = tmp_path / "run.json"
    write_run(clustered, path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["rows"][0]["cluster"] == "order-77" and "cluster" not in doc["rows"][1]
    # The streaming reader and the careful one agree.
    assert read_run(path) == normalized(clustered)
    assert run_from_json(doc, "run.json").rows == clustered.rows
    # The golden v1 file predates clusters: its rows read with none.
    assert all(r.cluster is None for r in read_run(GOLDEN / "valid_v1.json").rows)


@pytest.mark.parametrize("bad", ["", 7, ["a"]])
def test_a_bad_cluster_names_the_row_and_key(bad: object, tmp_path: Path) -> None:
    doc = json.loads(dump_run(small_run()))
    doc["rows"][1]["cluster"] = bad
    with pytest.raises(ArtifactError) as caught:
        run_from_json(doc, "base.json")
    assert str(caught.value).startswith("base.json: rows[1]: 'cluster' must be a non-empty string")
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ArtifactError, match="'cluster' must be a non-empty string"):
        read_run(path)


def test_attempt_for_unknown_row_and_duplicate_attempt_are_refused() -> None:
    doc = json.loads(dump_run(small_run()))
    doc["attempts"].append(dict(doc["attempts"][0]))
    with pytest.raises(ArtifactError, match="attempt 1 of row 'refund-001' is recorded twice"):
        run_from_json(doc, "base.json")
    doc["attempts"][-1] = {**doc["attempts"][0], "row": "ghost"}
    with pytest.raises(ArtifactError, match="attempt for unknown row 'ghost'"):
        run_from_json(doc, "base.json")


# -------------------------------------------------------------------- journal


def header_of(run: Run) -> Run:
    from dataclasses import replace

    return replace(run, attempts=())


def test_journal_round_trip(tmp_path: Path) -> None:
    run = small_run()
    path = journal_path(tmp_path / "run.json")
    assert path.name == "run.json.journal.jsonl"
    with Journal.create(path, header_of(run)) as journal:
        for attempt in run.attempts:
            journal.append(attempt)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(run.attempts)  # a header, then one attempt per line
    contents = read_journal(path)
    assert contents.warnings == ()
    assert contents.header == header_of(run)
    assert contents.attempts == normalized(run).attempts


def test_journal_torn_last_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    run = small_run()
    path = journal_path(tmp_path / "run.json")
    with Journal.create(path, header_of(run)) as journal:
        for attempt in run.attempts[:3]:
            journal.append(attempt)
    whole = path.read_bytes()
    with Journal.create(tmp_path / "scratch.jsonl", header_of(run)) as scratch:
        scratch.append(run.attempts[3])
    fourth = (tmp_path / "scratch.jsonl").read_bytes().splitlines()[1]
    path.write_bytes(whole + fourth[: len(fourth) // 2])
    contents = read_journal(path)
    assert contents.attempts == normalized(run).attempts[:3]
    assert contents.warnings == (
        f"{path}:5: dropped a torn last line (the run was killed mid-write)",
    )


def test_journal_torn_in_a_multibyte_character_is_still_a_torn_line(tmp_path: Path) -> None:
    run = small_run()
    path = journal_path(tmp_path / "run.json")
    with Journal.create(path, header_of(run)) as journal:
        journal.append(run.attempts[0])
    path.write_bytes(path.read_bytes() + '{"row":"refund-002","n":2,"error":"…'.encode()[:-1])
    contents = read_journal(path)
    assert len(contents.attempts) == 1
    assert len(contents.warnings) == 1


def test_journal_damaged_middle_line_is_an_error_not_a_silent_skip(tmp_path: Path) -> None:
    run = small_run()
    path = journal_path(tmp_path / "run.json")
    with Journal.create(path, header_of(run)) as journal:
        for attempt in run.attempts[:3]:
            journal.append(attempt)
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:10]
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ArtifactError) as caught:
        read_journal(path)
    assert str(caught.value) == (
        f"{path}:3: damaged journal line (start the run anew without --resume)"
    )


def test_empty_journal_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "run.json.journal.jsonl"
    path.write_bytes(b"")
    with pytest.raises(ArtifactError, match="journal is empty"):
        read_journal(path)


def test_journal_recording_an_attempt_twice_is_refused(tmp_path: Path) -> None:
    run = small_run()
    path = journal_path(tmp_path / "run.json")
    with Journal.create(path, header_of(run)) as journal:
        journal.append(run.attempts[0])
        journal.append(run.attempts[0])
    with pytest.raises(ArtifactError, match="recorded twice"):
        read_journal(path)


def test_an_import_recorded_before_version_3_reads_as_scored_by_its_harness() -> None:
    """Imports used to make up a label ("pass"); read now, each trial reports its grade, and
    the three numbers are the ones it had."""
    from passk_action.core.stats import compute_metrics, summarize_run
    from passk_action.store.document import graded_by_harness

    path = GOLDEN / "imported_v2.json"
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 2 and {r["expected"] for r in doc["rows"]} == {"pass"}
    run = read_run(path)
    assert run == run_from_json(doc, str(path))
    assert run.settings.scoring == Scoring(by="environment")
    assert {r.expected for r in run.rows} == {None}
    assert {(a.decision, a.correct) for a in run.attempts} == {
        ("success", True),
        ("failure", False),
    }

    def numbers(r: Run) -> tuple[object, ...]:
        m = compute_metrics(summarize_run(r.rows, r.attempts_by_row(), 3, r.settings.scoring), 3)
        return m.mean_accuracy, m.pass_k, m.flip_rate

    as_labels = json.loads(json.dumps(doc))
    as_labels["schema_version"] = 3  # the same content, read as it stands
    labelled = run_from_json(as_labels, str(path))
    assert labelled.rows[0].expected == "pass"
    assert numbers(run) == numbers(labelled) == (5 / 9, 1 / 3, 1 / 3)
    assert graded_by_harness(labelled) == run
    # A run passk recorded (not imported) is never rewritten.
    assert read_run(GOLDEN / "valid_v2.json").settings.scoring.by == "expected"
