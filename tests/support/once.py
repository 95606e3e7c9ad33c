"""What many tests build alike, built once per test run, even across pytest-xdist's workers.

A module- or session-scoped fixture is built once per *process*: under pytest-xdist
each worker would build it again. :func:`once` builds it once per run, in a folder
the run's workers share (pytest-xdist's recipe: the parent of a worker's base
temporary folder, which is the run's own), behind a file lock, and hands every
caller the folder and the JSON the build returned. What it builds is read only
afterwards: a test that changes it copies it first (into its ``tmp_path``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def once(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """``build(folder)`` run once per test run; (the folder, what ``build`` returned).

    ``build`` returns JSON-able data (what the callers need beside the folder). A build
    that raised is run again by the next caller, which fails the same way, saying why.
    """
    base = factory.getbasetemp()
    # Under pytest-xdist, each worker's base folder is <run's folder>/popen-gwN. Alone,
    # the base folder is the run's own (its parent holds other runs': never share that).
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / f"once-{name}"
    with open(root / f"once-{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / f"once-{name}.json"
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)  # a build that raised midway
            folder.mkdir()
            done_text = json.dumps(build(folder))
            done.write_text(done_text, encoding="utf-8")
        return folder, json.loads(done.read_text(encoding="utf-8"))
