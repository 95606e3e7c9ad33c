"""Run artifacts on disk: :func:`read_run` and :func:`write_run`, the store's public face.

A run artifact is one JSON document (schema ``schemas/run.schema.json``,
``schema_version`` first) written atomically, with one row and one attempt
per line so a committed baseline diffs readably in a pull request.  The
parts behind it, one module each:

- ``codec.py``: runs, rows, attempts and usage to and from JSON, and the layout;
- ``document.py``: the whole-document reader and validator;
- ``lines.py``: the fast reader of passk's own layout, line by line;
- ``jsonfile.py``: reading any JSON file whole, every failure one error;
- ``atomic.py``: atomic writes;
- ``journal.py``: the crash-safe journal of a run in progress.

The names other parts of passk use are re-exported here, so they need not
know which module holds them.
"""

from __future__ import annotations

from pathlib import Path

from ..core.model import Run
from ..core.shard import Shard
from .atomic import write_text_atomic
from .codec import (
    SCHEMA_VERSION,
    attempt_from_json,
    attempt_to_json,
    dump_document,
    dump_run,
    run_to_json,
)
from .document import run_from_json, shard_from_json
from .journal import Journal, journal_path, read_journal
from .jsonfile import parse_json_file
from .lines import gc_paused, stream_canonical, stream_run_document


def read_run(path: Path) -> Run:
    """Read and validate a run artifact.

    Streams a file in our own layout (see ``lines.stream_canonical``); any
    other layout, and every invalid file, goes through the whole-document
    path, so results and error messages are the same either way.
    """
    run = stream_canonical(path, stream_run_document)
    return run if run is not None else run_from_json(parse_json_file(path), str(path))


def write_run(run: Run, path: Path, shard: Shard | None = None) -> None:
    """Write ``run`` atomically in the artifact layout (``shard``: one slice of the dataset)."""
    write_text_atomic(path, dump_run(run, shard))


__all__ = [
    "SCHEMA_VERSION",
    "Journal",
    "attempt_from_json",
    "attempt_to_json",
    "dump_document",
    "dump_run",
    "gc_paused",
    "journal_path",
    "parse_json_file",
    "read_journal",
    "read_run",
    "run_from_json",
    "run_to_json",
    "shard_from_json",
    "write_run",
    "write_text_atomic",
]
