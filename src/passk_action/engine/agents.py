"""The runnable agent for a config entry, the agents a comparison asks, closing them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from ..agents.http import HttpAgent
from ..agents.identity import agent_user
from ..agents.runner import Agent, ProcessAgent, ProcessAgentSpec
from ..agents.scorer import ScorerSpec, scored, scorer_spec
from ..agents.worker import WorkerAgent
from ..core.model import Version
from ..errors import ConfigError
from ..inputs.agent_config import AgentConfig
from ..inputs.config import DEFAULT_CONCURRENCY

__all__ = [
    "AgentSource",
    "ReadyAgents",
    "ScorerSpec",
    "build_agent",
    "close_agent",
    "closing",
    "scored",
    "scorer_spec",
]


def build_agent(
    agent: AgentConfig,
    parent_env: Mapping[str, str],
    *,
    concurrency: int | None = None,
    warn: Callable[[str], None] | None = None,
    scorer: ScorerSpec | None = None,
) -> Agent:
    """The runnable agent for one config entry, its answers judged by ``scorer`` if any.

    ``concurrency`` sizes what a persistent agent keeps open: the worker pool
    (one process per slot at most) and the HTTP connection pool.  Without it
    the worker pool grows to whatever concurrency the run uses.  ``warn`` tells
    what a worker did out of turn (the action's annotations; default: stderr).
    """
    return scored(_unscored(agent, parent_env, concurrency, warn), scorer, parent_env)


def _unscored(
    agent: AgentConfig,
    parent_env: Mapping[str, str],
    concurrency: int | None,
    warn: Callable[[str], None] | None,
) -> Agent:
    if agent.http is not None:
        return HttpAgent(
            agent.http,
            parent_env,
            concurrency=concurrency or DEFAULT_CONCURRENCY,
            description=agent.describe(),
        )
    assert agent.command is not None
    spec = ProcessAgentSpec(
        command=agent.command,
        cwd=agent.cwd,
        timeout_s=agent.timeout_s,
        env=dict(agent.env),
        description=agent.describe(),
        user=agent_user(parent_env),
    )
    if agent.protocol == "worker":
        return WorkerAgent(spec, parent_env, max_workers=concurrency, warn=warn)
    if agent.protocol != "process":
        raise ConfigError(
            f"agent protocol {agent.protocol!r} is not supported by this version of passk",
            where="agent.protocol",
            hint="use `process` (one process per attempt) or `worker`",
        )
    return ProcessAgent(spec, parent_env)


def close_agent(agent: Agent) -> None:
    """Close what a persistent agent holds open (worker processes, HTTP pools)."""
    agent.close()


@contextmanager
def closing(agent: Agent) -> Iterator[Agent]:
    try:
        yield agent
    finally:
        close_agent(agent)


class AgentSource(Protocol):
    """The agents of a comparison, by version, each built when it is first needed.

    Asking whether a version is available or how it is described builds
    nothing: a comparison that replays or reuses everything starts no agent.
    """

    def available(self, version: Version) -> bool:
        """Whether this version can be run here at all."""
        ...

    def describe(self, version: Version) -> str:
        """How a run names the agent (``AgentInfo.description``); only if available."""
        ...

    def get(self, version: Version) -> Agent:
        """The agent, built (setup run) on the first call; only if available."""
        ...


@dataclass(frozen=True)
class ReadyAgents:
    """Agents built already (tests, benchmarks, a library caller)."""

    agents: Mapping[Version, Agent]

    def available(self, version: Version) -> bool:
        return version in self.agents

    def describe(self, version: Version) -> str:
        return self.agents[version].description

    def get(self, version: Version) -> Agent:
        return self.agents[version]
