"""Asking a version for attempts: what a record holds is replayed, only the rest is asked.

A re-run of the same content must not re-roll its verdicts.  The attempts an
earlier run recorded (:class:`Replay`, from the action's record of this
content) answer every request with the same row, number and phase, decision
or error alike (an error is what that attempt was; asking again would let a
re-run turn an unclassified row into a classified one).  Only requests never
answered reach the agent, which is built then and not before: when
everything is replayed, no agent is started on either side.  The engine
numbers attempts the same way on every run, so the same requests come back
and meet their recorded answers.

:class:`Asker` counts both, per version and phase, so the result says what
was replayed and how many executions were made now.

Every attempt asked is journaled before it counts: by the caller that
passes ``on_attempt`` (a measured run's own journal), else in the
comparison's journal (``store/compare_journal.py``), whose attempts a
``--resume`` answers in turn: an interrupted comparison asks nothing again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..agents.runner import Agent, AttemptRequest, RetryPolicy, run_attempts
from ..agents.scheduler import Keeping, Schedule
from ..core.model import Attempt, Phase, Version
from ..store.compare_journal import CompareJournal
from .agents import AgentSource
from .session import Session

Key = tuple[str, int, Phase]


@dataclass(frozen=True)
class Replay:
    """Attempts an earlier run of the same content recorded, to be answered again."""

    candidate: tuple[Attempt, ...] = ()
    baseline: tuple[Attempt, ...] = ()
    """The baseline's top-up and confirmation attempts (not the committed artifact's)."""

    def of(self, version: Version) -> tuple[Attempt, ...]:
        return self.candidate if version is Version.CANDIDATE else self.baseline


NO_RETRY = RetryPolicy(attempts=0)


@dataclass
class Asker:
    """The comparison's way to get attempts from either version, replaying first."""

    agents: AgentSource
    session: Session
    replay: Replay = field(default_factory=Replay)
    asked: dict[tuple[Version, Phase], int] = field(default_factory=dict)
    """Attempts each version's agent was asked for, by phase."""
    replayed: dict[tuple[Version, Phase], int] = field(default_factory=dict)
    """Attempts answered from the record, by version and phase."""
    journal: CompareJournal | None = None
    """Where attempts asked without an ``on_attempt`` go, each before it counts; what it
    held when opened (``--resume``) answers its requests again and counts as asked: an
    earlier process of this same comparison asked it."""
    _recorded: dict[Version, dict[Key, Attempt]] = field(default_factory=dict, repr=False)
    _resumed: dict[Version, dict[Key, Attempt]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._recorded = {
            version: {(a.row_id, a.number, a.phase): a for a in self.replay.of(version)}
            for version in Version
        }
        resumed = self.journal.recorded.attempts if self.journal is not None else {}
        self._resumed = {
            version: {(a.row_id, a.number, a.phase): a for a in resumed.get(version, ())}
            for version in Version
        }
        if self.replay.candidate:
            # Replayed attempts were retried when they were made; retrying a replayed
            # error would only replay it again (and stamp it with retry notes).
            self.session = replace(self.session, retry=NO_RETRY)

    def available(self, version: Version) -> bool:
        return self.agents.available(version)

    def describe(self, version: Version) -> str:
        return self.agents.describe(version)

    def count(self, version: Version, phase: Phase) -> int:
        """Attempts of ``version`` in ``phase`` that its agent was asked for (not replayed)."""
        return self.asked.get((version, phase), 0)

    def ask(
        self,
        requests: Sequence[AttemptRequest],
        version: Version,
        *,
        fail_fast: bool = False,
        on_attempt: Callable[[Attempt], None] | None = None,
        on_built: Callable[[Agent], None] | None = None,
        on_retry: Callable[[AttemptRequest, str], None] | None = None,
        earlier_tries: Mapping[tuple[str, int], Sequence[str]] | None = None,
    ) -> list[Attempt]:
        """The attempts for ``requests``: recorded ones replayed, the rest asked of the agent.

        ``on_attempt`` sees every attempt (the journal); ``on_built`` the agent,
        when it has to be built; ``on_retry`` and ``earlier_tries`` are
        :func:`run_attempts`'s (the journal's failed tries, kept across a
        resume).  Ordered as :func:`run_attempts` orders them: by each row's
        first request, then by number.
        """
        recorded, resumed = self._recorded[version], self._resumed[version]
        replayed: list[Attempt] = []
        answered: list[Attempt] = []
        missing: list[AttemptRequest] = []
        for request in requests:
            asked = _key(request)
            if asked in recorded:
                replayed.append(recorded[asked])
            elif asked in resumed:
                answered.append(resumed[asked])
            else:
                missing.append(request)
        self._count(self.replayed, version, replayed)
        self._count(self.asked, version, answered)
        if on_attempt is not None:
            for attempt in (*replayed, *answered):
                on_attempt(attempt)
        elif self.journal is not None:
            on_attempt, on_retry, earlier_tries = self._journaling(version)
        replayed += answered
        fresh: list[Attempt] = []
        if missing:
            agent = self.agents.get(version)
            if on_built is not None:
                on_built(agent)
            fresh = run_attempts(
                missing,
                agent,
                Schedule(
                    concurrency=self.session.concurrency,
                    retry=self.session.retry,
                    fail_fast=fail_fast,
                    second_chance=self.session.second_chance,
                ),
                keeping=Keeping(
                    on_attempt=on_attempt, on_retry=on_retry, earlier_tries=earlier_tries or {}
                ),
                progress=self.session.progress,
                stop=self.session.stop,
                sleep=self.session.sleep,
            )
            self._count(self.asked, version, fresh)
        if not replayed:
            return fresh
        return in_request_order(requests, [*replayed, *fresh])

    @staticmethod
    def _count(
        counts: dict[tuple[Version, Phase], int], version: Version, attempts: Iterable[Attempt]
    ) -> None:
        for attempt in attempts:
            key = (version, attempt.phase)
            counts[key] = counts.get(key, 0) + 1

    def _journaling(
        self, version: Version
    ) -> tuple[
        Callable[[Attempt], None],
        Callable[[AttemptRequest, str], None],
        Mapping[tuple[str, int], Sequence[str]],
    ]:
        """``ask``'s hooks that journal ``version``'s attempts and tries in the comparison's
        journal, and the tries it held for them."""
        journal = self.journal
        assert journal is not None
        return (
            lambda attempt: journal.append(version, attempt),
            lambda request, note: journal.append_try(version, request.row.id, request.number, note),
            journal.recorded.tries.get(version, {}),
        )


def in_request_order(requests: Iterable[AttemptRequest], attempts: list[Attempt]) -> list[Attempt]:
    order: dict[str, int] = {}
    for request in requests:
        order.setdefault(request.row.id, len(order))
    return sorted(attempts, key=lambda a: (order[a.row_id], a.number))


def _key(request: AttemptRequest) -> Key:
    return (request.row.id, request.number, request.phase)
