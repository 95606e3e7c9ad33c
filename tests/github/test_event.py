"""The event a run was triggered by: one prologue for every mode that reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from passk_action.errors import UsageError
from passk_action.github.event import PWN_REQUEST, Event, pull_request_from, read_event

ALLOWED = ("pull_request",)


def _read(name: str, path: str | None) -> Event:
    return read_event(name, path, ALLOWED, "gate", "use `on: pull_request`")


def _payload(**head_repo: Any) -> dict[str, Any]:
    return {
        "number": 3,
        "pull_request": {
            "number": 3,
            "labels": [{"name": "passk-allow-baseline-change"}, {"oops": 1}],
            "base": {"sha": "a" * 40, "ref": "main", "repo": {"full_name": "o/r"}},
            "head": {"sha": "b" * 40, "ref": "f", "repo": head_repo or None},
        },
    }


def test_pull_request_fields_and_forks() -> None:
    same = pull_request_from(_payload(full_name="o/r", fork=True), "event.json")
    assert (same.number, same.labels, same.fork) == (3, ("passk-allow-baseline-change",), False)
    assert pull_request_from(_payload(full_name="mallory/r"), "e").fork
    assert pull_request_from(_payload(), "e").fork  # the fork was deleted
    bad = _payload(full_name="o/r")
    bad["pull_request"]["head"]["sha"] = "HEAD"
    with pytest.raises(UsageError, match=r"head\.sha"):
        pull_request_from(bad, "e")


def test_a_pwn_request_is_refused_before_the_payload_is_read(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as refused:
        _read("pull_request_target", str(tmp_path / "missing.json"))
    assert refused.value.message == PWN_REQUEST
    with pytest.raises(UsageError, match="nothing to gate on a 'push' event"):
        _read("push", None)


def test_the_payload_is_read_when_first_asked_and_errors_name_its_file(tmp_path: Path) -> None:
    missing = _read("pull_request", None)  # no error yet: the mode's own checks come first
    with pytest.raises(UsageError, match="GITHUB_EVENT_PATH is not set"):
        missing.pull_request()
    path = tmp_path / "event.json"
    path.write_text(json.dumps(_payload(full_name="o/r")), encoding="utf-8")
    event = _read("pull_request", str(path))
    assert event.where == str(path)
    assert event.pull_request().number == 3
    path.write_text("not json", encoding="utf-8")
    assert event.trigger().label is None  # read once: the file is not read again
