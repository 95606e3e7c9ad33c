"""``passk baseline``, ``compare`` and ``gate`` end to end with the shipped scripted agent.

Every agent here is a real program (``python -m passk_action.testing.scripted_agent``: one
process per attempt in the first test and the crash's, a worker elsewhere, since the
default rule measures a gated row 60 times when a baseline is recorded) whose answers
are fixed by a script, and every request it receives is logged, so the tests can assert
not only the decision but which attempts were asked.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from passk_action.core.model import AgentInfo, EvalSettings, Run, Version
from passk_action.engine.measuring import row_records
from passk_action.inputs.config import load_config
from passk_action.inputs.dataset import load_dataset
from passk_action.store.artifact import Journal, journal_path, read_journal, read_run
from support.words import notes_of, worded

RIGHT = "deny"
WRONG = "approve"


@dataclass
class Project:
    root: Path
    log: Path

    @property
    def config(self) -> str:
        return str(self.root / "passk.yml")

    def write_rows(self, rows: list[dict[str, Any]]) -> None:
        lines = [json.dumps(r) for r in rows]
        (self.root / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def write_script(self, rows: dict[str, Any], default: Any = RIGHT) -> None:
        (self.root / "script.json").write_text(
            json.dumps({"default": default, "rows": rows}), encoding="utf-8"
        )

    def write_config(self, protocol: str = "worker", **extra: Any) -> None:
        # One agent process per version and worker (`protocol: worker`), not one per
        # attempt, unless the test says "process" (see the module's docstring).
        command = [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"]
        agent = {"command": command, "protocol": protocol}
        config: dict[str, Any] = {
            "dataset": "data.jsonl",
            "k": 3,
            # Two workers a side at most: each is a process start-up, and these attempts answer
            # at once (bench/suite_speed.md, "Two workers a side").
            "concurrency": 2,
            "agent": {**agent, "timeout_s": 20},
            "baseline": {"artifact": ".passk/baseline.json", "agent": agent},
            "confirm": {"attempts": 3, "must_not_break_attempts": 4},
            "retry": {"attempts": 0, "backoff_s": 0},
        }
        config.update(extra)
        (self.root / "passk.yml").write_text(yaml.safe_dump(config), encoding="utf-8")

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        requests = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.log.unlink()
        return requests

    def run(self, out: Path, *extra: str) -> int:
        """`passk run` of this project's agent into ``out``."""
        return main(["run", "--config", self.config, "--out", str(out), "--quiet", *extra])

    def baseline(self) -> None:
        code = main(["baseline", "--config", self.config, "--agent", "baseline.agent", "--quiet"])
        assert code == 0
        self.requests()  # forget the baseline's own attempts

    def compare(self) -> tuple[int, dict[str, Any]]:
        out = self.root / "result.json"
        code = main(
            [
                "compare",
                "--config",
                self.config,
                "--json",
                str(out),
                "--quiet",
                "--markdown",
                str(self.root / "report.md"),
            ]
        )
        result = json.loads(out.read_text()) if out.exists() else {}
        return code, result


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("PASSK_SCRIPTED_LOG", str(log))
    p = Project(tmp_path, log)
    p.write_config()
    yield p


def row(row_id: str, mnb: bool = False, expected: str = RIGHT) -> dict[str, Any]:
    return {"id": row_id, "input": {"case": row_id}, "expected": expected, "must_not_break": mnb}


def by_id(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in result["rows"]}


def checks(window: str, proof: str) -> dict[str, str]:
    return {"return_window": window, "proof_of_purchase": proof}


def test_must_not_break_regression_blocks_with_first_divergent_check(project: Project) -> None:
    project.write_rows([row("m", mnb=True), row("steady")])
    good = {"decision": RIGHT, "checks": checks("expired", "present")}
    bad = {"decision": WRONG, "checks": checks("ok", "present")}
    project.write_script({"m": {"baseline": [good], "candidate": [good, bad, good, bad]}})
    # One process per attempt (the path a new team's first agent takes), the
    # sequential rule's rounds counted below.
    project.write_config(protocol="process", gate={"rule": "sequential"})
    project.baseline()
    code, result = project.compare()
    assert code == 1
    assert result["gate"]["passed"] is False
    assert [(f["id"], f["rule"]) for f in worded(result)] == [("m", "must-not-break")]
    m = by_id(result)["m"]
    assert (m["baseline_class"], m["candidate_class"], m["change"]) == (
        "stable-correct",
        "flip",
        "lost",
    )
    assert m["confirmation"] == "confirmed-regression"
    assert m["first_divergent_check"] == {
        "check": "return_window",
        "baseline": {"expired": 25},
        "candidate": {"ok": 16, "expired": 2},
    }
    # Confirmation re-ran the lost row, numbered after k: the candidate until the third
    # wrong answer ended its test (its round asked for the 15 that one wrong answer needs),
    # then the baseline until its test ended (22 right answers more).
    asked = project.requests()
    confirm = sorted(
        (r["version"], r["attempt"]) for r in asked if r["id"] == "m" and r["attempt"] > 3
    )
    assert confirm == [("baseline", n) for n in range(4, 26)] + [
        ("candidate", n) for n in range(4, 19)
    ]
    assert result["executions"]["confirm_rounds"] == 2
    assert result["lost"] == ["m"]
    report = (project.root / "report.md").read_text()
    assert "return\\_window" in report or "return_window" in report


def test_baseline_that_also_varies_does_not_block(project: Project) -> None:
    project.write_config(gate={"block_on_any_regression": True})
    project.write_rows([row("v")])
    # Baseline: right on its k main attempts, then wrong in confirmation.
    project.write_script(
        {"v": {"baseline": [RIGHT, RIGHT, RIGHT, WRONG], "candidate": [RIGHT, WRONG]}}
    )
    project.baseline()
    code, result = project.compare()
    v = by_id(result)["v"]
    assert v["confirmation"] == "baseline-varies"
    assert v["baseline_final_class"] == "flip"
    assert code == 0 and result["gate"]["passed"] is True
    # Both versions answer wrong from here on: the candidate's screen reads 7 more answers
    # before it sends the row side by side, where the pairs never disagree, and the paired
    # comparison ends after its quiet pairs (42), not at its cap of 300 (600 agent calls).
    executions = result["executions"]
    assert (executions["confirm_baseline"], executions["confirm_candidate"]) == (42, 7 + 42)


def test_crash_only_must_not_break_row_blocks_as_unclassified(project: Project) -> None:
    # Another row answers: the agent runs, it only crashes on this row (an agent
    # that crashes on every row could not run at all, see test_agent_setup.py).
    project.write_config(protocol="process")  # a crash is the process's exit status
    project.write_rows([row("c", mnb=True), row("fine")])
    project.write_script({"c": {"baseline": [RIGHT], "candidate": [{"crash": "model overloaded"}]}})
    project.baseline()
    code, result = project.compare()
    assert code == 1
    assert [(f["id"], f["rule"]) for f in worded(result)] == [("c", "unclassified")]
    assert by_id(result)["c"]["candidate_final_class"] == "unclassified"
    errors = [a for a in result["candidate"]["run"]["attempts"] if a.get("error")]
    assert errors and all(a["error"] == "exit-status" for a in errors)


def test_ratchet_row_stays_locked_after_its_mark_is_removed(project: Project) -> None:
    project.write_rows([row("locked", mnb=True), row("other")])
    project.write_script({"locked": {"baseline": [RIGHT], "candidate": [WRONG]}})
    project.baseline()
    baseline = json.loads((project.root / ".passk/baseline.json").read_text())
    assert baseline["ratchet"] == ["locked"]
    # The pull request drops the must-not-break mark: the ratchet still holds.
    project.write_rows([row("locked", mnb=False), row("other")])
    code, result = project.compare()
    assert code == 1
    assert [(f["id"], f["rule"]) for f in worded(result)] == [("locked", "ratchet")]
    # Only the mark changed, so the baseline's decisions were reused, not re-run.
    assert result["executions"]["baseline_topup"] == 0


def test_gained_row_is_listed_and_does_not_block(project: Project) -> None:
    project.write_rows([row("g"), row("same")])
    project.write_script({"g": {"baseline": [WRONG, RIGHT, WRONG], "candidate": [RIGHT]}})
    project.baseline()
    code, result = project.compare()
    assert code == 0
    assert result["gained"] == ["g"] and result["lost"] == []
    assert by_id(result)["g"]["change"] == "gained"


def test_unchanged_dataset_reuses_the_baseline_without_any_baseline_run(project: Project) -> None:
    project.write_rows([row("a"), row("b", mnb=True)])
    project.write_script({})
    project.write_config(gate={"rule": "sequential"})  # its round, counted below
    project.baseline()
    code, result = project.compare()
    assert code == 0
    asked = project.requests()
    assert {r["version"] for r in asked} == {"candidate"}
    # k on every row, and 4 more on must-not-break row b: 7 right answers pass it.
    assert len(asked) == 10
    assert result["executions"] == {
        "candidate": 6,
        "baseline_topup": 0,
        "confirm_baseline": 0,
        "confirm_candidate": 4,
        "total": 10,
        "naive": 16,
        "confirm_rounds": 1,
    }
    assert any("no baseline run was needed" in n for n in notes_of(result))


def test_grown_dataset_runs_only_the_new_rows_on_the_baseline(project: Project) -> None:
    project.write_rows([row("a"), row("b")])
    project.write_script({})
    project.baseline()
    project.write_rows([row("a"), row("b"), row("new-1"), {**row("b"), "id": "new-2"}])
    code, result = project.compare()
    assert code == 0
    baseline_asked = sorted(
        (r["id"], r["attempt"]) for r in project.requests() if r["version"] == "baseline"
    )
    assert baseline_asked == [(i, n) for i in ("new-1", "new-2") for n in (1, 2, 3)]
    assert any("new or changed row(s)" in n and "new-1" in n for n in notes_of(result))


def test_changed_input_is_run_again_on_the_baseline(project: Project) -> None:
    project.write_rows([row("a"), row("b")])
    project.write_script({})
    project.baseline()
    project.write_rows([row("a"), {**row("b"), "input": {"case": "b", "edited": True}}])
    project.compare()
    asked = {r["id"] for r in project.requests() if r["version"] == "baseline"}
    assert asked == {"b"}


def test_gate_reproduces_the_decision_with_the_agent_gone(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_rows([row("m", mnb=True), row("x")])
    project.write_script({"m": {"baseline": [RIGHT], "candidate": [RIGHT, WRONG]}})
    project.baseline()
    code, _ = project.compare()
    assert code == 1
    project.requests()  # forget the comparison's attempts
    (project.root / "script.json").unlink()
    project.write_config(agent={"command": ["/nonexistent/agent"]})
    capsys.readouterr()
    assert main(["gate", str(project.root / "result.json")]) == 1
    out = capsys.readouterr().out
    assert "FAIL m: [must-not-break]" in out
    assert project.requests() == []


def test_gate_refuses_a_result_whose_recorded_gate_was_edited(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_rows([row("m", mnb=True)])
    project.write_script({"m": {"baseline": [RIGHT], "candidate": [WRONG]}})
    project.baseline()
    project.compare()
    path = project.root / "result.json"
    doc = json.loads(path.read_text())
    doc["gate"] = {"passed": True, "failures": [], "warnings": []}
    path.write_text(json.dumps(doc))
    assert main(["gate", str(path)]) == 1
    assert "does not match the gate recomputed" in capsys.readouterr().err


def test_settings_mismatch_refuses_the_baseline(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_rows([row("a")])
    project.write_script({})
    project.baseline()
    project.write_config(k=4)
    code, _ = project.compare()
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "baseline.json" in err[0] and "k=3" in err[0] and "k=4" in err[0]


def test_report_json_of_a_run(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.write_rows([row("a"), row("f")])
    project.write_script({"f": [RIGHT, WRONG, "escalate"]})
    out = project.root / "run.json"
    assert project.run(out) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metrics"]["rows"] == 2
    assert report["metrics"]["flip_rate"] == 0.5
    assert report["metrics"]["mean_accuracy"] == pytest.approx(4 / 6)
    assert {r["id"]: r["class"] for r in report["rows"]} == {"a": "stable-correct", "f": "flip"}


def test_clusters_travel_with_the_artifacts_into_every_report(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # Four conversations of three turns each: the result alone (no dataset)
    # must still give the clustered error bars the README promises.
    rows = []
    for conversation in range(4):
        for turn in range(3):
            r = row(f"c{conversation}-t{turn}")
            r["cluster"] = f"conversation-{conversation}"
            rows.append(r)
    project.write_rows(rows)
    project.write_script({"c1-t0": [RIGHT, WRONG, RIGHT], "c2-t2": {"candidate": [WRONG] * 3}})
    project.baseline()
    baseline = read_run(project.root / ".passk" / "baseline.json")
    assert {r.cluster for r in baseline.rows} == {f"conversation-{c}" for c in range(4)}
    code, result = project.compare()
    assert code == 0
    assert by_id(result)["c3-t1"]["cluster"] == "conversation-3"
    assert result["candidate"]["run"]["rows"][0]["cluster"] == "conversation-0"
    assert "in 4 clusters" in (project.root / "report.md").read_text()
    capsys.readouterr()
    assert main(["report", str(project.root / "result.json"), "--format", "json"]) == 0
    analysis = json.loads(capsys.readouterr().out)["analysis"]
    for side in ("baseline", "candidate"):
        assert analysis[side]["mean_accuracy"]["method"] == "clustered"
        assert analysis[side]["mean_accuracy"]["clusters"] == 4
    assert analysis["paired"]["difference"]["method"] == "clustered"
    assert main(["report", str(project.root / "result.json")]) in (0, 1)
    assert "12 (4 clusters)" in capsys.readouterr().out
    # A run's own report too.
    assert main(["report", str(project.root / ".passk" / "baseline.json"), "--format", "json"]) == 0
    run_analysis = json.loads(capsys.readouterr().out)["analysis"]
    assert run_analysis["mean_accuracy"]["method"] == "clustered"


def test_recorded_candidate_counts_its_executions_and_runs_no_candidate(project: Project) -> None:
    project.write_rows([row("a"), row("b")])
    project.write_script({})
    project.baseline()
    recorded = project.root / "candidate-run.json"
    assert project.run(recorded) == 0
    project.requests()
    out = project.root / "result.json"
    code = main(
        [
            "compare",
            "--config",
            project.config,
            "--candidate",
            str(recorded),
            "--quiet",
            "--json",
            str(out),
            "--markdown",
            str(project.root / "report.md"),
        ]
    )
    assert code == 0
    assert project.requests() == []  # nothing was run: both sides were recorded
    result = json.loads(out.read_text())
    assert result["executions"]["candidate"] == 6
    assert any("recorded earlier" in n for n in notes_of(result))


def test_resume_refuses_a_journal_of_another_shard(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:

    project.write_rows([row(f"r{i}") for i in range(6)])
    project.write_script({})
    out = project.root / "run.json"
    dataset = load_dataset(project.root / "data.jsonl")
    header = Run(
        tool_version="0.1.0",
        dataset_digest=dataset.digest,
        settings=EvalSettings(k=3),
        agent=AgentInfo(
            Version.CANDIDATE, load_config(Path(project.config)).config.agent.describe()
        ),
        created_at="2026-11-30T09:00:00Z",
        rows=row_records(dataset)[:2],
        attempts=(),
    )
    Journal.create(journal_path(out), header).close()
    code = project.run(out, "--resume")
    assert code == 2
    assert "other rows" in capsys.readouterr().err


def test_resume_refuses_a_run_of_another_agent(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_rows([row("a"), row("b")])
    project.write_script({})
    out = project.root / "run.json"
    assert project.run(out) == 0
    project.write_config(agent={"command": [sys.executable, "-c", "print('other agent')"]})
    capsys.readouterr()
    code = project.run(out, "--resume")
    assert code == 2
    assert "recorded by another agent" in capsys.readouterr().err


def test_a_new_run_never_discards_an_interrupted_one(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:

    project.write_rows([row("a"), row("b")])
    project.write_script({})
    out = project.root / "run.json"
    assert project.run(out) == 0
    # Pretend the next run of the same file was interrupted after one attempt.
    finished = read_run(out)
    header = replace(finished, attempts=())
    with Journal.create(journal_path(out), header) as journal:
        journal.append(finished.attempts[0])
    capsys.readouterr()
    code = project.run(out)
    assert code == 2
    err = capsys.readouterr().err
    assert "an interrupted run with 1 recorded attempt(s) is here" in err and "--resume" in err
    assert len(read_journal(journal_path(out)).attempts) == 1  # nothing was lost


def test_a_reliable_but_pricier_candidate_fails_max_cost_increase_end_to_end(
    project: Project,
) -> None:
    """Tokens only from the agent, priced by the config; +50% tokens over a 25% limit."""
    project.write_rows([row("r1", mnb=True), row("r2")])

    def answer(tokens: int) -> dict[str, Any]:
        return {"decision": RIGHT, "usage": {"input_tokens": tokens, "output_tokens": 10}}

    project.write_script(
        {r: {"baseline": [answer(1000)], "candidate": [answer(1500)]} for r in ("r1", "r2")}
    )
    project.write_config(
        gate={"max_cost_increase": 0.25},
        pricing={"input_per_mtok": 1.0, "output_per_mtok": 4.0},
    )
    project.baseline()
    code, result = project.compare()
    assert code == 1
    assert result["candidate"]["metrics"]["pass_k"] == 1.0 and result["lost"] == []
    assert [f["rule"] for f in worded(result)] == ["cost"]
    assert worded(result)[0]["reason"].startswith("cost per decision +48%")
    assert result["policy"]["max_cost_increase"] == 0.25
    # passk gate recomputes the same failure from the recorded attempts alone.
    assert main(["gate", str(project.root / "result.json")]) == 1
    report = (project.root / "report.md").read_text()
    assert "**Cost & latency:** $0.00104 → $0.00154 per decision (+48%" in report
