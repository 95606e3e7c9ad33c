"""An agent's ``setup``: commands run once per run, before its first attempt.

Real agents need their dependencies (``pip install -r requirements.txt``,
``npm ci``) where they run; in the container action that is the container,
not the job's runner.  Each command runs through ``/bin/sh -c`` in the
agent's working directory with the environment the agent itself gets (the
job's environment minus GitHub's tokens, plus ``agent.env``), its output
passed line by line to ``log``; whatever it leaves running is killed when it
ends, as for an attempt (reaper.py).  A failing command raises
:class:`AgentCouldNotRun` naming it with the end of its stderr: the run stops
before any attempt, so a missing dependency never becomes a wall of error
attempts.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO

from ..core.model import Version
from ..errors import AgentCouldNotRun
from ..inputs.config import AgentConfig
from .identity import agent_user, identity_env, spawn_as_agent
from .protocol import SECRET_ENV
from .reaper import REAPER
from .runner import exit_description

SETUP_STDERR_LINES = 20
"""How many of a failed command's last stderr lines its error keeps."""

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
    env = {
        key: value
        for key, value in parent_env.items()
        if key not in SECRET_ENV or key in agent.pass_env
    }
    env.update(identity_env(agent_user(parent_env)))
    # The config's env wins, as it does for the agent's attempts: a HOME it names
    # (the baseline's own, sides/exports.py) is where setup installs and the agent looks.
    env.update(agent.env)
    return env


def run_setup(
    agent: AgentConfig,
    parent_env: Mapping[str, str],
    version: Version,
    log: Log,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> SetupDone:
    """Run ``agent.setup`` in order; raise :class:`AgentCouldNotRun` at the first failure."""
    started = clock()
    env = setup_env(parent_env, agent)
    for index, command in enumerate(agent.setup):
        where = f"{agent.where}.setup[{index}]"
        log(f"$ {command}")
        began = clock()
        code, tail = _run(command, agent, env, log, parent_env)
        if code != 0:
            raise AgentCouldNotRun(
                version=version.value,
                reason=f"setup command `{command}` {exit_description(code)}",
                stderr_tail=tail,
                where=where,
                hint="run the command by hand in the agent's working directory "
                f"({agent.cwd}) and fix it, or remove it from setup",
                during_setup=True,
            )
        log(f"  ({clock() - began:.1f}s)")
    return SetupDone(agent.setup, clock() - started)


def _run(
    command: str,
    agent: AgentConfig,
    env: Mapping[str, str],
    log: Log,
    parent_env: Mapping[str, str],
) -> tuple[int, str]:
    """Run one command, logging its output as it comes; its exit code and stderr's end."""
    if not agent.cwd.is_dir():
        return 127, f"working directory {str(agent.cwd)!r} does not exist"
    user = agent_user(parent_env)
    try:
        # As the agent user, in a session of its own, through the reaper, as
        # attempts are: what a setup command leaves running (the pull
        # request's own code, for the candidate) dies with it instead of
        # living on beside the attempts.
        proc = spawn_as_agent(
            ["/bin/sh", "-c", command], user, cwd=agent.cwd, env=env, stdin=subprocess.DEVNULL
        )
    except OSError as exc:
        return 127, f"cannot start /bin/sh: {exc.strerror or exc}"
    assert proc.stdout is not None and proc.stderr is not None
    tail: deque[str] = deque(maxlen=SETUP_STDERR_LINES)
    lock = threading.Lock()

    def pump(stream: IO[bytes], keep: deque[str] | None) -> None:
        for raw in stream:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            with lock:
                log(f"  {line}")
                if keep is not None:
                    keep.append(line)

    readers = [
        threading.Thread(target=pump, args=(stream, keep), daemon=True)
        for stream, keep in ((proc.stdout, None), (proc.stderr, tail))
    ]
    for reader in readers:
        reader.start()
    code = proc.wait()
    # Its leftovers may hold the pipes open: kill them before reading to the end.
    REAPER.kill_tree(proc.pid)
    REAPER.release(proc.pid)
    for reader in readers:
        reader.join()
    proc.stdout.close()
    proc.stderr.close()
    return code, "\n".join(tail)
