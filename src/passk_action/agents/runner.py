"""The agent runner: the edge that executes an agent and records its attempts.

An agent is anything that turns an :class:`AttemptRequest` into an
:class:`~passk_action.core.model.Attempt`.  :class:`ProcessAgent` starts one
process per attempt and speaks the protocol of ``docs/protocol.md`` (one JSON
object on stdin, one on stdout); :class:`FunctionAgent` wraps a Python callable
for tests and benchmarks.  :func:`run_attempts` runs many requests on a bounded
thread pool, retries error attempts with jittered backoff, and hands every
finished attempt to a callback (the artifact journal) one at a time.

Every way an agent can misbehave becomes an *error attempt* with a stable
reason code, never an exception and never a decision: a crash is not an answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..core.causes import Kind, cause, dominant_kind
from ..core.model import Attempt, Json, Phase, Row, Usage, Version, split_error_detail
from ..errors import AgentCouldNotRun, AgentError, UsageError
from ..progress import Progress
from .identity import AgentUser, identity_env, popen_identity
from .reaper import REAPER

# Reason codes stored in Attempt.error.  They are part of the artifact format:
# renaming one breaks comparisons with recorded runs.
TIMEOUT = "timeout"
EXIT_STATUS = "exit-status"
BAD_OUTPUT = "bad-output"
OUTPUT_TOO_LARGE = "output-too-large"
SPAWN_FAILED = "spawn-failed"
EXCEPTION = "exception"

DEFAULT_OUTPUT_CAP = 1 << 20
STDERR_TAIL_CHARS = 2000
# Bytes of stderr kept while reading; a few times the tail so multi-byte
# characters cut at the edge do not eat into the 2,000 characters we show.
STDERR_KEEP_BYTES = 4 * STDERR_TAIL_CHARS * 4
# After the agent exits, how long a grandchild that inherited stdout may keep
# the pipe open before we stop reading: the answer is the agent's, not theirs.
_EXIT_GRACE_S = 0.5
# How often the read loop wakes up to notice an exited agent.
_POLL_S = 0.1
_RETRY_DETAIL_CHARS = 200

SECRET_ENV = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_GITHUB-TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
)
"""Credentials of the workflow that an agent under test has no business seeing."""


@dataclass(frozen=True)
class ProcessAgentSpec:
    """How to start the agent process; built by the config loader."""

    command: tuple[str, ...]
    cwd: Path
    timeout_s: float
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
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


@dataclass(frozen=True)
class AttemptRequest:
    """One attempt to make: which row, which attempt number, why, on which version."""

    row: Row
    number: int
    phase: Phase
    version: Version


class Agent(Protocol):
    """Anything that answers attempt requests; it must never raise for agent faults."""

    description: str

    def run(self, request: AttemptRequest) -> Attempt: ...


@runtime_checkable
class Cancellable(Protocol):
    """An agent whose in-flight attempts can be killed when a run is stopped."""

    def cancel(self) -> None: ...


class AttemptCancelled(Exception):
    """Raised by an agent's ``run`` when :meth:`cancel` killed the attempt.

    A cancelled attempt did not happen: it is neither recorded nor retried, so
    resuming the run makes it again from scratch.
    """


# --------------------------------------------------------------------------
# The protocol's output, shared by every agent kind.


class BadOutput(Exception):
    """The agent's answer breaks the protocol; ``str()`` says how."""


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads silently keeps the last of duplicate keys; for checks that
    # would hide which value the agent meant, so duplicates are an error.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadOutput(f"duplicate key {key!r} in a JSON object")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise BadOutput(f"{name} is not valid JSON")


def compact_json(value: Json) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def storable_text(text: str) -> str:
    """``text`` with anything UTF-8 cannot hold (lone surrogates) written as ``\\udXXX``.

    For details and logs, which must reach the journal whatever the agent sent.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _storable(text: str, what: str) -> str:
    """``text`` unchanged, or BadOutput when UTF-8 JSON cannot store it (a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadOutput(
            f"{what} holds a lone surrogate (\\u{ord(text[exc.start]):04x}),"
            " which UTF-8 cannot store; send valid Unicode"
        ) from exc
    return text


def _preview(value: object) -> str:
    """The start of ``value`` as compact JSON for an error message, whatever it holds."""
    try:
        return storable_text(compact_json(value))[:80]
    except (RecursionError, ValueError, TypeError):
        return f"a {type(value).__name__} too deep or large to show"


def _check_value(name: str, value: object) -> str:
    if isinstance(value, str):
        return _storable(value, f"check {name!r}")
    try:
        text = compact_json(value)
    except RecursionError as exc:
        raise BadOutput(f"check {name!r} is nested too deeply to store") from exc
    except (ValueError, TypeError) as exc:
        raise BadOutput(f"check {name!r} cannot be stored as JSON ({exc})") from exc
    return _storable(text, f"check {name!r}")


def loads_answer(text: str) -> Any:
    """Decode one answer's JSON text by the protocol's rules.

    Raises BadOutput for duplicate keys and NaN/Infinity, and for JSON that is
    valid but that passk could not store or read back: nesting deeper than the
    parser's recursion limit, integers longer than Python's digit limit.
    ``json.JSONDecodeError`` (a ValueError) is left to the caller, which knows
    the transport's words for it.
    """
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant
        )
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:
        raise BadOutput("the answer is nested too deeply to store") from exc
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string"
        raise BadOutput(f"the answer cannot be stored: {' '.join(str(exc).split())[:120]}") from exc


@dataclass(frozen=True)
class Answer:
    """A valid answer: the decision, its checks, what it spent, and what was ignored."""

    decision: str
    checks: tuple[tuple[str, str], ...] = ()
    usage: Usage | None = None
    warnings: tuple[str, ...] = ()


def parse_output_object(obj: object) -> Answer:
    """Validate a decoded answer; return its decision and checks in reported order.

    Check values that are not strings are kept as their compact JSON text
    (``true`` -> ``"true"``) so every check compares as a string.  A
    malformed ``usage`` never costs the decision: what is wrong with it
    becomes a warning on the attempt (see :func:`parse_usage`).
    """
    if not isinstance(obj, dict):
        kind = "an array" if isinstance(obj, list) else f"a {type(obj).__name__}"
        raise BadOutput(f"the answer must be a JSON object, got {kind}")
    if "decision" not in obj:
        raise BadOutput('the answer has no "decision" key')
    decision = obj["decision"]
    if not isinstance(decision, str):
        raise BadOutput(f'"decision" must be a string, got {_preview(decision)}')
    if not decision.strip():
        raise BadOutput('"decision" is empty')
    _storable(decision, '"decision"')
    raw_checks = obj.get("checks", {})
    if raw_checks is None:
        raw_checks = {}
    if not isinstance(raw_checks, dict):
        raise BadOutput(f'"checks" must be a JSON object, got {_preview(raw_checks)}')
    checks = tuple(
        (_storable(str(name), "a check name"), _check_value(str(name), value))
        for name, value in raw_checks.items()
    )
    usage, warnings = parse_usage(obj.get("usage"))
    return Answer(decision, checks, usage, warnings)


USAGE_TOKENS = ("input_tokens", "output_tokens")
MAX_USAGE_COUNTERS = 32
"""Extra counters kept per attempt; more are dropped with a warning."""


def _count(value: object) -> int | None:
    """A token count: a whole number >= 0 (``12.0`` is 12; ``true`` is not a count)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if 0 <= value < 2**63 else None


def _amount(value: object) -> float | None:
    """A finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return number if 0 <= number < float("inf") else None


def parse_usage(raw: object) -> tuple[Usage | None, tuple[str, ...]]:
    """The answer's optional ``usage`` object, and a warning for each part ignored.

    Keys: ``input_tokens`` and ``output_tokens`` (whole numbers >= 0),
    ``cost_usd`` (a number >= 0), ``model`` (a non-empty string); any other
    key with a number >= 0 is kept as an extra counter.  A value of the wrong
    type is dropped with a warning naming the key; the rest is kept.
    """
    if raw is None:
        return None, ()
    if not isinstance(raw, dict):
        return None, (f'"usage" must be a JSON object, got {_preview(raw)}; ignored',)
    warnings: list[str] = []
    counts: dict[str, int | None] = dict.fromkeys(USAGE_TOKENS)
    cost: float | None = None
    model: str | None = None
    extra: list[tuple[str, float]] = []
    dropped = 0
    for key, value in raw.items():
        if value is None:
            continue
        if key in counts:
            counts[key] = _count(value)
            ok = counts[key] is not None
            want = "a whole number >= 0"
        elif key == "cost_usd":
            cost = _amount(value)
            ok, want = cost is not None, "a number >= 0"
        elif key == "model":
            ok = isinstance(value, str) and bool(value.strip()) and value == storable_text(value)
            model = value.strip() if ok else None
            want = "a non-empty string of valid Unicode"
        else:
            amount = _amount(value)
            ok, want = amount is not None, "a number >= 0"
            if amount is not None and len(extra) < MAX_USAGE_COUNTERS:
                extra.append((storable_text(str(key)), amount))
            elif amount is not None:
                dropped += 1
        if not ok:
            warnings.append(
                f'"usage.{storable_text(str(key))[:40]}" must be {want}, '
                f"got {_preview(value)[:40]}; ignored"
            )
    if dropped:
        warnings.append(f'"usage" has {dropped} counters over {MAX_USAGE_COUNTERS}; ignored')
    usage = Usage(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cost_usd=cost,
        model=model,
        extra=tuple(extra),
    )
    if usage == Usage():
        return None, tuple(warnings)
    return usage, tuple(warnings)


def parse_output(stdout: bytes) -> Answer:
    """Parse a process agent's whole stdout (see :func:`parse_output_object`)."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadOutput(f"stdout is not UTF-8 (byte {exc.start})") from exc
    if not text.strip():
        raise BadOutput("stdout is empty; write one JSON object to stdout")
    try:
        obj = loads_answer(text)
    except json.JSONDecodeError as exc:
        snippet = " ".join(text.strip().split())[:80]
        raise BadOutput(
            f"stdout is not one JSON object ({exc.msg} at line {exc.lineno} column {exc.colno}):"
            f" {snippet!r}; send logs to stderr"
        ) from exc
    return parse_output_object(obj)


# --------------------------------------------------------------------------
# The protocol's request and the attempts it ends in, shared by every transport
# (per-process here, the worker pool in ``worker.py``, HTTP in ``httpagent.py``)
# so that the same answer is recorded the same way whichever carried it.


def request_message(request: AttemptRequest) -> dict[str, Json]:
    """The protocol's request object (``docs/protocol.md``): the same keys on every transport."""
    return {
        "id": request.row.id,
        "input": request.row.input,
        "attempt": request.number,
        "version": request.version.value,
    }


def json_line(message: Mapping[str, Json]) -> bytes:
    """``message`` as one newline-terminated UTF-8 JSON line (a newline in a value is escaped)."""
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def error_attempt(request: AttemptRequest, reason: str, detail: str, duration_s: float) -> Attempt:
    """An attempt that made no decision: ``reason`` is one of the stable reason codes."""
    return Attempt(
        row_id=request.row.id,
        number=request.number,
        phase=request.phase,
        decision=None,
        error=reason,
        # Whatever the agent sent ends up in a UTF-8 journal: never a lone surrogate.
        detail=storable_text(detail),
        duration_s=duration_s,
    )


def decided_attempt(request: AttemptRequest, answer: Answer, duration_s: float) -> Attempt:
    """An attempt whose answer passed :func:`parse_output_object`."""
    return Attempt(
        row_id=request.row.id,
        number=request.number,
        phase=request.phase,
        decision=answer.decision,
        checks=answer.checks,
        duration_s=duration_s,
        usage=answer.usage,
        warnings=answer.warnings,
    )


def exception_detail(exc: BaseException) -> str:
    """An exception as one line, ``Type: message``, for an ``exception`` attempt's detail."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def stderr_tail(data: bytes | bytearray) -> str:
    """The last :data:`STDERR_TAIL_CHARS` characters of captured stderr, decoded leniently."""
    return data.decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]


def with_stderr(reason: str, stderr_tail: str) -> str:
    """A one-line reason, then the end of stderr when there is any."""
    tail = stderr_tail.strip()
    return f"{reason}\nstderr (last {STDERR_TAIL_CHARS} chars): {tail}" if tail else reason


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
    """The parent's environment minus credentials, plus the config's ``env``.

    A secret survives only when named in ``pass_env``; ``env`` from the config
    wins over the parent.
    """
    env = {
        key: value
        for key, value in parent_env.items()
        if key not in SECRET_ENV or key in spec.pass_env
    }
    env.update(identity_env(spec.user))
    env.update(spec.env)
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
# Agents.


def agent_env(
    parent_env: Mapping[str, str], spec: ProcessAgentSpec, request: AttemptRequest
) -> dict[str, str]:
    """The agent's environment: the parent's minus credentials, plus config and PASSK_*.

    A secret survives only when named in ``pass_env``; ``env`` from the config
    wins over the parent; the ``PASSK_*`` variables win over both, since they
    describe this attempt.
    """
    env = scrubbed_env(parent_env, spec)
    env["PASSK_VERSION"] = request.version.value
    env["PASSK_ROW_ID"] = request.row.id
    env["PASSK_ATTEMPT"] = str(request.number)
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


class ProcessAgent:
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
            user, group, extra_groups = popen_identity(self.spec.user)
            proc = REAPER.spawn(
                lambda: subprocess.Popen(
                    list(self.spec.command),
                    cwd=self.spec.cwd,
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    user=user,
                    group=group,
                    extra_groups=extra_groups,
                )
            )
        except OSError as exc:
            return error_attempt(
                request, SPAWN_FAILED, spawn_failure(self.spec, exc), self._clock() - started
            )
        with self._lock:
            self._live.add(proc)
        try:
            captured = self._communicate(proc, stdin_payload(request), started)
            if captured.outcome is None:
                try:
                    proc.wait(timeout=max(0.0, started + self.spec.timeout_s - self._clock()))
                except subprocess.TimeoutExpired:
                    captured.outcome = TIMEOUT
        finally:
            # Always: leftover descendants of a finished agent die too, even
            # those that left its session (see reaper.py).
            REAPER.kill_tree(proc.pid)
            proc.wait()
            close_pipes(proc)
            REAPER.release(proc.pid)
            with self._lock:
                self._live.discard(proc)
                cancelled = proc.pid in self._cancelled
                self._cancelled.discard(proc.pid)
        duration = self._clock() - started
        if cancelled:
            raise AttemptCancelled(f"attempt {request.number} of row {request.row.id!r}")
        return self._judge(request, proc.returncode, captured, duration)

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


class FunctionAgent:
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


# --------------------------------------------------------------------------
# Running many attempts.


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


def failure_signature(attempt: Attempt) -> tuple[str, str] | None:
    """What makes two failed attempts "the same failure": reason code and reason line.

    None for a decision.  The stderr tail is left out: it often names the row
    or a time, while the reason line (``exited with status 1``) does not.
    """
    if attempt.valid:
        return None
    reason, _ = split_error_detail(attempt.detail)
    return (attempt.error or "", reason)


class FirstAttemptsWatch:
    """Decides whether a version could not run, from its first ``window`` attempts.

    When the first ``window`` attempts to finish all failed with one
    :func:`failure_signature`, the agent is not being measured, it is not
    running: :meth:`verdict` then returns the :class:`AgentCouldNotRun` to
    raise.  One decision (right or wrong) or two different failures settle
    it the other way for good.
    """

    def __init__(self, window: int, version: Version | None = None) -> None:
        self.window = window
        self.version = version
        self.settled = window <= 0
        self._seen: list[Attempt] = []

    def add(self, attempt: Attempt) -> AgentCouldNotRun | None:
        if self.settled:
            return None
        signature = failure_signature(attempt)
        if signature is None or (self._seen and failure_signature(self._seen[0]) != signature):
            self.settled = True
            self._seen.clear()
            return None
        self._seen.append(attempt)
        if len(self._seen) < self.window:
            return None
        self.settled = True
        return could_not_run(self._seen, self.version)


def could_not_run(
    attempts: Sequence[Attempt], version: Version | None = None, *, alike: bool = True
) -> AgentCouldNotRun:
    """The error for a version whose ``attempts`` all failed (the first one speaks for all).

    ``alike``: they failed the same way (the first attempts of a run); otherwise
    they are all the attempts of a finished run, failing in any way.
    """
    first = attempts[0]
    reason, tail = split_error_detail(first.detail)
    code = first.error or "error"
    named = version.value if version is not None else "agent"
    said = f"{code}: {reason or 'no detail'}"
    return AgentCouldNotRun(
        version=named,
        reason=(
            f"its first {len(attempts)} attempt(s) all failed the same way: {said}"
            if alike
            else f"all {len(attempts)} of its attempts failed; the first: {said}"
        ),
        stderr_tail=tail,
        where="baseline.agent" if version is Version.BASELINE else "agent",
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
SETUP_HINT = (
    "run the agent command by hand in its working directory; install what it needs "
    "with agent.setup, or run the action on the job's runner (runner/action.yml)"
)


def could_not_run_hint(attempts: Sequence[Attempt]) -> str:
    """The fix that fits why a version could not run: its key, its provider, or its setup."""
    kind = dominant_kind(attempts)
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


@dataclass
class _Tries:
    """One request tried, then retried after a backoff while it errors; None once halted."""

    agent: Agent
    retry: RetryPolicy
    halt: threading.Event
    wait_between: Callable[[float], object]
    rng: random.Random
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: AttemptRequest) -> Attempt | None:
        notes: list[str] = []
        for retry_index in range(self.retry.attempts + 1):
            if self.halt.is_set():
                return None
            try:
                attempt = _run_once(self.agent, request)
            except AttemptCancelled:
                return None
            if attempt.valid or retry_index == self.retry.attempts:
                break
            notes.append(_retry_note(attempt))
            with self.lock:
                delay = self.retry.delay(retry_index, self.rng)
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


def run_attempts(
    requests: Sequence[AttemptRequest],
    agent: Agent,
    *,
    concurrency: int,
    retry: RetryPolicy = RetryPolicy(),
    on_attempt: Callable[[Attempt], None] | None = None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] | None = None,
    rng: random.Random | None = None,
    stop: threading.Event | None = None,
    fail_fast: bool = False,
    second_chance: Callable[[AttemptRequest], bool] | None = None,
) -> list[Attempt]:
    """Run ``requests`` with at most ``concurrency`` in flight; return the finished attempts.

    - An error attempt is tried again up to ``retry.attempts`` times under the
      same number; the final :class:`Attempt` lists the earlier failures in
      ``retries``.  A decision, right or wrong, is final: retrying wrong
      answers would turn flips into passes.
    - ``on_attempt`` (the journal) and ``progress`` are called from the
      calling thread only, one attempt at a time, as attempts finish.  If either
      raises, in-flight attempts are killed and the exception propagates.
    - When ``stop`` is set no new attempt starts, in-flight ones are killed
      (agents that are :class:`Cancellable`) or allowed to finish, and what
      finished is returned.  An attempt stopped during its retries is not
      returned, so resuming makes it afresh.
    - ``sleep`` waits between retries (injected by tests); by default the
      wait ends early when the run is stopped.
    - With ``fail_fast``, the first ``min(len(requests), 2 * concurrency)``
      attempts are watched (:class:`FirstAttemptsWatch`): no attempt beyond
      them starts until one of them succeeds or two fail differently, and if
      all fail alike :class:`AgentCouldNotRun` is raised after they are
      handed to ``on_attempt``.  An agent whose setup failed raises it too.
    - ``second_chance`` names the requests (the rows a gate rests on) whose
      error, after its retries, is held back until every other attempt is
      done when it looks transient (a rate limit, a server error, a timeout:
      ``core.causes``) and retries are on: then, after ``retry.max_backoff_s``,
      each is tried again with the whole retry budget, and its earlier
      failures join its ``retries``.  A short outage costs time, not an
      unclassified row; a re-run replays the final attempt, retries included.

    The result is ordered by the first appearance of each row in ``requests``,
    then by attempt number, whatever order attempts finished in.
    """
    _check_requests(requests, concurrency)
    # ``halt`` is ours: set on ``stop`` or when the journal raises.  Workers
    # wait on it between retries so a stop cuts a long backoff short.
    halt = threading.Event()
    attempt_with_retries = _Tries(
        agent, retry, halt, sleep if sleep is not None else halt.wait, rng or random.Random()
    )

    def halt_now() -> None:
        halt.set()
        if isinstance(agent, Cancellable):
            agent.cancel()

    row_order: dict[str, int] = {}
    for request in requests:
        row_order.setdefault(request.row.id, len(row_order))
    finished: list[Attempt] = []
    pending = deque(requests)
    in_flight: dict[Future[Attempt | None], AttemptRequest] = {}
    held = _HeldBack(second_chance, retry)

    def hand_over(attempt: Attempt) -> None:
        finished.append(attempt)
        # Called from this thread only, so the journal never sees two
        # attempts at once and needs no lock of its own.
        if on_attempt is not None:
            on_attempt(attempt)
        if progress is not None:
            progress.advance(attempt)

    watch = FirstAttemptsWatch(
        min(len(requests), 2 * concurrency) if fail_fast else 0,
        requests[0].version if requests else None,
    )
    started = 0

    if progress is not None:
        progress.start(len(requests), _label(requests))
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="passk-attempt")
    try:
        while pending or in_flight:
            if stop is not None and stop.is_set():
                # Repeated on every wake-up: it also catches a process that a
                # worker spawned just as the stop arrived.
                halt_now()
            while pending and len(in_flight) < concurrency and not halt.is_set():
                if not watch.settled and started >= watch.window:
                    break  # wait for the verdict on the first attempts
                request = pending.popleft()
                in_flight[pool.submit(attempt_with_retries, request)] = request
                started += 1
            if not in_flight:
                break  # stopped with nothing left running
            done, _ = wait(in_flight, timeout=_POLL_S, return_when=FIRST_COMPLETED)
            for future in done:
                request = in_flight.pop(future)
                result = future.result()
                if result is None:
                    continue
                if held.second_round:
                    hand_over(held.answered(result))
                    continue
                if not held.hold(request, result):
                    hand_over(result)
                unrunnable = watch.add(result)
                if unrunnable is not None:
                    for attempt in held.attempts():
                        hand_over(attempt)  # recorded as they are: the version cannot run
                    raise unrunnable
            if not pending and not in_flight and held.due():
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
    finished.sort(key=lambda a: (row_order[a.row_id], a.number))
    return finished
