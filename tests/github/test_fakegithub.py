"""The fake GitHub must reject what GitHub would reject, and answer only what GitHub could.

These tests talk raw HTTP (``requests``) to the fake, so they check the fake
itself, independently of passk's client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from support.fakegithub import (
    NOT_ACCESSIBLE,
    SPEC_FILE,
    FakeFile,
    FakeGitHub,
    FakePull,
    load_spec,
    pointer,
    schema_errors,
)
from support.paths import TESTS

TOKEN = "ghs_fakeTokenForTests0123456789"
GOOD = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
}
REPO = "/repos/octo-org/refund-agent"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN) as server:
        yield server


def call(fake: FakeGitHub, method: str, path: str, **kwargs: Any) -> requests.Response:
    headers = dict(GOOD)
    headers.update(kwargs.pop("headers", {}))
    return requests.request(method, fake.url + REPO + path, headers=headers, timeout=10, **kwargs)


def test_spec_is_the_vendored_copy() -> None:
    # The spec is vendored in tests/specs, so a fresh clone has it; a missing
    # spec must fail loudly rather than skip.
    assert SPEC_FILE.is_file(), f"missing {SPEC_FILE}: restore tests/specs from git"
    assert SPEC_FILE.parent == TESTS / "specs"
    # the subset's 7, the addition's one and the approval subset's two
    assert len(load_spec()["paths"]) == 10


def test_valid_requests_get_schema_valid_answers(fake: FakeGitHub) -> None:
    fake.pull = FakePull(labels=("passk",), files=(FakeFile("agent/prompt.md"),))
    created = call(fake, "POST", "/issues/2/comments", json={"body": "hello"})
    assert created.status_code == 201
    assert created.headers["Location"] == created.json()["url"]
    comment_id = created.json()["id"]
    assert call(fake, "PATCH", f"/issues/comments/{comment_id}", json={"body": "x"}).ok
    listed = call(fake, "GET", "/issues/2/comments", params={"per_page": 10, "page": 1})
    assert [c["body"] for c in listed.json()] == ["x"]
    run = call(
        fake,
        "POST",
        "/check-runs",
        json={
            "name": "passk",
            "head_sha": "a" * 40,
            "status": "completed",
            "conclusion": "success",
            "output": {"title": "t", "summary": "s"},
        },
    )
    assert run.status_code == 201
    assert run.json()["conclusion"] == "success"
    in_progress = call(
        fake,
        "POST",
        "/check-runs",
        json={"name": "p", "head_sha": "b" * 40, "status": "in_progress"},
    )
    assert in_progress.json()["conclusion"] is None
    updated = call(
        fake,
        "PATCH",
        f"/check-runs/{in_progress.json()['id']}",
        json={"conclusion": "failure", "output": {"summary": "done"}},
    )
    assert updated.json()["status"] == "completed"
    assert call(fake, "POST", "/statuses/" + "a" * 40, json={"state": "failure"}).status_code == 201
    assert call(fake, "GET", "/pulls/2").json()["labels"][0]["name"] == "passk"
    assert call(fake, "GET", "/pulls/2/files").json()[0]["filename"] == "agent/prompt.md"
    assert call(fake, "DELETE", f"/issues/comments/{comment_id}").status_code == 204
    assert fake.violations == []


def test_every_response_kind_matches_its_schema(fake: FakeGitHub) -> None:
    # Belt and braces: re-validate what went over the wire, not just what the fake checked.
    spec_paths = load_spec()["paths"]
    comment = call(fake, "POST", "/issues/7/comments", json={"body": "b"}).json()
    pull = call(fake, "GET", "/pulls/2").json()
    ref = pointer(
        "paths",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        "get",
        "responses",
        "200",
        "content",
        "application/json",
        "schema",
    )
    assert "/repos/{owner}/{repo}/pulls/{pull_number}" in spec_paths
    assert schema_errors(ref, pull) == []
    assert schema_errors("#/components/schemas/issue-comment", comment) == []
    assert schema_errors("#/components/schemas/issue-comment", {"id": "nope"}) != []


def test_fork_pull_request_is_recognisable(fake: FakeGitHub) -> None:
    fake.pull = FakePull(number=9, head_repo_full_name="mallory/refund-agent", head_sha="c" * 40)
    pull = call(fake, "GET", "/pulls/9").json()
    assert pull["head"]["repo"]["full_name"] == "mallory/refund-agent"
    assert pull["base"]["repo"]["full_name"] == "octo-org/refund-agent"
    assert pull["head"]["sha"] == "c" * 40
    assert call(fake, "GET", "/pulls/2").status_code == 404
    assert fake.violations == []


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, "request body is required"),
        ({"json": {"text": "hi"}}, "'body' is a required property"),
        ({"json": {"body": 42}}, "42 is not of type 'string'"),
        ({"data": b"body=hi", "headers": {"Content-Type": "application/json"}}, "not JSON"),
        ({"json": {"body": "x"}, "headers": {"Accept": "application/json"}}, "Accept header"),
        ({"json": {"body": "x"}, "headers": {"X-GitHub-Api-Version": "2026-03-10"}}, "Api-Version"),
    ],
)
def test_invalid_comment_requests_are_rejected_and_recorded(
    fake: FakeGitHub, kwargs: dict[str, Any], expected: str
) -> None:
    response = call(fake, "POST", "/issues/2/comments", **kwargs)
    assert response.status_code == 422
    assert response.json()["message"] == "Validation Failed"
    assert len(fake.violations) >= 1
    assert any(expected in v for v in fake.violations), fake.violations
    assert fake.comments == {}


def test_check_run_completed_without_conclusion_is_rejected(fake: FakeGitHub) -> None:
    body = {"name": "passk", "head_sha": "a" * 40, "status": "completed"}
    assert call(fake, "POST", "/check-runs", json=body).status_code == 422
    assert fake.violations and "checks/create" in fake.violations[0]
    too_long = {
        "name": "p",
        "head_sha": "a",
        "conclusion": "success",
        "status": "completed",
        "output": {"title": "t", "summary": "x" * 65536},
    }
    assert call(fake, "POST", "/check-runs", json=too_long).status_code == 422
    assert fake.check_runs == []


def test_status_with_unknown_state_is_rejected(fake: FakeGitHub) -> None:
    assert call(fake, "POST", "/statuses/abc", json={"state": "passed"}).status_code == 422
    assert "is not one of" in fake.violations[0]


def test_bad_parameters_are_rejected(fake: FakeGitHub) -> None:
    assert call(fake, "GET", "/issues/two/comments").status_code == 422
    assert call(fake, "GET", "/issues/2/comments", params={"per_page": 500}).status_code == 422
    assert call(fake, "GET", "/issues/2/comments", params={"page": "x"}).status_code == 422
    assert call(fake, "GET", "/issues/2/comments", params={"sort": "created"}).status_code == 422
    assert len(fake.violations) == 4
    assert "outside 1..100" in fake.violations[1]


def test_missing_or_wrong_credentials_are_refused(fake: FakeGitHub) -> None:
    no_auth = requests.get(
        fake.url + REPO + "/pulls/2",
        timeout=10,
        headers={k: v for k, v in GOOD.items() if k != "Authorization"},
    )
    assert no_auth.status_code == 401
    assert (
        call(fake, "GET", "/pulls/2", headers={"Authorization": "token other"}).status_code == 401
    )
    assert call(fake, "GET", "/pulls/2", headers={"Authorization": f"token {TOKEN}"}).ok
    assert len(fake.violations) == 2


def test_unknown_route_and_other_repository_are_violations(fake: FakeGitHub) -> None:
    assert call(fake, "GET", "/issues/2").status_code == 404
    other = requests.get(fake.url + "/repos/octo-org/other/pulls/2", headers=GOOD, timeout=10)
    assert other.status_code == 404
    assert len(fake.violations) == 2


def test_pagination_links_like_github(fake: FakeGitHub) -> None:
    for i in range(5):
        fake.add_comment(3, f"comment {i}")
    first = call(fake, "GET", "/issues/3/comments", params={"per_page": 2})
    assert [c["body"] for c in first.json()] == ["comment 0", "comment 1"]
    assert first.links["next"]["url"].endswith("per_page=2&page=2")
    assert first.links["last"]["url"].endswith("per_page=2&page=3")
    last = requests.get(first.links["last"]["url"], headers=GOOD, timeout=10)
    assert [c["body"] for c in last.json()] == ["comment 4"]
    assert "next" not in last.links
    assert last.links["prev"]["url"].endswith("page=2")
    single = call(fake, "GET", "/issues/3/comments")
    assert len(single.json()) == 5
    assert "Link" not in single.headers
    assert fake.violations == []


def test_comment_ids_and_timestamps_increase(fake: FakeGitHub) -> None:
    a = call(fake, "POST", "/issues/2/comments", json={"body": "a"}).json()
    b = call(fake, "POST", "/issues/2/comments", json={"body": "b"}).json()
    assert b["id"] > a["id"]
    assert b["created_at"] > a["created_at"]
    assert a["user"]["login"] == "github-actions[bot]"


def test_scripted_failures_then_recovery(fake: FakeGitHub) -> None:
    fake.fail_next("pulls/get", 502, times=2)
    fake.fail_next("pulls/get", 200, body="<html>not json</html>")
    assert call(fake, "GET", "/pulls/2").status_code == 502
    assert call(fake, "GET", "/pulls/2").status_code == 502
    html = call(fake, "GET", "/pulls/2")
    assert html.text == "<html>not json</html>"
    assert call(fake, "GET", "/pulls/2").status_code == 200
    fake.fail_secondary_rate_limit("issues/create-comment", retry_after=7)
    limited = call(fake, "POST", "/issues/2/comments", json={"body": "x"})
    assert limited.status_code == 403
    assert limited.headers["retry-after"] == "7"
    assert "secondary rate limit" in limited.json()["message"]
    fake.fail_primary_rate_limit("pulls/get", reset_epoch=1_800_000_000)
    primary = call(fake, "GET", "/pulls/2")
    assert primary.headers["x-ratelimit-remaining"] == "0"
    assert primary.headers["x-ratelimit-reset"] == "1800000000"
    with pytest.raises(ValueError, match="unknown operation"):
        fake.fail_next("issues/create", 500)
    assert fake.violations == []


def test_invalid_request_is_reported_even_when_a_failure_is_scripted(fake: FakeGitHub) -> None:
    fake.fail_next("issues/create-comment", 503)
    assert call(fake, "POST", "/issues/2/comments", json={}).status_code == 422
    assert fake.violations


def test_read_only_token_cannot_write() -> None:
    with FakeGitHub(token=TOKEN, read_only=True) as fake:
        refused = call(fake, "POST", "/issues/2/comments", json={"body": "x"})
        assert refused.status_code == 403
        assert refused.json()["message"] == NOT_ACCESSIBLE
        assert call(fake, "GET", "/pulls/2").ok
        assert fake.comments == {}
        assert fake.violations == []


def test_requests_are_recorded(fake: FakeGitHub) -> None:
    call(fake, "POST", "/issues/4/comments", json={"body": "hi"})
    call(fake, "GET", "/issues/4/comments", params={"per_page": "100"})
    (post, get) = fake.requests
    assert (post.method, post.path, post.body) == (
        "POST",
        REPO + "/issues/4/comments",
        {"body": "hi"},
    )
    assert get.query == {"per_page": "100"}
    assert get.operation_id == "issues/list-comments"
    assert json.loads(json.dumps(post.body)) == {"body": "hi"}


def test_label_events_and_permissions_answer_as_the_approval_subset_says(
    fake: FakeGitHub,
) -> None:
    """Who added a label (``issues/list-events``) and with what permission
    (``repos/get-collaborator-permission-level``): GitHub maps maintain to write and
    triage to read in ``permission``; ``role_name`` keeps the role."""
    fake.roles.update(maya="maintain", tom="triage", ada="admin")
    fake.label_event(2, "passk-allow-baseline-change", "tom")
    fake.label_event(2, "passk-allow-baseline-change", "tom", event="unlabeled")
    fake.label_event(2, "passk-allow-baseline-change", "maya")
    events = call(fake, "GET", "/issues/2/events", params={"per_page": 100}).json()
    assert [(e["event"], e["actor"]["login"]) for e in events] == [
        ("labeled", "tom"), ("unlabeled", "tom"), ("labeled", "maya")
    ]  # fmt: skip
    assert [e["created_at"] for e in events] == sorted(e["created_at"] for e in events)
    assert {e["label"]["name"] for e in events} == {"passk-allow-baseline-change"}
    answers = {
        login: call(fake, "GET", f"/collaborators/{login}/permission").json()
        for login in ("maya", "tom", "ada", "stranger")
    }
    assert {k: (v["permission"], v["role_name"]) for k, v in answers.items()} == {
        "maya": ("write", "maintain"),
        "tom": ("read", "triage"),
        "ada": ("admin", "admin"),
        "stranger": ("read", "read"),
    }
    events_ref = pointer(
        "paths",
        "/repos/{owner}/{repo}/issues/{issue_number}/events",
        "get",
        "responses",
        "200",
        "content",
        "application/json",
        "schema",
    )
    assert schema_errors(events_ref, events) == []
    ref = "#/components/schemas/repository-collaborator-permission"
    assert all(schema_errors(ref, answer) == [] for answer in answers.values())
    # An event without its actor is not something GitHub could send.
    assert schema_errors(events_ref, [{**events[0], "actor": None}]) != []
    assert fake.violations == []
