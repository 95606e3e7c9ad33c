"""Protected changes in a result: a kind and its fields, never a sentence (schema 7);
an older result's sentences still read and render as they were."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core import protected as p
from passk_action.core.gate import ProtectedChange, Rule
from passk_action.core.kinds import kind_from_json, kind_to_json
from passk_action.errors import ArtifactError
from passk_action.report.protected import RECORDED_FAILURE, change_said
from passk_action.store.results import dump_result, read_result, result_from_json
from support.paths import TESTS
from support.scenarios import failed_scenario

OLD = TESTS / "golden" / "artifacts" / "result_old_v2.json"
MNB = p.GatedBy.MUST_NOT_BREAK

# Every kind, and its words as `sides/protect` wrote them before they were data.
WORDS: list[tuple[p.Change, str]] = [
    (
        p.FileTypeChanged("passk.yml", "a regular file", "a symlink"),
        "passk.yml changes from a regular file to a symlink",
    ),
    (
        p.BaselineArtifactChanged(".passk/baseline.json", True),
        "the committed baseline artifact (.passk/baseline.json) is deleted by this pull request",
    ),
    (p.SettingLowered("k", 5, 3), "k is lowered from 5 to 3"),
    (p.RegressionBlockOff(), "gate.block_on_any_regression is turned off"),
    (
        p.RuleNoLongerStrict("relative"),
        "gate.rule changes from strict to relative (a wrong answer no longer blocks)",
    ),
    (
        p.RuleLoosened((p.SettingMoved("alpha", 0.05, 0.2),), 1.0, 0.7, 0.9, 0.5),
        "gate.sequential changes (alpha 0.05 -> 0.2): a gated row whose accuracy drops from "
        "100% to 70% would block 90.0% of the time, now 50.0%",
    ),
    (
        p.SpendLimitLoosened("gate.max_cost_increase", 0.25),
        "gate.max_cost_increase +25% is removed: with the allow label this pull request is "
        "held to no limit, the new setting; without it, to the base's +25%",
    ),
    (
        p.NormalizeChanged(("lower",), ()),
        "scoring.normalize changes from ['lower'] to []",
    ),
    (
        p.ScoringRulesChanged(
            (
                p.RuleEdit("scoring.fields.amount.tolerance", "1.0", "50.0"),
                p.RuleEdit("scoring.extract", None, '{"field": "answer"}'),
                p.RuleEdit("scoring.checks", '"reported"', None),
                p.RuleEdit("scoring.a", "1", "2"),
                p.RuleEdit("scoring.b", "1", "2"),
            )
        ),
        "scoring.fields.amount.tolerance changes from 1.0 to 50.0; scoring.extract is set to "
        "{field: 'answer'}; scoring.checks is removed (it was 'reported'; the default "
        "applies); scoring.a changes from 1 to 2; and 1 more",
    ),
    (
        p.ScorerChanged("score.py", False),
        "the scorer program's score.py is changed by this pull request (the gate runs the "
        "base commit's copy)",
    ),
    (
        p.WhenStaleChanged("remeasure", "use"),
        "baseline.when_stale changes from remeasure to use",
    ),
    (
        p.FingerprintChanged(("agent.py",), ()),
        "agent.fingerprint changes from ['agent.py'] to []",
    ),
    (p.TagUnprotected("vip"), "the tag 'vip' is removed from must_not_break.tags"),
    (p.RowRemoved(MNB), "must-not-break row is removed from the dataset"),
    (
        p.RowRemoved(p.GatedBy.RATCHET_LOCKED),
        "ratchet-locked row is removed from the dataset (the ratchet locked it stable-correct "
        "on a recorded baseline)",
    ),
    (
        p.InputChanged(p.GatedBy.ANY_REGRESSION),
        "row's input is changed (its baseline verdicts are for the old input) "
        "(gate.block_on_any_regression is on)",
    ),
    (
        p.LabelChanged(MNB, "approve", None),
        "must-not-break row's expected label changes from 'approve' to none (its environment "
        "scores it)",
    ),
    (
        p.ChecksChanged(MNB, "{}", '{"window": "ok"}'),
        "must-not-break row's expected checks change from none to {window: 'ok'}",
    ),
    (p.OwnMarkRemoved(), "must-not-break row's own mark is removed"),
    (p.TagsDropped(("a", "b")), "must-not-break row loses the protecting tag(s) a, b"),
    (p.RecordedFailure(), RECORDED_FAILURE),
    (p.WrittenChange("as the file says"), "as the file says"),
]


def test_every_kind_is_pinned_here() -> None:
    assert {type(c) for c, _ in WORDS} == set(p.Change.KINDS.values())


@pytest.mark.parametrize(("change", "words"), WORDS, ids=lambda v: type(v).__name__)
def test_each_kind_is_worded_as_before_and_round_trips(change: p.Change, words: str) -> None:
    assert change_said(change) == words
    doc = json.loads(json.dumps(kind_to_json(change)))
    assert kind_from_json(doc, p.Change.KINDS) == change


def _with_changes(tmp_path: Path) -> tuple[Path, tuple[ProtectedChange, ...]]:
    changes = tuple(
        ProtectedChange("some-kind", change, "refund-001" if i % 2 else None)
        for i, (change, _) in enumerate(WORDS)
        if not isinstance(change, p.WrittenChange)
    )
    doc = json.loads(dump_result(failed_scenario()))
    doc["protected_changes"] = [change.to_json() for change in changes]
    result = result_from_json(doc, "r.json").result  # its gate decided again, with them
    path = tmp_path / "result.json"
    path.write_text(dump_result(result), encoding="utf-8")
    return path, changes


def test_a_new_result_stores_each_protected_change_as_fields_not_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, changes = _with_changes(tmp_path)
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    for stored in doc["protected_changes"]:
        assert set(stored) == {"kind", "id", "what"}, stored
        assert stored["what"]["kind"] in p.Change.KINDS
    for change in changes:
        assert json.dumps(change_said(change.what))[1:-1] not in text  # no sentence stored
    for failure in doc["gate"]["failures"]:
        if failure["rule"] == Rule.PROTECTED_CHANGE.value:
            assert "detail" not in failure["reason"] and "what" in failure["reason"]
    audited = read_result(path)
    assert audited.consistent and audited.result.protected_changes == changes
    # Rendered, each reads as its words.
    assert main(["gate", str(path)]) == 1
    out = capsys.readouterr().out
    for change in changes:
        assert change_said(change.what) in out


def test_control_a_result_without_protected_changes_stores_none(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(dump_result(failed_scenario()), encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))["protected_changes"] == []
    assert read_result(path).consistent


OLD_WORDS = "must-not-break row's expected label changes from 'approve' to 'deny'"


def _old_with_a_change() -> dict[str, object]:
    doc = json.loads(OLD.read_text(encoding="utf-8"))
    doc["protected_changes"] = [
        {"kind": "must-not-break-row-relabeled", "detail": OLD_WORDS, "id": "refund-002"}
    ]
    gate = doc["gate"]
    gate["failures"] = [
        {"id": "refund-002", "rule": "protected-change", "reason": OLD_WORDS},
        *gate["failures"],
    ]
    return doc


def test_an_older_result_keeps_its_protected_change_sentences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_old_with_a_change()), encoding="utf-8")
    audited = read_result(path)
    (change,) = audited.result.protected_changes
    assert change == ProtectedChange(
        "must-not-break-row-relabeled", p.WrittenChange(OLD_WORDS), "refund-002"
    )
    assert audited.consistent
    assert main(["gate", str(path)]) == 1
    assert OLD_WORDS in capsys.readouterr().out
    # Written again, the sentence stays the words it was, as a kind of its own.
    assert kind_to_json(change.what) == {"kind": "written-change", "text": OLD_WORDS}


def test_a_sentence_in_a_new_result_is_one_line_naming_the_change() -> None:
    doc = json.loads(dump_result(failed_scenario()))
    doc["protected_changes"] = [{"kind": "k-lowered", "detail": "k is lowered", "id": None}]
    with pytest.raises(ArtifactError, match=r"protected_changes\[0\]: lacks 'what'"):
        result_from_json(doc, "r.json")
    doc["protected_changes"] = [{"kind": "k-lowered", "what": {"kind": "shrugged"}, "id": None}]
    with pytest.raises(ArtifactError, match=r"protected_changes\[0\]: 'what': 'kind' must be"):
        result_from_json(doc, "r.json")
    # Control: the same change as fields reads.
    fields = kind_to_json(p.SettingLowered("k", 3, 2))
    doc["protected_changes"] = [{"kind": "k-lowered", "what": fields, "id": None}]
    assert result_from_json(doc, "r.json").result.protected_changes[0].what == (
        p.SettingLowered("k", 3, 2)
    )


def test_an_old_result_written_again_is_a_valid_new_one(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_old_with_a_change()), encoding="utf-8")
    again = replace(read_result(path).result)
    rewritten = tmp_path / "again.json"
    rewritten.write_text(dump_result(again), encoding="utf-8")
    assert read_result(rewritten).result.protected_changes == again.protected_changes
