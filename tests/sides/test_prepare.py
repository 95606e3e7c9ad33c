"""``sides/prepare.py``: the one preparation both shells use, piece by piece.

The agent factory builds lazily, runs the base export's setup first (once,
whichever version is built first), takes the token out of every agent's
environment, and closes what it built before the exports go; ``prepare``
fills the engine's inputs from a working tree or a base commit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

import pytest

from passk_action.core.model import AgentInfo, Dataset, EvalSettings, Run, Version
from passk_action.engine.request import CandidateSource
from passk_action.inputs.agent_config import AgentConfig
from passk_action.inputs.config import Config, parse_config
from passk_action.report.notes import sentence
from passk_action.sides import prepare as prepare_module
from passk_action.sides.exports import BaseExport
from passk_action.sides.prepare import Exports, LazyAgents, Local, Running, Shell, prepare

TOKEN = "ghs_prepareSecretToken0123456789abcdef"


def config_of(tmp_path: Path, extra: str = "") -> Config:
    text = (
        "dataset: data.jsonl\nk: 2\n"
        "agent: {command: [candidate], setup: [make candidate]}\n"
        "baseline: {agent: {command: [baseline], setup: [make baseline]}}\n" + extra
    )
    return parse_config(text, tmp_path / "passk.yml").config


class Log:
    """A shell that writes down what the preparation asks it to show and run."""

    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []
        self.envs: list[Mapping[str, str]] = []

    def shell(self) -> Shell:
        return Shell(
            warn=lambda m: self.events.append(("warn", m)),
            note=lambda m: self.events.append(("note", m)),
            announce=lambda n: self.events.append(("warn", sentence(n))),
            line=lambda m: self.events.append(("line", m)),
            setup=self.setup,
        )

    def setup(
        self, spec: AgentConfig, env: Mapping[str, str], version: Version, where: str | None
    ) -> None:
        self.events.append(("setup", version.value, spec.command[0], where or ""))
        self.envs.append(env)


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The descriptions of the agents closed, in order."""
    seen: list[str] = []
    monkeypatch.setattr(prepare_module, "close_agent", lambda agent: seen.append(agent.description))
    return seen


def test_the_base_exports_setup_runs_first_once_whichever_side_is_built_first(
    tmp_path: Path, closed: list[str]
) -> None:
    config = config_of(tmp_path)
    assert config.agent is not None and config.baseline.agent is not None
    log = Log()
    export = BaseExport(tmp_path, config.baseline.agent)
    env = {"PATH": "/bin", "COPY": f"x{TOKEN}x", "HOME": "/h"}
    with contextlib.ExitStack() as stack:
        agents = LazyAgents(
            {Version.CANDIDATE: config.agent, Version.BASELINE: config.baseline.agent},
            shell=log.shell(),
            running=Running(env=env, token=TOKEN, concurrency=2),
            stack=stack,
            exports=Exports(base=export, base_where="the base"),
        )
        assert agents.available(Version.BASELINE) and agents.describe(Version.CANDIDATE)
        assert log.events == []  # nothing is built before it is asked for
        candidate = agents.get(Version.CANDIDATE)
        assert agents.get(Version.CANDIDATE) is candidate
        agents.get(Version.BASELINE)
        assert log.events == [
            ("setup", "baseline", "baseline", "the base"),
            ("setup", "candidate", "candidate", ""),
        ]
        assert closed == []
    assert closed == ["baseline", "candidate"]  # last built, first closed
    assert all("COPY" not in env and env["HOME"] == "/h" for env in log.envs)


def test_without_isolation_a_persisted_token_is_warned_about_at_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed: list[str]
) -> None:
    config = config_of(tmp_path)
    assert config.agent is not None
    warned: list[Path] = []
    monkeypatch.setattr(
        prepare_module, "warn_persisted_token", lambda cwd, env, warn: warned.append(cwd)
    )
    with contextlib.ExitStack() as stack:
        agents = LazyAgents(
            {Version.CANDIDATE: config.agent},
            shell=Log().shell(),
            running=Running(env={}),
            stack=stack,
            warn_token=True,
        )
        agents.get(Version.CANDIDATE)
    assert warned == [config.agent.cwd]


def test_a_working_tree_comparison_takes_both_agents_from_its_config(
    tmp_path: Path, closed: list[str]
) -> None:
    config = config_of(tmp_path)
    dataset = Dataset(rows=(), source="data.jsonl", digest="sha256:" + "0" * 64)
    baseline = Run(
        tool_version="0.1.0",
        dataset_digest=dataset.digest,
        settings=EvalSettings(k=2),
        agent=AgentInfo(Version.BASELINE, "baseline"),
        created_at="t",
        rows=(),
        attempts=(),
    )
    candidate = CandidateSource(out=tmp_path / "c.json", commit="abc", dirty=True)
    log = Log()
    with prepare(
        log.shell(), Local(config, dataset, baseline), candidate, Running(env={})
    ) as prepared:
        assert prepared.inputs.base is None and prepared.inputs.candidate == candidate
        assert (prepared.inputs.config, prepared.inputs.baseline) == (config, baseline)
        assert [v for v in Version if prepared.agents.available(v)] == list(Version)
        prepared.agents.get(Version.BASELINE)
    # No base export: the baseline agent runs from the working tree, with its own setup.
    assert log.events == [("setup", "baseline", "baseline", "")]
    assert closed == ["baseline"]
