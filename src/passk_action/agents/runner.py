"""The agents passk runs itself: a process per attempt, or a Python function.

:class:`ProcessAgent` starts one process per attempt (as the agent user, in
a session of its own, under the reaper: ``identity.spawn_as_agent``) and
speaks the protocol of ``docs/protocol.md``: one JSON object on stdin, one
on stdout (``answer.py`` reads it).  :class:`FunctionAgent` wraps a Python
callable for tests and benchmarks, with the same validation.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.model import Attempt, Json
from ..core.runner_credentials import without_runner_credentials
from ..errors import AgentError
from .answer import (
    DEFAULT_OUTPUT_CAP,
    STDERR_KEEP_BYTES,
    BadOutput,
    decided_attempt,
    error_attempt,
    exception_detail,
    json_line,
    parse_output,
    parse_output_object,
    request_message,
    stderr_tail,
    with_stderr,
)
from .identity import AgentUser, identity_env, spawn_as_agent
from .protocol import (
    BAD_OUTPUT,
    EXCEPTION,
    EXIT_STATUS,
    OUTPUT_TOO_LARGE,
    SPAWN_FAILED,
    TIMEOUT,
    Agent,
    AgentBase,
    AttemptCancelled,
    AttemptRequest,
)
from .reaper import REAPER
from .scheduler import RetryPolicy, could_not_run, run_attempts

__all__ = [  # the names callers outside agents/ import from here
    "Agent",
    "AttemptRequest",
    "FunctionAgent",
    "ProcessAgent",
    "ProcessAgentSpec",
    "RetryPolicy",
    "could_not_run",
    "run_attempts",
]

# After the agent exits, how long a grandchild that inherited stdout may keep
# the pipe open before we stop reading: the answer is the agent's, not theirs.
_EXIT_GRACE_S = 0.5
# How often the read loop wakes up to notice an exited agent.
_POLL_S = 0.1


@dataclass(frozen=True)
class ProcessAgentSpec:
    """How to start the agent process; built by the config loader."""

    command: tuple[str, ...]
    cwd: Path
    timeout_s: float
    env: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    user: AgentUser | None = None
    """Run the agent as this user (see identity.py); None: as passk."""

    def __post_init__(self) -> None:
        if not self.command or not self.command[0]:
            raise AgentError(
                "the agent command is empty", where="agent command", hint="name a program to run"
            )
        if not self.timeout_s > 0:
            raise AgentError(
                f"the agent timeout must be positive, got {self.timeout_s}",
                where="agent timeout",
                hint="give a number of seconds such as 60",
            )


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; a number no signal has stays a number."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_description(returncode: int) -> str:
    """How a process ended, from its return code (negative: killed by a signal)."""
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    return f"exited with status {returncode}"


def scrubbed_env(parent_env: Mapping[str, str], spec: ProcessAgentSpec) -> dict[str, str]:
    """The parent's environment minus the runner's credentials, plus the config's ``env``.

    ``env`` from the config wins over the parent; no runner credential
    survives, whatever either holds (``core/runner_credentials.py``).
    """
    env = without_runner_credentials(parent_env)
    env.update(identity_env(spec.user))
    env.update(without_runner_credentials(spec.env))
    return env


def spawn_failure(spec: ProcessAgentSpec, exc: OSError, what: str = "agent") -> str:
    """Why ``spec.command`` could not start, and the fix; ``what`` names the process."""
    program = spec.command[0]
    if not spec.cwd.is_dir():
        return f"cannot start the {what}: working directory {str(spec.cwd)!r} does not exist"
    if isinstance(exc, FileNotFoundError):
        return (
            f"cannot start the {what}: command {program!r} not found"
            " (check the agent command and PATH)"
        )
    if isinstance(exc, PermissionError):
        return f"cannot start the {what}: {program!r} is not executable (chmod +x it)"
    return f"cannot start the {what} {program!r}: {exc.strerror or exc}"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process and its whole tree, grandchildren included.

    Agents lead their own session (``start_new_session``), so the pid is the
    group id.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def close_pipes(proc: subprocess.Popen[bytes]) -> None:
    """Close whichever of the process's pipes are open, ignoring ones already broken."""
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


# --------------------------------------------------------------------------
# The agents.


def agent_env(
    parent_env: Mapping[str, str], spec: ProcessAgentSpec, request: AttemptRequest
) -> dict[str, str]:
    """The agent's environment: the parent's minus credentials, plus config and PASSK_*.

    No runner credential survives; ``env`` from the config wins over the
    parent; the ``PASSK_*`` variables win over both, since they describe this
    attempt.
    """
    env = scrubbed_env(parent_env, spec)
    env["PASSK_VERSION"] = request.version.value
    env["PASSK_ROW_ID"] = request.row.id
    env["PASSK_ATTEMPT"] = str(request.number)
    if request.state_dir is not None:
        env["PASSK_STATE_DIR"] = request.state_dir
    return env


def stdin_payload(request: AttemptRequest) -> bytes:
    """The one JSON object an agent process reads from stdin (newline-terminated)."""
    return json_line(request_message(request))


@dataclass
class _Captured:
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    outcome: str | None = None  # TIMEOUT or OUTPUT_TOO_LARGE when reading stopped early

    def stderr_tail(self) -> str:
        return stderr_tail(self.stderr)


class ProcessAgent(AgentBase):
    """Runs one process per attempt; see ``docs/protocol.md``."""

    def __init__(
        self,
        spec: ProcessAgentSpec,
        parent_env: Mapping[str, str],
        *,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.description = spec.description or " ".join(spec.command)
        self._parent_env = dict(parent_env)
        self._output_cap = output_cap
        self._clock = clock
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen[bytes]] = set()
        self._cancelled: set[int] = set()

    def cancel(self) -> None:
        """Kill every attempt in flight; their ``run`` raises :class:`AttemptCancelled`."""
        with self._lock:
            for proc in self._live:
                self._cancelled.add(proc.pid)
                kill_group(proc)

    def run(self, request: AttemptRequest) -> Attempt:
        started = self._clock()
        try:
            env = agent_env(self._parent_env, self.spec, request)
            proc = spawn_as_agent(self.spec.command, self.spec.user, cwd=self.spec.cwd, env=env)
        except OSError as exc:
            return error_attempt(
                request, SPAWN_FAILED, spawn_failure(self.spec, exc), self._clock() - started
            )
        captured, cancelled = self._see_through(proc, stdin_payload(request), started)
        duration = self._clock() - started
        if cancelled:
            raise AttemptCancelled(f"attempt {request.number} of row {request.row.id!r}")
        return self._judge(request, proc.returncode, captured, duration)

    def _see_through(
        self, proc: subprocess.Popen[bytes], payload: bytes, started: float
    ) -> tuple[_Captured, bool]:
        """Feed ``payload``, wait out the deadline, then reap: what it said, and if cancelled.

        Whatever happens, the process and every descendant die and are
        waited for, its pipes close and the reaper lets go of it, so no
        process, pipe or reaper entry outlives one attempt or one verdict.
        """
        with self._lock:
            self._live.add(proc)
        try:
            captured = self._communicate(proc, payload, started)
            if captured.outcome is None:
                try:
                    proc.wait(timeout=max(0.0, started + self.spec.timeout_s - self._clock()))
                except subprocess.TimeoutExpired:
                    captured.outcome = TIMEOUT
        finally:
            # Always: leftover descendants of a finished process die too, even
            # those that left its session.
            REAPER.kill_tree(proc.pid)
            proc.wait()
            close_pipes(proc)
            REAPER.release(proc.pid)
            with self._lock:
                self._live.discard(proc)
                cancelled = proc.pid in self._cancelled
                self._cancelled.discard(proc.pid)
        return captured, cancelled

    def _communicate(
        self, proc: subprocess.Popen[bytes], payload: bytes, started: float
    ) -> _Captured:
        """Feed stdin and drain stdout/stderr together until EOF, a cap, or the deadline.

        One selector loop serves all three pipes, so an agent that ignores
        stdin while flooding stderr can block neither side.
        """
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        captured = _Captured()
        deadline = started + self.spec.timeout_s
        exited_at: float | None = None
        sent = 0
        with selectors.DefaultSelector() as selector:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin, selectors.EVENT_WRITE)
            selector.register(proc.stdout, selectors.EVENT_READ)
            selector.register(proc.stderr, selectors.EVENT_READ)
            while selector.get_map():
                now = self._clock()
                if now >= deadline:
                    captured.outcome = TIMEOUT
                    return captured
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is not None and now - exited_at > _EXIT_GRACE_S:
                    return captured
                for key, _ in selector.select(min(deadline - now, _POLL_S)):
                    if key.fileobj is proc.stdin:
                        try:
                            sent += os.write(key.fd, payload[sent : sent + 65536])
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError):
                            # An agent that answers without reading its input is fine.
                            sent = len(payload)
                        if sent >= len(payload):
                            selector.unregister(proc.stdin)
                            with contextlib.suppress(OSError):
                                proc.stdin.close()
                        continue
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.fileobj is proc.stdout:
                        captured.stdout += chunk
                        if len(captured.stdout) > self._output_cap:
                            captured.outcome = OUTPUT_TOO_LARGE
                            return captured
                    else:
                        captured.stderr += chunk
                        if len(captured.stderr) > STDERR_KEEP_BYTES:
                            del captured.stderr[:-STDERR_KEEP_BYTES]
        return captured

    def _judge(
        self, request: AttemptRequest, returncode: int, captured: _Captured, duration: float
    ) -> Attempt:
        tail = captured.stderr_tail()
        if captured.outcome == TIMEOUT:
            reason = f"killed after the {self.spec.timeout_s:g}s timeout"
            return error_attempt(request, TIMEOUT, with_stderr(reason, tail), duration)
        if captured.outcome == OUTPUT_TOO_LARGE:
            reason = (
                f"stdout exceeded {self._output_cap} bytes, so the agent was killed"
                " (write one JSON object to stdout and logs to stderr)"
            )
            return error_attempt(request, OUTPUT_TOO_LARGE, with_stderr(reason, tail), duration)
        if returncode != 0:
            reason = exit_description(returncode)
            return error_attempt(request, EXIT_STATUS, with_stderr(reason, tail), duration)
        try:
            answer = parse_output(bytes(captured.stdout))
        except BadOutput as exc:
            return error_attempt(request, BAD_OUTPUT, with_stderr(str(exc), tail), duration)
        return decided_attempt(request, answer, duration)


class FunctionAgent(AgentBase):
    """An in-process agent: a callable returning the protocol's output object.

    The callable's answer goes through the same validation as a process
    agent's stdout, and an exception it raises becomes an ``exception`` error
    attempt, so tests and benchmarks exercise the real rules.
    """

    def __init__(
        self,
        fn: Callable[[AttemptRequest], Mapping[str, Json]],
        description: str = "python function",
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fn = fn
        self.description = description
        self._clock = clock

    def run(self, request: AttemptRequest) -> Attempt:
        started = self._clock()
        try:
            answer = self._fn(request)
        except Exception as exc:  # the agent's fault, recorded, never propagated
            return error_attempt(request, EXCEPTION, exception_detail(exc), self._clock() - started)
        duration = self._clock() - started
        try:
            parsed = parse_output_object(dict(answer) if isinstance(answer, Mapping) else answer)
        except BadOutput as exc:
            return error_attempt(request, BAD_OUTPUT, str(exc), duration)
        return decided_attempt(request, parsed, duration)
