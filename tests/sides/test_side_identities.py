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
    CANDIDATE_USER_ENV,
    agent_user,
    baseline_env,
    spawn_as_agent,
)
from passk_action.agents.reaper import REAPER
from passk_action.core.sequential import RELATIVE
from passk_action.errors import UsageError
from support.agent_project import (
    CONFIRMED_RELATIVE,
    REPO,
    TOKEN,
    make_repo,
    record_baseline,
    run_action,
    write_agent,
)
from support.cross_user_attacks import ATTACKER, PLANT, REFUSED, VICTIM
from support.fakegithub import FakeGitHub
from support.once import once
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


def recorded_base(
    shared: Path, factory: pytest.TempPathFactory, name: str, agent: str = ""
) -> tuple[Path, str]:
    """The base commit, its baseline recorded with ``agent``'s extra lines, at shared/repo.

    The default rule: the attack's aim is a baseline that "varies too", which it lets
    pass; it measures r0 60 times when the baseline is recorded, so the recording is made
    once per test run (``support.once``), and each test works on its own copy.
    """

    def build(folder: Path) -> str:
        repo = make_repo(folder, {"command": [agent_user_python(), "agent.py"]}, RELATIVE)
        write_agent(repo, extra=agent)
        os.environ["XDG_CACHE_HOME"] = str(folder / "recording")  # not root's own ~/.cache
        try:
            return record_baseline(repo)
        finally:
            del os.environ["XDG_CACHE_HOME"]

    made, base = once(factory, name, build)
    shutil.copytree(made / "repo", shared / "repo", symlinks=True)
    return shared / "repo", str(base)


def pull_request(
    shared: Path, factory: pytest.TempPathFactory, *, attack: bool
) -> tuple[Path, str, str]:
    """Base: the agent denies every row (r0 is must-not-break); the pull request's
    approves r0, a real regression, and with ``attack`` plants the .pth."""
    repo, base = recorded_base(shared, factory, "side-identities-pth")
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra=PLANT if attack else "", answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0" + (", and poison HOME" if attack else ""))
    # The agent users must read the checkout (the candidate runs from its own export).
    for path in [repo, *repo.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else 0o644)
    return repo, base, head


def gate(
    shared: Path, factory: pytest.TempPathFactory, env: dict[str, str], *, attack: bool
) -> tuple[dict[str, Any], str]:
    repo, base, head = pull_request(shared, factory, attack=attack)
    run_env = {**env, "ATTACK_LOG": str(shared / "attack.jsonl")}
    for log in ("asked.jsonl", "attack.jsonl"):  # appended to by both users
        (shared / log).touch(mode=0o666)
        (shared / log).chmod(0o666)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(repo, shared, fake, base, head, run_env)
        body = fake.comment_bodies(7)[0]
    return got, body


"""The blocker's evidence when every side-by-side answer of the baseline was right and every
one of the candidate wrong (the default rule, relative)."""


def baseline_confirmations(got: dict[str, Any]) -> list[tuple[str, int]]:
    return [(row, n) for row, n, version in got["asked"] if version == "baseline"]


def test_a_pth_in_the_candidates_home_never_reaches_the_baseline(
    shared: Path, tmp_path_factory: pytest.TempPathFactory, users: dict[str, str]
) -> None:
    got, body = gate(shared, tmp_path_factory, users, attack=True)

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
    assert any(row == "r0" for row, _ in baseline_confirmations(got))
    assert got["code"] == 1, got["log"]
    assert CONFIRMED_RELATIVE in body and "varies" not in body, body
    assert (
        f"the candidate agent runs as {users[AGENT_USER_ENV]}, the baseline agent as "
        f"{users[BASELINE_USER_ENV]}" in got["log"]
    )


def test_control_the_same_pull_request_without_the_pth(
    shared: Path, tmp_path_factory: pytest.TempPathFactory, users: dict[str, str]
) -> None:
    got, body = gate(shared, tmp_path_factory, users, attack=False)
    assert got["code"] == 1, got["log"]
    assert CONFIRMED_RELATIVE in body, body


def test_control_one_user_for_both_sides_is_what_the_attack_needs(
    shared: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    one = {AGENT_USER_ENV: _existing("nobody")}
    got, body = gate(shared, tmp_path_factory, one, attack=True)
    # The poison reached the baseline: r0 no longer blocks.
    assert got["code"] == 0, got["log"]
    assert CONFIRMED_RELATIVE not in body, body
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
        CANDIDATE_USER_ENV: "nobody",  # the baseline's agents are kept from its places
    }


# -- places the environment names (a cache folder under /tmp) ---------------------------------

CACHED = """
cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "refunds")
try:
    with open(os.path.join(cache, "answers.json")) as handle:
        cached = json.load(handle)
except (OSError, ValueError):
    cached = {}
{poison}
if request["id"] not in cached:
    cached[request["id"]] = json.load(open("answers.json")).get(request["id"], "deny")
    try:
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "answers.json"), "w") as handle:
            json.dump(cached, handle)
    except OSError:
        pass
print(json.dumps({"decision": cached[request["id"]]}))
sys.exit(0)
"""
"""An honest agent that keeps its answers in a cache under ``XDG_CACHE_HOME``, as many do."""

POISON_THE_CACHE = """
if os.environ.get("PASSK_VERSION") == "candidate":
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "answers.json"), "w") as handle:
        json.dump({"r0": "approve"}, handle)
    with open(os.environ["ATTACK_LOG"], "a") as handle:
        handle.write(json.dumps({"poisoned": cache}) + "\\n")
"""
"""The pull request's agent leaves, where the cache is, the answer it wants r0 to get."""


def cached_pull_request(
    shared: Path, factory: pytest.TempPathFactory, *, attack: bool
) -> tuple[Path, str, str]:
    """Base: the caching agent denies every row; the pull request's approves r0, and with
    ``attack`` writes that answer into the cache first."""
    extra = CACHED.replace("{poison}", "")
    repo, base = recorded_base(shared, factory, "side-identities-cache", extra)
    git(repo, "checkout", "-q", "-b", "feature")
    poison = POISON_THE_CACHE if attack else ""
    write_agent(repo, extra=CACHED.replace("{poison}", poison), answers={"r0": "approve"})
    head = commit(repo, "candidate: approve r0" + (", and poison the cache" if attack else ""))
    for path in [repo, *repo.rglob("*")]:
        if ".git" not in path.parts:
            path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else 0o644)
    return repo, base, head


def cached_gate(
    shared: Path, factory: pytest.TempPathFactory, env: dict[str, str], *, attack: bool
) -> tuple[dict[str, Any], str]:
    repo, base, head = cached_pull_request(shared, factory, attack=attack)
    run_env = {**env, "ATTACK_LOG": str(shared / "attack.jsonl")}
    for log in ("asked.jsonl", "attack.jsonl"):
        (shared / log).touch(mode=0o666)
        (shared / log).chmod(0o666)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(repo, shared, fake, base, head, run_env)
        body = fake.comment_bodies(7)[0]
    return got, body


def test_a_cache_folder_the_step_names_under_tmp_never_reaches_both_sides(
    shared: Path, tmp_path_factory: pytest.TempPathFactory, users: dict[str, str]
) -> None:
    cache = shared / "cache"  # shared is as /tmp is: every user may write it
    got, body = cached_gate(
        shared, tmp_path_factory, {**users, "XDG_CACHE_HOME": str(cache)}, attack=True
    )

    # The candidate wrote its answer into a cache folder of its own, not the one named.
    poisoned = [json.loads(line)["poisoned"] for line in (shared / "attack.jsonl").open()]
    candidate_uid = pwd.getpwnam(users[AGENT_USER_ENV]).pw_uid
    assert poisoned and all(f"/passk-agent-{candidate_uid}-" in p for p in poisoned), poisoned
    assert not cache.exists()
    # The baseline's confirmation attempts answered from their own cache: r0 blocks.
    assert any(row == "r0" for row, _ in baseline_confirmations(got))
    assert got["code"] == 1, got["log"]
    assert CONFIRMED_RELATIVE in body and "varies" not in body, body
    warned = [line for line in got["log"].splitlines() if "the environment names" in line]
    assert len(warned) == 1, got["log"]
    assert "places the other agent user could write too, so no agent gets them: " in warned[0]
    assert f"XDG_CACHE_HOME={cache} (each agent gets a folder of its own)" in warned[0]


def test_control_the_same_pull_request_without_the_poison(
    shared: Path, tmp_path_factory: pytest.TempPathFactory, users: dict[str, str]
) -> None:
    env = {**users, "XDG_CACHE_HOME": str(shared / "cache")}
    got, body = cached_gate(shared, tmp_path_factory, env, attack=False)
    assert got["code"] == 1, got["log"]
    assert CONFIRMED_RELATIVE in body, body


def test_control_one_user_for_both_sides_shares_the_cache_and_the_poison_works(
    shared: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    one = {AGENT_USER_ENV: _existing("nobody"), "XDG_CACHE_HOME": str(shared / "cache")}
    got, body = cached_gate(shared, tmp_path_factory, one, attack=True)
    # One user, no boundary: the baseline read the candidate's answer, r0 no longer blocks.
    assert (shared / "cache" / "refunds" / "answers.json").exists()
    assert got["code"] == 0, got["log"]
    assert CONFIRMED_RELATIVE not in body, body


def agent_envs(env: dict[str, str], users: dict[str, str]) -> dict[str, dict[str, str]]:
    """The environment each side's process gets, as printed by the process itself."""
    seen: dict[str, dict[str, str]] = {}
    show = [agent_user_python(), "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
    for side, side_env in (("candidate", users), ("baseline", baseline_env(users))):
        proc = spawn_as_agent(show, agent_user(side_env), cwd=Path("/"), env=env)
        out, err = proc.communicate(timeout=60)
        REAPER.release(proc.pid)
        assert proc.returncode == 0, err
        seen[side] = json.loads(out)
    return seen


@pytest.fixture
def tmp() -> Iterator[Path]:
    """A folder as ``/tmp`` is: everyone may write it, and rename only their own names."""
    path = Path(tempfile.mkdtemp(prefix="passk-sticky-test-"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


STEP_FOLDERS = (
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "HF_HOME", "PIP_CACHE_DIR", "UV_CACHE_DIR", "npm_config_cache", "TRANSFORMERS_CACHE",
    "TORCH_HOME", "PYTHONUSERBASE",
)  # fmt: skip


def test_each_agent_user_gets_its_own_folders_whatever_the_step_names(
    tmp: Path, users: dict[str, str]
) -> None:
    made = tmp / "made-by-the-candidate"  # what a candidate process left in /tmp
    made.mkdir(mode=0o755)
    os.chown(made, pwd.getpwnam(users[AGENT_USER_ENV]).pw_uid, -1)
    link = tmp / "link"
    link.symlink_to(made)
    env = {
        "PATH": f"/usr/bin:{tmp}/bin:/bin",
        **{name: str(tmp / name.lower()) for name in STEP_FOLDERS},
        "TMPDIR": str(tmp),
        "TEMP": str(tmp / "temp"),
        "MY_CACHE": str(tmp / "mine"),  # a name passk cannot know: dropped
        "THROUGH_A_LINK": str(link / "models"),
        "PYTHONPATH": f"{tmp}/lib:/usr/lib/python3/dist-packages",
    }
    seen = agent_envs(env, users)
    candidate, baseline = seen["candidate"], seen["baseline"]
    own = {"candidate": agent_user(users), "baseline": agent_user(baseline_env(users))}
    for name in (*STEP_FOLDERS, "TMPDIR", "TEMP"):
        mine, theirs = candidate[name], baseline[name]
        assert mine != env[name] and theirs != env[name] and mine != theirs, name
        for side, value in (("candidate", mine), ("baseline", theirs)):
            user = own[side]
            assert user is not None and value.startswith(str(user.home)), (name, value)
    for side in (candidate, baseline):
        assert "MY_CACHE" not in side
        assert side["PATH"] == "/usr/bin:/bin"
        assert side["PYTHONPATH"] == "/usr/lib/python3/dist-packages"
    # The candidate's own folder, even reached through a link, is its own; not the baseline's.
    assert candidate["THROUGH_A_LINK"] == str(link / "models")
    assert "THROUGH_A_LINK" not in baseline


def test_control_a_place_no_agent_user_can_change_reaches_both_as_it_is(
    tmp: Path, users: dict[str, str]
) -> None:
    models = tmp / "models"  # a read-only cache an earlier step (root) filled
    models.mkdir(mode=0o755)
    (models / "weights.bin").write_bytes(b"w")
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_HOME": str(models),
        "XDG_CACHE_HOME": str(models),
        "MODEL_FILE": str(models / "weights.bin"),
        "NOT_YET": str(models / "not-made-yet"),
        "LOG_TO": "/dev/null",
        "NOT_A_PATH": "gpt-4o-mini",
        "A_URL": f"file://{tmp}/x",
    }
    seen = agent_envs(env, users)
    for side in seen.values():
        assert {name: side[name] for name in env} == env
