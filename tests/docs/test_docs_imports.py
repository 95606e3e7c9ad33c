"""docs/imports.md, the walkthrough from a promptfoo project to a gated PR, runs as written.

The harness commands (``promptfoo eval``) are not run: their outputs are the
files in examples/imports/results, copied to where the commands write them.
Every ``passk`` command runs through the CLI's ``main`` in a scratch folder,
in the doc's order, and must exit as the doc says (``# exits N``, else 0).
Blocks titled ``title="FILE"`` are the files the reader writes by hand.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from passk_action.cli import main
from support.paths import REPO

DOC = REPO / "docs" / "imports.md"
EXAMPLE = REPO / "examples" / "imports"
WORKFLOW = REPO / "examples" / "workflows" / "passk-imported.yml"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
HARNESSES = ("promptfoo ", "inspect ")


def blocks() -> list[tuple[str, str, str]]:
    """Every fenced block of the doc: (language, info after it, body)."""
    return [(m[1], m[2].strip(), m[3]) for m in FENCE.finditer(DOC.read_text(encoding="utf-8"))]


def commands(body: str) -> list[tuple[list[str], int]]:
    """The passk command lines of a shell block, with the exit code each expects."""
    found = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(HARNESSES):
            continue
        text, _, comment = line.partition("#")
        expected = re.fullmatch(r"\s*exits (\d+)\s*", comment) if comment else None
        argv = shlex.split(text)
        assert argv[0] == "passk", f"unexpected command in {DOC.name}: {line}"
        found.append((argv[1:], int(expected[1]) if expected else 0))
    return found


def test_the_walkthrough_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(EXAMPLE / "results", tmp_path / "results")
    monkeypatch.chdir(tmp_path)
    ran = 0
    for language, info, body in blocks():
        titled = re.fullmatch(r'title="([^"]+)"', info)
        if titled:
            path = tmp_path / titled[1]
            if path.exists() and path.suffix == ".jsonl":
                # The hand edit marks rows; the rows themselves are the import's.
                unmark = body.replace('"must_not_break": true', '"must_not_break": false')
                assert unmark == path.read_text(encoding="utf-8"), f"{path.name} drifted"
            path.write_text(body, encoding="utf-8")
            continue
        if language != "sh":
            continue
        for argv, expected in commands(body):
            capsys.readouterr()
            code = main(argv)
            out = capsys.readouterr()
            assert code == expected, f"passk {' '.join(argv)}: exit {code}\n{out.err}"
            ran += 1
    assert ran == 3
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "confirmation skipped for 2 lost row(s): both runs are recorded" in report
    assert "refund within 30 days, receipt attached" in report


def test_the_import_output_quoted_in_the_doc_is_what_passk_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quoted = [body for language, _, body in blocks() if language == "text"]
    assert len(quoted) == 1
    main(["import", "--from", "promptfoo", str(EXAMPLE / "results" / "pr.json"),
          "--out", str(tmp_path / "c.json")])  # fmt: skip
    printed = capsys.readouterr().out.splitlines()
    assert quoted[0].strip() == printed[1]


def test_the_ci_workflow_imports_and_gates_what_the_doc_describes() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["gate"]["steps"]
    runs = [step.get("run", "") for step in steps]
    assert any("--repeat 3" in run and "-o results/pr.json" in run for run in runs)
    assert "passk import --from promptfoo results/pr.json --out candidate.json" in runs
    gate = steps[-1]
    assert gate["uses"].startswith("passk-dev/passk-action@")
    assert gate["with"]["candidate-run"] == "candidate.json"
    assert "examples/workflows/passk-imported.yml" in DOC.read_text(encoding="utf-8")
