"""``passk compare --base REF`` on a laptop keeps the action's config rules (issue 28).

The same function reads both configs (``sides/trusted.py``), so the rules the
action's tests attack (``tests/action/test_config_trust.py``) hold here too: a
config naming a runner credential is refused, the scrub holds whatever the
config says, and the head's settings are the base's but for its own run's.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main as cli_main
from support.paths import TESTS
from support.pull_request_repo import (
    RIGHT,
    TOKEN,
    Checkout,
    checkout,
    commit,
    edit_config,
    git,
    template,
)

__all__ = ["checkout", "template"]  # the shared fixtures, used by name

THIEF = TESTS / "data" / "agents" / "token_thief.py"
ARGS = ["compare", "--config", "passk.yml", "--base", "main", "--quiet"]


def thief(repo: Path, **agent: Any) -> None:
    """The working tree's agent (and its setup) hunts its environment for a token."""
    shutil.copy(THIEF, repo / "thief.py")
    answers = {row: decisions[0] for row, decisions in RIGHT.items()}
    edit_config(
        lambda c: c["agent"].update(
            command=[sys.executable, "thief.py"],
            protocol="process",
            setup=[f"{shlex.quote(sys.executable)} thief.py --setup"],
            env={"THIEF_RIGHT": json.dumps(answers)},
            **agent,
        )
    )(repo)


@pytest.fixture
def laptop(checkout: Checkout, monkeypatch: pytest.MonkeyPatch) -> Checkout:
    monkeypatch.chdir(checkout.repo)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN"):
        monkeypatch.setenv(name, TOKEN)
    # A copy under another name: the CLI is given no token, the scrub finds it by its value.
    monkeypatch.setenv("MY_COPY", f"Bearer {TOKEN}")
    monkeypatch.setenv("THIEF_OUT", str(checkout.tmp / "thief.jsonl"))
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/refund-agent")
    return checkout


def seen(checkout: Checkout) -> list[dict[str, Any]]:
    out = checkout.tmp / "thief.jsonl"
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return [json.loads(line) for line in lines]


def test_on_a_laptop_a_config_passing_the_token_is_refused_in_one_line(
    laptop: Checkout, capsys: pytest.CaptureFixture[str]
) -> None:
    thief(laptop.repo, pass_env=["GITHUB_TOKEN"])
    assert cli_main(ARGS) == 2
    err = capsys.readouterr().err
    [line] = [x for x in err.splitlines() if "credential of the runner" in x]
    assert "passk.yml: agent.pass_env[0]: GITHUB_TOKEN is a credential of the runner" in line
    assert seen(laptop) == []  # neither setup nor any attempt ran


def test_control_on_a_laptop_the_same_agent_runs_and_finds_no_token(
    laptop: Checkout, capsys: pytest.CaptureFixture[str]
) -> None:
    thief(laptop.repo)
    assert cli_main(ARGS) == 0, capsys.readouterr().err
    records = seen(laptop)
    assert len(records) == 1 + 4 * 2 and all(r["names"] == [] for r in records), records


def test_on_a_laptop_the_heads_setup_timeout_is_held_to_the_bases(
    laptop: Checkout, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = laptop.repo
    git(repo, "checkout", "-q", "main")
    edit_config(lambda c: c["agent"].update(setup_timeout_s=2))(repo)
    assert cli_main(["baseline", "--config", "passk.yml", "--quiet"]) == 0
    laptop.base_sha = commit(repo, "setups get 2 s")
    git(repo, "checkout", "-q", "-B", "feature")
    edit_config(lambda c: c["agent"].update(setup=["sleep 8"], setup_timeout_s=1e6))(repo)
    capsys.readouterr()
    started = time.monotonic()
    assert cli_main(ARGS) == 2
    assert time.monotonic() - started < 8
    err = capsys.readouterr().err
    assert (
        "agent.setup_timeout_s is 1e+06s in the pull request's config, above the base's 2s" in err
    )
    assert "setup command `sleep 8` did not finish within 2s" in err
