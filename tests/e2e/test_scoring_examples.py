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
import os
import re
import shlex
import shutil
import subprocess
import sys
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


@pytest.mark.parametrize("example", ["refund-amounts", "bookings"])
def test_the_agent_answers_alike_per_attempt_and_as_a_worker(example: str) -> None:
    """passk.yml runs it as a worker; piped one request it answers once: the same answers."""
    folder = REPO / "examples" / example
    rows = [json.loads(line) for line in (folder / "data.jsonl").read_text().splitlines()]
    requests = [
        {"id": row["id"], "input": row["input"], "attempt": n, "version": "candidate"}
        for row in rows
        for n in (1, 2, 3)
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASSK_")}

    def agent(stdin: str, **extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "agent.py", "--policy", "v2"], input=stdin, text=True,
            capture_output=True, cwd=folder, env={**env, **extra}, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout

    lines = "".join(json.dumps({**r, "request_id": f"q{n}"}) + "\n" for n, r in enumerate(requests))
    worker = [json.loads(line) for line in agent(lines, PASSK_PROTOCOL="worker").splitlines()]
    echoed = [answer.pop("request_id") for answer in worker]
    assert echoed == [f"q{n}" for n in range(len(requests))]
    for n in (0, 4, len(requests) - 1):  # a few, one start-up each
        assert json.loads(agent(json.dumps(requests[n]))) == worker[n]
    assert len({json.dumps(answer, sort_keys=True) for answer in worker}) > 1
