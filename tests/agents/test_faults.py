"""Agent faults and transient errors, end to end through ``passk run`` and ``passk report``.

The runner tests (``test_runner.py``) prove each fault on its own; these prove
the promise users read in the issue: a run with every kind of misbehaving
agent *completes*, every fault becomes an error attempt with a clear reason
(never a decision), and the report counts errors per row and per reason.
Retries: error attempts are retried with backoff, decisions never are.

The agent is a small dispatcher (written per test) that plays the fault a
row asks for and hands every other row to the shipped scripted agent.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main

DISPATCHER = r"""
import json, os, subprocess, sys, time

row = os.environ["PASSK_ROW_ID"]
attempt = os.environ["PASSK_ATTEMPT"]
state = os.environ["STATE_DIR"]
fd = os.open(os.path.join(state, "calls.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
os.write(fd, (json.dumps({"id": row, "attempt": int(attempt)}) + "\n").encode())
os.close(fd)

if row.startswith("flood"):  # writes to stdout forever
    sys.stdin.read()
    while True:
        sys.stdout.write("x" * 65536)
elif row.startswith("deaf-hang"):  # never reads its (large) input, never answers
    time.sleep(60)
elif row.startswith("deaf"):  # never reads its (large) input, answers anyway
    print(json.dumps({"decision": "deny"}), flush=True)
elif row.startswith("orphan"):  # leaves a grandchild behind, then hangs
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(os.path.join(state, f"orphan-{attempt}.pid"), "w") as handle:
        handle.write(str(child.pid))
    time.sleep(60)
elif row.startswith("transient"):  # fails the first try of every attempt
    marker = os.path.join(state, f"failed-{row}-{attempt}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        sys.exit("503 service unavailable")
    sys.stdin.read()
    print(json.dumps({"decision": "deny"}))
elif row.startswith("down"):  # fails every try
    sys.exit("503 service unavailable")
else:
    os.execv(sys.executable, [sys.executable, "-m", "passk_action.testing.scripted_agent",
                              "script.json"])
"""


@dataclass
class Project:
    root: Path

    @property
    def config(self) -> str:
        return str(self.root / "passk.yml")

    @property
    def state(self) -> Path:
        return self.root / "state"

    def write(self, rows: list[dict[str, Any]], script: dict[str, Any], **config: Any) -> None:
        (self.root / "data.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
        )
        (self.root / "script.json").write_text(
            json.dumps({"default": "deny", "rows": script}), encoding="utf-8"
        )
        (self.root / "agent.py").write_text(DISPATCHER, encoding="utf-8")
        self.state.mkdir(exist_ok=True)
        doc: dict[str, Any] = {
            "dataset": "data.jsonl",
            "k": 2,
            "concurrency": 8,
            "agent": {
                "command": [sys.executable, "agent.py"],
                "timeout_s": 2,
                "env": {"STATE_DIR": str(self.state)},
            },
            "retry": {"attempts": 0, "backoff_s": 0},
        }
        doc.update(config)
        (self.root / "passk.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")

    def run(self, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
        code = main(["run", "--config", self.config, "--out", str(self.artifact), "--quiet"])
        out, err = capsys.readouterr()
        return code, out, err

    @property
    def artifact(self) -> Path:
        return self.root / "run.json"

    def report(self, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
        assert main(["report", str(self.artifact), "--format", "json"]) == 0
        report: dict[str, Any] = json.loads(capsys.readouterr().out)
        return report

    def attempts(self) -> dict[str, list[dict[str, Any]]]:
        doc = json.loads(self.artifact.read_text(encoding="utf-8"))
        grouped: dict[str, list[dict[str, Any]]] = {}
        for attempt in doc["attempts"]:
            grouped.setdefault(attempt["row"], []).append(attempt)
        return grouped

    def calls(self) -> dict[tuple[str, int], int]:
        """How many times the agent was started for each (row, attempt): tries, not attempts."""
        counts: dict[tuple[str, int], int] = {}
        path = self.state / "calls.jsonl"
        for line in path.read_text().splitlines() if path.exists() else []:
            call = json.loads(line)
            key = (call["id"], call["attempt"])
            counts[key] = counts.get(key, 0) + 1
        return counts


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.chdir(tmp_path)
    return Project(tmp_path)


def row(row_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": row_id, "input": {"case": row_id}, "expected": "deny", **extra}


FAULTS: dict[str, tuple[str, str]] = {
    # row id: (reason code, phrase the detail must contain so a user knows what happened)
    "crash": ("exit-status", "ScriptedCrash: model overloaded"),
    "exit": ("exit-status", "exited with status 3"),
    "not-json": ("bad-output", "stdout is not one JSON object"),
    "wrong-shape": ("bad-output", "the answer must be a JSON object, got an array"),
    "no-decision": ("bad-output", 'the answer has no "decision" key'),
    "hang": ("timeout", "killed after the 2s timeout"),
    "orphan": ("timeout", "killed after the 2s timeout"),
    "too-big": ("output-too-large", "stdout exceeded 1048576 bytes"),
    "flood": ("output-too-large", "stdout exceeded 1048576 bytes"),
    "deaf-hang": ("timeout", "killed after the 2s timeout"),
}


def test_every_fault_is_an_error_attempt_and_the_run_completes(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    big_input = {"case": "deaf", "history": "y" * 300_000}  # far over a pipe's buffer
    rows = [row("ok"), *(row(r) for r in FAULTS), {**row("deaf"), "input": big_input}]
    rows[-2]["input"] = big_input  # deaf-hang too: ignores a large stdin, never answers
    project.write(
        rows,
        {
            "crash": [{"crash": "model overloaded"}],
            "exit": [{"exit": 3, "stderr": "quota exceeded"}],
            "not-json": [{"stdout": "Sure! I would deny this refund."}],
            "wrong-shape": [{"stdout": '["deny"]'}],
            "no-decision": [{"stdout": '{"verdict": "deny"}'}],
            "hang": [{"hang": True}],
            "too-big": [{"stdout": "z" * ((1 << 20) + 1)}],
        },
    )
    code, out, err = project.run(capsys)
    assert (code, err) == (0, "")
    rows_total = len(FAULTS) + 2
    assert out == f"passk: recorded {2 * rows_total} attempts to {project.artifact}\n"

    attempts = project.attempts()
    for row_id, (reason, phrase) in FAULTS.items():
        for attempt in attempts[row_id]:
            assert "decision" not in attempt, row_id
            assert attempt["error"] == reason, row_id
            assert phrase in attempt["detail"], (row_id, attempt["detail"])
    assert "quota exceeded" in attempts["exit"][0]["detail"]  # stderr is kept for the user
    # An agent that never reads stdin but answers is not at fault: no deadlock, a decision.
    assert [a.get("decision") for a in attempts["deaf"]] == ["deny", "deny"]

    # The timeout killed the agent's whole process group, grandchildren included.
    for pid_file in project.state.glob("orphan-*.pid"):
        pid = int(pid_file.read_text())
        assert not Path(f"/proc/{pid}").exists() or _is_zombie(pid), f"grandchild {pid} lives"
    assert len(list(project.state.glob("orphan-*.pid"))) == 2

    report = project.report(capsys)
    assert report["errors_by_reason"] == {
        "bad-output": 6,
        "exit-status": 4,
        "output-too-large": 4,
        "timeout": 6,
    }
    metrics = report["metrics"]
    assert (metrics["attempts"], metrics["valid"], metrics["errors"]) == (24, 4, 20)
    # Errors are not decisions: accuracy is over the 4 valid judgments, all right.
    assert metrics["mean_accuracy"] == 1.0
    per_row = {r["id"]: r for r in report["rows"]}
    for row_id in FAULTS:
        assert (per_row[row_id]["errors"], per_row[row_id]["valid"]) == (2, 0), row_id
        assert per_row[row_id]["class"] == "unclassified"
    assert per_row["ok"]["class"] == per_row["deaf"]["class"] == "stable-correct"

    # The Markdown report names the reasons per row too.
    assert main(["report", str(project.artifact)]) == 0
    markdown = capsys.readouterr().out
    assert "| hang | unclassified | deny | — | timeout ×2 |" in markdown
    assert "**Errors by reason:**" in markdown


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("retries", [0, 2])
def test_error_attempts_are_retried_and_decisions_never_are(
    project: Project, capsys: pytest.CaptureFixture[str], retries: int
) -> None:
    project.write(
        [row("transient"), row("down"), row("wrong"), row("right")],
        {"wrong": ["approve"]},
        k=3,
        retry={"attempts": retries, "backoff_s": 0.01, "max_backoff_s": 0.02},
    )
    code, _, err = project.run(capsys)
    assert (code, err) == (0, "")
    calls = project.calls()
    attempts = project.attempts()
    for n in (1, 2, 3):
        # A wrong answer is final: retrying it would turn a flip into a pass.
        assert calls[("wrong", n)] == calls[("right", n)] == 1
        assert calls[("down", n)] == 1 + retries
        assert calls[("transient", n)] == min(2, 1 + retries)
    for attempt in attempts["wrong"] + attempts["right"]:
        assert "retries" not in attempt
    for attempt in attempts["down"]:
        assert attempt["error"] == "exit-status"
        # Every failed try is kept, with its reason, so retrying never hides a fault.
        assert attempt.get("retries", []) == ["exit-status: exited with status 1"] * retries
    if retries:
        for attempt in attempts["transient"]:
            assert attempt["decision"] == "deny"
            assert attempt["retries"] == ["exit-status: exited with status 1"]
    else:
        assert {a["error"] for a in attempts["transient"]} == {"exit-status"}

    report = project.report(capsys)
    errors_per_row = {r["id"]: r["errors"] for r in report["rows"]}
    assert errors_per_row == {
        "transient": 0 if retries else 3,
        "down": 3,
        "wrong": 0,
        "right": 0,
    }
    assert report["errors_by_reason"] == {"exit-status": 3 if retries else 6}
    per_row = {r["id"]: r["class"] for r in report["rows"]}
    assert per_row["wrong"] == "stable-wrong"


def test_retry_settings_are_validated(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.write([row("ok")], {}, retry={"attempts": 1, "backoff_s": 5, "max_backoff_s": 1})
    code, _, err = project.run(capsys)
    assert code == 2
    assert err.startswith(f"passk: error: {project.config}: retry.max_backoff_s")
    assert len(err.splitlines()) == 1


def test_agent_environment_does_not_leak_the_github_token(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault of another kind: an agent that prints its environment into a log."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    project.write([row("env"), row("ok")], {"env": [{"exit": 1, "stderr": "see env"}]})
    # It answers on other rows: an agent failing on every row could not run at all.
    (project.root / "agent.py").write_text(
        "import json, os, sys\n"
        "if json.load(sys.stdin)['id'] == 'ok':\n"
        "    print(json.dumps({'decision': 'deny'}))\n"
        "    sys.exit(0)\n"
        "sys.stderr.write(repr(dict(os.environ)))\nsys.exit(1)\n"
    )
    code, _, _ = project.run(capsys)
    assert code == 0
    text = project.artifact.read_text()
    assert "ghs_secret" not in text
    assert "PASSK_ROW_ID" in text  # the stderr tail was recorded: the check above is real
    assert os.environ["GITHUB_TOKEN"] == "ghs_secret"
