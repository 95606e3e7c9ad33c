"""``passk report --format json``: a lean report of a result, not the result file again.

The result file holds every attempt of both runs (gigabytes at scale); the
report holds the gate, the metrics, the comparison rows and the analysis.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main
from passk_action.core.analysis import analyze
from passk_action.store.artifact import write_run
from passk_action.store.results import read_result, result_to_json, write_result
from support.paths import TESTS
from support.scenarios import failed_scenario, passed_scenario

REPORT_KEYS = [
    "gate",
    "baseline",
    "candidate",
    "gained",
    "lost",
    "rows",
    "notes",
    "executions",
    "analysis",
    "spend",
]


def report_of(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert main(["report", str(path), "--format", "json"]) == 0
    text = capsys.readouterr().out
    doc: dict[str, Any] = json.loads(text)
    return doc, text


def attempts_lists(value: Any, where: str = "") -> list[str]:
    """Every place in a JSON value holding a list under an ``attempts`` key."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "attempts" and isinstance(item, list):
                found.append(f"{where}.{key}")
            found += attempts_lists(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += attempts_lists(item, f"{where}[{i}]")
    return found


@pytest.mark.parametrize("scenario", [failed_scenario, passed_scenario])
def test_the_json_report_of_a_result_is_lean_and_matches_the_recomputed_gate(
    scenario: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "result.json"
    write_result(scenario(), path)
    report, _ = report_of(path, capsys)
    assert list(report) == REPORT_KEYS
    result = read_result(path).result
    assert report["gate"] == result.gate.to_json()
    whole = result_to_json(result)
    assert report["baseline"] == {"metrics": whole["baseline"]["metrics"]}
    assert report["candidate"] == {"metrics": whole["candidate"]["metrics"]}
    for key in ("gained", "lost", "rows", "notes", "executions"):
        assert report[key] == whole[key], key
    assert report["analysis"] == json.loads(json.dumps(analyze(result).to_json()))
    assert attempts_lists(report) == []
    # The control: the whole result does hold them, so the walk can find them.
    assert attempts_lists(whole) == [".baseline.run.attempts", ".candidate.run.attempts"]


def test_the_gate_is_the_recomputed_one_not_what_the_file_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "result.json"
    write_result(failed_scenario(), path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["gate"] = {"passed": True, "failures": [], "warnings": []}
    path.write_text(json.dumps(doc), encoding="utf-8")  # and not in our streamed layout
    report, _ = report_of(path, capsys)
    assert report["gate"]["passed"] is False
    assert [f["id"] for f in report["gate"]["failures"]] == ["refund-001", "refund-003"]


def test_the_json_report_writes_one_row_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "result.json"
    write_result(failed_scenario(), path)
    report, text = report_of(path, capsys)
    row_lines = [line for line in text.splitlines() if line.startswith('    {"id":')]
    assert [json.loads(line.rstrip(","))["id"] for line in row_lines] == [
        r["id"] for r in report["rows"]
    ]
    assert '\n  "gate": {\n    "passed": false,' in text  # the rest stays indented


def test_the_json_report_of_a_run_adds_its_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.json"
    write_run(failed_scenario().baseline, path)
    report, _ = report_of(path, capsys)
    assert list(report) == ["metrics", "errors_by_reason", "rows", "analysis", "spend"]
    # the baseline of the failed scenario reports tokens and cost on every decision
    assert report["spend"]["decisions_with_cost"] == report["spend"]["decisions"] == 21
    assert report["spend"]["cost_per_decision_usd"] > 0
    assert report["analysis"]["version"] == "baseline"
    assert report["analysis"]["pass_k"]["estimate"] == report["metrics"]["pass_k"]
    # Agresti-Coull on the 7 row means with t_{0.975, 6}, a row worth 68/63 answers (test_render).
    assert report["analysis"]["mean_accuracy"]["ci95"] == [
        pytest.approx(0.3796954352659509),
        1.0,
    ]
    assert report["analysis"]["mean_accuracy"]["interval"] == "agresti-coull-t"
    assert attempts_lists(report) == []


GOLDEN = TESTS / "golden" / "reports"


def assert_golden_json(name: str, text: str) -> None:
    """The whole JSON report, key for key: its keys are an interface scripts read."""
    path = GOLDEN / name
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8", newline="")
        return
    if not path.exists():
        pytest.fail(f"{path} is missing: run with PASSK_UPDATE_GOLDEN=1 to create it")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs; PASSK_UPDATE_GOLDEN=1"


@pytest.mark.parametrize(
    ("name", "scenario"), [("failed", failed_scenario), ("passed", passed_scenario)]
)
def test_the_json_report_of_a_result_matches_its_golden_file(
    name: str, scenario: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "result.json"
    write_result(scenario(), path)
    _, text = report_of(path, capsys)
    assert_golden_json(f"report_{name}.json", text)


def test_the_json_report_of_an_imported_run_matches_its_golden_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    imported = TESTS / "golden" / "importers" / "tau_bench_retail.run.json"
    _, text = report_of(imported, capsys)
    assert_golden_json("report_run_imported.json", text)
