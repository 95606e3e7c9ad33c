"""Agents do not outlive their attempt, or passk: double-forking escapees included.

Each agent here starts a process that leaves the agent's session
(``setsid()``) and, after the run, tries to rewrite a file.  The escapee is
bounded (it writes once after 1.5 s and exits), so a failing test leaves
nothing running for long.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.reaper import REAPER
from passk_action.agents.runner import ProcessAgent, ProcessAgentSpec, run_attempts
from passk_action.agents.scheduler import Schedule
from passk_action.agents.worker import WorkerAgent
from passk_action.core.model import Phase, Row, Version

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

# Forks a child that leaves the session and forks the escapee, then exits, so
# the escapee is an orphan outside the agent's session and process tree.
ESCAPE = r"""
import os, sys, time

def escape(target, double=True):
    if os.fork() == 0:
        os.setsid()
        if not double or os.fork() == 0:
            with open(target + ".tmp", "w") as handle:
                handle.write(str(os.getpid()))
            os.rename(target + ".tmp", target + ".pid")
            time.sleep(1.5)
            with open(target, "w") as handle:
                handle.write("rewritten after the run")
            os._exit(0)
        os._exit(0)
    if double:
        os.wait()
    deadline = time.time() + 10
    while not os.path.exists(target + ".pid") and time.time() < deadline:
        time.sleep(0.01)
"""

PROCESS_AGENT = (
    ESCAPE
    + r"""
import json
request = json.load(sys.stdin)
escape(request["input"]["target"])
print(json.dumps({"decision": "deny"}))
"""
)

WORKER_AGENT = (
    ESCAPE
    + r"""
import json
for line in sys.stdin:
    request = json.loads(line)
    if request["attempt"] == 1:
        escape(request["input"]["target"], double=request["input"].get("double", True))
    print(json.dumps({"request_id": request["request_id"], "decision": "deny"}), flush=True)
"""
)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def spec(tmp_path: Path, source: str) -> ProcessAgentSpec:
    (tmp_path / "agent.py").write_text(source, encoding="utf-8")
    return ProcessAgentSpec(
        command=(sys.executable, str(tmp_path / "agent.py")), cwd=tmp_path, timeout_s=20
    )


def request(target: Path, **extra: object) -> AttemptRequest:
    row = Row("r1", {"target": str(target), **extra}, "deny")
    return AttemptRequest(row, 1, Phase.MAIN, Version.CANDIDATE)


def escapee(target: Path) -> int:
    return int(Path(f"{target}.pid").read_text())


def assert_never_writes(target: Path) -> None:
    time.sleep(2.0)
    assert not target.exists(), "an escaped agent process rewrote a file after its attempt"


def test_a_double_forked_escapee_dies_with_its_process_attempt(tmp_path: Path) -> None:
    target = tmp_path / "shard.json"
    attempt = ProcessAgent(spec(tmp_path, PROCESS_AGENT), dict(os.environ)).run(request(target))
    assert attempt.decision == "deny", attempt
    assert REAPER.subreaper
    assert not alive(escapee(target))
    assert_never_writes(target)


def test_a_double_forked_escapee_dies_with_its_worker_request(tmp_path: Path) -> None:
    target = tmp_path / "shard.json"
    with WorkerAgent(spec(tmp_path, WORKER_AGENT), dict(os.environ)) as agent:
        assert agent.run(request(target)).decision == "deny"
        assert not alive(escapee(target))
        # The worker itself is kept: only what escaped it died.
        assert agent.run(request(tmp_path / "second.json")).decision == "deny"
        assert agent.started == 1
    assert_never_writes(target)


def test_nothing_a_worker_started_outlives_passk(tmp_path: Path) -> None:
    """A worker's child that left the session (but not the tree) dies when passk exits."""
    target = tmp_path / "shard.json"
    (tmp_path / "agent.py").write_text(WORKER_AGENT, encoding="utf-8")
    row = {"id": "r1", "input": {"target": str(target), "double": False}, "expected": "deny"}
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    config = {
        "dataset": "data.jsonl",
        "k": 2,
        "agent": {"command": [sys.executable, "agent.py"], "protocol": "worker", "timeout_s": 20},
    }
    (tmp_path / "passk.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "passk_action", "run", "--config", "passk.yml",
         "--out", "run.json", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not alive(escapee(target))
    assert_never_writes(target)


def test_passk_own_children_in_its_session_are_left_alone(tmp_path: Path) -> None:
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        target = tmp_path / "shard.json"
        ProcessAgent(spec(tmp_path, PROCESS_AGENT), dict(os.environ)).run(request(target))
        assert REAPER.sweep() == []
        assert helper.poll() is None
    finally:
        helper.kill()
        helper.wait()


def test_escapees_of_attempts_run_on_the_schedulers_threads_die(tmp_path: Path) -> None:
    """Agents start on the scheduler's threads; what escapes them is re-parented to the
    main thread, the one a sweep reads (reaper.py)."""
    targets = [tmp_path / f"shard{i}.json" for i in range(6)]
    agent = ProcessAgent(spec(tmp_path, PROCESS_AGENT), dict(os.environ))
    requests = [
        AttemptRequest(Row(f"r{i}", {"target": str(t)}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
        for i, t in enumerate(targets)
    ]
    attempts = run_attempts(requests, agent, Schedule(concurrency=3))
    assert [a.decision for a in attempts] == ["deny"] * len(targets)
    assert not any(alive(escapee(t)) for t in targets)
    time.sleep(2.0)
    assert not any(t.exists() for t in targets), "an escapee rewrote a file after its attempt"


def _started_outside_the_session() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )


def test_a_sweep_during_a_start_spares_the_agent_being_started() -> None:
    """A sweep that runs while an agent of the main thread is being started (its pid
    not recorded yet) waits for the start, then knows it as an agent."""
    swept: list[list[int]] = []
    sweeper = threading.Thread(target=lambda: swept.append(REAPER.sweep()))

    def start() -> subprocess.Popen[bytes]:
        proc = _started_outside_the_session()
        sweeper.start()  # the sweep meets the process before spawn() records it
        time.sleep(0.3)
        return proc

    proc = REAPER.spawn(start)
    try:
        sweeper.join(10)
        assert swept == [[]]
        assert proc.poll() is None, "the sweep killed an agent that was being started"
    finally:
        REAPER.kill_tree(proc.pid)
        proc.wait()
        REAPER.release(proc.pid)


def test_control_a_process_no_start_records_is_swept() -> None:
    """The same process, started without the reaper: a sweep kills and reaps it."""
    proc = _started_outside_the_session()
    try:
        assert REAPER.sweep() == [proc.pid]
        assert not alive(proc.pid)
    finally:
        proc.kill()
        with contextlib.suppress(ChildProcessError):
            proc.wait()
