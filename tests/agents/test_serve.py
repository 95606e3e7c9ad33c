"""The serve() helper: one Python function behind both agent protocols."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import ProcessAgent, ProcessAgentSpec
from passk_action.agents.worker import WorkerAgent
from passk_action.core.model import Phase, Row, Version
from passk_action.serve import agent, serve


def decide(request: dict[str, Any]) -> Any:
    text = request["input"]["text"]
    print("a stray print from agent code")  # must never reach the answer stream
    if text == "boom":
        raise ValueError("cannot decide")
    if text == "bare":
        return "approve"
    return {
        "decision": "deny" if "broken" in text else "approve",
        "checks": {"row": os.environ.get("PASSK_ROW_ID"), "attempt": request["attempt"]},
    }


def line(request_id: str, text: str, row: str = "r1") -> str:
    return json.dumps(
        {"request_id": request_id, "id": row, "input": {"text": text}, "attempt": 1,
         "version": "candidate"}
    ) + "\n"  # fmt: skip


def call(stdin_text: str, *, worker: bool) -> tuple[int, str, str]:
    stdin, stdout, stderr = io.StringIO(stdin_text), io.StringIO(), io.StringIO()
    env = {"PASSK_PROTOCOL": "worker"} if worker else {}
    code = serve(decide, stdin=stdin, stdout=stdout, stderr=stderr, env=env)
    return code, stdout.getvalue(), stderr.getvalue()


def test_per_attempt_mode_answers_one_request() -> None:
    request = {"id": "r9", "input": {"text": "it arrived broken"}, "attempt": 2}
    code, out, err = call(json.dumps(request), worker=False)
    assert code == 0
    assert json.loads(out) == {"decision": "deny", "checks": {"row": "r9", "attempt": 2}}
    assert out.count("\n") == 1
    assert "a stray print from agent code" in err


def test_per_attempt_mode_exception_exits_1_with_traceback() -> None:
    code, out, err = call(json.dumps({"id": "r1", "input": {"text": "boom"}}), worker=False)
    assert (code, out) == (1, "")
    assert "ValueError: cannot decide" in err and "Traceback" in err


def test_per_attempt_mode_rejects_a_non_json_request() -> None:
    code, out, err = call("not json", worker=False)
    assert (code, out) == (2, "")
    assert "stdin is not a JSON request" in err


def test_worker_mode_answers_every_line_echoing_request_ids() -> None:
    stdin = line("7", "broken", "r1") + "\n" + line("8", "boom", "r2") + line("9", "bare", "r3")
    code, out, err = call(stdin, worker=True)
    assert code == 0
    answers = [json.loads(x) for x in out.splitlines()]
    assert answers == [
        {"decision": "deny", "checks": {"row": "r1", "attempt": 1}, "request_id": "7"},
        {"request_id": "8", "error": "ValueError: cannot decide"},
        {"decision": "approve", "request_id": "9"},
    ]
    assert err.count("a stray print from agent code") == 3
    assert "Traceback" in err  # the failed request's traceback, and serving went on


def test_worker_mode_stops_on_a_line_without_request_id() -> None:
    code, out, err = call(json.dumps({"id": "r1"}) + "\n", worker=True)
    assert (code, out) == (2, "")
    assert "no 'request_id'" in err


def test_agent_decorator_leaves_imported_functions_alone() -> None:
    def fn(request: dict[str, Any]) -> str:
        return "deny"

    assert agent(fn) is fn


# --- the same file, run by passk under both protocols ---------------------------------

AGENT_FILE = """
import os, sys
from passk_action.serve import agent

@agent
def decide(request):
    print("debug: deciding", request["id"])      # stdout inside the handler
    os.system("echo from a child process")       # a child writing to fd 1
    decision = "deny" if "broken" in request["input"]["text"] else "approve"
    return {"decision": decision, "checks": {"pid": os.getpid()}}
"""


@pytest.mark.parametrize("protocol", ["process", "worker"])
def test_a_decorated_agent_serves_both_protocols(tmp_path: Path, protocol: str) -> None:
    path = tmp_path / "agent.py"
    path.write_text(AGENT_FILE, encoding="utf-8")
    spec = ProcessAgentSpec(command=(sys.executable, str(path)), cwd=tmp_path, timeout_s=20)
    env = dict(os.environ)
    runner = WorkerAgent(spec, env) if protocol == "worker" else ProcessAgent(spec, env)
    texts = ["broken box", "fine", "broken lid"]
    attempts = [
        runner.run(
            AttemptRequest(Row(f"r{i}", {"text": t}, "deny"), 1, Phase.MAIN, Version.BASELINE)
        )
        for i, t in enumerate(texts)
    ]
    if isinstance(runner, WorkerAgent):
        runner.close()
    assert [a.decision for a in attempts] == ["deny", "approve", "deny"], attempts
    pids = {dict(a.checks)["pid"] for a in attempts}
    assert len(pids) == (1 if protocol == "worker" else 3)
