"""Answers that are valid JSON text but cannot be stored as UTF-8 JSON are bad output.

A lone surrogate (``"\\ud800"``), nesting thousands deep or a 5,000-digit number
once ended ``passk run`` and every ``--resume`` with an internal error.  On each
transport (process, worker, HTTP, in-process) they are a ``bad-output`` error
attempt, and a run that meets them finishes and resumes.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.agents.http import HttpAgent
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent, ProcessAgent, ProcessAgentSpec
from passk_action.agents.worker import WorkerAgent
from passk_action.cli import main
from passk_action.core.model import Attempt, Phase, Row, Version
from passk_action.inputs.agent_config import HttpAgentConfig
from passk_action.store.artifact import attempt_to_json, journal_path, read_run

DEEP = 5000
UNSTORABLE: dict[str, str] = {
    "surrogate-decision": '{"decision": "\\ud800"}',
    "surrogate-check": '{"decision": "deny", "checks": {"why": "\\udfff"}}',
    "surrogate-check-name": '{"decision": "deny", "checks": {"\\ud83d": "ok"}}',
    "deep-check": '{"decision": "deny", "checks": {"tree": ' + "[" * DEEP + "]" * DEEP + "}}",
    "deep-answer": '{"decision": "deny", "x": ' + "[" * DEEP + "]" * DEEP + "}",
    "long-number": '{"decision": "deny", "checks": {"n": ' + "7" * 5000 + "}}",
}


def request(answer: str) -> AttemptRequest:
    row = Row("r1", {"answer": answer}, "deny")
    return AttemptRequest(row, 1, Phase.MAIN, Version.CANDIDATE)


def assert_bad_output(attempt: Attempt) -> None:
    assert attempt.error == "bad-output", attempt
    assert attempt.decision is None
    # What is recorded must itself be storable as UTF-8 JSON.
    json.dumps(attempt_to_json(attempt), ensure_ascii=False).encode("utf-8")


PROCESS_AGENT = """
import json, sys
sys.stdout.write(json.load(sys.stdin)["input"]["answer"])
"""

WORKER_AGENT = """
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    answer = req["input"]["answer"]
    # Splice the request id into the raw answer text, keeping it byte for byte.
    sys.stdout.write('{"request_id": "' + req["request_id"] + '", ' + answer.lstrip()[1:] + "\\n")
    sys.stdout.flush()
"""


def spec(tmp_path: Path, source: str) -> ProcessAgentSpec:
    script = tmp_path / "agent.py"
    script.write_text(source, encoding="utf-8")
    return ProcessAgentSpec(command=(sys.executable, str(script)), cwd=tmp_path, timeout_s=10)


@pytest.mark.parametrize("answer", UNSTORABLE.values(), ids=UNSTORABLE.keys())
def test_process_agent(tmp_path: Path, answer: str) -> None:
    agent = ProcessAgent(spec(tmp_path, PROCESS_AGENT), dict(os.environ))
    assert_bad_output(agent.run(request(answer)))


@pytest.mark.parametrize("answer", UNSTORABLE.values(), ids=UNSTORABLE.keys())
def test_worker_agent(tmp_path: Path, answer: str) -> None:
    with WorkerAgent(spec(tmp_path, WORKER_AGENT), dict(os.environ)) as agent:
        assert_bad_output(agent.run(request(answer)))
        # The next request on the pool is answered normally.
        assert agent.run(request('{"decision": "deny"}')).decision == "deny"


@pytest.fixture
def echo_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK wait a call

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            payload = body["input"]["answer"].encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("answer", UNSTORABLE.values(), ids=UNSTORABLE.keys())
def test_http_agent(echo_server: str, answer: str) -> None:
    config = HttpAgentConfig(url=echo_server, method="POST", headers=(), timeout_s=10)
    with HttpAgent(config, {}) as agent:
        assert_bad_output(agent.run(request(answer)))


@pytest.mark.parametrize("answer", UNSTORABLE.values(), ids=UNSTORABLE.keys())
def test_function_agent(answer: str) -> None:
    try:
        decoded = json.loads(answer)
    except (RecursionError, ValueError):
        pytest.skip("Python itself cannot build this answer")
    assert_bad_output(FunctionAgent(lambda request: decoded).run(request(answer)))


def test_worker_error_message_with_a_lone_surrogate_is_stored(tmp_path: Path) -> None:
    answer = '{"error": "overloaded \\ud800"}'
    with WorkerAgent(spec(tmp_path, WORKER_AGENT), dict(os.environ)) as agent:
        attempt = agent.run(request(answer))
    assert attempt.error == "exception"
    assert attempt.detail is not None and "overloaded \\ud800" in attempt.detail
    json.dumps(attempt_to_json(attempt), ensure_ascii=False).encode("utf-8")


def test_run_and_resume_survive_unstorable_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": "ok", "input": {"answer": '{"decision": "deny"}'}, "expected": "deny"}]
    rows += [
        {"id": name, "input": {"answer": answer}, "expected": "deny"}
        for name, answer in UNSTORABLE.items()
    ]
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    (tmp_path / "agent.py").write_text(PROCESS_AGENT, encoding="utf-8")
    config = {
        "dataset": "data.jsonl",
        "k": 2,
        "concurrency": 2,
        "agent": {"command": [sys.executable, "agent.py"], "timeout_s": 20},
        "retry": {"attempts": 0, "backoff_s": 0},
    }
    (tmp_path / "passk.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "run.json"
    argv = ["run", "--config", str(tmp_path / "passk.yml"), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    run = read_run(out)
    errors = {a.row_id: a.error for a in run.attempts}
    assert errors == {"ok": None, **{name: "bad-output" for name in UNSTORABLE}}
    assert main([*argv, "--resume"]) == 0
    assert not journal_path(out).exists() or journal_path(out).read_bytes()
    assert read_run(out).attempts == run.attempts
    assert "internal error" not in capsys.readouterr().err
