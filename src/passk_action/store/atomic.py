"""Atomic writes: a temporary file, fsync, rename, so a reader never sees half a file.

Every file passk writes goes through :func:`write_text_atomic`; a failure
(missing folder, full disk, read-only) is one ArtifactError with the fix.
"""

from __future__ import annotations

import errno
import os
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


def _write_text_atomic(path: Path, text: str) -> None:
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
