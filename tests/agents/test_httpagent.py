"""The HTTP agent against a scripted loopback server (no patching of requests)."""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from passk_action.agents.http import (
    CONNECTION_ERROR,
    HEADROOM,
    HTTP_STATUS,
    MIN_RATE,
    MIN_SPAN_S,
    Clocks,
    HttpAgent,
    Pacer,
    expand_headers,
    masker,
)
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.scheduler import RetryPolicy, Schedule, run_attempts
from passk_action.agents.worker import WorkerAgent
from passk_action.cli import main as cli_main
from passk_action.core.model import Attempt, Json, Phase, Row, Version
from passk_action.engine.agents import build_agent
from passk_action.errors import ConfigError
from passk_action.inputs.agent_config import HttpAgentConfig
from passk_action.inputs.config import parse_config
from passk_action.store.artifact import attempt_to_json

# Reply = (status, headers, body, delay_s)
Reply = tuple[int, dict[str, str], bytes, float]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    client_port: int


@dataclass
class Endpoint:
    """A loopback server whose answer to each request is chosen by a test function."""

    reply: Callable[[dict[str, Any] | None, int], Reply]
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""


def ok(decision: str = "deny", **checks: str) -> Reply:
    return 200, {}, json.dumps({"decision": decision, "checks": checks}).encode(), 0.0


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    ep = Endpoint(reply=lambda body, n: ok())

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so pooling is observable
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK wait a call

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            with ep.lock:
                ep.seen.append(
                    Seen(self.command, self.path, dict(self.headers), raw, time.monotonic(),
                         self.client_address[1])
                )  # fmt: skip
                number = len(ep.seen)
            body = json.loads(raw) if raw else None
            status, headers, payload, delay = ep.reply(body, number)
            time.sleep(delay)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_GET = do_PUT = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ep.url = f"http://127.0.0.1:{server.server_address[1]}/decide"
    try:
        yield ep
    finally:
        server.shutdown()
        server.server_close()


def make_agent(
    url: str,
    *,
    env: dict[str, str] | None = None,
    headers: tuple[tuple[str, str], ...] = (),
    method: str = "POST",
    timeout_s: float = 5.0,
    **kwargs: Any,
) -> HttpAgent:
    config = HttpAgentConfig(url=url, method=method, headers=headers, timeout_s=timeout_s)
    return HttpAgent(config, env if env is not None else {}, **kwargs)


def req(row_id: str = "r1", number: int = 1, input: Json = None) -> AttemptRequest:
    row = Row(row_id, {"text": "hi"} if input is None else input, "deny")
    return AttemptRequest(row, number, Phase.MAIN, Version.BASELINE)


def test_posts_the_request_and_parses_the_answer(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: ok("approve", window="ok")
    with make_agent(endpoint.url) as agent:
        attempt = agent.run(req("r-5", 3, {"order": "A-1"}))
    assert (attempt.decision, attempt.checks, attempt.error) == (
        "approve", (("window", "ok"),), None
    )  # fmt: skip
    [seen] = endpoint.seen
    assert seen.method == "POST" and seen.path == "/decide"
    assert seen.headers["Content-Type"] == "application/json"
    assert json.loads(seen.body) == {
        "id": "r-5", "input": {"order": "A-1"}, "attempt": 3, "version": "baseline"
    }  # fmt: skip


def test_get_sends_the_request_in_the_query_string(endpoint: Endpoint) -> None:
    with make_agent(endpoint.url, method="GET") as agent:
        assert agent.run(req("r-5", 2, {"a": [1, 2]})).valid
    query = parse_qs(urlsplit(endpoint.seen[0].path).query)
    assert query == {
        "id": ["r-5"], "attempt": ["2"], "version": ["baseline"], "input": ['{"a": [1, 2]}']
    }  # fmt: skip


def test_header_env_references_are_expanded_per_request_and_never_kept(
    endpoint: Endpoint,
) -> None:
    env = {"MODEL_KEY": "sk-first"}
    headers = (("Authorization", "Bearer ${MODEL_KEY}"), ("X-Team", "refunds"))
    agent = make_agent(endpoint.url, env=env, headers=headers)
    assert agent.run(req()).valid
    env["MODEL_KEY"] = "sk-rotated"  # read at call time, not at start
    assert agent.run(req("r2")).valid
    assert [s.headers["Authorization"] for s in endpoint.seen] == [
        "Bearer sk-first", "Bearer sk-rotated"
    ]  # fmt: skip
    assert endpoint.seen[0].headers["X-Team"] == "refunds"
    assert agent.config.headers == headers  # still the template
    assert "sk-" not in agent.description and "sk-" not in repr(agent.config)
    agent.close()


def test_an_echoed_secret_is_masked_in_error_details(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: (401, {}, b"bad key sk-live-123 for this model", 0.0)
    agent = make_agent(
        endpoint.url, env={"KEY": "sk-live-123"}, headers=(("Authorization", "${KEY}"),)
    )
    attempt = agent.run(req())
    assert attempt.error == HTTP_STATUS
    assert attempt.detail == "HTTP 401 Unauthorized: bad key *** for this model"


def test_missing_or_protected_header_variables_fail_at_start() -> None:
    headers = (("Authorization", "Bearer ${MODEL_KEY}"),)
    with pytest.raises(ConfigError) as info:
        make_agent("http://127.0.0.1:9/x", headers=headers)
    assert str(info.value).startswith(
        "agent.http.headers.Authorization: header 'Authorization' references ${MODEL_KEY}, "
        "which is not set"
    )
    for name in ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN"):
        token = (("Authorization", f"token ${{{name}}}"),)
        with pytest.raises(ConfigError, match="credential of the runner"):
            make_agent("http://127.0.0.1:9/x", env={name: "ghs_0123456789"}, headers=token)
    # Control: the endpoint's own key, under a name of its own.
    own = (("Authorization", "Bearer ${MODEL_KEY}"),)
    make_agent("http://127.0.0.1:9/x", env={"MODEL_KEY": "sk-0123456789"}, headers=own).close()


def test_429_with_retry_after_holds_back_the_retry(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: (
        (429, {"Retry-After": "1"}, b"slow down", 0.0) if n == 1 else ok("approve")
    )
    with make_agent(endpoint.url) as agent:
        [attempt] = run_attempts(
            [req()], agent, Schedule(concurrency=1, retry=RetryPolicy(attempts=2, backoff_s=0))
        )
    assert attempt.decision == "approve"
    assert attempt.retries == ("http-status: HTTP 429 Too Many Requests; Retry-After 1s honoured: "
                               "slow down",)  # fmt: skip
    first, second = endpoint.seen
    assert second.at - first.at >= 0.95  # the run's own backoff was 0


def test_503_cuts_the_rate_for_every_request_of_the_agent(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: (503, {"Retry-After": "1"}, b"", 0.0) if n == 1 else ok()
    with make_agent(endpoint.url) as agent:
        assert agent.run(req("r1")).error == HTTP_STATUS
        started = time.monotonic()
        assert agent.run(req("r2")).valid  # another row, same rate limit
        assert time.monotonic() - started >= 0.9


def test_retry_after_is_capped(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: (429, {"Retry-After": "3600"}, b"", 0.0) if n == 1 else ok()
    with make_agent(endpoint.url, max_retry_after_s=0.2) as agent:
        agent.run(req())
        started = time.monotonic()
        assert agent.run(req()).valid
        assert time.monotonic() - started < 2


def test_other_statuses_are_errors_without_backoff(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: (500, {"Retry-After": "30"}, b"oops\ntrace", 0.0)
    with make_agent(endpoint.url) as agent:
        attempt = agent.run(req())
        assert attempt.error == HTTP_STATUS
        assert attempt.detail == "HTTP 500 Internal Server Error: oops trace"
        started = time.monotonic()
        agent.run(req())
        assert time.monotonic() - started < 1


@pytest.mark.parametrize(
    ("reply", "reason", "words"),
    [
        ((200, {}, b"<html>hello</html>", 0.0), "bad-output", "the response body is not one JSON"),
        ((200, {}, b'{"checks": {}}', 0.0), "bad-output", 'no "decision"'),
        ((200, {}, b"", 0.0), "bad-output", "the response body is empty"),
        ((200, {}, b'{"decision": "' + b"x" * 3000 + b'"}', 0.0), "output-too-large", "2000"),
        ((200, {}, b'{"decision": "late"}', 1.5), "timeout", "0.5s timeout"),
    ],
)
def test_bad_answers_are_error_attempts(
    endpoint: Endpoint, reply: Reply, reason: str, words: str
) -> None:
    endpoint.reply = lambda body, n: reply
    with make_agent(endpoint.url, timeout_s=0.5, output_cap=2000) as agent:
        attempt = agent.run(req())
    assert attempt.error == reason and attempt.decision is None
    assert attempt.detail is not None and words in attempt.detail


def test_no_server_is_a_connection_error() -> None:
    with make_agent("http://127.0.0.1:9/decide", timeout_s=2) as agent:
        attempt = agent.run(req())
    assert attempt.error == CONNECTION_ERROR
    assert attempt.detail is not None and attempt.detail.startswith("request failed: ")


def test_connections_are_pooled_per_concurrency_slot(endpoint: Endpoint) -> None:
    endpoint.reply = lambda body, n: (*ok()[:3], 0.02)
    with make_agent(endpoint.url, concurrency=4) as agent:
        done = run_attempts(
            [req(f"r{i}") for i in range(40)], agent, Schedule(concurrency=4, retry=RetryPolicy(0))
        )
    assert all(a.valid for a in done)
    ports = {s.client_port for s in endpoint.seen}
    assert 1 <= len(ports) <= 4  # 40 requests over at most 4 kept-alive connections


def test_cancel_drops_the_answer_in_flight(endpoint: Endpoint) -> None:
    from passk_action.agents.protocol import AttemptCancelled

    endpoint.reply = lambda body, n: (*ok()[:3], 0.5)
    agent = make_agent(endpoint.url)
    outcome: list[object] = []

    def attempt() -> None:
        try:
            outcome.append(agent.run(req()))
        except AttemptCancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    deadline = time.monotonic() + 5
    while not endpoint.seen and time.monotonic() < deadline:
        time.sleep(0.01)  # cancel only once the request is on the wire
    agent.cancel()
    thread.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], AttemptCancelled)


def test_expand_headers_leaves_other_dollars_alone() -> None:
    expanded, secrets = expand_headers((("A", "x ${K} $K $$ ${}"),), {"K": "v"})
    assert expanded == {"A": "x v $K $$ ${}"}
    assert secrets == ["v"]


def test_build_agent_builds_http_and_worker_agents(tmp_path: Path) -> None:
    text = """
dataset: data.jsonl
agent:
  http:
    url: http://127.0.0.1:9/decide
    headers: {Authorization: "Bearer ${MODEL_KEY}"}
    timeout_s: 3
baseline:
  agent:
    command: [python3, agent.py]
    protocol: worker
"""
    config = parse_config(text, tmp_path / "passk.yml").config
    http = build_agent(config.agent, {"MODEL_KEY": "k-0123456789"}, concurrency=8)
    assert isinstance(http, HttpAgent)
    assert http.description == "POST http://127.0.0.1:9/decide"
    assert config.baseline.agent is not None
    worker = build_agent(config.baseline.agent, {}, concurrency=3)
    assert isinstance(worker, WorkerAgent)
    worker.close()
    http.close()


# -- faults under load: whole-attempt timeout, masking, pacing ----------------------


@pytest.fixture
def raw_server() -> Iterator[tuple[str, list[Callable[[socket.socket], None]]]]:
    """A loopback TCP server whose connections are handled by the test's function."""
    handlers: list[Callable[[socket.socket], None]] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    def handle(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])  # type: ignore[index]
            while len(rest) < length:
                rest += conn.recv(65536)
            with contextlib.suppress(OSError):
                handlers[0](conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/decide", handlers
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def test_a_body_that_stalls_after_the_headers_is_a_timeout(
    raw_server: tuple[str, list[Callable[[socket.socket], None]]],
) -> None:
    url, handlers = raw_server

    def stall(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{")
        time.sleep(6)

    handlers.append(stall)
    started = time.monotonic()
    with make_agent(url, timeout_s=1.0) as agent:
        attempt = agent.run(req())
    elapsed = time.monotonic() - started
    assert attempt.error == "timeout", attempt.detail
    assert attempt.detail == "no complete answer within the 1s timeout"
    assert elapsed < 1.8


def test_timeout_bounds_a_body_that_trickles_in(
    raw_server: tuple[str, list[Callable[[socket.socket], None]]],
) -> None:
    url, handlers = raw_server
    body = json.dumps({"decision": "deny", "checks": {"pad": "x" * 20}}).encode()

    def trickle(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        for byte in body:
            conn.sendall(bytes([byte]))
            time.sleep(0.3)

    handlers.append(trickle)
    started = time.monotonic()
    with make_agent(url, timeout_s=2.0) as agent:
        attempt = agent.run(req())
    elapsed = time.monotonic() - started
    assert attempt.error == "timeout"
    assert 1.9 <= elapsed < 2.8


@pytest.mark.parametrize("value", ["1", "sk-1234", "sk-1234 ", "  sk12    "])
def test_a_header_secret_too_short_to_mask_is_refused_at_start(value: str) -> None:
    # Masking "1" everywhere would garble 127.0.0.1; not masking it would store it.
    # Spaces around a value do not count: a server strips them and echoes the rest.
    with pytest.raises(ConfigError) as info:
        make_agent("http://127.0.0.1:9/decide", env={"KEY": value}, headers=(("X-Key", "${KEY}"),))
    error = info.value
    assert error.exit_code == 2 and error.where == "agent.http.headers.X-Key"
    n = len(value.strip())
    assert f"whose value has only {n} character(s) besides spaces: too short" in error.message
    assert "at least 8 characters" in (error.hint or "")
    assert "sk-1234" not in error.one_line()  # the value itself is never said


def test_control_a_secret_of_eight_characters_or_an_empty_value_is_accepted(
    endpoint: Endpoint,
) -> None:
    for value in ("sk-12345", ""):
        agent = make_agent(endpoint.url, env={"KEY": value}, headers=(("X-Key", "${KEY}"),))
        assert agent.run(req()).valid
        agent.close()


SECRET = 'sk-live/"9f8e7d6c5b4a"é'


@pytest.mark.parametrize(
    "echo",
    [
        SECRET.encode(),
        json.dumps({"error": f"bad key {SECRET}"}).encode(),  # \" and \u00e9
        json.dumps({"error": f"bad key {SECRET}"}, ensure_ascii=False).encode(),
        json.dumps({"error": f"bad key {SECRET}"}).replace("/", "\\/").encode(),
        b"bad key " + urllib.parse.quote(SECRET, safe="").encode(),
    ],
    ids=["raw", "json-ascii", "json-utf8", "json-slash", "percent"],
)
def test_an_echoed_secret_is_masked_in_every_form(endpoint: Endpoint, echo: bytes) -> None:
    endpoint.reply = lambda body, n: (403, {}, echo, 0.0)
    agent = make_agent(endpoint.url, env={"KEY": SECRET}, headers=(("X-Key", "${KEY}"),))
    attempt = agent.run(req())
    agent.close()
    stored = json.dumps(attempt_to_json(attempt))
    assert attempt.detail is not None and "***" in attempt.detail
    for needle in ("9f8e7d6c5b4a", "sk-live"):
        assert needle not in stored


def test_a_secret_echoed_in_an_answer_is_masked_in_the_decision_and_checks(
    endpoint: Endpoint,
) -> None:
    key = "sk-live-0123456789"
    endpoint.reply = lambda body, n: ok(f"deny {key}", auth=f"Bearer {key}", **{key: "x"})
    agent = make_agent(endpoint.url, env={"KEY": key}, headers=(("Authorization", "${KEY}"),))
    attempt = agent.run(req())
    agent.close()
    assert attempt.decision == "deny ***"
    assert attempt.checks == (("auth", "Bearer ***"), ("***", "x"))


def test_a_secret_echoed_in_the_usage_is_masked_in_its_model_and_warnings(
    endpoint: Endpoint,
) -> None:
    key = "sk-live-0123456789"
    usage = {"model": f"m-{key}", "input_tokens": f"bad {key}", "output_tokens": 3}
    body = json.dumps({"decision": "deny", "usage": usage}).encode()
    endpoint.reply = lambda body_, n: (200, {}, body, 0.0)
    agent = make_agent(endpoint.url, env={"KEY": key}, headers=(("Authorization", "${KEY}"),))
    attempt = agent.run(req())
    agent.close()
    assert attempt.decision == "deny" and attempt.usage is not None
    assert attempt.usage.model == "m-***" and attempt.usage.output_tokens == 3
    assert key not in json.dumps(attempt_to_json(attempt))


def test_a_padded_secret_echoed_trimmed_is_masked(endpoint: Endpoint) -> None:
    """A value with spaces around it: the server strips them and echoes what is left."""
    key = "sk-live-0123456789"
    endpoint.reply = lambda body, n: (401, {}, f"bad key {key}.".encode(), 0.0)
    padded = f"{key}   "
    with make_agent(endpoint.url, env={"KEY": padded}, headers=(("X-Key", "${KEY}"),)) as agent:
        attempt = agent.run(req())
    assert attempt.detail == "HTTP 401 Unauthorized: bad key ***."


def test_a_secret_in_a_usage_counters_name_is_masked(endpoint: Endpoint) -> None:
    key = "sk-live-0123456789"
    usage = {"input_tokens": 3, f"{key}_tokens": 5, f"spent-{key}": 1.5, "cached": 2}
    body = json.dumps({"decision": "deny", "usage": usage}).encode()
    endpoint.reply = lambda body_, n: (200, {}, body, 0.0)
    with make_agent(endpoint.url, env={"KEY": key}, headers=(("X-Key", "${KEY}"),)) as agent:
        attempt = agent.run(req())
    assert attempt.usage is not None and attempt.usage.input_tokens == 3
    assert attempt.usage.extra == (("***_tokens", 5.0), ("spent-***", 1.5), ("cached", 2.0))
    assert key not in json.dumps(attempt_to_json(attempt))


def test_a_secret_spelled_with_escapes_in_a_counters_name_is_masked(endpoint: Endpoint) -> None:
    """The body's text does not show it (``\\u0073k…``); the name as read does."""
    key = "sk-live-0123456789"
    escaped = "\\u0073" + key[1:]
    body = ('{"decision": "deny", "usage": {"' + escaped + '": 5, "n": 1}}').encode()
    endpoint.reply = lambda body_, n: (200, {}, body, 0.0)
    with make_agent(endpoint.url, env={"KEY": key}, headers=(("X-Key", "${KEY}"),)) as agent:
        attempt = agent.run(req())
    assert attempt.usage is not None and attempt.usage.extra == (("***", 5.0), ("n", 1.0))


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_a_secret_crossing_the_snippets_cut_keeps_none_of_it(endpoint: Endpoint, cut: int) -> None:
    """A non-JSON answer is quoted to 80 characters: a secret ending past them was stored
    minus its last ``cut`` characters, unmasked."""
    key = "sk-live-0123456789"
    body = ("x" * (80 - len(key) + cut) + key + " and more").encode()
    endpoint.reply = lambda body_, n: (200, {}, body, 0.0)
    with make_agent(endpoint.url, env={"KEY": key}, headers=(("X-Key", "${KEY}"),)) as agent:
        attempt = agent.run(req())
    assert attempt.error == "bad-output" and attempt.detail is not None
    assert key[: len(key) - cut] not in attempt.detail
    assert "xxx***" in attempt.detail  # the control: the quote is there, masked


def test_a_secret_is_masked_inside_a_longer_word_too() -> None:
    mask = masker(["abcdefgh12"])
    assert mask("key=abcdefgh12; x abcdefgh12.") == "key=***; x ***."
    assert mask("xxabcdefgh12yy abcdefgh123") == "xx***yy ***3"
    assert mask("abcdefgh12abcdefgh12") == "******"
    # A secret that holds another is masked whole, not in pieces.
    assert masker(["abcdefgh", "abcdefgh-longer"])("[abcdefgh-longer]") == "[***]"


def _run_bounded(
    agent: HttpAgent, requests: list[AttemptRequest], concurrency: int, bound_s: float
) -> tuple[list[Attempt], float]:
    """``run_attempts`` with the default retry policy, stopped after ``bound_s``: the
    attempts done and the wall time (so a slow pacer fails the test, never hangs it)."""
    stop = threading.Event()
    timer = threading.Timer(bound_s, stop.set)
    timer.start()
    started = time.monotonic()
    try:
        done = run_attempts(requests, agent, Schedule(concurrency=concurrency), stop=stop)
    finally:
        timer.cancel()
    return done, time.monotonic() - started


def test_one_early_429_costs_about_its_retry_after(endpoint: Endpoint) -> None:
    """A 429 on the very first request, before any answer, with Retry-After 1.

    Before the fix it found an empty window, cut the rate to 1 request a second
    with 32 slots already handed out one second apart, and sent the refused
    request again 33 s later: the run took 44 s instead of about 1.
    """
    refused_at: list[float] = []

    def reply(body: dict[str, Any] | None, n: int) -> Reply:
        if n == 1:
            refused_at.append(time.monotonic())
            return 429, {"Retry-After": "1"}, b"slow down", 0.0
        return (*ok()[:3], 0.02)

    endpoint.reply = reply
    requests = [req(f"r{i}") for i in range(120)]
    with make_agent(endpoint.url, concurrency=32) as agent:
        done, wall = _run_bounded(agent, requests, 32, bound_s=15.0)
    assert len(done) == 120 and all(a.valid for a in done), f"{len(done)} done in {wall:.1f}s"
    assert wall < 5.0  # 1 s of Retry-After, the rest in a few waves of 20 ms
    refused = json.loads(endpoint.seen[0].body)["id"]
    [retry] = [s for s in endpoint.seen[1:] if json.loads(s.body)["id"] == refused]
    # Not before its Retry-After, and not long after it either.
    assert 1.0 <= retry.at - refused_at[0] < 2.5


def test_scattered_429s_never_send_a_request_before_its_retry_after(
    endpoint: Endpoint,
) -> None:
    """Every refused request waits out its own Retry-After; the others go on."""
    draws = random.Random(11)
    refused_at: dict[str, list[float]] = {}

    def reply(body: dict[str, Any] | None, n: int) -> Reply:
        assert body is not None
        if draws.random() < 0.1:
            refused_at.setdefault(body["id"], []).append(time.monotonic())
            return 429, {"Retry-After": "1"}, b"slow down", 0.0
        return (*ok()[:3], 0.01)

    endpoint.reply = reply
    with make_agent(endpoint.url, concurrency=16) as agent:
        done, wall = _run_bounded(agent, [req(f"r{i}") for i in range(200)], 16, bound_s=20.0)
    assert len(done) == 200, f"{len(done)} done in {wall:.1f}s"
    assert refused_at
    for seen in endpoint.seen:
        row = json.loads(seen.body)["id"]
        earlier = [at for at in refused_at.get(row, []) if at < seen.at]
        assert all(seen.at - at >= 1.0 for at in earlier), f"{row} sent again too soon"
    # The rest went on meanwhile: 10% refused cost no rate (each refusal waits alone).
    assert wall < 10.0


@pytest.mark.parametrize(
    ("status", "headers", "for_everyone"),
    [
        (503, {"Retry-After": "1"}, True),
        (429, {"Retry-After": "1", "X-RateLimit-Remaining": "0"}, True),
        (429, {"Retry-After": "1", "RateLimit": '"default";r=0;t=1'}, True),
        # The controls: a plain 429 refuses that request only, and a quota not used up.
        (429, {"Retry-After": "1"}, False),
        (429, {"Retry-After": "1", "X-RateLimit-Remaining": "10"}, False),
    ],
)
def test_a_retry_after_for_every_request_stops_every_request(
    endpoint: Endpoint, status: int, headers: dict[str, str], for_everyone: bool
) -> None:
    replied_at: list[float] = []

    def reply(body: dict[str, Any] | None, n: int) -> Reply:
        if n == 20:
            replied_at.append(time.monotonic())
            return status, headers, b"busy", 0.0
        return (*ok()[:3], 0.01)

    endpoint.reply = reply
    with make_agent(endpoint.url, concurrency=4) as agent:
        done, _ = _run_bounded(agent, [req(f"r{i}") for i in range(150)], 4, bound_s=20.0)
    assert len(done) == 150 and all(a.valid for a in done)
    # Requests already on their way when the answer left are not a breach: on a loaded
    # machine the client may read the answer a while after it left, so 0.3 s covers them.
    during = [s for s in endpoint.seen if replied_at[0] + 0.3 < s.at < replied_at[0] + 1.0]
    if for_everyone:
        assert during == []
    else:
        assert len(during) > 10, "a plain 429 stopped the other requests"


class _Bucket:
    """A server's limit: ``rate`` requests a second, bursts of one second's worth."""

    def __init__(self, rate: float) -> None:
        self.rate, self.tokens, self.at = rate, rate, 0.0

    def refuses(self, now: float) -> bool:
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return False
        return True


def drive(
    seconds: float, pool_rate: float, refuses: Callable[[float], bool], since: float = 0.0
) -> tuple[float, float, Pacer]:
    """A fake clock: a pool that could send ``pool_rate`` a second, paced by a Pacer.

    Answers come back at once; ``refuses(t)`` says whether the endpoint answers a
    send at ``t`` with 429.  Returns the send rate and the share refused after
    ``since`` seconds, and the pacer.
    """
    now = [0.0]
    pacer = Pacer(lambda: now[0])
    sent = refused = 0
    ready = 0.0
    while True:
        now[0] = ready
        wait = pacer.claim()
        while wait > 0:
            now[0] += wait
            wait = pacer.claim()
        at = now[0]
        if at >= seconds:
            break
        if refuses(at):
            pacer.pushback()
            refused += at >= since
        else:
            pacer.accepted()
        sent += at >= since
        ready = at + 1.0 / pool_rate
    return sent / (seconds - since), refused / max(sent, 1), pacer


def test_pacer_scattered_pushback_costs_no_rate() -> None:
    """3% of requests refused whatever the rate: the pool keeps its full rate."""
    draws = random.Random(7)
    rate, share, _ = drive(60.0, 300.0, lambda t: draws.random() < 0.03)
    assert rate == pytest.approx(300.0, rel=0.01) and share == pytest.approx(0.03, abs=0.005)


def test_pacer_settles_just_above_a_hard_limit_and_follows_it() -> None:
    bucket = _Bucket(50.0)
    rate, share, _ = drive(60.0, 300.0, bucket.refuses, since=10.0)
    # HEADROOM x the limit, so about 1 - 1/HEADROOM of the sends refused.
    assert 50.0 <= rate <= 50.0 * HEADROOM * 1.05
    assert share <= 1.0 - 1.0 / (HEADROOM * 1.05)
    # Against the old rule's figure: halving on each refusal settled far lower.
    assert rate > 50.0 * 0.9


def test_pacer_ten_percent_scattered_pushback_costs_no_rate_either() -> None:
    draws = random.Random(7)
    rate, share, pacer = drive(60.0, 300.0, lambda t: draws.random() < 0.10)
    assert rate == pytest.approx(300.0, rel=0.01) and share == pytest.approx(0.10, abs=0.01)
    assert pacer.rate is None


def _wave(pacer: Pacer, now: list[float], sends: int) -> None:
    """``sends`` requests leave at once, as a pool's first wave does."""
    for _ in range(sends):
        assert pacer.claim() == 0.0
        now[0] += 0.0001


def test_pacer_one_refusal_before_any_answer_sets_no_limit() -> None:
    now = [5.0]
    pacer = Pacer(lambda: now[0])
    _wave(pacer, now, 32)
    assert pacer.pushback() is False
    assert pacer.rate is None and pacer.claim() == 0.0


def test_pacer_a_first_wave_mostly_refused_cuts_at_once() -> None:
    """The control: a real limit refuses most of the first wave; the rate is cut."""
    now = [5.0]
    pacer = Pacer(lambda: now[0])
    _wave(pacer, now, 32)
    for _ in range(27):
        pacer.pushback()
    assert pacer.rate == pytest.approx(HEADROOM * 5 / MIN_SPAN_S)
    assert pacer.claim() > 0  # slots not yet taken follow the new rate


def test_pacer_recovers_by_doubling_each_second_once_the_pushback_stops() -> None:
    now = [0.0]
    pacer = Pacer(lambda: now[0])
    for _ in range(20):  # 10 a second sent, all refused, for 2 s
        pacer.claim()
        pacer.pushback()
        now[0] += 0.1
    level = pacer.rate
    assert level == MIN_RATE
    # Then every answer accepted, as fast as the limit lets them go: a second
    # later it grows, doubling each second.
    start = now[0]

    def send_until(end: float) -> None:
        while now[0] - start < end:
            wait = pacer.claim()
            if wait > 0:
                now[0] += wait
                continue
            pacer.accepted()

    send_until(0.95)
    assert pacer.rate == pytest.approx(level, rel=0.2)  # probing only, a few percent
    send_until(6.0)
    assert pacer.rate is not None and pacer.rate >= level * 2**4


def test_pacer_pause_holds_every_request() -> None:
    now = [0.0]
    pacer = Pacer(lambda: now[0])
    pacer.pause(1.5)
    assert pacer.claim() == pytest.approx(1.5)
    now[0] = 1.5
    assert pacer.claim() == 0.0


def test_a_pause_for_every_request_is_kept_across_resume(endpoint: Endpoint) -> None:
    """Saved beside the journal under ``*`` and honoured by the resumed run; a damaged
    entry is dropped, as a request's is."""
    endpoint.reply = lambda body, n: (503, {"Retry-After": "5"}, b"down", 0.0)
    saved: list[dict[str, str]] = []
    with make_agent(endpoint.url) as agent:
        agent.carry_retry_after({}, saved.append)
        agent.run(req("r1"))
    assert set(saved[-1]) == {"*", '["r1", 1, "main", "baseline"]'}
    wall = datetime(2026, 1, 2, 12, 0, 0, tzinfo=timezone.utc)
    later = (wall + timedelta(seconds=5)).isoformat()
    with make_agent(endpoint.url, clocks=Clocks(lambda: 100.0, lambda: wall)) as resumed:
        resumed.carry_retry_after({"*": later, "[damaged": later}, saved.append)
        assert resumed.ready_in(req("r2")) == pytest.approx(5.0)  # every request
        assert resumed.ready_in(req("r3")) == pytest.approx(5.0)


def test_a_pending_retry_after_holds_across_resume(endpoint: Endpoint, tmp_path: Path) -> None:
    """Stopped while waiting out a Retry-After, the resumed run still waits it out."""
    import os
    import signal
    import subprocess
    import sys

    import yaml

    from passk_action.store.recorder import retry_after_path

    def reply(body: dict[str, Any] | None, n: int) -> Reply:
        assert body is not None
        if (body["id"], body["attempt"]) == ("r0", 1) and not refused:
            refused.append(time.monotonic())
            return 429, {"Retry-After": "4"}, b"slow down", 0.0
        return ok()

    refused: list[float] = []
    endpoint.reply = reply
    rows = [json.dumps({"id": f"r{i}", "input": {}, "expected": "deny"}) for i in range(2)]
    (tmp_path / "data.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    config = {
        "dataset": "data.jsonl",
        "k": 2,
        "concurrency": 1,
        "agent": {"http": {"url": endpoint.url, "timeout_s": 5}},
        "retry": {"attempts": 2, "backoff_s": 0},
    }
    (tmp_path / "passk.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out = tmp_path / "run.json"
    argv = [sys.executable, "-m", "passk_action", "run", "--config", "passk.yml",
            "--out", str(out), "--quiet"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    first = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not retry_after_path(out).exists():
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.02)
    first.send_signal(signal.SIGTERM)
    assert first.wait(20) == 130
    pending = json.loads(retry_after_path(out).read_text())
    assert list(pending) == ['["r0", 1, "main", "candidate"]']
    resumed = subprocess.run([*argv, "--resume"], cwd=tmp_path, env=env, timeout=60,
                             capture_output=True, text=True)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    retries = [s.at for s in endpoint.seen if json.loads(s.body)["id"] == "r0"
               and json.loads(s.body)["attempt"] == 1]  # fmt: skip
    assert len(retries) == 2
    assert retries[1] - refused[0] >= 3.9
    assert not retry_after_path(out).exists()


def test_a_secret_beside_letters_is_masked_in_the_run_every_report_and_stderr(
    endpoint: Endpoint,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's case: ``xx<secret>yy`` echoed by the endpoint, end to end through the CLI."""
    key = "sk9f8e7d6c"
    rows = [{"id": f"r{i}", "input": {"n": i}, "expected": "deny"} for i in range(3)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    headers = "{Authorization: 'Bearer ${KEY}'}"
    (tmp_path / "passk.yml").write_text(
        "dataset: data.jsonl\nk: 2\nretry: {attempts: 0}\n"
        f"agent: {{http: {{url: '{endpoint.url}', headers: {headers}}}}}\n"
    )

    def reply(body: dict[str, Any] | None, n: int) -> Reply:
        row = (body or {}).get("id")
        if row == "r0":
            return (401, {}, f"invalid key: xx{key}yy".encode(), 0.0)
        answer = {
            "decision": f"deny{key}",
            "checks": {"seen": f"Bearer_{key}_end", f"k{key}k": "x"},
            "usage": {"input_tokens": 2, f"{key}_tokens": 3},  # a counter named by the key
        }
        return 200, {}, json.dumps(answer).encode(), 0.0

    endpoint.reply = reply
    monkeypatch.setenv("KEY", key)
    run = tmp_path / "run.json"
    code = cli_main(["run", "--config", str(tmp_path / "passk.yml"), "--out", str(run)])
    assert code in (0, 1), capsys.readouterr().err
    said = capsys.readouterr().err
    reports = [run.read_text(encoding="utf-8"), said]
    for fmt in ("md", "json", "html", "junit"):
        assert cli_main(["report", str(run), "--format", fmt]) == 0
        reports.append(capsys.readouterr().out)
    assert "xx***yy" in reports[0] and "deny***" in reports[0]  # the control: it was echoed
    for text in reports:
        assert key not in text
