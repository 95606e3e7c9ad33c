"""The action's pure parts: its inputs, a re-run's recorded failure, its annotations."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from passk_action.action.inputs import read_inputs
from passk_action.errors import UsageError
from passk_action.github.workflow import (
    Workflow,
)


def test_inputs_take_defaults_when_blank(tmp_path: Path) -> None:
    inputs = read_inputs({"GITHUB_WORKSPACE": str(tmp_path), "INPUT_COMMENT": " "}, tmp_path)
    assert (inputs.config, inputs.comment, inputs.mode, inputs.check_name) == (
        "passk.yml",
        "update",
        "gate",
        "passk",
    )
    assert inputs.baseline_update == "pull-request" and inputs.token == ""
    assert "token" not in repr(inputs)


def test_working_directory_must_exist_inside_the_workspace(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="input `working-directory`"):
        read_inputs({"INPUT_WORKING-DIRECTORY": "nope"}, tmp_path)
    with pytest.raises(UsageError, match="outside the workspace"):
        read_inputs({"INPUT_WORKING-DIRECTORY": ".."}, tmp_path)


def test_a_recorded_failure_stands_beside_the_spend_limits(tmp_path: Path) -> None:
    """A re-run under cost and latency limits keeps the recorded failure and the limits' own."""
    from passk_action.core.gate import RECORDED_FAILURE_KIND, ProtectedChange, Rule
    from passk_action.core.protected import RecordedFailure
    from passk_action.store.results import read_result, write_result
    from support.scenarios import SPEND_LIMITS, spend_limits_scenario

    fresh = spend_limits_scenario()
    standing = ProtectedChange(RECORDED_FAILURE_KIND, RecordedFailure())
    kept = spend_limits_scenario(SPEND_LIMITS, [standing])
    assert [f.rule for f in kept.gate.failures] == [
        Rule.RECORDED_FAILURE,
        Rule.COST,
        Rule.LATENCY,
    ]
    assert kept.gate.failures[1:] == fresh.gate.failures
    write_result(kept, tmp_path / "result.json")
    assert read_result(tmp_path / "result.json").consistent  # `passk gate` agrees


def test_a_non_blocking_regression_reads_the_same_in_the_log_and_the_check_run() -> None:
    # Wrong on every main attempt, mixed with its confirmations: the log's warning and the
    # check run's annotation say the same classes (once "→ flip", elsewhere "→ stable-wrong").
    from passk_action.action.publish import annotate
    from passk_action.core.diff import Confirmation
    from passk_action.core.model import RowClass
    from passk_action.report.check_run import row_annotations
    from support.scenarios import passed_scenario

    result = passed_scenario()
    first = result.comparison.rows[0]
    moved = replace(
        first,
        must_not_break=False,
        baseline_class=RowClass.STABLE_CORRECT,
        baseline_final_class=RowClass.STABLE_CORRECT,
        candidate_class=RowClass.STABLE_WRONG,
        candidate_final_class=RowClass.FLIP,
        confirmation=Confirmation.CONFIRMED_REGRESSION,
    )
    comparison = replace(result.comparison, rows=(moved, *result.comparison.rows[1:]))
    result = replace(result, comparison=comparison)
    out = io.StringIO()
    annotate(Workflow(out, {}), result)
    words = (
        "stable-correct → stable-wrong (with confirmation attempts: baseline stable-correct, "
        "candidate flip); not blocking: the row is not must-not-break"
    )
    assert f"{first.id}: confirmed regression: {words}" in out.getvalue()
    [annotation] = [a for a in row_annotations(result) if a[0] == first.id]
    assert annotation[2].startswith(words)
