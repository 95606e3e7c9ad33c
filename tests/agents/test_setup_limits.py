"""A setup cannot hold the run hostage: time, a stop request, and the size of its output.

The candidate's setup is the pull request's code.  It may never end
(``sleep 100000``), print one enormous line, or flood the log; the job may be
cancelled while it runs.  Each attack runs beside its control, a setup that
behaves.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from passk_action.agents.setup import LINE_CHARS, RELAY_LINES, TAIL_LINES, run_setup
from passk_action.core.model import Version
from passk_action.errors import AgentCouldNotRun
from passk_action.inputs.agent_config import DEFAULT_SETUP_TIMEOUT_S
from passk_action.inputs.config import parse_config
from support.agent_project import REPO, TOKEN, make_repo, record_baseline, run_action
from support.fakegithub import FakeGitHub
from support.paths import TESTS
from support.pull_request_repo import commit, git
from support.runner_commands import obeyed

SRC = TESTS.parent / "src"


def agent_config(tmp_path: Path, setup: list[str], timeout_s: float | None = None):  # type: ignore[no-untyped-def]
    doc = {"dataset": "d", "agent": {"command": ["a"], "setup": setup}}
    if timeout_s is not None:
        doc["agent"]["setup_timeout_s"] = timeout_s  # type: ignore[index]
    return parse_config(json.dumps(doc), tmp_path / "passk.yml").config.agent


def gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "State:\tZ" in status.read_text(encoding="utf-8")


def wait_for(path: Path, seconds: float = 30.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text(encoding="utf-8").strip():
            time.sleep(0.2)  # the rest of what it writes
            return path.read_text(encoding="utf-8")
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


# -- time ---------------------------------------------------------------------------------


def test_the_setup_time_limit_defaults_to_ten_minutes(tmp_path: Path) -> None:
    assert agent_config(tmp_path, ["true"]).setup_timeout_s == DEFAULT_SETUP_TIMEOUT_S == 600


def test_a_setup_that_never_ends_is_stopped_at_its_time_limit_naming_the_command(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    never = f"sleep 100000 & echo $! > {pids}; wait"
    agent = agent_config(tmp_path, ["echo starting", never], timeout_s=1.5)
    lines: list[str] = []
    started = time.monotonic()
    with pytest.raises(AgentCouldNotRun) as info:
        run_setup(agent, {"PATH": "/usr/bin:/bin"}, Version.CANDIDATE, lines.append)
    assert time.monotonic() - started < 15
    error = info.value
    assert error.exit_code == 2 and error.during_setup
    assert error.reason == f"setup command `{never}` did not finish within 1.5s, so it was stopped"
    assert error.where == f"{tmp_path / 'passk.yml'}: agent.setup[1]"
    assert "agent.setup_timeout_s" in (error.hint or "")
    assert gone(int(pids.read_text()))  # and what it started is gone with it
    assert "  starting" in lines


def test_control_a_setup_within_its_time_limit_runs_to_the_end(tmp_path: Path) -> None:
    agent = agent_config(tmp_path, ["sleep 0.2; echo done"], timeout_s=30)
    lines: list[str] = []
    done = run_setup(agent, {"PATH": "/usr/bin:/bin"}, Version.CANDIDATE, lines.append)
    assert done.commands == ("sleep 0.2; echo done",) and "  done" in lines


def test_the_action_stops_a_never_ending_setup_with_exit_2(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"], "setup": ["sh setup.sh"],
                                "setup_timeout_s": 2})  # fmt: skip
    (repo / "setup.sh").write_text("echo ready\n")
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "setup.sh").write_text("echo installing; sleep 100000\n")
    head = commit(repo, "a setup that never ends")
    started = time.monotonic()
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(repo, tmp_path, fake, base, head)
        checks = list(fake.check_runs)
    assert time.monotonic() - started < 60
    assert got["code"] == 2
    errors = [c.data for c in obeyed(str(got["log"])) if c.name == "error"]
    assert len(errors) == 1
    assert "setup command `sh setup.sh` did not finish within 2s, so it was stopped" in errors[0]
    assert got["asked"] == []
    (check,) = checks
    assert check["status"] == "completed" and check["conclusion"] == "failure"


# -- output ---------------------------------------------------------------------------------

MEMORY_PROBE = r"""
import resource, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from passk_action.agents.setup import run_setup
from passk_action.core.model import Version
from passk_action.inputs.config import parse_config
limit = int(sys.argv[3]) * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
agent = parse_config(
    '{"dataset": "d", "agent": {"command": ["a"], "setup": [%s]}}' % sys.argv[2],
    Path("/tmp/passk.yml"),
).config.agent
shown = []
size = 0
def log(line):
    global size
    size += len(line)
    shown.append(line)
run_setup(agent, {"PATH": "/usr/bin:/bin"}, Version.CANDIDATE, log)
print(len(shown), size, max(map(len, shown)), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
print(shown[1][:40], shown[1][-60:])
"""

HUGE_LINE = '"head -c 314572800 /dev/zero | tr \\"\\\\\\\\0\\" x; echo; echo after"'
"""300 MiB of ``x`` and no newline, then one short line (as JSON inside the config)."""
SMALL_LINE = '"head -c 900 /dev/zero | tr \\"\\\\\\\\0\\" x; echo; echo after"'
"""The control: the same command, 900 characters."""
MEMORY_LIMIT_MIB = 400
"""Address space for the whole Python process running the setup (passk imported)."""


def run_bounded(command_json: str) -> subprocess.CompletedProcess[str]:
    """Run a setup in a Python limited to MEMORY_LIMIT_MIB of address space."""
    return subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(SRC), command_json, str(MEMORY_LIMIT_MIB)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_300_mib_line_without_a_newline_costs_no_memory() -> None:
    done = run_bounded(HUGE_LINE)
    assert done.returncode == 0, done.stderr[-3000:]
    count, size, longest, peak_kib = map(int, done.stdout.splitlines()[0].split())
    # "$ cmd", the cut line, "after", the duration: a few KiB of log, not 300 MiB.
    assert count == 4 and size < 2 * LINE_CHARS and longest <= LINE_CHARS + 60
    assert done.stdout.splitlines()[1].endswith("… (a line of 314,572,800 bytes, cut)")
    print(f"peak RSS {peak_kib / 1024:.0f} MiB")  # bench/README.md quotes it
    # Against the control's peak in this same Python (what an interpreter with
    # passk imported costs differs between machines): the 300 MiB line adds
    # less than a fifth of itself, so it was never held.
    *_, control_kib = map(int, run_bounded(SMALL_LINE).stdout.splitlines()[0].split())
    assert peak_kib - control_kib < 60 * 1024, (peak_kib, control_kib)


def test_control_a_short_line_is_relayed_whole_in_the_same_bound() -> None:
    done = run_bounded(SMALL_LINE)
    assert done.returncode == 0, done.stderr[-3000:]
    count, _, longest, _ = map(int, done.stdout.splitlines()[0].split())
    assert count == 4 and longest == 902  # "  " and the 900 characters, whole
    assert "cut" not in done.stdout


def test_a_flood_of_lines_shows_the_first_and_the_last(tmp_path: Path) -> None:
    agent = agent_config(tmp_path, ["seq 1 100000; echo 'ERROR: the cause' >&2; exit 1"])
    lines: list[str] = []
    with pytest.raises(AgentCouldNotRun) as info:
        run_setup(agent, {"PATH": "/usr/bin:/bin"}, Version.CANDIDATE, lines.append)
    assert len(lines) == 1 + RELAY_LINES + 1 + TAIL_LINES
    assert lines[1] == "  1" and lines[RELAY_LINES] == f"  {RELAY_LINES}"
    hidden = 100001 - RELAY_LINES - TAIL_LINES
    assert lines[RELAY_LINES + 1] == (
        f"  … {hidden:,} line(s) of output not shown; the last {TAIL_LINES}:"
    )
    assert lines[-1] == "  ERROR: the cause" and lines[-2] == "  100000"
    assert info.value.stderr_tail == "ERROR: the cause"


def test_control_a_setup_of_ordinary_length_is_relayed_whole(tmp_path: Path) -> None:
    agent = agent_config(tmp_path, ["seq 1 300"])
    lines: list[str] = []
    run_setup(agent, {"PATH": "/usr/bin:/bin"}, Version.CANDIDATE, lines.append)
    assert lines[1:-1] == [f"  {n}" for n in range(1, 301)]


# -- a stop request ------------------------------------------------------------------------


def cli_run(tmp_path: Path, setup: str) -> tuple[subprocess.Popen[str], Path]:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"], "setup": [setup]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "passk_action", "run", "--config", str(repo / "passk.yml"),
         "--out", str(tmp_path / "run.json")],
        env={**os.environ, "PYTHONPATH": str(SRC), "PIDS": str(tmp_path / "pids")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the test's own signals stay its own
    )  # fmt: skip
    return proc, repo


# The setup leaves a child in the background, one detached from its session,
# and waits on a third: none may live on after passk.
LINGERING = (
    'sleep 1000 & echo $! >> "$PIDS"; '
    "setsid sh -c 'echo $$ >> \"$PIDS\"; exec sleep 1001' > /dev/null 2>&1 & "
    "sh -c 'echo $$ >> \"$PIDS\"; exec sleep 1002'"
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_request_ends_setup_at_once_and_nothing_it_started_outlives_passk(
    tmp_path: Path, signum: signal.Signals
) -> None:
    proc, _ = cli_run(tmp_path, LINGERING)
    pids_file = tmp_path / "pids"
    try:
        text = wait_for(pids_file)
        while len(text.split()) < 3:
            text = wait_for(pids_file)
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert took < 10, took
    assert "stopped during the candidate agent's setup" in err
    pids = [int(pid) for pid in pids_file.read_text().split()]
    assert len(pids) == 3
    for pid in pids:
        assert gone(pid), (pid, Path(f"/proc/{pid}/cmdline").read_bytes())


def test_control_the_same_setup_without_a_signal_ends_by_itself(tmp_path: Path) -> None:
    proc, _ = cli_run(tmp_path, LINGERING.replace("exec sleep 1002", "exec sleep 0.3"))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 3 and all(gone(pid) for pid in pids)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def test_a_cancelled_job_stops_the_actions_setup_at_once(tmp_path: Path, fake: FakeGitHub) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"], "setup": ["sh setup.sh"]})
    (repo / "setup.sh").write_text("echo ready\n")
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "setup.sh").write_text(LINGERING + "\n")
    head = commit(repo, "a setup that lingers")
    event = json.loads((TESTS / "specs" / "events" / "pull_request.opened.json")
                       .read_text())  # fmt: skip
    event["number"] = event["pull_request"]["number"] = 7
    event["pull_request"]["head"]["sha"], event["pull_request"]["base"]["sha"] = head, base
    (tmp_path / "event.json").write_text(json.dumps(event))
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(SRC),
        "PIDS": str(tmp_path / "pids"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_CONFIG": "passk.yml",
        "INPUT_MODE": "gate",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "passk_action", "action"], cwd=repo, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        text = wait_for(tmp_path / "pids", 60)
        while len(text.split()) < 3:
            text = wait_for(tmp_path / "pids")
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert took < 10
    assert "stopped during the candidate agent's setup" in out
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        assert gone(pid), pid
