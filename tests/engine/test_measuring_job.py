"""engine/measuring_job: the baseline the two-job mode's measuring job may assume."""

from __future__ import annotations

from passk_action.core.classify import classify_attempts
from passk_action.core.model import (
    Attempt,
    Dataset,
    EvalSettings,
    FieldRule,
    Phase,
    Row,
    RowClass,
    Scoring,
    dataset_digest,
    object_text,
)
from passk_action.engine.measuring import row_records
from passk_action.engine.measuring_job import assumed_baseline
from support.runs import run_of

ENVIRONMENT = Scoring(by="environment")
ANY_AMOUNT = Scoring(fields=(FieldRule("action"), FieldRule("amount", "any_of")))


def _dataset(*rows: Row) -> Dataset:
    return Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))


def _classes(dataset: Dataset, scoring: Scoring, committed_rows: tuple[Row, ...] = ()) -> dict:
    records = row_records(_dataset(*committed_rows)) if committed_rows else ()
    committed = run_of(records, [], k=3)
    assumed = assumed_baseline(committed, dataset, 3, scoring, stale=False)
    assert assumed.settings.scoring == scoring  # the gating job reads nothing again
    grouped = assumed.attempts_by_row()
    by_id = {r.id: r for r in assumed.rows}
    return {
        row.id: classify_attempts(grouped.get(row.id, ()), by_id[row.id], 3, scoring)
        for row in dataset.rows
    }


def test_a_row_the_committed_baseline_lacks_is_assumed_right_by_every_kind_of_rule() -> None:
    # A task its environment scores expects nothing: an assumed answer of its
    # expected decision would be no answer at all, and the row never "lost".
    task = Row("task", {"booking": 1}, None, must_not_break=True)
    assert _classes(_dataset(task), ENVIRONMENT) == {"task": RowClass.STABLE_CORRECT}
    refund = Row("refund", {"order": 2}, object_text({"action": "refund", "amount": [10, 12]}))
    assert _classes(_dataset(refund), ANY_AMOUNT) == {"refund": RowClass.STABLE_CORRECT}
    checked = Row("checked", {"n": 3}, "approve", expected_checks=(("damage", "found"),))
    required = Scoring(checks="required")
    assert _classes(_dataset(checked), required) == {"checked": RowClass.STABLE_CORRECT}


def test_the_committed_attempts_are_read_by_the_gates_rules() -> None:
    row = Row("r", {"n": 1}, "deny", must_not_break=True)
    dataset = _dataset(row)
    answers = [Attempt("r", n, Phase.MAIN, "DENY") for n in (1, 2, 3)]
    committed = run_of(row_records(dataset), answers, k=3)
    casefold = Scoring(normalize=("casefold",))
    assert committed.settings == EvalSettings(k=3)
    for scoring, expected in (
        (Scoring(), RowClass.STABLE_WRONG),
        (casefold, RowClass.STABLE_CORRECT),
    ):
        assumed = assumed_baseline(committed, dataset, 3, scoring, stale=False)
        grouped = assumed.attempts_by_row()
        assert classify_attempts(grouped["r"], assumed.rows[0], 3, scoring) is expected
    # A stale baseline is measured anew by the gating job: every row is assumed right.
    stale = assumed_baseline(committed, dataset, 3, Scoring(), stale=True)
    assert classify_attempts(stale.attempts_by_row()["r"], row, 3, Scoring()) is (
        RowClass.STABLE_CORRECT
    )
