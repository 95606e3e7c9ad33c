"""Atomic writes: a temporary file, fsync, rename, so a reader never sees half a file.

Every file passk writes goes through :func:`write_text_atomic`; a failure
(missing folder, full disk, read-only) is one ArtifactError with the fix.
A target that is not a regular file (``/dev/null``, a FIFO), or a file
descriptor's name (``/dev/stdout``, even when it points at a file), is
written in place: renaming over it would replace a device or ``/dev``'s link
with a file, as root for everyone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ArtifactError


def _file_mode() -> int:
    """The mode a plain ``open()`` would give a new file (mkstemp uses 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Translate a failure to write ``path`` (missing folder, no space, read-only)."""
    try:
        yield
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        raise ArtifactError(
            f"cannot write: {exc.strerror or exc}",
            where=str(path),
            hint="free some space and try again" if full else "choose a path in a writable folder",
        ) from exc


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, fsync, rename: a reader never sees half a file."""
    with writing(path):
        _write_text_atomic(path, text)


def written_in_place(path: Path) -> bool:
    """Whether ``path`` is written as it is, never replaced: a device, FIFO or socket
    (followed through links), or a file descriptor's name (``/dev/stdout``,
    ``/dev/fd/1``, ``/proc/self/fd/1``: a link into ``/proc``), whatever it points at.

    Such a path has no folder of its own to keep files beside it (``side_files``).
    """
    try:
        absolute = os.path.abspath(path)
        if os.path.realpath(os.path.dirname(absolute)).startswith("/proc/"):
            return True
        with contextlib.suppress(OSError):
            if os.readlink(absolute).startswith("/proc/"):
                return True
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False  # nothing there yet (or no such name): a file is created
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_in_place(path: Path, text: str) -> None:
    """Write to a device, FIFO or descriptor as it is: no temporary file, no rename, never
    created; appended (a shell's ``> log`` through ``/dev/stdout`` keeps what came before)."""
    fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_APPEND)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)


def _write_text_atomic(path: Path, text: str) -> None:
    if written_in_place(path):
        _write_in_place(path, text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), _file_mode())
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
