"""``spawn_as_agent``: the one way passk starts code under test drops every privilege it can.

Attempts (one process each), worker pools and ``agent.setup`` commands all
start through it.  As root with an agent user (the container action), the
child must run as that user with none of root's groups, in a session of its
own, and be unable to become root again; the control runs the same probe
without an agent user and is root.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.identity import AGENT_USER_ENV, agent_user, spawn_as_agent
from passk_action.agents.reaper import REAPER
from support.paths import REPO
from support.pythons import agent_user_python

PROBE = r"""
import json, os
found = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
         "groups": sorted(os.getgroups()), "sid": os.getsid(0), "pid": os.getpid()}
try:
    os.setuid(0)
    found["setuid0"] = "became root"
except PermissionError:
    found["setuid0"] = "refused"
try:
    with open(os.environ["SECRET_FILE"]) as handle:
        found["secret"] = handle.read()
except PermissionError:
    found["secret"] = "refused"
print(json.dumps(found))
"""

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root can start a process as another user"
)


def _nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")


def probe(tmp_path: Path, as_agent_user: bool) -> dict[str, Any]:
    secret = tmp_path / "secret"
    secret.write_text("the token", encoding="utf-8")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)
    user = agent_user({AGENT_USER_ENV: "nobody"}) if as_agent_user else None
    proc = spawn_as_agent(
        [agent_user_python(), "-c", PROBE],
        user,
        cwd=tmp_path,
        env={"SECRET_FILE": str(secret), "PATH": os.environ.get("PATH", "")},
        stdin=subprocess.DEVNULL,
    )
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        REAPER.kill_tree(proc.pid)
        REAPER.release(proc.pid)
    assert proc.returncode == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


@pytest.mark.shares("agent-users")
@needs_root
def test_the_agent_user_gets_its_ids_no_groups_its_own_session_and_no_way_back(
    tmp_path: Path,
) -> None:
    nobody = _nobody()
    found = probe(tmp_path, as_agent_user=True)
    assert (found["uid"], found["euid"], found["gid"]) == (nobody.pw_uid, nobody.pw_uid,
                                                             nobody.pw_gid)  # fmt: skip
    assert found["groups"] == []  # none of root's supplementary groups
    assert found["sid"] == found["pid"]  # a session of its own
    assert found["setuid0"] == "refused"
    assert found["secret"] == "refused"


@pytest.mark.shares("agent-users")
@needs_root
def test_control_without_an_agent_user_the_same_probe_is_root(tmp_path: Path) -> None:
    found = probe(tmp_path, as_agent_user=False)
    assert (found["uid"], found["euid"]) == (0, 0)
    assert found["sid"] == found["pid"]  # a session of its own either way
    assert found["setuid0"] == "became root"
    assert found["secret"] == "the token"


def test_every_start_of_code_under_test_goes_through_it() -> None:
    """No other Popen in agents/ or action/ may pass a user: one function drops privileges."""
    package = REPO / "src" / "passk_action"
    starts = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if "extra_groups=" in path.read_text("utf-8")
    ]
    assert starts == ["agents/identity.py"]
