"""The persistent worker protocol: long-lived agent processes, one request per line.

Starting a process per attempt costs a Python agent tens of milliseconds of
CPU before it does anything, and far more when it imports an SDK or loads a
model.  With ``agent.protocol: worker`` passk keeps a pool of agent processes,
at most one per concurrency slot, started on demand and reused: each request
is one JSON line on the worker's stdin carrying a ``request_id``, each answer
one JSON line on its stdout echoing it (``docs/protocol.md``).

Every failure still becomes an error attempt with a stable reason, and a
worker whose stream can no longer be trusted is replaced, never reused:

- it exits or dies mid-request: ``worker-died`` (the detail names the exit
  status or signal, then its stderr tail); the next request starts a new one;
- it takes longer than the timeout: ``timeout``, its process group is killed;
- an answer line passes the output cap: ``output-too-large``, killed;
- a second answer to a request this worker already answered is dropped and
  logged (a warning on stderr and on the attempt then waiting): it is stray,
  not a sign the stream is out of step, so the request now waiting still gets
  its own answer;
- a line that is not JSON, or answers a request id never sent to this
  worker: ``bad-output``, killed (the stream is out of step);
- ``{"request_id": …, "error": "…"}``: ``exception`` (the agent reported
  that it failed on this request); the worker stays;
- an answer with the right id that breaks the answer rules: ``bad-output``;
  the worker stays.

A worker's stderr is read in the same loop as its stdout while it serves a
request, and drained once more the moment its answer line arrives: whatever
it wrote before answering is then already in the pipe, so the detail of an
error attempt carries exactly what the worker wrote while serving that
request.  What an idle worker writes waits in the pipe and is dropped before
the next request is sent (a worker that writes more than a pipe's buffer while
idle simply waits until then).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ..core.model import Attempt
from .answer import (
    DEFAULT_OUTPUT_CAP,
    STDERR_KEEP_BYTES,
    BadOutput,
    decided_attempt,
    error_attempt,
    json_line,
    loads_answer,
    parse_output_object,
    request_message,
    stderr_tail,
    with_stderr,
)
from .identity import spawn_as_agent
from .protocol import (
    BAD_OUTPUT,
    EXCEPTION,
    OUTPUT_TOO_LARGE,
    SPAWN_FAILED,
    TIMEOUT,
    AgentBase,
    AttemptCancelled,
    AttemptRequest,
)
from .reaper import REAPER
from .runner import (
    ProcessAgentSpec,
    close_pipes,
    exit_description,
    kill_group,
    scrubbed_env,
    spawn_failure,
)
from .serve import PROTOCOL_ENV, REQUEST_ID, WORKER

WORKER_DIED = "worker-died"
"""Reason code: the worker process ended while it owed an answer."""

_READ_CHUNK = 1 << 16
# After stdout closes, how long to wait for the worker's exit status so the
# detail can name it; a worker that closed stdout but lingers is killed anyway.
_EXIT_WAIT_S = 1.0
# On close, how long workers get to exit by themselves once stdin is closed.
_CLOSE_GRACE_S = 2.0


def _warn_on_stderr(message: str) -> None:
    print(f"passk: warning: {message}", file=sys.stderr, flush=True)


def worker_env(parent_env: Mapping[str, str], spec: ProcessAgentSpec) -> dict[str, str]:
    """A worker's environment: like a per-attempt agent's, minus the per-attempt variables.

    The row, attempt and version travel in each request instead (the
    :mod:`passk_action.serve` helper copies them into ``PASSK_*`` per request).
    """
    env = scrubbed_env(parent_env, spec)
    for name in ("PASSK_ROW_ID", "PASSK_ATTEMPT", "PASSK_VERSION"):
        env.pop(name, None)
    env[PROTOCOL_ENV] = WORKER
    return env


def request_line(request: AttemptRequest, request_id: str) -> bytes:
    """The one line a worker reads for one attempt: the request object plus its id."""
    return json_line({REQUEST_ID: request_id, **request_message(request)})


@dataclass(eq=False)  # identity: workers live in sets
class _Worker:
    """One live worker process and what we have read from it."""

    proc: subprocess.Popen[bytes]
    pending: bytearray = field(default_factory=bytearray)
    stderr_tail: bytearray = field(default_factory=bytearray)
    stderr_total: int = 0
    cancelled: bool = False
    answered: dict[str, str] = field(default_factory=dict)
    """Request ids this worker already answered, and which attempt each was: a second
    answer to one is stray."""

    @property
    def stderr_fd(self) -> int:
        assert self.proc.stderr is not None
        return self.proc.stderr.fileno()

    def take_stderr(self, chunk: bytes) -> None:
        self.stderr_total += len(chunk)
        self.stderr_tail += chunk
        if len(self.stderr_tail) > STDERR_KEEP_BYTES:
            del self.stderr_tail[:-STDERR_KEEP_BYTES]

    def drain_stderr(self, *, until_eof_s: float = 0.0) -> None:
        """Read what stderr holds now; with ``until_eof_s``, wait that long for EOF.

        Only the thread serving this worker's request calls it, so the
        worker's streams have one reader at a time.
        """
        deadline = time.monotonic() + until_eof_s
        while True:
            try:
                chunk = os.read(self.stderr_fd, _READ_CHUNK)
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                with selectors.DefaultSelector() as waiting:
                    waiting.register(self.stderr_fd, selectors.EVENT_READ)
                    waiting.select(remaining)
                continue
            except OSError:
                return
            if not chunk:
                return
            self.take_stderr(chunk)

    def stderr_mark(self) -> int:
        return self.stderr_total

    def stderr_since(self, mark: int) -> str:
        """What the worker wrote to stderr since ``mark``, its last 2,000 characters."""
        if self.proc.poll() is not None:
            # A dead worker's last words may still be in the pipe.
            self.drain_stderr(until_eof_s=0.2)
        fresh = min(self.stderr_total - mark, len(self.stderr_tail))
        data = bytes(self.stderr_tail[len(self.stderr_tail) - fresh :]) if fresh > 0 else b""
        return stderr_tail(data)

    def kill(self) -> None:
        kill_group(self.proc)

    def reap(self) -> None:
        """Kill, wait, close pipes: nothing of this worker outlives it, escapees included."""
        REAPER.kill_tree(self.proc.pid)
        self.proc.wait()
        close_pipes(self.proc)
        REAPER.release(self.proc.pid)


def _shutdown(workers: set[_Worker], grace_s: float) -> None:
    """Close every worker's stdin (a polite EOF), wait a little, then kill what is left."""
    for worker in list(workers):
        if worker.proc.stdin is not None:
            with contextlib.suppress(OSError):
                worker.proc.stdin.close()
    deadline = time.monotonic() + grace_s
    for worker in list(workers):
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        worker.reap()
    workers.clear()


@dataclass
class _Outcome:
    line: bytes | None = None
    reason: str | None = None  # TIMEOUT, OUTPUT_TOO_LARGE or WORKER_DIED when no line came
    strays: tuple[str, ...] = ()
    """Second answers to earlier requests, discarded while waiting for this one's."""


class WorkerAgent(AgentBase):
    """A pool of persistent agent processes speaking the line protocol.

    Workers start on demand, so the pool grows to the run's concurrency and
    no further; ``max_workers`` caps it (a request waits for a free worker).
    Call :meth:`close` when the run ends; a finalizer also stops the workers
    if the agent is dropped or the interpreter exits.
    """

    def __init__(
        self,
        spec: ProcessAgentSpec,
        parent_env: Mapping[str, str],
        *,
        max_workers: int | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        clock: Callable[[], float] = time.monotonic,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.spec = spec
        self.description = spec.description or " ".join(spec.command)
        self._env = worker_env(parent_env, spec)
        self._max_workers = max_workers
        self._output_cap = output_cap
        self._clock = clock
        self._warn = warn if warn is not None else _warn_on_stderr
        self.strays = 0
        """Stray answers discarded (a second answer to a request already answered)."""
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._all: set[_Worker] = set()
        self._spawning = 0
        self.started = 0
        """How many worker processes were started (restarts included)."""
        self._finalizer = weakref.finalize(self, _shutdown, self._all, 0.0)

    # -- the pool ----------------------------------------------------------------

    def _acquire(self) -> _Worker | OSError:
        with self._cond:
            while True:
                if self._idle:
                    worker = self._idle.pop()
                    if worker.proc.poll() is None:
                        self._busy.add(worker)
                        return worker
                    # Died while idle (e.g. killed from outside): replace it.
                    self._all.discard(worker)
                    worker.reap()
                    continue
                if self._max_workers is None or len(self._all) + self._spawning < self._max_workers:
                    # Hold the slot while spawning outside the lock.
                    self._spawning += 1
                    break
                self._cond.wait()
        try:
            proc = spawn_as_agent(
                self.spec.command, self.spec.user, cwd=self.spec.cwd, env=self._env, bufsize=0
            )
        except OSError as exc:
            with self._cond:
                self._spawning -= 1
                self._cond.notify()
            return exc
        worker = _Worker(proc)
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        os.set_blocking(worker.stderr_fd, False)
        with self._cond:
            self._spawning -= 1
            self.started += 1
            self._all.add(worker)
            self._busy.add(worker)
        return worker

    def _release(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            worker.reap()
        with self._cond:
            self._busy.discard(worker)
            if healthy:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
            self._cond.notify()

    def cancel(self) -> None:
        """Kill the workers with a request in flight; their ``run`` raises AttemptCancelled."""
        with self._cond:
            for worker in self._busy:
                worker.cancelled = True
                worker.kill()

    def close(self) -> None:
        """Stop every worker: EOF on stdin first, then SIGKILL after a short grace."""
        with self._cond:
            self._idle.clear()
        _shutdown(self._all, _CLOSE_GRACE_S)

    def __enter__(self) -> WorkerAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one attempt -----------------------------------------------------------------

    def run(self, request: AttemptRequest) -> Attempt:
        started = self._clock()
        acquired = self._acquire()
        if isinstance(acquired, OSError):
            return self._error(
                request, SPAWN_FAILED, spawn_failure(self.spec, acquired, "worker"), started
            )
        worker = acquired
        request_id = str(next(self._ids))
        worker.drain_stderr()  # what it wrote while idle belongs to no request
        mark = worker.stderr_mark()
        healthy = False
        try:
            outcome = self._exchange(worker, request_line(request, request_id), started)
            if worker.cancelled:
                raise AttemptCancelled(f"attempt {request.number} of row {request.row.id!r}")
            attempt, healthy = self._judge(request, request_id, worker, outcome, mark, started)
            if outcome.line is not None:
                worker.answered[request_id] = f"attempt {request.number} of row {request.row.id!r}"
            if outcome.strays:
                # On the attempt too, not only on stderr: the artifact keeps what happened.
                attempt = replace(attempt, warnings=(*attempt.warnings, *outcome.strays))
            return attempt
        finally:
            self._release(worker, healthy)
            # A process the worker detached from its session while serving
            # this request dies with the request, as with a process per attempt.
            REAPER.sweep()

    def _exchange(self, worker: _Worker, payload: bytes, started: float) -> _Outcome:
        """Send one request line and read one answer line, within the deadline."""
        proc = worker.proc
        assert proc.stdin is not None and proc.stdout is not None
        deadline = started + self.spec.timeout_s
        sent = 0
        strays: list[str] = []
        stdin_fd, stdout_fd = proc.stdin.fileno(), proc.stdout.fileno()
        stderr_fd = worker.stderr_fd
        os.set_blocking(stdin_fd, False)
        with selectors.DefaultSelector() as selector:
            selector.register(stdin_fd, selectors.EVENT_WRITE)
            selector.register(stdout_fd, selectors.EVENT_READ)
            selector.register(stderr_fd, selectors.EVENT_READ)
            while True:
                newline = worker.pending.find(b"\n")
                if newline > self._output_cap:
                    return _Outcome(reason=OUTPUT_TOO_LARGE, strays=tuple(strays))
                if newline >= 0:
                    line = bytes(worker.pending[:newline])
                    del worker.pending[: newline + 1]
                    stray = self._stray(worker, line)
                    if stray is not None:
                        strays.append(stray)
                        continue
                    if line.strip():
                        # Written before the answer, so already in the pipe.
                        worker.drain_stderr()
                        return _Outcome(line=line, strays=tuple(strays))
                    continue
                if len(worker.pending) > self._output_cap:
                    return _Outcome(reason=OUTPUT_TOO_LARGE, strays=tuple(strays))
                now = self._clock()
                if now >= deadline:
                    return _Outcome(reason=TIMEOUT, strays=tuple(strays))
                for key, _ in selector.select(deadline - now):
                    if key.fd == stdin_fd:
                        try:
                            sent += os.write(stdin_fd, payload[sent : sent + _READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError):
                            # It stopped reading; its stdout will tell us why.
                            sent = len(payload)
                        if sent >= len(payload):
                            selector.unregister(stdin_fd)
                        continue
                    if key.fd == stderr_fd:
                        try:
                            chunk = os.read(stderr_fd, _READ_CHUNK)
                        except BlockingIOError:
                            continue
                        if chunk:
                            worker.take_stderr(chunk)
                        else:
                            selector.unregister(stderr_fd)
                        continue
                    try:
                        chunk = os.read(stdout_fd, _READ_CHUNK)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        return _Outcome(reason=WORKER_DIED, strays=tuple(strays))
                    worker.pending += chunk

    def _stray(self, worker: _Worker, line: bytes) -> str | None:
        """The warning when ``line`` answers a request this worker already answered, else None.

        Such a line is out of turn but harmless: dropping it keeps the stream
        in step, so the request now waiting gets its own answer.  It is
        logged on stderr and, by the caller, put on the attempt now waiting.
        """
        if b"request_id" not in line:
            return None
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict):
            return None
        first = worker.answered.get(str(obj.get(REQUEST_ID)))
        if first is None:
            return None
        self.strays += 1
        # json.dumps: the id is the agent's text; no control or bidi character reaches the log.
        shown = json.dumps(obj.get(REQUEST_ID))[:40]
        self._warn(
            f"worker {worker.proc.pid} answered request_id {shown} a second time;"
            " the extra answer was discarded (answer each request once)"
        )
        return (
            f"the worker answered request_id {shown} ({first}) a second time while this"
            " attempt waited; the extra answer was discarded"
        )

    def _judge(
        self,
        request: AttemptRequest,
        request_id: str,
        worker: _Worker,
        outcome: _Outcome,
        mark: int,
        started: float,
    ) -> tuple[Attempt, bool]:
        """The attempt, and whether the worker may serve the next request."""
        if outcome.line is None:
            if outcome.reason == WORKER_DIED:
                reason = self._death(worker)
            elif outcome.reason == TIMEOUT:
                worker.kill()
                reason = f"killed after the {self.spec.timeout_s:g}s timeout; the worker restarts"
            else:
                worker.kill()
                reason = (
                    f"an answer line exceeded {self._output_cap} bytes, so the worker was killed"
                    " (answer with one JSON line; send logs to stderr)"
                )
            detail = with_stderr(reason, worker.stderr_since(mark))
            return self._error(request, outcome.reason or WORKER_DIED, detail, started), False
        try:
            obj = loads_answer(outcome.line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, BadOutput) as exc:
            snippet = " ".join(outcome.line.decode("utf-8", "replace").split())[:80]
            reason = (
                f"the answer line is not one JSON object ({exc}): {snippet!r}; "
                "the worker restarts (send logs to stderr)"
            )
            detail = with_stderr(reason, worker.stderr_since(mark))
            return self._error(request, BAD_OUTPUT, detail, started), False
        if not isinstance(obj, dict) or str(obj.get(REQUEST_ID)) != request_id:
            got = obj.get(REQUEST_ID) if isinstance(obj, dict) else None
            reason = (
                f"the answer is for request_id {got!r}, expected {request_id!r}; "
                "the worker restarts (answer each request once, in order, echoing request_id)"
            )
            detail = with_stderr(reason, worker.stderr_since(mark))
            return self._error(request, BAD_OUTPUT, detail, started), False
        if "error" in obj and "decision" not in obj:
            reason = f"the agent reported an error: {' '.join(str(obj['error']).split())}"
            detail = with_stderr(reason, worker.stderr_since(mark))
            return self._error(request, EXCEPTION, detail, started), True
        try:
            answer = parse_output_object({k: v for k, v in obj.items() if k != REQUEST_ID})
        except BadOutput as exc:
            detail = with_stderr(str(exc), worker.stderr_since(mark))
            return self._error(request, BAD_OUTPUT, detail, started), True
        return decided_attempt(request, answer, self._clock() - started), True

    def _death(self, worker: _Worker) -> str:
        try:
            code = worker.proc.wait(timeout=_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            worker.kill()
            return "the worker closed its stdout without answering; it was killed and restarts"
        return f"the worker {exit_description(code)} before answering; it restarts"

    def _error(self, request: AttemptRequest, reason: str, detail: str, started: float) -> Attempt:
        return error_attempt(request, reason, detail, self._clock() - started)
