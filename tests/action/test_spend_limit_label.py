"""The allow label and a raised spend limit: the pull request is held to the limit it sets.

A pull request that raises ``gate.max_cost_increase`` makes a protected change.
Without the allow label it is held to the base's limit and the change blocks;
with it (a maintainer approved the raise), the new limit applies to this very
pull request, so a deliberate cost increase can merge green, and the comment
says which limit held it.  The gate is run as ``passk compare --base main``,
the action's own trusted-inputs code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main as cli_main
from passk_action.store.results import read_result
from support.agent_project import make_repo, record_baseline, write_agent
from support.pull_request_repo import commit, git
from support.words import gate_warnings_of, worded

ALLOW = "passk-allow-baseline-change"


def costing(cost: float) -> str:
    """Agent code answering deny, reporting ``cost`` dollars for the decision."""
    usage = json.dumps({"cost_usd": cost})
    return f'print(json.dumps({{"decision": "deny", "usage": {usage}}})); sys.exit(0)'


def set_limit(repo: Path, limit: float) -> None:
    path = repo / "passk.yml"
    config: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    config.setdefault("gate", {})["max_cost_increase"] = limit
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def gate(repo: Path, capsys: pytest.CaptureFixture[str], *labels: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    args = ["compare", "--config", "passk.yml", "--base", "main", "--json", "result.json"]
    args += [f"--label={label}" for label in labels]
    code = cli_main([*args, "--comment", "comment.md", "--quiet"])
    capsys.readouterr()
    result = json.loads((repo / "result.json").read_text(encoding="utf-8"))
    return code, result, (repo / "comment.md").read_text(encoding="utf-8")


def test_a_raised_cost_limit_holds_the_pull_request_to_the_limit_the_label_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    set_limit(repo, 0.25)
    write_agent(repo, extra=costing(0.001))
    record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "bigger-model")
    write_agent(repo, extra=costing(0.0015))  # +50%, on purpose
    set_limit(repo, 0.6)
    commit(repo, "a bigger model: cost +50%, limit raised to +60%")
    monkeypatch.chdir(repo)

    code, result, comment = gate(repo, capsys)
    assert code == 1
    rules = [(f["rule"], f["reason"]) for f in worded(result)]
    said = (
        "gate.max_cost_increase +25% is raised to +60%: with the allow label this pull request "
        "is held to +60%, the new setting; without it, to the base's +25%"
    )
    assert ("protected-change", said) in rules
    assert (
        "cost",
        "cost per decision +50% ($0.001 -> $0.0015), at least +50% with 95% confidence, "
        "over gate.max_cost_increase +25%",
    ) in rules
    assert "is held to +60%, the new setting; without it, to the base" in comment

    code, result, comment = gate(repo, capsys, ALLOW)
    assert code == 0, result["gate"]
    assert result["policy"]["max_cost_increase"] == 0.6
    assert f"allowed protected change: {said}" in gate_warnings_of(result)
    assert "✅ passk: passed" in comment and "is held to +60%" in comment

    # The label allows the raise, not any increase: past the new limit still fails.
    write_agent(repo, extra=costing(0.0018))  # +80%
    commit(repo, "an even bigger model")
    code, result, _ = gate(repo, capsys, ALLOW)
    assert code == 1
    assert [(f["rule"], f["reason"]) for f in worded(result)] == [
        (
            "cost",
            "cost per decision +80% ($0.001 -> $0.0018), at least +80% with 95% confidence, "
            "over gate.max_cost_increase +60%",
        )
    ]


# --- the cost the agent reports is the agent's word: price its tokens instead ----------


def reporting(cost: float, tokens: int) -> str:
    """Agent code answering deny, reporting ``tokens`` input tokens and ``cost`` dollars."""
    usage = json.dumps({"cost_usd": cost, "input_tokens": tokens, "output_tokens": 0})
    return f'print(json.dumps({{"decision": "deny", "usage": {usage}}})); sys.exit(0)'


def set_pricing(repo: Path, prefer: str | None) -> None:
    path = repo / "passk.yml"
    config: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["pricing"] = {"input_per_mtok": 1.0, "output_per_mtok": 1.0}
    if prefer is not None:
        config["pricing"]["prefer"] = prefer
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def cost_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_prefer: str | None, head_prefer: str
) -> Path:
    """main: a +25% cost limit and an agent spending 1,000 tokens ($0.001, as it says);
    the pull request's agent spends 10,000 tokens and says it cost nothing."""
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    set_limit(repo, 0.25)
    set_pricing(repo, base_prefer)
    write_agent(repo, extra=reporting(0.001, 1_000))
    record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "free-lunch")
    write_agent(repo, extra=reporting(0.0, 10_000))
    set_pricing(repo, head_prefer)  # the pull request asks to trust its own figure
    commit(repo, "a bigger model that reports cost_usd: 0")
    monkeypatch.chdir(repo)
    return repo


def test_priced_from_tokens_a_candidate_reporting_cost_zero_fails_the_cost_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = cost_case(tmp_path, monkeypatch, base_prefer="tokens", head_prefer="reported")
    code, result, _ = gate(repo, capsys)
    assert code == 1
    rules = [(f["rule"], f["reason"]) for f in worded(result)]
    assert [rule for rule, _ in rules] == ["cost"], rules  # the base's pricing holds
    assert "($0.001 -> $0.01)" in rules[0][1]
    candidate = read_result(repo / "result.json").result.candidate
    assert {(a.usage.cost_usd, a.usage.priced) for a in candidate.attempts if a.usage} == {
        (0.01, True)
    }


def test_control_trusting_the_reported_cost_lets_cost_zero_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default (prefer: reported): the agent's cost_usd: 0 passes any limit.
    repo = cost_case(tmp_path, monkeypatch, base_prefer=None, head_prefer="reported")
    code, result, _ = gate(repo, capsys)
    assert code == 0, result["gate"]
    candidate = read_result(repo / "result.json").result.candidate
    assert {a.usage.cost_usd for a in candidate.attempts if a.usage} == {0.0}
