"""The baseline agent's ``setup``, run in the base commit's export before any of the PR's code.

The baseline side runs from an export of the base commit (``GitRepo.export``)
that belongs to passk and is read-only, so the pull request's code (the
candidate agent and its setup, running as the same agent user) cannot change
what the baseline runs.  But a real setup writes into the agent's directory:
``npm ci`` (``node_modules``), ``uv sync`` or ``python -m venv .venv`` and
``pip install``, ``poetry install`` with an in-project venv.  Run as the
agent user in a read-only export, every one of them fails with EACCES.

Two ways were weighed:

- **Lazy, in a private writable copy**: keep setup on the baseline's first
  request, in a copy the agent user may write.  By then the candidate has
  usually run, and a persistent candidate process (a worker, anything it left
  behind) runs as the *same* user as the setup: no directory can be writable
  by the setup and not by it.  Whatever the setup installs could be rewritten
  between its writing and its locking; unsound.
- **First, then locked** (what this module does): the export is handed to
  the setup's user only while the baseline's setup runs, and that happens
  before the candidate agent is built at all, so before any of the pull
  request's code (its setup included) starts.  Then, as root, everything in
  the export is given back to root and loses its write bits; its owner could
  otherwise ``chmod`` them back, and root's files are out of the agent user's
  reach for good.  Set-user-ID and set-group-ID bits go too: a file the agent
  user made must never become a root-owned set-user-ID program.

Setups also write outside their folder: ``pip install`` as the agent user
falls back to a user install under ``HOME``, and that user's private home
is the candidate's too (same user), so the candidate's own setup would
install its versions over the baseline's, or its agent rewrite them.  So
with an agent user, a baseline agent that has a setup gets a ``HOME`` of its
own beside the export (``agent.env``; setup and attempts both see it),
handed over and locked with the export.  Its attempts keep the shared,
writable ``TMPDIR``; its ``HOME`` is read-only to them, as its folder is.

The cost: the baseline's setup runs whenever the candidate runs, even when
the baseline agent is then never asked (no lost row, no new row to top up),
because that cannot be known before the candidate has answered.  It does not
run when nothing runs: a re-run that replays the recorded verdicts builds
neither agent, so it makes no agent call and runs no setup at all.

When passk is not root (the runner action, a laptop), setup, baseline and
candidate all run as one user: the export is made writable for the setup and
read-only after it, so an agent writing there by mistake is stopped, but any
process of that user could change the modes back.  There is no boundary to
keep there, and this module does not pretend to keep one.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ..agents.identity import AgentUser, agent_user
from ..errors import GitError
from ..inputs.config import AgentConfig
from .gitrepo import GitRepo

RunSetup = Callable[[AgentConfig], None]
"""Runs an agent's setup commands and logs them (the action's folded group, the CLI's lines)."""


@dataclass
class BaseCheckout:
    """The base commit's export (``tree``) and the baseline agent moved into it.

    :meth:`prepare` runs the agent's setup at most once; call it before the
    candidate agent is built and before the baseline agent is.
    """

    tree: Path
    agent: AgentConfig
    home: Path | None = None
    """The baseline's own ``HOME`` (in ``agent.env``), handed over and locked with ``tree``."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _done: bool = field(default=False, repr=False)
    _error: BaseException | None = field(default=None, repr=False)

    def prepare(self, run_setup: RunSetup, env: Mapping[str, str]) -> None:
        """Run the baseline's setup in the export, writable only meanwhile; once.

        ``env`` names the agent user (``PASSK_AGENT_USER``).  A failure is
        raised again by every later call, so whichever side asks next stops
        with the same error.
        """
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._done:
                return
            self._done = True
            if not self.agent.setup:
                return
            user = agent_user(env)
            try:
                with contextlib.ExitStack() as stack:
                    for folder in (self.tree, self.home):
                        if folder is not None:
                            stack.enter_context(writable(folder, user))
                    run_setup(self.agent)
            except BaseException as exc:
                self._error = exc
                raise


@contextlib.contextmanager
def writable(tree: Path, user: AgentUser | None) -> Iterator[None]:
    """``tree`` writable by ``user`` (None: passk's own user) inside; locked again after.

    Locked in ``finally``: a setup that fails or is interrupted leaves nothing
    writable behind either.
    """
    hand_over(tree, user)
    try:
        yield
    finally:
        lock(tree, as_root=user is not None)


def hand_over(tree: Path, user: AgentUser | None) -> None:
    """Every file and folder of ``tree`` writable by its owner, owned by ``user`` if given."""
    for path in _entries(tree):
        _change(path, lambda mode: mode | stat.S_IWUSR, user)


def lock(tree: Path, *, as_root: bool) -> None:
    """Nothing in ``tree`` writable; with ``as_root``, everything owned by passk (root).

    What the owner may read and run, everyone may: the agent user is "others"
    for root's files, and must still read and run what its setup made.
    """
    passk = _Owner(os.geteuid(), os.getegid()) if as_root else None
    for path in _entries(tree):
        _change(path, _read_only, passk)


def _read_only(mode: int) -> int:
    owner = mode & 0o500
    return owner | owner >> 3 | owner >> 6


@dataclass(frozen=True)
class _Owner:
    uid: int
    gid: int


def _entries(tree: Path) -> Iterator[Path]:
    """``tree`` and everything under it; symlinked folders are listed, never entered."""
    yield tree
    for folder, dirs, files in os.walk(tree, followlinks=False):
        for name in (*dirs, *files):
            yield Path(folder, name)


def _change(path: Path, new_mode: Callable[[int], int], owner: AgentUser | _Owner | None) -> None:
    """Give ``path`` the mode ``new_mode(old)`` and, if given, ``owner``; never via a symlink.

    Files and folders are changed through a descriptor opened with
    ``O_NOFOLLOW``, so a path swapped for a symlink meanwhile can never make
    passk (root) change a file outside the export.  A symlink or special file
    only changes owner (a symlink's mode is no permission).
    """
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        if owner is not None:
            os.chown(path, owner.uid, owner.gid, follow_symlinks=False)
        return
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        # Unreadable to us, so we are not root (root opens anything), and a path
        # change cannot reach beyond our own files: change it by name.
        if owner is None and not path.is_symlink():
            os.chmod(path, new_mode(stat.S_IMODE(mode)))
        return
    try:
        if owner is not None:
            os.fchown(fd, owner.uid, owner.gid)
        os.fchmod(fd, new_mode(stat.S_IMODE(os.fstat(fd).st_mode)))
    finally:
        os.close(fd)


def rebase_agent(agent: AgentConfig, repo: GitRepo, new_root: Path) -> AgentConfig:
    """The same agent with its working directory moved from ``repo`` into ``new_root``.

    The cwd is taken as a git path (symlinks in the checkout not followed).
    """
    try:
        rel = repo.relative(agent.cwd)
    except GitError:
        return agent  # a cwd outside the repository is not part of the commit
    return replace(agent, cwd=new_root.joinpath(*PurePosixPath(rel).parts))
