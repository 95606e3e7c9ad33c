"""The candidate and the baseline run as two users: neither reaches the other.

In the container action passk is root; the pull request's agent runs as
``PASSK_AGENT_USER`` (``nobody``), the base commit's as
``PASSK_BASELINE_USER`` (``passk-baseline`` in the image).  Two attacks of
the pull request on the baseline's later confirmation attempts:

- **a .pth file in HOME**: Python runs every ``.pth`` line starting with
  ``import`` from the user site-packages, ``$HOME/.local/lib/python3.X/
  site-packages``, at start-up.  A candidate that plants one there, in a HOME
  the baseline shares, makes every later baseline attempt answer as the
  pull request likes, so the rows it broke "vary on the baseline too";
- **signals and ptrace**: a candidate process alive while baseline attempts
  run (confirmation runs both sides at once) kills or traces them.

Each attack runs with two users (it must fail), beside its control: the same
pull request without the trick, and the same attack with one user for both
sides, where it must succeed (so these tests can fail).  Root only, as in
the container action (``tests/container`` runs them in the image).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.identity import (
    AGENT_USER_ENV,
    BASELINE_USER_ENV,
    agent_user,
    baseline_env,
    spawn_as_agent,
)
from passk_action.agents.reaper import REAPER
from passk_action.errors import UsageError
from support.agent_project import REPO, TOKEN, make_repo, record_baseline, run_action, write_agent
from support.cross_user_attacks import ATTACKER, PLANT, REFUSED, VICTIM
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git
from support.pythons import agent_user_python

pytestmark = [
    pytest.mark.any_python,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or os.geteuid() != 0,
        reason="agents run as other users only when passk is root (the container action)",
    ),
]


def _existing(*names: str) -> str:
    for name in names:
        try:
            if pwd.getpwnam(name).pw_uid != 0:
                return name
        except KeyError:
            continue
    pytest.skip(f"none of the users {names} on this machine")


@pytest.fixture
def users() -> dict[str, str]:
    """Two unprivileged users, as the action's image sets them."""
    candidate = _existing("nobody")
    return {AGENT_USER_ENV: candidate, BASELINE_USER_ENV: _existing("passk-baseline", "daemon")}


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder both agent users can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="passk-sides-test-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- the .pth attack ----------------------------------------------------------------


def pull_request(shared: Path, *, attack: bool) -> tuple[Path, str, str]:
    """Base: the agent denies every row (r0 is must-not-break); the pull request's
    approves r0, a real regression, and with ``attack`` plants the .pth."""
    repo = make_repo(shared, {"command": [agent_user_python(), "agent.py"]})
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra=PLANT if attack else "", answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0" + (", and poison HOME" if attack else ""))
    # The agent users must read the checkout (the candidate runs from its own export).
    for path in [repo, *repo.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else 0o644)
    return repo, base, head


def gate(shared: Path, env: dict[str, str], *, attack: bool) -> tuple[dict[str, Any], str]:
    repo, base, head = pull_request(shared, attack=attack)
    run_env = {**env, "ATTACK_LOG": str(shared / "attack.jsonl")}
    for log in ("asked.jsonl", "attack.jsonl"):  # appended to by both users
        (shared / log).touch(mode=0o666)
        (shared / log).chmod(0o666)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(repo, shared, fake, base, head, run_env)
        body = fake.comment_bodies(7)[0]
    return got, body


CONFIRMED = "**evidence:** 2 wrong of 2 attempts; baseline 0 of "
"""The blocker's evidence when every confirmation attempt of the baseline was right."""


def baseline_confirmations(got: dict[str, Any]) -> list[tuple[str, int]]:
    return [(row, n) for row, n, version in got["asked"] if version == "baseline"]


def test_a_pth_in_the_candidates_home_never_reaches_the_baseline(
    shared: Path, users: dict[str, str]
) -> None:
    got, body = gate(shared, users, attack=True)

    planted = [json.loads(line) for line in (shared / "attack.jsonl").read_text().splitlines()]
    outcomes = {home: how for attempt in planted for home, how in attempt.items()}
    candidate_uid = pwd.getpwnam(users[AGENT_USER_ENV]).pw_uid
    baseline_uid = pwd.getpwnam(users[BASELINE_USER_ENV]).pw_uid
    # Only homes of its own user took the poison; the baseline's refused it.
    assert {h for h, how in outcomes.items() if how == "planted"} == {
        h for h in outcomes if f"/passk-agent-{candidate_uid}-" in h
    }
    baseline_homes = [h for h in outcomes if f"/passk-agent-{baseline_uid}-" in h]
    assert baseline_homes and all(outcomes[h] == "PermissionError" for h in baseline_homes)
    # The baseline's confirmation attempts answered as the base commit says.
    assert ("r0", 3) in baseline_confirmations(got)
    assert got["code"] == 1, got["log"]
    assert CONFIRMED in body and "varies" not in body, body
    assert (
        f"the candidate agent runs as {users[AGENT_USER_ENV]}, the baseline agent as "
        f"{users[BASELINE_USER_ENV]}" in got["log"]
    )


def test_control_the_same_pull_request_without_the_pth(shared: Path, users: dict[str, str]) -> None:
    got, body = gate(shared, users, attack=False)
    assert got["code"] == 1, got["log"]
    assert CONFIRMED in body, body


def test_control_one_user_for_both_sides_is_what_the_attack_needs(shared: Path) -> None:
    one = {AGENT_USER_ENV: _existing("nobody")}
    got, body = gate(shared, one, attack=True)
    # The poison reached the baseline: r0 no longer blocks.
    assert got["code"] == 0, got["log"]
    assert CONFIRMED not in body, body
    assert "both run as nobody" in got["log"]  # and passk said so before any agent ran


# -- signals and ptrace --------------------------------------------------------------------


def attack_a_running_baseline(shared: Path, env: dict[str, str]) -> tuple[dict[str, str], bool]:
    """A baseline process and a candidate process, started as passk starts them."""
    (shared / "victim.py").write_text(VICTIM)
    (shared / "attacker.py").write_text(ATTACKER)
    python = agent_user_python()
    baseline_user = agent_user(baseline_env(env))
    victim = spawn_as_agent(
        [python, "victim.py"], baseline_user, cwd=shared, env={"PATH": "/usr/bin:/bin"}
    )
    try:
        home = str(baseline_user.home) if baseline_user else str(shared)
        attacker = spawn_as_agent(
            [python, "attacker.py", str(victim.pid), home],
            agent_user(env),
            cwd=shared,
            env={"PATH": "/usr/bin:/bin"},
        )
        out, err = attacker.communicate(timeout=60)
        REAPER.release(attacker.pid)
        assert attacker.returncode == 0, err
        time.sleep(0.2)
        alive = victim.poll() is None
    finally:
        REAPER.kill_tree(victim.pid)
        victim.wait()
        REAPER.release(victim.pid)
    return json.loads(out), alive


def test_a_candidate_process_cannot_signal_or_trace_a_running_baseline(
    shared: Path, users: dict[str, str]
) -> None:
    found, alive = attack_a_running_baseline(shared, users)
    assert alive
    assert found == REFUSED


def test_control_as_one_user_the_candidate_kills_the_baseline(shared: Path) -> None:
    found, alive = attack_a_running_baseline(shared, {AGENT_USER_ENV: _existing("nobody")})
    assert not alive
    assert found["SIGKILL"] == found["signal 0"] == found["write its HOME"] == "done"


def test_the_baseline_user_is_validated_by_its_own_name() -> None:
    with pytest.raises(UsageError, match=f"{BASELINE_USER_ENV}: no user 'no-such-user-here'"):
        baseline_env({BASELINE_USER_ENV: "no-such-user-here"})
    assert baseline_env({AGENT_USER_ENV: "nobody"})[AGENT_USER_ENV] == "nobody"
    assert baseline_env({AGENT_USER_ENV: "nobody", BASELINE_USER_ENV: "daemon"}) == {
        AGENT_USER_ENV: "daemon",
        BASELINE_USER_ENV: "daemon",
    }
