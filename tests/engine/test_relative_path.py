"""The relative gate rule through the engine: a baseline that measures its gated rows, then a
comparison judged against each row's own baseline accuracy (issue 29)."""

from __future__ import annotations

import random
from pathlib import Path

from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent
from passk_action.agents.scheduler import RetryPolicy
from passk_action.core.model import AgentInfo, Dataset, Phase, Row, Run, Version, dataset_digest
from passk_action.core.sequential import RELATIVE, Finding
from passk_action.engine.agents import ReadyAgents
from passk_action.engine.compare import compare
from passk_action.engine.measuring import Measurement, measure_run, rows_to_measure
from passk_action.engine.request import CandidateSource, CompareInputs
from passk_action.engine.session import Session
from passk_action.inputs.config import Config, parse_config
from support.words import said

K = 3


def _setup(tmp_path: Path) -> tuple[Config, Dataset, tuple[Row, ...]]:
    rows = (
        Row(id="flaky", input={"i": 1}, expected="yes", must_not_break=True),
        Row(id="other", input={"i": 2}, expected="yes"),
    )
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))
    text = (
        f"dataset: data.jsonl\nk: {K}\nagent: {{command: [candidate]}}\n"
        "baseline: {agent: {command: [baseline]}}\nretry: {attempts: 0}\n"
        "gate: {rule: relative}\n"
    )
    return parse_config(text, tmp_path / "passk.yml").config, dataset, rows


def _agent(accuracy: float, seed: str) -> FunctionAgent:
    def answer(request: AttemptRequest) -> dict[str, str]:
        draw = random.Random(f"{seed}|{request.row.id}|{request.number}")
        return {"decision": "yes" if draw.random() < accuracy else "no"}

    return FunctionAgent(answer, seed)


def _session() -> Session:
    return Session(concurrency=4, retry=RetryPolicy(attempts=0), now=lambda: "now")


def _baseline(tmp_path: Path, config: Config, dataset: Dataset, rows: tuple[Row, ...]) -> Run:
    run, made = measure_run(
        Measurement(
            dataset,
            rows,
            config.settings,
            tmp_path / "baseline.json",
            measured=rows_to_measure(config.gate.rule, rows, ()),
        ),
        _agent(0.8, "baseline"),
        AgentInfo(Version.BASELINE, "baseline"),
        _session(),
    )
    assert made == K * len(rows) + config.gate.rule.measure - K
    return run


def test_a_recorded_baseline_measures_its_gated_rows_only(tmp_path: Path) -> None:
    config, dataset, rows = _setup(tmp_path)
    run = _baseline(tmp_path, config, dataset, rows)
    by_row = run.attempts_by_row()
    measured = [a.number for a in by_row["flaky"] if a.phase is Phase.MEASURE]
    assert measured == list(range(K + 1, config.gate.rule.measure + 1))
    assert all(a.phase is Phase.MAIN for a in by_row["other"])
    # Control: the sequential rule's baseline measures nothing beyond k.
    sequential = parse_config(
        "dataset: data.jsonl\ngate: {rule: sequential}\n", tmp_path / "passk.yml"
    ).config
    assert not rows_to_measure(sequential.gate.rule, rows, ()).rows


def test_a_row_right_80_percent_of_the_time_on_both_versions_is_not_blocked(
    tmp_path: Path,
) -> None:
    """The false block issue 29 measured: the relative rule compares the row side by side."""
    config, dataset, rows = _setup(tmp_path)
    inputs = CompareInputs(
        config=config,
        dataset=dataset,
        baseline=_baseline(tmp_path, config, dataset, rows),
        candidate=CandidateSource(out=tmp_path / "candidate.json"),
    )
    agents = ReadyAgents(
        {Version.BASELINE: _agent(0.8, "baseline-now"), Version.CANDIDATE: _agent(0.8, "cand")}
    )
    result = compare(inputs, agents, _session())
    verdict = result.gate.verdicts["flaky"]
    assert verdict.rule == RELATIVE
    assert result.gate.passed, result.gate.failures
    assert verdict.finding in (Finding.RELIABLE, Finding.WITHIN_CHANCE, Finding.MATCHES_BASELINE)


def test_a_row_that_drops_from_80_to_40_percent_is_blocked(tmp_path: Path) -> None:
    config, dataset, rows = _setup(tmp_path)
    inputs = CompareInputs(
        config=config,
        dataset=dataset,
        baseline=_baseline(tmp_path, config, dataset, rows),
        candidate=CandidateSource(out=tmp_path / "candidate.json"),
    )
    agents = ReadyAgents(
        {Version.BASELINE: _agent(0.8, "baseline-now"), Version.CANDIDATE: _agent(0.4, "cand")}
    )
    result = compare(inputs, agents, _session())
    verdict = result.gate.verdicts["flaky"]
    assert (verdict.finding, result.gate.passed) == (Finding.REGRESSION, False)
    assert verdict.losses is not None and verdict.losses > (verdict.wins or 0)
    [failure] = result.gate.failures
    assert "side by side on" in said(failure) and "less accurate than the baseline" in (
        said(failure)
    )
