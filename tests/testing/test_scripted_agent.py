"""The shipped scripted agent, driven as a real process, one outcome kind at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import ProcessAgentSpec
from passk_action.agents.worker import WORKER_DIED, WorkerAgent
from passk_action.core.model import Phase, Row, Version
from passk_action.errors import UsageError
from passk_action.testing.scripted_agent import (
    Answer,
    Crash,
    Exit,
    Hang,
    RawStdout,
    Sleep,
    outcome_for,
    parse_script,
)

MODULE = "passk_action.testing.scripted_agent"


def run_agent(
    tmp_path: Path,
    script: Any,
    request: dict[str, Any] | str,
    *,
    log: Path | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    env = dict(os.environ)
    env.pop("PASSK_SCRIPTED_LOG", None)
    if log is not None:
        env["PASSK_SCRIPTED_LOG"] = str(log)
    stdin = request if isinstance(request, str) else json.dumps(request)
    return subprocess.run(
        [sys.executable, "-m", MODULE, str(path)],
        input=stdin.encode("utf-8"),
        capture_output=True,
        env=env,
        timeout=timeout,
    )


def req(row: str = "r-001", attempt: int = 1, version: str = "candidate") -> dict[str, Any]:
    return {"id": row, "input": {"q": row}, "attempt": attempt, "version": version}


def test_string_outcome_is_a_bare_decision(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"rows": {"r-001": {"candidate": ["deny"]}}}, req())
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"decision": "deny"}


def test_decision_with_checks_keeps_their_order(tmp_path: Path) -> None:
    outcome = {
        "decision": "deny",
        "checks": {"return_window": "ok", "damage": "none", "amount": "high"},
    }
    done = run_agent(tmp_path, {"default": outcome}, req())
    assert done.returncode == 0
    answer = json.loads(done.stdout)
    assert answer == outcome
    assert list(answer["checks"]) == ["return_window", "damage", "amount"]


def test_version_list_then_star_then_default(tmp_path: Path) -> None:
    script = {
        "default": "escalate",
        "rows": {"r-001": {"baseline": ["approve"], "*": ["deny"]}, "r-002": ["approve"]},
    }
    answers = {
        (row, version): json.loads(run_agent(tmp_path, script, req(row, 1, version)).stdout)
        for row, version in [
            ("r-001", "baseline"),
            ("r-001", "candidate"),
            ("r-002", "baseline"),
            ("r-003", "candidate"),
        ]
    }
    assert answers == {
        ("r-001", "baseline"): {"decision": "approve"},
        ("r-001", "candidate"): {"decision": "deny"},
        ("r-002", "baseline"): {"decision": "approve"},
        ("r-003", "candidate"): {"decision": "escalate"},
    }


def test_attempt_n_plays_element_n_and_repeats_the_last(tmp_path: Path) -> None:
    script = {"rows": {"r-001": {"candidate": ["approve", "deny", "escalate"]}}}
    got = [
        json.loads(run_agent(tmp_path, script, req(attempt=n)).stdout)["decision"]
        for n in (1, 2, 3, 4, 9)
    ]
    assert got == ["approve", "deny", "escalate", "escalate", "escalate"]


def test_crash_prints_a_traceback_and_exits_1(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"default": {"crash": "model overloaded"}}, req())
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"Traceback" in done.stderr
    assert b"ScriptedCrash: model overloaded" in done.stderr


def test_exit_code_and_stderr(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"default": {"exit": 3, "stderr": "quota exceeded"}}, req())
    assert (done.returncode, done.stdout, done.stderr) == (3, b"", b"quota exceeded")


def test_sleep_then_outcome(tmp_path: Path) -> None:
    started = time.monotonic()
    done = run_agent(tmp_path, {"default": {"sleep": 0.5, "then": {"exit": 4}}}, req())
    assert time.monotonic() - started >= 0.5
    assert done.returncode == 4


def test_raw_stdout_is_written_verbatim(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"default": {"stdout": "I think: deny\n{"}}, req())
    assert (done.returncode, done.stdout) == (0, b"I think: deny\n{")


def test_hang_never_finishes(tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_agent(tmp_path, {"default": {"hang": True}}, req(), timeout=1.5)


def test_missing_row_without_default_exits_2_with_one_line(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"rows": {"r-001": ["deny"]}}, req("r-404"))
    assert done.returncode == 2
    message = done.stderr.decode()
    assert message.count("\n") == 1
    assert "r-404" in message and "default" in message


def test_env_fills_in_what_the_request_lacks(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"rows": {"r-007": {"baseline": ["a", "b"]}}}))
    env = dict(os.environ, PASSK_ROW_ID="r-007", PASSK_VERSION="baseline", PASSK_ATTEMPT="2")
    done = subprocess.run(
        [sys.executable, "-m", MODULE, str(path)],
        input=b'{"input": {}}',
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert json.loads(done.stdout) == {"decision": "b"}


@pytest.mark.parametrize(
    ("script", "fragment"),
    [
        ({"default": {"decision": None}}, "decision must not be null"),
        ({"rows": {"r-001": {"candidate": []}}}, "non-empty list"),
        ({"rows": {"r-001": {"canddate": ["deny"]}}}, "canddate"),
        ({"default": {"decision": "deny", "crash": "x"}}, "exactly one"),
        ({"default": {"sleep": 1}}, "needs 'then'"),
        ({"default": {"hang": False}}, "hang must be true"),
        ({"default": {"exit": "3"}}, "exit must be an integer"),
        ({"default": "deny", "extra": 1}, "unknown top-level"),
    ],
)
def test_invalid_script_exits_2_naming_the_problem(
    tmp_path: Path, script: Any, fragment: str
) -> None:
    done = run_agent(tmp_path, script, req())
    assert done.returncode == 2
    assert fragment in done.stderr.decode()
    assert b"Traceback" not in done.stderr


def test_request_that_is_not_json_exits_2(tmp_path: Path) -> None:
    done = run_agent(tmp_path, {"default": "deny"}, "not json")
    assert done.returncode == 2
    assert "stdin" in done.stderr.decode()


def test_log_records_every_request_including_hung_ones(tmp_path: Path) -> None:
    log = tmp_path / "asked.jsonl"
    script = {"rows": {"r-001": ["deny"], "r-002": [{"hang": True}]}}
    run_agent(tmp_path, script, req("r-001", 1), log=log)
    run_agent(tmp_path, script, req("r-001", 2, "baseline"), log=log)
    with pytest.raises(subprocess.TimeoutExpired):
        run_agent(tmp_path, script, req("r-002", 1), log=log, timeout=1.5)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(x["id"], x["attempt"], x["version"]) for x in lines] == [
        ("r-001", 1, "candidate"),
        ("r-001", 2, "baseline"),
        ("r-002", 1, "candidate"),
    ]
    assert lines[0]["input"] == {"q": "r-001"}


def test_concurrent_log_lines_stay_whole(tmp_path: Path) -> None:
    log = tmp_path / "asked.jsonl"
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"default": "approve"}))
    env = dict(os.environ, PASSK_SCRIPTED_LOG=str(log))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", MODULE, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        for _ in range(8)
    ]
    for n, proc in enumerate(procs, start=1):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(req(attempt=n) | {"input": "x" * 5000}).encode())
        proc.stdin.close()
    assert all(proc.wait(timeout=30) == 0 for proc in procs)
    attempts = sorted(json.loads(line)["attempt"] for line in log.read_text().splitlines())
    assert attempts == list(range(1, 9))


def test_parse_script_in_process() -> None:
    script = parse_script(
        {
            "rows": {
                "r-1": {
                    "*": [
                        {"sleep": 0, "then": {"crash": "x"}},
                        {"exit": 3},
                        {"stdout": "?"},
                        {"hang": True},
                        "ok",
                    ]
                }
            },
        }
    )
    assert [outcome_for(script, "r-1", "baseline", n) for n in range(1, 7)] == [
        Sleep(0.0, Crash("x")),
        Exit(3),
        RawStdout("?"),
        Hang(),
        Answer("ok"),
        Answer("ok"),
    ]
    with pytest.raises(UsageError, match="no outcome for row 'r-2'"):
        outcome_for(script, "r-2", "baseline", 1)


# --- the worker protocol: one process, every outcome kind, through passk's worker pool ---


def test_as_a_worker_each_outcome_is_what_passk_makes_of_a_worker_doing_it(
    tmp_path: Path,
) -> None:
    script = {
        "rows": {
            "answers": [{"decision": "deny", "checks": {"window": "ok"}}, "approve"],
            "crash": [{"crash": "model overloaded"}],
            "exit": [{"exit": 3, "stderr": "quota exceeded"}],
            "garbles": [{"stdout": "not json\n"}],
            "slow": [{"sleep": 0.05, "then": "escalate"}],
            "hangs": [{"hang": True}],
        }
    }
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    log = tmp_path / "asked.jsonl"
    spec = ProcessAgentSpec(
        command=(sys.executable, "-m", MODULE, str(path)), cwd=tmp_path, timeout_s=2.0
    )
    env = {**os.environ, "PASSK_SCRIPTED_LOG": str(log)}

    def ask(agent: WorkerAgent, row: str, number: int = 1) -> Any:
        return agent.run(
            AttemptRequest(Row(row, {}, "deny"), number, Phase.MAIN, Version.CANDIDATE)
        )

    with WorkerAgent(spec, env, max_workers=1) as agent:
        first, second = ask(agent, "answers", 1), ask(agent, "answers", 2)
        assert (first.decision, dict(first.checks), second.decision) == (
            "deny", {"window": "ok"}, "approve",
        )  # fmt: skip
        crash = ask(agent, "crash")
        assert crash.error == "exception" and "ScriptedCrash: model overloaded" in crash.detail
        assert ask(agent, "slow").decision == "escalate"
        assert agent.started == 1  # answers, a reported crash and a sleep: one worker
        died = ask(agent, "exit")
        assert died.error == WORKER_DIED and "exited with status 3" in died.detail
        assert "quota exceeded" in died.detail
        assert ask(agent, "garbles").error == "bad-output"
        assert ask(agent, "hangs").error == "timeout"
        assert ask(agent, "answers", 2).decision == "approve"
        assert agent.started == 4  # each of exit, garbles and hangs cost its worker
    asked = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(a["id"], a["attempt"]) for a in asked] == [
        ("answers", 1), ("answers", 2), ("crash", 1), ("slow", 1), ("exit", 1),
        ("garbles", 1), ("hangs", 1), ("answers", 2),
    ]  # fmt: skip
    assert all("request_id" not in a for a in asked)  # logged as the per-attempt agent logs


def test_as_a_worker_a_line_without_a_request_id_ends_it_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"default": "deny"}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", MODULE, str(path)],
        input=json.dumps(req()).encode() + b"\n",
        capture_output=True,
        env={**os.environ, "PASSK_PROTOCOL": "worker"},
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert b"request_id" in done.stderr and b"Traceback" not in done.stderr
