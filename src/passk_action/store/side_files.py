"""Where the files a run keeps beside its output go: the journal, pending Retry-Afters,
a baseline's recording, the comparison's journal.

Beside the output (``<out>.journal.jsonl``) when the output is a file, so an
interrupted run resumes from them.  An output written in place (``/dev/null``,
``/dev/stdout``, a FIFO: :func:`store.atomic.written_in_place`) has no folder
of its own, and ``/dev`` is no place for a journal (as root passk would create
``/dev/null.journal.jsonl`` there): its side files go to a folder private to
this process (mode 700, removed when it exits), so such a run cannot be
resumed (:func:`refuse_resume`).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

from ..errors import UsageError
from .atomic import written_in_place

_lock = threading.Lock()
_private: list[Path] = []


def beside(out: Path, suffix: str) -> Path:
    """The side file ``<out><suffix>``: beside ``out``, or in this process's private folder
    when ``out`` is written in place (one name per output, the same on every call)."""
    if not written_in_place(out):
        return out.with_name(out.name + suffix)
    digest = hashlib.sha256(os.fsencode(os.path.abspath(out))).hexdigest()[:16]
    return _private_folder() / f"{digest}{suffix}"


def _private_folder() -> Path:
    with _lock:
        if not _private:
            folder = Path(tempfile.mkdtemp(prefix="passk-side-files-"))
            atexit.register(shutil.rmtree, folder, True)
            _private.append(folder)
        return _private[0]


def refuse_resume(out: Path) -> None:
    """``--resume`` of an output written in place: nothing was kept to resume from."""
    if written_in_place(out):
        raise UsageError(
            f"{out} is written in place (a device, FIFO or descriptor), so a run written "
            "there keeps no journal beside it to resume from",
            where="--resume",
            hint="give --out a file (e.g. --out run.json) to resume an interrupted run",
        )
