"""runner/action.yml, the composite variant, run step by step as the runner would.

The runner evaluates ``${{ ... }}`` in each step's ``env:`` and ``run:``, runs
``run:`` with bash, gives each step its own ``GITHUB_OUTPUT`` file and maps
the composite's outputs from ``steps.<id>.outputs``.  This test does the same
(with only the expression forms the file uses), in a git repository whose
agent needs a module that only the *job* installed: on the job's runner the
agent sees it.  GitHub is the local fake.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from fakegithub import SPECS_DIR, FakeGitHub
from test_action_gate import commit, git
from test_agent_setup import make_repo, record_baseline, write_agent

REPO = Path(__file__).resolve().parents[1]
RUNNER_ACTION = REPO / "runner" / "action.yml"
CONTAINER_ACTION = REPO / "action.yml"
TOKEN = "ghs_runnerActionToken0123456789abcd"
REPOSITORY = "octo-org/refund-agent"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc


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


def evaluate(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in context:
            raise AssertionError(f"the test does not know the expression {name!r}")
        return context[name]

    return EXPRESSION.sub(value, text)


def run_composite(
    path: Path, inputs: Mapping[str, str], base_env: Mapping[str, str], tmp: Path
) -> tuple[list[int], dict[str, str], str]:
    """Run the composite action's steps in order; (exit codes, its outputs, the log)."""
    action = load(path)
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
        output = tmp / f"step-{index}-output.txt"
        output.touch()
        env = dict(base_env)
        env.update({k: evaluate(str(v), context) for k, v in step.get("env", {}).items()})
        env["GITHUB_OUTPUT"] = str(output)
        assert step["shell"] == "bash"
        # What the runner runs for `shell: bash`: bash --noprofile --norc -eo pipefail {0}.
        script = evaluate(step["run"], context)
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=base_env["GITHUB_WORKSPACE"],
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
    tmp_path: Path, fake: FakeGitHub
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
        "PATH": os.environ["PATH"],
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
    codes, outputs, log = run_composite(RUNNER_ACTION, {"config": "passk.yml"}, env, tmp_path)
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
