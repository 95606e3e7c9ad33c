"""A project whose agent is a real program with a setup command, and the action run on it."""

from __future__ import annotations

import io
import json
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.action import main as action_main
from passk_action.cli import main as cli_main
from passk_action.core.sequential import STRICT
from support.fakegithub import SPECS_DIR, FakeGitHub, FakePull
from support.pull_request_repo import commit, git, parse_outputs
from support.pythons import agent_user_python

TOKEN = "ghs_setupTestToken0123456789abcdef"
REPO = "octo-org/refund-agent"


AGENT = """\
import json, os, sys
request = json.load(sys.stdin)
log = os.environ.get("AGENT_LOG")
if log:
    with open(log, "a") as handle:
        handle.write(json.dumps([request["id"], request["attempt"], request["version"]]) + "\\n")
{extra}
answers = json.load(open("answers.json"))
print(json.dumps({{"decision": answers.get(request["id"], "deny")}}))
"""

ROWS = [
    {"id": f"r{i}", "input": {"n": i}, "expected": "deny", "must_not_break": i == 0}
    for i in range(6)
]


def write_agent(repo: Path, extra: str = "", answers: dict[str, str] | None = None) -> None:
    (repo / "agent.py").write_text(AGENT.format(extra=extra), encoding="utf-8")
    (repo / "answers.json").write_text(json.dumps(answers or {}), encoding="utf-8")


# These projects test who runs what and what reaches whom, not the statistics: the
# literal rule confirms a lost gated row on k fresh attempts of each version, where the
# default rule measures each gated row 60 times when a baseline is recorded (one agent
# process each). A test of the default rule says so.
CONFIRMED = "the baseline was right on all 2 of its attempts, the candidate wrong on 2 of 2"
"""The strict rule's confirmation of r0, lost: the base agent, asked again, right every time."""

CONFIRMED_RELATIVE = "the baseline got right and the candidate not, 0 the other way: less accurate"
"""The default rule's: the baseline asked again beside the candidate, always right."""


def make_repo(root: Path, agent: dict[str, Any], gate_rule: str = STRICT) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Dev")
    git(repo, "config", "user.email", "dev@example.com")
    config = {
        "dataset": "data.jsonl",
        "k": 2,
        "concurrency": 2,
        "agent": agent,
        "confirm": {"attempts": 2, "must_not_break_attempts": 2},
        "retry": {"attempts": 0},
        "gate": {"rule": gate_rule},
    }
    (repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (repo / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (repo / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\n", encoding="utf-8")
    write_agent(repo)
    return repo


def run_action(
    repo: Path,
    tmp: Path,
    fake: FakeGitHub,
    base: str,
    head: str,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    payload = json.loads((SPECS_DIR / "events" / "pull_request.opened.json").read_text())
    pr = payload["pull_request"]
    payload["number"] = pr["number"] = 7
    pr["head"]["sha"], pr["base"]["sha"] = head, base
    # GitHub's current word on the pull request agrees with the event the run reads (its
    # base above all): this one, or the one the caller hands in.
    given = (extra_env or {}).get("GITHUB_EVENT_PATH")
    read = json.loads(Path(given).read_text(encoding="utf-8"))["pull_request"] if given else pr
    fake.pull = FakePull(number=7, head_sha=head, base_sha=base, base_ref=read["base"]["ref"])
    event = tmp / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    output, summary = tmp / "output.txt", tmp / "summary.md"
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(tmp),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
        "AGENT_LOG": str(tmp / "asked.jsonl"),
        "SETUP_LOG": str(tmp / "setup.log"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_CONFIG": "passk.yml",
        "INPUT_MODE": "gate",
        # The tests' own logs, which both agent users append to, shared on purpose.
        "PASSK_SHARED_ENV": "AGENT_LOG SETUP_LOG ATTACK_LOG",
        **(extra_env or {}),
    }
    out, err = io.StringIO(), io.StringIO()
    code = action_main(env, stdout=out, stderr=err, cwd=repo, sleep=lambda s: None)
    asked_file = tmp / "asked.jsonl"
    setup_file = tmp / "setup.log"
    return {
        "code": code,
        "log": out.getvalue() + err.getvalue(),
        "outputs": parse_outputs(output),
        "summary": summary.read_text(encoding="utf-8") if summary.exists() else "",
        "asked": [json.loads(x) for x in asked_file.read_text().splitlines()]
        if asked_file.exists()
        else [],
        "setup": setup_file.read_text().splitlines() if setup_file.exists() else [],
    }


def record_baseline(repo: Path) -> str:
    assert cli_main(["baseline", "--config", str(repo / "passk.yml"), "--quiet"]) == 0
    return commit(repo, "passk: config, dataset, agent and baseline")


# Writes its folder (as `npm ci`, a venv) and its HOME (as `pip install --user`).
SETUP = (
    'mkdir -p build && echo ok > build/stamp && echo ok > "$HOME/installed" '
    '&& echo "$PWD $HOME" >> "$SETUP_LOG"'
)
NEEDS_STAMP = (
    "for made in (os.path.join('build', 'stamp'), os.path.join(os.environ['HOME'], 'installed')):\n"
    "    assert open(made).read().strip() == 'ok', made"
)


@pytest.fixture(params=["same-user", "agent-user"])
def agent_user_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """Nothing, or ``PASSK_AGENT_USER=nobody`` (root only, like the container action)."""
    if request.param == "same-user":
        return {}
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("agents run as another user only when passk is root (the container action)")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody on this machine")
    return {"PASSK_AGENT_USER": "nobody"}


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the agent user can reach (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="passk-base-setup-test-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def project(
    shared: Path, agent_env: dict[str, str], gate_rule: str = STRICT
) -> tuple[Path, str, str]:
    """Base: an agent whose setup makes build/stamp; head: it loses must-not-break r0.

    Returns the checkout (on the head) and the base and head commits.
    """
    python = agent_user_python() if agent_env else sys.executable
    repo = make_repo(shared, {"command": [python, "agent.py"], "setup": [SETUP]}, gate_rule)
    (repo / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\nbuild/\n")
    write_agent(repo, extra=NEEDS_STAMP)
    # Recorded locally (as passk's user, setup included), then committed without build/.
    # HOME is a folder of this test's: the setup writes $HOME/installed and every attempt
    # reads it, and another pytest session (.ci/fresh-venv runs beside the suite) may be
    # rewriting the real HOME's copy at that moment (an empty read: an errored baseline).
    home = shared / "recording-home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SETUP_LOG", str(shared / "setup.log"))
        env.setenv("HOME", str(home))
        assert cli_main(["baseline", "--config", str(repo / "passk.yml"), "--quiet"]) == 0
    base = commit(repo, "passk: config, dataset, agent and baseline")
    shutil.rmtree(repo / "build")
    (shared / "setup.log").unlink()
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra=NEEDS_STAMP, answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0")
    # The checkout stays the runner's (here root's): with an agent user the candidate
    # runs from an export of HEAD that user owns (test_candidate_export.py).
    return repo, base, head


def setup_cwds(shared: Path) -> list[str]:
    path = shared / "setup.log"
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []
