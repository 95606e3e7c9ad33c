"""An agent's ``setup``: commands run once per run, before its first attempt.

Real agents need their dependencies (``pip install -r requirements.txt``,
``npm ci``) where they run; in the container action that is the container,
not the job's runner.  Each command runs through ``/bin/sh -c`` in the
agent's working directory with the environment the agent itself gets (the
job's environment minus GitHub's tokens, plus ``agent.env``), its output
passed line by line to ``relay``; whatever it leaves running is killed when
it ends, as for an attempt (reaper.py).  A failing command raises
:class:`AgentCouldNotRun` naming it with the end of its stderr: the run stops
before any attempt, so a missing dependency never becomes a wall of error
attempts.

A setup is the pull request's code (for the candidate), so nothing it does
may hold the run hostage:

- **time**: each command gets ``agent.setup_timeout_s`` seconds (10 minutes
  unless the config says otherwise); past them it is killed with everything
  it started, and the run stops with exit 2 naming the command;
- **a stop request** (SIGINT/SIGTERM/SIGHUP set ``stop``): the command is killed at
  once, with everything it started, and :class:`Interrupted` is raised;
- **output**: read in chunks, never a whole line at once.  A line is kept up
  to :data:`LINE_CHARS` characters (the rest is counted, not kept); the first
  :data:`RELAY_LINES` lines of a command are relayed as they come, then only
  its last :data:`TAIL_LINES` are kept and relayed when it ends, after a line
  counting those left out.  Memory stays bounded whatever the command prints
  (a 300 MiB line without a newline costs a few KiB), and the log keeps the
  beginning and the end, which is what explains a failure.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from ..core.model import Version
from ..core.runner_credentials import without_runner_credentials
from ..errors import AgentCouldNotRun, Interrupted
from ..inputs.agent_config import AgentConfig
from .identity import agent_user, identity_env, spawn_as_agent
from .reaper import REAPER
from .runner import close_pipes, exit_description

SETUP_STDERR_LINES = 20
"""How many of a failed command's last stderr lines its error keeps."""
LINE_CHARS = 1000
"""Characters of one output line that are kept; a longer line is cut and says so."""
RELAY_LINES = 500
"""Lines of one command's output relayed as they come (a verbose ``pip install`` fits)."""
TAIL_LINES = 50
"""Past :data:`RELAY_LINES`, how many last lines are kept and relayed when the command ends."""

_LINE_BYTES = 4 * LINE_CHARS  # enough bytes for LINE_CHARS characters of UTF-8
_READ_BYTES = 1 << 16
_POLL_S = 0.1
"""How often the wait wakes up to notice a stop request or the time limit."""
_EXIT_GRACE_S = 0.5
"""After the command exits, how long what it started may keep its output open."""
_DRAIN_S = 1.0
"""After everything it started is killed, how long the last output may take to arrive."""

Log = Callable[[str], None]


@dataclass(frozen=True)
class SetupDone:
    """What ran: the commands and how long they took in all."""

    commands: tuple[str, ...]
    duration_s: float


def setup_env(parent_env: Mapping[str, str], agent: AgentConfig) -> dict[str, str]:
    """The agent's environment without the per-attempt ``PASSK_*`` variables.

    With ``PASSK_AGENT_USER`` (the container action) setup runs as that user,
    with the agent's private ``HOME``: it cannot reach passk's token, and
    ``pip install`` falls back to a user install there, which the agent,
    running as the same user with the same ``HOME``, then imports.
    """
    env = without_runner_credentials(parent_env)
    env.update(identity_env(agent_user(parent_env)))
    # The config's env wins, as it does for the agent's attempts: a HOME it names
    # (the baseline's own, sides/exports.py) is where setup installs and the agent looks.
    # No runner credential gets through it either (the loader refuses one already).
    env.update(without_runner_credentials(agent.env))
    return env


def run_setup(
    agent: AgentConfig,
    parent_env: Mapping[str, str],
    version: Version,
    log: Log,
    *,
    relay: Log | None = None,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SetupDone:
    """Run ``agent.setup`` in order; raise :class:`AgentCouldNotRun` at the first failure.

    ``log`` gets passk's own lines (the command, its duration); ``relay`` each
    line the command printed (default: ``log``, indented by two spaces).  A
    set ``stop`` kills the command at once and raises :class:`Interrupted`.
    """
    started = clock()
    env = setup_env(parent_env, agent)
    show = relay if relay is not None else (lambda line: log(f"  {line}"))
    for index, command in enumerate(agent.setup):
        where = f"{agent.where}.setup[{index}]"
        _raise_if_stopped(stop, version, command)
        log(f"$ {command}")
        began = clock()
        ended = _run(command, agent, env, parent_env, _Shown(show, log), stop, clock)
        if ended.stopped:
            _raise_if_stopped(stop, version, command)
        if ended.timed_out:
            raise AgentCouldNotRun(
                version=version.value,
                reason=f"setup command `{command}` did not finish within "
                f"{agent.setup_timeout_s:g}s, so it was stopped",
                stderr_tail=ended.stderr_tail,
                where=where,
                hint="make it finish sooner (pin or cache what it installs), or give "
                "agent.setup_timeout_s more seconds",
                during_setup=True,
            )
        if ended.code != 0:
            raise AgentCouldNotRun(
                version=version.value,
                reason=f"setup command `{command}` {exit_description(ended.code)}",
                stderr_tail=ended.stderr_tail,
                where=where,
                hint="run the command by hand in the agent's working directory "
                f"({agent.cwd}) and fix it, or remove it from setup",
                during_setup=True,
            )
        log(f"  ({clock() - began:.1f}s)")
    return SetupDone(agent.setup, clock() - started)


def _raise_if_stopped(stop: threading.Event | None, version: Version, command: str) -> None:
    if stop is not None and stop.is_set():
        raise Interrupted(
            f"stopped during the {version.value} agent's setup (`{command}`); what it "
            "started was killed",
            hint="run the command again",
        )


@dataclass
class _Lines:
    """One output stream cut into lines, each kept up to :data:`_LINE_BYTES` bytes."""

    kept: bytearray = field(default_factory=bytearray)
    cut: int = 0
    """Bytes of the current line beyond what is kept: counted, never stored."""

    def feed(self, chunk: bytes) -> Iterator[str]:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            room = max(0, _LINE_BYTES - len(self.kept))
            self.kept += chunk[start : start + min(room, stop - start)]
            self.cut += max(0, stop - start - room)
            if end < 0:
                return
            yield self._take()
            start = end + 1

    def finish(self) -> Iterator[str]:
        """The last line, when the output did not end with a newline."""
        if self.kept or self.cut:
            yield self._take()

    def _take(self) -> str:
        size = len(self.kept) + self.cut
        text = self.kept.decode("utf-8", errors="replace").removesuffix("\r")
        self.kept = bytearray()
        if self.cut or len(text) > LINE_CHARS:
            text = f"{text[:LINE_CHARS]} … (a line of {size:,} bytes, cut)"
        self.cut = 0
        return text


class _Shown:
    """What the log shows of one command's output: its first lines as they come, then its last."""

    def __init__(self, relay: Log, log: Log) -> None:
        self._relay, self._log = relay, log
        self._relayed = 0
        self._held: deque[str] = deque(maxlen=TAIL_LINES)
        self._left_out = 0

    def add(self, line: str) -> None:
        if self._relayed < RELAY_LINES:
            self._relayed += 1
            self._relay(line)
            return
        if len(self._held) == TAIL_LINES:
            self._left_out += 1
        self._held.append(line)

    def finish(self) -> None:
        if self._left_out:
            self._log(
                f"  … {self._left_out:,} line(s) of output not shown; the last {len(self._held)}:"
            )
        for line in self._held:
            self._relay(line)
        self._held.clear()


@dataclass
class _Ended:
    code: int = 0
    timed_out: bool = False
    stopped: bool = False
    stderr_tail: str = ""


def _run(
    command: str,
    agent: AgentConfig,
    env: Mapping[str, str],
    parent_env: Mapping[str, str],
    shown: _Shown,
    stop: threading.Event | None,
    clock: Callable[[], float],
) -> _Ended:
    """Run one command, relaying its output as it comes, within its time limit."""
    if not agent.cwd.is_dir():
        return _Ended(127, stderr_tail=f"working directory {str(agent.cwd)!r} does not exist")
    try:
        # As the agent user, in a session of its own, through the reaper, as
        # attempts are: what a setup command leaves running (the pull
        # request's own code, for the candidate) dies with it instead of
        # living on beside the attempts.
        proc = spawn_as_agent(
            ["/bin/sh", "-c", command],
            agent_user(parent_env),
            cwd=agent.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            bufsize=0,
        )
    except OSError as exc:
        return _Ended(127, stderr_tail=f"cannot start /bin/sh: {exc.strerror or exc}")
    assert proc.stdout is not None and proc.stderr is not None
    ended = _Ended()
    tail: deque[str] = deque(maxlen=SETUP_STDERR_LINES)
    streams = {proc.stdout.fileno(): _Lines(), proc.stderr.fileno(): _Lines()}
    stderr_fd = proc.stderr.fileno()

    def take(fd: int, lines: Iterator[str]) -> None:
        for line in lines:
            shown.add(line)
            if fd == stderr_fd:
                tail.append(line)

    deadline = clock() + agent.setup_timeout_s
    killed = False
    try:
        with selectors.DefaultSelector() as selector:
            for fd in streams:
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
            exited_at: float | None = None
            while True:
                now = clock()
                if stop is not None and stop.is_set():
                    ended.stopped = True
                    break
                if now >= deadline:
                    ended.timed_out = True
                    break
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is not None and (
                    not selector.get_map() or now - exited_at > _EXIT_GRACE_S
                ):
                    break
                if not selector.get_map():
                    # Both streams closed, the command still running: wait for it.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=min(_POLL_S, deadline - now))
                    continue
                for key, _ in selector.select(min(_POLL_S, deadline - now)):
                    _read(key.fd, selector, streams, take)
            # The command is done (or stopped): kill what it left running, which
            # may hold its output open, then read what is left of it.
            _end(proc)
            killed = True
            drain_until = clock() + _DRAIN_S
            while selector.get_map() and not (ended.stopped or ended.timed_out):
                remaining = drain_until - clock()
                if remaining <= 0:
                    break
                for key, _ in selector.select(min(_POLL_S, remaining)):
                    _read(key.fd, selector, streams, take)
        for fd, lines in streams.items():
            take(fd, lines.finish())
        shown.finish()
    finally:
        if not killed:
            _end(proc)
        close_pipes(proc)
    ended.code = proc.returncode
    ended.stderr_tail = "\n".join(tail)
    return ended


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started, escapees included; reap it."""
    REAPER.kill_tree(proc.pid)
    proc.wait()
    REAPER.release(proc.pid)


def _read(
    fd: int,
    selector: selectors.BaseSelector,
    streams: Mapping[int, _Lines],
    take: Callable[[int, Iterator[str]], None],
) -> None:
    """Read one chunk of ``fd`` into its lines; unregister it at its end."""
    try:
        chunk = os.read(fd, _READ_BYTES)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if not chunk:
        selector.unregister(fd)
        return
    take(fd, streams[fd].feed(chunk))
