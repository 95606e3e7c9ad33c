"""Reading a whole file with a bound: no input can make passk hold unbounded memory.

A dataset symlinked to ``/dev/zero``, an "artifact" that is a FIFO fed
forever, a 40 GB file named by mistake: ``Path.read_bytes()`` reads until
the end, which for a device never comes.  Every whole-file read of passk
goes through :func:`read_bounded`, which refuses a file past
:data:`MAX_FILE_BYTES` with :class:`FileTooLarge`, an ``OSError`` whose
``strerror`` the readers already put in their one-line message beside the
file's name.  A regular file is measured before it is read; anything else
(a device, a FIFO, ``/proc``) is read in chunks and stopped at
:data:`MAX_STREAM_BYTES`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

MAX_FILE_BYTES = 1 << 30
"""1 GiB: a run of a million attempts is a few hundred MB; a file past this is not an input."""
MAX_STREAM_BYTES = 64 << 20
"""64 MiB from anything but a regular file (a pipe, a device): it is read before it is
measured, so an endless one costs this much memory and time before it is refused."""
_CHUNK = 1 << 20


class FileTooLarge(OSError):
    """The file holds more than the bound (or never ends)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            errno.EFBIG,
            f"larger than {limit / (1 << 20):,.0f} MiB, the most passk reads from one file "
            "(a device or a stream that never ends?)",
        )


def read_bounded(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of ``path``, or FileTooLarge past ``limit`` (default MAX_FILE_BYTES)."""
    limit = MAX_FILE_BYTES if limit is None else limit
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISREG(info.st_mode):
            if info.st_size > limit:
                raise FileTooLarge(limit)
            # Not read(limit + 1): that allocates the whole bound up front.
            data = handle.read(info.st_size + 1)
            if len(data) > info.st_size:  # it grows as we read: read on, within the bound
                data += _read_on(handle, limit - len(data))
            if len(data) > limit:
                raise FileTooLarge(limit)
            return data
        limit = min(limit, MAX_STREAM_BYTES)
        data = _read_on(handle, limit)
        if len(data) > limit:
            raise FileTooLarge(limit)
        return data


def _read_on(handle: BinaryIO, limit: int) -> bytes:
    """What ``handle`` holds from here, in chunks, stopping one byte past ``limit``."""
    buffer = bytearray()
    while len(buffer) <= limit and (chunk := handle.read(min(_CHUNK, limit + 1 - len(buffer)))):
        buffer += chunk
    return bytes(buffer)


def check_size(path: Path | str, limit: int | None = None) -> bool:
    """Whether ``path`` is a regular file within ``limit`` (a streaming reader's precondition).

    A reader that takes a file line by line calls this first and leaves any
    other file (a device, a FIFO, one too large) to :func:`read_bounded`,
    which refuses it by name.
    """
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= (
        MAX_FILE_BYTES if limit is None else limit
    )
