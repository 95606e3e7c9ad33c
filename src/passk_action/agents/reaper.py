"""Nothing an agent starts outlives its attempt, or passk.

Killing an agent's process group is not enough: a child that calls
``setsid()`` and forks again (a "double fork", the classic way to detach a
daemon) leaves both the group and the agent's process tree, and could go on
writing files after the run, such as a shard artifact before ``passk merge``.

On Linux passk makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
an orphan is then re-parented to passk instead of to init, so every process an
agent ever started stays a descendant of passk.  The rules:

- every agent process is started through :meth:`Reaper.spawn`, which records
  its pid; a sweep that finds a process it does not know while starts are
  under way waits for those starts to record their pids before it judges, so
  a process that is being started is never mistaken for an escapee;
- when an attempt ends (or a worker is replaced), :meth:`Reaper.kill_tree`
  SIGKILLs the agent and all its descendants, and :meth:`Reaper.sweep` kills and
  reaps every child of passk that is neither a recorded agent nor in passk's
  own session: those are processes that escaped an agent (passk's own helpers,
  such as ``git``, stay in passk's session and are never touched);
- at exit (``atexit``) every recorded agent is killed and a last sweep runs.

Where an escapee is found: the kernel re-parents an orphan to the first live
thread of the subreaper (``find_new_reaper`` → ``find_alive_thread``), which is
passk's main thread, the thread group leader, so a sweep reads that one
thread's ``/proc/<pid>/task/<pid>/children``: one small read, not one per
thread of passk and a ``stat`` per agent it started (with 32 attempts in
flight, that cost more than the attempts' own work).  The agents themselves
are children of the threads that started them and never appear there.

Starting agents takes no lock another start or a sweep waits for: ``fork``
and ``exec`` of 32 agents at once overlap, and a sweep after every attempt
never queues behind them.  Where there is no subreaper (not Linux, or
``prctl`` refused) an escapee whose parent already exited cannot be found;
the module then still kills the agent's tree and session as far as ``/proc``
shows them.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36

# A forking loop can create children while we kill; each round kills what it
# finds, and these bound the rounds so a sweep always ends.
_ROUNDS = 50


def prctl(option: int, value: int) -> bool:
    """Call Linux ``prctl(option, value)``; False where there is no such call or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (any of its threads); [] when it is gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        with contextlib.suppress(OSError, ValueError):
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
            found.extend(int(child) for child in text.split())
    return found


def _main_thread_children(pid: int) -> list[int]:
    """The children of process ``pid``'s main thread, where orphans are re-parented."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, session id)`` of a process from ``/proc/<pid>/stat``; None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold ") ".
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[3])
    except (IndexError, ValueError):
        return None


def _descendants(pid: int) -> list[int]:
    seen: list[int] = []
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in seen:
                seen.append(child)
                todo.append(child)
    return seen


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


class Reaper:
    """Tracks agent processes and kills whatever they leave behind; see the module doc."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._started = threading.Condition(self._lock)
        self._agents: set[int] = set()
        self._starting: set[int] = set()  # tickets of starts under way
        self._tickets = 0
        self._subreaper: bool | None = None
        self._atexit = False

    @property
    def subreaper(self) -> bool:
        """Whether orphans are re-parented to this process (set up on the first spawn)."""
        return bool(self._subreaper)

    def _setup(self) -> None:
        if self._subreaper is None:
            self._subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1)
            # Before the first agent: processes of our user may then not read
            # our /proc files (environ, fd); see identity.py.
            prctl(PR_SET_DUMPABLE, 0)
        if not self._atexit:
            atexit.register(self.close)
            self._atexit = True

    def spawn(self, start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """Start an agent process with ``start()`` and record it; OSError passes through.

        ``start()`` runs outside the lock, so starts overlap; until its pid is
        recorded, a sweep that meets an unknown process waits for it.
        """
        with self._lock:
            self._setup()
            self._tickets += 1
            ticket = self._tickets
            self._starting.add(ticket)
        proc: subprocess.Popen[bytes] | None = None
        try:
            proc = start()
            return proc
        finally:
            with self._lock:
                if proc is not None:
                    self._agents.add(proc.pid)
                self._starting.discard(ticket)
                self._started.notify_all()

    def kill_tree(self, pid: int) -> None:
        """SIGKILL ``pid``, every descendant of it, and its process group."""
        for _ in range(_ROUNDS):
            victims = [pid, *_descendants(pid)]
            alive = [v for v in victims if (_stat(v) or ("Z", 0))[0] not in ("Z", "X")]
            if not alive:
                break
            for victim in alive:
                _kill(victim)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    def release(self, pid: int) -> None:
        """``pid`` (already waited for) is no agent any more; kill what escaped it."""
        with self._lock:
            self._agents.discard(pid)
        self.sweep()

    def _strangers(self, me: int, own_session: int) -> list[int]:
        """Children of the main thread that are neither agents nor in passk's session."""
        strangers = []
        for child in _main_thread_children(me):
            if child in self._agents:
                continue
            info = _stat(child)
            if info is None or info[1] == own_session:
                continue
            strangers.append(child)
        return strangers

    def _wait_for_starts(self, tickets: set[int]) -> None:
        """Wait (lock held, released meanwhile) until the starts ``tickets`` have ended."""
        self._started.wait_for(lambda: not (tickets & self._starting))

    def sweep(self) -> list[int]:
        """Kill and reap every escaped process re-parented to us; return their pids."""
        killed: list[int] = []
        with self._lock:
            me, own_session = os.getpid(), os.getsid(0)
            for _ in range(_ROUNDS):
                strangers = self._strangers(me, own_session)
                if strangers and self._starting:
                    # One of them may be an agent whose start has not recorded
                    # its pid yet (started from the main thread): wait for the
                    # starts under way now, then judge again.
                    self._wait_for_starts(set(self._starting))
                    strangers = self._strangers(me, own_session)
                if not strangers:
                    break
                for stranger in strangers:
                    self.kill_tree(stranger)
                for stranger in strangers:
                    # Ours since it was re-parented; reap it so no zombie stays.
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(stranger, 0)
                    killed.append(stranger)
        return killed

    def close(self) -> None:
        """Kill every recorded agent and everything they started (passk is exiting)."""
        with self._lock:
            for pid in list(self._agents):
                self.kill_tree(pid)
        self.sweep()


REAPER = Reaper()
"""The one reaper of this process: agents of every kind are started through it."""
