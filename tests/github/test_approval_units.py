"""The pieces of the allow label's approval: GitHub's payloads read, its event list read."""

from __future__ import annotations

import json

from passk_action.github.approval import latest_label_event
from passk_action.github.event import Trigger, trigger_from
from support.fakegithub import SPECS_DIR


def test_the_labeled_payload_github_sends_names_the_label_its_sender_and_the_head() -> None:
    payload = json.loads((SPECS_DIR / "events/pull_request.labeled.json").read_text("utf-8"))
    assert trigger_from(payload) == Trigger(action="labeled", label="bug", sender="Codertocat")
    assert payload["pull_request"]["head"]["sha"] == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
    opened = json.loads((SPECS_DIR / "events/pull_request.opened.json").read_text("utf-8"))
    assert trigger_from(opened) == Trigger(action="opened", sender="Codertocat")


def test_a_workflow_run_payload_names_who_triggered_the_run_and_when() -> None:
    run = {"workflow_run": {"actor": {"login": "maya"}, "created_at": "2026-01-05T10:00:00Z"}}
    assert trigger_from(run) == Trigger(run_actor="maya", run_created_at="2026-01-05T10:00:00Z")
    assert trigger_from({"workflow_run": {"actor": None}}) == Trigger()


def _event(kind: str, label: str, login: str, n: int) -> dict[str, object]:
    return {"id": n, "event": kind, "label": {"name": label}, "actor": {"login": login}}


def test_the_label_on_the_pull_request_is_the_one_its_last_labeled_event_put_there() -> None:
    allow = "passk-allow-baseline-change"
    events = [
        _event("labeled", allow, "maya", 1),
        _event("labeled", "bug", "eve", 2),
        _event("unlabeled", allow, "eve", 3),
        _event("labeled", allow, "eve", 4),
        {"id": 5, "event": "assigned", "actor": {"login": "maya"}},
    ]
    found = latest_label_event(events, allow)
    assert found is not None and found["id"] == 4  # eve's, not maya's earlier one
    assert latest_label_event(events[:3], allow) is None  # removed since
    assert latest_label_event(events, "other") is None
