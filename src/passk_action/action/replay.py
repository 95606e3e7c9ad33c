"""Replaying recorded attempts: a re-run of the same commit asks the agent nothing new.

A :class:`ReplayAgent` answers every request whose (row, number, phase) was
recorded with the recorded attempt, decision or error alike (an error is
what that attempt was; asking again would let a re-run turn an unclassified
row into a classified one), and passes only attempts never made to the real
agent, which it builds on first use: when everything is replayed, no agent process is started on
either side.  The engine numbers attempts the same way
on every run, so the same requests come back and meet their recorded answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from ..agents.runner import Agent, AttemptRequest
from ..core.model import Attempt, Phase
from ..errors import AgentError


class ReplayAgent:
    """Recorded decisions first, the real agent (built lazily) for everything else."""

    def __init__(
        self,
        description: str,
        recorded: Iterable[Attempt],
        build: Callable[[], Agent],
    ) -> None:
        self.description = description
        self._recorded = {(a.row_id, a.number, a.phase): a for a in recorded}
        self._build = build
        self._agent: Agent | None = None
        self._lock = threading.Lock()
        self.replayed = 0
        self.asked = {Phase.MAIN: 0, Phase.CONFIRM: 0}
        self.build_error: Exception | None = None
        """Why the real agent could not be built; the runner turns the raise into error
        attempts, so the caller must check this and raise it instead of gating on them."""

    def _real(self) -> Agent:
        with self._lock:
            if self.build_error is not None:
                raise self.build_error
            if self._agent is None:
                try:
                    self._agent = self._build()
                except Exception as exc:
                    self.build_error = exc
                    raise
            return self._agent

    def run(self, request: AttemptRequest) -> Attempt:
        recorded = self._recorded.get((request.row.id, request.number, request.phase))
        if recorded is not None:
            with self._lock:
                self.replayed += 1
            return recorded
        agent = self._real()
        with self._lock:
            self.asked[request.phase] += 1
        return agent.run(request)

    def cancel(self) -> None:
        agent = self._agent
        cancel = getattr(agent, "cancel", None)
        if callable(cancel):
            cancel()


def unavailable(reason: str) -> Callable[[], Agent]:
    """A builder for an agent that cannot exist here; raises when it is actually needed."""

    def build() -> Agent:
        raise AgentError(reason, where="baseline.agent")

    return build
