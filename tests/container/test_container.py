"""The action image, run the way the GitHub runner runs a Docker container action.

The runner (``ContainerActionHandler.cs``, FACTS.md D2) mounts the workspace at
``/github/workspace`` and makes it the working directory, mounts the file-command
directory at ``/github/file_commands`` and the event at
``/github/workflow/event.json``, passes every input as ``INPUT_<NAME>`` with
hyphens kept (D1) and runs the image's entrypoint with ``args`` from action.yml.
These tests do exactly that against a real git checkout of the refunds demo and
the fake GitHub on 127.0.0.1, then read what the runner would read: the exit
code, ``GITHUB_OUTPUT`` (parsed with the runner's own rules, C2), the job
summary, and what reached GitHub.

The SDK example (examples/refunds-llm) runs the same way: its setup installs
openai inside the container, as the agent's user, from a package index on
loopback, and its comment must equal the runner variant's golden.

Without a usable Docker engine the module skips; ``run_container.sh`` builds
the image, reports its build time and size, and runs this module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action import __version__

REPO = Path(__file__).resolve().parents[2]
# The code the tests share (tests/support) lives in tests/, beside this directory.
sys.path.insert(0, str(REPO / "tests"))

from support.fakegithub import SPECS_DIR, FakeGitHub, FakePull  # noqa: E402

SKIP_REASON = (
    "Docker engine not available (`docker info` fails): the action image is not built "
    "or run; run tests/container/run_container.sh where Docker runs"
)
IMAGE = os.environ.get("PASSK_CONTAINER_IMAGE", "passk-action:test")
EVENT = SPECS_DIR / "events" / "pull_request.opened.json"
DEMO = REPO / "examples" / "refunds"
TOKEN = "ghs_fakeTokenForTests0123456789"
CANDIDATE_AGENT = '["python3", "agent.py", "--policy", "v2"]'
PRODUCTION_AGENT = '["python3", "agent.py", "--policy", "v1"]'
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Octo Cat",
    "GIT_AUTHOR_EMAIL": "octocat@example.com",
    "GIT_COMMITTER_NAME": "Octo Cat",
    "GIT_COMMITTER_EMAIL": "octocat@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def docker_usable() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        answer = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return answer.returncode == 0


# parallel-safe(agent-users): the image's users run in containers, not beside the host's
# agents (a PID namespace and a filesystem of their own; only tmp_path is mounted).
pytestmark = [
    pytest.mark.skipif(not docker_usable(), reason=SKIP_REASON),
    pytest.mark.shares("docker"),  # one image build, one container at a time
]


@pytest.fixture(scope="module")
def image() -> str:
    """The image under test; built here unless run_container.sh just built it."""
    if os.environ.get("PASSK_CONTAINER_BUILT") != "1":
        build = subprocess.run(
            ["docker", "build", "--network", "host", "-t", IMAGE, str(REPO)],
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        if build.returncode != 0:
            tail = "\n".join((build.stdout + build.stderr).splitlines()[-30:])
            pytest.fail(f"docker build failed (exit {build.returncode}):\n{tail}", pytrace=False)
    return IMAGE


# -- a pull request, checked out the way actions/checkout does ------------------------


@dataclass(frozen=True)
class PullRequestCheckout:
    workspace: Path
    runner_temp: Path
    base_sha: str
    head_sha: str
    merge_sha: str
    number: int
    repository: str

    @property
    def output_file(self) -> Path:
        return self.runner_temp / "_runner_file_commands" / "set_output"

    @property
    def summary_file(self) -> Path:
        return self.runner_temp / "_runner_file_commands" / "step_summary"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def demo_files() -> list[str]:
    """The demo as committed (not whatever local runs left beside it)."""
    listed = git(REPO, "ls-files", "--", "examples/refunds")
    files = [line.removeprefix("examples/refunds/") for line in listed.splitlines()]
    assert ".passk/baseline.json" in files, "the demo's committed baseline is missing"
    return files


@pytest.fixture
def checkout(tmp_path: Path) -> PullRequestCheckout:
    """Base commit: the demo with the production agent and its committed baseline.

    The pull request switches the agent to the candidate prompt (the demo's
    passk.yml as shipped). HEAD is the merge commit, as for refs/pull/N/merge.
    """
    return demo_pull_request(tmp_path)


def demo_pull_request(
    tmp_path: Path, change: Callable[[Path], None] | None = None
) -> PullRequestCheckout:
    """The :func:`checkout` fixture's pull request; ``change`` edits its head commit too."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    git(workspace, "init", "-q", "-b", "main")
    for name in demo_files():
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(DEMO / name, target)
    candidate_config = (DEMO / "passk.yml").read_text(encoding="utf-8")
    assert candidate_config.count(CANDIDATE_AGENT) == 1, "the demo's agent line changed"
    (workspace / "passk.yml").write_text(
        candidate_config.replace(CANDIDATE_AGENT, PRODUCTION_AGENT), encoding="utf-8"
    )
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "Refund agent in production, with its baseline")
    base_sha = git(workspace, "rev-parse", "HEAD")

    git(workspace, "checkout", "-q", "-b", "feature/refund-agent")
    (workspace / "passk.yml").write_text(candidate_config, encoding="utf-8")
    if change is not None:
        change(workspace)
    git(workspace, "commit", "-q", "-am", "Tighten the refund agent prompt")
    head_sha = git(workspace, "rev-parse", "HEAD")

    return pull_request_checkout(tmp_path, workspace, base_sha, head_sha)


def pull_request_checkout(
    tmp_path: Path, workspace: Path, base_sha: str, head_sha: str
) -> PullRequestCheckout:
    """The merge commit checked out, the event and the runner's file-command files."""
    git(workspace, "checkout", "-q", "--detach", base_sha)
    git(workspace, "merge", "-q", "--no-ff", "-m", f"Merge {head_sha} into {base_sha}", head_sha)
    merge_sha = git(workspace, "rev-parse", "HEAD")

    event = json.loads(EVENT.read_text(encoding="utf-8"))
    pull = event["pull_request"]
    pull["head"].update(sha=head_sha, ref="feature/refund-agent")
    pull["base"].update(sha=base_sha, ref="main")
    runner_temp = tmp_path / "runner_temp"
    for sub in ("_runner_file_commands", "_github_workflow", "_github_home"):
        (runner_temp / sub).mkdir(parents=True)
    (runner_temp / "_github_workflow" / "event.json").write_text(
        json.dumps(event), encoding="utf-8"
    )
    checkout = PullRequestCheckout(
        workspace,
        runner_temp,
        base_sha,
        head_sha,
        merge_sha,
        int(event["number"]),
        str(event["repository"]["full_name"]),
    )
    # The runner creates both files empty before the step starts.
    checkout.output_file.touch()
    checkout.summary_file.touch()
    return checkout


@pytest.fixture
def fake(checkout: PullRequestCheckout) -> Iterator[FakeGitHub]:
    pull = FakePull(
        number=checkout.number,
        head_sha=checkout.head_sha,
        base_sha=checkout.base_sha,
        base_ref="main",
        head_ref="feature/refund-agent",
    )
    with FakeGitHub(token=TOKEN, repository=checkout.repository, pull=pull) as server:
        yield server


def action_inputs(**overrides: str) -> dict[str, str]:
    """Every input, defaults from action.yml, as the runner sets them (D1: hyphens kept)."""
    spec = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["inputs"]
    values = {name: str(entry.get("default", "")) for name, entry in spec.items()}
    values["github-token"] = TOKEN  # the runner evaluates ${{ github.token }}
    values.update({name.replace("_", "-"): value for name, value in overrides.items()})
    return {f"INPUT_{name.upper()}": value for name, value in values.items()}


def run_action(
    image: str,
    checkout: PullRequestCheckout,
    api_url: str,
    step_env: dict[str, str] | None = None,
    **inputs: str,
) -> subprocess.CompletedProcess[str]:
    env = {
        **(step_env or {}),  # the workflow step's `env:`, passed into the container
        **action_inputs(**inputs),
        "HOME": "/github/home",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_OUTPUT": "/github/file_commands/set_output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_REPOSITORY": checkout.repository,
        "GITHUB_SHA": checkout.merge_sha,
        "GITHUB_REF": f"refs/pull/{checkout.number}/merge",
        "GITHUB_REF_NAME": f"{checkout.number}/merge",
        "GITHUB_HEAD_REF": "feature/refund-agent",
        "GITHUB_BASE_REF": "main",
        "GITHUB_API_URL": api_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "7001",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_ACTOR": "octocat",
        "GITHUB_WORKFLOW": "passk",
        "GITHUB_JOB": "passk",
        "RUNNER_TEMP": "/github/runner_temp",
        "RUNNER_OS": "Linux",
    }
    mounts = {
        checkout.workspace: "/github/workspace",
        checkout.runner_temp / "_runner_file_commands": "/github/file_commands",
        checkout.runner_temp / "_github_workflow": "/github/workflow",
        checkout.runner_temp / "_github_home": "/github/home",
        checkout.runner_temp: "/github/runner_temp",
    }
    command = ["docker", "run", "--rm", "--network", "host", "-w", "/github/workspace"]
    for host, inside in mounts.items():
        command += ["-v", f"{host}:{inside}"]
    for name, value in env.items():
        command += ["-e", f"{name}={value}"]
    command += [image, "action"]  # action.yml: runs.args
    return subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)


def parse_env_file(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it (FileCommandManager.EnvFileKeyValuePairs, C2)."""
    lines = text.replace("\r\n", "\n").split("\n")
    values: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if heredoc >= 0 and (equals < 0 or heredoc < equals):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            assert name and delimiter, f"invalid heredoc line {line!r}"
            body: list[str] = []
            while index < len(lines) and lines[index] != delimiter:
                body.append(lines[index])
                index += 1
            assert index < len(lines), f"Matching delimiter not found {delimiter!r}"
            index += 1
            values[name] = "\n".join(body)
        else:
            assert equals > 0, f"invalid GITHUB_OUTPUT line {line!r}"
            values[line[:equals]] = line[equals + 1 :]
    return values


def explain(done: subprocess.CompletedProcess[str]) -> str:
    out, err = done.stdout[-4000:], done.stderr[-4000:]
    return f"exit {done.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"


def host_path(checkout: PullRequestCheckout, reported: str) -> Path:
    """A path the action reported, as seen from the runner (container paths translated)."""
    inside = Path(reported)
    if inside.is_absolute():
        assert inside.is_relative_to("/github/workspace"), f"{reported} is outside the workspace"
        return checkout.workspace / inside.relative_to("/github/workspace")
    return checkout.workspace / inside


# -- tests ----------------------------------------------------------------------


def test_image_answers_its_version(image: str) -> None:
    done = subprocess.run(
        ["docker", "run", "--rm", image, "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, explain(done)
    assert done.stdout.strip() == f"passk {__version__}"


def test_image_follows_the_runner_contract(image: str) -> None:
    inspected = subprocess.run(
        ["docker", "image", "inspect", image], capture_output=True, text=True, check=True
    )
    config: dict[str, Any] = json.loads(inspected.stdout)[0]["Config"]
    assert config["Entrypoint"] == ["passk"]
    assert config["Cmd"] == ["--help"]
    assert config.get("User", "") in ("", "root"), "D2: no USER instruction"
    assert config.get("WorkingDir", "") in ("", "/"), "D2: no WORKDIR instruction"
    probe = (
        "for tool in gcc cc make; do command -v $tool && exit 3; done; "
        "git --version && git config --system --get-all safe.directory"
    )
    done = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "sh", image, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, "no compilers or build tools in the final image\n" + explain(done)
    assert done.stdout.splitlines()[-1] == "*"


def test_pull_request_gate_as_the_runner_runs_it(
    image: str, checkout: PullRequestCheckout, fake: FakeGitHub
) -> None:
    done = run_action(image, checkout, fake.url)

    # The demo's candidate loses must-not-break high-value rows: the gate fails.
    assert done.returncode == 1, explain(done)
    assert "Traceback" not in done.stdout + done.stderr
    outputs = parse_env_file(checkout.output_file.read_text(encoding="utf-8"))
    declared = set(yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))["outputs"])
    # `measured-run` belongs to `mode: measure` alone; a gate writes every other output.
    assert set(outputs) == declared - {"measured-run"}, explain(done)
    assert outputs["passed"] == "false"
    assert outputs["reused"] == "false", "the first run on this head commit runs the agent"
    for name in ("mean-accuracy", "pass-k", "flip-rate"):
        assert 0.0 <= float(outputs[name]) <= 1.0, (name, outputs[name])
    assert int(outputs["lost"]) >= 1
    assert int(outputs["gained"]) >= 1, "v2 accepts the partial proof v1 wrongly denied"

    result_file = host_path(checkout, outputs["result"])
    result = json.loads(result_file.read_text(encoding="utf-8"))
    assert result["kind"] == "passk-result"
    assert result["gate"]["passed"] is False
    assert len(result["lost"]) == int(outputs["lost"])
    assert len(result["gained"]) == int(outputs["gained"])
    assert result["reused"] is False
    # The committed baseline matches the dataset: reused as is, the baseline agent
    # ran only to confirm lost rows.
    assert result["executions"]["candidate"] == 65 * 3
    assert result["executions"].get("baseline", 0) == 0
    assert result["executions"].get("baseline_topup", 0) == 0

    summary = checkout.summary_file.read_text(encoding="utf-8")
    assert 0 < len(summary.encode("utf-8")) <= 1024 * 1024, "C1: at most 1 MiB per step"
    assert "pass^k" in summary
    for row_id in result["lost"]:
        assert row_id in summary, f"the summary should name lost row {row_id}"

    assert fake.violations == []
    comments = fake.comment_bodies(checkout.number)
    assert len(comments) == 1
    assert all(row_id in comments[0] for row_id in result["lost"])
    assert len(fake.check_runs) == 1
    check = fake.check_runs[0]
    assert check["name"] == "passk"
    # On the PR's head commit: a check on the merge commit never shows on the pull request.
    assert check["head_sha"] == checkout.head_sha
    assert check["status"] == "completed"
    assert check["conclusion"] == "failure"

    # The base commit was checked out in a worktree; nothing of it may be left behind.
    worktrees = git(checkout.workspace, "worktree", "list", "--porcelain")
    assert worktrees.count("worktree ") == 1, worktrees
    assert git(checkout.workspace, "rev-parse", "HEAD") == checkout.merge_sha
    assert git(checkout.workspace, "diff", "--stat", "HEAD") == "", "tracked files changed"

    # Re-running the job: same gate, the sticky comment is edited, not duplicated.
    checkout.output_file.write_text("", encoding="utf-8")
    checkout.summary_file.write_text("", encoding="utf-8")
    again = run_action(image, checkout, fake.url)
    assert again.returncode == 1, explain(again)
    rerun = parse_env_file(checkout.output_file.read_text(encoding="utf-8"))
    assert (rerun["passed"], rerun["lost"]) == (outputs["passed"], outputs["lost"])
    assert rerun["reused"] == "true", "a re-run replays the recorded verdicts"
    assert len(fake.comment_bodies(checkout.number)) == 1
    assert fake.violations == []


def test_fork_pull_request_gets_a_read_only_token(
    image: str, checkout: PullRequestCheckout
) -> None:
    # E1/E2: every write answers 403; the gate still decides, the report is in the summary.
    event_file = checkout.runner_temp / "_github_workflow" / "event.json"
    event = json.loads(event_file.read_text(encoding="utf-8"))
    event["pull_request"]["head"]["repo"].update(full_name="forker/Hello-World", fork=True)
    event_file.write_text(json.dumps(event), encoding="utf-8")
    pull = FakePull(
        number=checkout.number,
        head_sha=checkout.head_sha,
        base_sha=checkout.base_sha,
        head_repo_full_name="forker/Hello-World",
    )
    with FakeGitHub(
        token=TOKEN, repository=checkout.repository, pull=pull, read_only=True
    ) as server:
        done = run_action(image, checkout, server.url)
    assert done.returncode == 1, explain(done)
    outputs = parse_env_file(checkout.output_file.read_text(encoding="utf-8"))
    assert outputs["passed"] == "false"
    assert "pass^k" in checkout.summary_file.read_text(encoding="utf-8")
    assert server.violations == []
    assert server.comment_bodies(checkout.number) == []
    assert server.check_runs == []
    assert "Traceback" not in done.stdout + done.stderr


def test_bad_input_exits_2_naming_the_input(
    image: str, checkout: PullRequestCheckout, fake: FakeGitHub
) -> None:
    done = run_action(image, checkout, fake.url, comment="sometimes")
    assert done.returncode == 2, explain(done)
    said = done.stdout + done.stderr
    assert "comment" in said and "sometimes" in said, explain(done)
    assert "Traceback" not in said
    assert fake.comment_bodies(checkout.number) == []
    assert fake.check_runs == []


# -- the SDK example: an agent whose setup installs its SDK inside the container ----------

from support.llm_project import (  # noqa: E402
    BLOCKING,
    DAMAGE_DIVERGES,
    KEY,
    SETUP,
    Project,
    check_comment,
    fake_llm_server,
    make_project,
)
from support.package_index import PackageIndex, closure, wheel_from_installed  # noqa: E402


@pytest.fixture(scope="module")
def sdk_index(image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PackageIndex]:
    """A private package index on loopback with openai and what it needs.

    The image does not have the SDK; the agent's setup installs it from here
    (``PIP_INDEX_URL``, as a company with a private index sets it). The wheels
    are this machine's installed distributions repacked, so compiled ones
    (pydantic-core, jiter) only install into a Python of the same version.
    """
    out = tmp_path_factory.mktemp("wheels")
    wheels = [wheel_from_installed(name, out) for name in closure(["openai"])]
    probe = "from pip._vendor.packaging.tags import sys_tags; print(*map(str, sys_tags()))"
    done = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "python3", image, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    supported = set(done.stdout.split())
    for wheel in wheels:
        python, abi, platforms = wheel.name.removesuffix(".whl").split("-")[-3:]
        tags = {
            f"{p}-{a}-{x}"
            for p in python.split(".")
            for a in abi.split(".")
            for x in platforms.split(".")
        }
        if not tags & supported:
            pytest.skip(
                f"the image's Python cannot install {wheel.name}, repacked from this machine's "
                f"Python {sys.version_info.major}.{sys.version_info.minor}: the SDK test needs "
                "both to be the same CPython version"
            )
    served = PackageIndex(wheels)
    yield served
    served.close()


@pytest.fixture
def fake_llm() -> Iterator[Any]:
    """The example's seeded fake provider on loopback, rate limiting like a real key."""
    with fake_llm_server() as server:
        yield server


def test_sdk_example_installs_its_sdk_in_setup_and_the_gate_decides(
    image: str, tmp_path: Path, sdk_index: PackageIndex, fake_llm: Any
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    project: Project = make_project(workspace)
    checkout = pull_request_checkout(tmp_path, workspace, project.base, project.head)
    pull = FakePull(
        number=checkout.number,
        head_sha=checkout.head_sha,
        base_sha=checkout.base_sha,
        base_ref="main",
        head_ref="feature/refund-agent",
    )
    step_env = {
        # `env:` of the workflow step: the key from secrets, the company's index.
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": fake_llm.url,
        "PIP_INDEX_URL": sdk_index.url,
        # Retries enough that a chain of 429 windows under four workers cannot
        # exhaust the SDK's: the answers must not depend on timing.
        "PASSK_EXAMPLE_MAX_RETRIES": "12",
    }
    with FakeGitHub(token=TOKEN, repository=checkout.repository, pull=pull) as fake:
        done = run_action(image, checkout, fake.url, step_env)
    log = done.stdout + done.stderr

    assert done.returncode == 1, explain(done)  # v2 breaks high-value must-not-break rows
    assert "Traceback" not in log
    # Setup ran once per version, as the agent's user (nobody), the baseline's
    # first (in its export of the base commit): each installed the SDK from the
    # index as a user install into its own private HOME.
    groups = re.findall(r"^::group::passk: setup of the (\w+) agent \(1 command\(s\)\)$", log, re.M)
    assert groups == ["baseline", "candidate"], explain(done)
    assert log.count(f"$ {SETUP}") == 2
    assert log.count("Defaulting to user installation because normal site-packages is not") == 2
    assert len(re.findall(r"^  Successfully installed .*\bopenai-", log, re.M)) == 2, explain(done)
    assert "Requirement already satisfied: openai" not in log
    assert sdk_index.requests.count("/simple/openai/") == 2
    fetched = {path.removeprefix("/files/") for path in sdk_index.requests if "/files/" in path}
    assert fetched <= set(sdk_index.wheels) and any(n.startswith("openai-") for n in fetched)
    assert "/simple/passk-action/" not in sdk_index.requests  # the image has the helper

    outputs = parse_env_file(checkout.output_file.read_text(encoding="utf-8"))
    assert outputs["passed"] == "false"
    assert (outputs["gained"], outputs["lost"]) == ("13", "5")
    result = json.loads(host_path(checkout, outputs["result"]).read_text(encoding="utf-8"))
    assert [f["id"] for f in result["gate"]["failures"]] == BLOCKING
    rows = {row["id"]: row for row in result["rows"]}
    for row in BLOCKING:
        assert rows[row]["confirmation"] == "confirmed-regression"
    for row in DAMAGE_DIVERGES:
        assert rows[row]["first_divergent_check"]["check"] == "damage"
    assert result["executions"]["total"] == 2018  # as the runner variant's (the same rounds)
    assert fake_llm.state.counters.answered == 2018
    assert fake_llm.state.counters.rate_limited > 0

    assert fake.violations == []
    (body,) = fake.comment_bodies(checkout.number)
    check_comment(body, project)  # the same comment as the runner variant's, word for word
    (check,) = fake.check_runs
    assert check["conclusion"] == "failure"
    assert re.fullmatch(  # the verdict names its base (issue 28, route 4)
        r"7 must-not-break rows broke: q-034, q-035, q-036 \+4 more · vs main at [0-9a-f]{12}",
        check["output"]["title"],
    ), check["output"]["title"]
    assert KEY not in log and KEY not in body


# -- two identities: the candidate (nobody) and the baseline (passk-baseline) ---------------

from support.cross_user_attacks import ATTACKER, PLANT, REFUSED, VICTIM  # noqa: E402

IDENTITIES = {"PASSK_AGENT_USER": "nobody", "PASSK_BASELINE_USER": "passk-baseline"}


def in_image(image: str, script: str, *args: str, mounts: dict[Path, str] | None = None) -> str:
    """Run ``python3 -c script args`` in the image as its entrypoint would (root, its env)."""
    command = ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3"]
    for host, inside in (mounts or {}).items():
        command += ["-v", f"{host}:{inside}"]
    done = subprocess.run(
        [*command, image, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, explain(done)
    return done.stdout


def test_the_image_runs_each_side_as_its_own_user_in_no_other_group(image: str) -> None:
    probe = (
        "import grp, json, os, pwd\n"
        "from passk_action.agents.identity import side_users\n"
        "users = {}\n"
        "for side, user in zip(('candidate', 'baseline'), side_users(os.environ)):\n"
        "    entry = pwd.getpwuid(user.uid)\n"
        "    groups = sorted({g.gr_gid for g in grp.getgrall() if entry.pw_name in g.gr_mem}"
        " | {entry.pw_gid})\n"
        "    users[side] = [entry.pw_name, entry.pw_uid, groups, entry.pw_gid]\n"
        "print(json.dumps(users))\n"
    )
    users = json.loads(in_image(image, probe))
    assert users["candidate"][0] == "nobody" and users["baseline"][0] == "passk-baseline"
    assert users["candidate"][1] != users["baseline"][1]
    for name, uid, groups, own in users.values():
        assert uid != 0 and groups == [own], (name, groups)  # its own group, no other


# Started as passk starts agents (spawn_as_agent, the image's users): a baseline
# process, then a candidate process that goes for it every way.
SIGNAL_PROBE = """
import json, os, sys, time
from pathlib import Path
from passk_action.agents.identity import baseline_env, agent_user, spawn_as_agent
from passk_action.agents.reaper import REAPER
work = Path("/tmp/probe"); work.mkdir(mode=0o755)
(work / "victim.py").write_text(sys.argv[1]); (work / "attacker.py").write_text(sys.argv[2])
baseline, candidate = agent_user(baseline_env(os.environ)), agent_user(os.environ)
env = {"PATH": os.environ["PATH"]}
victim = spawn_as_agent(["python3", "victim.py"], baseline, cwd=work, env=env)
attacker = spawn_as_agent(["python3", "attacker.py", str(victim.pid), str(baseline.home)],
                          candidate, cwd=work, env=env)
out, err = attacker.communicate(timeout=60)
time.sleep(0.2)
found = json.loads(out)
found["victim alive"] = victim.poll() is None
print(json.dumps(found))
"""


def test_in_the_image_the_candidate_cannot_signal_or_trace_the_baseline(image: str) -> None:
    found = json.loads(in_image(image, SIGNAL_PROBE, VICTIM, ATTACKER))
    assert found == {**REFUSED, "victim alive": True}


# The runner mounts /var/run/docker.sock (FACTS.md H2), root:docker mode 660.
SOCKET_PROBE = """
import json, os, sys
from pathlib import Path
from passk_action.agents.identity import baseline_env, agent_user, spawn_as_agent
code = '''
import errno, socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/var/run/docker.sock")
    print("connected")
except OSError as exc:
    print(errno.errorcode[exc.errno])
'''
found = {}
for side, user in (("candidate", agent_user(os.environ)),
                   ("baseline", agent_user(baseline_env(os.environ))), ("passk", None)):
    proc = spawn_as_agent(["python3", "-c", code], user, cwd=Path("/"),
                          env={"PATH": os.environ["PATH"]})
    found[side] = proc.communicate(timeout=60)[0].decode().strip()
print(json.dumps(found))
"""


def test_no_agent_user_can_open_the_docker_socket(image: str, tmp_path: Path) -> None:
    import socket

    socket_dir = tmp_path / "run"
    socket_dir.mkdir()
    path = socket_dir / "docker.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    try:
        docker_gid = 998  # a docker group's id on the runner: no group in the image
        os.chown(path, 0, docker_gid)
        path.chmod(0o660)
        found = json.loads(in_image(image, SOCKET_PROBE, mounts={path: "/var/run/docker.sock"}))
    finally:
        server.close()
    # The control: passk itself (root) reaches it, so the probe can connect at all.
    assert found == {"candidate": "EACCES", "baseline": "EACCES", "passk": "connected"}


def plant_poison(workspace: Path) -> None:
    """The pull request's agent plants a .pth in its HOME before it answers."""
    agent = workspace / "agent.py"
    text = agent.read_text(encoding="utf-8")
    anchor = "from typing import Any\n"
    assert text.count(anchor) == 1, "the demo agent's imports changed"
    agent.write_text(text.replace(anchor, anchor + PLANT), encoding="utf-8")


def test_a_pth_in_the_candidates_home_never_reaches_the_baseline_in_the_image(
    image: str, tmp_path: Path
) -> None:
    verdicts = {}
    # The attack, its control without the trick, and the attack on one user for both
    # sides (PASSK_BASELINE_USER emptied): there it must work, or this test proves nothing.
    for attack, one_user in ((False, False), (True, False), (True, True)):
        root = tmp_path / f"attack-{attack}-one-user-{one_user}"
        root.mkdir()
        pr = demo_pull_request(root, plant_poison if attack else None)
        pr.runner_temp.chmod(0o777)  # where the attack keeps its log, for this test
        pull = FakePull(number=pr.number, head_sha=pr.head_sha, base_sha=pr.base_sha)
        step_env = {
            "ATTACK_LOG": "/github/runner_temp/attack.jsonl",
            "PASSK_SHARED_ENV": "ATTACK_LOG",  # a log both users append to, on purpose
        }
        if one_user:
            step_env["PASSK_BASELINE_USER"] = ""
        with FakeGitHub(token=TOKEN, repository=pr.repository, pull=pull) as fake:
            done = run_action(image, pr, fake.url, step_env)
            body = fake.comment_bodies(pr.number)[0]
        outputs = parse_env_file(pr.output_file.read_text(encoding="utf-8"))
        result = json.loads(host_path(pr, outputs["result"]).read_text(encoding="utf-8"))
        verdicts[attack, one_user] = (
            [f["id"] for f in result["gate"]["failures"]],
            {r["id"]: r.get("confirmation") for r in result["rows"] if r.get("confirmation")},
        )
        if one_user:
            assert "both run as nobody" in done.stdout, explain(done)
            continue
        assert done.returncode == 1, explain(done)
        assert "the candidate agent runs as nobody, the baseline agent as passk-baseline" in (
            done.stdout
        )
        if attack:
            planted = [
                json.loads(line)
                for line in (pr.runner_temp / "attack.jsonl").read_text().splitlines()
            ]
            outcomes = {home: how for attempt in planted for home, how in attempt.items()}
            assert "planted" in outcomes.values(), outcomes  # its own HOME took it
            refused = [how for how in outcomes.values() if how != "planted"]
            assert refused and set(refused) == {"PermissionError"}, outcomes  # the baseline's
        assert "confirmed-regression" in verdicts[attack, one_user][1].values(), body
    # The same blocking rows, confirmed the same way: the baseline never ran the poison;
    # sharing one user, it did.
    assert verdicts[True, False] == verdicts[False, False]
    assert verdicts[True, True] != verdicts[False, False]
