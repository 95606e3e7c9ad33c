"""``passk action`` with ``mode: baseline``: record, carry the ratchet, commit or push a branch.

The checkout's ``origin`` is a local bare repository, so pushes are real
git pushes that the test reads back.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from passk_action.action import main as action_main
from passk_action.store.artifact import read_run, run_from_json
from support.pull_request_repo import (
    CONFIG,
    RIGHT,
    TOKEN,
    git,
    run_baseline,
    template,  # noqa: F401 - the shared repository fixture
    write_config,
    write_script,
)


def per_attempt(repo: Path) -> None:
    """The process protocol: these failures (an exit, stdout with no line end) are what one
    process per attempt does; a worker would wait for a line that never ends."""
    write_config(repo, {**CONFIG, "agent": {**CONFIG["agent"], "protocol": "process"}})


@pytest.fixture
def pushed(template: Path, tmp_path: Path) -> tuple[Path, Path]:  # noqa: F811
    """A clone of the template whose origin is a bare repository holding main."""
    remote = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    return repo, remote


def test_commit_mode_commits_as_passk_bot_and_pushes(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, remote = pushed
    old = read_run(repo / ".passk/baseline.json")
    # Production now flips on r3: it leaves nothing the ratchet had locked.
    write_script(repo, {**RIGHT, "r3": ["approve", "deny"]})
    git(repo, "commit", "-q", "-am", "agent: new prompt")
    before = git(repo, "rev-parse", "HEAD")
    code, stdout, outputs, summary = run_baseline(repo, tmp_path, "commit")
    assert code == 0, stdout
    head = git(remote, "rev-parse", "main")
    assert git(remote, "rev-parse", f"{head}^") == before
    assert git(remote, "log", "-1", "--format=%an <%ae>", head) == (
        "passk[bot] <passk[bot]@users.noreply.github.com>"
    )
    assert git(remote, "show", "--name-only", "--format=", head) == ".passk/baseline.json"
    committed = run_from_json(
        json.loads(git(remote, "show", f"{head}:.passk/baseline.json")), "remote"
    )
    assert committed.ratchet == old.ratchet == ("r1", "r2")
    assert committed.agent.commit == before
    assert git(repo, "rev-parse", "HEAD") == head  # the local branch followed
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert outputs == {
        "mean-accuracy": "0.8750",
        "pass-k": "0.7500",
        "flip-rate": "0.2500",
        "result": ".passk/baseline.json",
        "reused": "false",
    }
    assert "r3" in summary
    assert TOKEN not in stdout.replace(f"::add-mask::{TOKEN}\n", "", 1)


def test_pull_request_mode_pushes_a_branch_and_prints_the_compare_link(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, remote = pushed
    before = git(repo, "rev-parse", "HEAD")
    code, stdout, _, _ = run_baseline(repo, tmp_path, "pull-request")
    assert code == 0, stdout
    branch = f"passk/baseline-{before[:7]}"
    pushed_commit = git(remote, "rev-parse", branch)
    assert git(remote, "rev-parse", f"{pushed_commit}^") == before
    assert git(remote, "rev-parse", "main") == before  # main is untouched
    assert git(repo, "rev-parse", "HEAD") == before  # and so is the local branch
    link = f"https://github.com/octo-org/refund-agent/compare/main...{branch}?expand=1"
    notices = [line for line in stdout.splitlines() if line.startswith("::notice")]
    assert len(notices) == 1 and link in notices[0]


def test_a_run_without_one_decision_is_not_pushed_as_the_baseline(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    """Failures of different kinds pass the early stop; no decision at all still refuses."""
    repo, remote = pushed
    before = git(remote, "rev-parse", "main")
    write_script(
        repo,
        {
            "r1": [{"crash": "model overloaded"}],
            "r2": [{"exit": 3, "stderr": "quota"}],
            "r3": [{"stdout": "not json"}],
            "r4": [{"exit": 4}],
        },
    )
    per_attempt(repo)
    git(repo, "commit", "-q", "-am", "agent: broken")
    code, stdout, outputs, _ = run_baseline(repo, tmp_path, "commit")
    assert code == 2, stdout
    assert "could not run" in stdout
    assert git(remote, "rev-parse", "main") == before, "nothing reached the branch"
    assert "mean-accuracy" not in outputs


def test_a_run_with_one_decision_is_pushed_as_the_baseline(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    """The control: the same failures beside one right answer record a baseline."""
    repo, remote = pushed
    before = git(remote, "rev-parse", "main")
    write_script(
        repo,
        {
            "r1": [{"crash": "model overloaded"}],
            "r2": [{"exit": 3, "stderr": "quota"}],
            "r3": [{"stdout": "not json"}],
            "r4": ["deny"],
        },
    )
    per_attempt(repo)
    git(repo, "commit", "-q", "-am", "agent: mostly broken")
    recorded = git(repo, "rev-parse", "HEAD")
    code, stdout, _, _ = run_baseline(repo, tmp_path, "commit")
    assert code == 0, stdout
    assert git(remote, "rev-parse", "main") != before
    assert git(remote, "rev-parse", "main^") == recorded, "the new baseline was committed"


def test_baseline_mode_refuses_pull_request_events(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, _ = pushed
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_WORKSPACE": str(repo),
        "INPUT_MODE": "baseline",
    }
    out = io.StringIO()
    assert action_main(env, stdout=out, stderr=io.StringIO(), cwd=repo) == 2
    assert "mode baseline records the default branch" in out.getvalue()


def test_a_row_that_left_the_dataset_leaves_the_ratchet_with_a_warning(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, _ = pushed
    lines = (repo / "data.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (repo / "data.jsonl").write_text("".join(lines[:1] + lines[2:]), encoding="utf-8")  # r2
    git(repo, "commit", "-q", "-am", "dataset: r2 retired")
    code, stdout, _, _ = run_baseline(repo, tmp_path, "pull-request")
    assert code == 0, stdout
    # Untitled, as it always was (every other warning of the action is titled passk).
    assert "::warning::row 'r2' left the ratchet: it is no longer in the dataset" in stdout
