"""The action's comment marks each lost row with its history on the base branch.

Main records three baselines (the middle one with r3 flipping); the pull
request breaks r1 (stable-correct in every baseline: new trouble) and r3
(it flipped before: old trouble).  The marks come from the base commit's
git history alone: a re-run shows the same ones, and versions of the
artifact the pull request's own commits made never count.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from passk_action.cli import main as cli_main
from support.fakegithub import FakeGitHub
from support.pull_request_repo import (
    RIGHT,
    Checkout,
    commit,
    fake,
    git,
    template,
    write_script,
)

__all__ = ["fake", "template"]  # fixtures, used by name

R3_FLIPS = {**RIGHT, "r3": ["approve", "deny"]}
R1_R3_BROKEN = {**RIGHT, "r1": ["approve", "deny"], "r3": ["deny"]}


def record_baseline(repo: Path, script: dict[str, list[str]], message: str) -> str:
    write_script(repo, script)
    assert cli_main(["baseline", "--config", str(repo / "passk.yml"), "--quiet"]) == 0
    return commit(repo, message)


@pytest.fixture
def history_checkout(template: Path, tmp_path: Path) -> Checkout:
    """Main with three baselines (r3 flipped in the middle one), and a feature branch."""
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    record_baseline(repo, R3_FLIPS, "passk: baseline, r3 wobbles")
    record_baseline(repo, RIGHT, "passk: baseline, all right again")
    git(repo, "checkout", "-q", "-b", "feature")
    return Checkout(repo=repo, tmp=tmp_path, base_sha=git(repo, "rev-parse", "main"))


def history_lines(body: str) -> list[str]:
    return [line for line in body.splitlines() if "history:" in line]


MARKS = [
    "- history: stable-correct in each of the last 3 baselines on main (new trouble)",
    "- history: flip in 1 of the last 3 baselines on main (old trouble)",
]


def test_lost_rows_are_marked_new_or_old_trouble_from_mains_baselines(
    history_checkout: Checkout, fake: FakeGitHub
) -> None:
    head = history_checkout.head(R1_R3_BROKEN)
    outcome = history_checkout.run(fake, head, base_ref="main")
    assert outcome.code == 1, outcome.stdout
    (body,) = fake.comment_bodies(7)
    assert history_lines(body) == MARKS
    log = outcome.stdout
    assert "passk: history: 3 baselines of .passk/baseline.json read on main" in log
    # Read with the trusted inputs, before any agent (setup or attempt) ran.
    assert log.index("passk: history:") < log.index("::endgroup::") < log.index("agent execution")
    # Reading the history asked no agent anything: only the candidate and confirmations ran.
    assert {version for _, _, version in outcome.asked} <= {"candidate", "baseline"}
    assert not [a for a in outcome.asked if a[2] == "baseline" and a[0] not in ("r1", "r3")]

    # A re-run replays the verdicts and reads the same history: the same marks.
    again = history_checkout.run(fake, head, base_ref="main")
    assert again.code == 1 and again.asked == []
    (body,) = fake.comment_bodies(7)
    assert history_lines(body) == MARKS
    assert fake.violations == []


def test_the_pull_requests_own_versions_of_the_artifact_never_count(
    history_checkout: Checkout, fake: FakeGitHub
) -> None:
    """A pull request that commits a forged baseline history, then restores the artifact.

    Its head's artifact is the base's again (no protected change), but the
    merge commit's history holds the forged versions: read from the base
    commit, they are not there.
    """
    repo = history_checkout.repo
    artifact = repo / ".passk/baseline.json"
    original = artifact.read_text(encoding="utf-8")
    doc = json.loads(original)
    for attempt in doc["attempts"]:
        if attempt["row"] == "r1" and attempt["n"] == 2:
            attempt["decision"] = "deny"
    for forged in range(3):
        artifact.write_text(json.dumps(doc, indent=forged), encoding="utf-8")
        commit(repo, f"forged baseline {forged}")
    artifact.write_text(original, encoding="utf-8")
    head = history_checkout.head(R1_R3_BROKEN)
    # The action checks out the merge of the head into the base, as GitHub does.
    git(repo, "checkout", "-q", "--detach", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", head)
    outcome = history_checkout.run(fake, head, base_ref="main")
    assert outcome.code == 1, outcome.stdout
    result = json.loads((repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert not [f for f in result["gate"]["failures"] if f["rule"] == "protected-change"]
    (body,) = fake.comment_bodies(7)
    assert history_lines(body) == MARKS


def test_a_shallow_checkout_says_how_many_baselines_it_read_and_still_gates(
    history_checkout: Checkout, fake: FakeGitHub, tmp_path: Path
) -> None:
    head = history_checkout.head(R1_R3_BROKEN)
    shallow = tmp_path / "shallow"
    # Two commits of history: the head and main's newest baseline commit.
    git(
        tmp_path,
        "clone",
        "-q",
        "--depth",
        "2",
        "--branch",
        "feature",
        f"file://{history_checkout.repo}",
        str(shallow),
    )
    checkout = Checkout(repo=shallow, tmp=tmp_path, base_sha=history_checkout.base_sha)
    outcome = checkout.run(fake, head, base_ref="main")
    assert outcome.code == 1, outcome.stdout
    (body,) = fake.comment_bodies(7)
    assert history_lines(body) == [
        "- history: stable-correct in the last baseline on main (new trouble)",
        "- history: stable-correct in the last baseline on main (new trouble)",
    ]
    assert "- 1 baseline readable on main in this shallow clone; fetch-depth: 0 gives all" in body
