"""Statistics on hand-checked cases."""

from __future__ import annotations

import pytest

from passk_action.core.model import RowClass, Scoring
from passk_action.core.stats import compute_metrics, pass_hat_k, summarize_run
from support.paths import REPO
from support.runs import attempts, classify_decisions, record

EXACT = Scoring()


@pytest.mark.parametrize(
    ("decisions", "expected", "cls"),
    [
        (["deny", "deny", "deny"], "deny", RowClass.STABLE_CORRECT),
        (["approve", "approve", "approve"], "deny", RowClass.STABLE_WRONG),
        (["approve", "escalate", "approve"], "deny", RowClass.FLIP),
        (["deny", "approve", "deny"], "deny", RowClass.FLIP),
        (["deny", None, "deny"], "deny", RowClass.UNCLASSIFIED),
        ([None, None, None], "deny", RowClass.UNCLASSIFIED),
        (["deny", None, "deny", "deny"], "deny", RowClass.STABLE_CORRECT),
        (["Deny", "deny", "deny"], "deny", RowClass.FLIP),
    ],
)
def test_classify_hand_checked(decisions: list[str | None], expected: str, cls: RowClass) -> None:
    assert classify_decisions(decisions, expected, 3, EXACT) is cls


def test_normalization_is_applied_to_both_sides() -> None:
    scoring = Scoring(normalize=("strip", "casefold"))
    assert (
        classify_decisions([" Deny", "DENY ", "deny"], "Deny", 3, scoring)
        is RowClass.STABLE_CORRECT
    )
    assert classify_decisions(["Deny", "deny", "deny"], "deny", 3, EXACT) is RowClass.FLIP


@pytest.mark.parametrize(
    ("n", "c", "k", "value"),
    [
        (3, 3, 3, 1.0),
        (3, 2, 3, 0.0),
        (4, 3, 2, 0.5),
        (4, 2, 2, 1 / 6),
        (2, 2, 3, 0.0),
        (5, 5, 1, 1.0),
    ],
)
def test_pass_hat_k(n: int, c: int, k: int, value: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(value)


def test_pass_hat_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 2)


def test_published_tau_bench_figure() -> None:
    """50 tasks x 4 trials with 14/12/10/4/10 tasks at 0/1/2/3/4 successes.

    pass^1..4 = 0.420, 0.273, 0.220, 0.200 (tau-bench's estimator).
    """
    counts = [0] * 14 + [1] * 12 + [2] * 10 + [3] * 4 + [4] * 10
    expected = [0.420, 0.273, 0.220, 0.200]
    for k, want in zip(range(1, 5), expected, strict=True):
        got = sum(pass_hat_k(4, c, k) for c in counts) / len(counts)
        assert round(got, 3) == want


def test_metrics_of_a_small_run() -> None:
    rows = [record("a"), record("b"), record("c"), record("d", "approve")]
    by_row = {
        "a": attempts("a", ["deny", "deny", "deny"]),  # stable-correct
        "b": attempts("b", ["approve", "escalate", "approve"]),  # flip
        "c": attempts("c", ["deny", None, "deny"]),  # unclassified
        "d": attempts("d", ["deny", "deny", "deny"]),  # stable-wrong
    }
    metrics = compute_metrics(summarize_run(rows, by_row, 3, EXACT), 3)
    # 11 valid decisions, 5 right (3 in a, 2 in c).
    assert metrics.valid == 11
    assert metrics.errors == 1
    assert metrics.mean_accuracy == pytest.approx(5 / 11)
    # Only row a is right on all 3; c has n=2 < k and scores 0.
    assert metrics.pass_k == pytest.approx(1 / 4)
    # Three classified rows, one flips.
    assert metrics.flip_rate == pytest.approx(1 / 3)
    assert metrics.classes[RowClass.UNCLASSIFIED] == 1
    assert metrics.classes[RowClass.STABLE_WRONG] == 1


def test_flip_rate_counts_classified_rows_only_as_the_readme_says() -> None:
    # README: "share of classified rows (k valid decisions) whose decisions do
    # not all agree ... unclassified rows are left out".  Row c disagrees in
    # its two valid decisions but crashed once: not a flip, and not in the
    # denominator either (1 flip of 2 classified rows, not 1 of 3 rows).
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "| **flip rate** | share of classified rows (k valid decisions)" in readme
    rows = [record("a"), record("b"), record("c")]
    by_row = {
        "a": attempts("a", ["deny"] * 3),
        "b": attempts("b", ["deny", "approve", "deny"]),
        "c": attempts("c", ["deny", "approve", None]),
    }
    metrics = compute_metrics(summarize_run(rows, by_row, 3, EXACT), 3)
    assert metrics.classes[RowClass.UNCLASSIFIED] == 1
    assert metrics.flip_rate == pytest.approx(1 / 2)
    # Nothing classified: no flip rate at all, not 0%.
    only_crashes = {"a": attempts("a", [None] * 3)}
    none = compute_metrics(summarize_run([record("a")], only_crashes, 3, EXACT), 3)
    assert none.flip_rate is None


def test_metrics_of_an_empty_run_are_not_numbers() -> None:
    metrics = compute_metrics([], 3)
    assert (metrics.mean_accuracy, metrics.pass_k, metrics.flip_rate) == (None, None, None)
