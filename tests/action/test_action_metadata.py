"""action.yml and every workflow we ship validate against GitHub's own JSON schemas.

The schemas are vendored in ``tests/specs`` (provenance in its README.md).
A missing schema fails the test:
a silent skip would let an invalid action.yml reach the Marketplace.
Beyond the schemas, the checks pin what users rely on: input names and
defaults (the entrypoint reads them as ``INPUT_*``), the outputs later steps
use, and the security posture of the example workflows.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from passk_action.action.inputs import MODES
from support.workflows import PUBLISHED, REPO, WORKFLOWS, errors, load_workflow, load_yaml

ACTION = REPO / "action.yml"
PR_WORKFLOW = REPO / "examples" / "workflows" / "passk-pull-request.yml"
BASELINE_WORKFLOW = REPO / "examples" / "workflows" / "passk-baseline.yml"

INPUT_DEFAULTS = {
    "config": "passk.yml",
    "github-token": "${{ github.token }}",
    "comment": "update",
    "check-name": "passk",
    "comment-author": "github-actions[bot]",
    "mode": "gate",
    "baseline-update": "pull-request",
    "working-directory": ".",
    "candidate-run": "",
}
OUTPUTS = {
    "passed",
    "mean-accuracy",
    "pass-k",
    "flip-rate",
    "gained",
    "lost",
    "result",
    "reused",
    "report",
    "comment-url",
    "check-url",
    "cost-per-decision",
    "latency-p95",
    "measured-run",
}


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


# -- action.yml ---------------------------------------------------------------


def test_action_validates_against_githubs_schema() -> None:
    assert errors("github-action.schema.json", load_yaml(ACTION)) == []


def test_the_action_schema_check_can_fail() -> None:
    # Guard against a vacuous schema: known-bad metadata must be reported.
    bad = copy.deepcopy(load_yaml(ACTION))
    bad["branding"]["icon"] = "rocket-ship"
    bad["runs"]["using"] = "docker2"
    del bad["name"]
    problems = errors("github-action.schema.json", bad)
    assert any("name" in p for p in problems), problems
    assert any(p.startswith("branding/icon") for p in problems), problems


def test_action_is_a_docker_action_running_the_entrypoint() -> None:
    action = load_yaml(ACTION)
    assert action["runs"] == {"using": "docker", "image": "Dockerfile", "args": ["action"]}
    assert action["name"] == "passk — reliability gate for LLM agents"
    assert 0 < len(action["description"]) <= 125, "the Marketplace shows at most 125 characters"


def test_action_inputs_and_defaults() -> None:
    inputs = load_yaml(ACTION)["inputs"]
    assert {name: spec.get("default") for name, spec in inputs.items()} == INPUT_DEFAULTS
    for name, spec in inputs.items():
        assert spec.get("description", "").strip(), f"input {name} needs a description"
        # The entrypoint applies the defaults; a required input would not be enforced (D1).
        assert spec.get("required", False) is False, f"input {name} has a default"


@pytest.mark.parametrize(
    ("name", "choices"),
    [
        ("comment", ("update", "new", "off")),
        ("mode", MODES),
        ("baseline-update", ("commit", "pull-request")),
    ],
)
def test_enumerated_inputs_name_every_choice(name: str, choices: tuple[str, ...]) -> None:
    description = load_yaml(ACTION)["inputs"][name]["description"]
    for choice in choices:
        assert f"`{choice}`" in description, f"input {name} should document `{choice}`"


def test_action_outputs() -> None:
    outputs = load_yaml(ACTION)["outputs"]
    assert set(outputs) == OUTPUTS
    for name, spec in outputs.items():
        assert spec.get("description", "").strip(), f"output {name} needs a description"


# parallel-safe(agent-users): reads the Dockerfile, which names the agent user; runs no agent.
def test_dockerfile_follows_the_runner_contract() -> None:
    # D2: no USER (the action must run as root) and no WORKDIR (the runner sets it).
    instructions = [
        line.split(maxsplit=1)[0].upper()
        for line in (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#") and not line.startswith(" ")
    ]
    assert "USER" not in instructions
    assert "WORKDIR" not in instructions
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["passk"]' in text
    assert "safe.directory" in text
    # passk is root in the container: agents must not be (issue 12, route 8).
    assert "PASSK_AGENT_USER=nobody" in text


def test_dockerfile_installs_dependencies_before_the_source_layer() -> None:
    """A change to src/ must rebuild only the small wheel layer, not the dependencies."""
    runtime = (REPO / "Dockerfile").read_text(encoding="utf-8").split("\nFROM ")[-1]
    deps = runtime.index("pip install --no-cache-dir -r /tmp/requirements.txt")
    assert runtime.index("COPY pyproject.toml") < deps < runtime.index("COPY --from=build")
    assert "--no-deps /tmp/dist/*.whl" in runtime
    assert "COPY src" not in runtime


# -- workflows --------------------------------------------------------------------


def test_example_workflows_pass_the_api_key_to_the_passk_step() -> None:
    for path in (PR_WORKFLOW, BASELINE_WORKFLOW):
        (step,) = [s for s in steps(load_workflow(path)) if s.get("uses") == PUBLISHED]
        assert step["env"] == {"OPENAI_API_KEY": "${{ secrets.OPENAI_API_KEY }}"}


def test_release_workflow_publishes_with_trusted_publishing() -> None:
    release = load_workflow(REPO / ".github" / "workflows" / "release.yml")
    assert release["on"] == {"push": {"tags": ["v*.*.*"]}}
    pypi = release["jobs"]["pypi"]
    assert pypi["permissions"]["id-token"] == "write"
    uses = [str(step.get("uses", "")) for step in pypi["steps"]]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses)
    assert release["jobs"]["image"]["permissions"]["packages"] == "write"
    assert release["jobs"]["image"]["needs"] == release["jobs"]["pypi"]["needs"] == "test"


def test_every_workflow_file_is_found() -> None:
    names = {path.relative_to(REPO).as_posix() for path in WORKFLOWS}
    assert names >= {
        ".github/workflows/ci.yml",
        ".github/workflows/passk.yml",
        ".github/workflows/release.yml",
        "examples/workflows/passk-pull-request.yml",
        "examples/workflows/passk-sharded.yml",
        "examples/workflows/passk-baseline.yml",
    }


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_workflow_validates_against_githubs_schema(path: Path) -> None:
    assert errors("github-workflow.schema.json", load_workflow(path)) == []


def test_the_workflow_schema_check_can_fail() -> None:
    bad = copy.deepcopy(load_workflow(PR_WORKFLOW))
    bad["permissions"]["pull-requests"] = "admin"
    bad["jobs"]["passk"].pop("runs-on")
    problems = errors("github-workflow.schema.json", bad)
    assert problems, "an invalid permission level and a job without runs-on must be reported"
    # Without the F1 fix the real file would fail too: the check sees the file as GitHub does.
    raw = load_yaml(PR_WORKFLOW)
    assert errors("github-workflow.schema.json", raw) != []


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_workflow_uses_pull_request_target(path: Path) -> None:
    # E3: passk runs the PR's agent code; under pull_request_target it would run with a
    # read/write token and secrets, even for forks.
    triggers = load_workflow(path)["on"]
    names = {triggers} if isinstance(triggers, str) else set(triggers)
    assert "pull_request_target" not in names
    code = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    assert not [line for line in code if "pull_request_target" in line]


ON_A_NEW_BASE = "github.event.action != 'edited' || github.event.changes.base != null"
"""Issue 28 route 4: an ``edited`` event gates again only when the base changed."""


@pytest.mark.parametrize(
    "name", ["passk-pull-request.yml", "passk-measure.yml", "passk-two-jobs.yml"]
)
def test_workflows_on_pull_requests_gate_again_on_a_label_and_on_a_new_base(name: str) -> None:
    """Issue 28 routes 3-4: the allow label approves the head it was added at, so its
    ``labeled`` event runs the gate (``unlabeled`` too); a pull request retargeted to
    another base fires only ``edited``, which runs the gate when ``changes.base`` says
    the base changed, and not on a new title or body."""
    workflow = load_workflow(REPO / "examples" / "workflows" / name)
    types = workflow["on"]["pull_request"]["types"]
    assert {"opened", "synchronize", "reopened", "labeled", "unlabeled", "edited"} <= set(types)
    for job in workflow["jobs"].values():
        assert ON_A_NEW_BASE in job["if"], job["if"]


def test_pull_request_workflow() -> None:
    workflow = load_workflow(PR_WORKFLOW)
    assert set(workflow["on"]) == {"pull_request"}
    assert workflow["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "checks": "write",
    }
    all_steps = steps(workflow)
    checkout = [s for s in all_steps if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert [s["uses"] for s in checkout] == ["actions/checkout@v4"]
    assert checkout[0]["with"]["fetch-depth"] == 0
    passk = [s for s in all_steps if s.get("uses") == PUBLISHED]
    assert len(passk) == 1
    assert passk[0]["with"]["config"] == "passk.yml"
    comment = PR_WORKFLOW.read_text(encoding="utf-8").split("\nname:", 1)[0]
    for must_explain in ("pull_request_target", "fork", "read-only", "job summary"):
        assert must_explain in comment, f"the header comment should explain {must_explain!r}"


def test_baseline_workflow() -> None:
    workflow = load_workflow(BASELINE_WORKFLOW)
    assert workflow["on"] == {"push": {"branches": ["main"]}}
    # passk prints the link to open the pull request; it never opens one itself.
    assert workflow["permissions"] == {"contents": "write"}
    passk = [s for s in steps(workflow) if s.get("uses") == PUBLISHED]
    assert len(passk) == 1
    assert passk[0]["with"]["mode"] == "baseline"


def test_ci_runs_the_test_script_on_python_311() -> None:
    workflow = load_workflow(REPO / ".github" / "workflows" / "ci.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    all_steps = steps(workflow)
    setup = [s for s in all_steps if str(s.get("uses", "")).startswith("actions/setup-python@")]
    assert setup and str(setup[0]["with"]["python-version"]) == "3.11"
    assert any(s.get("run", "").strip() == ".ci/run" for s in all_steps)


def test_dogfood_runs_this_checkouts_action_on_the_demo() -> None:
    workflow = load_workflow(REPO / ".github" / "workflows" / "passk.yml")
    assert set(workflow["on"]) == {"pull_request"}
    local = [s for s in steps(workflow) if s.get("uses") == "./"]
    assert len(local) == 1
    config = local[0]["with"]["config"]
    assert config == "examples/refunds/passk.yml"
    assert (REPO / config).is_file()


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_run_scripts_take_expressions_through_env(path: Path) -> None:
    # Script injection: `${{ }}` inside `run:` is pasted into the shell before it runs.
    for step in steps(load_workflow(path)):
        assert "${{" not in step.get("run", ""), f"{path.name}: pass expressions via env"


RUNNER_PUBLISHED = "passk-dev/passk-action/runner@v1"
TWO_JOB_WORKFLOWS = {
    "passk-measure.yml": ("measure",),
    "passk-gate-measured.yml": ("gate",),
    "passk-two-jobs.yml": ("measure", "gate"),
}


def passk_step(job: dict[str, Any]) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if s.get("uses") == RUNNER_PUBLISHED]
    return step


@pytest.mark.parametrize("name", sorted(TWO_JOB_WORKFLOWS))
def test_two_job_workflows_keep_the_prs_code_out_of_every_job_with_a_write_token(
    name: str,
) -> None:
    """Issue 21 route 1: the measuring job may run the pull request's code and holds
    nothing that writes; the gating job holds the write token and runs none of it."""
    workflow = load_workflow(REPO / "examples" / "workflows" / name)
    assert workflow.get("permissions") in ({}, {"contents": "read"})
    for job_name, job in workflow["jobs"].items():
        granted = {**workflow.get("permissions", {}), **job.get("permissions", {})}
        writes = {scope for scope, level in granted.items() if level == "write"}
        step = passk_step(job)
        mode = step["with"]["mode"]
        checkouts = [
            s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")
        ]
        assert all(s["with"]["persist-credentials"] is False for s in checkouts)
        if mode == "measure":
            assert job_name in ("measure",) and writes == set()
            assert step["with"]["github-token"] == ""
            (upload,) = [s for s in job["steps"] if "upload-artifact" in str(s.get("uses"))]
            assert upload["with"]["path"] == "${{ steps.passk.outputs.measured-run }}"
            assert upload["with"]["include-hidden-files"] is True  # .passk/ is hidden
        else:
            assert mode == "gate-measured"
            assert writes == {"pull-requests", "checks"}
            # No step runs anything: the pull request is checked out as data, in its
            # own folder (so it cannot plant .passk/ where passk writes), and passk
            # reads it from there.
            assert [s for s in job["steps"] if "run" in s] == []
            (checkout,) = checkouts
            assert checkout["with"]["path"] == step["with"]["working-directory"]
            assert checkout["with"]["fetch-depth"] == 0
            assert step["with"]["candidate-run"].endswith("passk-measured/measured.json")
    assert {passk_step(j)["with"]["mode"] for j in workflow["jobs"].values()} == {
        {"measure": "measure", "gate": "gate-measured"}[j] for j in TWO_JOB_WORKFLOWS[name]
    }


def test_the_fork_gate_runs_on_the_measuring_workflow_and_downloads_its_run() -> None:
    measure = load_workflow(REPO / "examples" / "workflows" / "passk-measure.yml")
    gate = load_workflow(REPO / "examples" / "workflows" / "passk-gate-measured.yml")
    assert set(measure["on"]) == {"pull_request"}
    assert gate["on"] == {"workflow_run": {"workflows": [measure["name"]], "types": ["completed"]}}
    job = gate["jobs"]["gate"]
    assert job["if"] == (
        "github.event.workflow_run.event == 'pull_request' && "
        "github.event.workflow_run.conclusion != 'skipped'"
    )
    assert job["permissions"]["actions"] == "read"
    (download,) = [s for s in job["steps"] if "download-artifact" in str(s.get("uses"))]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    (checkout,) = [s for s in job["steps"] if "checkout" in str(s.get("uses"))]
    assert checkout["with"]["ref"] == "${{ github.event.workflow_run.head_sha }}"
