"""The two scoring examples run as their READMEs say, and gate as they describe.

``examples/refund-amounts``: a structured decision (action and amount) whose
candidate keeps the action and drifts the amount on must-not-break rows.
``examples/bookings``: tasks a toy tau-bench environment scores by the final
state of its database.  Each example folder is copied to a scratch folder and
every ``passk`` command of its README's ``sh`` blocks runs there through the
CLI's ``main``, in order, exiting as the README says (``# exits N``, else 0).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main
from passk_action.store.artifact import read_run
from support.paths import REPO

FENCE = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_commands(example: str) -> list[tuple[list[str], int]]:
    text = (REPO / "examples" / example / "README.md").read_text(encoding="utf-8")
    found = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            command, _, comment = line.partition("#")
            if not command.strip():
                continue
            argv = shlex.split(command)
            assert argv[0] == "passk", line
            exits = re.fullmatch(r"\s*exits (\d+)\s*", comment)
            found.append((argv[1:], int(exits[1]) if exits else 0))
    return found


def run_readme(example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The README's commands in a scratch copy of the example; the result they wrote."""
    shutil.copytree(REPO / "examples" / example, tmp_path / "examples" / example)
    monkeypatch.chdir(tmp_path)
    commands = readme_commands(example)
    assert commands, f"examples/{example}/README.md has no passk command"
    for argv, expected in commands:
        assert main([*argv, *(["--quiet"] if argv[0] == "compare" else [])]) == expected, argv
    result: dict[str, Any] = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    return result


def blocking(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["id"], f["rule"]) for f in result["gate"]["failures"]]


def accuracy(result: dict[str, Any], side: str) -> str:
    return f"{result[side]['metrics']['mean_accuracy'] * 100:.1f}%"


def test_refund_amounts_fails_on_the_drifted_amounts_and_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_readme("refund-amounts", tmp_path, monkeypatch)
    assert blocking(result) == [("a-04", "must-not-break"), ("a-08", "must-not-break")]
    rows = {r["id"]: r for r in result["rows"]}
    assert rows["a-04"]["confirmation"] == "confirmed-regression"
    # The action never changed: every candidate answer on the row was a partial refund.
    candidate = result["candidate"]["run"]["attempts"]
    actions = {a["decision"]["action"] for a in candidate if a["row"] in ("a-04", "a-08")}
    assert actions == {"partial_refund"}
    readme = (REPO / "examples" / "refund-amounts" / "README.md").read_text(encoding="utf-8")
    assert f"({accuracy(result, 'baseline')} to {accuracy(result, 'candidate')})" in readme
    report = (tmp_path / "report.md").read_text(encoding="utf-8").replace("\\", "")
    for line in re.findall(r"^- (?:expected|field|\*\*evidence).*$", readme, re.MULTILINE):
        assert line in report, line


def test_bookings_fails_on_a_task_its_environment_scored_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_readme("bookings", tmp_path, monkeypatch)
    # t-01 looks stable-correct on its k main attempts: the relative rule's further
    # attempts show its regression (the sequential rule, reading fewer, passed it).
    assert blocking(result) == [("t-01", "must-not-break"), ("t-09", "must-not-break")]
    rows = {r["id"]: r for r in result["rows"]}
    assert rows["t-09"]["first_divergent_check"]["check"] == "tools"
    assert all("expected" not in r for r in result["rows"])  # the environment scores them
    attempts = result["candidate"]["run"]["attempts"]
    assert {(a["decision"], a["score"]) for a in attempts} == {("success", 1.0), ("failure", 0.0)}
    readme = (REPO / "examples" / "bookings" / "README.md").read_text(encoding="utf-8")
    assert f"({accuracy(result, 'baseline')} to {accuracy(result, 'candidate')})" in readme
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    for line in re.findall(r"^- (?:expected|\*\*evidence).*$", readme, re.MULTILINE):
        assert line in report, line
    assert "## Intermediate checks" in report
    assert re.search(r"^\| `tools` \| 83\.3% \| 80\.0% \| 10\.0% \|", report, re.MULTILINE)


@pytest.mark.parametrize("example", ["refund-amounts", "bookings"])
def test_the_committed_baseline_is_what_the_baseline_agent_answers_now(
    example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed baseline that no longer matches its agent would tell a stale story."""
    folder = tmp_path / example
    shutil.copytree(REPO / "examples" / example, folder)
    committed = read_run(folder / ".passk" / "baseline.json")
    (folder / ".passk" / "baseline.json").unlink()
    monkeypatch.chdir(tmp_path)
    config = str(folder / "passk.yml")
    assert main(["baseline", "--config", config, "--agent", "baseline.agent", "--quiet"]) == 0
    fresh = read_run(folder / ".passk" / "baseline.json")

    def answers(run: Any) -> list[tuple[Any, ...]]:
        return [(a.row_id, a.number, a.decision, a.checks, a.score) for a in run.attempts]

    assert answers(fresh) == answers(committed)
    assert fresh.settings == committed.settings and fresh.ratchet == committed.ratchet
