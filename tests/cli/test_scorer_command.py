"""``scoring.by: command``: a scorer program from the base commit judges every answer.

Through the real CLI in real temporary git repositories.  The agent is the
shipped scripted agent answering free text; the scorer is a small program
that says an answer is right when it names the row's expected decision.
Each trust rule's attack sits beside its control (same steps, no attack).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from passk_action.store.artifact import read_run

ROWS = [
    {"id": "r1", "input": {"n": 1}, "expected": "approve", "must_not_break": True},
    {"id": "r2", "input": {"n": 2}, "expected": "deny"},
    {"id": "r3", "input": {"n": 3}, "expected": "approve"},
]
RIGHT = {
    "r1": ["I approve this refund."],
    "r2": ["We must deny it."],
    "r3": ["Approve: the receipt is there."],
}
AGENT = [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"]
SCORER = """\
import json, sys
request = json.load(sys.stdin)
answer = request["answer"] if isinstance(request["answer"], str) else json.dumps(request["answer"])
right = request["expected"].lower() in answer.lower()
print(json.dumps({"correct": right, "reason": "names " + request["expected"] if right else "no"}))
"""
LENIENT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"correct": True, "reason": "everything is right"}))
"""


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


@dataclass
class Repo:
    root: Path

    def config(self, scoring: dict[str, Any] | None = None, rule: str = "strict") -> None:
        doc: dict[str, Any] = {
            "dataset": "data.jsonl",
            "k": 2,
            "concurrency": 2,
            # One agent process per version and worker; the literal rule, which
            # confirms a lost row on k fresh attempts, where the default one measures
            # a gated row 60 times when a baseline is recorded (a scorer process each).
            # These tests are about who judges, not how sure the gate is.
            "agent": {"command": AGENT, "timeout_s": 30, "protocol": "worker"},
            "confirm": {"attempts": 2, "must_not_break_attempts": 2},
            "retry": {"attempts": 0},
            "gate": {"rule": rule},
            "scoring": scoring
            or {"by": "command", "command": [sys.executable, "scorer.py"], "timeout_s": 20},
        }
        (self.root / "passk.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")

    def script(self, rows: dict[str, Any]) -> None:
        (self.root / "script.json").write_text(json.dumps({"rows": rows}), encoding="utf-8")

    def scorer(self, text: str) -> None:
        (self.root / "scorer.py").write_text(text, encoding="utf-8")

    def commit(self, message: str) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        return git(self.root, "rev-parse", "HEAD")

    def baseline(self) -> int:
        return main(["baseline", "--config", str(self.root / "passk.yml"), "--quiet"])

    def compare(self, *extra: str) -> tuple[int, dict[str, Any]]:
        out = self.root / "result.json"
        code = main(
            [
                *("compare", "--config", str(self.root / "passk.yml")),
                *("--json", str(out), "--quiet", *extra),
            ]
        )
        return code, json.loads(out.read_text()) if out.exists() else {}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\n", encoding="utf-8")
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    made = Repo(root)
    made.config()
    made.scorer(SCORER)
    return made


def _decisions(run_path: Path) -> dict[str, list[str | None]]:
    run = read_run(run_path)
    out: dict[str, list[str | None]] = {}
    for attempt in run.attempts:
        out.setdefault(attempt.row_id, []).append(attempt.decision or attempt.error)
    return out


def test_the_scorer_judges_free_text_and_its_verdicts_are_recorded(repo: Repo) -> None:
    repo.config(rule="relative")
    repo.script({**RIGHT, "r3": ["I deny it."]})

    assert repo.baseline() == 0

    artifact = repo.root / ".passk" / "baseline.json"
    decisions = _decisions(artifact)
    # r1 is gated: the baseline measures it further, every attempt judged by the scorer.
    r1 = decisions.pop("r1")
    assert len(r1) > 2 and set(r1) == {"success"}
    assert decisions == {"r2": ["success", "success"], "r3": ["failure", "failure"]}
    doc = json.loads(artifact.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 5
    first = doc["attempts"][0]
    assert first["answer"] == "I approve this refund."
    assert [
        {k: v for k, v in verdict.items() if k != "duration_s"} for verdict in first["verdicts"]
    ] == [{"correct": True, "reason": "names approve"}]
    assert doc["settings"]["scoring"]["command"] == [sys.executable, "scorer.py"]


@pytest.mark.parametrize("claims", [False, True], ids=["control", "agent-says-correct"])
def test_an_agent_that_says_correct_itself_changes_nothing(repo: Repo, claims: bool) -> None:
    wrong: dict[str, Any] = {"decision": "I deny it."}
    if claims:
        wrong = {**wrong, "correct": True, "score": 1.0}
    repo.script({**RIGHT, "r3": [wrong]})

    assert repo.baseline() == 0

    artifact = repo.root / ".passk" / "baseline.json"
    assert _decisions(artifact)["r3"] == ["failure", "failure"]
    # What the agent said of itself is not even kept: only the scorer's verdicts are.
    run = read_run(artifact)
    r3 = [a for a in run.attempts if a.row_id == "r3"]
    assert all(a.correct is None and a.score is None for a in r3)
    assert all([v.correct for v in a.verdicts] == [False] for a in r3)


@pytest.mark.parametrize(
    ("program", "code", "reason"),
    [
        ("import sys; sys.exit(3)", "exit-status", "exited with status 3"),
        ("import time; time.sleep(60)", "timeout", "killed after the 1s timeout"),
        ("print('yes, right')", "bad-output", "not one JSON object"),
        ('print(\'{"correct": "yes"}\')', "bad-output", '"correct" must be true or false'),
        ("print('{\"verdict\": 1}')", "bad-output", 'neither "correct" nor "score"'),
        ("import sys; sys.stdout.write('x' * (2 << 20))", "output-too-large", "stdout exceeded"),
    ],
    ids=["crash", "hang", "garbage", "bad-correct", "no-verdict", "too-much"],
)
def test_a_scorer_that_misbehaves_is_an_error_attempt_never_a_decision(
    repo: Repo, program: str, code: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.config({"by": "command", "command": [sys.executable, "scorer.py"], "timeout_s": 1})
    repo.scorer(program)
    repo.script(RIGHT)

    exit_code = main(
        [
            *("run", "--config", str(repo.root / "passk.yml")),
            *("--out", str(repo.root / "run.json"), "--quiet"),
        ]
    )

    # Every attempt errored: the run measured nothing, said in one line naming the scorer.
    assert exit_code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "scoring.command" in err and "the scorer program could not judge any answer" in err
    # Nothing is lost: the journal keeps every attempt, with the scorer's reason.
    journal = (repo.root / "run.json.journal.jsonl").read_text(encoding="utf-8").splitlines()
    attempts = [json.loads(line) for line in journal[1:]]
    assert attempts and {a["error"] for a in attempts} == {"scorer-error"}
    first = attempts[0]
    assert "decision" not in first
    assert reason in first["detail"]
    assert [v["error"] for v in first["verdicts"]] == [code]


def test_a_recorded_run_is_judged_again_without_the_scorer(repo: Repo) -> None:
    repo.script({**RIGHT, "r3": ["I deny it."]})
    assert repo.baseline() == 0
    artifact = repo.root / ".passk" / "baseline.json"
    (repo.root / "scorer.py").unlink()  # nothing may run it again

    out = repo.root / "report.json"
    code = main(["report", str(artifact), "--format", "json", "--out", str(out)])

    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["metrics"]["mean_accuracy"] == pytest.approx(4 / 6)
    # A scorer asked once per answer cannot disagree with itself: no judge line.
    markdown = repo.root / "report.md"
    assert main(["report", str(artifact), "--out", str(markdown)]) == 0
    assert "**Judge:**" not in markdown.read_text(encoding="utf-8")


@pytest.mark.parametrize("edit_scorer", [False, True], ids=["control", "pr-edits-scorer"])
def test_a_pull_request_that_edits_the_scorer_is_judged_by_the_bases(
    repo: Repo, edit_scorer: bool
) -> None:
    repo.script(RIGHT)
    repo.commit("agent and scorer")
    assert repo.baseline() == 0
    repo.commit("passk: baseline")
    # The pull request breaks r1 (must-not-break) ...
    repo.script({**RIGHT, "r1": ["I deny this refund."]})
    if edit_scorer:
        # ... and makes its own copy of the scorer call every answer right.
        repo.scorer(LENIENT)

    code, result = repo.compare("--base", "main")

    assert code == 1  # the base's scorer judged: r1 is lost either way
    r1 = next(r for r in result["rows"] if r["id"] == "r1")
    assert r1["candidate_class"] == "stable-wrong"
    candidate = result["candidate"]["run"]["attempts"]
    judged = [a for a in candidate if a["row"] == "r1" and a["phase"] == "main"]
    assert [v["correct"] for a in judged for v in a["verdicts"]] == [False, False]
    changes = [c["kind"] for c in result.get("protected_changes", [])]
    assert ("scorer-changed" in changes) is edit_scorer
    # The gate of the result needs neither the agent nor the scorer.
    (repo.root / "scorer.py").unlink()
    assert main(["gate", str(repo.root / "result.json")]) == 1


STATE_AGENT = """\
import json, os, sys
request = json.load(sys.stdin)
target = request["input"]["target"]
off = 1 if request["id"] == "t3" else 0  # t3 leaves the ledger wrong
with open(os.path.join(os.environ["PASSK_STATE_DIR"], "ledger.json"), "w") as handle:
    json.dump({"balance": target + off}, handle)
answer = {"decision": "done"}
if os.environ.get("CLAIM"):
    answer["correct"] = True  # what the agent says of itself
print(json.dumps(answer))
"""
STATE_SCORER = """\
import json, os, sys
request = json.load(sys.stdin)
ledger = json.load(open(os.path.join(request["state"], "ledger.json")))
locked = not any(
    os.stat(path).st_mode & 0o222
    for path in (request["state"], os.path.join(request["state"], "ledger.json"))
)
right = ledger["balance"] == request["input"]["target"]
print(json.dumps({"correct": right, "reason": f"balance {ledger['balance']}, locked {locked}"}))
"""


@pytest.mark.parametrize("claims", [False, True], ids=["control", "agent-says-correct"])
def test_an_environment_task_is_scored_from_the_state_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, claims: bool
) -> None:
    (tmp_path / "agent.py").write_text(STATE_AGENT, encoding="utf-8")
    (tmp_path / "scorer.py").write_text(STATE_SCORER, encoding="utf-8")
    rows = [{"id": f"t{i}", "input": {"target": 10 * i}} for i in (1, 2, 3)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    doc = {
        "dataset": "data.jsonl",
        "k": 2,
        "agent": {"command": [sys.executable, "agent.py"], "timeout_s": 30},
        "scoring": {"by": "environment", "command": [sys.executable, "scorer.py"]},
    }
    (tmp_path / "passk.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    if claims:
        monkeypatch.setenv("CLAIM", "1")
    out = tmp_path / "run.json"

    assert main(["run", "--config", str(tmp_path / "passk.yml"), "--out", str(out)]) == 0

    assert _decisions(out) == {
        "t1": ["success", "success"],
        "t2": ["success", "success"],
        "t3": ["failure", "failure"],
    }
    run = read_run(out)
    # The scorer read the state read-only; the folders are gone afterwards.
    assert all((a.verdicts[0].reason or "").endswith("locked True") for a in run.attempts)
    assert all(a.correct is None for a in run.attempts)
