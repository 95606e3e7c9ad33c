"""An agent's setup, and an agent that cannot run: stop at once and say why everywhere.

The action tests build a small git repository whose agent is a real Python
program: the base commit's agent answers every row; a head commit makes it
import a module that is not installed (``ModuleNotFoundError``), or needs a
file that only its ``setup`` creates.  GitHub is the local fake.
"""

from __future__ import annotations

import os
import pwd
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent
from passk_action.agents.scheduler import FirstAttemptsWatch, Keeping, Schedule, run_attempts
from passk_action.agents.setup import run_setup
from passk_action.cli import main as cli_main
from passk_action.core.model import Attempt, Phase, Row, Version
from passk_action.errors import AgentCouldNotRun, ConfigError
from passk_action.inputs.config import parse_config
from passk_action.report.escape import inline
from support.agent_project import (
    CONFIRMED,
    REPO,
    TOKEN,
    make_repo,
    record_baseline,
    run_action,
    write_agent,
)
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git

"""A blocking row's evidence under the default rule: fresh pairs, the baseline right on each."""

MISSING = "ModuleNotFoundError: No module named 'openai_missing_module'"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


# --- the action: a candidate that cannot import its SDK -----------------------------


def test_a_candidate_missing_its_sdk_stops_at_once_and_says_why_everywhere(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra="import openai_missing_module")
    head = commit(repo, "use the SDK")
    got = run_action(repo, tmp_path, fake, base, head)

    assert got["code"] == 2
    # The first min(rows*k, 2*concurrency) = 4 attempts, then nothing: no
    # further candidate attempts, no baseline and no confirmation.
    assert len(got["asked"]) == 4
    assert {version for _, _, version in got["asked"]} == {"candidate"}
    assert MISSING in got["log"]
    assert "::error title=passk%3A the candidate agent could not run::" in got["log"]
    assert got["log"].count("first error") == 1  # said as soon as it happened
    assert "## passk: the candidate agent could not run" in got["summary"]
    assert MISSING in got["summary"] and "The gate did not decide" in got["summary"]
    bodies = fake.comment_bodies(7)
    assert len(bodies) == 1 and MISSING in bodies[0]
    assert "could not run" in bodies[0] and "confirmation attempt" not in bodies[0]
    (check,) = fake.check_runs
    assert check["conclusion"] == "failure"
    assert check["output"]["title"] == f"passk: the candidate agent could not run — {MISSING}"
    assert got["outputs"]["passed"] == "false"
    assert fake.violations == []


def test_could_not_run_comments_in_changes_mode_and_completes_the_started_check(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra="import openai_missing_module")
    head = commit(repo, "use the SDK")
    got = run_action(repo, tmp_path, fake, base, head, {"INPUT_COMMENT": "changes"})
    assert got["code"] == 2, got["log"]
    [body] = fake.comment_bodies(7)
    # The comment's heading, the check's title and the summary's heading read alike.
    title = f"passk: the candidate agent could not run — {MISSING}"
    assert body.splitlines()[1] == f"### ❌ {inline(title, 200)}"
    assert f"## {inline(title, 200)}" in got["summary"]
    assert "because its first attempts all failed" in body and MISSING in body
    [run] = fake.check_runs
    assert [status for _, _, status in fake.check_run_history] == ["in_progress", "completed"]
    assert run["output"]["title"] == title
    assert run["output"]["summary"].startswith(f"### ❌ {inline(title, 200)}")
    assert fake.violations == []


def test_setup_runs_once_per_version_the_baselines_in_the_base_checkout(
    tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SETUP_LOG", str(tmp_path / "setup.log"))
    # The agent needs a file only its setup makes (as an SDK needs `pip install`).
    setup = 'echo "$PWD $PASSK_VERSION-none" >> "$SETUP_LOG" && echo ok > installed.txt'
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"], "setup": [setup, "true"]})
    (repo / "installed.txt").write_text("ok\n")  # for recording the baseline locally
    (repo / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\ninstalled.txt\n")
    write_agent(repo, extra="open('installed.txt').read()")
    base = record_baseline(repo)
    (tmp_path / "setup.log").unlink()  # the local `passk baseline` ran it once
    (repo / "installed.txt").unlink()
    git(repo, "checkout", "-q", "-b", "feature")
    # The candidate loses must-not-break row r0: confirmation runs the base agent.
    write_agent(repo, extra="open('installed.txt').read()", answers={"r0": "approve"})
    head = commit(repo, "candidate")
    got = run_action(repo, tmp_path, fake, base, head)

    assert got["code"] == 1, got["log"]
    assert got["outputs"]["lost"] == "1"
    cwds = [line.split()[0] for line in got["setup"]]
    assert len(cwds) == 2  # once per version, not per attempt
    # The baseline's first, in a checkout of the base commit, before any of the
    # pull request's code runs; then the candidate's, in the pull request's checkout.
    assert cwds[0] != str(repo) and cwds[1] == str(repo)
    assert "-none" in got["setup"][0]  # setup is not an attempt: no PASSK_VERSION
    groups = [
        got["log"].index(f"::group::passk: setup of the {version} agent (2 command(s))")
        for version in ("baseline", "candidate")
    ]
    assert groups == sorted(groups)
    assert "passk: candidate setup done in" in got["log"]
    assert any(v == "baseline" for _, _, v in got["asked"])  # confirmation ran
    # The default rule's evidence: the baseline run again beside the candidate, always right.
    assert CONFIRMED in fake.comment_bodies(7)[0]


def test_a_failing_setup_is_exit_2_naming_the_command_before_any_attempt(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    setup = "echo collecting >&2; echo 'ERROR: No matching distribution for openai==99' >&2; exit 1"
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    config = yaml.safe_load((repo / "passk.yml").read_text())
    config["agent"]["setup"] = [setup]
    (repo / "passk.yml").write_text(yaml.safe_dump(config))
    head = commit(repo, "add setup")
    # The candidate runs the base config's agent (trusted), so set it on main too.
    git(repo, "checkout", "-q", "main")
    (repo / "passk.yml").write_text(yaml.safe_dump(config))
    base = commit(repo, "setup on main")
    git(repo, "checkout", "-q", "feature")
    git(repo, "merge", "-q", "main", "-m", "merge")
    head = git(repo, "rev-parse", "HEAD")
    got = run_action(repo, tmp_path, fake, base, head)
    assert got["code"] == 2
    assert got["asked"] == []
    assert "No matching distribution for openai==99" in got["log"]
    assert "agent.setup[0]" in got["log"]
    assert "exited with status 1" in got["log"]
    assert "No matching distribution" in fake.comment_bodies(7)[0]
    assert "because its setup failed" in fake.comment_bodies(7)[0]


# --- the CLI --------------------------------------------------------------------------


def cli_project(tmp_path: Path, agent: dict[str, Any]) -> Path:
    repo = make_repo(tmp_path, agent)
    return repo / "passk.yml"


def test_passk_run_with_an_agent_that_cannot_import_stops_after_the_first_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = cli_project(tmp_path, {"command": [sys.executable, "agent.py"]})
    write_agent(config.parent, extra="import openai_missing_module")
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "asked.jsonl"))
    out = tmp_path / "run.json"
    code = cli_main(["run", "--config", str(config), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert len((tmp_path / "asked.jsonl").read_text().splitlines()) == 4
    assert "candidate: first error, row r0 attempt" in err
    assert f"  | {MISSING}" in err
    assert (
        err.rstrip()
        .splitlines()[-1]
        .startswith(
            "passk: error: agent: the candidate agent could not run: its first 4 attempt(s) all "
            "failed the same way: exit-status: exited with status 1; stderr ends: " + MISSING
        )
    )
    # Nothing to resume: a new run is not refused over a journal of crashes.
    assert not out.exists() and not list(tmp_path.glob("repo/*.journal.jsonl"))
    assert not Path(str(out) + ".journal.jsonl").exists()


def test_an_agent_printing_a_log_line_to_stdout_stops_before_its_retries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One log line before the answer, naming its row: every attempt fails alike
    # in all but the words the agent printed, so the first tries settle it.
    config = cli_project(tmp_path, {"command": [sys.executable, "agent.py"]})
    settings = yaml.safe_load(config.read_text())
    settings["retry"] = {"attempts": 2, "backoff_s": 0}
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    write_agent(config.parent, extra="print('handling', request['id'], request['attempt'])")
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "asked.jsonl"))
    code = cli_main(["run", "--config", str(config), "--out", str(tmp_path / "run.json")])
    err = capsys.readouterr().err
    assert code == 2
    # The window of first tries (2 x concurrency 2), not 12 attempts times 3 tries,
    # recorded as the attempts they are: none retried.
    assert len((tmp_path / "asked.jsonl").read_text().splitlines()) == 4
    assert "candidate: 4/12 attempts, 4 errors, in " in err, err
    last = err.rstrip().splitlines()[-1]
    assert last.startswith(
        "passk: error: agent: the candidate agent could not run: its first 4 attempt(s) all "
        "failed the same way (so none was retried): bad-output: stdout holds the answer and "
        "1 other line(s), the first: 'handling r"
    ), last
    assert "write only the answer to stdout and logs to stderr" in last
    assert "send its logs and prints to stderr" in last


def test_the_first_tries_watch_leaves_transient_failures_to_their_retries() -> None:
    # A rate limit on every first try is what retries are for: no early stop
    # until the retries are spent; a retry that answers settles it for good.
    tries: dict[tuple[str, int], int] = {}

    def limited_once(req: AttemptRequest) -> dict[str, str]:
        key = (req.row.id, req.number)
        tries[key] = tries.get(key, 0) + 1
        if tries[key] == 1:
            raise RuntimeError("RateLimitError: Error code: 429")
        return {"decision": "deny"}

    requests = [request(f"r{i}") for i in range(8)]
    done = run_attempts(
        requests,
        FunctionAgent(limited_once),
        Schedule(concurrency=2, fail_fast=True),
        sleep=lambda s: None,
    )
    assert len(done) == 8 and all(a.valid for a in done)

    def crashes_once(req: AttemptRequest) -> dict[str, str]:
        key = (req.row.id, req.number)
        tries[key] = tries.get(key, 0) + 1
        if tries[key] == 1 and req.row.id == "r0":
            raise RuntimeError("cold start")
        return {"decision": "deny"}

    tries.clear()
    done = run_attempts(
        requests,
        FunctionAgent(crashes_once),
        Schedule(concurrency=2, fail_fast=True),
        sleep=lambda s: None,
    )
    assert len(done) == 8 and all(a.valid for a in done)


def test_failures_alike_but_for_the_words_the_agent_printed_are_one_failure() -> None:
    watch = FirstAttemptsWatch(2)
    printed = "stdout holds the answer and 1 other line(s), the first: {!r}; write only"
    one = Attempt("a", 1, Phase.MAIN, None, error="bad-output", detail=printed.format("row a"))
    two = Attempt("b", 1, Phase.MAIN, None, error="bad-output", detail=printed.format('it\'s "b"'))
    assert watch.add(one) is None
    error = watch.add(two)
    assert isinstance(error, AgentCouldNotRun) and "'row a'" in error.reason
    # Another exit status is another failure.
    watch = FirstAttemptsWatch(2)
    one = Attempt("a", 1, Phase.MAIN, None, error="exit-status", detail="exited with status 1")
    two = Attempt("b", 1, Phase.MAIN, None, error="exit-status", detail="exited with status 2")
    assert watch.add(one) is None and watch.add(two) is None and watch.settled


def test_passk_run_whose_attempts_all_failed_differently_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = cli_project(tmp_path, {"command": [sys.executable, "agent.py"]})
    # Each row fails its own way, so the first attempts do not fail alike.
    write_agent(config.parent, extra="sys.exit(int(request['id'][1:]) + 1)")
    out = tmp_path / "run.json"
    code = cli_main(["run", "--config", str(config), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert out.exists()  # recorded: nothing is lost
    assert "the candidate agent could not run: all 12 of its attempts failed; the first: " in err


def test_passk_run_runs_setup_once_in_the_agents_cwd_as_plain_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "agentdir").mkdir()
    config = cli_project(
        tmp_path,
        {
            "command": [sys.executable, "../agent.py"],
            "cwd": "agentdir",
            "setup": ['echo "$PWD $MODEL $GITHUB_TOKEN." >> "$SETUP_LOG"', "echo installing"],
            "env": {"MODEL": "small"},
        },
    )
    (tmp_path / "repo" / "agentdir").mkdir()
    (tmp_path / "repo" / "agentdir" / "answers.json").write_text("{}")
    monkeypatch.setenv("SETUP_LOG", str(tmp_path / "setup.log"))
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_neverSeen")
    code = cli_main(["run", "--config", str(config), "--out", str(tmp_path / "r.json"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (tmp_path / "setup.log").read_text().splitlines() == [
        f"{tmp_path / 'repo' / 'agentdir'} small ."
    ]
    assert "passk: setup (candidate): $ echo installing\n" in err
    assert "passk: setup (candidate):   installing\n" in err
    assert "passk: setup (candidate): 2 command(s) done in " in err


# --- units ------------------------------------------------------------------------------


def test_setup_is_validated_in_the_config() -> None:
    loaded = parse_config(
        "dataset: d.jsonl\nagent: {command: [a], setup: ['pip install -r requirements.txt']}\n"
        "baseline: {agent: {command: [b], setup: [npm ci]}}\n",
        Path("/p/passk.yml"),
    )
    assert loaded.config.agent.setup == ("pip install -r requirements.txt",)
    assert loaded.config.baseline.agent is not None
    assert loaded.config.baseline.agent.setup == ("npm ci",)
    assert loaded.config.baseline.agent.where == "/p/passk.yml: baseline.agent"
    with pytest.raises(ConfigError, match=r"passk.yml: agent.setup"):
        parse_config("dataset: d\nagent: {command: [a], setup: pip install}\n", Path("passk.yml"))
    with pytest.raises(ConfigError, match=r"passk.yml: agent.setup\[0\]"):
        parse_config("dataset: d\nagent: {command: [a], setup: ['  ']}\n", Path("passk.yml"))


def test_run_setup_names_the_failing_command_with_its_stderr_tail(tmp_path: Path) -> None:
    loaded = parse_config(
        "dataset: d\nagent: {command: [a], setup: ['true', 'echo out; echo bad >&2; exit 3']}\n",
        tmp_path / "passk.yml",
    )
    lines: list[str] = []
    with pytest.raises(AgentCouldNotRun) as info:
        run_setup(loaded.config.agent, {"PATH": "/usr/bin:/bin"}, Version.BASELINE, lines.append)
    error = info.value
    assert (error.version, error.stderr_tail, error.exit_code) == ("baseline", "bad", 2)
    assert error.reason == "setup command `echo out; echo bad >&2; exit 3` exited with status 3"
    assert error.where == f"{tmp_path / 'passk.yml'}: agent.setup[1]"
    assert lines[:2] == ["$ true", lines[1]] and lines[1].startswith("  (")
    assert "  out" in lines and "  bad" in lines


def test_what_a_setup_command_leaves_running_dies_with_it(tmp_path: Path) -> None:
    # One child keeps the setup's stdout open, one leaves its session: neither
    # may hold the setup up or live on beside the attempts.
    pids = tmp_path / "pids"
    loaded = parse_config(
        "dataset: d\nagent: {command: [a], setup: ["
        f"'sleep 300 & echo $! >> {pids}; setsid sleep 301 > /dev/null 2>&1 & "
        f"echo $! >> {pids}; echo started']}}\n",
        tmp_path / "passk.yml",
    )
    lines: list[str] = []
    started = time.monotonic()
    run_setup(loaded.config.agent, {"PATH": "/usr/bin:/bin"}, Version.CANDIDATE, lines.append)
    assert time.monotonic() - started < 60
    assert "  started" in lines
    left = [int(pid) for pid in pids.read_text(encoding="utf-8").split()]
    assert len(left) == 2
    for pid in left:
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "State:\tZ" in status.read_text(encoding="utf-8"), pid


def request(row_id: str, number: int = 1) -> AttemptRequest:
    return AttemptRequest(Row(row_id, {}, "deny"), number, Phase.MAIN, Version.CANDIDATE)


def crash(req: AttemptRequest) -> dict[str, str]:
    raise RuntimeError("no API key")


def test_fail_fast_stops_after_exactly_the_window_of_first_attempts() -> None:
    calls: list[str] = []

    def agent(req: AttemptRequest) -> dict[str, str]:
        calls.append(req.row.id)
        return crash(req)

    requests = [request(f"r{i}", n) for i in range(10) for n in (1, 2, 3)]
    seen: list[Attempt] = []
    with pytest.raises(AgentCouldNotRun) as info:
        run_attempts(
            requests,
            FunctionAgent(agent),
            Schedule(concurrency=3, retry=_no_retry(), fail_fast=True),
            keeping=Keeping(on_attempt=seen.append),
        )
    assert len(calls) == len(seen) == 6  # min(30, 2*3)
    assert info.value.version == "candidate" and info.value.attempts == 6
    assert "exception: RuntimeError: no API key" in info.value.reason


def test_fail_fast_lets_a_working_or_variously_failing_agent_run_on() -> None:
    requests = [request(f"r{i}") for i in range(12)]

    def first_ok(req: AttemptRequest) -> dict[str, str]:
        if req.row.id == "r1":
            return {"decision": "deny"}
        return crash(req)

    done = run_attempts(
        requests,
        FunctionAgent(first_ok),
        Schedule(concurrency=1, retry=_no_retry(), fail_fast=True),
    )
    assert len(done) == 12
    watch = FirstAttemptsWatch(3)
    one = Attempt("a", 1, Phase.MAIN, None, error="timeout", detail="killed")
    other = Attempt("b", 1, Phase.MAIN, None, error="exit-status", detail="exited with status 1")
    assert watch.add(one) is None and watch.add(other) is None and watch.settled


def _no_retry():  # type: ignore[no-untyped-def]
    from passk_action.agents.scheduler import RetryPolicy

    return RetryPolicy(attempts=0)


@pytest.mark.shares("agent-users")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run setup as another user")
def test_setup_runs_as_the_agent_user_with_its_private_home(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    loaded = parse_config(
        "dataset: d\nagent: {command: [a], setup: ['id -u; echo \"$HOME\"']}\n",
        tmp_path / "passk.yml",
    )
    lines: list[str] = []
    env = {"PATH": "/usr/bin:/bin", "PASSK_AGENT_USER": "nobody", "HOME": "/root"}
    run_setup(loaded.config.agent, env, Version.CANDIDATE, lines.append)
    uid, home = lines[1].strip(), lines[2].strip()
    assert uid == str(pwd.getpwnam("nobody").pw_uid)
    assert home != "/root" and "passk-agent-" in home
