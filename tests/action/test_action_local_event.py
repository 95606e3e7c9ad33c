"""``passk action --event-from BASE..HEAD``: a local run of the action without hand-edited shas.

The event it writes is read back by the action exactly as the runner's: the
same pull request, the same verdict as a payload written by hand.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from passk_action.cli import main as cli_main
from passk_action.github.event import pull_request_from
from support.agent_project import REPO, TOKEN, make_repo, record_baseline, run_action, write_agent
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def test_the_written_event_gives_the_verdict_of_the_runners(
    tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    write_agent(repo)
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, answers={"r3": "approve"})  # a lost row that does not block
    head = commit(repo, "candidate: r3 changes")

    event = tmp_path / "local-event.json"
    monkeypatch.chdir(repo)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    argv = ["action", "--event-from", "main..HEAD", "--pr", "7", "--label", "x", "--out"]
    assert cli_main([*argv, str(event)]) == 0
    pull = pull_request_from(json.loads(event.read_text(encoding="utf-8")), str(event))
    assert (pull.number, pull.base_sha, pull.head_sha) == (7, base, head)
    assert (pull.base_ref, pull.head_ref, pull.labels, pull.fork) == (
        "main",
        "feature",
        ("x",),
        False,
    )

    for folder in ("by-hand", "written"):
        (tmp_path / folder).mkdir()
    by_hand = run_action(repo, tmp_path / "by-hand", fake, base, head)
    written = run_action(
        repo, tmp_path / "written", fake, base, head, {"GITHUB_EVENT_PATH": str(event)}
    )
    assert by_hand["code"] == written["code"] == 0, written["log"]
    assert by_hand["outputs"]["lost"] == written["outputs"]["lost"] == "1"
    assert written["outputs"]["reused"] == "true"  # the same pull request, head and verdict


@pytest.mark.parametrize("bad", ["main", "..HEAD", "main..", "main...HEAD"])
def test_a_range_that_is_not_base_dot_dot_head_is_refused(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["action", "--event-from", bad]) == 2
    assert "is not BASE..HEAD" in capsys.readouterr().err


def test_a_ref_that_names_no_commit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    write_agent(repo)
    commit(repo, "first")
    monkeypatch.chdir(repo)
    assert cli_main(["action", "--event-from", "main..no-such-branch"]) == 2
    assert "'no-such-branch' names no commit" in capsys.readouterr().err
