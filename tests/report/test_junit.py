"""JUnit XML: golden files for the render scenarios, and the rules they are meant to show.

Regenerate the golden files after an intended change with::

    PASSK_UPDATE_GOLDEN=1 python -m pytest tests/report/test_junit.py -q

then read the diff of ``tests/golden/reports/`` before committing it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core.gate import GatePolicy, ProtectedChange
from passk_action.core.model import Phase, Version
from passk_action.core.protected import SettingLowered
from passk_action.report.junit import junit_for_result, junit_for_run, suite_name
from passk_action.store.artifact import write_run
from passk_action.store.results import write_result
from support.report_goldens import assert_golden
from support.scenarios import (
    Attempts,
    compare,
    failed_scenario,
    hostile_scenario,
    make_run,
    passed_scenario,
    row,
    spend_limits_scenario,
)
from support.words import said

SCENARIOS = {"failed": failed_scenario, "passed": passed_scenario, "hostile": hostile_scenario}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_compare_junit_golden(name: str) -> None:
    assert_golden(f"junit_{name}.xml", junit_for_result(SCENARIOS[name](), suite="refunds"))


def test_run_junit_golden() -> None:
    run = failed_scenario().candidate
    assert_golden("junit_run_failed.xml", junit_for_run(run, suite="refunds"))


def cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml.encode("utf-8"))
    return {case.attrib["name"]: case for case in root.iter("testcase")}


def test_a_row_fails_exactly_when_it_blocks_the_gate() -> None:
    result = failed_scenario()
    xml = junit_for_result(result, suite="refunds")
    found = cases(xml)
    failed = {name for name, case in found.items() if case.find("failure") is not None}
    assert failed == {f.id for f in result.gate.failures}
    assert failed == {"refund-001", "refund-003"}
    # refund-004, one wrong answer in 18 and passed by the rule: a passing test that says so.
    out = found["refund-004"].find("system-out")
    assert out is not None and (out.text or "").startswith(
        "lost, but the gate's rule does not block it"
    )
    assert "gate rule: 1 wrong of 18 attempts; baseline 0 of 3; within what a row" in (
        out.text or ""
    )
    failure = found["refund-001"].find("failure")
    assert failure is not None
    assert failure.attrib["type"] == "must-not-break"
    assert failure.attrib["message"] == "must-not-break: " + said(result.gate.failures[0])
    assert "first divergent check return_window" in (failure.text or "")
    assert found["refund-001"].attrib["classname"] == "passk.refunds"
    # refund-002 was lost but is not must-not-break: a passing test that says so.
    lost = found["refund-002"]
    assert lost.find("failure") is None
    out = lost.find("system-out")
    assert out is not None and (out.text or "").startswith("lost, but does not block the gate")
    out = found["refund-006"].find("system-out")
    assert out is not None and "check flipped while the decision held: proof_of_purchase" in (
        out.text or ""
    )
    # A row that stayed stable-correct, checks and all, has no output at all.
    quiet = cases(junit_for_result(passed_scenario(), suite="claims"))
    assert list(quiet["claim-a"]) == [] and list(quiet["claim-b"]) == []
    assert list(quiet["claim-d"]) != []  # stable-wrong on both: still worth a line


def test_suite_counts_and_the_three_numbers_as_properties() -> None:
    result = failed_scenario()
    root = ET.fromstring(junit_for_result(result, suite="refunds").encode("utf-8"))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.attrib["tests"], suite.attrib["failures"]) == ("7", "2")
    assert root.attrib["failures"] == "2"
    props = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
    m = result.comparison.candidate_metrics
    assert props["candidate.mean_accuracy"] == f"{m.mean_accuracy:.4f}"
    assert props["candidate.pass_k"] == f"{m.pass_k:.4f}"
    assert props["candidate.flip_rate"] == f"{m.flip_rate:.4f}"
    assert props["baseline.pass_k"] == "0.7143"
    assert props["gate"] == "failed"


def test_protected_changes_are_extra_testcases_failed_unless_allowed() -> None:
    rows = [row("a", "pay", mnb=True)]
    base = make_run(Version.BASELINE, rows, Attempts().ok("a", "pay", times=3), "b", None)
    cand = make_run(Version.CANDIDATE, rows, Attempts().ok("a", "pay", times=3), "c", None)
    change = ProtectedChange("k-lowered", SettingLowered("k", 5, 3))
    blocked = cases(junit_for_result(compare(rows, base, cand, protected=[change]), suite="x"))
    case = blocked["protected change: k-lowered"]
    assert case.attrib["classname"] == "passk.x.protected"
    failure = case.find("failure")
    assert failure is not None and failure.attrib["message"].endswith("k is lowered from 5 to 3")
    allowed = cases(
        junit_for_result(
            compare(rows, base, cand, protected=[change], protected_allowed=True), suite="x"
        )
    )
    assert allowed["protected change: k-lowered"].find("failure") is None


def test_a_recorded_failure_fails_its_testcase_even_with_the_allow_label() -> None:
    """The label allows protected changes, never an earlier failure of the same commit."""
    from passk_action.core.gate import RECORDED_FAILURE_KIND
    from passk_action.core.protected import RecordedFailure

    rows = [row("a", "pay", mnb=True)]
    base = make_run(Version.BASELINE, rows, Attempts().ok("a", "pay", times=3), "b", None)
    cand_attempts = Attempts().ok("a", "pay", times=3).ok("a", "pay", phase=Phase.CONFIRM, times=4)
    cand = make_run(Version.CANDIDATE, rows, cand_attempts, "c", None)
    standing = ProtectedChange(RECORDED_FAILURE_KIND, RecordedFailure())
    result = compare(rows, base, cand, protected=[standing], protected_allowed=True)
    assert not result.gate.passed
    xml = junit_for_result(result, suite="x")
    assert ET.fromstring(xml.encode("utf-8")).attrib["failures"] == "1"
    case = cases(xml)["protected change: recorded-failure"]
    failure = case.find("failure")
    assert failure is not None and failure.attrib["type"] == "recorded-failure"
    assert failure.attrib["message"] == f"recorded-failure: {said(result.gate.failures[0])}"


def test_spend_limits_are_extra_testcases_failed_with_the_gates_reason() -> None:
    """A gate failed on cost alone is not an all-green test report."""
    result = spend_limits_scenario()
    xml = junit_for_result(result, suite="x")
    root = ET.fromstring(xml.encode("utf-8"))
    assert (root.attrib["tests"], root.attrib["failures"]) == ("4", "2")
    found = cases(xml)
    for name, failure in zip(("cost limit", "latency limit"), result.gate.failures, strict=True):
        assert found[name].attrib["classname"] == "passk.x.spend"
        element = found[name].find("failure")
        assert element is not None
        assert element.attrib["message"] == f"{failure.rule.value}: {said(failure)}"
        assert element.text == said(failure)
    within = spend_limits_scenario(GatePolicy(max_cost_increase=1.0))
    found = cases(junit_for_result(within, suite="x"))
    assert found["cost limit"].find("failure") is None and "latency limit" not in found


def test_hostile_values_give_well_formed_xml_with_the_ids_intact() -> None:
    result = hostile_scenario()
    xml = junit_for_result(result, suite="my suite.v2 <x>")
    found = cases(xml)  # parses: the NUL in the error detail was replaced
    assert {r.id for r in result.rows} <= set(found)
    assert "\x00" not in xml
    assert {c.attrib["classname"] for c in found.values()} >= {"passk.my_suite_v2_x"}


def test_run_junit_fails_must_not_break_rows_that_are_not_stable_correct() -> None:
    run = failed_scenario().candidate
    found = cases(junit_for_run(run, suite="refunds"))
    failed = {name for name, case in found.items() if case.find("failure") is not None}
    # refund-001 (flip) and refund-003 (unclassified) are must-not-break and shaky;
    # refund-004 is flipping too but not marked, so it only says so.
    assert failed == {"refund-001", "refund-003"}
    unclassified = found["refund-003"].find("failure")
    assert unclassified is not None and unclassified.attrib["type"] == "unclassified"
    out = found["refund-004"].find("system-out")
    assert out is not None and "flip" in (out.text or "")


def test_suite_name_is_one_classname_segment() -> None:
    assert suite_name("refunds.v2") == "refunds_v2"
    assert suite_name("...") == "dataset"
    assert suite_name("claims-EU_1") == "claims-EU_1"


def test_passk_report_format_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = failed_scenario()
    write_result(result, tmp_path / "pr-42.json")
    write_run(result.candidate, tmp_path / "candidate.json")
    assert main(["report", str(tmp_path / "pr-42.json"), "--format", "junit"]) == 0
    found = cases(capsys.readouterr().out)
    assert {c.attrib["classname"] for c in found.values()} == {"passk.pr-42"}
    assert {n for n, c in found.items() if c.find("failure") is not None} == {
        "refund-001",
        "refund-003",
    }
    out = tmp_path / "junit.xml"
    code = main(
        [
            "report",
            str(tmp_path / "candidate.json"),
            "--format",
            "junit",
            "--suite",
            "refunds",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    run_cases = cases(out.read_text(encoding="utf-8"))
    assert run_cases["refund-003"].attrib["classname"] == "passk.refunds"
    assert run_cases["refund-003"].find("failure") is not None
