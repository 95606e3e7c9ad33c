"""``passk gate`` recomputes the gated-row rule from a result file alone (issue 20).

A result records its rule and settings (``policy.rule``, schema 3) and each
gated row's verdict beside the row; reading it back never trusts either: the
verdicts are judged again from the attempts, with the settings recorded.  An
older result (schema 1 or 2, golden ``tests/golden/artifacts/result_old_v2.json``
written by the passk before the rule) was decided by what is now the strict
rule, and is audited with it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main
from passk_action.core.sequential import STRICT, Decision, Finding, RuleSettings
from passk_action.errors import ArtifactError
from passk_action.report.notes import sentence
from passk_action.report.reasons import warnings
from passk_action.store.results import (
    RESULT_SCHEMA_VERSION,
    read_result,
    result_from_json,
    result_to_json,
    write_result,
)
from support.paths import TESTS
from support.scenarios import failed_scenario
from support.words import said

OLD = TESTS / "golden" / "artifacts" / "result_old_v2.json"


def test_a_result_records_its_rule_and_every_gated_rows_verdict(tmp_path: Path) -> None:
    result = failed_scenario()
    doc = result_to_json(result)
    assert doc["schema_version"] == RESULT_SCHEMA_VERSION == 7
    assert doc["policy"]["rule"] == result.policy.rule.to_json()
    verdicts = {row["id"]: row.get("verdict") for row in doc["rows"]}
    gated = {"refund-001", "refund-003", "refund-004"}
    assert {i for i, v in verdicts.items() if v is not None} == gated
    assert verdicts["refund-004"] == {
        "kind": "ratchet",
        "rule": "sequential",
        "decision": "pass",
        "finding": "within-chance",
        "candidate": {"attempts": 18, "decisions": 18, "wrong": 1, "errors": 0, "read": 18,
                      "wrong_read": 1, "ending": "reliable"},
        "baseline": {"attempts": 3, "decisions": 3, "wrong": 0, "errors": 0, "read": 3,
                     "wrong_read": 0, "ending": "not-tested"},
        "requests": [],
    }  # fmt: skip
    path = tmp_path / "result.json"
    write_result(result, path)
    audited = read_result(path)
    assert audited.consistent
    assert audited.result.gate == result.gate  # the verdicts too, judged again
    assert audited.result.policy == result.policy


def test_the_audit_judges_the_recorded_attempts_again_never_the_recorded_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: a result whose verdict says "pass" on a blocking row, and whose gate agrees."""
    doc = result_to_json(failed_scenario())
    for row in doc["rows"]:
        if "verdict" in row:
            row["verdict"]["decision"] = "pass"
    doc["gate"] = {"passed": True, "failures": [], "warnings": []}
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert not read_result(path).consistent
    assert main(["gate", str(path)]) == 1
    assert "does not match the gate recomputed" in capsys.readouterr().err
    # Control: the same file, untouched but for the verdicts' words, is consistent.
    doc = result_to_json(failed_scenario())
    for row in doc["rows"]:
        if "verdict" in row:
            row["verdict"]["decision"] = "pass"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert read_result(path).consistent
    assert main(["gate", str(path)]) == 1


def test_the_audit_uses_the_recorded_settings_and_refuses_bad_ones() -> None:
    doc = result_to_json(failed_scenario(strict=True))
    audited = result_from_json(json.loads(json.dumps(doc)), "r.json")
    assert audited.result.policy.rule.rule == STRICT and audited.consistent
    ids = [f.id for f in audited.result.gate.failures]
    assert ids == ["refund-001", "refund-003", "refund-004"]
    # The default rule's result read with the strict rule decides otherwise (refund-004's
    # one wrong answer in 18 blocks): the file's own rule is the one the audit uses.
    sequential = result_to_json(failed_scenario())
    assert result_from_json(json.loads(json.dumps(sequential)), "r.json").consistent
    sequential["policy"]["rule"]["rule"] = "strict"
    assert not result_from_json(sequential, "r.json").consistent
    doc["policy"]["rule"]["unreliable"] = 0.999
    with pytest.raises(ArtifactError, match=r"'policy\.rule' is not a valid rule"):
        result_from_json(doc, "r.json")
    del doc["policy"]["rule"]
    with pytest.raises(ArtifactError, match=r"'policy\.rule' is missing"):
        result_from_json(doc, "r.json")


def test_an_older_result_is_audited_with_the_rule_it_was_decided_by(
    capsys: pytest.CaptureFixture[str],
) -> None:
    audited = read_result(OLD)
    assert json.loads(OLD.read_text(encoding="utf-8"))["schema_version"] == 2
    assert audited.consistent  # passk gate agrees with the gate it recorded
    assert audited.result.policy.rule.rule == STRICT
    gate = audited.result.gate
    assert [(f.id, f.rule.value) for f in gate.failures] == [
        ("refund-001", "must-not-break"),
        ("refund-003", "unclassified"),
        ("refund-004", "ratchet"),
    ]
    # Its words were "(not-reproduced)" on a row that blocks; read now, they say why it blocks.
    assert said(audited.recorded_gate.failures[2]).endswith("(not-reproduced)")
    assert said(gate.failures[2]).endswith(
        "(right on every re-run; under the strict rule a wrong answer blocks)"
    )
    verdicts = {row_id: (v.decision, v.finding) for row_id, v in gate.verdicts.items()}
    assert verdicts == {
        "refund-001": (Decision.BLOCK, Finding.WRONG_ANSWER),
        "refund-003": (Decision.BLOCK, Finding.UNCLASSIFIED),
        "refund-004": (Decision.BLOCK, Finding.WRONG_ANSWER),
    }
    assert main(["gate", str(OLD)]) == 1
    out = capsys.readouterr().out
    assert "FAIL refund-004: [ratchet]" in out and "gate failed (3 failure(s))" in out
    assert main(["report", str(OLD)]) == 0
    assert "the strict rule blocks on any wrong answer" in capsys.readouterr().out


def test_a_result_newer_than_this_passk_is_refused(tmp_path: Path) -> None:
    doc = replace_version(result_to_json(failed_scenario()), RESULT_SCHEMA_VERSION + 1)
    with pytest.raises(ArtifactError, match="newer than this passk reads"):
        result_from_json(doc, "r.json")


def replace_version(doc: dict[str, Any], version: int) -> dict[str, Any]:
    """``doc`` as version ``version`` stores it: before 7, its notes and reasons in words."""
    if version >= 7:
        return {**doc, "schema_version": version}
    read = result_from_json(json.loads(json.dumps(doc)), "doc.json").result
    gate, settings = read.gate, read.policy.rule
    worded = {
        "passed": gate.passed,
        "failures": [{**f.to_json(), "reason": said(f, settings)} for f in gate.failures],
        "warnings": list(warnings(gate.warnings)),
    }
    notes = {key: [sentence(n) for n in getattr(read, key)] for key in ("notes", "warnings")}
    return {**doc, "schema_version": version, "gate": worded, **notes}


def test_a_replayed_verdict_equals_the_engines() -> None:
    """The verdicts evaluate records are the ones judged with nothing more possible."""
    result = failed_scenario()
    for verdict in result.gate.verdicts.values():
        assert verdict.decision is not Decision.MORE and verdict.requests == ()
    assert replace(result.gate, verdicts={}) != result.gate


def test_a_relative_rule_result_is_audited_from_its_recorded_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29: a result the relative rule decided (schema 5: the baseline's measurement
    attempts, the paired comparison's pairs) is judged again from its attempts alone, with the
    rule it records; the same file read with another paired alpha decides otherwise."""
    import random

    from passk_action.agents.protocol import AttemptRequest
    from passk_action.agents.runner import FunctionAgent
    from passk_action.agents.scheduler import RetryPolicy
    from passk_action.core.model import AgentInfo, Dataset, Row, Version, dataset_digest
    from passk_action.engine.agents import ReadyAgents
    from passk_action.engine.compare import compare
    from passk_action.engine.measuring import Measurement, measure_run, rows_to_measure
    from passk_action.engine.request import CandidateSource, CompareInputs
    from passk_action.engine.session import Session
    from passk_action.inputs.config import parse_config

    rows = tuple(
        Row(id=f"r{i}", input={"i": i}, expected="yes", must_not_break=True) for i in range(3)
    )
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))
    config = parse_config(
        "dataset: data.jsonl\nagent: {command: [c]}\nbaseline: {agent: {command: [b]}}\n"
        "retry: {attempts: 0}\ngate: {rule: relative}\n",
        tmp_path / "passk.yml",
    ).config

    def agent(accuracy: float, seed: str) -> FunctionAgent:
        def answer(request: AttemptRequest) -> dict[str, str]:
            right = random.Random(f"{seed}|{request.row.id}|{request.number}").random()
            return {"decision": "yes" if right < accuracy else "no"}

        return FunctionAgent(answer, seed)

    session = Session(concurrency=4, retry=RetryPolicy(attempts=0), now=lambda: "now")
    what = Measurement(
        dataset, rows, config.settings, tmp_path / "baseline.json",
        measured=rows_to_measure(config.gate.rule, rows, ()),
    )  # fmt: skip
    baseline, _ = measure_run(what, agent(0.85, "b"), AgentInfo(Version.BASELINE, "b"), session)
    inputs = CompareInputs(
        config=config,
        dataset=dataset,
        baseline=baseline,
        candidate=CandidateSource(out=tmp_path / "candidate.json"),
    )
    agents = ReadyAgents({Version.BASELINE: agent(0.85, "b2"), Version.CANDIDATE: agent(0.85, "c")})
    result = compare(inputs, agents, session)
    path = tmp_path / "result.json"
    write_result(result, path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 7 and doc["policy"]["rule"]["rule"] == "relative"
    audited = read_result(path)
    assert audited.consistent
    assert audited.result.gate == result.gate
    assert main(["gate", str(path)]) == (0 if result.gate.passed else 1)
    # Control: the same attempts audited with the second design's screen (an SPRT that
    # asks for more answers) decide otherwise: the file's own rule is the one audited.
    doc["policy"]["rule"]["screen"] = "sprt"
    assert not result_from_json(doc, "r.json").consistent


def test_a_result_of_the_relative_rule_s_first_design_is_audited_with_it(tmp_path: Path) -> None:
    """A schema-5 result lacks screen_cap, pair_z and direct_below: it was decided by the first
    design, and is audited with it; a schema-6 result lacking them is refused, not guessed."""
    from passk_action.core.relative import FIRST_DESIGN

    result = failed_scenario()
    first = {
        "rule": "relative", "screen_alpha": 0.15, "screen_beta": 0.03, "anchor_z": 1.5,
        "screen_cap": 0.99, "pair_z": 1.2816, "direct_below": 0.0,
    }  # fmt: skip
    doc = result_to_json(result)
    doc["policy"]["rule"].update(first)
    decided_by = RuleSettings(**doc["policy"]["rule"])
    old = json.loads(json.dumps(replace_version(doc, 5)))
    for name in FIRST_DESIGN:
        del old["policy"]["rule"][name]
    audited = result_from_json(old, "old.json")
    assert audited.result.policy.rule == decided_by
    # Control: the second design's defaults would not be the rule it was decided by.
    assert audited.result.policy.rule != RuleSettings(rule="relative")
    with pytest.raises(ArtifactError, match="lacks screen_cap"):
        result_from_json(replace_version(old, 6), "new.json")
