"""The token ``actions/checkout`` persists in the checkout is out of the agents' reach.

``actions/checkout`` keeps the job's token unless told ``persist-credentials:
false``: up to v5 as ``http.https://github.com/.extraheader`` in the
checkout's ``.git/config``, from v6 in ``$RUNNER_TEMP/git-credentials-*.config``
included from it by ``includeIf.gitdir``.  Both files are world-readable.  The
attack: the pull request's agent (the candidate, which loses must-not-break
``r0``) reads them, and would post a forged record or check with the token.

With an agent user (root only, as in the container action) it must get EACCES
for whatever holds the token, the gate must still fail as without the trick,
and every mode must come back as it was.  As one user nothing can be hidden:
passk must say so in one warning line naming the file and the fix.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.identity import agent_user
from passk_action.cli import main as cli_main
from passk_action.errors import UsageError
from passk_action.sides.credentials import credentials_hidden, stored_credentials
from passk_action.sides.gitrepo import GitRepo
from support.agent_project import (  # noqa: F401
    CONFIRMED,
    NEEDS_STAMP,
    REPO,
    TOKEN,
    agent_user_env,
    make_repo,
    project,
    run_action,
    shared,
    write_agent,
)
from support.fakegithub import FakeGitHub
from support.pull_request_repo import commit, git
from support.pythons import agent_user_python
from support.workflows import REPO as CHECKOUT_ROOT
from support.workflows import WORKFLOWS, load_workflow

# .ci/run runs these again in a fresh venv, from a private folder (tests/support/pythons.py).
pytestmark = pytest.mark.any_python

"""A blocking row's evidence under the default rule: fresh pairs, the baseline right on each."""

BASIC = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
HEADER = f"AUTHORIZATION: basic {BASIC}"
KEY = "http.https://github.com/.extraheader"

# The pull request's agent, once: read the checkout's git config and every file it
# includes, and report what it got (the text, or the errno) and whether the token
# was in it.  By the workspace's absolute path: with an agent user the candidate
# runs from an export of HEAD, which has no .git, but the checkout stays readable.
STEAL = r"""
import errno, re
def steal():
    marker = os.environ["ATTACK_LOG"]
    if os.path.exists(marker):
        return
    got = {}
    def read(path):
        try:
            text = open(path).read()
        except OSError as exc:
            got[path] = errno.errorcode.get(exc.errno, str(exc.errno))
            return ""
        got[path] = "token" if re.search(r"basic [A-Za-z0-9+/=]{20,}", text) else "read"
        return text
    config = read(os.path.join(os.environ["GITHUB_WORKSPACE"], ".git", "config"))
    for included in re.findall(r"path = (.+)", config):
        read(included.strip())
    with open(marker, "w") as handle:
        json.dump(got, handle)
steal()
"""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def persist(repo: Path, layout: str, shared: Path) -> Path:  # noqa: F811
    """Store the token as ``actions/checkout`` does; returns the file that holds it."""
    if layout == "v4":
        git(repo, "config", KEY, HEADER)
        (repo / ".git" / "config").chmod(0o644)
        return repo / ".git" / "config"
    runner_temp = shared / "runner_temp"
    runner_temp.mkdir(mode=0o755)
    runner_temp.chmod(0o755)
    file = runner_temp / "git-credentials-0b1c2d3e.config"
    file.write_text(f'[http "https://github.com/"]\n\textraheader = {HEADER}\n')
    file.chmod(0o644)
    git_dir = (repo / ".git").resolve()
    git(repo, "config", f"includeIf.gitdir:{git_dir}.path", str(file))
    git(repo, "config", f"includeIf.gitdir:{git_dir}/worktrees/*.path", str(file))
    return file


def modes(*paths: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(p): (stat.S_IMODE(p.stat().st_mode), p.stat().st_uid, p.stat().st_gid) for p in paths
    }


def stealing_head(repo: Path) -> str:
    """The same candidate (it loses r0), and it goes for the persisted token."""
    write_agent(repo, extra=NEEDS_STAMP + "\n" + STEAL, answers={"r0": "approve"})
    return commit(repo, "candidate: approve r0, and read the checkout's git config")


def credential_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "git config holds a token" in line]


@pytest.mark.shares("agent-users")
@pytest.mark.parametrize("layout", ["v4", "v6"])
def test_the_candidate_cannot_read_the_persisted_token_as_the_agent_user(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
    agent_user_env: dict[str, str],  # noqa: F811
    layout: str,
) -> None:
    if not agent_user_env:
        pytest.skip("as one user nothing can be hidden: see the same-user test below")
    repo, base, _head = project(shared, agent_user_env)
    head = stealing_head(repo)
    held = persist(repo, layout, shared)
    watched = [repo / ".git", repo / ".git" / "config", held]
    before = modes(*watched)
    attack_log = shared / "attack.json"
    got = run_action(
        repo, shared, fake, base, head, {**agent_user_env, "ATTACK_LOG": str(attack_log)}
    )

    read: dict[str, Any] = json.loads(attack_log.read_text())
    if layout == "v4":
        # The token is in .git/config: the whole git directory is closed to the agent.
        assert read == {str(repo / ".git" / "config"): "EACCES"}
        locked = f"{repo}/.git/config"
    else:
        # .git/config only names the file; the file is closed to the agent.
        assert read == {str(repo / ".git" / "config"): "read", str(held): "EACCES"}
        locked = str(held)
    assert "token" not in read.values()
    # The gate is the same as without the trick: r0 is lost, confirmed, and fails.
    assert got["code"] == 1, got["log"]
    assert got["outputs"]["lost"] == "1", got["log"]
    # The default rule's evidence: the baseline run again beside the candidate, always right.
    assert CONFIRMED in fake.comment_bodies(7)[0]
    assert modes(*watched) == before
    assert credential_lines(got["log"]) == [
        f"::notice title=passk::the checkout's git config holds a token: {KEY} in {locked}; "
        "it is unreadable to the agent user nobody while agents run (so is the git directory, "
        "if it is there), and agents get no git metadata of the checkout; set "
        "`persist-credentials: false` on actions/checkout"
    ]


def test_as_one_user_passk_says_in_one_line_that_the_token_is_readable(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
) -> None:
    repo, base, _head = project(shared, {})
    head = stealing_head(repo)
    persist(repo, "v4", shared)
    attack_log = shared / "attack.json"
    got = run_action(repo, shared, fake, base, head, {"ATTACK_LOG": str(attack_log)})

    # No boundary between passk's user and the agent: the agent reads it, and the
    # log says so, naming the file and the fix (docs/threat-model.md).
    assert json.loads(attack_log.read_text()) == {str(repo / ".git" / "config"): "token"}
    assert credential_lines(got["log"]) == [
        "::warning title=passk::the checkout's git config holds a token that agents can "
        f"read: {KEY} in {repo}/.git/config (they run as passk's own user, so passk cannot "
        "hide it); set `persist-credentials: false` on actions/checkout"
    ]
    assert got["code"] == 1, got["log"]


@pytest.fixture(params=["same-user", "agent-user"])
def either_user(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "same-user":
        return {}
    if os.geteuid() != 0:
        pytest.skip("agents run as another user only when passk is root (the container action)")
    return {"PASSK_AGENT_USER": "nobody"}


@pytest.mark.shares("agent-users")
def test_without_persisted_credentials_nothing_is_said_or_changed(
    shared: Path,  # noqa: F811
    fake: FakeGitHub,
    either_user: dict[str, str],
) -> None:
    repo, base, _head = project(shared, either_user)
    head = stealing_head(repo)
    before = modes(repo / ".git", repo / ".git" / "config")
    attack_log = shared / "attack.json"
    got = run_action(repo, shared, fake, base, head, {**either_user, "ATTACK_LOG": str(attack_log)})

    assert json.loads(attack_log.read_text()) == {str(repo / ".git" / "config"): "read"}
    assert credential_lines(got["log"]) == []
    assert modes(repo / ".git", repo / ".git" / "config") == before
    assert got["code"] == 1, got["log"]


# --- finding them, on their own ------------------------------------------------------


def test_stored_credentials_names_each_file_and_ignores_harmless_config(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    repo = GitRepo.discover(repo_dir)
    assert stored_credentials(repo, {"HOME": str(tmp_path)}) == []
    git(repo_dir, "config", "remote.origin.url", "https://github.com/octo-org/refund-agent")
    git(repo_dir, "config", "credential.helper", "cache --timeout=60")
    assert stored_credentials(repo, {"HOME": str(tmp_path)}) == []

    persist(repo_dir, "v4", tmp_path)
    persist(repo_dir, "v6", tmp_path)
    store = tmp_path / "creds"
    store.write_text("https://x-access-token:abc@github.com\n")
    git(repo_dir, "config", "--add", "credential.helper", f"store --file={store}")
    found = [(c.what, c.file) for c in stored_credentials(repo, {"HOME": str(tmp_path)})]
    assert found == [
        (KEY, (repo_dir / ".git" / "config").resolve()),
        (KEY, tmp_path / "runner_temp" / "git-credentials-0b1c2d3e.config"),
        ("credential.helper store", store),
    ]


@pytest.mark.shares("agent-users")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a process as another user")
def test_hidden_even_from_an_owner_and_restored_when_the_run_fails(
    shared: Path,  # noqa: F811
) -> None:
    user = agent_user({"PASSK_AGENT_USER": "nobody"})
    assert user is not None
    repo_dir = shared / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    persist(repo_dir, "v4", shared)
    git_dir = repo_dir / ".git"
    # The agent user owns the git directory: as its owner it could chmod it back.
    os.chown(git_dir, user.uid, user.gid)
    git_dir.chmod(0o2755)
    before = modes(git_dir, git_dir / "config")

    def agent_reads() -> str:
        proc = subprocess.run(
            [agent_user_python(), "-c", f"print(open({str(git_dir / 'config')!r}).read())"],
            user=user.uid, group=user.gid, extra_groups=[], capture_output=True, text=True,
            check=False, cwd="/",
        )  # fmt: skip
        return "PermissionError" if "PermissionError" in proc.stderr else proc.stdout

    assert BASIC in agent_reads()
    repo = GitRepo.discover(repo_dir)
    said: list[str] = []
    hidden = credentials_hidden(repo, user, {}, warn=said.append, note=said.append)
    with pytest.raises(RuntimeError, match="agent crashed"), hidden as found:
        assert [c.file for c in found] == [(git_dir / "config").resolve()]
        assert agent_reads() == "PermissionError"
        assert git_dir.stat().st_uid == 0
        assert stored_credentials(repo, {}) == found  # passk itself still reads it
        raise RuntimeError("agent crashed")
    assert modes(git_dir, git_dir / "config") == before
    assert BASIC in agent_reads()
    assert len(said) == 1


# --- what we tell users to write --------------------------------------------------------


def runs_passk(job: dict[str, Any]) -> bool:
    for step in job.get("steps", []):
        uses, run = str(step.get("uses", "")), str(step.get("run", ""))
        if "passk-action" in uses or uses == "./" or re.search(r"(^|\s)passk\s", run):
            return True
    return False


def test_every_shipped_job_that_runs_passk_checks_out_without_persisting_the_token() -> None:
    seen = 0
    for path in WORKFLOWS:
        for name, job in load_workflow(path)["jobs"].items():
            if not runs_passk(job):
                continue
            for step in job["steps"]:
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    seen += 1
                    where = f"{path.relative_to(CHECKOUT_ROOT)} job {name}"
                    assert (step.get("with") or {}).get("persist-credentials") is False, where
    assert seen >= 6  # the dogfood, pull-request, baseline, imported and both sharded jobs


@pytest.mark.parametrize("doc", ["README.md", "docs/workflows.md"])
def test_every_checkout_in_the_docs_snippets_persists_no_token(doc: str) -> None:
    text = (CHECKOUT_ROOT / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml[^\n]*\n(.*?)```", text, flags=re.DOTALL)
    checkouts = [
        step
        for block in blocks
        for step in re.findall(
            r"- uses: actions/checkout@\S+\n(?:\s+with:.*\n(?:\s{6,}.*\n)*)?", block
        )
    ]
    assert checkouts, doc
    for step in checkouts:
        assert "persist-credentials: false" in step, step


@pytest.mark.shares("agent-users")
@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run agents as another user")
def test_a_token_that_cannot_be_hidden_stops_before_any_agent_runs(
    shared: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = agent_user({"PASSK_AGENT_USER": "nobody"})
    assert user is not None
    repo_dir = shared / "repo"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    held = persist(repo_dir, "v6", shared)
    before = modes(repo_dir / ".git", held)
    repo = GitRepo.discover(repo_dir)

    # RUNNER_TEMP on a read-only mount: its modes cannot change.
    def read_only_mount(fd: int, mode: int) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("passk_action.sides.credentials.os.fchmod", read_only_mount)
    ran: list[str] = []
    hidden = credentials_hidden(repo, user, {}, warn=ran.append, note=ran.append)
    with pytest.raises(UsageError) as caught, hidden:
        ran.append("an agent")
    assert ran == []
    assert caught.value.one_line() == (
        f"{held}: cannot make it unreadable to the agent user nobody, and it holds a token "
        f"({KEY} in {held}): Read-only file system (set `persist-credentials: false` on "
        "actions/checkout)"
    )
    monkeypatch.undo()
    assert modes(repo_dir / ".git", held) == before


@pytest.mark.parametrize("persisted", [True, False])
def test_passk_run_warns_once_when_the_checkout_keeps_a_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], persisted: bool
) -> None:
    # A shard job: `passk run` runs the pull request's agent from the checkout.
    repo = make_repo(tmp_path, {"command": [sys.executable, "agent.py"]})
    if persisted:
        persist(repo, "v4", tmp_path)
    code = cli_main(
        ["run", "--config", str(repo / "passk.yml"), "--out", str(tmp_path / "run.json"),
         "--quiet"]
    )  # fmt: skip
    assert code == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "holds a token" in line]
    assert warnings == (
        [
            "passk: warning: the checkout's git config holds a token that agents can read: "
            f"{KEY} in {repo}/.git/config (the passk CLI does not hide it); set "
            "`persist-credentials: false` on actions/checkout"
        ]
        if persisted
        else []
    )
