"""The one sequence every mode publishes with: the record's parts, the comment, then the check.

Each refusal is one warning and nothing raises; each test of a refusal stands beside
its control, the same publication on a token GitHub lets write.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from passk_action.github import Check, Comment, GitHubClient, Publication, publish
from passk_action.github.publish import FORK_CHECK_NOTICE, FORK_COMMENT_NOTICE
from support.fakegithub import FakeGitHub

TOKEN = "ghs_secretTokenValue42abcdef"
REPO = "octo-org/refund-agent"
SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
MARKER = "<!-- passk:sticky-comment -->"
AUTHOR = "github-actions[bot]"


class Said:
    """What the sequence said: warnings and log lines, in order."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.lines: list[str] = []


def publication(*, fork: bool = False, check: bool = True) -> Publication:
    return Publication(
        comment=Comment(7, f"{MARKER}\nthe gate failed", "update", MARKER, AUTHOR),
        check=Check(name="passk", head_sha=SHA, passed=False, title="1 lost", summary="s")
        if check
        else None,
        fork=fork,
    )


def run(fake: FakeGitHub, post: Publication) -> tuple[str, str, Said]:
    said = Said()
    client = GitHubClient(api_url=fake.url, token=TOKEN, repository=REPO, sleep=lambda s: None)
    done = publish(client, post, warn=said.warnings.append, line=said.lines.append)
    return done.comment, done.check, said


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def test_control_the_comment_then_the_check_are_posted_and_said(fake: FakeGitHub) -> None:
    comment, check, said = run(fake, publication(fork=True))
    assert (comment, check) == ("created", "check_run")
    assert said.warnings == []
    assert said.lines[0].startswith("passk: comment created: ")
    assert said.lines[1].startswith("passk: check run 'passk' completed: ")
    assert fake.comment_bodies(7) == [f"{MARKER}\nthe gate failed"]
    assert fake.check_runs[0]["conclusion"] == "failure"
    assert fake.violations == []


def test_a_forks_read_only_token_gets_one_notice_each_and_nothing_raises() -> None:
    with FakeGitHub(token=TOKEN, repository=REPO, read_only=True) as fake:
        comment, check, said = run(fake, publication(fork=True))
        assert (comment, check) == ("failed", "failed")
        assert said.warnings == [FORK_COMMENT_NOTICE, FORK_CHECK_NOTICE]
        assert fake.comment_bodies(7) == [] and fake.check_runs == []


def test_a_refusal_outside_a_fork_names_github_s_answer() -> None:
    with FakeGitHub(token=TOKEN, repository=REPO, read_only=True) as fake:
        _, _, said = run(fake, publication(fork=False))
        assert said.warnings[0].startswith("no comment posted: ")
        assert "pull-requests: write" in said.warnings[0]
        assert said.warnings[1].startswith("no check run or commit status posted: ")


def test_a_comment_github_says_another_login_wrote_is_untrusted() -> None:
    app = {"login": "passk-ci[bot]", "id": 41898283, "type": "Bot"}
    with FakeGitHub(token=TOKEN, repository=REPO, actor=app) as fake:
        comment, check, said = run(fake, publication())
        assert (comment, check) == ("untrusted", "check_run")
        assert said.warnings == [
            "the comment was posted as passk-ci[bot], but passk trusts only records by "
            "github-actions[bot]: set the input `comment-author: passk-ci[bot]`"
        ]


def test_without_a_commit_only_the_comment_is_posted(fake: FakeGitHub) -> None:
    comment, check, _ = run(fake, publication(check=False))
    assert (comment, check) == ("created", "skipped")
    assert fake.check_runs == [] and fake.statuses == {}
