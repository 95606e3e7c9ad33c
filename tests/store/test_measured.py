"""The two-job mode's measured file: golden bytes, a round trip, and refused files.

The file is untrusted input to the gating job (it comes from the job that ran
the pull request's code), so every way it can be malformed is one clear
error naming the file, never a traceback.  Regenerate the valid golden with
``PASSK_UPDATE_GOLDEN=1`` after a deliberate format change.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from passk_action.core.model import AgentInfo, Version
from passk_action.errors import ArtifactError
from passk_action.store.measured import MeasuredRun, dump_measured, read_measured
from support.artifacts import normalized, small_run_v2
from support.paths import TESTS

GOLDEN = TESTS / "golden" / "artifacts"
UPDATE = os.environ.get("PASSK_UPDATE_GOLDEN") == "1"
HEAD, BASE = "a" * 40, "b" * 40


def measured() -> MeasuredRun:
    run = small_run_v2()
    run = replace(run, agent=AgentInfo(Version.CANDIDATE, "python3 agent.py", HEAD), ratchet=())
    return MeasuredRun(7, HEAD, BASE, run)


def test_the_valid_golden_is_exactly_what_dump_measured_writes() -> None:
    golden = GOLDEN / "measured_v1.json"
    text = dump_measured(measured())
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert golden.read_text(encoding="utf-8") == text
    assert text.splitlines()[0].startswith('{"schema_version": 1, "kind": "passk-measured"')


def test_the_valid_golden_reads_back(tmp_path: Path) -> None:
    got = read_measured(GOLDEN / "measured_v1.json")
    want = measured()
    assert got == replace(want, run=normalized(want.run))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "measured_invalid_v1.json",
            "pull_request.number: '7' is not of type 'integer'",
        ),
        (
            "measured_newer_v2.json",
            "schema_version 2 is not one this passk reads (1) "
            "(measure and gate with the same passk version)",
        ),
        ("valid_v2.json", "not a measured run"),
    ],
)
def test_refused_files_say_why_in_one_line(name: str, message: str) -> None:
    with pytest.raises(ArtifactError) as caught:
        read_measured(GOLDEN / name)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_sha_that_is_not_one_and_a_broken_run_are_refused(tmp_path: Path) -> None:
    doc = json.loads(dump_measured(measured()))
    doc["pull_request"]["head_sha"] = "HEAD"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"pull_request\.head_sha"):
        read_measured(path)
    doc = json.loads(dump_measured(measured()))
    doc["run"]["attempts"][0]["row"] = "no-such-row"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ArtifactError, match="run"):
        read_measured(path)
