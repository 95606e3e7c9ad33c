"""The scheduler: many attempts on a bounded thread pool, retries, and the first-attempts watch.

:func:`run_attempts` runs attempt requests with at most ``concurrency`` in
flight, retries error attempts with jittered backoff (:class:`RetryPolicy`;
a decision, right or wrong, is never retried), and hands every finished
attempt to a callback (the artifact journal) one at a time.
:class:`FirstAttemptsWatch` stops a version whose first attempts all fail
alike: it is not being measured, it is not running.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

from ..core.causes import Kind, cause, dominant_kind
from ..core.model import Attempt, Phase, Scoring, Version, split_error_detail
from ..core.scoring import BAD_OUTPUT, SCORER_ERROR, unreadable_message
from ..errors import AgentCouldNotRun, PasskError, UnreadableAnswers, UsageError
from ..progress import Progress
from .answer import error_attempt, exception_detail
from .protocol import EXCEPTION, Agent, AttemptCancelled, AttemptRequest, Cancellable

_POLL_S = 0.1
"""How often the scheduler wakes up to notice a stop."""
_RETRY_DETAIL_CHARS = 200


@dataclass(frozen=True)
class RetryPolicy:
    """How often an error attempt is tried again, and how long to wait between tries.

    ``attempts`` counts the *extra* tries.  The wait before extra try ``i``
    (from 0) is ``uniform(0, min(max_backoff_s, backoff_s * 2**i))``: exponential
    backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
    Jitter", 2015), so parallel workers hitting a rate limit spread out.
    """

    attempts: int = 2
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.backoff_s < 0 or self.max_backoff_s < 0:
            raise UsageError(
                "retry settings must not be negative",
                where="retry",
                hint="use attempts >= 0 and backoff seconds >= 0",
            )

    def delay(self, retry_index: int, rng: random.Random) -> float:
        return rng.uniform(0.0, min(self.max_backoff_s, self.backoff_s * 2**retry_index))


def _retry_note(attempt: Attempt) -> str:
    first_line = (attempt.detail or "").splitlines()[0] if attempt.detail else ""
    if len(first_line) > _RETRY_DETAIL_CHARS:
        first_line = first_line[: _RETRY_DETAIL_CHARS - 1] + "…"
    return f"{attempt.error}: {first_line}" if first_line else str(attempt.error)


def _run_once(agent: Agent, request: AttemptRequest) -> Attempt:
    try:
        return agent.run(request)
    except (AttemptCancelled, AgentCouldNotRun):
        # A version that cannot run at all (its setup failed) stops the run:
        # recording that as error attempts would hide the cause behind them.
        raise
    except Exception as exc:
        # An agent implementation's own bug must not lose the other attempts.
        return error_attempt(request, EXCEPTION, exception_detail(exc), 0.0)


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
"""A quoted text in a reason line: what the agent printed or raised, in its own words."""


def failure_signature(attempt: Attempt) -> tuple[str, str] | None:
    """What makes two failed attempts "the same failure": reason code and reason line.

    None for a decision.  The stderr tail is left out, and so is every quoted
    text in the reason line (what the agent printed, a key it missed): they
    often name the row or a time, while the rest of the line (``stdout holds
    the answer and 1 other line(s)``, ``exited with status 1``) does not.
    """
    if attempt.valid:
        return None
    reason, _ = split_error_detail(attempt.detail)
    return (attempt.error or "", _QUOTED.sub("'…'", reason))


class FirstAttemptsWatch:
    """Decides whether a version could not run, from its first ``window`` attempts.

    When the first ``window`` attempts to finish all failed with one
    :func:`failure_signature`, the agent is not being measured, it is not
    running: :meth:`add` then returns the :class:`AgentCouldNotRun` to
    raise, or, when the agent answered every time and the scoring rules
    could read none of its answers alike (an extractor that matches
    nothing), the :class:`UnreadableAnswers`.  One decision (right or wrong)
    or two different failures settle it the other way for good.

    An attempt's first try counts as soon as it fails (:meth:`add_try`)
    unless its failure looks transient (a rate limit, a timeout: a retry may
    well answer): a failure that repeats alike is not worth its retries.
    Thread-safe: tries fail in the attempts' threads.
    """

    def __init__(
        self, window: int, version: Version | None = None, scoring: Scoring | None = None
    ) -> None:
        self.window = window
        self.version = version
        self.scoring = scoring or Scoring()
        self.settled = window <= 0
        self._seen: list[Attempt] = []
        self._tried: set[tuple[str, int]] = set()
        """Attempts counted at their first try (their final outcome settles nothing more)."""
        self._lock = threading.Lock()

    @classmethod
    def of(cls, first: AttemptRequest | None, window: int) -> FirstAttemptsWatch:
        """The watch of a run whose first request is ``first`` (its version, its rules)."""
        if first is None:
            return cls(window)
        return cls(window, first.version, first.scoring)

    def add(self, attempt: Attempt) -> PasskError | None:
        """A finished attempt (retries done); the error to raise when the version cannot run."""
        with self._lock:
            if (attempt.row_id, attempt.number) in self._tried:
                if attempt.valid:  # its retry answered: the agent runs
                    self._settle()
                return None
            return self._add(attempt)

    def add_try(self, attempt: Attempt) -> PasskError | None:
        """The failed first try of an attempt that would be retried; as :meth:`add`."""
        if cause(attempt.error or "", attempt.detail).kind is Kind.TRANSIENT:
            return None  # counted when its retries are done
        with self._lock:
            if self.settled:
                return None
            self._tried.add((attempt.row_id, attempt.number))
            return self._add(attempt, retried=False)

    def seen(self) -> list[Attempt]:
        """The failed attempts (or first tries) the verdict rests on, in the order seen."""
        with self._lock:
            return list(self._seen)

    def holds(self, request: AttemptRequest) -> bool:
        """Whether ``request``'s retry waits for the verdict: its first try was counted."""
        with self._lock:
            return not self.settled and (request.row.id, request.number) in self._tried

    def _settle(self) -> None:
        self.settled = True
        self._seen.clear()

    def _add(self, attempt: Attempt, *, retried: bool = True) -> PasskError | None:
        if self.settled:
            return None
        signature = failure_signature(attempt)
        if signature is None or (self._seen and failure_signature(self._seen[0]) != signature):
            self._settle()
            return None
        self._seen.append(attempt)
        if len(self._seen) < self.window:
            return None
        self.settled = True
        if attempt.answered:
            # The agent answered every time; the rules could read none of it.
            return unreadable_answers(self._seen, self.scoring)
        return could_not_run(self._seen, self.version, retried=retried)


def unreadable_answers(attempts: Sequence[Attempt], scoring: Scoring) -> UnreadableAnswers:
    """The error for rules that read none of ``attempts``' answers, said once with a sample."""
    key, message, hint = unreadable_message(attempts[0], len(attempts), scoring)
    return UnreadableAnswers(message, where=key, hint=hint)


def could_not_run(
    attempts: Sequence[Attempt],
    version: Version | None = None,
    *,
    alike: bool = True,
    retried: bool = True,
) -> AgentCouldNotRun:
    """The error for a version whose ``attempts`` all failed (the first one speaks for all).

    ``alike``: they failed the same way (the first attempts of a run); otherwise
    they are all the attempts of a finished run, failing in any way.
    ``retried``: False when they were stopped at their first try, before their retries.
    """
    first = attempts[0]
    reason, tail = split_error_detail(first.detail)
    code = first.error or "error"
    named = version.value if version is not None else "agent"
    said = f"{code}: {reason or 'no detail'}"
    return AgentCouldNotRun(
        version=named,
        reason=(
            f"its first {len(attempts)} attempt(s) all failed the same way"
            f"{'' if retried else ' (so none was retried)'}: {said}"
            if alike
            else f"all {len(attempts)} of its attempts failed; the first: {said}"
        ),
        stderr_tail=tail,
        where=_where(attempts, version),
        hint=could_not_run_hint(attempts),
        attempts=len(attempts),
    )


KEY_HINT = (
    "the agent's API key is missing or refused: set it where the agent runs (in a "
    "workflow, the passk step's `env:`, e.g. OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}; "
    "pull requests from forks get no secrets), then run again"
)
TRANSIENT_HINT = (
    "the agent's provider was failing (rate limits, server errors, timeouts): run again "
    "later, or give `retry:` more attempts and a longer `max_backoff_s`"
)
OUTPUT_HINT = (
    "the agent must write exactly one JSON object to stdout: send its logs and prints "
    "to stderr (print(..., file=sys.stderr), logging's default handler), then run again"
)
SETUP_HINT = (
    "run the agent command by hand in its working directory; install what it needs "
    "with agent.setup, or run the action on the job's runner (runner/action.yml)"
)


def _where(attempts: Sequence[Attempt], version: Version | None) -> str:
    if all(attempt.error == SCORER_ERROR for attempt in attempts):
        return "scoring.command"
    return "baseline.agent" if version is Version.BASELINE else "agent"


SCORER_HINT = (
    "the scorer program could not judge any answer: run it by hand on one request "
    '(one JSON object on stdin) and make it print {"correct": true|false} or {"score": n}'
)


def could_not_run_hint(attempts: Sequence[Attempt]) -> str:
    """The fix that fits why a version could not run: its key, its provider, or its setup."""
    if all(attempt.error == SCORER_ERROR for attempt in attempts):
        return SCORER_HINT
    kind = dominant_kind(attempts)
    if all(attempt.error == BAD_OUTPUT for attempt in attempts):
        return OUTPUT_HINT
    if kind is Kind.KEY:
        return KEY_HINT
    if kind is Kind.TRANSIENT:
        return TRANSIENT_HINT
    return SETUP_HINT


def _label(requests: Sequence[AttemptRequest]) -> str:
    versions = sorted({r.version.value for r in requests})
    label = "+".join(versions) or "agent"
    if requests and all(r.phase is Phase.CONFIRM for r in requests):
        label += " confirmation"
    return label


def _check_requests(requests: Sequence[AttemptRequest], concurrency: int) -> None:
    if concurrency < 1:
        raise UsageError(
            f"concurrency must be at least 1, got {concurrency}",
            where="concurrency",
            hint="use 1 for one attempt at a time",
        )
    seen: set[tuple[str, int]] = set()
    for request in requests:
        key = (request.row.id, request.number)
        if key in seen:
            raise ValueError(f"attempt {request.number} of row {request.row.id!r} requested twice")
        seen.add(key)


class _StoppedAtFirstTries(Exception):
    """Raised in an attempt's thread: the first tries show the version cannot run."""

    def __init__(self, error: PasskError, attempts: list[Attempt]) -> None:
        super().__init__(error.message)
        self.error, self.attempts = error, attempts


@dataclass(frozen=True)
class _Later:
    """A request between two tries: due again ``delay_s`` from when its try ended."""

    request: AttemptRequest
    notes: tuple[str, ...]
    """The failed tries so far, kept for the attempt's ``retries``."""
    retry_index: int
    delay_s: float


@dataclass
class _Tries:
    """One request tried, then retried after a backoff while it errors; None once halted.

    With ``wait_between`` (tests inject it) the wait happens in the attempt's
    own thread, as a sleep; without it a try that must wait returns a
    :class:`_Later` and the scheduler holds the request back without holding
    a concurrency slot, so one request waiting out a backoff or a
    Retry-After never slows the others.
    """

    agent: Agent
    retry: RetryPolicy
    halt: threading.Event
    wait_between: Callable[[float], object] | None
    rng: random.Random
    keeping: Keeping = field(default_factory=lambda: Keeping())
    """Told each failed try that will be retried (the journal), from the attempt's thread;
    the failed tries a stopped run made (by row id and number) count, and are kept."""
    watch: FirstAttemptsWatch | None = None
    """Told each failed first try, which stops the run before its retries when it must."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        # Each is used once (a second chance adds none).
        self._earlier = dict(self.keeping.earlier_tries)

    def __call__(self, request: AttemptRequest) -> Attempt | _Later | None:
        with self.lock:
            notes = tuple(self._earlier.pop((request.row.id, request.number), ()))
        return self.go_on(request, notes, min(len(notes), self.retry.attempts))

    def go_on(
        self, request: AttemptRequest, notes: tuple[str, ...], retry_index: int
    ) -> Attempt | _Later | None:
        """Try ``request`` (its ``retry_index``-th retry; 0: the first try)."""
        while True:
            if self.halt.is_set():
                return None
            try:
                attempt = _run_once(self.agent, request)
            except AttemptCancelled:
                return None
            if attempt.answered or retry_index >= self.retry.attempts:
                break  # a decision, or an answer the rules could not read: never retried
            if retry_index == 0 and not notes and self.watch is not None:
                unrunnable = self.watch.add_try(attempt)
                if unrunnable is not None:
                    # The scheduler's loop records the watched attempts, then stops.
                    raise _StoppedAtFirstTries(unrunnable, self.watch.seen())
            note = _retry_note(attempt)
            notes = (*notes, note)
            if self.keeping.on_retry is not None:
                self.keeping.on_retry(request, note)
            with self.lock:
                delay = self.retry.delay(retry_index, self.rng)
            retry_index += 1
            if self.wait_between is None:
                # The endpoint may ask for longer than the backoff (a Retry-After).
                delay = max(delay, self.agent.ready_in(request))
                return _Later(request, notes, retry_index, delay)
            self.wait_between(delay)
        if notes:
            attempt = replace(attempt, retries=(*attempt.retries, *notes))
        return attempt


class _HeldBack:
    """Transient errors of gated requests, held back for a second chance (``run_attempts``)."""

    def __init__(self, rule: Callable[[AttemptRequest], bool] | None, retry: RetryPolicy) -> None:
        self.rule, self.retry = rule, retry
        self.held: dict[tuple[str, int], tuple[AttemptRequest, Attempt]] = {}
        self.second_round = False

    def hold(self, request: AttemptRequest, result: Attempt) -> bool:
        """Hold ``result`` back when it earns a second chance; whether it did."""
        if (
            result.error is None
            or self.retry.attempts == 0
            or self.rule is None
            or not self.rule(request)
            or cause(result.error, result.detail).kind is not Kind.TRANSIENT
        ):
            return False
        self.held[(result.row_id, result.number)] = (request, result)
        return True

    def attempts(self) -> list[Attempt]:
        return [attempt for _, attempt in self.held.values()]

    def due(self) -> bool:
        return bool(self.held) and not self.second_round

    def start(self) -> list[AttemptRequest]:
        """The second round begins: the held requests, to be tried again."""
        self.second_round = True
        return [request for request, _ in self.held.values()]

    def answered(self, result: Attempt) -> Attempt:
        """The second chance's attempt, the first round's failures kept in its ``retries``."""
        _, first = self.held.pop((result.row_id, result.number))
        earlier = (*first.retries, _retry_note(first))
        return replace(result, retries=(*earlier, *result.retries))


@dataclass
class _HandOver:
    """A finished attempt to the result, the journal and the progress line.

    Called from the scheduling thread only, so the journal never sees two
    attempts at once and needs no lock of its own.
    """

    finished: list[Attempt]
    on_attempt: Callable[[Attempt], None] | None
    progress: Progress | None

    def __call__(self, attempt: Attempt) -> None:
        self.finished.append(attempt)
        if self.on_attempt is not None:
            self.on_attempt(attempt)
        if self.progress is not None:
            self.progress.advance(attempt)


def _start(
    pool: ThreadPoolExecutor,
    tries: _Tries,
    pending: deque[AttemptRequest],
    later: list[tuple[float, int, _Later]],
    in_flight: dict[Future[Attempt | _Later | None], AttemptRequest],
    concurrency: int,
    watch: FirstAttemptsWatch,
    started: int,
) -> int:
    """Fill the free slots: retries that are due first (they waited longest), then new
    requests; return how many new requests started."""
    now = time.monotonic()
    new = 0
    while len(in_flight) < concurrency:
        due = _next_due(later, now, watch)
        if due is not None:
            in_flight[pool.submit(tries.go_on, due.request, due.notes, due.retry_index)] = (
                due.request
            )
            continue
        if not pending or (not watch.settled and started + new >= watch.window):
            break  # nothing to start, or waiting for the verdict on the first attempts
        request = pending.popleft()
        in_flight[pool.submit(tries, request)] = request
        new += 1
    return new


def _next_due(
    later: list[tuple[float, int, _Later]], now: float, watch: FirstAttemptsWatch
) -> _Later | None:
    """The retry due first, taken off ``later``; None if none is due.

    Retries the first-attempts watch holds back stay until it settles: a
    failure that repeats alike on the first tries stops the run before them.
    """
    held: list[tuple[float, int, _Later]] = []
    found = None
    while later and later[0][0] <= now:
        item = heapq.heappop(later)
        if watch.holds(item[2].request):
            held.append(item)
        else:
            found = item[2]
            break
    for item in held:
        heapq.heappush(later, item)
    return found


def _next_wake(later: list[tuple[float, int, _Later]], watch: FirstAttemptsWatch) -> float | None:
    """When the next retry that may start is due (monotonic); None if none may."""
    if watch.settled:
        return later[0][0] if later else None
    return min((due for due, _, item in later if not watch.holds(item.request)), default=None)


def _result_of(
    future: Future[Attempt | _Later | None], held: _HeldBack, hand_over: Callable[[Attempt], None]
) -> Attempt | _Later | None:
    """A try's outcome; when its first tries showed the version cannot run, the attempts
    watched are handed over as they failed (no retries: nothing is lost), then the error."""
    try:
        return future.result()
    except _StoppedAtFirstTries as stopped:
        for attempt in (*stopped.attempts, *held.attempts()):
            hand_over(attempt)
        raise stopped.error from None


def _finished(
    request: AttemptRequest,
    result: Attempt,
    held: _HeldBack,
    watch: FirstAttemptsWatch,
    hand_over: Callable[[Attempt], None],
) -> None:
    """An attempt done (retries included): handed over, held back, or the end of the run.

    Raises :class:`AgentCouldNotRun` when the first attempts show the version
    cannot run, after every attempt held back is handed over as it is.
    """
    if held.second_round:
        hand_over(held.answered(result))
        return
    if not held.hold(request, result):
        hand_over(result)
    unrunnable = watch.add(result)
    if unrunnable is not None:
        for attempt in held.attempts():
            hand_over(attempt)  # recorded as they are: the version cannot run
        raise unrunnable


@dataclass(frozen=True)
class Schedule:
    """How a batch of attempts is run: how many at once, how an error is retried, whether
    the first attempts are watched and which errors get a second chance.

    - With ``fail_fast``, the first ``min(len(requests), 2 * concurrency)``
      attempts are watched (:class:`FirstAttemptsWatch`): no attempt beyond
      them starts until one of them succeeds or two fail differently, and if
      all fail alike :class:`AgentCouldNotRun` is raised after they are
      handed to :attr:`Keeping.on_attempt`.  An agent whose setup failed raises it too.
    - ``second_chance`` names the requests (the rows a gate rests on) whose
      error, after its retries, is held back until every other attempt is
      done when it looks transient (a rate limit, a server error, a timeout:
      ``core.causes``) and retries are on: then, after ``retry.max_backoff_s``,
      each is tried again with the whole retry budget, and its earlier
      failures join its ``retries``.  A short outage costs time, not an
      unclassified row; a re-run replays the final attempt, retries included.
    """

    concurrency: int
    retry: RetryPolicy = RetryPolicy()
    fail_fast: bool = False
    second_chance: Callable[[AttemptRequest], bool] | None = None


@dataclass(frozen=True)
class Keeping:
    """What is kept as attempts go (the journal).

    ``on_attempt`` gets each finished attempt, from the calling thread only, one
    at a time; if it raises, in-flight attempts are killed and the exception
    propagates.  An attempt stopped during its retries is not returned, so
    resuming makes it afresh: ``on_retry`` gets each failed try that will be
    retried, from the attempt's own thread, and ``earlier_tries`` (by row id
    and number) gives them back on resume, where they count against
    ``retry.attempts`` and open the attempt's ``retries``.
    """

    on_attempt: Callable[[Attempt], None] | None = None
    on_retry: Callable[[AttemptRequest, str], None] | None = None
    earlier_tries: Mapping[tuple[str, int], Sequence[str]] = field(default_factory=dict)


def _halt(halt: threading.Event, agent: Agent) -> None:
    halt.set()
    if isinstance(agent, Cancellable):
        agent.cancel()


def _collect(
    request: AttemptRequest,
    future: Future[Attempt | _Later | None],
    held: _HeldBack,
    hand_over: _HandOver,
    watch: FirstAttemptsWatch,
    later: list[tuple[float, int, _Later]],
    order: Iterator[int],
) -> None:
    """One finished future: its attempt handed over (or held back for a second chance),
    or its request put in ``later`` until its wait is over."""
    result = _result_of(future, held, hand_over)
    if isinstance(result, _Later):
        heapq.heappush(later, (time.monotonic() + result.delay_s, next(order), result))
    elif result is not None:
        _finished(request, result, held, watch, hand_over)


def run_attempts(
    requests: Sequence[AttemptRequest],
    agent: Agent,
    schedule: Schedule,
    *,
    keeping: Keeping = Keeping(),
    progress: Progress | None = None,
    sleep: Callable[[float], None] | None = None,
    rng: random.Random | None = None,
    stop: threading.Event | None = None,
) -> list[Attempt]:
    """Run ``requests``, at most ``schedule.concurrency`` at once (:class:`Schedule`).

    - An error attempt is tried again up to ``retry.attempts`` times under the
      same number; the final :class:`Attempt` lists the earlier failures in
      ``retries``.  A decision, right or wrong, is final (so is an answer the
      rules could not read): retrying wrong answers would turn flips into passes.
    - ``progress`` is told as attempts finish, from the calling thread, as
      :attr:`Keeping.on_attempt` is; if it raises, in-flight attempts are killed.
    - When ``stop`` is set no new attempt starts, in-flight ones are killed
      (agents that are :class:`Cancellable`) or allowed to finish, and what
      finished is returned (what ``keeping`` says of resuming).
    - ``sleep`` waits between retries in the attempt's thread (injected by
      tests).  By default a request waiting to be retried holds no
      concurrency slot: it is held back until its backoff, or the longer
      wait its agent asks for (``Agent.ready_in``: a Retry-After), is over,
      while the other requests go on; a stop drops it (resume makes it).

    The finished attempts are returned ordered by the first appearance of each row in
    ``requests``, then by attempt number, whatever order they finished in.
    """
    concurrency, retry = schedule.concurrency, schedule.retry
    _check_requests(requests, concurrency)
    # ``halt`` is ours: set on ``stop`` or when the journal raises.  The loop
    # waits on it, so a stop cuts a long backoff short.
    halt = threading.Event()
    window = min(len(requests), 2 * concurrency) if schedule.fail_fast else 0
    watch = FirstAttemptsWatch.of(requests[0] if requests else None, window)
    tries = _Tries(agent, retry, halt, sleep, rng or random.Random(), keeping, watch)
    halt_now = functools.partial(_halt, halt, agent)
    finished: list[Attempt] = []
    pending = deque(requests)
    in_flight: dict[Future[Attempt | _Later | None], AttemptRequest] = {}
    # Requests between tries, by when they are due (monotonic time), in no slot.
    later: list[tuple[float, int, _Later]] = []
    held = _HeldBack(schedule.second_chance, retry)

    hand_over = _HandOver(finished, keeping.on_attempt, progress)
    order = itertools.count()  # ties between equal due times keep their order
    started = 0

    if progress is not None:
        progress.start(len(requests), _label(requests))
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="passk-attempt")
    try:
        while pending or in_flight or later:
            if stop is not None and stop.is_set():
                # Repeated on every wake-up: it also catches a process that a
                # worker spawned just as the stop arrived.
                halt_now()
            now = time.monotonic()
            if not halt.is_set():
                started += _start(
                    pool,
                    tries,
                    pending,
                    later,
                    in_flight,
                    concurrency,
                    watch,
                    started,
                )
            if halt.is_set() and not in_flight:
                break  # stopped: a request between tries is not returned, so resume makes it
            wake = _next_wake(later, watch)
            next_due = wake - now if wake is not None else _POLL_S
            if not in_flight:
                halt.wait(min(_POLL_S, max(0.0, next_due)))
                continue
            done, _ = wait(
                in_flight, timeout=min(_POLL_S, max(0.0, next_due)), return_when=FIRST_COMPLETED
            )
            for future in done:
                _collect(in_flight.pop(future), future, held, hand_over, watch, later, order)
            if not pending and not in_flight and not later and held.due():
                # Everything else is done: the held errors get their second chance
                # after the longest backoff, with the whole retry budget again.
                (sleep or (stop or halt).wait)(retry.max_backoff_s)
                pending.extend(held.start())
    except BaseException:
        halt_now()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if progress is not None:
            progress.finish()
    row_order: dict[str, int] = {}
    for request in requests:
        row_order.setdefault(request.row.id, len(row_order))
    return sorted(finished, key=lambda a: (row_order[a.row_id], a.number))
