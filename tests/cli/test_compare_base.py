"""``passk compare --base REF`` and stale baselines, in a real temporary git repository.

The agent is the shipped scripted agent; what it answers is decided by
``script.json`` in its working directory, so "which file ran" is visible in
the answers: the baseline side must answer as REF's script says, the
candidate as the working tree's.
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
from support.words import notes_of

ROWS = [
    {"id": "r1", "input": {"n": 1}, "expected": "approve", "must_not_break": True},
    {"id": "r2", "input": {"n": 2}, "expected": "deny"},
    {"id": "r3", "input": {"n": 3}, "expected": "approve"},
]
RIGHT = {"r1": ["approve"], "r2": ["deny"], "r3": ["approve"]}
AGENT = [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"]


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


@dataclass
class Repo:
    root: Path
    log: Path

    def config(self, **extra: Any) -> None:
        doc: dict[str, Any] = {
            "dataset": "data.jsonl",
            "k": 2,
            # Two workers a side at most: each is a process start-up, and these attempts answer
            # at once (bench/suite_speed.md, "Two workers a side").
            "concurrency": 2,
            # Workers: one start-up per side, not one per attempt (the relative rule's
            # measurement asks 60 times a gated row); the protocol is not what is tested.
            "agent": {"command": AGENT, "protocol": "worker", "timeout_s": 30},
            "confirm": {"attempts": 2, "must_not_break_attempts": 2},
            "retry": {"attempts": 0},
        }
        for key, value in extra.items():
            if key == "fingerprint":
                doc["agent"]["fingerprint"] = value
            else:
                doc[key] = value
        (self.root / "passk.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")

    def script(self, rows: dict[str, Any]) -> None:
        (self.root / "script.json").write_text(json.dumps({"rows": rows}), encoding="utf-8")

    def commit(self, message: str) -> str:
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        return git(self.root, "rev-parse", "HEAD")

    def baseline(self) -> str:
        """Record the baseline of the checked-out commit and commit it; its commit's sha."""
        measured = git(self.root, "rev-parse", "HEAD")
        assert main(["baseline", "--config", str(self.root / "passk.yml"), "--quiet"]) == 0
        self.commit("passk: baseline")
        return measured

    def asked(self) -> list[tuple[str, int, str]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        self.log.unlink()
        return sorted(
            (r["id"], r["attempt"], r["version"]) for r in (json.loads(line) for line in lines)
        )

    def compare(self, *extra: str) -> tuple[int, dict[str, Any], str]:
        out, report = self.root / "result.json", self.root / "report.md"
        code = main(
            [
                "compare",
                "--config",
                str(self.root / "passk.yml"),
                "--json",
                str(out),
                "--markdown",
                str(report),
                "--quiet",
                *extra,
            ]
        )
        result = json.loads(out.read_text()) if out.exists() else {}
        return code, result, report.read_text(encoding="utf-8") if report.exists() else ""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\n", encoding="utf-8")
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    log = tmp_path / "asked.jsonl"
    monkeypatch.setenv("PASSK_SCRIPTED_LOG", str(log))
    return Repo(root, log)


def test_base_runs_the_refs_files_records_commits_and_confirms(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.config()
    repo.script(RIGHT)
    repo.commit("agent")
    measured = repo.baseline()
    main_sha = git(repo.root, "rev-parse", "main")
    repo.asked()
    # Uncommitted: the candidate breaks must-not-break row r1.
    repo.script({**RIGHT, "r1": ["deny"]})

    code, result, report = repo.compare("--base", "main")

    assert code == 1
    baseline_run, candidate_run = result["baseline"]["run"], result["candidate"]["run"]
    assert baseline_run["agent"]["commit"] == measured
    assert candidate_run["agent"]["commit"] == main_sha
    assert candidate_run["agent"]["dirty"] is True
    r1 = next(r for r in result["rows"] if r["id"] == "r1")
    assert r1["confirmation"] == "confirmed-regression"
    # r1 is gated: confirmation runs it beside the baseline until the paired test ends.
    # The baseline's answers are REF's script (right), not the working tree's (wrong).
    asked = repo.asked()
    assert [a for a in asked if a[0] != "r1"] == sorted(
        (r["id"], n, "candidate") for r in ROWS if r["id"] != "r1" for n in (1, 2)
    )
    again = [n for row, n, version in asked if row == "r1" and version == "baseline"]
    confirms = [a for a in baseline_run["attempts"] if a["row"] == "r1" and a["phase"] == "confirm"]
    assert again and len(confirms) == len(again)
    assert {a["decision"] for a in confirms} == {"approve"}
    assert f"at `{measured[:12]}`" in report
    assert f"at `{main_sha[:12]}` (+ uncommitted changes)" in report
    assert capsys.readouterr().err == ""


def test_without_base_or_baseline_agent_the_skipped_confirmation_comes_first(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.config()
    repo.script(RIGHT)
    repo.commit("agent")
    repo.baseline()
    repo.script({**RIGHT, "r1": ["deny"]})
    capsys.readouterr()

    code, result, report = repo.compare()

    assert code == 1
    warning = (
        "1 gated row(s) wanted more baseline attempts (to tell a regression from a baseline "
        "that varies as much) and no baseline agent is available, so they were judged on the "
        "attempts recorded: r1; to run them, set baseline.agent, or run "
        "`passk compare --base main`"
    )
    assert notes_of(result, "warnings") == [warning]
    lines = report.splitlines()
    # Right after the title, why it failed and the three facts (backticks escaped by the
    # renderer).
    facts = next(i for i, line in enumerate(lines) if line.startswith("- **Dataset:**"))
    assert lines[2] == "**Why it failed** (1 blocking reason)" and facts > 2
    assert lines[facts + 2] == "> ⚠️ " + warning.replace("`", "\\`")
    assert f"passk: warning: {warning}" in capsys.readouterr().err


@pytest.mark.parametrize("policy", ["remeasure", "warn", "fail"])
def test_a_stale_fingerprint_remeasures_warns_or_fails(
    repo: Repo, policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.config(fingerprint=["script.json"], baseline={"when_stale": policy})
    repo.script(RIGHT)
    repo.commit("agent")
    measured = repo.baseline()
    artifact = read_run(repo.root / ".passk" / "baseline.json")
    blob = git(repo.root, "rev-parse", f"{measured}:script.json")
    assert artifact.agent.fingerprint == (("script.json", blob),)
    # main changes its agent after the baseline: r3 now answers wrong.
    repo.script({**RIGHT, "r3": ["deny"]})
    base = repo.commit("agent: stricter on r3")
    repo.asked()
    capsys.readouterr()

    code, result, report = repo.compare("--base", "main")
    err = capsys.readouterr().err
    stale = f"the committed baseline (measured at {measured[:7]}) is stale: it was measured on "
    stale += f"other files: script.json changed at the base {base[:7]}"
    asked = repo.asked()

    if policy == "fail":
        assert code == 2 and result == {}
        assert stale in err and "baseline.when_stale" in err
        assert asked == []
        return
    assert code == 0
    if policy == "remeasure":
        # k attempts per row at the base commit: r3 is wrong on both sides, not lost.
        assert [a for a in asked if a[2] == "baseline"] == [
            (r["id"], n, "baseline") for r in ROWS for n in (1, 2)
        ]
        assert result["lost"] == []
        assert result["baseline"]["run"]["agent"]["commit"] == base
        assert result["executions"]["baseline_topup"] == 6
        warning = (
            f"{stale}, so it was measured anew at {base[:7]} (6 executions: k = 2 × 3 rows); "
            "the ratchet is still the committed one"
        )
        assert notes_of(result, "warnings") == [warning]
        assert result["ratchet"] == ["r1"]
    else:
        # The committed baseline is used: r3 looks lost, and confirming it at the
        # base shows the baseline wrong there too, so it is no confirmed regression.
        assert result["lost"] == ["r3"]
        assert result["baseline"]["run"]["agent"]["commit"] == measured
        warning = f"{stale}; it was used anyway (baseline.when_stale: warn)"
        assert notes_of(result, "warnings") == [warning]
        r3 = next(r for r in result["rows"] if r["id"] == "r3")
        assert r3["confirmation"] != "confirmed-regression"
    assert f"> ⚠️ {warning}" in report
    assert stale in err


def test_a_fresh_fingerprint_says_nothing(repo: Repo) -> None:
    repo.config(fingerprint=["script.json"])
    repo.script(RIGHT)
    repo.commit("agent")
    repo.baseline()
    (repo.root / "README.md").write_text("docs only\n", encoding="utf-8")
    repo.commit("docs")
    repo.asked()

    code, result, _ = repo.compare("--base", "main")

    assert code == 0 and "warnings" not in result
    assert [a for a in repo.asked() if a[2] == "baseline"] == []


def test_without_fingerprint_the_report_says_how_far_behind_and_what_changed(
    repo: Repo,
) -> None:
    repo.config()
    repo.script(RIGHT)
    repo.commit("agent")
    measured = repo.baseline()
    repo.script({**RIGHT, "r3": ["deny"]})
    (repo.root / "notes.txt").write_text("x\n", encoding="utf-8")
    base = repo.commit("agent and notes")
    repo.asked()

    _, result, report = repo.compare("--base", "main")

    warning = (
        f"the baseline was measured at {measured[:7]}, 2 commit(s) behind the base {base[:7]}; "
        "files changed since: notes.txt, script.json (name what the agent runs under "
        "agent.fingerprint to re-measure it when those change)"
    )
    assert notes_of(result, "warnings")[0] == warning
    assert f"> ⚠️ {warning}" in report
    # Not re-measured: only the lost row's confirmation ran on the baseline side.
    assert all(a[1] > 2 for a in repo.asked() if a[2] == "baseline")


def test_base_that_names_no_commit_is_one_line(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.config()
    repo.script(RIGHT)
    repo.commit("agent")
    repo.baseline()
    capsys.readouterr()
    assert repo.compare("--base", "no-such-branch")[0] == 2
    err = capsys.readouterr().err
    assert "'no-such-branch' names no commit" in err and "Traceback" not in err


def test_on_a_terminal_compare_prints_one_screen_and_says_where_the_report_went(
    repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.config()
    repo.script(RIGHT)
    repo.commit("agent")
    repo.baseline()
    repo.script({**RIGHT, "r1": ["deny"]})
    capsys.readouterr()
    config = str(repo.root / "passk.yml")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)

    assert main(["compare", "--config", config, "--quiet"]) == 1

    screen = capsys.readouterr().out
    report = repo.root / ".passk" / "report.md"
    assert screen.startswith("passk: \x1b[1m\x1b[31mgate failed\x1b[0m: 1 failure")
    assert "\n  - r1 (must-not-break): must-not-break row " in screen
    assert "\n  baseline " in screen and "\n  candidate " in screen and "mean accuracy" in screen
    assert screen.endswith(f"Full report: {report}\n")
    assert "**" not in screen and "|---" not in screen  # not Markdown
    assert report.read_text(encoding="utf-8").startswith("# ❌ passk: gate failed")
    # NO_COLOR is honoured; --markdown FILE gets the report, stdout the same screen.
    monkeypatch.setenv("NO_COLOR", "1")
    recorded = str(repo.root / ".passk" / "candidate.json")
    elsewhere = repo.root / "elsewhere.md"
    argv = ["compare", "--config", config, "--quiet", "--candidate", recorded]
    assert main([*argv, "--markdown", str(elsewhere)]) == 1
    screen = capsys.readouterr().out
    assert screen.startswith("passk: gate failed: 1 failure") and "\x1b" not in screen
    assert screen.endswith(f"Full report: {elsewhere}\n") and elsewhere.exists()
    # Piped (no terminal), the Markdown goes to stdout as before.
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert main(argv) == 1
    assert capsys.readouterr().out.startswith("# ❌ passk: gate failed")
