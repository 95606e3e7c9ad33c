"""The measuring job's file in the two-job mode: the candidate's run, and what it was for.

``mode: measure`` runs the pull request's agent in a job that holds no write
token and writes this file; the gating job (``mode: gate-measured``) reads it
as untrusted input (schema ``schemas/measured.schema.json``)::

    {"schema_version": 1, "kind": "passk-measured",
     "pull_request": {"number": 7, "head_sha": "…", "base_sha": "…"},
     "run": {…a run artifact: the candidate's main and confirmation attempts…}}

Everything in it is the pull request's word: the gating job checks the run
against the base commit's dataset and settings and the pull request's number
against GitHub (``action/gate_measured.py``); this module only reads and
writes the format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.model import Run
from ..errors import ArtifactError
from .atomic import write_text_atomic
from .codec import dump_run
from .document import run_from_json, validate_header
from .jsonfile import parse_json_file

MEASURED_KIND = "passk-measured"
MEASURED_VERSION = 1
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class MeasuredRun:
    """The candidate's run as the pull request's own job recorded it, and for which PR."""

    pull_request: int
    head_sha: str
    base_sha: str
    run: Run


def dump_measured(measured: MeasuredRun) -> str:
    """The file's text: the header on the first line, then the run in its own layout."""
    header = {
        "schema_version": MEASURED_VERSION,
        "kind": MEASURED_KIND,
        "pull_request": {
            "number": measured.pull_request,
            "head_sha": measured.head_sha,
            "base_sha": measured.base_sha,
        },
    }
    opening = json.dumps(header, ensure_ascii=False)[:-1]
    return f'{opening},\n"run": {dump_run(measured.run).rstrip()}\n}}\n'


def write_measured(measured: MeasuredRun, path: Path) -> None:
    write_text_atomic(path, dump_measured(measured))


def read_measured(path: Path) -> MeasuredRun:
    """Read and validate a measured file; every problem is one :class:`ArtifactError`."""
    where = str(path)
    doc: Any = parse_json_file(path)
    if not isinstance(doc, dict) or doc.get("kind") != MEASURED_KIND:
        raise ArtifactError(
            f'not a measured run (no "kind": {MEASURED_KIND!r})',
            where=where,
            hint="give the file `mode: measure` wrote (its output `measured-run`)",
        )
    version = doc.get("schema_version")
    if version != MEASURED_VERSION:
        raise ArtifactError(
            f"schema_version {version!r} is not one this passk reads ({MEASURED_VERSION})",
            where=where,
            hint="measure and gate with the same passk version",
        )
    # The run is validated by the run reader (its own schema, and fast on big runs).
    validate_header({**doc, "run": {}}, where, "measured.schema.json", big_lists=())
    pr = doc["pull_request"]
    for key in ("head_sha", "base_sha"):
        if not _SHA.fullmatch(pr[key]):
            raise ArtifactError(f"'pull_request.{key}' is not a commit sha", where=where)
    run = run_from_json(doc["run"], f"{where}: run")
    return MeasuredRun(pr["number"], pr["head_sha"], pr["base_sha"], run)
