"""A protected change is judged by what it does to a gated row (``sides/protect.py``).

Issue 28, route 2: under ``block_on_any_regression`` relabeling a broken row
was a protected change, deleting it or changing its input was not.  Every
edit to a gated row is tried here under every setting that gates it (a
must-not-break mark, a must-not-break tag, the ratchet, any regression),
beside the same edit to a row nothing gates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from passk_action.inputs.config import parse_config
from passk_action.inputs.dataset import parse_dataset
from passk_action.report.protected import change_said as said
from passk_action.sides import protect
from passk_action.sides.protect import ProtectedInputs, gated_rows, protected_changes

CONFIG = """
dataset: data.jsonl
agent: {command: [python3, agent.py]}
must_not_break: {tags: [vip]}
gate: {block_on_any_regression: BLOCK}
"""
ROW = {"id": "x", "input": {"amount": 900}, "expected": "approve"}
OTHER = {"id": "y", "input": {"amount": 5}, "expected": "deny"}

# How the base gates row x: (its row's extra keys, the base's any-regression block, ratchet).
SETTINGS: dict[str, tuple[dict[str, Any], bool, tuple[str, ...]]] = {
    "must-not-break mark": ({"must_not_break": True}, False, ()),
    "must-not-break tag": ({"tags": ["vip"]}, False, ()),
    "ratchet-locked": ({}, False, ("x",)),
    "any regression": ({}, True, ()),
}
Edit = Callable[[list[dict[str, Any]]], None]
EDITS: dict[str, tuple[Edit, str]] = {
    "deleted": (lambda rows: rows.pop(0), "removed from the dataset"),
    "input changed": (lambda rows: rows[0].update(input={"amount": 5}), "input is changed"),
    "relabeled": (lambda rows: rows[0].update(expected="deny"), "expected label changes"),
    "checks changed": (
        lambda rows: rows[0].update(expected_checks={"window": "ok"}),
        "expected checks change",
    ),
}


def snapshot(block: bool, rows: list[dict[str, Any]]) -> ProtectedInputs:
    config = parse_config(CONFIG.replace("BLOCK", str(block).lower()), Path("/r/passk.yml"))
    text = "".join(json.dumps(row) + "\n" for row in rows)
    tags = config.config.must_not_break_tags
    dataset = parse_dataset(text.encode(), "data.jsonl", "jsonl", tags)
    return ProtectedInputs(config.config, dataset, b"{}")


def base_rows(setting: str) -> list[dict[str, Any]]:
    return [dict(ROW, **SETTINGS[setting][0]), dict(OTHER)]


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_every_edit_to_a_gated_row_is_protected_under_every_gating_setting(
    setting: str, edit: str
) -> None:
    _, block, ratchet = SETTINGS[setting]
    base = snapshot(block, base_rows(setting))
    rows = base_rows(setting)
    change, words = EDITS[edit]
    change(rows)
    changes = protected_changes(base, snapshot(block, rows), ratchet=ratchet)
    assert [(c.id, words in said(c.what)) for c in changes] == [("x", True)], changes


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_control_the_same_edit_to_a_row_nothing_gates_is_the_pull_requests(edit: str) -> None:
    rows = [dict(ROW), dict(OTHER)]
    base = snapshot(False, rows)
    edited = [dict(ROW), dict(OTHER)]
    EDITS[edit][0](edited)
    assert gated_rows(base, frozenset()) == {}
    assert protected_changes(base, snapshot(False, edited)) == ()


@pytest.mark.parametrize("setting", ["must-not-break mark", "must-not-break tag"])
def test_a_must_not_break_row_keeps_its_marks(setting: str) -> None:
    base = snapshot(False, base_rows(setting))
    unmarked = [dict(ROW, tags=["other"]), dict(OTHER)]
    [change] = protected_changes(base, snapshot(False, unmarked))
    assert (change.kind, change.id) == (protect.MARK_REMOVED, "x")


def test_under_any_regression_a_deleted_row_is_named_with_the_setting() -> None:
    base = snapshot(True, [dict(ROW), dict(OTHER)])
    [change] = protected_changes(base, snapshot(True, [dict(OTHER)]))
    assert (change.kind, change.id, said(change.what)) == (
        protect.ANY_ROW_REMOVED,
        "x",
        "row is removed from the dataset (gate.block_on_any_regression is on)",
    )
    assert gated_rows(base, frozenset({"y"})) == {
        "x": protect.ANY_REGRESSION,
        "y": protect.RATCHET_LOCKED,
    }
