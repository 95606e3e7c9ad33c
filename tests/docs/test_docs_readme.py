"""The README's "Gate your repository in five steps" runs as written: the newcomer's path.

Blocks titled ``title="FILE"`` are the files a reader writes; the ``sh`` blocks'
commands run in the reader's repository (``passk`` through the CLI's ``main``,
``git`` as itself), in order: their own agent, its rows and config, the
baseline, the workflow, then a branch and ``passk compare --base main
--comment comment.md`` before pushing.  The workflow must be one GitHub accepts
and carry the protections the threat model asks for.  Then the gate it sets up
is used: the committed agent passes, and a change on the branch that breaks
the must-not-break row fails, with the comment the pull request would get.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main
from support.readme_steps import WORKFLOW, five_steps, git, the_five_steps_followed
from support.workflows import PUBLISHED, errors, load_workflow

COMPARE = "passk compare --config passk.yml --base main"


def test_the_five_steps_gate_a_repository_as_written(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = tmp_path / "repo"
    the_five_steps_followed(repo, tmp_path_factory, monkeypatch, capsys)
    # Step 4 committed the agent, its rows and the baseline; the workflow is
    # the one file left to commit.
    assert git(repo, "status", "--porcelain") == "?? .github/\n?? comment.md\n"
    check_workflow(load_workflow(repo / WORKFLOW))

    # "Before you push": the committed agent passed its own gate (the README's
    # command ran above, exit 0), its comment says so, and the baseline measured
    # what main runs (no warning that it is behind) ...
    readme_compare = next(
        line for _, _, body in five_steps() for line in body.splitlines() if COMPARE in line
    )
    assert "✅ passk: passed" in (repo / "comment.md").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main([*shlex.split(COMPARE)[1:], "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err
    # ... and a change on the branch that breaks the must-not-break row r-1 (12
    # days, with a receipt: approve) fails it, with the comment the pull request
    # would get: why, first.
    agent = repo / "agent.py"
    agent.write_text(agent.read_text().replace("<= 30", "<= 10"), encoding="utf-8")
    argv = [*shlex.split(readme_compare)[1:], "--quiet", "--json", "result.json"]
    assert main(argv) == 1
    failures = json.loads((repo / "result.json").read_text(encoding="utf-8"))["gate"]["failures"]
    assert [(f["id"], f["rule"]) for f in failures] == [("r-1", "must-not-break")]
    comment = (repo / "comment.md").read_text(encoding="utf-8").splitlines()
    assert comment[0] == "<!-- passk:sticky-comment -->"
    assert comment[1] == "### ❌ passk: 1 must-not-break row broke: `r-1`"
    assert comment[3] == "**Why it failed** (1 blocking reason)"
    answers = [line for line in comment if line.startswith("- expected approve · baseline")]
    assert len(answers) == 1 and re.fullmatch(
        r"- expected approve · baseline approve ×\d+ · candidate deny ×\d+", answers[0]
    ), answers
    assert "**Reproduce locally:** `passk compare --config passk.yml --base main " in "\n".join(
        comment
    )


def check_workflow(workflow: dict[str, Any]) -> None:
    assert errors("github-workflow.schema.json", workflow) == []
    assert workflow["on"] == "pull_request"
    (job,) = workflow["jobs"].values()
    checkout, passk = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert passk["uses"] == PUBLISHED
    assert passk["with"] == {"config": "passk.yml"}
    assert set(workflow["permissions"]) == {"contents", "pull-requests", "checks"}
