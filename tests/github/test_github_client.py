"""passk's GitHub client and publishing helpers, against the local fake GitHub.

No test sleeps: the client gets a fake clock whose ``sleep`` records the wait
and advances time, so retry timing is asserted exactly.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from passk_action import __version__
from passk_action.errors import ConfigError, GitHubError
from passk_action.github import (
    MARKER,
    Annotation,
    Check,
    GitHubClient,
    find_sticky_comment,
    publish_check,
    start_check,
    upsert_sticky_comment,
)
from passk_action.github.client import Retries
from support.fakegithub import NOT_ACCESSIBLE, FakeFile, FakeGitHub, FakePull

TOKEN = "ghs_secretTokenValue42abcdef"
REPO = "octo-org/refund-agent"
SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


class FakeClock:
    """``time.time`` and ``time.sleep`` for the client: sleeping only moves the clock."""

    def __init__(self, start: float = 1_767_600_000.0) -> None:
        self.now = start
        self.waits: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make_client(fake: FakeGitHub, clock: FakeClock, **retries: Any) -> GitHubClient:
    return GitHubClient(
        api_url=fake.url,
        token=TOKEN,
        repository=REPO,
        sleep=clock.sleep,
        clock=clock.time,
        retries=Retries(**retries),
    )


@pytest.fixture
def client(fake: FakeGitHub, clock: FakeClock) -> GitHubClient:
    return make_client(fake, clock)


# -- each method ------------------------------------------------------------------------


def test_comment_lifecycle(fake: FakeGitHub, client: GitHubClient) -> None:
    created = client.create_issue_comment(2, "first")
    assert fake.comment_bodies(2) == ["first"]
    updated = client.update_issue_comment(created["id"], "second")
    assert updated["id"] == created["id"]
    assert [c["body"] for c in client.list_issue_comments(2)] == ["second"]
    client.delete_issue_comment(created["id"])
    assert client.list_issue_comments(2) == []
    assert fake.violations == []
    headers = fake.requests[0].headers
    assert headers["User-Agent"] == f"passk-action/{__version__}"
    assert headers["Authorization"] == f"Bearer {TOKEN}"


def test_list_comments_follows_three_pages(fake: FakeGitHub, client: GitHubClient) -> None:
    for i in range(250):
        fake.add_comment(5, f"c{i}")
    comments = client.list_issue_comments(5)
    assert [c["body"] for c in comments] == [f"c{i}" for i in range(250)]
    pages = [r.query for r in fake.requests]
    assert pages == [
        {"per_page": "100"},
        {"per_page": "100", "page": "2"},
        {"per_page": "100", "page": "3"},
    ]
    assert fake.violations == []


def test_check_run_is_completed_and_truncated(fake: FakeGitHub, client: GitHubClient) -> None:
    run = client.create_check_run(
        name="passk",
        head_sha=SHA,
        conclusion="failure",
        title="Gate failed",
        summary="s" * 70_000 + "\n",
        text="short",
    )
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    sent = fake.requests[-1].body
    assert len(sent["output"]["summary"]) <= 65_535
    assert "truncated" in sent["output"]["summary"]
    assert sent["output"]["text"] == "short"
    assert fake.violations == []


def test_commit_status_description_is_shortened(fake: FakeGitHub, client: GitHubClient) -> None:
    status = client.create_commit_status(
        sha=SHA, state="success", context="passk", description="d" * 300
    )
    assert status["state"] == "success"
    assert len(status["description"]) == 140 and status["description"].endswith("…")
    assert fake.statuses[SHA][0]["context"] == "passk"
    assert fake.violations == []


def test_pull_and_its_files(fake: FakeGitHub, client: GitHubClient) -> None:
    files = tuple(FakeFile(f"rows/{i}.yml") for i in range(130))
    fake.pull = FakePull(
        number=12,
        head_sha=SHA,
        base_ref="release",
        labels=("passk",),
        head_repo_full_name="mallory/refund-agent",
        files=files,
    )
    pull = client.get_pull(12)
    assert (pull["number"], pull["head"]["sha"], pull["base"]["ref"]) == (12, SHA, "release")
    assert pull["head"]["repo"]["full_name"] != pull["base"]["repo"]["full_name"]
    assert [f["filename"] for f in client.list_pull_files(12)] == [f.filename for f in files]
    assert fake.violations == []


def test_label_events_and_a_users_permission(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.roles["maya"] = "maintain"
    for i in range(130):  # two pages
        fake.label_event(12, f"l{i}", "maya")
    events = client.list_issue_events(12)
    assert [e["label"]["name"] for e in events] == [f"l{i}" for i in range(130)]
    answer = client.collaborator_permission("maya")
    assert (answer["permission"], answer["role_name"]) == ("write", "maintain")
    assert client.collaborator_permission("a/b?c")["permission"] == "read"  # quoted, one segment
    assert fake.requests[-1].path.endswith("/collaborators/a%2Fb%3Fc/permission")
    assert fake.violations == []


def test_missing_pull_is_a_clear_error(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as info:
        client.get_pull(99)
    assert info.value.status == 404
    assert str(info.value).startswith(f"GitHub API GET /repos/{REPO}/pulls/99: HTTP 404")


# -- retries -------------------------------------------------------------------------------


def test_502_then_success(fake: FakeGitHub, client: GitHubClient, clock: FakeClock) -> None:
    fake.fail_next("issues/create-comment", 502, times=2)
    assert client.create_issue_comment(2, "hi")["body"] == "hi"
    assert clock.waits == [1.0, 2.0]
    assert fake.comment_bodies(2) == ["hi"]


def test_secondary_limit_honours_retry_after(
    fake: FakeGitHub, client: GitHubClient, clock: FakeClock
) -> None:
    fake.fail_secondary_rate_limit("issues/create-comment", retry_after=7)
    client.create_issue_comment(2, "hi")
    assert clock.waits == [7.0]


def test_secondary_limit_without_retry_after_waits_a_minute(
    fake: FakeGitHub, client: GitHubClient, clock: FakeClock
) -> None:
    fake.fail_secondary_rate_limit("issues/list-comments", retry_after=None)
    client.list_issue_comments(2)
    assert clock.waits == [60.0]


def test_primary_limit_waits_until_reset(
    fake: FakeGitHub, client: GitHubClient, clock: FakeClock
) -> None:
    reset = int(clock.now) + 30
    fake.fail_primary_rate_limit("pulls/get", reset_epoch=reset)
    client.get_pull(2)
    (wait,) = clock.waits
    assert reset - 1_767_600_000 <= wait <= reset - 1_767_600_000 + 1
    assert clock.now >= reset


def test_total_wait_never_exceeds_the_bound(fake: FakeGitHub, clock: FakeClock) -> None:
    client = make_client(fake, clock, max_retry_wait_s=5.0)
    fake.fail_next("pulls/get", 503, times=10)
    with pytest.raises(GitHubError, match="retry budget") as info:
        client.get_pull(2)
    assert clock.waits == [1.0, 2.0]
    assert sum(clock.waits) <= 5.0
    assert info.value.status == 503
    assert len(fake.requests) == 3


def test_retry_after_beyond_the_bound_gives_up_without_sleeping(
    fake: FakeGitHub, client: GitHubClient, clock: FakeClock
) -> None:
    fake.fail_secondary_rate_limit("issues/create-comment", retry_after=600)
    with pytest.raises(GitHubError, match="600 s more wait, past the 120 s retry budget"):
        client.create_issue_comment(2, "hi")
    assert clock.waits == []
    assert fake.comment_bodies(2) == []


def test_attempts_are_bounded(fake: FakeGitHub, clock: FakeClock) -> None:
    client = make_client(fake, clock, max_retry_wait_s=1000.0, max_attempts=3)
    fake.fail_next("pulls/get", 500, times=5)
    with pytest.raises(GitHubError, match="gave up after 3 attempts: HTTP 500") as info:
        client.get_pull(2)
    assert len(fake.requests) == 3
    assert "server errors" in str(info.value) and "rate" not in str(info.value).lower()


@pytest.mark.parametrize("status", [403, 404, 422])
def test_client_errors_are_not_retried(
    fake: FakeGitHub, client: GitHubClient, clock: FakeClock, status: int
) -> None:
    body = {
        "message": "Validation Failed",
        "documentation_url": "https://docs.github.com",
        "errors": [{"code": "custom", "message": "body is too long (maximum is 65536 characters)"}],
    }
    fake.fail_next("issues/create-comment", status, body=body)
    with pytest.raises(GitHubError) as info:
        client.create_issue_comment(2, "hi")
    assert info.value.status == status
    assert clock.waits == []
    assert len(fake.requests) == 1
    assert "body is too long" in str(info.value)
    assert info.value.where == f"GitHub API POST /repos/{REPO}/issues/2/comments"


def test_connection_errors_are_retried_then_reported(clock: FakeClock) -> None:
    # A port held, bound and never listening, so the kernel refuses every connection to
    # it (a port let go again could be taken by a test running beside this one).
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        client = GitHubClient(
            api_url=f"http://127.0.0.1:{port}",
            token=TOKEN,
            repository=REPO,
            sleep=clock.sleep,
            clock=clock.time,
            retries=Retries(timeout_s=2.0),
        )
        with pytest.raises(
            GitHubError, match="gave up after 5 attempts: connection failed"
        ) as info:
            client.get_pull(2)
    assert clock.waits == [1.0, 2.0, 4.0, 8.0]
    # A refused connection is the network or api-url, never rate limiting.
    assert "rate" not in str(info.value).lower()
    assert "could not be reached: check api-url" in str(info.value)


def test_non_json_answer_is_an_error(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.fail_next("pulls/get", 200, body="<html>Sign in to GitHub</html>")
    with pytest.raises(GitHubError, match="not JSON") as info:
        client.get_pull(2)
    assert "api-url" in str(info.value)


def test_token_never_appears_in_errors(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.fail_next("pulls/get", 401, body={"message": f"Bad credentials {TOKEN}"})
    with pytest.raises(GitHubError) as info:
        client.get_pull(2)
    assert TOKEN not in str(info.value)
    assert "Bad credentials" in str(info.value)
    assert TOKEN not in repr(client)
    assert "\n" not in str(info.value)


def test_bad_construction_is_a_clear_error() -> None:
    with pytest.raises(GitHubError, match="owner/name"):
        GitHubClient(api_url="https://api.github.com", token=TOKEN, repository="refund-agent")
    with pytest.raises(GitHubError, match="no GitHub token"):
        GitHubClient(api_url="https://api.github.com", token=" ", repository=REPO)


# -- sticky comment ---------------------------------------------------------------------------


def test_sticky_comment_created_then_updated(fake: FakeGitHub, client: GitHubClient) -> None:
    first = upsert_sticky_comment(client, 2, "report v1", "update")
    assert first.action == "created" and first.error is None
    second = upsert_sticky_comment(client, 2, "report v2", "update")
    assert second.action == "updated"
    assert second.comment_id == first.comment_id
    assert fake.comment_bodies(2) == [f"{MARKER}\nreport v2"]
    assert second.url is not None and second.url.endswith(f"#issuecomment-{first.comment_id}")
    assert fake.violations == []


def test_sticky_comment_found_on_a_later_page(fake: FakeGitHub, client: GitHubClient) -> None:
    for i in range(120):
        fake.add_comment(2, f"chatter {i}")
    ours = fake.add_comment(2, f"{MARKER}\nold", login="github-actions[bot]")
    for i in range(90):
        fake.add_comment(2, f"more chatter {i}")
    outcome = upsert_sticky_comment(client, 2, "new report", "update")
    assert (outcome.action, outcome.comment_id) == ("updated", ours["id"])
    assert len(fake.comment_bodies(2)) == 211


def test_sticky_update_picks_the_newest_of_several(fake: FakeGitHub, client: GitHubClient) -> None:
    older = fake.add_comment(2, f"{MARKER} a")
    newer = fake.add_comment(2, f"{MARKER} b")
    outcome = upsert_sticky_comment(client, 2, "c", "update")
    assert outcome.comment_id == newer["id"]
    assert fake.comment_bodies(2) == [f"{MARKER} a", f"{MARKER}\nc"]
    assert find_sticky_comment(client, 2)["id"] == newer["id"]  # type: ignore[index]
    assert older["id"] != newer["id"]


def test_sticky_new_deletes_every_old_one(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.add_comment(2, f"{MARKER} a")
    fake.add_comment(2, "a human comment")
    fake.add_comment(2, f"{MARKER} b")
    outcome = upsert_sticky_comment(client, 2, "fresh", "new")
    assert outcome.action == "created"
    assert fake.comment_bodies(2) == ["a human comment", f"{MARKER}\nfresh"]


def test_sticky_off_does_nothing(fake: FakeGitHub, client: GitHubClient) -> None:
    assert upsert_sticky_comment(client, 2, "x", "off").action == "skipped"
    assert fake.requests == []


def test_sticky_unknown_mode_is_a_config_error(client: GitHubClient) -> None:
    with pytest.raises(ConfigError, match="comment-mode"):
        upsert_sticky_comment(client, 2, "x", "replace")


def test_find_sticky_comment_can_require_an_author(fake: FakeGitHub, client: GitHubClient) -> None:
    ours = fake.add_comment(2, f"{MARKER} real", login="github-actions[bot]")
    fake.add_comment(2, f"{MARKER} forged", login="mallory")
    assert find_sticky_comment(client, 2)["body"].endswith("forged")  # type: ignore[index]
    found = find_sticky_comment(client, 2, author="github-actions[bot]")
    assert found is not None and found["id"] == ours["id"]
    assert find_sticky_comment(client, 3) is None


def test_fork_token_comment_fails_without_raising(clock: FakeClock) -> None:
    with FakeGitHub(token=TOKEN, repository=REPO, read_only=True) as fake:
        client = make_client(fake, clock)
        outcome = upsert_sticky_comment(client, 2, "report", "update")
        assert outcome.action == "failed" and outcome.status == 403
        assert outcome.error is not None and NOT_ACCESSIBLE in outcome.error
        assert "pull-requests: write" in outcome.error
        assert fake.violations == []


# -- check --------------------------------------------------------------------------------------


def test_publish_check_creates_a_check_run(fake: FakeGitHub, client: GitHubClient) -> None:
    outcome = publish_check(
        client,
        Check(
            name="passk", head_sha=SHA, passed=True, title="Gate passed", summary="all rows stable"
        ),
    )
    assert outcome.used == "check_run" and outcome.id == fake.check_runs[0]["id"]
    assert fake.check_runs[0]["conclusion"] == "success"
    assert fake.statuses == {}


def test_publish_check_falls_back_to_status_on_403(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.fail_not_accessible("checks/create")
    outcome = publish_check(
        client,
        Check(
            name="passk",
            head_sha=SHA,
            passed=False,
            title="Gate failed: 2 must-not-break rows lost " + "x" * 200,
            summary="…",
        ),
    )
    assert outcome.used == "commit_status"
    assert outcome.fallback_reason is not None and "checks: write" in outcome.fallback_reason
    (status,) = fake.statuses[SHA]
    assert (status["state"], status["context"]) == ("failure", "passk")
    assert status["description"].startswith("Gate failed") and len(status["description"]) == 140
    assert fake.violations == []


def test_publish_check_fails_softly_when_nothing_is_allowed(clock: FakeClock) -> None:
    with FakeGitHub(token=TOKEN, repository=REPO, read_only=True) as fake:
        outcome = publish_check(
            make_client(fake, clock),
            Check(name="passk", head_sha=SHA, passed=True, title="t", summary="s"),
        )
        assert outcome.used == "failed"
        assert outcome.error is not None and "statuses: write" in outcome.error


def test_publish_check_does_not_fall_back_on_server_errors(
    fake: FakeGitHub, clock: FakeClock
) -> None:
    client = make_client(fake, clock, max_attempts=1)
    fake.fail_next("checks/create", 500)
    outcome = publish_check(
        client, Check(name="passk", head_sha=SHA, passed=True, title="t", summary="s")
    )
    assert outcome.used == "failed" and fake.statuses == {}


def test_429_is_retried_after_the_asked_delay(
    fake: FakeGitHub, client: GitHubClient, clock: FakeClock
) -> None:
    fake.fail_next("pulls/list-files", 429, headers={"retry-after": "2"})
    assert client.list_pull_files(2) == []
    assert clock.waits == [2.0]


def test_next_link_to_another_host_is_not_followed(fake: FakeGitHub, client: GitHubClient) -> None:
    # Following it would hand our token to that host.
    link = (
        '<http://attacker.invalid/repos/octo-org/refund-agent/issues/2/comments?page=2>; rel="next"'
    )
    fake.fail_next("issues/list-comments", 200, headers={"Link": link}, body=[])
    with pytest.raises(GitHubError, match="another host"):
        client.list_issue_comments(2)
    assert len(fake.requests) == 1


def test_wrong_json_shape_is_an_error(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.fail_next("issues/list-comments", 200, body={"message": "not a list"})
    with pytest.raises(GitHubError, match="expected a JSON array"):
        client.list_issue_comments(2)
    fake.fail_next("pulls/get", 200, body=[1, 2])
    with pytest.raises(GitHubError, match="expected a JSON object"):
        client.get_pull(2)


def test_a_started_check_run_is_completed_with_annotations_in_batches_of_50(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    started = start_check(client, name="passk", head_sha=SHA)
    assert started.used == "check_run" and fake.check_runs[0]["status"] == "in_progress"
    notes = [
        Annotation(path="data.jsonl", line=i, title=f"passk: row r{i} broke", message="m")
        for i in range(1, 121)
    ]
    outcome = publish_check(
        client,
        Check(
            name="passk",
            head_sha=SHA,
            passed=False,
            title="120 must-not-break rows broke",
            summary="s",
            annotations=notes,
        ),
        check_run_id=started.id,
    )
    assert outcome.used == "check_run" and outcome.id == started.id
    assert len(fake.check_runs) == 1
    run_id = fake.check_runs[0]["id"]
    assert fake.check_run_history == [
        ("create", run_id, "in_progress"),
        ("update", run_id, "completed"),  # the conclusion and the first 50
        ("update", run_id, "completed"),  # 50 more
        ("update", run_id, "completed"),  # the last 20
    ]
    assert [a["start_line"] for a in fake.annotations[run_id]] == list(range(1, 121))
    assert fake.check_runs[0]["conclusion"] == "failure"
    assert fake.check_runs[0]["output"]["annotations_count"] == 120
    assert fake.violations == []


def test_a_check_run_that_vanished_is_created_anew(fake: FakeGitHub, client: GitHubClient) -> None:
    outcome = publish_check(
        client,
        Check(
            name="passk", head_sha=SHA, passed=True, title="passed: 0 gained, 0 lost", summary="s"
        ),
        check_run_id=987654,
    )
    assert outcome.used == "check_run"
    assert [(op, status) for op, _, status in fake.check_run_history] == [("create", "completed")]
    assert fake.violations == []


def test_the_client_refuses_more_than_50_annotations_in_one_request(
    client: GitHubClient,
) -> None:
    notes = [{"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "failure"}] * 51
    with pytest.raises(ValueError, match="at most 50"):
        client.create_check_run(
            name="passk", head_sha=SHA, conclusion=None, title="t", summary="s", annotations=notes
        )
