"""Crash-safe, resumable runs: SIGKILL at random points, SIGTERM/SIGINT, torn journals.

The promise: attempts reach the disk as they complete, so a run killed at any
moment loses at most the attempts in flight, and ``--resume`` ends with
exactly k attempts per row, keeps every recorded attempt, and never asks the
agent again for an attempt whose decision was recorded.

The fault-injection test runs ``python -m passk_action run`` as a real
process with the shipped scripted agent (which logs every request it gets to
``PASSK_SCRIPTED_LOG``), kills it with SIGKILL once the journal holds a
number of attempts drawn from a seeded RNG (plus a random extra delay, so the
kill also lands mid-write and mid-resume), and checks the promise from the
journal, the agent's log and the final artifact.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action import __version__
from passk_action.cli import main
from passk_action.cli.common import load_inputs
from passk_action.core.model import AgentInfo, Attempt, Phase, Run, Version
from passk_action.engine.measuring import row_records
from passk_action.store.artifact import Journal, journal_path, read_journal, read_run

K = 3
ROWS = 8
SLOW = {"sleep": 0.05, "then": "deny"}


@dataclass
class Project:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "passk.yml"

    @property
    def out(self) -> Path:
        return self.root / "run.json"

    @property
    def journal(self) -> Path:
        return journal_path(self.out)

    @property
    def log(self) -> Path:
        return self.root / "requests.jsonl"

    def setup(self, rows: int = ROWS, k: int = K, default: Any = SLOW) -> None:
        lines = [
            json.dumps({"id": f"r{i:02}", "input": {"case": i}, "expected": "deny"})
            for i in range(1, rows + 1)
        ]
        (self.root / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (self.root / "script.json").write_text(json.dumps({"default": default}), encoding="utf-8")
        agent = [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"]
        config = {
            "dataset": "data.jsonl",
            "k": k,
            "concurrency": 2,
            "agent": {"command": agent, "timeout_s": 30},
            "retry": {"attempts": 0, "backoff_s": 0},
        }
        self.config.write_text(yaml.safe_dump(config), encoding="utf-8")

    def argv(self, resume: bool) -> list[str]:
        args = ["run", "--config", str(self.config), "--out", str(self.out), "--quiet"]
        return [*args, "--resume"] if resume else args

    def start(self, resume: bool = False) -> subprocess.Popen[str]:
        env = {**os.environ, "PASSK_SCRIPTED_LOG": str(self.log)}
        return subprocess.Popen(
            [sys.executable, "-m", "passk_action", *self.argv(resume)],
            cwd=self.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def journal_attempts(self) -> int:
        """Complete attempt lines in the journal now (its header excluded)."""
        try:
            return max(0, self.journal.read_bytes().count(b"\n") - 1)
        except FileNotFoundError:
            return 0

    def wait_for_attempts(self, proc: subprocess.Popen[str], count: int) -> None:
        deadline = time.monotonic() + 60
        while self.journal_attempts() < count:
            assert proc.poll() is None, f"the run ended early: {proc.communicate()}"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.005)

    def take_log(self) -> list[tuple[str, int]]:
        """The (row, attempt) pairs the agent was asked since the last call; then forget them."""
        if not self.log.exists():
            return []
        requests = map(json.loads, self.log.read_text().splitlines())
        asked = [(r["id"], r["attempt"]) for r in requests]
        self.log.unlink()
        return asked


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path)
    p.setup()
    return p


def settle() -> None:
    """Agents of a killed run live in their own sessions and finish on their own.

    Each logs its request as soon as it starts; waiting lets those of the
    killed run land in the log before the log is split at the resume.
    """
    time.sleep(0.6)


def recorded(project: Project) -> dict[tuple[str, int], Attempt]:
    if not project.journal.exists():
        return {}
    return {(a.row_id, a.number): a for a in read_journal(project.journal).attempts}


def check_final(project: Project, rows: int = ROWS, k: int = K) -> list[dict[str, Any]]:
    doc = json.loads(project.out.read_text(encoding="utf-8"))
    keys = [(a["row"], a["n"]) for a in doc["attempts"]]
    assert len(keys) == len(set(keys)), "an attempt is recorded twice"
    assert sorted(keys) == [(f"r{i:02}", n) for i in range(1, rows + 1) for n in range(1, k + 1)]
    assert not project.journal.exists(), "a finished run leaves no journal behind"
    read_run(project.out)  # and it is a valid artifact
    attempts: list[dict[str, Any]] = doc["attempts"]
    return attempts


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 8, 13])
def test_sigkill_at_random_points_then_resume(project: Project, seed: int) -> None:
    rng = random.Random(seed)
    total = ROWS * K
    kept: dict[tuple[str, int], Attempt] = {}
    # Kill the first run, then kill the resumed run too, then resume to the end.
    for kill, resume in ((True, False), (True, True), (False, True)):
        before = project.journal_attempts() if resume else 0
        proc = project.start(resume=resume)
        if kill:
            target = min(total - 6, before + rng.randint(0, (total - before) // 2))
            project.wait_for_attempts(proc, target)
            time.sleep(rng.uniform(0.0, 0.15))
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            assert proc.returncode == -signal.SIGKILL, "the run finished before the kill"
        else:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        settle()
        asked = project.take_log()
        if resume:
            # Never asked again: an attempt whose decision was recorded before this run.
            again = sorted(key for key in asked if key in kept and kept[key].valid)
            assert again == [], f"recorded decisions asked again: {again}"
        if kill:
            now = recorded(project)
            # Every attempt recorded earlier is still recorded, unchanged.
            assert {key: now.get(key) for key in kept} == kept
            kept = now
    final = {(a["row"], a["n"]): a for a in check_final(project)}
    for (row_id, number), attempt in kept.items():
        assert final[(row_id, number)]["decision"] == attempt.decision


def test_tries_made_before_a_sigkill_stay_in_the_attempts_retries(project: Project) -> None:
    """A try that failed and waits to be retried is journaled: --resume keeps it (issue 21)."""
    project.setup(rows=1, k=2)
    # A timeout looks transient: it is retried (a failure that is not, every first try
    # alike, stops the run before its retries: tests/agents/test_agent_setup.py).
    failing = {"default": {"sleep": 30, "then": "deny"}}
    (project.root / "script.json").write_text(json.dumps(failing), encoding="utf-8")
    config = yaml.safe_load(project.config.read_text(encoding="utf-8"))
    config["agent"]["timeout_s"] = 0.5
    config["retry"] = {"attempts": 3, "backoff_s": 30, "max_backoff_s": 30}
    project.config.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = project.start()
    deadline = time.monotonic() + 60
    while b'{"tried"' not in (project.journal.read_bytes() if project.journal.exists() else b""):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    settle()
    before = read_journal(project.journal).tries
    assert before and all(
        notes and set(notes) == {"timeout: killed after the 0.5s timeout"}
        for notes in before.values()
    )
    # The agent recovers; the resumed run retries at once and finishes.
    (project.root / "script.json").write_text(json.dumps({"default": "deny"}), encoding="utf-8")
    config["agent"]["timeout_s"] = 30
    config["retry"] = {"attempts": 3, "backoff_s": 0}
    project.config.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = project.start(resume=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    final = {(a["row"], a["n"]): a for a in check_final(project, rows=1, k=2)}
    for key, notes in before.items():
        assert final[key]["decision"] == "deny"
        assert tuple(final[key]["retries"]) == notes  # the tries before the kill, kept
    # The control: an attempt with no try before the kill has no retries.
    for key in set(final) - set(before):
        assert "retries" not in final[key]


def test_earlier_tries_count_against_the_retry_budget() -> None:
    """On resume an attempt gets only the tries it has left, and lists all of them."""
    from passk_action.agents.protocol import AttemptRequest
    from passk_action.agents.runner import FunctionAgent
    from passk_action.agents.scheduler import Keeping, RetryPolicy, Schedule, run_attempts
    from passk_action.core.model import Row

    asked: list[int] = []

    def crash(request: AttemptRequest) -> Any:
        asked.append(request.number)
        raise RuntimeError("still down")

    request = AttemptRequest(Row("r1", {}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
    noted: list[str] = []
    (attempt,) = run_attempts(
        [request],
        FunctionAgent(crash),
        Schedule(concurrency=1, retry=RetryPolicy(attempts=2, backoff_s=0)),
        keeping=Keeping(
            on_retry=lambda _r, note: noted.append(note),
            earlier_tries={("r1", 1): ("exception: RuntimeError: down before the kill",)},
        ),
        sleep=lambda _s: None,
    )
    assert len(asked) == 2  # three tries in all, one made before the kill
    assert attempt.retries == (
        "exception: RuntimeError: down before the kill",
        "exception: RuntimeError: still down",
    )
    assert noted == ["exception: RuntimeError: still down"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_cleanly_and_resume(project: Project, sig: int) -> None:
    proc = project.start()
    project.wait_for_attempts(proc, 4)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert out == ""
    assert "Traceback" not in err
    how = [line for line in err.splitlines() if "--resume" in line]
    assert len(how) == 1, err
    assert how[0].startswith(f"passk: error: {project.journal}: run stopped with ")
    assert how[0].endswith(
        f"of {ROWS * K} attempts recorded (continue it with --resume (out: {project.out}))"
    )
    assert len(err.splitlines()) <= 2, err  # the stop notice, then how to resume
    assert project.journal.exists() and not project.out.exists()
    settle()
    kept = recorded(project)
    assert len(kept) >= 4
    project.take_log()

    proc = project.start(resume=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    asked = set(project.take_log())
    assert asked.isdisjoint(kept)
    assert len(asked) == ROWS * K - len(kept)  # nothing asked twice, nothing skipped
    check_final(project)


def hand_made_journal(project: Project, attempts: list[Attempt]) -> None:
    """A journal as ``passk run`` writes it, for the project's real dataset and config."""
    inputs = load_inputs(str(project.config))
    header = Run(
        tool_version=__version__,
        dataset_digest=inputs.dataset.digest,
        settings=inputs.config.settings,
        # The same description `passk run` records for this config's agent.
        agent=AgentInfo(Version.CANDIDATE, inputs.config.agent.describe()),
        created_at="2026-11-30T09:00:00Z",
        rows=row_records(inputs.dataset),
        attempts=(),
    )
    with Journal.create(project.journal, header) as journal:
        for attempt in attempts:
            journal.append(attempt)


def test_torn_last_line_is_dropped_with_a_warning_and_the_run_resumes(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project.setup(rows=2, default="deny")
    monkeypatch.setenv("PASSK_SCRIPTED_LOG", str(project.log))
    # Recorded answers the scripted agent would never give: proof they were kept.
    hand_made_journal(
        project,
        [
            Attempt("r01", 1, Phase.MAIN, "approve"),
            Attempt("r02", 2, Phase.MAIN, None, error="timeout", detail="killed"),
        ],
    )
    with project.journal.open("a", encoding="utf-8") as handle:
        handle.write('{"row":"r01","n":2,"phase":"main","deci')  # the kill hit mid-write
    assert main(project.argv(resume=True)) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"passk: warning: {project.journal}:4: dropped a torn last line "
        "(the run was killed mid-write)\n"
    )
    final = {(a["row"], a["n"]): a for a in check_final(project, rows=2)}
    assert final[("r01", 1)]["decision"] == "approve"
    assert final[("r02", 2)]["error"] == "timeout"  # an error attempt is kept, not retried
    assert sorted(project.take_log()) == [("r01", 2), ("r01", 3), ("r02", 1), ("r02", 3)]


def test_a_crash_while_resuming_never_loses_recorded_attempts(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resuming rewrites the journal (to drop a torn tail); a crash then must not truncate it."""
    project.setup(rows=2, default="deny")
    recorded_before = [Attempt("r01", n, Phase.MAIN, "approve") for n in (1, 2, 3)]
    hand_made_journal(project, recorded_before)

    class Killed(BaseException):
        """Stands in for SIGKILL: nothing after it runs (BaseException passes every handler)."""

    def append_then_die(self: Journal, attempt: Attempt) -> None:
        raise Killed

    monkeypatch.setattr(Journal, "append", append_then_die)
    with pytest.raises(Killed):
        main(project.argv(resume=True))
    monkeypatch.undo()
    assert [replace(a, duration_s=0.0) for a in read_journal(project.journal).attempts] == (
        recorded_before
    )


def test_resume_of_a_finished_run_asks_nothing_again(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project.setup(rows=2, default="deny")
    monkeypatch.setenv("PASSK_SCRIPTED_LOG", str(project.log))
    assert main(project.argv(resume=False)) == 0
    first = check_final(project, rows=2)
    assert len(project.take_log()) == 2 * K
    assert main(project.argv(resume=True)) == 0
    assert project.take_log() == []
    assert check_final(project, rows=2) == first
    capsys.readouterr()


def test_resume_without_anything_recorded_starts_the_run(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project.setup(rows=2, default="deny")
    monkeypatch.setenv("PASSK_SCRIPTED_LOG", str(project.log))
    assert main(project.argv(resume=True)) == 0
    check_final(project, rows=2)
    assert len(project.take_log()) == 2 * K
    capsys.readouterr()


def test_resume_refuses_a_journal_of_another_dataset_or_k(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.setup(rows=2, default="deny")
    hand_made_journal(project, [Attempt("r01", 1, Phase.MAIN, "approve")])
    project.setup(rows=3, default="deny")  # a row was added since the journal was written
    assert main(project.argv(resume=True)) == 2
    assert capsys.readouterr().err == (
        f"passk: error: {project.journal}: the journal was recorded on another version of the "
        "dataset (start the run anew without --resume)\n"
    )
    project.setup(rows=2, k=4, default="deny")
    assert main(project.argv(resume=True)) == 2
    assert capsys.readouterr().err == (
        f"passk: error: {project.journal}: the journal was recorded with k=3, not 4 "
        "(start the run anew without --resume)\n"
    )
    # Refusing kept the journal: nothing recorded is lost by a wrong --resume.
    assert len(read_journal(project.journal).attempts) == 1


def test_a_run_stopped_by_the_extractor_check_resumes_once_the_rules_are_fixed(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The extractor matches nothing: the run stops after its first attempts,
    # their answers kept in the journal.  Fixed rules read them again on
    # --resume, and only the attempts never asked are asked.
    project.setup(rows=2, default="Decision: deny")
    config = yaml.safe_load(project.config.read_text(encoding="utf-8"))
    config["scoring"] = {"extract": {"regex": "Verdict: (\\w+)"}}
    project.config.write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.setenv("PASSK_SCRIPTED_LOG", str(project.log))
    assert main(project.argv(resume=False)) == 2
    err = capsys.readouterr().err
    assert "none of the 4 answers could be read" in err
    assert "then continue with --resume: the answers recorded in run.json.journal.jsonl" in err
    first = project.take_log()
    assert len(first) == 4 and len(read_journal(project.journal).attempts) == 4
    # Without --resume the journal is not dropped; the refusal names the way on.
    assert main(project.argv(resume=False)) == 2
    assert "continue it with --resume (under changed scoring rules" in capsys.readouterr().err
    config["scoring"] = {"extract": {"regex": "Decision: (\\w+)"}}
    project.config.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(project.argv(resume=True)) == 0
    assert capsys.readouterr().err == (
        "passk: warning: the journal's 4 attempt(s) were recorded under other scoring rules: "
        "their answers are read again under the current ones (4 changed)\n"
    )
    attempts = check_final(project, rows=2)
    assert all(a["decision"] == "deny" for a in attempts)
    assert sorted(project.take_log()) == sorted(
        set((f"r{i:02}", n) for i in (1, 2) for n in range(1, K + 1)) - set(first)
    )
    assert json.loads(project.out.read_text(encoding="utf-8"))["settings"]["scoring"]["extract"]


def test_resume_refuses_a_finished_run_of_another_dataset(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project.setup(rows=2, default="deny")
    assert main(project.argv(resume=False)) == 0
    before = project.out.read_bytes()
    project.setup(rows=3, default="deny")
    assert main(project.argv(resume=True)) == 2
    assert capsys.readouterr().err.endswith(
        f"passk: error: {project.out}: the run artifact was recorded on another version of "
        "the dataset (start the run anew without --resume)\n"
    )
    assert project.out.read_bytes() == before
