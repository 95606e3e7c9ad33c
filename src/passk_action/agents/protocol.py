"""What every agent is: the request it answers, the Agent protocol, and the reason codes.

An agent is anything that turns an :class:`AttemptRequest` into an
:class:`~passk_action.core.model.Attempt`: a process per attempt
(``runner.py``), a worker pool (``worker.py``), an HTTP endpoint
(``http.py``), a Python function, or a replay of recorded attempts.  Every
way an agent can misbehave becomes an *error attempt* with one of the
stable reason codes below, never an exception and never a decision: a crash
is not an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..core.model import Attempt, Phase, Row, Scoring, Version
from ..core.scoring import BAD_OUTPUT as BAD_OUTPUT

# Reason codes stored in Attempt.error.  They are part of the artifact format:
# renaming one breaks comparisons with recorded runs.  BAD_OUTPUT (an answer that
# breaks the protocol, or that the scoring rules cannot read) is core/scoring's.
TIMEOUT = "timeout"
EXIT_STATUS = "exit-status"
OUTPUT_TOO_LARGE = "output-too-large"
SPAWN_FAILED = "spawn-failed"
EXCEPTION = "exception"


@dataclass(frozen=True)
class AttemptRequest:
    """One attempt to make: which row, which attempt number, why, on which version, and how
    its answer is read (the scoring rules: an extractor, structured decisions, an outcome)."""

    row: Row
    number: int
    phase: Phase
    version: Version
    scoring: Scoring = field(default_factory=Scoring)
    state_dir: str | None = None
    """A folder of this attempt's own where a task its environment scores leaves its state
    for the scorer program (``scorer.py``); None: no scorer looks at state."""


RetryAfters = Mapping[str, str]
"""Request key -> the UTC time (ISO 8601) before which that request must not be sent again."""


class Agent(Protocol):
    """Anything that answers attempt requests; it must never raise for agent faults.

    ``close`` releases what the agent keeps open between attempts (worker
    processes, HTTP connections); ``carry_retry_after`` hands it the waits a
    stopped run was asked for, and where to save new ones, so a ``--resume``
    keeps them; ``ready_in`` says how long a request must still wait, so the
    scheduler holds it back without holding a concurrency slot.  Agents with
    nothing of the kind inherit :class:`AgentBase`.
    """

    description: str

    def run(self, request: AttemptRequest) -> Attempt: ...

    def close(self) -> None: ...

    def carry_retry_after(
        self, pending: RetryAfters, save: Callable[[RetryAfters], None]
    ) -> None: ...

    def ready_in(self, request: AttemptRequest) -> float:
        """Seconds before ``request`` may be sent again (a Retry-After); 0: now."""
        ...


class AgentBase:
    """The parts of :class:`Agent` most agents need not implement: nothing to close or carry."""

    def close(self) -> None:
        """Nothing is kept open between attempts."""

    def carry_retry_after(self, pending: RetryAfters, save: Callable[[RetryAfters], None]) -> None:
        """No endpoint asks this agent to wait."""

    def ready_in(self, request: AttemptRequest) -> float:
        """No endpoint asks this agent to wait: any request may go now."""
        return 0.0


@runtime_checkable
class Cancellable(Protocol):
    """An agent whose in-flight attempts can be killed when a run is stopped."""

    def cancel(self) -> None: ...


class AttemptCancelled(Exception):
    """Raised by an agent's ``run`` when :meth:`cancel` killed the attempt.

    A cancelled attempt did not happen: it is neither recorded nor retried, so
    resuming the run makes it again from scratch.
    """
