"""An agent cannot read passk's initial environment or write to passk's stdout via /proc.

``/proc/<parent>/environ`` holds the token passk started with (removing it
from ``os.environ`` changes nothing there), and ``/proc/<parent>/fd/1`` is the
job log, where a line is a workflow command.  Two paths close them:

- passk not root: passk is non-dumpable, so an agent of the same user is
  refused both files.  Tested with a parent running as ``nobody``;
- passk root (the container action): agents run as ``PASSK_AGENT_USER``.
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

import pytest

from passk_action.agents.identity import AGENT_USER_ENV, agent_user
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import ProcessAgent, ProcessAgentSpec
from passk_action.core.model import Phase, Row, Version
from passk_action.errors import UsageError
from support.pythons import agent_user_python, copy_sources

# .ci/run runs these again in a fresh venv, from a private folder (tests/support/pythons.py).
pytestmark = [pytest.mark.any_python, pytest.mark.shares("agent-users")]

# The agent reports what it could reach of its parent, and who it runs as.
PROBE = r"""
import json, os, sys
parent = os.getppid()
found = {"uid": str(os.getuid())}
try:
    with open(f"/proc/{parent}/environ", "rb") as handle:
        data = handle.read()
    found["environ"] = "token" if b"SEKRIT-TOKEN" in data else f"read {len(data)} bytes"
except OSError as exc:
    found["environ"] = type(exc).__name__
try:
    with open(f"/proc/{parent}/fd/1", "w") as handle:
        handle.write("::warning::written by the agent\n")
    found["stdout"] = "written"
except OSError as exc:
    found["stdout"] = type(exc).__name__
home = os.environ.get("HOME", "")
try:
    with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "scratch"), "w") as handle:
        handle.write("ok")
    found["tmp"] = "writable"
except OSError as exc:
    found["tmp"] = type(exc).__name__
json.dump({"decision": "deny", "checks": found}, sys.stdout)
"""

# Plays passk as an unprivileged user: the token in its initial environment,
# one attempt of the probe through ProcessAgent (which hardens the process).
PARENT = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import ProcessAgent, ProcessAgentSpec
from passk_action.core.model import Phase, Row, Version
os.environ.pop("GITHUB_TOKEN")  # as the action does: gone from os.environ, not from /proc
# Our stdout, the job log: a file of our own user, which the agent's user could open.
import tempfile
fd, log = tempfile.mkstemp()
os.dup2(fd, 1)
spec = ProcessAgentSpec(command=(sys.executable, sys.argv[2]), cwd=Path(sys.argv[3]), timeout_s=20)
request = AttemptRequest(Row("r1", {}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
attempt = ProcessAgent(spec, dict(os.environ)).run(request)
sys.stdout.flush()
log_text = Path(log).read_text()
os.unlink(log)
report = {"error": attempt.detail, "checks": dict(attempt.checks), "log": log_text}
print(json.dumps(report), file=sys.stderr)
"""

needs_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0, reason="needs root on Linux"
)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder every user can read (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="passk-isolation-"))
    path.chmod(0o755)
    (path / "probe.py").write_text(PROBE, encoding="utf-8")
    (path / "parent.py").write_text(PARENT, encoding="utf-8")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@needs_root
def test_an_unprivileged_passk_hides_its_proc_files_from_its_agents(shared_dir: Path) -> None:
    """The non-root path, for real: passk (here, its stand-in) runs as nobody."""
    nobody = pwd.getpwnam("nobody")
    python = agent_user_python()
    # passk's code as nobody: a copy it can read (the clone may sit in a private folder).
    sources = copy_sources(shared_dir)
    env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "SEKRIT-TOKEN"}
    done = subprocess.run(
        [python, str(shared_dir / "parent.py"), str(sources), str(shared_dir / "probe.py"),
         str(shared_dir)],
        user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[], env=env, cwd=shared_dir,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.splitlines()[-1])
    assert report["checks"]["uid"] == str(nobody.pw_uid)  # the same user as its parent
    assert report["checks"]["environ"] == "PermissionError"
    assert report["checks"]["stdout"] == "PermissionError"
    assert report["log"] == ""


@needs_root
def test_a_root_passk_runs_agents_as_the_agent_user(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nobody = pwd.getpwnam("nobody")
    env = {**os.environ, AGENT_USER_ENV: "nobody", "GITHUB_TOKEN": "SEKRIT-TOKEN"}
    spec = ProcessAgentSpec(
        command=(agent_user_python(), str(shared_dir / "probe.py")),
        cwd=shared_dir,
        timeout_s=20,
        user=agent_user(env),
    )
    request = AttemptRequest(Row("r1", {}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
    attempt = ProcessAgent(spec, env).run(request)
    assert attempt.decision == "deny", attempt.detail
    checks = dict(attempt.checks)
    assert checks == {
        "uid": str(nobody.pw_uid),
        "environ": "PermissionError",
        "stdout": "PermissionError",
        "tmp": "writable",
    }


def test_agent_user_is_validated() -> None:
    assert agent_user({}) is None
    assert agent_user({AGENT_USER_ENV: ""}) is None
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert agent_user({AGENT_USER_ENV: me}) is None  # already that user
    with pytest.raises(UsageError, match="no user 'no-such-user-here'"):
        agent_user({AGENT_USER_ENV: "no-such-user-here"})
    if os.geteuid() == 0:
        user = agent_user({AGENT_USER_ENV: "nobody"})
        assert user is not None and user.uid == pwd.getpwnam("nobody").pw_uid
        assert user.home.stat().st_uid == user.uid and user.home.stat().st_mode & 0o777 == 0o700
    else:
        with pytest.raises(UsageError, match="cannot start agents as"):
            agent_user({AGENT_USER_ENV: "nobody"})


@needs_root
def test_root_is_no_agent_user() -> None:
    # Root running as root: "root" is passk's own user, so nothing changes.
    assert agent_user({AGENT_USER_ENV: "root"}) is None


def test_the_base_export_is_readable_by_the_agent_user(tmp_path: Path) -> None:
    from passk_action.sides.gitrepo import GitRepo

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / "agent.py").write_text("print(1)\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "c"], check=True, env=env)
    repo = GitRepo(tmp_path)
    with repo.export("HEAD") as tree:
        assert tree.parent.stat().st_mode & 0o777 == 0o755
        assert (tree / "agent.py").stat().st_mode & 0o004
