"""The scorer program's files are out of the candidate's reach (the container action, as root).

The gate runs the base commit's scorer from an export of its own, read-only,
owned by root and handed to no agent user, as a user that is not the
candidate's.  The attack: the pull request's agent (run as ``nobody``) finds
that export under the temporary folder and rewrites the scorer to call every
answer right, then answers must-not-break ``r0`` wrong.  Beside it the
control: the same pull request without the rewrite.  Both must block on r0,
judged by the base's scorer.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.agents.identity import AGENT_USER_ENV, BASELINE_USER_ENV
from passk_action.store.artifact import read_run
from support.agent_project import REPO, TOKEN, make_repo, record_baseline, run_action, write_agent
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git
from support.pythons import agent_user_python

pytestmark = [
    pytest.mark.any_python,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or os.geteuid() != 0,
        reason="agents run as other users only when passk is root (the container action)",
    ),
    pytest.mark.shares("agent-users"),  # one after another (tests/support/shared_resources.py)
]

SCORER = """\
import json, sys
request = json.load(sys.stdin)
print(json.dumps({"correct": request["answer"] == request["expected"]}))
"""
LENIENT = 'import json, sys\nsys.stdin.read()\nprint(json.dumps({"correct": True}))\n'
# The pull request's agent: before answering, it rewrites every scorer it can find in
# the temporary folder passk makes its exports in (where the agent's HOME is, too).
REWRITE = f"""
import glob
tried = {{}}
exports = os.path.join(os.path.dirname(os.environ["HOME"]), "passk-*", "tree", "scorer.py")
for path in sorted(glob.glob(exports)):
    try:
        with open(path, "w") as handle:
            handle.write({LENIENT!r})
        tried[path] = "rewritten"
    except OSError as exc:
        tried[path] = type(exc).__name__
with open(os.environ["ATTACK_LOG"], "a") as handle:
    handle.write(json.dumps(tried) + "\\n")
"""


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
    return {
        AGENT_USER_ENV: _existing("nobody"),
        BASELINE_USER_ENV: _existing("passk-baseline", "daemon"),
    }


@pytest.fixture
def shared() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="passk-scorer-test-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _gate(shared: Path, env: dict[str, str], *, attack: bool) -> dict[str, Any]:
    python = agent_user_python()
    repo = make_repo(shared, {"command": [python, "agent.py"]})
    config = yaml.safe_load((repo / "passk.yml").read_text(encoding="utf-8"))
    config["scoring"] = {"by": "command", "command": [python, "scorer.py"], "timeout_s": 30}
    (repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (repo / "scorer.py").write_text(SCORER, encoding="utf-8")
    base = record_baseline(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra=REWRITE if attack else "", answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0" + (", and rewrite the scorer" if attack else ""))
    for path in [repo, *repo.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else 0o644)
    for log in ("asked.jsonl", "attack.jsonl"):
        (shared / log).touch(mode=0o666)
        (shared / log).chmod(0o666)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(
            repo, shared, fake, base, head, {**env, "ATTACK_LOG": str(shared / "attack.jsonl")}
        )
    got["attack"] = [json.loads(x) for x in (shared / "attack.jsonl").read_text().splitlines()]
    return got


def test_a_candidate_cannot_rewrite_the_scorer_it_is_judged_by(
    shared: Path, users: dict[str, str]
) -> None:
    got = _gate(shared, users, attack=True)

    tried = {path: what for found in got["attack"] for path, what in found.items()}
    # The pull request's own export (passk-head-*) is its agent's to write; the scorer's
    # export (passk-scorer-*) is not.
    scorer = {path: what for path, what in tried.items() if "/passk-scorer-" in path}
    assert scorer, got["log"][-3000:]
    assert set(scorer.values()) == {"PermissionError"}
    assert got["code"] == 1, got["log"]
    assert "answers are judged by" in got["log"]


def test_control_the_same_pull_request_without_the_rewrite_blocks_alike(
    shared: Path, users: dict[str, str]
) -> None:
    got = _gate(shared, users, attack=False)

    assert got["attack"] == []
    assert got["code"] == 1, got["log"]


def test_control_without_agent_users_the_rewrite_reaches_the_scorer(shared: Path) -> None:
    """What the boundary is: as one user (no PASSK_AGENT_USER, a laptop's case), the
    agent can write the scorer's export, as the threat model says."""
    got = _gate(shared, {}, attack=True)

    tried = {path: what for found in got["attack"] for path, what in found.items()}
    assert "rewritten" in {what for path, what in tried.items() if "/passk-scorer-" in path}


# An environment task: the agent leaves its state in its own folder, and goes looking
# for the other attempts' folders to spoil them.
SPOIL = """
state = os.environ["PASSK_STATE_DIR"]
with open(os.path.join(state, "ledger.txt"), "w") as handle:
    handle.write("ok")
found = {}
parent = os.path.dirname(state)
try:
    others = [os.path.join(parent, name) for name in os.listdir(parent)]
    found["list"] = "listed"
except OSError as exc:
    others = []
    found["list"] = type(exc).__name__
for other in others:
    if other != state:
        try:
            with open(os.path.join(other, "ledger.txt"), "w") as handle:
                handle.write("spoiled")
            found[other] = "spoiled"
        except OSError as exc:
            found[other] = type(exc).__name__
with open(os.environ["ATTACK_LOG"], "a") as handle:
    handle.write(json.dumps(found) + "\\n")
"""
STATE_SCORER = """\
import json, os, sys
request = json.load(sys.stdin)
text = open(os.path.join(request["state"], "ledger.txt")).read()
print(json.dumps({"correct": text == "ok", "reason": text}))
"""


def _environment_run(shared: Path, users: dict[str, str]) -> tuple[list[dict[str, str]], Any]:
    python = agent_user_python()
    repo = make_repo(shared, {"command": [python, "agent.py"]})
    config = yaml.safe_load((repo / "passk.yml").read_text(encoding="utf-8"))
    config["scoring"] = {"by": "environment", "command": [python, "scorer.py"]}
    (repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (repo / "scorer.py").write_text(STATE_SCORER, encoding="utf-8")
    tasks = [{"id": f"r{i}", "input": {"n": i}} for i in range(6)]
    (repo / "data.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    write_agent(repo, extra=SPOIL)
    for path in [repo, *repo.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else 0o644)
    log = shared / "attack.jsonl"
    log.touch(mode=0o666)
    log.chmod(0o666)
    env = {**os.environ, **users, "ATTACK_LOG": str(log), "PASSK_SHARED_ENV": "ATTACK_LOG"}
    out = shared / "run.json"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "passk_action", "run"),
            *("--config", str(repo / "passk.yml"), "--out", str(out), "--quiet"),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in log.read_text().splitlines()], read_run(out)


def test_an_attempt_cannot_find_or_spoil_another_attempts_state(
    shared: Path, users: dict[str, str]
) -> None:
    found, run = _environment_run(shared, users)

    assert len(found) == 12
    assert all(f == {"list": "PermissionError"} for f in found)
    assert {a.decision for a in run.attempts} == {"success"}
    assert {v.reason for a in run.attempts for v in a.verdicts} == {"ok"}


def test_control_as_passks_own_user_the_state_folders_can_be_listed(shared: Path) -> None:
    """The boundary is the agent user: run as passk (root here), an attempt lists them."""
    found, _ = _environment_run(shared, {})

    assert {f["list"] for f in found} == {"listed"}
