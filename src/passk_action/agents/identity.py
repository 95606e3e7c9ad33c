"""Who an agent process runs as, and what it can reach of passk's own process.

Removing the workflow token from the agent's environment is not enough:
``/proc/<passk>/environ`` shows passk's *initial* environment, token included,
and ``/proc/<passk>/fd/1`` is passk's stdout, where a line such as
``::set-output`` is a workflow command.  Linux lets a process read those files
only when it may ptrace passk, so two things close them:

- **passk is not dumpable** (``prctl(PR_SET_DUMPABLE, 0)``, :func:`harden`):
  then only a process with ``CAP_SYS_PTRACE`` may read its ``/proc`` files,
  which stops an agent that runs as the same, unprivileged user.  It does not
  stop root, which has that capability;
- so **when passk runs as root** (the container action), agents run as another,
  unprivileged user, named by the environment variable ``PASSK_AGENT_USER``
  (the action's image sets ``nobody``).  That user gets a private home and
  temporary directory (``HOME`` and ``TMPDIR``), made for the run and removed
  at exit; it can read what is readable by everyone (the checkout, the Python
  installation) and write only there.

The two sides of a comparison are two identities: the base commit's agent
(the baseline, its setup and its confirmation attempts) runs as
``PASSK_BASELINE_USER`` (the image makes and sets ``passk-baseline``), the
pull request's as ``PASSK_AGENT_USER``.  One user could write the other's
``HOME`` (a ``.pth`` file in its user site-packages runs in every later
Python of that user), signal its processes or trace them; two users can do
none of that, and each gets its own private ``HOME`` and ``TMPDIR``.
:func:`baseline_env` is how a side's environment names its user; unset, the
baseline shares the agent user (``sides/prepare.py`` warns).  Nor does a
place the environment names reach both: every process started as an agent
user gets its environment through ``places.own_env``, which keeps from it
every place the other agent user could change (a cache folder under
``/tmp``, say), whatever the variable is called.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UsageError
from .places import Account, own_env, shared_on_purpose
from .reaper import PR_SET_DUMPABLE, REAPER, prctl

AGENT_USER_ENV = "PASSK_AGENT_USER"
"""Run agents as this user (a name or a uid) when passk is root; unset or empty: as passk."""
BASELINE_USER_ENV = "PASSK_BASELINE_USER"
"""Run the base commit's agent as this user instead; unset or empty: as ``PASSK_AGENT_USER``."""
CANDIDATE_USER_ENV = "PASSK_CANDIDATE_USER"
"""Set by :func:`baseline_env`: the baseline side's record of the candidate's user."""


@dataclass(frozen=True)
class AgentUser:
    """An unprivileged account agents run as, and the private home made for it."""

    name: str
    uid: int
    gid: int
    home: Path
    others: tuple[Account, ...] = ()
    """The other agent users (uid, gid): no place they could change reaches this one."""
    on_purpose: frozenset[str] = frozenset()
    """The step's variables shared with them on purpose (``PASSK_SHARED_ENV``)."""


def harden() -> bool:
    """Make this process non-dumpable, so processes of the same user cannot read its /proc files.

    Returns whether it took effect (False off Linux).
    """
    return prctl(PR_SET_DUMPABLE, 0)


_homes: dict[int, Path] = {}


def _private_home(uid: int, gid: int) -> Path:
    """A directory only ``uid`` can use, made once per process and removed at exit."""
    home = _homes.get(uid)
    if home is None or not home.is_dir():
        home = Path(tempfile.mkdtemp(prefix=f"passk-agent-{uid}-"))
        os.chown(home, uid, gid)
        home.chmod(0o700)
        _homes[uid] = home
        atexit.register(shutil.rmtree, home, True)
    return home


def agent_user(parent_env: Mapping[str, str]) -> AgentUser | None:
    """The user agents run as, from ``PASSK_AGENT_USER``; None: the same user as passk.

    Only root can start a process as another user, so a value that names
    another user while passk is not root is an error, and so is an unknown
    user or a user that is root itself.
    """
    user = _user(parent_env.get(AGENT_USER_ENV, "").strip(), AGENT_USER_ENV)
    if user is None:
        return None
    return replace(
        user, others=_others(parent_env, user.uid), on_purpose=shared_on_purpose(parent_env)
    )


def _others(env: Mapping[str, str], uid: int) -> tuple[Account, ...]:
    """Every other agent user ``env`` names (either side's), as (uid, gid); root and passk not."""
    found: dict[int, int] = {}
    for variable in (AGENT_USER_ENV, BASELINE_USER_ENV, CANDIDATE_USER_ENV):
        value = env.get(variable, "").strip()
        try:
            entry = pwd.getpwuid(int(value)) if value.isdigit() else pwd.getpwnam(value)
        except (KeyError, ValueError, OverflowError):
            continue  # unset; a wrong name is refused where it is used
        if entry.pw_uid not in (0, uid, os.geteuid()):
            found[entry.pw_uid] = entry.pw_gid
    return tuple(sorted(found.items()))


def _user(value: str, where: str) -> AgentUser | None:
    """The user ``value`` names (the variable ``where``), checked; None: passk's own."""
    if not value:
        return None
    try:
        entry = pwd.getpwuid(int(value)) if value.isdigit() else pwd.getpwnam(value)
    except (KeyError, ValueError, OverflowError):
        raise UsageError(
            f"no user {value!r} on this machine",
            where=where,
            hint="name an existing unprivileged user such as nobody, or unset it",
        ) from None
    if entry.pw_uid == os.geteuid():
        return None
    if entry.pw_uid == 0:
        raise UsageError(
            f"{value!r} is root: agents would reach passk's token",
            where=where,
            hint="name an unprivileged user such as nobody",
        )
    if os.geteuid() != 0:
        raise UsageError(
            f"passk runs as uid {os.geteuid()}, so it cannot start agents as {value!r}",
            where=where,
            hint="unset it (agents then run as passk's own user), or run passk as root",
        )
    return AgentUser(
        entry.pw_name, entry.pw_uid, entry.pw_gid, _private_home(entry.pw_uid, entry.pw_gid)
    )


def baseline_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` as the baseline side sees it: its agent user is ``PASSK_BASELINE_USER``.

    Everything that picks the user from an environment (:func:`agent_user`:
    setup, the agent built, the export handed over) then picks the
    baseline's.  The candidate's user is kept as ``PASSK_CANDIDATE_USER``:
    the baseline's agents must be kept from its places.  Without
    ``PASSK_BASELINE_USER`` the agent user stays.
    """
    own = env.get(BASELINE_USER_ENV, "").strip()
    if not own:
        return dict(env)
    _user(own, BASELINE_USER_ENV)  # an error names the variable that is wrong
    candidate = env.get(CANDIDATE_USER_ENV) or env.get(AGENT_USER_ENV, "")
    return {**env, AGENT_USER_ENV: own, CANDIDATE_USER_ENV: candidate}


def side_users(env: Mapping[str, str]) -> tuple[AgentUser | None, AgentUser | None]:
    """``(candidate, baseline)``: the user each side's agent runs as (None: as passk)."""
    return agent_user(env), agent_user(baseline_env(env))


def shared_places(user: AgentUser | None, env: Mapping[str, str]) -> dict[str, str | None]:
    """The variables of ``env`` that name a place another agent user could change, and what
    ``user``'s processes get instead (None: nothing).  Empty without an agent user."""
    if user is None:
        return {}
    return own_env(env, user.others, user.home, user.on_purpose)[1]


def identity_env(user: AgentUser | None) -> dict[str, str]:
    """``HOME``, ``TMPDIR``, ``USER`` and ``LOGNAME`` for an agent run as ``user``."""
    if user is None:
        return {}
    home = str(user.home)
    return {"HOME": home, "TMPDIR": home, "USER": user.name, "LOGNAME": user.name}


def spawn_as_agent(
    command: Sequence[str],
    user: AgentUser | None,
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int = subprocess.PIPE,
    bufsize: int = -1,
) -> subprocess.Popen[bytes]:
    """Start ``command`` as agents start: the one way passk runs the code under test.

    - as ``user`` when there is one: its uid and gid and *no* supplementary
      group (``extra_groups=[]``; without it the child keeps root's groups,
      ``docker`` among them on a runner); None runs it as passk;
    - in a session of its own, so one ``killpg`` stops everything it started;
    - through the reaper (:data:`~passk_action.agents.reaper.REAPER`), so
      what it leaves running, even outside its session, dies with it;
    - with ``env`` less every place another agent user could change
      (``places.own_env``), judged now, as it starts.

    stdout and stderr are pipes.  Raises OSError when it cannot start.
    """
    uid, gid = (None, None) if user is None else (user.uid, user.gid)
    groups: list[int] | None = None if user is None else []
    if user is not None:
        env, _ = own_env(env, user.others, user.home, user.on_purpose)
    return REAPER.spawn(
        lambda: subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            bufsize=bufsize,
            user=uid,
            group=gid,
            extra_groups=groups,
        )
    )
