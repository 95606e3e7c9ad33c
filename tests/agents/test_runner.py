"""The agent runner against real misbehaving agent processes (tests/data/agents/)."""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from passk_action.agents.answer import Answer, BadOutput, parse_output
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent, ProcessAgent, ProcessAgentSpec, agent_env
from passk_action.agents.scheduler import Keeping, RetryPolicy, Schedule, run_attempts
from passk_action.core.model import Attempt, Json, Phase, Row, Version
from passk_action.core.runner_credentials import RUNNER_CREDENTIALS
from passk_action.errors import AgentError, UsageError
from support.paths import TESTS

AGENTS = TESTS / "data" / "agents"
NO_RETRY = RetryPolicy(attempts=0)


def request(
    row_id: str = "r1",
    number: int = 1,
    *,
    input: Json = None,
    version: Version = Version.CANDIDATE,
    phase: Phase = Phase.MAIN,
) -> AttemptRequest:
    row = Row(id=row_id, input={} if input is None else input, expected="approve")
    return AttemptRequest(row=row, number=number, phase=phase, version=version)


def process_agent(
    script: str,
    *args: str,
    timeout_s: float = 5.0,
    env: Mapping[str, str] | None = None,
    parent_env: Mapping[str, str] | None = None,
    output_cap: int = 1 << 20,
    cwd: Path = AGENTS,
) -> ProcessAgent:
    spec = ProcessAgentSpec(
        command=(sys.executable, str(AGENTS / script), *args),
        cwd=cwd,
        timeout_s=timeout_s,
        env=env or {},
        description=script,
    )
    base = dict(os.environ) if parent_env is None else dict(parent_env)
    return ProcessAgent(spec, base, output_cap=output_cap)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# --- the good path ---------------------------------------------------------


def test_good_agent_decision_and_checks_in_reported_order() -> None:
    attempt = process_agent("good.py").run(request(input={"answer": "approve"}))
    assert attempt.decision == "approve"
    assert attempt.error is None and attempt.detail is None
    assert attempt.checks == (
        ("return_window", "ok"),
        ("proof_of_purchase", "missing"),
        ("amount_ok", "true"),
        ("score", "0.5"),
        ("notes", "null"),
        ("nested", '{"b":1,"a":[1,2]}'),
    )
    assert (attempt.row_id, attempt.number, attempt.phase) == ("r1", 1, Phase.MAIN)
    assert 0 < attempt.duration_s < 5


def test_agent_receives_request_and_scrubbed_environment(tmp_path: Path) -> None:
    parent = {
        "PATH": os.environ.get("PATH", ""),
        "GITHUB_TOKEN": "ghs_secret",
        "GH_TOKEN": "gh_secret",
        "FROM_PARENT": "parent",
        "FROM_CONFIG": "parent-loses",
    }
    agent = process_agent("echo.py", parent_env=parent, env={"FROM_CONFIG": "config"}, cwd=tmp_path)
    attempt = agent.run(
        request("row-7", 4, input={"text": "héllo"}, version=Version.BASELINE, phase=Phase.CONFIRM)
    )
    checks = dict(attempt.checks)
    assert json.loads(checks["stdin"]) == {
        "id": "row-7",
        "input": {"text": "héllo"},
        "attempt": 4,
        "version": "baseline",
    }
    assert checks["GITHUB_TOKEN"] == "<unset>"
    assert checks["GH_TOKEN"] == "<unset>"
    assert checks["FROM_PARENT"] == "parent"
    assert checks["FROM_CONFIG"] == "config"
    assert (checks["PASSK_VERSION"], checks["PASSK_ROW_ID"], checks["PASSK_ATTEMPT"]) == (
        "baseline",
        "row-7",
        "4",
    )
    assert Path(checks["cwd"]).resolve() == tmp_path.resolve()
    assert attempt.phase is Phase.CONFIRM


def test_no_runner_credential_reaches_the_agent_even_from_its_own_env() -> None:
    parent = {"PATH": os.environ.get("PATH", ""), "GITHUB_TOKEN": "ghs_secret", "GH_TOKEN": "x"}
    # A spec built in code (the loader refuses such a config) still cannot set one.
    attempt = process_agent("echo.py", parent_env=parent, env={"GITHUB_TOKEN": "y"}).run(request())
    assert dict(attempt.checks)["GITHUB_TOKEN"] == "<unset>"
    assert dict(attempt.checks)["GH_TOKEN"] == "<unset>"


def test_agent_env_drops_every_runner_credential() -> None:
    spec = ProcessAgentSpec(command=("agent",), cwd=AGENTS, timeout_s=1.0)
    names = [*RUNNER_CREDENTIALS, "ACTIONS_CACHE_SERVICE_V2", "INPUT_CONFIG", "input_github-token"]
    env = agent_env({name: "secret" for name in names} | {"HOME": "/h"}, spec, request())
    assert not set(names) & set(env)
    assert env["HOME"] == "/h"


def test_agent_that_ignores_stdin_still_answers() -> None:
    # A 2 MiB input cannot fit the pipe buffer, so writing it hits a closed pipe.
    big = {"blob": "x" * (2 << 20)}
    attempt = process_agent("ignores_stdin.py").run(request(input=big))
    assert attempt.decision == "approve", attempt.detail


# --- faults ----------------------------------------------------------------


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    agent = process_agent("hang_with_grandchild.py", timeout_s=1.5, env={"PIDFILE": str(pidfile)})
    started = time.monotonic()
    attempt = agent.run(request())
    assert time.monotonic() - started < 4
    assert attempt.error == "timeout"
    assert attempt.decision is None
    assert attempt.detail is not None and "1.5s timeout" in attempt.detail
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while pid_alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(grandchild), f"grandchild {grandchild} survived the timeout"


def test_crash_is_an_exit_status_error_with_stderr() -> None:
    attempt = process_agent("crash.py").run(request())
    assert attempt.error == "exit-status"
    assert attempt.detail is not None
    first_line, _, rest = attempt.detail.partition("\n")
    assert first_line == "exited with status 1"
    assert "RuntimeError: boom: the model client blew up" in rest


def test_nonzero_exit_discards_a_printed_answer() -> None:
    attempt = process_agent("exit_status.py").run(request())
    assert (attempt.decision, attempt.error) == (None, "exit-status")
    assert attempt.detail is not None
    assert attempt.detail.startswith("exited with status 3\n")
    assert "giving up" in attempt.detail


def test_killed_by_signal_names_the_signal() -> None:
    attempt = process_agent("killed_by_signal.py").run(request())
    assert attempt.error == "exit-status"
    assert attempt.detail == "killed by SIGKILL"


@pytest.mark.parametrize(
    ("script", "fragment"),
    [
        ("not_json.py", "stdout is not one JSON object"),
        ("json_array.py", "must be a JSON object, got an array"),
        ("missing_decision.py", 'no "decision" key'),
        ("nonstring_decision.py", "the decision must be a string, got a JSON number"),
        ("checks_not_object.py", '"checks" must be a JSON object'),
    ],
)
def test_bad_output(script: str, fragment: str) -> None:
    attempt = process_agent(script).run(request())
    assert attempt.error == "bad-output"
    assert attempt.decision is None
    assert attempt.detail is not None and fragment in attempt.detail.splitlines()[0]


def test_stdout_flood_is_cut_off_quickly() -> None:
    started = time.monotonic()
    attempt = process_agent("stdout_flood.py", timeout_s=20, output_cap=256 << 10).run(request())
    assert time.monotonic() - started < 5
    assert attempt.error == "output-too-large"
    assert attempt.detail is not None and "262144 bytes" in attempt.detail


def test_stderr_flood_neither_blocks_nor_grows_the_detail() -> None:
    ok = process_agent("stderr_flood.py", timeout_s=20).run(request())
    assert ok.decision == "approve", ok.detail
    failed = process_agent("stderr_flood.py", "--fail", timeout_s=20).run(request())
    assert failed.error == "exit-status"
    assert failed.detail is not None
    assert failed.detail.rstrip().endswith("LAST WORDS")
    assert len(failed.detail) < 2200


def test_command_not_found() -> None:
    spec = ProcessAgentSpec(
        command=("/nonexistent/passk-agent",), cwd=AGENTS, timeout_s=1, description="missing"
    )
    attempt = ProcessAgent(spec, {}).run(request())
    assert attempt.error == "spawn-failed"
    assert attempt.detail is not None and "'/nonexistent/passk-agent' not found" in attempt.detail


def test_command_not_executable(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho '{}'\n")
    script.chmod(0o644)
    spec = ProcessAgentSpec(command=(str(script),), cwd=tmp_path, timeout_s=1)
    attempt = ProcessAgent(spec, {}).run(request())
    if os.geteuid() == 0 and attempt.error != "spawn-failed":
        pytest.skip("root may execute files without the x bit")
    assert attempt.error == "spawn-failed"
    assert attempt.detail is not None and "not executable" in attempt.detail


def test_missing_working_directory(tmp_path: Path) -> None:
    spec = ProcessAgentSpec(command=(sys.executable, "-V"), cwd=tmp_path / "gone", timeout_s=1)
    attempt = ProcessAgent(spec, {}).run(request())
    assert attempt.error == "spawn-failed"
    assert attempt.detail is not None and "working directory" in attempt.detail


def test_spec_rejects_empty_command_and_bad_timeout() -> None:
    with pytest.raises(AgentError, match="command is empty"):
        ProcessAgentSpec(command=(), cwd=AGENTS, timeout_s=1)
    with pytest.raises(AgentError, match="timeout must be positive"):
        ProcessAgentSpec(command=("x",), cwd=AGENTS, timeout_s=0)


# --- parsing (pure) --------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "fragment"),
    [
        (b"", "stdout is empty"),
        (b"  \n", "stdout is empty"),
        (b'{"decision": "a"} {"decision": "b"}', "Extra data"),
        (b'{"decision": ""}', '"decision" is empty'),
        (b'{"decision": "  "}', '"decision" is empty'),
        (b'{"decision": "a", "checks": {"x": 1, "x": 2}}', "duplicate key 'x'"),
        (b'{"decision": "a", "checks": {"x": NaN}}', "NaN is not valid JSON"),
        (b'{"decision": "\xff"}', "not UTF-8"),
        (b"12", "got a int"),
    ],
)
def test_parse_output_rejects(stdout: bytes, fragment: str) -> None:
    with pytest.raises(BadOutput, match=None) as info:
        parse_output(stdout)
    assert fragment in str(info.value)


def test_parse_output_accepts_null_checks_and_surrounding_whitespace() -> None:
    assert parse_output(b'\n {"decision": " deny ", "checks": null}\r\n') == Answer(" deny ")


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5),
        st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none()),
        max_size=8,
    )
)
def test_parse_output_keeps_check_order(checks: dict[str, Json]) -> None:
    stdout = json.dumps({"decision": "d", "checks": checks}).encode()
    parsed = parse_output(stdout).checks
    assert [name for name, _ in parsed] == list(checks)
    for (_, text), value in zip(parsed, checks.values(), strict=True):
        assert text == (value if isinstance(value, str) else json.dumps(value))


# --- FunctionAgent ---------------------------------------------------------


def test_function_agent_records_exceptions_and_bad_answers() -> None:
    def boom(_: AttemptRequest) -> dict[str, Json]:
        raise ValueError("no\nmodel")

    raised = FunctionAgent(boom).run(request())
    assert (raised.error, raised.detail) == ("exception", "ValueError: no model")
    bad = FunctionAgent(lambda _: {"decision": 3}).run(request())
    assert bad.error == "bad-output"
    good = FunctionAgent(lambda r: {"decision": "ok", "checks": {"n": r.number}}).run(
        request(number=2)
    )
    assert (good.decision, good.checks, good.number) == ("ok", (("n", "2"),), 2)


# --- run_attempts ----------------------------------------------------------


def test_concurrency_is_bounded_and_real(tmp_path: Path) -> None:
    agent = process_agent("timed.py", env={"TIMES_DIR": str(tmp_path), "SLEEP_S": "0.4"})
    requests = [request(f"r{i}", n) for i in range(4) for n in (1, 2)]
    attempts = run_attempts(requests, agent, Schedule(concurrency=3, retry=NO_RETRY))
    assert [a.decision for a in attempts] == ["approve"] * 8
    spans = [tuple(map(float, p.read_text().split())) for p in tmp_path.iterdir()]
    assert len(spans) == 8
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert 1 < peak <= 3


def test_results_are_in_request_row_order_and_journal_is_serial() -> None:
    def slow_for_early_rows(r: AttemptRequest) -> dict[str, Json]:
        time.sleep(0.05 if r.row.id == "b" else 0.0)
        return {"decision": "ok"}

    inside = 0
    overlaps: list[int] = []
    journal: list[tuple[str, int]] = []
    lock = threading.Lock()

    def on_attempt(a: Attempt) -> None:
        nonlocal inside
        with lock:
            inside += 1
            overlaps.append(inside)
        time.sleep(0.005)
        journal.append((a.row_id, a.number))
        with lock:
            inside -= 1

    requests = [request(row, n) for row in ("b", "a", "c") for n in (2, 1)]
    attempts = run_attempts(
        requests,
        FunctionAgent(slow_for_early_rows),
        Schedule(concurrency=4),
        keeping=Keeping(on_attempt=on_attempt),
    )
    assert [(a.row_id, a.number) for a in attempts] == [
        ("b", 1), ("b", 2), ("a", 1), ("a", 2), ("c", 1), ("c", 2),
    ]  # fmt: skip
    assert sorted(journal) == sorted((a.row_id, a.number) for a in attempts)
    assert max(overlaps) == 1
    assert journal[-1][0] == "b"  # journaled as they finished, not in the final order


def test_retry_then_success_records_the_failed_try(tmp_path: Path) -> None:
    agent = process_agent("flaky.py", env={"MARKER_DIR": str(tmp_path)})
    delays: list[float] = []
    attempts = run_attempts(
        [request("r1", 1), request("r1", 2)],
        agent,
        Schedule(concurrency=2, retry=RetryPolicy(attempts=2, backoff_s=0.5)),
        sleep=delays.append,
    )
    assert [a.decision for a in attempts] == ["approve", "approve"]
    for attempt in attempts:
        assert len(attempt.retries) == 1
        assert attempt.retries[0].startswith("exit-status: exited with status 1")
    assert len(list(tmp_path.glob("call-*"))) == 4
    assert len(delays) == 2 and all(0 <= d <= 0.5 for d in delays)


def test_wrong_decision_is_never_retried(tmp_path: Path) -> None:
    (tmp_path / "failed-r1-1").touch()  # the first-try failure is already used up
    agent = process_agent("flaky.py", env={"MARKER_DIR": str(tmp_path), "DECISION": "deny"})
    [attempt] = run_attempts([request()], agent, Schedule(concurrency=1), sleep=lambda _: None)
    assert (attempt.decision, attempt.retries) == ("deny", ())
    assert len(list(tmp_path.glob("call-*"))) == 1


def test_retries_exhausted_keep_every_failure(tmp_path: Path) -> None:
    agent = process_agent("flaky.py", env={"MARKER_DIR": str(tmp_path), "ALWAYS_FAIL": "1"})
    [attempt] = run_attempts(
        [request()],
        agent,
        Schedule(concurrency=1, retry=RetryPolicy(attempts=2)),
        sleep=lambda _: None,
    )
    assert attempt.error == "exit-status"
    assert attempt.retries == ("exit-status: exited with status 1",) * 2
    assert len(list(tmp_path.glob("call-*"))) == 3


def test_backoff_is_exponential_with_full_jitter() -> None:
    calls = 0

    def fails_four_times(_: AttemptRequest) -> dict[str, Json]:
        nonlocal calls
        calls += 1
        if calls <= 4:
            raise RuntimeError(f"try {calls}")
        return {"decision": "ok"}

    delays: list[float] = []
    policy = RetryPolicy(attempts=4, backoff_s=1.0, max_backoff_s=3.0)
    [attempt] = run_attempts(
        [request()],
        FunctionAgent(fails_four_times),
        Schedule(concurrency=1, retry=policy),
        sleep=delays.append,
        rng=random.Random(7),
    )
    expected_rng = random.Random(7)
    assert delays == [expected_rng.uniform(0, cap) for cap in (1.0, 2.0, 3.0, 3.0)]
    assert attempt.decision == "ok"
    assert attempt.retries == tuple(f"exception: RuntimeError: try {i}" for i in range(1, 5))


def test_stop_kills_in_flight_processes_and_starts_nothing_new(tmp_path: Path) -> None:
    agent = process_agent("sleeper.py", timeout_s=30)
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    attempts = run_attempts(
        [request(f"r{i}") for i in range(6)], agent, Schedule(concurrency=2), stop=stop
    )
    assert time.monotonic() - started < 3
    assert attempts == []


def test_stop_returns_what_completed() -> None:
    stop = threading.Event()
    calls: list[str] = []

    def answer(r: AttemptRequest) -> dict[str, Json]:
        calls.append(r.row.id)
        if len(calls) == 3:
            stop.set()
        return {"decision": "ok"}

    recorded: list[Attempt] = []
    attempts = run_attempts(
        [request(f"r{i}") for i in range(20)],
        FunctionAgent(answer),
        Schedule(concurrency=1),
        keeping=Keeping(on_attempt=recorded.append),
        stop=stop,
    )
    assert [a.row_id for a in attempts] == ["r0", "r1", "r2"]
    assert recorded == attempts
    assert len(calls) == 3


def test_journal_failure_stops_the_run_and_propagates() -> None:
    def on_attempt(_: Attempt) -> None:
        raise OSError("disk full")

    calls = 0

    def answer(_: AttemptRequest) -> dict[str, Json]:
        nonlocal calls
        calls += 1
        return {"decision": "ok"}

    with pytest.raises(OSError, match="disk full"):
        run_attempts(
            [request(f"r{i}") for i in range(50)],
            FunctionAgent(answer),
            Schedule(concurrency=2),
            keeping=Keeping(on_attempt=on_attempt),
        )
    assert calls < 50


def test_invalid_arguments() -> None:
    with pytest.raises(UsageError, match="concurrency must be at least 1"):
        run_attempts(
            [request()], FunctionAgent(lambda _: {"decision": "x"}), Schedule(concurrency=0)
        )
    with pytest.raises(ValueError, match="requested twice"):
        run_attempts(
            [request(), request()],
            FunctionAgent(lambda _: {"decision": "x"}),
            Schedule(concurrency=1),
        )
    with pytest.raises(UsageError, match="retry"):
        RetryPolicy(attempts=-1)


def test_progress_sees_every_attempt() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.events: list[str] = []

        def start(self, total: int, label: str) -> None:
            self.events.append(f"start {total} {label}")

        def advance(self, attempt: Attempt) -> None:
            self.events.append(f"advance {attempt.row_id}")

        def finish(self) -> None:
            self.events.append("finish")

    recorder = Recorder()
    run_attempts(
        [request("a", phase=Phase.CONFIRM, version=Version.BASELINE)],
        FunctionAgent(lambda _: {"decision": "x"}),
        Schedule(concurrency=1),
        progress=recorder,
    )
    assert recorder.events == ["start 1 baseline confirmation", "advance a", "finish"]
