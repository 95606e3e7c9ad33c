"""runner/action.yml, the composite variant, run step by step as the runner would.

The runner evaluates ``${{ ... }}`` in each step's ``env:`` and ``run:``, runs
``run:`` with bash, gives each step its own ``GITHUB_OUTPUT`` file and maps
the composite's outputs from ``steps.<id>.outputs``.  This test does the same
(with only the expression forms the file uses), in a git repository whose
agent needs a module that only the *job* installed: on the job's runner the
agent sees it.  GitHub is the local fake.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.agent_project import make_repo, record_baseline, write_agent
from support.fakegithub import SPECS_DIR, FakeGitHub
from support.llm_project import (
    BLOCKING,
    BRANCH,
    DAMAGE_DIVERGES,
    KEY,
    SETUP,
    check_comment,
    fake_llm_server,
    make_project,
)
from support.once import once
from support.package_index import PackageIndex
from support.pull_request_repo import commit, git
from support.pythons import venv_like_this_python
from support.workflows import EXPRESSION, REPO, RUNNER_ACTION, bash_step, evaluate, load

# .ci/run runs these again in a fresh venv, from a private folder (tests/support/pythons.py).
pytestmark = pytest.mark.any_python

CONTAINER_ACTION = REPO / "action.yml"
TOKEN = "ghs_runnerActionToken0123456789abcd"
REPOSITORY = "octo-org/refund-agent"
INSTALL = "install"
"""The id of the composite's first step: passk installed from the action's own files."""


def test_both_actions_validate_and_declare_the_same_inputs_and_outputs() -> None:
    schema = json.loads((SPECS_DIR / "github-action.schema.json").read_text(encoding="utf-8"))
    runner, container = load(RUNNER_ACTION), load(CONTAINER_ACTION)
    for doc in (runner, container):
        assert list(jsonschema.Draft7Validator(schema).iter_errors(doc)) == []
    assert runner["inputs"] == container["inputs"]
    assert runner["outputs"].keys() == container["outputs"].keys()
    for name, output in runner["outputs"].items():
        assert output["description"] == container["outputs"][name]["description"]
        assert output["value"] == f"${{{{ steps.passk.outputs.{name} }}}}"
    assert runner["runs"]["using"] == "composite"
    # Every input reaches the entrypoint as INPUT_<NAME>, hyphens kept (FACTS.md D1).
    (step,) = [s for s in runner["runs"]["steps"] if s.get("id") == "passk"]
    assert {k: v for k, v in step["env"].items() if k.startswith("INPUT_")} == {
        f"INPUT_{name.upper()}": f"${{{{ inputs.{name} }}}}" for name in container["inputs"]
    }


def parse_outputs(path: Path) -> dict[str, str]:
    """A step's GITHUB_OUTPUT as the runner reads it: ``name=value`` and heredoc entries."""
    outputs: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if line:
            name, _, value = line.partition("=")
            outputs[name] = value
        i += 1
    return outputs


def run_composite(
    path: Path,
    inputs: Mapping[str, str],
    base_env: Mapping[str, str],
    tmp: Path,
    *,
    action: dict[str, Any] | None = None,
    installed: Installed | None = None,
) -> tuple[list[int], dict[str, str], str]:
    """Run the composite action's steps in order; (exit codes, its outputs, the log).

    ``action``: the file's content as edited by a test (its steps cut or changed).
    ``installed``: the install step as already run for this job's Python (see
    :func:`install_step`): its exit code, outputs and log stand for the step's.
    """
    action = action if action is not None else load(path)
    given = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    given.update(inputs)
    context = {
        "github.action_path": str(path.parent),
        "github.token": TOKEN,
        "runner.temp": str(tmp / "runner-temp"),
    }
    (tmp / "runner-temp").mkdir(exist_ok=True)
    # Defaults may be expressions themselves (github-token: ${{ github.token }}).
    context.update({f"inputs.{k}": evaluate(str(v), context) for k, v in given.items()})
    codes: list[int] = []
    log = ""
    for index, step in enumerate(action["runs"]["steps"]):
        if installed is not None and step.get("id") == INSTALL:
            codes.append(installed.code)
            log += installed.log
            context.update(
                {f"steps.{INSTALL}.outputs.{k}": v for k, v in installed.outputs.items()}
            )
            if installed.code != 0:
                break
            continue
        output = tmp / f"step-{index}-output.txt"
        output.touch()
        env = dict(base_env)
        env.update({k: evaluate(str(v), context) for k, v in step.get("env", {}).items()})
        env["GITHUB_OUTPUT"] = str(output)
        assert step["shell"] == "bash"
        script = evaluate(step["run"], context)
        folder = evaluate(step.get("working-directory", base_env["GITHUB_WORKSPACE"]), context)
        proc = subprocess.run(
            bash_step(script, tmp / f"step-{index}.sh"),
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        codes.append(proc.returncode)
        log += proc.stdout + proc.stderr
        for name, value in parse_outputs(output).items():
            context[f"steps.{step['id']}.outputs.{name}"] = value
        if proc.returncode != 0:
            break
    outputs = {
        name: EXPRESSION.sub(lambda m: context.get(m.group(1), ""), spec["value"])
        for name, spec in action["outputs"].items()
    }
    return codes, outputs, log


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPOSITORY) as server:
        yield server


def test_the_runner_variant_runs_the_agent_with_what_the_job_installed(
    tmp_path: Path, fake: FakeGitHub, installed_with_requirements: Installed
) -> None:
    # What `pip install` in an earlier step of the job provides: a module on the
    # job's Python path. The container would not have it; the runner variant does.
    site = tmp_path / "job-site-packages"
    site.mkdir()
    (site / "refund_sdk.py").write_text("WORKS = True\n", encoding="utf-8")
    agent = {"command": [sys.executable, "agent.py"], "setup": ['echo set up >> "$SETUP_LOG"']}
    repo = make_repo(tmp_path, agent)
    os.environ["SETUP_LOG"] = str(tmp_path / "setup.log")
    try:
        pythonpath = os.environ.get("PYTHONPATH", "")
        os.environ["PYTHONPATH"] = f"{site}:{pythonpath}"
        write_agent(repo, extra="import refund_sdk")
        base = record_baseline(repo)
    finally:
        os.environ["PYTHONPATH"] = pythonpath
        del os.environ["SETUP_LOG"]
    (tmp_path / "setup.log").unlink()
    git(repo, "checkout", "-q", "-b", "feature")
    write_agent(repo, extra="import refund_sdk", answers={"r3": "approve"})
    head = commit(repo, "candidate: r3 changes")

    payload = json.loads((SPECS_DIR / "events" / "pull_request.opened.json").read_text())
    pr = payload["pull_request"]
    payload["number"] = pr["number"] = 7
    pr["head"]["sha"], pr["base"]["sha"] = head, base
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    summary = tmp_path / "summary.md"
    env = {
        "PATH": f"{installed_with_requirements.python}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        # The job's environment: the module "installed" by an earlier step.
        "PYTHONPATH": str(site),
        "SETUP_LOG": str(tmp_path / "setup.log"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_STEP_SUMMARY": str(summary),
        # Offline: passk's dependencies come from the system site-packages.
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
    }
    codes, outputs, log = run_composite(
        RUNNER_ACTION,
        {"config": "passk.yml"},
        env,
        tmp_path,
        installed=installed_with_requirements,
    )
    assert codes == [0, 0], log
    assert outputs["passed"] == "true"
    assert outputs["lost"] == "1" and outputs["result"] == ".passk/result.json"
    assert outputs["check-url"] and outputs["comment-url"]
    # Once per version: the candidate, and the baseline for the lost row's confirmation.
    assert (tmp_path / "setup.log").read_text().splitlines() == ["set up", "set up"]
    assert "::group::passk: setup of the candidate agent (1 command(s))" in log
    assert "::group::passk: setup of the baseline agent (1 command(s))" in log
    assert "ModuleNotFoundError" not in log
    bodies = fake.comment_bodies(7)
    assert len(bodies) == 1 and "passk" in bodies[0]
    (check,) = fake.check_runs
    assert check["conclusion"] == "success"
    assert TOKEN not in log.replace(f"::add-mask::{TOKEN}\n", "", 1)
    assert fake.violations == []


# --- the SDK example, as a team's project, behind the fake LLM provider ----------------


@pytest.fixture
def fake_llm() -> Iterator[Any]:
    """The seeded fake provider on loopback, rate limiting like a real key."""
    with fake_llm_server() as server:
        yield server


@pytest.fixture
def event_fake() -> Iterator[FakeGitHub]:
    """The fake GitHub for the repository the event names (as in tests/container/)."""
    payload = json.loads((SPECS_DIR / "events" / "pull_request.opened.json").read_text())
    with FakeGitHub(token=TOKEN, repository=payload["repository"]["full_name"]) as server:
        yield server


@pytest.fixture
def index() -> Iterator[PackageIndex]:
    """An index with no packages: any request pip makes is counted, and gets nothing."""
    served = PackageIndex()
    yield served
    served.close()


def pull_request_event(tmp: Path, base: str, head: str) -> Path:
    payload = json.loads((SPECS_DIR / "events" / "pull_request.opened.json").read_text())
    pr = payload["pull_request"]
    payload["number"] = pr["number"] = 7
    pr["head"]["sha"], pr["base"]["sha"] = head, base
    # The branches of tests/container/ (base main), so both variants post one comment.
    pr["head"]["ref"], pr["base"]["ref"] = BRANCH, "main"
    event = tmp / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return event


def job_python(tmp: Path, *, with_requirements: bool) -> Path:
    """The job's Python (what actions/setup-python puts first on PATH): its bin directory.

    It imports what the interpreter running these tests imports (passk's
    dependencies among them, which the runner action would otherwise download),
    however that one was installed, but never passk itself: an agent's
    ``passk_action.serve`` must come from the action. With requirements, it is
    what `pip install -r requirements.txt` in an earlier step leaves (openai);
    without, `import openai` fails in it as in a job that never installed the SDK.
    """
    venv = tmp / ("job-python" if with_requirements else "bare-python")
    hidden = ["passk-action"] if with_requirements else ["passk-action", "openai"]
    bin_dir = venv_like_this_python(venv, without=hidden)
    for module, present in (("openai", with_requirements), ("passk_action", False)):
        check = subprocess.run(
            [str(bin_dir / "python3"), "-c", f"import {module}"],
            env={"PATH": os.environ["PATH"]},
            capture_output=True,
            check=False,
        )
        assert (check.returncode == 0) == present, (module, check.stderr)
    return bin_dir


def job_env(
    repo: Path, tmp: Path, event: Path, fake: FakeGitHub, python: Path, **more: str
) -> dict[str, str]:
    """What the runner gives a step: the job's Python first on PATH, GitHub's variables."""
    return {
        "PATH": f"{python}:{os.environ['PATH']}",
        "HOME": str(tmp),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "7001",
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        **more,
    }


# --- the install step, run once per job Python -----------------------------------------
#
# The install step (a venv with pip, then passk built and installed from the action's
# files) costs about 7 CPU seconds. It depends on nothing a test changes but the job's
# Python, so it runs once per kind of job Python and test run (support/once.py), as the
# runner runs it: in a job whose checkout plants a venv.py and a pip/ that must never be
# imported. The tests that run the whole composite then run its passk step with that
# install's outputs.


PLANTED = "open({marker!r}, 'a').write('imported from the checkout\\n')\nraise SystemExit(3)\n"


def plant(checkout: Path, marker: Path) -> None:
    """A pull request's checkout that plants what ``-m venv`` and ``-m pip`` would import."""
    (checkout / "pip").mkdir(parents=True)
    (checkout / "venv.py").write_text(PLANTED.format(marker=str(marker)), encoding="utf-8")
    (checkout / "pip" / "__init__.py").write_text(PLANTED.format(marker=str(marker)), "utf-8")
    (checkout / "pip" / "__main__.py").write_text(PLANTED.format(marker=str(marker)), "utf-8")


@dataclass(frozen=True)
class Installed:
    """The install step as the runner ran it for one job Python."""

    python: Path
    """The job's Python (its bin directory), first on PATH for every step."""
    code: int
    outputs: dict[str, str]
    log: str
    index_requests: list[str]
    """What pip asked the package index during the install (None offered: nothing)."""
    planted_ran: bool
    """Whether the code the checkout planted ran."""


def install_step(tmp: Path, *, with_requirements: bool) -> Installed:
    """The composite's install step alone, in a job with a hostile checkout.

    pip's index is a counting one with no packages, so an install that downloads
    anything (passk's dependencies, its build backend) fails and is seen.
    """
    python = job_python(tmp, with_requirements=with_requirements)
    checkout, marker = tmp / "checkout", tmp / "planted-code-ran"
    plant(checkout, marker)
    index = PackageIndex()
    try:
        env = {
            "PATH": f"{python}:{os.environ['PATH']}",
            "HOME": str(tmp),
            "GITHUB_WORKSPACE": str(checkout),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_INDEX_URL": index.url,
            "PIP_RETRIES": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # Installing passk from the action's files needs its build backend;
            # isolation would fetch it, here the job's own is used.
            "PIP_NO_BUILD_ISOLATION": "0",
        }
        install_only = load(RUNNER_ACTION)
        install_only["runs"]["steps"] = install_only["runs"]["steps"][:1]
        assert install_only["runs"]["steps"][0]["id"] == INSTALL
        codes, _, log = run_composite(RUNNER_ACTION, {}, env, tmp, action=install_only)
        (output,) = tmp.glob("step-0-output.txt")
        requests = [str(r) for r in index.requests]
    finally:
        index.close()
    return Installed(
        python=python,
        code=codes[0],
        outputs=parse_outputs(output),
        log=log,
        index_requests=requests,
        planted_ran=marker.exists(),
    )


def installed_once(factory: pytest.TempPathFactory, *, with_requirements: bool) -> Installed:
    """:func:`install_step` once per test run (across pytest-xdist's workers too)."""
    name = "runner-install-" + ("with-requirements" if with_requirements else "bare")

    def build(folder: Path) -> dict[str, Any]:
        done = install_step(folder, with_requirements=with_requirements)
        return {**dataclasses.asdict(done), "python": str(done.python)}

    _, built = once(factory, name, build)
    return Installed(**{**built, "python": Path(built["python"])})


@pytest.fixture
def installed_with_requirements(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The install step for a job that ran `pip install -r requirements.txt` (openai)."""
    return installed_once(tmp_path_factory, with_requirements=True)


@pytest.fixture
def installed_bare(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The install step for a job whose Python never installed the SDK."""
    return installed_once(tmp_path_factory, with_requirements=False)


def test_the_runner_variant_gates_the_sdk_example_behind_the_fake_llm(
    tmp_path: Path,
    event_fake: FakeGitHub,
    fake_llm: Any,
    index: PackageIndex,
    installed_with_requirements: Installed,
) -> None:
    fake = event_fake
    (tmp_path / "repo").mkdir()
    project = make_project(tmp_path / "repo", branch=BRANCH)
    repo = project.repo
    event = pull_request_event(tmp_path, project.base, project.head)
    env = job_env(
        repo,
        tmp_path,
        event,
        fake,
        installed_with_requirements.python,
        # The job's pip, as a company with a private index sets it: the agent's
        # setup sees it too. No config file (this machine's pip.conf names local
        # wheel folders), so the counting index is the only place pip could ask.
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=index.url,
        PIP_RETRIES="0",
        # pip's own "new version available" query is about pip, not the requirements.
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        # Installing passk from the action's files needs its build backend; isolation
        # would fetch it, here the job's own is used.
        PIP_NO_BUILD_ISOLATION="0",
    )
    # The workflow step's `env:`, as `OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}`.
    step_env = {
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": fake_llm.url,
        # Retries enough that a chain of 429 windows under four workers cannot
        # exhaust the SDK's: the answers must not depend on timing.
        "PASSK_EXAMPLE_MAX_RETRIES": "12",
    }
    codes, outputs, log = run_composite(
        RUNNER_ACTION,
        {"config": "passk.yml"},
        {**env, **step_env},
        tmp_path,
        installed=installed_with_requirements,
    )

    assert codes == [0, 1], log  # passk installed; the gate failed
    assert outputs["passed"] == "false"
    assert (outputs["gained"], outputs["lost"]) == ("13", "5")
    # Setup ran once per version: the baseline's first, in its export of the base
    # commit (before any of the pull request's code), then the candidate's.
    groups = re.findall(r"^::group::passk: setup of the (\w+) agent \(1 command\(s\)\)$", log, re.M)
    assert groups == ["baseline", "candidate"], log
    assert log.count(f"$ {SETUP}") == 2
    # requirements.txt lists only the SDK: the agent's `passk_action.serve` is the
    # action's own (the job's Python has no passk, see job_python).
    assert log.count("Requirement already satisfied: openai") == 2, log
    assert "passk-action" not in log
    assert index.requests == []  # all met: pip asked the index nothing
    assert installed_with_requirements.index_requests == []  # nor for passk's own install

    result = json.loads((repo / outputs["result"]).read_text(encoding="utf-8"))
    failures = [(f["id"], f["rule"]) for f in result["gate"]["failures"]]
    assert failures == [(row, "must-not-break") for row in BLOCKING]
    rows = {row["id"]: row for row in result["rows"]}
    for row in BLOCKING:
        assert rows[row]["confirmation"] == "confirmed-regression"
    for row in DAMAGE_DIVERGES:
        assert rows[row]["first_divergent_check"]["check"] == "damage"
    # The committed baseline was reused; the baseline agent ran only to confirm, in the
    # rounds the gated rows asked for (the candidate's screen on the 22 must-not-break rows,
    # then both versions side by side on the rows it flagged or the baseline varies on).
    assert result["executions"] == {
        "candidate": 159,
        "baseline_topup": 0,
        "confirm_baseline": 817,
        "confirm_candidate": 1042,
        "total": 2018,
        "naive": 2177,
        "confirm_rounds": 6,
    }
    attempts = [*result["candidate"]["run"]["attempts"], *result["baseline"]["run"]["attempts"]]
    assert all(a.get("error") is None and not a.get("retries") for a in attempts)
    assert fake_llm.state.counters.rate_limited > 0  # 429s happened, and changed no answer
    assert fake_llm.state.counters.answered == 159 + 817 + 1042

    (body,) = fake.comment_bodies(7)
    (check,) = fake.check_runs
    assert check["conclusion"] == "failure"
    assert fake.violations == []
    assert KEY not in log and KEY not in body
    check_comment(body, project)  # blocking rows, the three numbers, what next: the golden
    assert re.fullmatch(  # the verdict names its base (issue 28, route 4)
        r"7 must-not-break rows broke: q-034, q-035, q-036 \+4 more · vs main at [0-9a-f]{12}",
        check["output"]["title"],
    ), check["output"]["title"]


def test_the_sdk_example_without_its_sdk_stops_at_once_and_says_why_everywhere(
    tmp_path: Path, event_fake: FakeGitHub, fake_llm: Any, installed_bare: Installed
) -> None:
    fake = event_fake
    # The first run: the job's Python never got `pip install -r
    # requirements.txt` and passk.yml has no setup, so `import openai` fails.
    (tmp_path / "repo").mkdir()
    project = make_project(tmp_path / "repo", setup=False, branch=BRANCH, sequential=False)
    event = pull_request_event(tmp_path, project.base, project.head)
    env = job_env(
        project.repo,
        tmp_path,
        event,
        fake,
        installed_bare.python,
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",  # passk's own install, offline
        OPENAI_API_KEY=KEY,
        OPENAI_BASE_URL=fake_llm.url,
    )
    codes, outputs, log = run_composite(
        RUNNER_ACTION, {"config": "passk.yml"}, env, tmp_path, installed=installed_bare
    )

    assert codes == [0, 2], log
    assert outputs["passed"] == "false"
    missing = "ModuleNotFoundError: No module named 'openai'"
    # The first min(rows*k, 2*concurrency) = 8 attempts, then nothing: no
    # further candidate attempts, no baseline, no confirmation.
    assert "its first 8 attempt(s) all failed the same way" in log
    assert "candidate: 8/159 attempts, 8 errors" in log
    assert "baseline:" not in log and "setup of the" not in log
    assert fake_llm.state.counters.requests == 0
    assert missing in log
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "## passk: the candidate agent could not run" in summary and missing in summary
    (body,) = fake.comment_bodies(7)
    assert missing in body and "could not run" in body
    assert "confirmation attempt" not in body
    (check,) = fake.check_runs
    assert check["conclusion"] == "failure"
    assert check["output"]["title"].startswith("passk: the candidate agent could not run — ")
    assert missing in check["output"]["title"]
    assert fake.violations == []


# --- the install step runs outside the checkout ---------------------------------------


@pytest.mark.parametrize("job", ["installed_bare", "installed_with_requirements"])
def test_the_install_step_never_imports_modules_the_checkout_plants(
    tmp_path: Path, job: str, request: pytest.FixtureRequest
) -> None:
    """``python3 -m venv`` and ``-m pip`` put the working directory first on sys.path: run
    in a pull request's checkout, they would import its ``venv.py`` and ``pip/``.  The
    two-job mode's gating job checks the pull request out and must run none of it.

    The install step every test here shares ran in such a checkout (:func:`install_step`).
    """
    installed: Installed = request.getfixturevalue(job)
    assert installed.code == 0, installed.log
    assert not installed.planted_ran
    assert installed.outputs["bin"].endswith("/passk-venv/bin/passk")
    # Control: the same step run in the checkout imports what the checkout planted.
    checkout, marker = tmp_path / "checkout", tmp_path / "planted-code-ran"
    plant(checkout, marker)
    env = {
        "PATH": f"{installed.python}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_WORKSPACE": str(checkout),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
    }
    in_checkout = load(RUNNER_ACTION)
    in_checkout["runs"]["steps"] = in_checkout["runs"]["steps"][:1]
    del in_checkout["runs"]["steps"][0]["working-directory"]
    codes, _, log = run_composite(RUNNER_ACTION, {}, env, tmp_path, action=in_checkout)
    assert codes != [0], log
    assert marker.read_text(encoding="utf-8").startswith("imported from the checkout")
