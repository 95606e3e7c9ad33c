"""The LLM example (examples/refunds-llm): the openai SDK agent and its fake provider.

The fake server is checked with the official SDK as its client (what it must
be good enough for), and behaves like a model rather than an answer key; the
agent is checked in-process for how it reads answers, and under ``passk
baseline`` / ``passk compare`` / ``passk run`` against the fake end to end.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
import pytest
import yaml

from passk_action.cli import main
from passk_action.serve import serve
from support.paths import REPO

EXAMPLE = REPO / "examples" / "refunds-llm"
KEY = "test-key"


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


fake = load("refunds_llm_fake_openai", EXAMPLE / "fake_openai.py")
agent = load("refunds_llm_agent", EXAMPLE / "agent.py")
ROWS = {
    row["id"]: row
    for row in (json.loads(line) for line in (EXAMPLE / "data.jsonl").read_text().splitlines())
}
LAPTOP = ROWS["q-034"]  # $1,149, "arrived dented", order confirmation: approve


@pytest.fixture
def start() -> Iterator[Any]:
    """Start fake servers on free loopback ports; all are stopped after the test."""
    servers: list[Any] = []

    def _start(**settings: Any) -> Any:
        server, _ = fake.serve_in_thread(fake.Settings(api_key=KEY, **settings))
        servers.append(server)
        return server

    yield _start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def sdk() -> openai.OpenAI:
    # One real client (building one loads TLS settings); tests derive theirs with
    # with_options, which shares its connection pool.
    return openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)


def messages(prompt: str, row: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": agent.PROMPTS[prompt]},
        {"role": "user", "content": agent.user_message(row["input"])},
    ]


# --- the fake speaks what the SDK expects ---------------------------------------------


def test_sdk_round_trip_gets_a_complete_chat_completion(start: Any, sdk: openai.OpenAI) -> None:
    server = start()
    client = sdk.with_options(base_url=server.url)
    completion = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages("v1", LAPTOP),  # type: ignore[arg-type]
        max_tokens=300,
        response_format={"type": "json_object"},
    )
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-") and completion.model == "gpt-4o-mini"
    assert completion.created > 1_700_000_000
    choice = completion.choices[0]
    assert choice.index == 0 and choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    answer = json.loads(choice.message.content or "")
    assert answer["decision"] == "approve"
    assert list(answer["checks"]) == ["return_window", "proof_of_purchase", "damage"]
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens > 100 and usage.completion_tokens > 10
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert [m.id for m in client.models.list()] == ["gpt-4o-mini"]


def test_a_wrong_or_missing_key_is_the_apis_401(start: Any, sdk: openai.OpenAI) -> None:
    server = start()
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk.with_options(base_url=server.url, api_key="sk-wrong").chat.completions.create(
            model="m", messages=messages("v1", LAPTOP)
        )  # type: ignore[arg-type]
    assert caught.value.status_code == 401
    request = urllib.request.Request(
        server.url + "/chat/completions", data=b"{}", headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(request, timeout=5)
    assert raw.value.code == 401
    assert json.loads(raw.value.read())["error"]["code"] == "invalid_api_key"
    assert server.state.counters.unauthorized == 2 and server.state.counters.answered == 0


def test_the_sdk_waits_out_a_429_as_retry_after_says(start: Any, sdk: openai.OpenAI) -> None:
    server = start(rate_limit=1.0, retry_after_s=0.3)  # every fresh call starts a window
    client = sdk.with_options(base_url=server.url, max_retries=2)
    began = time.monotonic()
    completion = client.chat.completions.create(model="m", messages=messages("v2", LAPTOP))  # type: ignore[arg-type]
    assert json.loads(completion.choices[0].message.content or "")["decision"] in agent.LABELS
    assert time.monotonic() - began >= 0.3
    first, second = server.state.calls
    assert (first.status, second.status) == (429, 200)
    assert second.at - first.at >= 0.3  # honoured: not back before the window closed
    assert (first.retry_count, second.retry_count) == ("0", "1")


def test_a_client_that_ignores_retry_after_keeps_getting_429(start: Any) -> None:
    server = start(rate_limit=1.0, retry_after_s=5.0)
    body = json.dumps({"model": "m", "messages": messages("v1", LAPTOP)}).encode()
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    for _ in range(3):
        request = urllib.request.Request(server.url + "/chat/completions", body, headers)
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5)
        assert caught.value.code == 429
        assert 1 <= int(caught.value.headers["Retry-After"]) <= 5
        assert 0 < int(caught.value.headers["retry-after-ms"]) <= 5000
    counters = server.state.counters
    assert (counters.rate_limited, counters.held_back, counters.answered) == (1, 2, 0)


def test_max_tokens_cuts_the_answer_off(start: Any, sdk: openai.OpenAI) -> None:
    server = start()
    completion = sdk.with_options(base_url=server.url).chat.completions.create(
        model="m", messages=messages("v1", LAPTOP), max_tokens=5
    )  # type: ignore[arg-type]
    choice = completion.choices[0]
    assert choice.finish_reason == "length" and len(choice.message.content or "") <= 20


def test_requests_it_cannot_serve_are_the_apis_400(start: Any, sdk: openai.OpenAI) -> None:
    client = sdk.with_options(base_url=start().url)
    with pytest.raises(openai.BadRequestError, match="stream"):
        client.chat.completions.create(model="m", messages=messages("v1", LAPTOP), stream=True)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="m", messages=[])


# --- the fake behaves like a model, not an answer key ----------------------------------


def answers(prompt: str, row: dict[str, Any], calls: int = 12, seed: int = 0) -> list[str]:
    body = {
        "model": "m",
        "messages": messages(prompt, row),
        "response_format": {"type": "json_object"},
    }
    digest = fake.prompt_digest(body)
    return [
        json.loads(fake.complete(body, seed=seed, digest=digest, n=n).content)["decision"]
        for n in range(1, calls + 1)
    ]


def test_the_skeptical_prompt_makes_expensive_damage_claims_flip() -> None:
    assert set(answers("v1", LAPTOP)) == {"approve"}
    assert len(set(answers("v2", LAPTOP))) > 1
    # It reads the facts: the same claim on a cheap item is no longer doubted.
    cheap = {**LAPTOP, "input": {**LAPTOP["input"], "amount_usd": 49.0}}
    assert set(answers("v2", cheap)) == {"approve"}


def test_it_follows_the_receipt_rule_of_the_prompt() -> None:
    statement = ROWS["q-027"]  # bank statement, $36: the policy accepts partial proof
    assert set(answers("v1", statement)) == {"deny"}
    assert set(answers("v2", statement)) == {"approve"}


def test_answers_are_fixed_by_the_seed_and_vary_with_it() -> None:
    vague = ROWS["q-039"]  # "won't turn on", $649
    assert answers("v1", vague, seed=3) == answers("v1", vague, seed=3)
    assert any(answers(p, vague, seed=0) != answers(p, vague, seed=1) for p in ("v1", "v2"))


def test_a_message_without_the_facts_gets_a_question_not_json() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": agent.PROMPTS["v1"]},
            {"role": "user", "content": "Can I get a refund?"},
        ],
    }
    content = fake.complete(body, seed=0, digest="d", n=1).content
    assert "?" in content and not content.lstrip().startswith("{")


# --- the agent reads answers, never guesses ------------------------------------------


def test_a_fenced_json_answer_is_read_and_checks_keep_the_models_order() -> None:
    content = (
        'Here is my review.\n\n```json\n{"checks": {"damage": "none", '
        '"return_window": "ok"}, "decision": " Deny"}\n```'
    )
    answer = agent.parse_answer(content, "stop")
    assert answer == {"decision": "deny", "checks": {"damage": "none", "return_window": "ok"}}
    assert list(answer["checks"]) == ["damage", "return_window"]


@pytest.mark.parametrize(
    ("content", "finish", "says"),
    [
        ("I'm sorry, I can't make a refund decision on this request.", "stop", "not JSON"),
        ('{"checks": {"return_window": "ok"}, "decision": "app', "length", "cut off"),
        ('{"checks": {"return_window": "ok"}, "decision": "approve"', "stop", "not JSON"),
        ('{"decision": "approve if the receipt is real"}', "stop", "is not one of"),
        ('{"decision": null}', "stop", "is not one of"),
        ('["approve"]', "stop", "not a JSON object"),
        ('{"decision": "approve", "checks": ["ok"]}', "stop", "checks"),
        ("", "stop", "not JSON"),
    ],
)
def test_a_malformed_answer_is_an_error_not_a_decision(
    content: str, finish: str, says: str
) -> None:
    with pytest.raises(agent.AgentError, match=says):
        agent.parse_answer(content, finish)


def test_under_the_worker_protocol_bad_model_output_is_an_error_line(
    start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start(malformed=1.0)  # every answer is broken JSON
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    request = {
        "request_id": "7",
        "id": "q-034",
        "input": LAPTOP["input"],
        "attempt": 1,
        "version": "candidate",
    }
    out = io.StringIO()
    code = serve(
        agent.RefundReviewer("v2"),
        stdin=io.StringIO(json.dumps(request) + "\n"),
        stdout=out,
        stderr=io.StringIO(),
        env={"PASSK_PROTOCOL": "worker"},
    )
    assert code == 0
    line = json.loads(out.getvalue())
    assert set(line) == {"request_id", "error"} and line["request_id"] == "7"
    assert "the model's answer is not JSON" in line["error"]


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("rate-limited", r"still rate limited after 0 retries \(429 from http://127\.0\.0\.1:"),
        ("wrong-key", r"refused the key \(401\): check OPENAI_API_KEY"),
        ("unreachable", r"cannot reach http://127\.0\.0\.1:9/v1/ after 0 retries"),
    ],
)
def test_an_api_failure_after_the_sdks_retries_is_a_clear_error(
    case: str, says: str, start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start(rate_limit=1.0 if case == "rate-limited" else 0.0, retry_after_s=30.0)
    monkeypatch.setenv(
        "OPENAI_BASE_URL", "http://127.0.0.1:9/v1" if case == "unreachable" else server.url
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong" if case == "wrong-key" else KEY)
    monkeypatch.setenv("PASSK_EXAMPLE_MAX_RETRIES", "0")
    with pytest.raises(agent.AgentError, match=says):
        agent.RefundReviewer("v1")({"id": "q-034", "input": LAPTOP["input"]})


# --- end to end: passk drives the agent against the fake ------------------------------

E2E_ROWS = [
    "q-011",
    "q-023",
    "q-027",
    "q-032",
    "q-034",
    "q-035",
    "q-037",
    "q-040",
    "q-045",
    "q-050",
]


def write_project(root: Path, rows: list[str], **overrides: Any) -> Path:
    """A copy of the example's config and a subset of its rows, agent run by path."""
    config = yaml.safe_load((EXAMPLE / "passk.yml").read_text())
    for spec in (config["agent"], config["baseline"]["agent"]):
        spec["command"] = [sys.executable, str(EXAMPLE / "agent.py"), *spec["command"][2:]]
        spec["timeout_s"] = 60
        # Enough SDK retries that a chain of 429 windows (two workers, 20% of calls
        # opening one) cannot exhaust them: the test is about honouring, not giving up.
        spec["env"] = {**spec.get("env", {}), "PASSK_EXAMPLE_MAX_RETRIES": "12"}
    config.update({"concurrency": 2, "retry": {"attempts": 0, "backoff_s": 0}, **overrides})
    (root / "data.jsonl").write_text("".join(json.dumps(ROWS[i]) + "\n" for i in rows))
    (root / "passk.yml").write_text(yaml.safe_dump(config))
    return root / "passk.yml"


def test_passk_compare_against_the_fake_end_to_end(
    start: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start(rate_limit=0.05, retry_after_s=0.05)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = write_project(tmp_path, E2E_ROWS)
    assert (
        main(
            [
                "baseline",
                "--config",
                str(config),
                "--agent",
                "baseline.agent",
                "--quiet",
                "--concurrency",
                "1",
            ]
        )
        == 0
    )
    result_path = tmp_path / "result.json"
    code = main(
        [
            "compare",
            "--config",
            str(config),
            "--json",
            str(result_path),
            "--markdown",
            str(tmp_path / "report.md"),
            "--quiet",
        ]
    )
    assert code == 1  # the candidate loses high-value rows: the gate fails

    result = json.loads(result_path.read_text())
    gate = result["gate"]
    assert not gate["passed"]
    failed = {f["id"] for f in gate["failures"]}
    assert failed and failed <= {"q-034", "q-035", "q-037", "q-040"}  # expensive damage
    report = (tmp_path / "report.md").read_text()
    assert "first divergent check `damage`" in report
    assert "`q-027`: stable-wrong → stable-correct" in report  # partial proof accepted

    attempts = result["baseline"]["run"]["attempts"] + result["candidate"]["run"]["attempts"]
    assert attempts and all(a.get("error") is None for a in attempts)
    assert all(not a.get("retries") for a in attempts)  # the SDK absorbed every 429
    assert all(
        list(a["checks"])[:3] == ["return_window", "proof_of_purchase", "damage"] for a in attempts
    )
    assert server.state.counters.rate_limited >= 5  # the SDK waited out several 429s
    assert server.state.counters.answered == len(attempts)
    # Every answer carries the usage the API returned, priced by passk.yml's model prices.
    for a in attempts:
        usage = a["usage"]
        assert usage["model"] == "gpt-4o-mini" and usage["priced"] is True
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        expected = (usage["input_tokens"] * 0.15 + usage["output_tokens"] * 0.60) / 1e6
        assert usage["cost_usd"] == pytest.approx(expected)
    assert "**Cost & latency:** $" in report


def test_a_missing_api_key_stops_the_run_with_a_clear_error(
    start: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = write_project(tmp_path, ["q-001"], concurrency=1)
    out = tmp_path / "run.json"
    # Every attempt fails alike: the agent could not run, so passk stops after the
    # first attempts (exit 2) instead of recording crashes as measurements.
    assert main(["run", "--config", str(config), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the candidate agent could not run: its first 2 attempt(s) all failed" in err
    assert "AgentError: OPENAI_API_KEY is not set: export your provider's key" in err
    # The hint fits the cause: the key, not agent.setup or the runner action.
    assert "the agent's API key is missing or refused" in err
    assert "agent.setup" not in err
    assert not out.exists()
    assert server.state.counters.requests == 0


def test_passk_itself_never_imports_the_example_sdk() -> None:
    # openai is an optional extra for the example agents; the package must not need it.
    for module in (EXAMPLE.parents[1] / "src" / "passk_action").rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.split(".")[0] == "openai" for n in names), module
