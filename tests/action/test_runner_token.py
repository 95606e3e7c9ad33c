"""The runner variant's step keeps no shell alive with the token (issue 21 route 1).

``runner/action.yml`` hands the token to passk in its step's ``env:``; the runner
runs the step as a bash script, and that bash holds the step's environment for as
long as it lives (FACTS.md H3).  Started without ``exec``, it stays alive as
passk's parent, and an agent of the job's user reads the token from its
``/proc/<pid>/environ``.  With ``exec`` passk replaces it, and passk is not
dumpable.

The test runs the step's own script from the file, as the runner would, as an
unprivileged user (the hosted runner's job user is not root; root reads every
process, FACTS.md H1, which is what the two-job mode is for): the whole of
``passk action`` gates a pull request against the fake GitHub, and the pull
request's agent walks up its ancestors reading each one's environment.  The
control runs the step's old line, without ``exec``, and the same agent finds the
token: the test can fail.
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

from support.fakegithub import SPECS_DIR, FakeGitHub
from support.pull_request_repo import CONFIG, REPO, commit, git, make_template
from support.pythons import agent_user_python, copy_dependencies, copy_sources
from support.workflows import RUNNER_ACTION, bash_step, evaluate, load

TOKEN = "ghs_runnerExecTokenNeverInAnEnviron42"

# The pull request's agent: answers right, and reports every ancestor whose
# environment it could read, and whether the token was there.
SPY = r"""
import json, os, sys
request = json.loads(sys.stdin.read())
token = os.environ["SPY_LOOKS_FOR"][::-1].encode()  # passk drops a variable holding the token
seen, pid = [], os.getppid()
while pid > 1 and pid != int(os.environ["SPY_STOP_AT"]):  # the test itself: not the runner's
    with open(f"/proc/{pid}/comm") as handle:
        comm = handle.read().strip()
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            state = "token" if token in handle.read() else "clean"
    except OSError as exc:
        state = type(exc).__name__
    seen.append([pid, comm, state])
    with open(f"/proc/{pid}/status") as handle:
        pid = int(next(l for l in handle if l.startswith("PPid:")).split()[1])
with open(os.environ["SPY_REPORT"], "a") as handle:
    handle.write(json.dumps(seen) + "\n")
answers = {"r1": "approve", "r2": "deny", "r3": "approve", "r4": "deny"}
print(json.dumps({"decision": answers[request["id"]]}))
"""

needs_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="needs root on Linux, to run the step as an unprivileged user",
)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the unprivileged user can use (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="passk-runner-token-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def passk_step(shared: Path, python: str, *, exec_line: bool) -> tuple[str, dict[str, str]]:
    """The passk step of runner/action.yml: its script and env, as the runner evaluates them.

    ``exec_line=False`` puts back the step's old last line (``"$PASSK_BIN" action``).
    """
    action = load(RUNNER_ACTION)
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "passk"]
    sources = copy_sources(shared)
    deps = copy_dependencies(shared, python)
    # The install step's venv console script, for this interpreter: passk, no shell between.
    passk_bin = shared / "passk"
    passk_bin.write_text(
        f"#!{python}\nimport sys\nsys.path[:0] = [{str(sources)!r}, {str(deps)!r}]\n"
        "from passk_action.program import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    passk_bin.chmod(0o755)
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    context = {f"inputs.{name}": value for name, value in inputs.items()}
    context.update({"github.token": TOKEN, "inputs.github-token": TOKEN})
    context["steps.install.outputs.bin"] = str(passk_bin)
    context["steps.install.outputs.agent-path"] = str(sources)
    script = evaluate(step["run"], context)
    if not exec_line:
        assert 'exec "$PASSK_BIN" action' in script
        script = script.replace('exec "$PASSK_BIN" action', '"$PASSK_BIN" action')
    env = {k: evaluate(str(v), context) for k, v in step["env"].items()}
    assert env["INPUT_GITHUB-TOKEN"] == TOKEN
    return script, env


def pull_request(shared: Path, python: str) -> tuple[Path, Path]:
    """A repository owned by the unprivileged user, whose pull request's agent is the spy;
    returns the repository and the event payload."""
    repo = make_template(shared / "repo")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "spy.py").write_text(SPY, encoding="utf-8")
    config: dict[str, Any] = {**CONFIG, "agent": {"command": [python, "spy.py"], "timeout_s": 30}}
    (repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    head = commit(repo, "the spy")
    payload = json.loads((SPECS_DIR / "events" / "pull_request.opened.json").read_text("utf-8"))
    pr = payload["pull_request"]
    payload["number"] = pr["number"] = 7
    pr["head"]["sha"], pr["base"]["sha"] = head, base
    event = shared / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return repo, event


def run_step(shared: Path, fake: FakeGitHub, *, exec_line: bool) -> tuple[int, list[Any], str]:
    """The passk step as the runner runs it, as ``nobody``; (exit code, ancestors seen, log)."""
    nobody = pwd.getpwnam("nobody")
    python = agent_user_python()
    repo, event = pull_request(shared, python)
    script, step_env = passk_step(shared, python, exec_line=exec_line)
    (shared / "home").mkdir()
    report = shared / "report.jsonl"
    report.touch()
    for path in [shared, *shared.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(shared / "home"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(shared / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(shared / "summary.md"),
        "SPY_REPORT": str(report),
        "SPY_LOOKS_FOR": TOKEN[::-1],
        "SPY_STOP_AT": str(os.getpid()),
        **step_env,
    }
    done = subprocess.run(
        bash_step(script, shared / "step.sh"),
        user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    seen = [json.loads(line) for line in report.read_text("utf-8").splitlines()]
    return done.returncode, seen, done.stdout + done.stderr


@pytest.mark.shares("agent-users")
@needs_root
def test_the_step_execs_passk_so_no_ancestor_of_the_agent_shows_the_token(
    shared: Path, fake: FakeGitHub
) -> None:
    code, seen, log = run_step(shared, fake, exec_line=True)
    assert code == 0, log
    assert len(seen) == 8  # every main attempt of the four rows, k = 2
    for ancestors in seen:
        # passk, the agent's parent and its only ancestor up to the runner (this test),
        # is not dumpable: refused.  No shell is left between.
        assert [(comm, state) for _, comm, state in ancestors] == [("passk", "PermissionError")]
    assert fake.check_runs[0]["conclusion"] == "success"  # passk ran the whole gate
    assert fake.violations == []


@pytest.mark.shares("agent-users")
@needs_root
def test_control_the_old_line_leaves_a_bash_holding_the_token(
    shared: Path, fake: FakeGitHub
) -> None:
    code, seen, log = run_step(shared, fake, exec_line=False)
    assert code == 0, log
    assert len(seen) == 8
    for ancestors in seen:
        assert [(comm, state) for _, comm, state in ancestors] == [
            ("passk", "PermissionError"),
            ("bash", "token"),  # the step's script, still alive, holding INPUT_GITHUB-TOKEN
        ]
