"""Protected changes: every edit of the base's gate a pull request makes is found and said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from passk_action.inputs.config import parse_config
from passk_action.inputs.dataset import parse_dataset
from passk_action.report.protected import change_said as said
from passk_action.sides import protect
from passk_action.sides.protect import ProtectedInputs, protected_changes
from passk_action.sides.trusted import authoritative_dataset, effective_config

BASE_CONFIG = """
dataset: data.jsonl
k: 3
agent: {command: [python3, agent.py]}
confirm: {attempts: 3, must_not_break_attempts: 6}
must_not_break: {tags: [vip, legal]}
gate: {block_on_any_regression: true}
"""
BASE_ROWS = [
    {"id": "a", "input": 1, "expected": "approve", "must_not_break": True},
    {"id": "b", "input": 2, "expected": "deny", "tags": ["vip", "legal"]},
    {"id": "c", "input": 3, "expected": "deny"},
]


def snapshot(
    config: str = BASE_CONFIG,
    rows: list[dict[str, Any]] | None = None,
    baseline: bytes | None = b"{}",
) -> ProtectedInputs:
    cfg = parse_config(config, Path("/repo/passk.yml")).config
    text = "".join(json.dumps(r) + "\n" for r in (rows if rows is not None else BASE_ROWS))
    dataset = parse_dataset(text.encode(), "data.jsonl", "jsonl", cfg.must_not_break_tags)
    return ProtectedInputs(cfg, dataset, baseline)


def _rows(**edits: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in BASE_ROWS]
    for row in rows:
        row.update(edits.get(row["id"], {}))
    return rows


@pytest.mark.parametrize(
    ("head", "kind", "row"),
    [
        (snapshot(baseline=b"{ }"), protect.BASELINE_CHANGED, None),
        (snapshot(baseline=None), protect.BASELINE_CHANGED, None),
        (snapshot(rows=BASE_ROWS[1:]), protect.ROW_REMOVED, "a"),
        (snapshot(rows=_rows(a={"expected": "deny"})), protect.ROW_RELABELED, "a"),
        (snapshot(rows=_rows(b={"expected": "approve"})), protect.ROW_RELABELED, "b"),
        (snapshot(rows=_rows(a={"must_not_break": False})), protect.MARK_REMOVED, "a"),
        (snapshot(rows=_rows(b={"tags": ["vip"]})), protect.MARK_REMOVED, "b"),
        (snapshot(rows=_rows(a={"input": 9})), protect.INPUT_CHANGED, "a"),
        (snapshot(rows=_rows(b={"input": {"amount": 2}})), protect.INPUT_CHANGED, "b"),
        (snapshot(BASE_CONFIG.replace("vip, legal", "vip")), protect.TAG_UNPROTECTED, None),
        (snapshot(BASE_CONFIG.replace("k: 3", "k: 2")), protect.K_LOWERED, None),
        (
            snapshot(BASE_CONFIG.replace("attempts: 3", "attempts: 2")),
            protect.CONFIRM_LOWERED,
            None,
        ),
        (
            snapshot(
                BASE_CONFIG.replace("must_not_break_attempts: 6", "must_not_break_attempts: 5")
            ),
            protect.CONFIRM_LOWERED,
            None,
        ),
        (
            snapshot(BASE_CONFIG.replace("regression: true", "regression: false")),
            protect.REGRESSION_BLOCK_OFF,
            None,
        ),
        (snapshot(BASE_CONFIG + "scoring: {normalize: [strip]}\n"), protect.SCORING_CHANGED, None),
        (
            snapshot(BASE_CONFIG + "scoring: {extract: {regex: '(approve|deny)'}}\n"),
            protect.SCORING_RULES_CHANGED,
            None,
        ),
        (
            snapshot(BASE_CONFIG + "scoring: {fields: {a: set}}\n"),
            protect.SCORING_RULES_CHANGED,
            None,
        ),
        (
            snapshot(BASE_CONFIG + "scoring: {checks: required}\n"),
            protect.SCORING_RULES_CHANGED,
            None,
        ),
        (
            snapshot(rows=_rows(a={"expected_checks": {"damage": "found"}})),
            protect.ROW_RELABELED,
            "a",
        ),
    ],
)
def test_each_protected_edit_is_found(head: ProtectedInputs, kind: str, row: str | None) -> None:
    [change] = protected_changes(snapshot(), head)
    assert (change.kind, change.id) == (kind, row)


LIMITED = BASE_CONFIG.replace(
    "gate: {block_on_any_regression: true}",
    "gate: {block_on_any_regression: true, max_cost_increase: 0.25, max_latency_p95_increase: 0.5}",
)


@pytest.mark.parametrize(
    ("head", "detail"),
    [
        (
            LIMITED.replace(", max_cost_increase: 0.25", ""),
            "gate.max_cost_increase +25% is removed: with the allow label this pull request is "
            "held to no limit, the new setting; without it, to the base's +25%",
        ),
        (
            LIMITED.replace("max_cost_increase: 0.25", "max_cost_increase: 3"),
            "gate.max_cost_increase +25% is raised to +300%: with the allow label this pull "
            "request is held to +300%, the new setting; without it, to the base's +25%",
        ),
        (
            LIMITED.replace(", max_latency_p95_increase: 0.5", ""),
            "gate.max_latency_p95_increase +50% is removed: with the allow label this pull "
            "request is held to no limit, the new setting; without it, to the base's +50%",
        ),
    ],
)
def test_loosening_a_spend_limit_is_a_protected_change(head: str, detail: str) -> None:
    [change] = protected_changes(snapshot(LIMITED), snapshot(head))
    assert (change.kind, said(change.what)) == (protect.SPEND_LIMIT_LOOSENED, detail)
    tighter = LIMITED.replace("0.25", "0.1").replace("0.5}", "0.2}")
    assert protected_changes(snapshot(LIMITED), snapshot(tighter)) == ()
    assert protected_changes(snapshot(), snapshot(LIMITED)) == ()  # adding one is fine


SEQUENTIAL_BASE = BASE_CONFIG.replace(
    "gate: {block_on_any_regression: true}",
    "gate: {block_on_any_regression: true, rule: sequential}",
)
STRICT_BASE = SEQUENTIAL_BASE.replace("rule: sequential", "rule: strict")


@pytest.mark.parametrize(
    ("base", "head", "detail"),
    [
        (
            STRICT_BASE,
            SEQUENTIAL_BASE,
            "gate.rule changes from strict to sequential (a wrong answer no longer blocks)",
        ),
        (
            STRICT_BASE,
            SEQUENTIAL_BASE.replace("rule: sequential", "rule: relative"),
            "gate.rule changes from strict to relative (a wrong answer no longer blocks)",
        ),
        (
            STRICT_BASE,
            BASE_CONFIG,  # no gate.rule: the default, relative
            "gate.rule changes from strict to relative (a wrong answer no longer blocks)",
        ),
        (
            SEQUENTIAL_BASE,
            SEQUENTIAL_BASE.replace(
                "rule: sequential", "rule: sequential, sequential: {beta: 0.3}"
            ),
            "gate.sequential changes (beta 0.1 -> 0.3): a gated row whose accuracy drops from "
            "99% to 80% would block 74.5% of the time, now 54.1%",
        ),
        (
            SEQUENTIAL_BASE,
            SEQUENTIAL_BASE.replace(
                "rule: sequential", "rule: sequential, sequential: {unreliable: 0.5}"
            ),
            "gate.sequential changes (unreliable 0.7 -> 0.5): a gated row whose accuracy drops "
            "from 99% to 80% would block 74.5% of the time, now 43.5%",
        ),
        (
            SEQUENTIAL_BASE,
            SEQUENTIAL_BASE.replace(
                "rule: sequential", "rule: sequential, sequential: {baseline_alpha: 0.05}"
            ),
            "gate.sequential changes (baseline_alpha 0.005 -> 0.05): a gated row whose accuracy "
            "drops from 95% to 50% would block 75.3% of the time, now 54.9%",
        ),
    ],
)
def test_loosening_the_gated_row_rule_is_a_protected_change(
    base: str, head: str, detail: str
) -> None:
    """Attack: the pull request that loosens the rule its own rows are judged by."""
    [change] = protected_changes(snapshot(base), snapshot(head))
    assert (change.kind, said(change.what)) == (protect.RULE_LOOSENED, detail)
    # Control: the same pull request without the edit changes nothing protected.
    assert protected_changes(snapshot(base), snapshot(base)) == ()


@pytest.mark.parametrize(
    ("base", "head"),
    [
        (SEQUENTIAL_BASE, STRICT_BASE),  # any wrong answer blocks: stricter
        (SEQUENTIAL_BASE, SEQUENTIAL_BASE.replace("rule: sequential", "rule: sequential, "
                                                  "sequential: {alpha: 0.01, beta: 0.05}")),
        (SEQUENTIAL_BASE, SEQUENTIAL_BASE.replace("rule: sequential", "rule: sequential, "
                                                  "sequential: {unreliable: 0.8}")),
        (STRICT_BASE, STRICT_BASE.replace("rule: strict", "rule: strict, "
                                          "sequential: {beta: 0.4}")),  # not the rule in use
    ],
)  # fmt: skip
def test_tightening_the_gated_row_rule_is_not_a_protected_change(base: str, head: str) -> None:
    assert protected_changes(snapshot(base), snapshot(head)) == ()


def test_the_gated_row_rule_comes_from_the_base() -> None:
    base = parse_config(STRICT_BASE, Path("/repo/passk.yml")).config
    head = parse_config(SEQUENTIAL_BASE, Path("/repo/passk.yml")).config
    assert effective_config(base, head).gate.policy.rule.rule == "strict"


def test_the_gate_limits_and_prices_come_from_the_base() -> None:
    base = parse_config(LIMITED + "pricing: {input_per_mtok: 1, output_per_mtok: 2}\n",
                        Path("/repo/passk.yml")).config  # fmt: skip
    head = parse_config(BASE_CONFIG + "pricing: {input_per_mtok: 0, output_per_mtok: 0}\n",
                        Path("/repo/passk.yml")).config  # fmt: skip
    effective = effective_config(base, head)
    assert effective.gate.policy.max_cost_increase == 0.25
    assert effective.gate.policy.max_latency_p95_increase == 0.5
    assert effective.pricing == base.pricing
    # Allowed by label, the head's spend limits stand (removed here); the rest stays the base's.
    allowed = effective_config(base, head, allowed=True)
    assert allowed.gate.policy.max_cost_increase is None
    assert allowed.gate.policy.max_latency_p95_increase is None
    assert allowed.pricing == base.pricing and allowed.k == base.k
    assert allowed.gate.policy.block_on_any_regression == base.gate.policy.block_on_any_regression


@pytest.mark.parametrize(
    ("base", "head", "details"),
    [
        (
            "scoring: {by: environment, threshold: 1.0}",
            "scoring: {by: environment, threshold: 0.5}",
            ["scoring.threshold changes from 1.0 to 0.5"],
        ),
        (
            "scoring: {checks: required}",
            "scoring: {checks: reported}",
            ["scoring.checks is removed (it was 'required'; the default applies)"],
        ),
        (
            "scoring: {fields: {amount: {tolerance: 1}}}",
            "scoring: {fields: {amount: {tolerance: 50}}}",
            ["scoring.fields.amount.tolerance changes from 1.0 to 50.0"],
        ),
        (
            "scoring: {extract: {json_pointer: /decision}}",
            "scoring: {extract: {json_pointer: /answer}, fields: {action: exact}}",
            [
                "scoring.extract.json_pointer changes from '/decision' to '/answer'",
                "scoring.fields is set to {action: {compare: 'exact'}}",
            ],
        ),
    ],
)
def test_any_scoring_rule_changed_is_a_protected_change(
    base: str, head: str, details: list[str]
) -> None:
    """No order says which rules are stricter: every change decides which answers count.

    Each change is said in words, leaf by leaf: no JSON object (whose quotes
    become ``&quot;`` in the comment) is printed."""
    changes = protected_changes(
        snapshot(BASE_CONFIG + base + "\n"), snapshot(BASE_CONFIG + head + "\n")
    )
    assert [(c.kind, said(c.what)) for c in changes] == [
        (protect.SCORING_RULES_CHANGED, d) for d in details
    ]
    assert not any('"' in said(c.what) for c in changes)
    same = snapshot(BASE_CONFIG + base + "\n")
    assert protected_changes(same, snapshot(BASE_CONFIG + base + "\n")) == ()


def test_the_scoring_rules_come_from_the_base_unless_the_label_allows_the_head_s() -> None:
    base = parse_config(BASE_CONFIG, Path("/repo/passk.yml")).config
    head = parse_config(BASE_CONFIG + "scoring: {extract: {regex: '(approve|deny)'}}\n",
                        Path("/repo/passk.yml")).config  # fmt: skip
    assert effective_config(base, head).scoring == base.scoring
    assert effective_config(base, head, allowed=True).scoring == head.scoring


def test_strengthening_edits_are_not_protected_changes() -> None:
    stronger = BASE_CONFIG.replace("k: 3", "k: 5").replace("attempts: 3", "attempts: 4")
    rows = _rows(c={"must_not_break": True})
    rows.append({"id": "d", "input": 4, "expected": "deny"})
    head = snapshot(stronger + "scoring: {normalize: []}\n", rows)
    assert protected_changes(snapshot(), head) == ()
    # When the base does not block on any regression, an unprotected row may be removed
    # and relabeled freely (with the block on, every row is gated: tests/sides/test_gated_rows.py).
    lax = snapshot(NO_REGRESSION_BLOCK)
    assert protected_changes(lax, snapshot(NO_REGRESSION_BLOCK, BASE_ROWS[:2])) == ()
    relabeled = snapshot(NO_REGRESSION_BLOCK, _rows(c={"expected": "approve"}))
    assert protected_changes(lax, relabeled) == ()


NO_REGRESSION_BLOCK = BASE_CONFIG.replace("regression: true", "regression: false")


def test_a_ratchet_locked_row_keeps_its_input_after_losing_its_mark() -> None:
    # The base does not block on any regression (then every row is gated).
    base = snapshot(NO_REGRESSION_BLOCK)
    head = snapshot(NO_REGRESSION_BLOCK, _rows(c={"input": 30}))
    assert protected_changes(base, head) == ()  # c is unprotected...
    [change] = protected_changes(base, head, ratchet=("c", "gone"))
    assert (change.kind, change.id) == (protect.INPUT_CHANGED, "c")  # ...unless locked
    assert said(change.what).startswith("ratchet-locked row's input is changed")


@pytest.mark.parametrize(
    ("rows", "kind", "detail"),
    [
        (
            _rows(c={"expected": "approve"}),
            protect.LOCKED_ROW_RELABELED,
            "ratchet-locked row's expected label changes from 'deny' to 'approve'",
        ),
        (
            BASE_ROWS[:2],
            protect.LOCKED_ROW_REMOVED,
            "ratchet-locked row is removed from the dataset (the ratchet locked it "
            "stable-correct on a recorded baseline)",
        ),
    ],
)
def test_a_ratchet_locked_row_keeps_its_label_and_presence_after_losing_its_mark(
    rows: list[dict[str, Any]], kind: str, detail: str
) -> None:
    # The base does not block on any regression: only the lock protects row c.
    base, head = snapshot(NO_REGRESSION_BLOCK), snapshot(NO_REGRESSION_BLOCK, rows)
    [change] = protected_changes(base, head, ratchet=("c",))
    assert (change.kind, change.id, said(change.what)) == (kind, "c", detail)
    # Control: the same edit to a row no ratchet locks is the pull request's to make.
    assert protected_changes(base, head, ratchet=("a",)) == ()
    # The label the gate judges the locked row by stays the base's.
    gated = authoritative_dataset(base, head, allowed=False, ratchet=("c",)).by_id()
    if "c" in gated:
        assert gated["c"].expected == "deny"
        assert authoritative_dataset(base, head, allowed=False).by_id()["c"].expected == "approve"
        assert (
            authoritative_dataset(base, head, allowed=True, ratchet=("c",)).by_id()["c"].expected
            == "approve"
        )


def test_blocking_on_any_regression_protects_every_label_the_base_has() -> None:
    relabeled = _rows(c={"expected": "approve"})
    [change] = protected_changes(snapshot(), snapshot(rows=relabeled))
    assert (change.kind, change.id, said(change.what)) == (
        protect.ANY_ROW_RELABELED,
        "c",
        "row's expected label changes from 'deny' to 'approve' "
        "(gate.block_on_any_regression is on)",
    )
    assert (
        authoritative_dataset(snapshot(), snapshot(rows=relabeled), False).by_id()["c"].expected
        == "deny"
    )
    # Control: without the block, the same relabel is the pull request's to make.
    lax = snapshot(NO_REGRESSION_BLOCK)
    assert protected_changes(lax, snapshot(NO_REGRESSION_BLOCK, relabeled)) == ()
    # Rows the base lacks are the pull request's, labels included.
    added = [*BASE_ROWS, {"id": "d", "input": 4, "expected": "approve"}]
    assert protected_changes(snapshot(), snapshot(rows=added)) == ()


def test_an_input_is_compared_by_content_not_by_spelling() -> None:
    rows = [dict(BASE_ROWS[0], input={"amount": 900, "reason": "late"}), *BASE_ROWS[1:]]
    base = snapshot(rows=rows)
    respelled = [dict(rows[0], input={"reason": "late", "amount": 900}), *rows[1:]]
    assert protected_changes(base, snapshot(rows=respelled)) == ()
    swapped = [dict(rows[0], input={"amount": 900, "reason": "lost"}), *rows[1:]]
    [change] = protected_changes(base, snapshot(rows=swapped))
    assert (change.kind, change.id) == (protect.INPUT_CHANGED, "a")


def test_the_base_protects_rows_the_head_weakened() -> None:
    base = snapshot()
    head = snapshot(
        BASE_CONFIG.replace("vip, legal", "legal"),
        _rows(a={"must_not_break": False, "expected": "deny"}, b={"tags": []}),
    )
    rows = authoritative_dataset(base, head, allowed=False).by_id()
    assert (rows["a"].must_not_break, rows["a"].expected) == (True, "approve")
    assert rows["b"].must_not_break and not rows["c"].must_not_break
    allowed = authoritative_dataset(base, head, allowed=True).by_id()
    assert (allowed["a"].must_not_break, allowed["a"].expected) == (False, "deny")


def test_a_structured_relabel_and_new_checks_are_said_field_by_field() -> None:
    # Not two JSON objects full of quotes (`&quot;` in the comment): the fields that moved.
    config = BASE_CONFIG + "scoring: {fields: {action: exact, amount: {tolerance: 1}}}\n"
    row = {"id": "s", "input": 1, "must_not_break": True}
    was = {**row, "expected": {"action": "refund", "amount": 120}}
    now = {**row, "expected": {"action": "deny", "amount": 120}, "expected_checks": {"w": "ok"}}
    cfg = parse_config(config, Path("/repo/passk.yml")).config

    def inputs(record: dict[str, Any]) -> ProtectedInputs:
        text = (json.dumps(record) + "\n").encode()
        dataset = parse_dataset(text, "data.jsonl", "jsonl", cfg.must_not_break_tags, cfg.scoring)
        return ProtectedInputs(cfg, dataset, b"{}")

    changes = protected_changes(inputs(was), inputs(now))
    assert [(c.kind, c.id, said(c.what)) for c in changes] == [
        (
            protect.ROW_RELABELED,
            "s",
            "must-not-break row's expected decision changes: action 'refund' → 'deny'",
        ),
        (
            protect.ROW_RELABELED,
            "s",
            "must-not-break row's expected checks change from none to {w: 'ok'}",
        ),
    ]


def test_a_quiet_stop_that_ends_the_paired_comparison_early_is_a_protected_change() -> None:
    """Attack: stop comparing after 2 agreeing pairs, so a real drop rarely shows."""
    relative = BASE_CONFIG.replace(
        "gate: {block_on_any_regression: true}",
        "gate: {block_on_any_regression: true, rule: relative, sequential: {screen: sprt}}",
    )
    # The SPRT screen alone: the designed one adapts to its confirmation, so any change of
    # the confirmation moves it too (the designed screen's own tests are in tests/core).
    head = relative.replace("screen: sprt", "screen: sprt, pair_quiet: 2")
    [change] = protected_changes(snapshot(relative), snapshot(head))
    assert change.kind == protect.RULE_LOOSENED
    assert said(change.what).startswith("gate.sequential changes (pair_quiet -1 -> 2)")
    # Control: never stopping early (0) only reads more pairs: not a loosening.
    never = relative.replace("screen: sprt", "screen: sprt, pair_quiet: 0")
    assert protected_changes(snapshot(relative), snapshot(never)) == ()
