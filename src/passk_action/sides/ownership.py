"""Handing a tree to the agent user, and taking it back: owners and modes, never via a link.

The exports agents run from (``exports.py``) are passk's: handed to the
agent user while it may write them, then locked (root's, read-only) when
the pull request's code must not.  Every change goes through a descriptor
opened without following symlinks, so a path swapped for a link meanwhile
never makes passk (root) change a file outside the tree.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..agents.identity import AgentUser


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
