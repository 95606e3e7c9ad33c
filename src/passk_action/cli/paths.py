"""No output overwrites an input or another output: checked before anything runs.

``passk compare --candidate-out .passk/baseline.json`` would record the
candidate over the committed baseline and its ratchet; ``passk import --out
x --dataset-out x`` would write one output over the other.  Every command
names what it reads and what it writes, and :func:`refuse_clobbering`
refuses any two that are one file: the same resolved path (``./a``,
``a``, a symlink to it) or, for files that exist, the same inode (a hard
link).  Devices and FIFOs (``/dev/null``, ``/dev/stdout``) are written in
place and lose nothing, so they may be named more than once.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ..errors import UsageError
from ..store.journal import journal_path
from ..store.recorder import retry_after_path

Named = Mapping[str, str | Path | None]
"""What a command reads or writes: a name for the message (an option, "the dataset") -> path."""


def _identity(path: str | Path) -> tuple[str, tuple[int, int] | None] | None:
    """The resolved path and (device, inode) of ``path``; None for a device or FIFO."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        found = None
    if found is not None and not stat.S_ISREG(found.st_mode) and not stat.S_ISDIR(found.st_mode):
        return None
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        real = os.path.abspath(path)
    return real, (None if found is None else (found.st_dev, found.st_ino))


def _same(a: tuple[str, tuple[int, int] | None], b: tuple[str, tuple[int, int] | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def refuse_clobbering(reads: Named, writes: Named) -> None:
    """Raise a UsageError when an output is an input, or two outputs are one file.

    ``reads`` and ``writes`` map a name the user recognizes (``--out``,
    ``the dataset (data.jsonl)``) to a path; None entries are skipped.  The
    first clash found is named, outputs in the order given.
    """
    seen: list[tuple[str, tuple[str, tuple[int, int] | None]]] = []
    read = [(name, _identity(p)) for name, p in reads.items() if p is not None]
    for name, path in writes.items():
        if path is None:
            continue
        identity = _identity(path)
        if identity is None:
            continue
        for other, known in read:
            if known is not None and _same(identity, known):
                raise UsageError(
                    f"{name} would overwrite {other}",
                    where=name,
                    hint=f"write {name} to another path; {other} is read by this command",
                )
        for other, known in seen:
            if _same(identity, known):
                raise UsageError(
                    f"{name} and {other} name the same file",
                    where=name,
                    hint="give each output its own path",
                )
        seen.append((name, identity))


def project_files(config: Path, dataset: Path) -> dict[str, Path]:
    """What every command that loads a config reads: the config and its dataset."""
    return {f"the config ({config})": config, f"the dataset ({dataset})": dataset}


def run_outputs(name: str, out: Path) -> dict[str, Path]:
    """A recorded run's artifact and the files beside it while it runs (journal, Retry-Afters)."""
    return {
        name: out,
        f"{name}'s journal": journal_path(out),
        f"{name}'s pending Retry-Afters": retry_after_path(out),
    }
