"""A comparison killed in its confirmation rounds resumes asking nothing already answered.

Every attempt of every phase is journaled before it counts (issue 30): the
candidate's main attempts in its run's journal, the rounds' attempts of both
versions in the comparison's journal.  The injector is the agent itself
(``data/agents/answers_once.py``): at a confirmation attempt drawn from a
seeded RNG it SIGKILLs the real ``passk compare`` asking it, instead of
answering.  Run one attempt at a time, nothing else is in flight then, so
the promise is exact: every (version, row, attempt) is answered exactly
once over all the runs, and the verdict is the uninterrupted run's.  The
agent answers a re-asked attempt the other way, so a re-ask would show in
the verdict too, not only in its log.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.store.compare_journal import compare_journal_path

K = 3
AGENT = Path(__file__).parent.parent / "data" / "agents" / "answers_once.py"
FULL = Path("/dev/full")


def make_project(root: Path) -> None:
    rows = [
        {"id": row_id, "input": {"case": row_id}, "expected": "deny", "must_not_break": mnb}
        for row_id, mnb in (("g1", True), ("g2", True), ("g3", True), ("s1", False))
    ]
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    agent = {
        "command": [sys.executable, str(AGENT)],
        "protocol": "worker",
        "timeout_s": 30,
        "pass_env": ["ANSWERS_LOG", "ANSWERS_K", "ANSWERS_KILL_AT"],
    }
    config = {
        "dataset": "data.jsonl",
        "k": K,
        "concurrency": 1,
        "agent": agent,
        "baseline": {"artifact": ".passk/baseline.json", "agent": agent},
        "retry": {"attempts": 0, "backoff_s": 0},
    }
    (root / "passk.yml").write_text(yaml.safe_dump(config))


def passk(
    root: Path, *args: str, kill_at: int = 0, stdout: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ANSWERS_LOG": str(root / "answers.jsonl"),
        "ANSWERS_K": str(K),
        "ANSWERS_KILL_AT": str(kill_at),
    }
    return subprocess.run(
        [sys.executable, "-m", "passk_action", *args, "--config", str(root / "passk.yml")],
        cwd=root,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        check=False,
    )


def compare(root: Path, *extra: str, kill_at: int = 0, stdout: Any = subprocess.PIPE) -> int:
    argv = ["compare", "--json", str(root / "result.json"), "--quiet", *extra]
    return passk(root, *argv, kill_at=kill_at, stdout=stdout).returncode


def calls(root: Path) -> list[dict[str, Any]]:
    path = root / "answers.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def verdict(root: Path) -> dict[str, Any]:
    """The result with what differs between any two runs left out (times, executions)."""
    doc = json.loads((root / "result.json").read_text())
    return {key: doc[key] for key in ("gate", "rows", "lost", "gained")}


@dataclass(frozen=True)
class Recorded:
    """A project with its baseline recorded, and what its uninterrupted comparison did."""

    root: Path
    verdict: dict[str, Any]
    asked: frozenset[tuple[str, str, int]]
    """Every (version, row, attempt) the uninterrupted comparison asked."""
    confirming: int
    """How many of them are confirmation attempts."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("recorded")
    make_project(root)
    done = passk(root, "baseline", "--agent", "baseline.agent", "--quiet")
    assert done.returncode == 0, done.stderr
    (root / "answers.jsonl").unlink()
    whole = tmp_path_factory.mktemp("whole")
    shutil.copytree(root, whole, dirs_exist_ok=True)
    assert compare(whole) == 1
    confirming = sum(1 for c in calls(whole) if c["key"][2] > K)
    assert confirming >= 40, "the rounds are too short to be killed in"
    asked = frozenset(tuple(c["key"]) for c in calls(whole))
    return Recorded(root, verdict(whole), asked, confirming)


@pytest.mark.parametrize("seed", [3, 17])
def test_killed_in_the_rounds_and_resumed_answers_each_attempt_once(
    recorded: Recorded, tmp_path: Path, seed: int
) -> None:
    shutil.copytree(recorded.root, tmp_path, dirs_exist_ok=True)
    rng = random.Random(seed)
    kills = sorted(rng.sample(range(2, recorded.confirming - 1), 3))
    for n, kill_at in enumerate(kills):
        code = compare(tmp_path, *(["--resume"] if n else []), kill_at=kill_at)
        assert code == -signal.SIGKILL, f"the run ended ({code}) before attempt {kill_at}"
    assert compare(tmp_path, "--resume") == 1
    log = calls(tmp_path)
    answered = Counter(tuple(c["key"]) for c in log if c["answered"])
    assert [key for key, count in answered.items() if count != 1] == []
    assert sum(1 for c in log if not c["answered"]) == len(kills)  # the calls that killed
    assert set(answered) == recorded.asked
    assert verdict(tmp_path) == recorded.verdict
    assert not compare_journal_path(tmp_path / ".passk" / "candidate.json").exists()


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_a_full_disk_writing_the_result_loses_no_attempt(
    recorded: Recorded, tmp_path: Path
) -> None:
    shutil.copytree(recorded.root, tmp_path, dirs_exist_ok=True)
    with FULL.open("w") as full:
        assert compare(tmp_path, stdout=full) == 2
    before = len(calls(tmp_path))
    assert compare(tmp_path, "--resume") == 1
    assert calls(tmp_path)[before:] == [], "--resume asked the agent again"
    assert verdict(tmp_path) == recorded.verdict
