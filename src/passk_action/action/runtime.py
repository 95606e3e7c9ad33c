"""What every action mode shares: its collaborators, the token, the agent's environment."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TextIO

from ..agents.setup import run_setup
from ..core.model import Version
from ..engine.session import Session, make_session, now_iso
from ..github.client import GitHubClient
from ..github.sticky_comment import StepKey
from ..github.workflow import Workflow
from ..inputs.agent_config import AgentConfig
from ..inputs.config import Config
from ..progress import make_progress
from .inputs import ActionInputs


@dataclass(frozen=True)
class Runtime:
    """The action's collaborators, injectable by tests."""

    env: Mapping[str, str]
    workflow: Workflow
    stderr: TextIO
    cwd: Path
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], str] = now_iso

    def session(self, config: Config, stop: threading.Event | None = None) -> Session:
        """The session of an action mode: the config's concurrency, progress in the log.

        Progress quotes agents (the first error and its stderr), so its lines go
        through :meth:`Workflow.line`, never a command.
        """
        return make_session(
            config,
            now=self.now,
            progress=make_progress(self.workflow.stream(), False, False),
            warn=self.workflow.warn,
            stop=stop,
        )


@dataclass(frozen=True)
class GateJob:
    """A gating job as every phase is handed it: its inputs, its collaborators, and where
    it posts (none of that changes while it runs)."""

    inputs: ActionInputs
    runtime: Runtime
    client: GitHubClient | None
    """None: nothing can be posted (no token, or one GitHub will not take)."""
    check_run_id: int | None = None
    """The check run started ``in_progress`` for this job; None when it could not be."""

    @property
    def workflow(self) -> Workflow:
        return self.runtime.workflow


def step_key(inputs: ActionInputs) -> StepKey:
    """The key of the step ``inputs`` describe (see :class:`StepKey`)."""
    working = inputs.working_directory
    try:
        rel_wd = PurePosixPath(*working.relative_to(inputs.runner.workspace).parts)
    except ValueError:
        rel_wd = PurePosixPath(working.as_posix())
    return StepKey(
        config=PurePosixPath(os.path.normpath(PurePosixPath(inputs.config))).as_posix(),
        working_directory=str(rel_wd) if rel_wd.parts else ".",
        check_name=inputs.check_name,
    )


def setup_agent(
    workflow: Workflow,
    agent: AgentConfig,
    env: Mapping[str, str],
    version: Version,
    *,
    where: str | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Run the agent's ``setup`` in a folded group of the log, then say how long it took.

    ``where`` says what the working directory is, when it is not the checkout.
    A failure raises :class:`~passk_action.errors.AgentCouldNotRun` after the group
    closes, so the error line is visible without unfolding anything.  The
    commands' output goes through :meth:`Workflow.line`, so none of it can act
    as a workflow command; a set ``stop`` (SIGINT/SIGTERM) ends the setup at once.
    """
    if not agent.setup:
        return
    count = len(agent.setup)
    with workflow.group(f"passk: setup of the {version.value} agent ({count} command(s))"):
        workflow.line(f"in {agent.cwd}" + (f" ({where})" if where else ""))
        done = run_setup(agent, env, version, workflow.line, stop=stop)
    workflow.line(
        f"passk: {version.value} setup done in {done.duration_s:.1f}s "
        f"({len(done.commands)} command(s))"
    )


def fraction(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"
