"""An answer's ``usage``: carried by every transport, validated, priced; never a lost decision."""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.answer import BadOutput, loads_answer, parse_usage
from passk_action.agents.http import HttpAgent
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent, ProcessAgent, ProcessAgentSpec
from passk_action.agents.worker import WorkerAgent
from passk_action.core.cost import Price, Pricing, priced_attempt, priced_usage
from passk_action.core.model import Attempt, Phase, Row, Usage, Version
from passk_action.inputs.agent_config import HttpAgentConfig
from passk_action.inputs.config import parse_config
from passk_action.serve import serve
from support.paths import REPO

USAGE = {"input_tokens": 812, "output_tokens": 64, "cost_usd": 0.0012, "model": "m-1",
         "cached_input_tokens": 512}  # fmt: skip
EXPECTED = Usage(812, 64, 0.0012, "m-1", extra=(("cached_input_tokens", 512.0),))
BAD = {"input_tokens": "many", "output_tokens": 5}

# One script for the process and worker protocols: the usage to answer with
# travels in the row's input.
SCRIPT = """
import sys
sys.path.insert(0, {src!r})
from passk_action.serve import agent

@agent
def decide(request):
    return {{"decision": "deny", "usage": request["input"]["usage"]}}
"""


# The same without passk's serve() helper, which refuses to write NaN: an agent
# in another language can send NaN, Infinity or -Infinity anyway.
RAW_SCRIPT = """
import json, os, sys
def answer(request):
    return {"decision": "deny", "usage": request["input"]["usage"]}
if os.environ.get("PASSK_PROTOCOL") == "worker":
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps({**answer(request), "request_id": request["request_id"]}), flush=True)
else:
    print(json.dumps(answer(json.load(sys.stdin))))
"""


def request(usage: Any) -> AttemptRequest:
    return AttemptRequest(Row("r1", {"usage": usage}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "agent.py"
    src = str(REPO / "src")
    path.write_text(SCRIPT.format(src=src), encoding="utf-8")
    return path


@pytest.fixture
def raw_script(tmp_path: Path) -> Path:
    path = tmp_path / "raw_agent.py"
    path.write_text(RAW_SCRIPT, encoding="utf-8")
    return path


def spec(script: Path) -> ProcessAgentSpec:
    return ProcessAgentSpec(command=(sys.executable, str(script)), cwd=script.parent, timeout_s=30)


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps({"decision": "deny", "usage": body["input"]["usage"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/decide"
    finally:
        server.shutdown()
        server.server_close()


def run_on(transport: str, script: Path, url: str, usage: Any) -> Attempt:
    if transport == "function":
        return FunctionAgent(lambda r: {"decision": "deny", "usage": usage}).run(request(usage))
    if transport == "process":
        return ProcessAgent(spec(script), {}).run(request(usage))
    if transport == "worker":
        worker = WorkerAgent(spec(script), {})
        try:
            return worker.run(request(usage))
        finally:
            worker.close()
    agent = HttpAgent(HttpAgentConfig(url=url), {})
    try:
        return agent.run(request(usage))
    finally:
        agent.close()


TRANSPORTS = ["function", "process", "worker", "http"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_transport_records_the_usage(transport: str, script: Path, http_url: str) -> None:
    attempt = run_on(transport, script, http_url, USAGE)
    assert (attempt.decision, attempt.usage, attempt.warnings) == ("deny", EXPECTED, ())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_malformed_usage_is_a_warning_and_the_decision_stands(
    transport: str, script: Path, http_url: str
) -> None:
    attempt = run_on(transport, script, http_url, BAD)
    assert attempt.decision == "deny" and attempt.error is None
    assert attempt.usage == Usage(output_tokens=5)
    assert attempt.warnings == (
        '"usage.input_tokens" must be a whole number from 0 to 10^12, got "many"; ignored',
    )


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_nan_or_infinity_in_usage_is_a_warning_and_the_decision_stands(
    transport: str, constant: str, raw_script: Path, http_url: str
) -> None:
    """The docs promise "a malformed usage never costs the decision": not JSON's NaN either."""
    usage = {"cost_usd": float(constant), "output_tokens": 5}
    attempt = run_on(transport, raw_script, http_url, usage)
    assert attempt.decision == "deny" and attempt.error is None
    assert attempt.usage == Usage(output_tokens=5)
    assert attempt.warnings == (
        f'"usage.cost_usd" must be a number from 0 to 10^12, got {constant}; ignored',
    )


def test_nan_outside_usage_is_still_not_json() -> None:
    """The control: NaN in a check (or anywhere but usage) is bad output, as before."""
    with pytest.raises(BadOutput, match="NaN is not valid JSON"):
        loads_answer('{"decision": "deny", "checks": {"x": NaN}}')
    with pytest.raises(BadOutput, match="-Infinity is not valid JSON"):
        loads_answer('{"decision": "deny", "usage": {}, "x": [[-Infinity]]}')
    with pytest.raises(BadOutput, match="Infinity is not valid JSON"):
        loads_answer("Infinity")
    answer = loads_answer('{"decision": "NaN", "usage": {"cost_usd": NaN, "m": {"x": NaN}}}')
    assert answer["decision"] == "NaN"


@pytest.mark.parametrize(
    ("raw", "usage", "warnings"),
    [
        (None, None, ()),
        ({}, None, ()),
        ([1, 2], None, ('"usage" must be a JSON object, got [1,2]; ignored',)),
        ("lots", None, ('"usage" must be a JSON object, got "lots"; ignored',)),
        ({"input_tokens": 12.0}, Usage(input_tokens=12), ()),
        (
            {"input_tokens": -3, "cost_usd": True, "model": ""},
            None,
            (
                '"usage.input_tokens" must be a whole number from 0 to 10^12, got -3; ignored',
                '"usage.cost_usd" must be a number from 0 to 10^12, got true; ignored',
                '"usage.model" must be a non-empty string of valid Unicode, got ""; ignored',
            ),
        ),
        ({"output_tokens": 1.5}, None,
         ('"usage.output_tokens" must be a whole number from 0 to 10^12, got 1.5; ignored',)),
        ({"reasoning_tokens": "x", "cost_usd": 0}, Usage(cost_usd=0.0),
         ('"usage.reasoning_tokens" must be a number from 0 to 10^12, got "x"; ignored',)),
        # Beyond the rules' ranges: a float sum of them could overflow (issue 21).
        ({"cost_usd": 1e308, "output_tokens": 3}, Usage(output_tokens=3),
         ('"usage.cost_usd" must be a number from 0 to 10^12, got 1e+308; ignored',)),
        ({"input_tokens": 10**13}, None,
         ('"usage.input_tokens" must be a whole number from 0 to 10^12, got 10000000000000; '
          "ignored",)),
    ],
)  # fmt: skip
def test_parse_usage(raw: Any, usage: Usage | None, warnings: tuple[str, ...]) -> None:
    assert parse_usage(raw) == (usage, warnings)


def test_values_json_allows_but_passk_cannot_store_are_warnings() -> None:
    usage, warnings = parse_usage(
        {"input_tokens": 10**400, "model": "gpt\ud800", "c\ud800": 1, "output_tokens": 2}
    )
    assert usage == Usage(output_tokens=2, extra=(("c\\ud800", 1.0),))
    assert warnings[0].startswith(
        '"usage.input_tokens" must be a whole number from 0 to 10^12, got 1000'
    )
    assert warnings[1].startswith('"usage.model" must be a non-empty string of valid Unicode')
    for text in warnings:
        text.encode("utf-8")  # storable in the journal


def test_too_many_counters_keep_the_first_ones_and_say_so() -> None:
    usage, warnings = parse_usage({f"c{i}": i for i in range(40)})
    assert usage is not None and len(usage.extra) == 32 and usage.extra[0] == ("c0", 0.0)
    assert warnings == ('"usage" has 8 counters over 32; ignored',)


def test_serve_turns_an_sdk_usage_object_into_the_protocol_keys() -> None:
    class CompletionUsage:  # the openai SDK's shape
        prompt_tokens = 120
        completion_tokens = 8
        total_tokens = 128

    stdin = io.StringIO(json.dumps({"id": "r1", "input": {}, "attempt": 1}))
    stdout = io.StringIO()
    code = serve(
        lambda r: {"decision": "deny", "usage": CompletionUsage()},
        stdin=stdin, stdout=stdout, stderr=io.StringIO(), env={},
    )  # fmt: skip
    assert code == 0
    assert json.loads(stdout.getvalue()) == {
        "decision": "deny",
        "usage": {"input_tokens": 120, "output_tokens": 8},
    }


def test_serve_keeps_the_decision_when_the_usage_is_not_json() -> None:
    stdin = io.StringIO(json.dumps({"id": "r1", "input": {}, "attempt": 1}))
    stdout = io.StringIO()
    code = serve(
        lambda r: {"decision": "deny", "usage": {"cost_usd": float("nan")}},
        stdin=stdin, stdout=stdout, stderr=io.StringIO(), env={},
    )  # fmt: skip
    assert code == 0
    answer = json.loads(stdout.getvalue())
    assert answer["decision"] == "deny"
    assert answer["usage"].startswith("not JSON (Out of range float values")


# ------------------------------------------------------------------- pricing

PRICING = Pricing(
    default=Price(1.0, 2.0),
    models=(("gpt-4o", Price(2.5, 10.0)), ("gpt-4o-mini", Price(0.15, 0.6))),
)


@pytest.mark.parametrize(
    ("usage", "cost"),
    [
        (Usage(1_000_000, 1_000_000), 3.0),  # the default price
        (Usage(1000, 100, model="gpt-4o"), (1000 * 2.5 + 100 * 10.0) / 1e6),
        # the longest matching name wins: gpt-4o-mini, not gpt-4o
        (Usage(1000, 100, model="gpt-4o-mini-2024-07-18"), (1000 * 0.15 + 100 * 0.6) / 1e6),
        (Usage(1000, None, model="other"), 1000 * 1.0 / 1e6),
    ],
)
def test_pricing_by_model(usage: Usage, cost: float) -> None:
    priced = priced_usage(usage, PRICING)
    assert priced.priced and priced.cost_usd == pytest.approx(cost, rel=1e-12)


def test_a_reported_cost_is_kept_and_a_computed_one_is_computed_again() -> None:
    reported = Usage(1000, 100, cost_usd=0.5)
    assert priced_usage(reported, PRICING) is reported
    stale = Usage(1_000_000, 0, cost_usd=99.0, priced=True)
    assert priced_usage(stale, PRICING).cost_usd == 1.0
    assert priced_usage(Usage(cost_usd=None, model="x"), PRICING) == Usage(model="x")
    only_models = Pricing(models=(("gpt-4o", Price(2.5, 10.0)),))
    assert priced_usage(Usage(10, 10), only_models) == Usage(10, 10)  # no price for it
    attempt = Attempt("r", 1, Phase.MAIN, "d", usage=Usage(10, 10))
    assert priced_attempt(attempt, Pricing()) is attempt


def test_config_reads_pricing_and_gate_limits(tmp_path: Path) -> None:
    text = """
dataset: data.jsonl
agent: {command: [python3, agent.py]}
pricing:
  input_per_mtok: 1
  output_per_mtok: 2
  models:
    gpt-4o-mini: {input_per_mtok: 0.15, output_per_mtok: 0.6}
gate:
  max_cost_increase: 0.25
  max_latency_p95_increase: 0.5
"""
    config = parse_config(text, tmp_path / "passk.yml").config
    assert config.pricing == Pricing(Price(1.0, 2.0), (("gpt-4o-mini", Price(0.15, 0.6)),))
    assert config.gate.policy.max_cost_increase == 0.25
    assert config.gate.policy.max_latency_p95_increase == 0.5
    default = parse_config(text.split("pricing:")[0], tmp_path / "passk.yml").config
    assert not default.pricing and not default.gate.policy.limits_spend


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ("pricing: {input_per_mtok: 1}", "output_per_mtok"),
        ("pricing: {input_per_mtok: -1, output_per_mtok: 1}", "pricing.input_per_mtok"),
        ("pricing: {models: {m: {input_per_mtok: 1}}}", "output_per_mtok"),
        ("gate: {max_cost_increase: -0.1}", "gate.max_cost_increase"),
        ("gate: {max_latency_p95_increase: fast}", "gate.max_latency_p95_increase"),
    ],
)
def test_bad_pricing_or_limits_are_one_line_config_errors(
    tmp_path: Path, section: str, fragment: str
) -> None:
    from passk_action.errors import ConfigError

    text = f"dataset: data.jsonl\nagent: {{command: [python3, agent.py]}}\n{section}\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, tmp_path / "passk.yml")
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_a_resumed_run_keeps_the_usage_its_journal_recorded(tmp_path: Path) -> None:
    from passk_action.store.artifact import Journal, read_journal
    from support.artifacts import small_run_v2

    run = small_run_v2()
    path = tmp_path / "run.json.journal.jsonl"
    with Journal.create(path, run) as journal:
        for attempt in run.attempts[:3]:
            journal.append(attempt)
    contents = read_journal(path)
    assert [a.usage for a in contents.attempts] == [a.usage for a in run.attempts[:3]]
    assert contents.attempts[2].warnings == run.attempts[2].warnings
