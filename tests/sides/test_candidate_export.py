"""With an agent user, the candidate runs from its own export of HEAD (``sides/exports.py``).

In the container action passk is root and agents run as ``PASSK_AGENT_USER``,
while the checkout belongs to the runner's user.  The candidate's setup must
still be able to write its folder (``npm ci``, a venv), as the baseline's
does in its export; and the candidate, the pull request's code, must not be
able to write the checkout, where passk keeps its results.  Root only, like
``test_base_setup.py``; the checkout here is root's, as the runner's is to
the agent user.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from passk_action.errors import GitError
from passk_action.inputs.agent_config import AgentConfig
from passk_action.sides.exports import HeadExport, head_export
from passk_action.sides.gitrepo import GitRepo
from support.agent_project import (  # noqa: F401
    CONFIRMED,
    NEEDS_STAMP,
    REPO,
    TOKEN,
    project,
    run_action,
    setup_cwds,
    shared,
    write_agent,
)
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git, run_baseline

"""A blocking row's evidence under the default rule: fresh pairs, the baseline right on each."""

AGENT_USER = {"PASSK_AGENT_USER": "nobody"}

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or os.geteuid() != 0,
        reason="agents run as another user only when passk is root (the container action)",
    ),
    pytest.mark.any_python,  # .ci/run runs these again in a fresh venv (tests/support/pythons.py)
    pytest.mark.shares("agent-users"),  # one after another (tests/support/shared_resources.py)
]

UNTRACKED = "left-by-an-earlier-step.txt"

# The pull request's agent, once: where it runs, what it sees of the workspace, and
# every way it tries to write the checkout and passk's results there.
WORKSPACE_ATTACK = r"""
import errno
def attack():
    marker = os.environ["ATTACK_LOG"]
    if os.path.exists(marker):
        return
    workspace = os.environ["GITHUB_WORKSPACE"]
    found = {"untracked seen": os.path.exists("left-by-an-earlier-step.txt")}
    def attempt(name, action):
        try:
            action()
            found[name] = "done"
        except OSError as exc:
            found[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    def write(rel, how):
        return lambda: open(os.path.join(workspace, rel), how).write("forged")
    attempt("create planted.txt", write("planted.txt", "w"))
    attempt("write .passk/baseline.json", write(os.path.join(".passk", "baseline.json"), "a"))
    attempt("create .passk/result.json", write(os.path.join(".passk", "result.json"), "w"))
    attempt("write passk.yml", write("passk.yml", "a"))
    attempt("write its own folder", lambda: open("mine.txt", "w").write("x"))
    with open(marker, "w") as handle:
        json.dump(found, handle)
attack()
"""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody on this machine")
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def announced(log: str) -> list[str]:
    return [line for line in log.splitlines() if "the candidate runs from" in line]


def test_the_candidates_setup_writes_its_own_export_of_head(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
) -> None:
    repo, base, head = project(shared, AGENT_USER)
    assert repo.stat().st_uid == 0 and not repo.stat().st_mode & 0o022  # not nobody's
    got = run_action(repo, shared, fake, base, head, AGENT_USER)

    # The candidate's setup made build/stamp and its agent read it: the gate decided.
    assert got["code"] == 1, got["log"]
    assert got["outputs"]["lost"] == "1"
    assert "could not run" not in got["log"]
    cwds = setup_cwds(shared)
    assert len(cwds) == 2 and "/passk-base-" in cwds[0] and "/passk-head-" in cwds[1], cwds
    candidate_tree = Path(cwds[1])
    assert announced(got["log"]) == [
        f"passk: the candidate runs from the files of HEAD {head[:7]}, owned by nobody (an "
        "export of the commit: uncommitted or untracked files of the workspace are not there)"
    ]
    assert f"in {candidate_tree} (the files of HEAD {head[:7]}, owned by nobody)" in got["log"]
    candidate = [(row, n) for row, n, version in got["asked"] if version == "candidate"]
    # Every row k times, and no more but on r0: the one gated row, run beside the
    # baseline until the paired test decides.
    assert len([row for row, _ in candidate if row != "r0"]) == 5 * 2
    assert len([row for row, _ in candidate if row == "r0"]) > 2
    assert not (repo / "build").exists()  # nothing was written into the checkout
    assert not candidate_tree.parent.exists()  # the export is gone after the run
    # The default rule's evidence: the baseline run again beside the candidate, always right.
    assert CONFIRMED in fake.comment_bodies(7)[0]


def test_the_candidate_cannot_write_the_checkout_nor_passks_results(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
) -> None:
    repo, base, _head = project(shared, AGENT_USER)
    write_agent(repo, extra=NEEDS_STAMP + "\n" + WORKSPACE_ATTACK, answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0, and go for the checkout")
    (repo / UNTRACKED).write_text("from an earlier workflow step\n")
    committed = (repo / ".passk" / "baseline.json").read_bytes()
    attack_log = shared / "attack.json"
    got = run_action(repo, shared, fake, base, head, {**AGENT_USER, "ATTACK_LOG": str(attack_log)})

    found: dict[str, Any] = json.loads(attack_log.read_text())
    assert found == {
        "untracked seen": False,
        "create planted.txt": "EACCES",
        "write .passk/baseline.json": "EACCES",
        "create .passk/result.json": "EACCES",
        "write passk.yml": "EACCES",
        "write its own folder": "done",
    }
    assert not (repo / "planted.txt").exists()
    assert (repo / ".passk" / "baseline.json").read_bytes() == committed
    # The gate is the same as without the attack, and passk's results are its own.
    assert got["code"] == 1, got["log"]
    assert got["outputs"]["result"] == ".passk/result.json"
    result = json.loads((repo / ".passk" / "result.json").read_text())
    assert [(f["id"], f["rule"]) for f in result["gate"]["failures"]] == [("r0", "must-not-break")]
    candidate = json.loads((repo / ".passk" / "candidate.json").read_text())
    assert candidate["agent"]["commit"] == head


def test_a_replayed_rerun_exports_but_builds_and_announces_nothing(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
) -> None:
    repo, base, head = project(shared, AGENT_USER)
    first = run_action(repo, shared, fake, base, head, AGENT_USER)
    assert first["code"] == 1, first["log"]
    assert len(announced(first["log"])) == 1
    (shared / "asked.jsonl").unlink()

    again = run_action(repo, shared, fake, base, head, AGENT_USER)
    assert again["code"] == 1, again["log"]
    assert again["asked"] == []
    assert len(setup_cwds(shared)) == 2  # no setup on either side
    assert announced(again["log"]) == []
    assert "passk: 0 agent execution(s) now" in again["log"]


def test_when_head_cannot_be_exported_the_candidate_runs_in_the_checkout_with_a_warning(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, base, head = project(shared, AGENT_USER)
    real = GitRepo.export

    def export(self: GitRepo, sha: str, *, side: str = "base") -> AbstractContextManager[Path]:
        if side == "head":
            raise GitError("cannot read the objects of HEAD", where="git cat-file")
        return real(self, sha, side=side)

    monkeypatch.setattr(GitRepo, "export", export)
    got = run_action(repo, shared, fake, base, head, AGENT_USER)

    # Today's behaviour: in the checkout, which the agent user cannot write.
    assert got["code"] == 2, got["log"]
    warned = [line for line in got["log"].splitlines() if "HEAD could not be exported" in line]
    assert warned == [
        "::warning title=passk::the candidate runs in the checkout, which nobody cannot write, "
        "because HEAD could not be exported (git cat-file: cannot read the objects of HEAD); "
        "a setup that writes into its folder (npm ci, a venv) fails there"
    ]
    assert setup_cwds(shared)[1:] == []  # its setup could not even log
    assert f"in {repo}\n" in got["log"]
    assert "mkdir: cannot create directory 'build': Permission denied" in got["log"]
    assert announced(got["log"]) == []


def test_baseline_mode_runs_the_checked_out_agent_from_an_export_of_head(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
) -> None:
    repo, _base, _head = project(shared, AGENT_USER)
    git(repo, "checkout", "-q", "main")
    remote = shared / "origin.git"
    git(shared, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    main = git(repo, "rev-parse", "HEAD")
    env = {**AGENT_USER, "SETUP_LOG": str(shared / "setup.log"), "HOME": str(shared)}
    code, stdout, outputs, _summary = run_baseline(repo, shared, "pull-request", env)

    # Its setup wrote build/stamp in its export (the checkout is not nobody's).
    assert code == 0, stdout
    cwds = setup_cwds(shared)
    assert len(cwds) == 1 and "/passk-head-" in cwds[0], cwds
    assert f"passk: the baseline runs from the files of HEAD {main[:7]}, owned by nobody" in stdout
    assert not (repo / "build").exists() and not Path(cwds[0]).exists()
    assert outputs["result"] == ".passk/baseline.json"
    assert git(remote, "rev-parse", f"passk/baseline-{main[:7]}^") == main


def test_an_agent_outside_the_repository_is_not_moved_nor_said_to_be(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    (repo_dir / "agent.py").write_text("print('{}')\n")
    commit(repo_dir, "agent")
    repo = GitRepo.discover(repo_dir)
    elsewhere = AgentConfig(command=("python3", "agent.py"), http=None, cwd=tmp_path / "elsewhere")
    inside = AgentConfig(command=("python3", "agent.py"), http=None, cwd=repo_dir)
    warned: list[str] = []
    with head_export(repo, elsewhere, AGENT_USER, warned.append) as head:
        assert head == HeadExport(elsewhere)  # no export, no claim where it runs
    with head_export(repo, inside, AGENT_USER, warned.append) as head:
        moved = head.agent.cwd
        assert moved != repo_dir and (moved / "agent.py").read_text() == "print('{}')\n"
        assert moved.stat().st_uid == pwd.getpwnam("nobody").pw_uid
        assert head.where is not None and head.where.endswith("owned by nobody")
    assert not moved.exists() and warned == []
