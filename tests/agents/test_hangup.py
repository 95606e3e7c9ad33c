"""A closed terminal stops passk as a cancelled job does: nothing it started outlives it.

Closing the terminal or the SSH session ``passk run`` was started from sends
it SIGHUP, whose default action ends a process at once: no reaper runs, and
every setup command and agent it started (and what they started) lives on
under PID 1.  passk handles SIGHUP as it handles SIGTERM and SIGINT.  Each
case runs a real ``passk run`` with setup commands or agents running that
leave processes behind, detached from their session too, and counts what is
left; SIGTERM, which passk always handled, is the control.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.agent_project import make_repo, write_agent
from support.paths import TESTS

SRC = TESTS.parent / "src"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("setsid") is None,
    reason="counts processes in /proc and detaches them with setsid (Linux)",
)

# The setup leaves a child in the background and one detached from its session,
# and waits on a third.
SETUP = (
    'sleep 1000 & echo $! >> "$PIDS"; '
    "setsid sh -c 'echo $$ >> \"$PIDS\"; exec sleep 1001' > /dev/null 2>&1 & "
    "sh -c 'echo $$ >> \"$PIDS\"; exec sleep 1002'"
)
SETUP_PIDS = 3

# Each attempt starts a child detached into a session of its own, then hangs.
AGENT = """
import subprocess, time
child = subprocess.Popen(["setsid", "sleep", "1003"])
with open(os.environ["PIDS"], "a") as handle:
    handle.write(f"{os.getpid()} {child.pid}\\n")
time.sleep(1000)
"""
AGENT_PIDS = 4  # two attempts in flight (concurrency 2), each with its child


def project(tmp_path: Path, stage: str) -> tuple[list[str], int]:
    """``passk run``'s command line with a setup or agents that linger; how many pids to await."""
    agent: dict[str, object] = {"command": [sys.executable, "agent.py"]}
    if stage == "setup":
        agent["setup"] = [SETUP]
    repo = make_repo(tmp_path, agent)
    if stage == "agents":
        write_agent(repo, extra=AGENT)
    command = [sys.executable, "-m", "passk_action", "run", "--config",
               str(repo / "passk.yml"), "--out", str(tmp_path / "run.json")]  # fmt: skip
    return command, SETUP_PIDS if stage == "setup" else AGENT_PIDS


def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "PIDS": str(tmp_path / "pids")}


def started(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids"
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


def wait_for_pids(tmp_path: Path, count: int, drain: int | None = None) -> list[int]:
    """The pids once ``count`` are written, reading the terminal ``drain`` meanwhile."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = started(tmp_path)
        if len(pids) >= count:
            time.sleep(0.2)  # the rest of what they write
            return started(tmp_path)
        if drain is None:
            time.sleep(0.05)
        elif select.select([drain], [], [], 0.05)[0]:
            with contextlib.suppress(OSError):  # EIO: passk closed its end
                os.read(drain, 65536)
    raise AssertionError(f"fewer than {count} processes started: {started(tmp_path)}")


def alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "State:\tZ" not in status.read_text(encoding="utf-8")
    except (FileNotFoundError, ProcessLookupError):
        return False


def left_running(pids: list[int]) -> list[int]:
    """The pids still running a moment after passk ended (the kill is asynchronous)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def kill_all(pids: list[int]) -> None:
    """Clean up after a failed case, so no test leaves processes behind."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("stage", ["setup", "agents"])
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_hangup_stops_passk_like_sigterm_and_nothing_it_started_outlives_it(
    tmp_path: Path, stage: str, signum: signal.Signals
) -> None:
    command, count = project(tmp_path, stage)
    proc = subprocess.Popen(
        command, env=env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # the test's own signals stay its own
    )  # fmt: skip
    pids: list[int] = []
    try:
        pids = wait_for_pids(tmp_path, count)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftover = left_running(pids)
        kill_all(leftover)
    assert leftover == [], (leftover, err)
    assert proc.returncode == 130, err
    assert f"passk: {signum.name}: stopping" in err
    assert "Traceback" not in err
    where = "the candidate agent's setup" if stage == "setup" else "run"
    assert where in err, err


def test_a_closed_terminal_stops_passk_and_nothing_it_started_outlives_it(tmp_path: Path) -> None:
    """The real thing: passk's controlling terminal closes under it (a lost SSH session).

    The kernel sends SIGHUP to passk, the terminal's controlling process, and
    every later write to the terminal fails with EIO.
    """
    command, count = project(tmp_path, "agents")
    terminal, passks_end = pty.openpty()
    proc = subprocess.Popen(
        ["setsid", "--ctty", *command], env=env(tmp_path),
        stdin=passks_end, stdout=passks_end, stderr=passks_end,
    )  # fmt: skip
    os.close(passks_end)
    pids: list[int] = []
    try:
        pids = wait_for_pids(tmp_path, count, drain=terminal)
        os.close(terminal)  # the SSH session is gone
        terminal = -1
        code = proc.wait(timeout=30)
    finally:
        if terminal >= 0:
            os.close(terminal)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftover = left_running(pids)
        kill_all(leftover)
    assert leftover == []
    assert code == 130  # stopped, as by SIGTERM, though the terminal it would say so on is gone
    assert (tmp_path / "run.json.journal.jsonl").exists()  # kept, for --resume
    assert not (tmp_path / "run.json").exists()
