"""The baseline's ``setup`` runs in the base commit's export, before any of the PR's code.

Real setups write into the agent's folder (``npm ci``, ``uv sync``, a venv):
here the base agent's setup makes ``build/stamp`` and the agent refuses to
answer without it.  Each test runs two ways: as passk's own user, and (root
only, as in the container action) with agents as ``PASSK_AGENT_USER=nobody``,
where the export must be the setup's to write while it runs and nobody's to
change afterwards.  The attack: the pull request's agent, running as that
same user, tries to rewrite what the baseline's setup made and the base files.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.agents.identity import agent_user
from passk_action.cli import main as cli_main
from passk_action.core.sequential import RELATIVE
from passk_action.sides.ownership import hand_over, lock
from support.agent_project import (
    CONFIRMED,
    CONFIRMED_RELATIVE,
    NEEDS_STAMP,
    REPO,
    TOKEN,
    agent_user_env,
    make_repo,
    project,
    run_action,
    setup_cwds,
    shared,
    write_agent,
)
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git

__all__ = ["agent_user_env", "shared"]  # the shared fixtures, used by name

# .ci/run runs these again in a fresh venv, from a private folder (tests/support/pythons.py).
pytestmark = pytest.mark.any_python

"""A blocking row's evidence under the default rule: fresh pairs, the baseline right on each."""


# The pull request's agent (the candidate), run as the agent user: once, it goes
# for the baseline's export (the first folder the setup log names is the
# baseline's: its setup runs first) and tries every way to change it.
ATTACK = r"""
import errno, glob
def attack():
    marker = os.environ["ATTACK_LOG"]
    if os.path.exists(marker):
        return
    tree, home = open(os.environ["SETUP_LOG"]).readline().split()
    found = {}
    def attempt(name, action):
        try:
            action()
            found[name] = "done"
        except OSError as exc:
            found[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    stamp = os.path.join(tree, "build", "stamp")
    answers = os.path.join(tree, "answers.json")
    installed = os.path.join(home, "installed")
    for path in (stamp, answers, os.path.join(tree, "agent.py"), installed):
        rel = os.path.relpath(path, os.path.dirname(tree))
        attempt(f"write {rel}", lambda: open(path, "a").write("x"))
        attempt(f"chmod {rel}", lambda: os.chmod(path, 0o666))
        attempt(f"unlink {rel}", lambda: os.unlink(path))
        attempt(f"rename {rel}", lambda: os.rename(path, path + ".old"))
    for folder in (os.path.join(tree, "build"), tree, home):
        rel = os.path.relpath(folder, os.path.dirname(tree))
        attempt(f"create in {rel}", lambda: open(os.path.join(folder, "planted"), "w"))
        attempt(f"chmod {rel}", lambda: os.chmod(folder, 0o777))
    found["stamp owner"] = os.stat(stamp).st_uid
    found["stamp mode"] = oct(os.stat(stamp).st_mode & 0o7777)
    with open(marker, "w") as handle:
        json.dump(found, handle)
attack()
"""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def setup_homes(shared: Path) -> list[str]:
    return [line.split()[1] for line in (shared / "setup.log").read_text().splitlines()]


@pytest.mark.shares("agent-users")
def test_the_baselines_setup_writes_its_checkout_in_gate_mode(
    shared: Path, fake: FakeGitHub, agent_user_env: dict[str, str]
) -> None:
    # The default rule: its baseline runs (the row measured when recorded, then asked
    # again beside the candidate) read what the base's setup made too.
    repo, base, head = project(shared, agent_user_env, RELATIVE)
    got = run_action(repo, shared, fake, base, head, agent_user_env)

    assert got["code"] == 1, got["log"]
    assert got["outputs"]["lost"] == "1"
    # The baseline's setup ran first, in the export; then the candidate's.
    cwds = setup_cwds(shared)
    assert len(cwds) == 2 and "/passk-base-" in cwds[0], cwds
    # The candidate's setup wrote its own folder: the checkout as one user, else its export.
    if agent_user_env:
        assert "/passk-head-" in cwds[1], cwds
    else:
        assert cwds[1] == str(repo), cwds
    homes = setup_homes(shared)
    if agent_user_env:
        # The agent user's HOME is the candidate's too: the baseline's is its own.
        assert homes[0] == str(Path(cwds[0]).parent / "home") and homes[1] != homes[0]
    # Confirmation asked the base agent, which read what its setup made.
    baseline = [(row, n) for row, n, version in got["asked"] if version == "baseline"]
    assert baseline and {row for row, _ in baseline} == {"r0"}
    # The default rule's evidence: the baseline run again beside the candidate, always right.
    assert CONFIRMED_RELATIVE in fake.comment_bodies(7)[0]
    assert "could not run" not in got["log"]
    assert f"in {cwds[0]} (the base commit's files; set up before any of the pull" in got["log"]
    assert not Path(cwds[0]).exists()  # the export is gone after the run
    assert Path(cwds[1]).exists() == (not agent_user_env)  # so is the candidate's
    assert fake.violations == []


@pytest.mark.shares("agent-users")
def test_a_rerun_replays_without_any_agent_call_or_setup(
    shared: Path, fake: FakeGitHub, agent_user_env: dict[str, str]
) -> None:
    repo, base, head = project(shared, agent_user_env)
    first = run_action(repo, shared, fake, base, head, agent_user_env)
    assert first["code"] == 1, first["log"]
    assert len(setup_cwds(shared)) == 2
    (shared / "asked.jsonl").unlink()

    again = run_action(repo, shared, fake, base, head, agent_user_env)
    assert again["code"] == 1, again["log"]
    assert again["asked"] == []  # zero agent calls
    assert len(setup_cwds(shared)) == 2  # and no setup ran on either side
    assert "setup of the" not in again["log"]
    assert "passk: 0 agent execution(s) now" in again["log"]


@pytest.mark.shares("agent-users")
def test_the_candidate_cannot_change_what_the_baselines_setup_made(
    shared: Path, fake: FakeGitHub, agent_user_env: dict[str, str]
) -> None:
    if not agent_user_env:
        pytest.skip(
            "as one user there is no boundary: passk's own user may change its own files "
            "(see docs/threat-model.md)"
        )
    repo, base, head = project(shared, agent_user_env)
    # The attack is the pull request's code; the answers it gives are the same
    # as without it (it loses r0), so the gate must fail the same way.
    write_agent(repo, extra=NEEDS_STAMP + "\n" + ATTACK, answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0, and go for the baseline's files")
    attack_log = shared / "attack.json"
    env = {**agent_user_env, "ATTACK_LOG": str(attack_log)}
    got = run_action(repo, shared, fake, base, head, env)

    found: dict[str, Any] = json.loads(attack_log.read_text())
    refused = {name: how for name, how in found.items() if not name.startswith("stamp ")}
    assert len(refused) == 22  # 4 files x 4 ways, 3 folders x 2
    assert set(refused.values()) <= {"EACCES", "EPERM"}, refused
    assert found["stamp owner"] == 0 and found["stamp mode"] == "0o444"
    # The baseline answered as its own files say: the regression is confirmed.
    assert got["code"] == 1, got["log"]
    baseline = [(row, n) for row, n, version in got["asked"] if version == "baseline"]
    assert baseline and {row for row, _ in baseline} == {"r0"}
    body = fake.comment_bodies(7)[0]
    assert CONFIRMED in body and "baseline varies" not in body


@pytest.mark.shares("agent-users")
def test_compare_base_runs_refs_setup_in_its_checkout(
    shared: Path,
    agent_user_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, _base, _head = project(shared, agent_user_env)
    # The CLI runs the candidate in the working tree (uncommitted changes are the
    # point), so as the agent user its setup needs that tree writable.
    repo.chmod(0o777)
    capsys.readouterr()  # what recording the baseline said
    for key, value in agent_user_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SETUP_LOG", str(shared / "setup.log"))
    monkeypatch.setenv("AGENT_LOG", str(shared / "asked.jsonl"))
    # A HOME of this test's: the setup writes $HOME/installed (as one user, passk's own
    # HOME), and another pytest session may be rewriting the real one's at that moment.
    (shared / "compare-home").mkdir(mode=0o777)
    (shared / "compare-home").chmod(0o777)
    monkeypatch.setenv("HOME", str(shared / "compare-home"))
    out = shared / "result.json"
    code = cli_main(
        ["compare", "--config", str(repo / "passk.yml"), "--base", "main", "--json", str(out),
         "--markdown", str(shared / "report.md"), "--quiet"]
    )  # fmt: skip
    assert code == 1
    cwds = setup_cwds(shared)
    assert len(cwds) == 2 and "/passk-base-" in cwds[0] and cwds[1] == str(repo), cwds
    asked = [json.loads(line) for line in (shared / "asked.jsonl").read_text().splitlines()]
    assert {row for row, _, version in asked if version == "baseline"} == {"r0"}
    err = capsys.readouterr().err
    assert f"passk: setup (baseline): in {cwds[0]} (a checkout of REF; set up before" in err
    assert err.index("setup (baseline)") < err.index("setup (candidate)")
    result = json.loads(out.read_text())
    assert [(f["id"], f["rule"]) for f in result["gate"]["failures"]] == [("r0", "must-not-break")]


# --- the export's hand-over and lock, on their own ------------------------------------


def test_lock_strips_write_and_set_id_bits_and_never_follows_a_symlink(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "bin").mkdir(parents=True)
    program = tree / "bin" / "tool"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o6755)
    private = tree / "secret.txt"
    private.write_text("made by setup")
    private.chmod(0o600)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the export's")
    outside.chmod(0o644)
    (tree / "link").symlink_to(outside)
    (tree / "dirlink").symlink_to(tmp_path)

    lock(tree, as_root=os.geteuid() == 0)
    assert stat.S_IMODE(program.stat().st_mode) == 0o555
    assert stat.S_IMODE(private.stat().st_mode) == 0o444
    assert stat.S_IMODE((tree / "bin").stat().st_mode) == 0o555
    assert stat.S_IMODE(tree.stat().st_mode) == 0o555
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644  # not through the link
    assert stat.S_IMODE(tmp_path.stat().st_mode) & 0o200

    hand_over(tree, None)
    assert stat.S_IMODE(private.stat().st_mode) == 0o644
    assert stat.S_IMODE(tree.stat().st_mode) == 0o755
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644


@pytest.mark.shares("agent-users")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give files to another user")
def test_hand_over_gives_the_tree_to_the_agent_user_and_lock_takes_it_back(
    tmp_path: Path,
) -> None:
    user = agent_user({"PASSK_AGENT_USER": "nobody"})
    assert user is not None
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a")
    outside = tmp_path / "outside.txt"
    outside.write_text("root's")
    (tree / "link").symlink_to(outside)
    hand_over(tree, user)
    assert tree.stat().st_uid == user.uid and (tree / "a.txt").stat().st_uid == user.uid
    assert outside.stat().st_uid == 0  # never through the link
    made = tree / "made-by-setup"
    made.write_text("x")
    os.chown(made, user.uid, user.gid)
    lock(tree, as_root=True)
    for path in (tree, tree / "a.txt", made):
        assert path.stat().st_uid == 0 and not path.stat().st_mode & 0o222
    assert (tree / "link").lstat().st_uid == 0


def test_a_failing_baseline_setup_stops_before_any_of_the_prs_code_runs(
    shared: Path, fake: FakeGitHub
) -> None:
    failing = "echo 'npm ERR! missing: left-pad@1.3.0' >&2; exit 3"
    repo = make_repo(shared, {"command": [sys.executable, "agent.py"], "setup": [failing]})
    # The baseline artifact is recorded by hand: recording would run the failing setup.
    repo_config = repo / "passk.yml"
    text = repo_config.read_text()
    config = yaml.safe_load(text)
    config["agent"]["setup"] = ["true"]
    repo_config.write_text(yaml.safe_dump(config))
    assert cli_main(["baseline", "--config", str(repo_config), "--quiet"]) == 0
    repo_config.write_text(text)
    base = commit(repo, "passk: baseline")
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, answers={"r0": "approve"})
    head = commit(repo, "candidate")
    got = run_action(repo, shared, fake, base, head)

    assert got["code"] == 2, got["log"]
    assert got["asked"] == []  # no candidate attempt: its code never ran
    assert "setup of the candidate agent" not in got["log"]
    assert "the baseline agent could not run: setup command" in got["log"]
    assert "npm ERR! missing: left-pad@1.3.0" in fake.comment_bodies(7)[0]
