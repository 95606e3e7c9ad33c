"""The action's gate with a stale committed baseline: main changed its agent after the
baseline was recorded.  ``agent.fingerprint`` and ``baseline.when_stale`` come from the
base commit; the harness (real git, scripted agent, fake GitHub) is test_action_gate's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main as cli_main
from support.fakegithub import FakeGitHub
from support.pull_request_repo import (
    CONFIG,
    REPO,
    RIGHT,
    ROWS,
    TOKEN,
    Checkout,
    commit,
    git,
    write_config,
    write_rows,
    write_script,
)


def stale_repo(root: Path, policy: str | None, fingerprint: bool = True) -> tuple[str, str]:
    """main: a baseline recorded with every row right, then an agent change (r3 wrong).

    Returns (the commit the baseline measured, the base commit).
    """
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    config: dict[str, Any] = {
        **CONFIG,
        # Workers: these tests are about staleness, and the relative rule's measurement
        # asks the agent 60 times a gated row (one start-up, not 60).
        "agent": {
            **CONFIG["agent"],
            "protocol": "worker",
            **({"fingerprint": ["script.json"]} if fingerprint else {}),
        },
        "baseline": {
            **CONFIG["baseline"],
            **({"when_stale": policy} if policy is not None else {}),
        },
        "gate": {"block_on_any_regression": False},
    }
    write_config(root, config)
    write_rows(root, ROWS)
    write_script(root, RIGHT)
    (root / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\n", encoding="utf-8")
    measured = commit(root, "agent")
    assert cli_main(["baseline", "--config", str(root / "passk.yml"), "--quiet"]) == 0
    commit(root, "passk: baseline")
    write_script(root, {**RIGHT, "r3": ["deny"]})
    base = commit(root, "agent: stricter on r3")
    return measured, base


@pytest.fixture
def fake() -> Any:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def checkout_of(
    tmp_path: Path, policy: str | None, fingerprint: bool = True
) -> tuple[Checkout, str, str]:
    measured, base = stale_repo(tmp_path / "repo", policy, fingerprint)
    repo = tmp_path / "repo"
    git(repo, "checkout", "-q", "-b", "feature")
    return Checkout(repo=repo, tmp=tmp_path, base_sha=base), measured, base


def baseline_main_attempts(asked: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    return [a for a in asked if a[2] == "baseline" and a[1] <= 2]


def test_default_remeasures_at_the_base_and_says_so_with_the_cost(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    checkout, measured, base = checkout_of(tmp_path, None)
    head = checkout.head()
    outcome = checkout.run(fake, head)
    assert outcome.code == 0, outcome.stdout
    assert baseline_main_attempts(outcome.asked) == [
        (r["id"], n, "baseline") for r in ROWS for n in (1, 2)
    ]
    assert outcome.outputs["lost"] == "0"  # r3 is wrong at the base too
    body = fake.comment_bodies(7)[0]
    stale = (
        f"the committed baseline (measured at {measured[:7]}) is stale: it was measured on "
        f"other files: script.json changed at the base {base[:7]}"
    )
    cost = f"so it was measured anew at {base[:7]} (8 executions: k = 2 × 4 rows)"
    assert f"⚠️ {stale}, {cost}" in body
    assert stale in outcome.stdout  # a workflow warning too


def test_warn_uses_the_committed_baseline(tmp_path: Path, fake: FakeGitHub) -> None:
    checkout, _, _ = checkout_of(tmp_path, "warn")
    outcome = checkout.run(fake, checkout.head())
    assert outcome.code == 0, outcome.stdout
    assert baseline_main_attempts(outcome.asked) == []
    assert outcome.outputs["lost"] == "1"
    assert "it was used anyway (baseline.when_stale: warn)" in fake.comment_bodies(7)[0]


def test_fail_is_exit_2_before_any_agent_runs(tmp_path: Path, fake: FakeGitHub) -> None:
    checkout, measured, _ = checkout_of(tmp_path, "fail")
    outcome = checkout.run(fake, checkout.head())
    assert outcome.code == 2
    assert outcome.asked == []
    assert f"the committed baseline (measured at {measured[:7]}) is stale" in outcome.stdout


def test_a_pull_request_cannot_turn_the_stale_policy_down(tmp_path: Path, fake: FakeGitHub) -> None:
    checkout, measured, _ = checkout_of(tmp_path, "fail")
    text = (checkout.repo / "passk.yml").read_text(encoding="utf-8")
    head = checkout.head(
        apply=[
            lambda repo: (repo / "passk.yml").write_text(
                text.replace("when_stale: fail", "when_stale: warn"), encoding="utf-8"
            )
        ]
    )
    outcome = checkout.run(fake, head)
    assert outcome.code == 2  # the base's `fail` still rules
    assert outcome.asked == []
    assert f"(measured at {measured[:7]}) is stale" in outcome.stdout


def test_without_fingerprint_the_comment_says_how_far_behind(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    checkout, measured, base = checkout_of(tmp_path, None, fingerprint=False)
    outcome = checkout.run(fake, checkout.head())
    assert outcome.code == 0, outcome.stdout
    assert baseline_main_attempts(outcome.asked) == []
    assert (
        f"the baseline was measured at {measured[:7]}, 2 commit(s) behind the base {base[:7]}; "
        "files changed since: script.json"
    ) in fake.comment_bodies(7)[0]


def test_passk_baseline_records_commit_and_fingerprint(tmp_path: Path) -> None:
    from passk_action.store.artifact import read_run

    root = tmp_path / "repo"
    stale_repo(root, None)
    assert cli_main(["baseline", "--config", str(root / "passk.yml"), "--quiet"]) == 0
    run = read_run(root / ".passk" / "baseline.json")
    head = git(root, "rev-parse", "HEAD")
    assert run.agent.commit == head and not run.agent.dirty
    assert run.agent.fingerprint == (("script.json", git(root, "rev-parse", "HEAD:script.json")),)
    shutil.rmtree(root)
