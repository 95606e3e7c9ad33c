"""A result stores its notes, warnings and gate reasons as kinds with fields, never sentences.

Golden files in ``tests/golden/artifacts/``: ``result_v7.json`` (this passk's format, bytes
pinned: regenerate with ``PASSK_UPDATE_GOLDEN=1`` after a deliberate change),
``result_old_v2.json`` (sentences, from before the kinds) and ``result_invalid_v7.json`` (a
note of a kind no passk writes).  Each is read, audited by ``passk gate`` and rendered.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from passk_action.cli import main
from passk_action.core import notes as n
from passk_action.core import reasons as r
from passk_action.core.cost import Unchecked
from passk_action.core.diff import Confirmation
from passk_action.core.kinds import kind_from_json, kind_to_json
from passk_action.core.model import RowClass
from passk_action.core.notes import (
    NOTE_KINDS,
    ConfirmationSkipped,
    RelabeledRows,
    SkipReason,
    StaleBaseline,
    StaleBaselineHandled,
    StalePolicy,
    WhereFrom,
    Written,
)
from passk_action.core.protected import GatedBy, LabelChanged, WrittenChange
from passk_action.core.reasons import REASON_KINDS, WARNING_KINDS, VerdictBlocks, WrittenReason
from passk_action.core.sequential import OPTIMAL, SPRT
from passk_action.errors import ArtifactError
from passk_action.report.notes import sentence
from passk_action.store.results import dump_result, read_result, result_from_json
from support.paths import TESTS
from support.scenarios import failed_scenario
from support.words import said

GOLDEN = TESTS / "golden" / "artifacts"
NEW = GOLDEN / "result_v7.json"
OLD = GOLDEN / "result_old_v2.json"
INVALID = GOLDEN / "result_invalid_v7.json"
UPDATE = os.environ.get("PASSK_UPDATE_GOLDEN") == "1"

STALE = StaleBaseline("a" * 40, "b" * 40, ("agent.py",), ("agent.py",))
NOTES = (RelabeledRows(("refund-005",)),)
WARNINGS = (
    StaleBaselineHandled(STALE, StalePolicy.USED_ANYWAY),
    ConfirmationSkipped(2, SkipReason.NO_BASELINE_AGENT, WhereFrom.BASE_REF, "main"),
)


def _result():  # type: ignore[no-untyped-def]
    return replace(failed_scenario(), notes=NOTES, warnings=WARNINGS)


def test_this_passks_result_matches_its_golden_file() -> None:
    text = dump_result(_result())
    if UPDATE:
        NEW.write_text(text, encoding="utf-8")
    assert text == NEW.read_text(encoding="utf-8"), "result_v7.json differs; PASSK_UPDATE_GOLDEN=1"


def test_a_result_stores_kinds_and_reads_them_back_as_they_were() -> None:
    doc = json.loads(NEW.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 7
    assert doc["notes"] == [{"kind": "relabeled-rows", "ids": ["refund-005"]}]
    assert doc["warnings"][1] == {
        "kind": "confirmation-skipped",
        "lost": 2,
        "reason": "no-baseline-agent",
        "baseline_from": "base-ref",
        "base_ref": "main",
    }
    assert all(isinstance(f["reason"], dict) for f in doc["gate"]["failures"])
    audited = read_result(NEW)
    assert audited.consistent
    assert audited.result.notes == NOTES and audited.result.warnings == WARNINGS
    assert audited.recorded_gate.failures == audited.result.gate.failures
    assert isinstance(audited.result.gate.failures[0].reason, VerdictBlocks)


def test_the_new_result_is_audited_and_rendered_in_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["gate", str(NEW)]) == 1
    out = capsys.readouterr().out
    failure = read_result(NEW).result.gate.failures[0]
    assert f"FAIL refund-001: [must-not-break] {said(failure)}" in out
    assert main(["report", str(NEW)]) == 0
    report = capsys.readouterr().out
    assert f"- {sentence(NOTES[0])}" in report
    # The warning's backticks are escaped in the Markdown; its words are the renderers' own.
    assert sentence(WARNINGS[1]).split("; to confirm")[0] in report
    assert "relabeled-rows" not in report  # words, never the stored kind


def test_an_older_result_keeps_its_sentences_as_words() -> None:
    doc = json.loads(OLD.read_text(encoding="utf-8"))
    audited = read_result(OLD)
    assert audited.result.notes == tuple(Written(text) for text in doc["notes"])
    recorded = audited.recorded_gate.failures
    assert [f.reason for f in recorded] == [
        WrittenReason(f["reason"]) for f in doc["gate"]["failures"]
    ]
    # Written again, an older note stays the words it was (a kind of its own).
    assert kind_to_json(audited.result.notes[0]) == {"kind": "written", "text": doc["notes"][0]}


def test_a_note_of_an_unknown_kind_is_one_line_naming_where(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ArtifactError, match=r"notes\[0\]: 'kind' must be one of .*'thanked'"):
        read_result(INVALID)
    assert main(["gate", str(INVALID)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"passk: error: {INVALID}: notes[0]")


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("notes", "1 row was relabeled", r"notes\[0\]: must be an object with a 'kind'"),
        ("notes", {"kind": "relabeled-rows"}, r"notes\[0\]: relabeled-rows lacks its field 'ids'"),
        (
            "notes",
            {"kind": "relabeled-rows", "ids": "r1"},
            r"notes\[0\]: relabeled-rows\.ids must be a list",
        ),
        (
            "notes",
            {"kind": "relabeled-rows", "ids": ["r1"], "why": "x"},
            r"notes\[0\]: relabeled-rows has no field 'why'",
        ),
        (
            "warnings",
            {"kind": "confirmation-skipped", "lost": 1, "reason": "bored"},
            r"warnings\[0\]: confirmation-skipped\.reason must be one of",
        ),
    ],
)
def test_a_damaged_note_is_one_line_naming_its_key(where: str, value: object, message: str) -> None:
    doc = json.loads(NEW.read_text(encoding="utf-8"))
    doc[where] = [value]
    with pytest.raises(ArtifactError, match=message):
        result_from_json(doc, "r.json")
    # Control: the same document with its own notes reads.
    assert result_from_json(json.loads(NEW.read_text(encoding="utf-8")), "r.json").consistent


def test_a_sentence_in_a_new_result_is_refused_and_a_kind_in_an_old_one_too() -> None:
    """A version says how its notes are kept: words in a 7 or a kind in a 6 are damage."""
    doc = json.loads(NEW.read_text(encoding="utf-8"))
    doc["gate"]["failures"][0]["reason"] = "looks fine to me"
    with pytest.raises(ArtifactError, match=r"gate\.failures\[0\]\.reason: must be an object"):
        result_from_json(doc, "r.json")
    old = json.loads(NEW.read_text(encoding="utf-8"))
    old["schema_version"] = 6
    with pytest.raises(ArtifactError, match=r"notes\[0\]: must be a string in a version-6"):
        result_from_json(old, "r.json")


def _examples() -> list[object]:
    """One value of every kind a result stores."""
    gate = read_result(NEW).result.gate
    return [
        *NOTES,
        *WARNINGS,
        STALE,
        n.DroppedRows(("r1",)),
        n.ToppedUp(("r1", "r2"), 6),
        n.AddedRowsNotMeasured(("r9",), 3),
        n.BaselineReused(),
        n.Rescored("the committed baseline", 9, 1),
        n.RatchetExits(("r1",)),
        n.BaselineAgeUnknown("c" * 40),
        n.BaselineBehind("c" * 40, "d" * 40, 3, ("a.py",)),
        n.Remeasured(STALE, None, 9, 3, 3),
        n.RemeasuredOnRequest("passk-remeasure"),
        n.RecordedCandidate(12),
        n.MeasuredByPullRequest(9, 2),
        n.VerdictsReused(9, 0, "e" * 40),
        n.NothingRun(),
        n.GatedRowsAsRecorded(("r1",), "candidate", SkipReason.NO_AGENT),
        Written("an older note"),
        n.HeadSettingsIgnored("passk.yml", ("k", "retry.attempts")),
        n.HeadLimitCapped("passk.yml", "agent.timeout_s", 3600.0, 30.0, "s"),
        *(f.reason for f in gate.failures),
        r.StrictUnclassified(True, False),
        r.StrictLost(RowClass.FLIP, RowClass.STABLE_CORRECT, Confirmation.BASELINE_VARIES),
        r.ProtectedChangeMade("row-expected", LabelChanged(GatedBy.MUST_NOT_BREAK, "pay", None)),
        r.CostUnreported(2, 9),
        r.OverLimit("gate.max_cost_increase", 0.01, 0.02, 1.0, 0.25, 0.5),
        WrittenReason("an older reason"),
        r.ProtectedChangeAllowed("baseline-changed", WrittenChange("the baseline was re-recorded")),
        r.LimitUnchecked("gate.max_latency_p95_increase", Unchecked.FEW_ATTEMPTS, 3),
        r.WithinNoise("gate.max_latency_p95_increase", 1.0, 1.3, 0.3, 0.25, None, 0.2),
        r.JudgeNoiseOnly("r1"),
        r.JudgeNoiseSeen(1, 4, 2, 6, (r.RowNoise("r1", 3, 10),)),
        r.GatedRowsUnmeasured(("m", "n"), 3, 60),
        r.WrittenWarning("an older warning"),
    ]


def test_every_kind_round_trips_through_json_under_its_own_name() -> None:
    examples = _examples()
    stored = {type(e).__name__ for e in examples}
    every = {
        cls.__name__
        for kinds in (NOTE_KINDS, REASON_KINDS, WARNING_KINDS)
        for cls in kinds.values()
    }
    assert every <= stored  # a kind added without an example here is not yet pinned
    for example in examples:
        doc = json.loads(json.dumps(kind_to_json(example)))
        kinds = {**NOTE_KINDS, **REASON_KINDS, **WARNING_KINDS}
        assert kind_from_json(doc, kinds) == example
    assert kind_to_json(n.BaselineReused()) == {"kind": "baseline-reused"}


def test_a_result_written_before_the_quiet_stop_is_audited_without_it() -> None:
    # Its rule has no pair_quiet: it was decided reading pairs to the cap, and is audited so.
    before = GOLDEN / "result_v7_before_quiet.json"
    assert "pair_quiet" not in before.read_text(encoding="utf-8")
    audited = read_result(before)
    assert audited.consistent and audited.result.policy.rule.pair_quiet == 0
    # Control: this passk writes the setting, at its default (from the drop).
    assert read_result(NEW).result.policy.rule.pair_quiet == -1


def test_a_result_written_before_the_designed_screen_is_audited_with_the_sprt() -> None:
    """A rule without ``screen`` was decided by the SPRT screen, and is audited with it
    (tests/cli/test_gate_audit.py: the same attempts under another screen decide otherwise)."""
    before = GOLDEN / "result_v7_before_quiet.json"
    assert '"screen"' not in before.read_text(encoding="utf-8")
    audited = read_result(before)
    assert audited.consistent and audited.result.policy.rule.screen == SPRT
    # Control: this passk writes the setting, the designed screen.
    assert read_result(NEW).result.policy.rule.screen == OPTIMAL
