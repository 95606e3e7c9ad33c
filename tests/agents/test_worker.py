"""The persistent worker pool against real worker processes that misbehave on request."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from passk_action.agents.protocol import AttemptCancelled, AttemptRequest
from passk_action.agents.runner import ProcessAgentSpec
from passk_action.agents.scheduler import RetryPolicy, Schedule, run_attempts
from passk_action.agents.worker import WORKER_DIED, WorkerAgent, request_line
from passk_action.core.model import Attempt, Json, Phase, Row, Version

# A worker written against the raw line protocol (no helper), so each way of
# breaking it can be chosen per request through the row's input.
WORKER_SCRIPT = r"""
import json, os, sys, time
for line in sys.stdin:
    req = json.loads(line)
    mode = req["input"].get("mode", "ok")
    rid = req["request_id"]
    print("working on " + req["id"], file=sys.stderr, flush=True)
    if mode == "die" or (mode == "die-first" and req["attempt"] == 1):
        print("fatal: out of memory", file=sys.stderr, flush=True)
        sys.exit(4)
    if mode == "kill":
        os.kill(os.getpid(), 9)
    if mode == "hang":
        time.sleep(60)
    if mode == "garbage":
        out = "INFO loading model"
    elif mode == "wrong-id":
        out = json.dumps({"request_id": "nope", "decision": "deny"})
    elif mode == "error":
        out = json.dumps({"request_id": rid, "error": "model overloaded"})
    elif mode == "no-decision":
        out = json.dumps({"request_id": rid, "checks": {}})
    elif mode == "huge":
        out = json.dumps({"request_id": rid, "decision": "x" * 5000})
    elif mode == "env":
        names = ["PASSK_PROTOCOL", "GITHUB_TOKEN", "FROM_CONFIG", "PASSK_ROW_ID"]
        out = json.dumps({"request_id": rid, "decision": "ok",
                          "checks": {n: os.environ.get(n, "<unset>") for n in names}})
    else:
        if mode == "sleep":
            time.sleep(req["input"]["s"])
        out = json.dumps({"request_id": rid, "decision": req["input"].get("answer", "deny"),
                          "checks": {"pid": os.getpid()}})
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    if mode == "twice":
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    if mode == "twice-late":
        time.sleep(0.3)  # the next request is waiting by now
        sys.stdout.write(json.dumps({"request_id": rid, "decision": "stale"}) + "\n")
        sys.stdout.flush()
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(WORKER_SCRIPT, encoding="utf-8")
    return path


def make_agent(
    script: Path,
    *,
    timeout_s: float = 10.0,
    max_workers: int | None = None,
    output_cap: int = 1 << 20,
    env: dict[str, str] | None = None,
    parent_env: dict[str, str] | None = None,
    command: tuple[str, ...] | None = None,
) -> WorkerAgent:
    spec = ProcessAgentSpec(
        command=command or (sys.executable, str(script)),
        cwd=script.parent,
        timeout_s=timeout_s,
        env=env or {},
    )
    return WorkerAgent(
        spec,
        parent_env if parent_env is not None else dict(os.environ),
        max_workers=max_workers,
        output_cap=output_cap,
    )


def req(row_id: str = "r1", number: int = 1, **input: Json) -> AttemptRequest:
    return AttemptRequest(Row(row_id, dict(input), "deny"), number, Phase.MAIN, Version.CANDIDATE)


def pid_of(attempt: Attempt) -> str:
    return dict(attempt.checks)["pid"]


def test_request_line_is_one_json_line_with_the_request_id() -> None:
    line = request_line(req("r-7", 2, text="a\nb"), "41")
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.decode() == (
        '{"request_id": "41", "id": "r-7", "input": {"text": "a\\nb"}, '
        '"attempt": 2, "version": "candidate"}\n'
    )


def test_one_worker_answers_many_requests(script: Path) -> None:
    with make_agent(script) as agent:
        first = agent.run(req("r1", answer="approve"))
        second = agent.run(req("r2"))
        assert (first.decision, second.decision) == ("approve", "deny")
        assert pid_of(first) == pid_of(second)
        assert agent.started == 1


def test_pool_grows_to_the_concurrency_and_no_further(script: Path) -> None:
    requests = [req(f"r{i}", mode="sleep", s=0.1) for i in range(16)]
    with make_agent(script) as agent:
        done = run_attempts(requests, agent, Schedule(concurrency=4, retry=RetryPolicy(attempts=0)))
        assert all(a.valid for a in done)
        pids = {pid_of(a) for a in done}
        assert agent.started == len(pids) <= 4
        assert len(pids) > 1  # the attempts really ran side by side


def test_max_workers_caps_the_pool(script: Path) -> None:
    requests = [req(f"r{i}", mode="sleep", s=0.05) for i in range(8)]
    with make_agent(script, max_workers=2) as agent:
        done = run_attempts(requests, agent, Schedule(concurrency=6, retry=RetryPolicy(attempts=0)))
        assert all(a.valid for a in done)
        assert agent.started <= 2


@pytest.mark.parametrize(
    ("mode", "how"), [("die", "exited with status 4"), ("kill", "killed by SIGKILL")]
)
def test_a_dead_worker_is_an_error_attempt_and_is_restarted(
    script: Path, mode: str, how: str
) -> None:
    with make_agent(script) as agent:
        before = agent.run(req("r0"))
        died = agent.run(req("r1", mode=mode))
        assert died.error == WORKER_DIED and died.decision is None
        assert died.detail is not None and how in died.detail.splitlines()[0]
        assert "working on r1" in died.detail
        assert "working on r0" not in died.detail  # only this request's stderr
        if mode == "die":
            assert "fatal: out of memory" in died.detail
        after = agent.run(req("r2"))
        assert after.valid and pid_of(after) != pid_of(before)
        assert agent.started == 2


def test_retry_after_a_worker_death_runs_on_a_fresh_worker(script: Path) -> None:
    with make_agent(script) as agent:
        [attempt] = run_attempts(
            [req("r1", mode="die-first")],
            agent,
            Schedule(concurrency=1, retry=RetryPolicy(attempts=1, backoff_s=0)),
        )
    # Attempt 1 of the row dies; its retry keeps number 1, so the worker dies again.
    assert attempt.error == WORKER_DIED
    assert len(attempt.retries) == 1 and attempt.retries[0].startswith("worker-died: the worker")


def test_timeout_kills_the_worker_and_the_next_request_gets_a_new_one(script: Path) -> None:
    with make_agent(script, timeout_s=0.5) as agent:
        started = time.monotonic()
        hung = agent.run(req("r1", mode="hang"))
        assert time.monotonic() - started < 5
        assert hung.error == "timeout"
        assert hung.detail is not None and "0.5s timeout" in hung.detail
        assert agent.run(req("r2")).valid
        assert agent.started == 2


@pytest.mark.parametrize(
    ("mode", "words"),
    [("garbage", "not one JSON object"), ("wrong-id", "request_id 'nope', expected")],
)
def test_an_out_of_step_stream_is_bad_output_and_the_worker_is_replaced(
    script: Path, mode: str, words: str
) -> None:
    with make_agent(script) as agent:
        bad = agent.run(req("r1", mode=mode))
        assert bad.error == "bad-output"
        assert bad.detail is not None and words in bad.detail
        assert agent.run(req("r2")).valid
        assert agent.started == 2


def test_reported_error_and_broken_answer_keep_the_worker(script: Path) -> None:
    with make_agent(script) as agent:
        reported = agent.run(req("r1", mode="error"))
        assert reported.error == "exception"
        assert reported.detail is not None
        assert reported.detail.startswith("the agent reported an error: model overloaded")
        broken = agent.run(req("r2", mode="no-decision"))
        assert broken.error == "bad-output"
        assert broken.detail is not None and 'no "decision"' in broken.detail
        assert agent.run(req("r3")).valid
        assert agent.started == 1


def test_an_answer_line_over_the_cap_kills_the_worker(script: Path) -> None:
    with make_agent(script, output_cap=1000) as agent:
        big = agent.run(req("r1", mode="huge"))
        assert big.error == "output-too-large"
        assert agent.run(req("r2")).valid
        assert agent.started == 2


def test_a_missing_command_is_spawn_failed(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "x.py", command=(str(tmp_path / "no-such-agent"),))
    attempt = agent.run(req())
    assert attempt.error == "spawn-failed"
    assert attempt.detail is not None and "not found" in attempt.detail


def test_worker_environment_is_scrubbed_and_marked(script: Path) -> None:
    parent = {**os.environ, "GITHUB_TOKEN": "ghs_secret", "PASSK_ROW_ID": "stale"}
    with make_agent(script, env={"FROM_CONFIG": "yes"}, parent_env=parent) as agent:
        checks = dict(agent.run(req("r1", mode="env")).checks)
    assert checks == {
        "PASSK_PROTOCOL": "worker",
        "GITHUB_TOKEN": "<unset>",
        "FROM_CONFIG": "yes",
        "PASSK_ROW_ID": "<unset>",  # per request, not per process
    }


def test_cancel_kills_in_flight_requests(script: Path) -> None:
    agent = make_agent(script)
    outcome: list[BaseException | object] = []

    def attempt() -> None:
        try:
            outcome.append(agent.run(req("r1", mode="hang")))
        except AttemptCancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    deadline = time.monotonic() + 5
    while agent.started == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    agent.cancel()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], AttemptCancelled)
    agent.close()


def test_close_stops_every_worker(script: Path) -> None:
    agent = make_agent(script)
    pids = {
        int(pid_of(a))
        for a in run_attempts(
            [req(f"r{i}", mode="sleep", s=0.1) for i in range(6)],
            agent,
            Schedule(concurrency=3, retry=RetryPolicy(attempts=0)),
        )
    }
    agent.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("mode", ["twice", "twice-late"])
def test_a_second_answer_to_an_answered_request_is_discarded(
    script: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with make_agent(script) as agent:
        first = agent.run(req("r1", mode=mode, answer="approve"))
        second = agent.run(req("r2", answer="deny"))
        third = agent.run(req("r3", answer="approve"))
        assert (first.decision, second.decision, third.decision) == ("approve", "deny", "approve")
        assert pid_of(first) == pid_of(second) == pid_of(third)
        assert agent.started == 1 and agent.strays == 1
        # On the attempt that waited while it came, not only on stderr.
        assert second.warnings == (
            "the worker answered request_id \"1\" (attempt 1 of row 'r1') a second time while"
            " this attempt waited; the extra answer was discarded",
        )
        assert first.warnings == third.warnings == ()
    err = capsys.readouterr().err
    assert 'answered request_id "1" a second time; the extra answer was discarded' in err


def test_an_answer_for_a_request_never_sent_still_restarts_the_worker(script: Path) -> None:
    with make_agent(script) as agent:
        attempt = agent.run(req("r1", mode="wrong-id"))
        assert attempt.error == "bad-output" and agent.strays == 0
