"""A commit's files written into a folder: never through a link, never outside it.

In the container action passk is root when it writes the exports agents run
from (``exports.py``), the candidate's from the pull request's own commit.
A tree git itself writes never lists a path twice, nor a path under a
symlink or a file.  A hand-made one can: ``git mktree`` and ``git
hash-object --literally`` write it, and a forge may accept the push.  Listed
as ``a`` (a symlink to any folder) and then ``a/x.pth``, it would have root
follow the link and write ``x.pth`` wherever ``a`` points: a ``.pth`` file
in the system's site-packages runs in every later Python, passk's included.

So such a tree is refused, naming the path (:func:`check_paths`), and the
writing itself cannot be led outside the folder whatever the check missed
(:func:`write_files`): every name is created relative to an open descriptor
of its folder (``openat``), folders are entered with ``O_NOFOLLOW |
O_DIRECTORY`` and files created with ``O_NOFOLLOW | O_EXCL``, so no link on
the way is followed and nothing is written twice.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from ..errors import MalformedTree

SYMLINK = "120000"
EXECUTABLE = "100755"
GITLINK = "160000"
"""A submodule's commit: listed, never written (its files are not in this repository)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_ANY_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class TreeFile:
    """One file of a commit: its git path (``/``-separated), its mode and its bytes."""

    path: str
    mode: str
    data: bytes


def check_paths(entries: Iterable[tuple[str, str]], commit: str) -> None:
    """Refuse a listing (``(mode, path)`` pairs) that git itself would never write.

    Raises :class:`MalformedTree` naming the first path that is listed twice,
    lies under a symlink, a file or a submodule of the same tree, is both a
    folder and something else, or has an empty, ``.`` or ``..`` part.
    """
    leaves: dict[str, str] = {}
    folders: set[str] = set()
    for mode, path in entries:
        parts = path.split("/")
        if any(part in ("", ".", "..") for part in parts):
            _refuse(commit, f"the path {path!r} has an empty, `.` or `..` part")
        if path in leaves:
            _refuse(commit, f"the path {path!r} is listed twice")
        if path in folders:
            _refuse(commit, f"the path {path!r} is both a folder and {_kind(mode)}")
        for depth in range(1, len(parts)):
            above = "/".join(parts[:depth])
            if above in leaves:
                _refuse(commit, f"the path {path!r} lies under {above!r}, {_kind(leaves[above])}")
            folders.add(above)
        leaves[path] = mode


def write_files(root: Path, files: Iterable[TreeFile], commit: str) -> None:
    """Write ``files`` (in ``ls-tree`` order) into the empty folder ``root``, never via a link.

    Raises :class:`MalformedTree` when a name on the way is not a folder of
    this tree (a link or a file) or a name is written twice: what
    :func:`check_paths` refuses, should a listing slip past it.
    """
    root_fd = os.open(root, _DIR_FLAGS)
    opened: list[tuple[str, int]] = []  # the folders of the last file, outermost first
    try:
        for file in files:
            *folders, name = file.path.split("/")
            kept = 0
            while kept < min(len(opened), len(folders)) and opened[kept][0] == folders[kept]:
                kept += 1
            for _, fd in reversed(opened[kept:]):
                os.close(fd)
            del opened[kept:]
            for folder in folders[kept:]:
                parent = opened[-1][1] if opened else root_fd
                opened.append((folder, _enter(parent, folder, file.path, commit)))
            _place(opened[-1][1] if opened else root_fd, name, file, commit)
    finally:
        for _, fd in opened:
            os.close(fd)
        os.close(root_fd)


def make_read_only(root: Path) -> None:
    """Files and folders read-only (an agent that writes its cwd gets EACCES, unless root).

    Changed through descriptors opened with ``O_NOFOLLOW``: a symlink of
    the tree is never followed to change what it points at.
    """
    for folder, dirs, names in os.walk(root, followlinks=False):
        for name in (*dirs, *names):
            _drop_write_bits(Path(folder, name))
    _drop_write_bits(root)


def _drop_write_bits(path: Path) -> None:
    try:
        fd = os.open(path, _ANY_FLAGS)
    except OSError:
        return  # a symlink (ELOOP): its own mode is no permission
    try:
        mode = os.fstat(fd).st_mode
        os.fchmod(fd, stat.S_IMODE(mode) & ~0o222)
    finally:
        os.close(fd)


def _enter(parent: int, name: str, path: str, commit: str) -> int:
    """The folder ``name`` in ``parent`` (made if new), opened; never a link or a file."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o755, dir_fd=parent)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError:  # ELOOP (a symlink) or ENOTDIR (a file)
        _refuse(commit, f"the path {path!r} lies under {name!r}, which is not a folder")


def _place(parent: int, name: str, file: TreeFile, commit: str) -> None:
    """Create ``name`` in ``parent`` anew: a symlink as it is, a file with its mode."""
    try:
        if file.mode == SYMLINK:
            os.symlink(os.fsdecode(file.data), name, dir_fd=parent)
            return
        fd = os.open(name, _NEW_FILE, 0o600, dir_fd=parent)
    except FileExistsError:
        _refuse(commit, f"the path {file.path!r} is listed twice")
    try:
        view = memoryview(file.data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o755 if file.mode == EXECUTABLE else 0o644)
    finally:
        os.close(fd)


def _kind(mode: str) -> str:
    if mode == SYMLINK:
        return "a symlink"
    if mode == GITLINK:
        return "a submodule"
    return "a file"


def _refuse(commit: str, what: str) -> NoReturn:
    raise MalformedTree(
        f"{what}: git never writes such a tree, so passk refuses to export it",
        where=f"commit {commit[:12]}",
        hint="`git fsck` names it; rewrite the commit with git itself (e.g. `git commit --amend`)",
    )
