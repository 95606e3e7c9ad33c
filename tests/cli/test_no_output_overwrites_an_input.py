"""No output overwrites an input or another output, in any command (issue 31, lost data).

Each attack names one file twice — an output over the committed baseline,
the dataset, the config or another output, by another spelling, a symlink
or a hard link — and must be refused with one line and exit 2 *before
anything runs*: the agent is never asked (it leaves a mark when it is) and
every file keeps its bytes.  Beside each, its control: the same command
with distinct paths does its work.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from passk_action.cli import main
from support.paths import REPO

TAU = REPO / "tests" / "data" / "importers" / "tau_bench_retail.json"
AGENT = (
    "import json, pathlib, sys; r = json.load(sys.stdin); "
    "pathlib.Path('asked').write_text('yes'); print(json.dumps({'decision': 'deny'}))"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    rows = [{"id": f"r{i}", "input": {"n": i}, "expected": "deny"} for i in range(2)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {"dataset": "data.jsonl", "k": 2, "agent": {"command": [sys.executable, "-c", AGENT]}}
    (tmp_path / "passk.yml").write_text(yaml.safe_dump(config))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("passk: error:")]
    assert code == 2, err
    assert len(errors) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in errors[0], errors[0]


def _with_baseline(project: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, bytes]:
    assert main(["baseline", "--quiet"]) == 0
    capsys.readouterr()
    (project / "asked").unlink()
    (project / ".passk" / "baseline.json").chmod(0o644)
    return _snapshot(project / ".passk")


def test_compare_candidate_out_over_the_committed_baseline_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _with_baseline(project, capsys)
    _refused(
        ["compare", "--quiet", "--candidate-out", "./.passk/../.passk/baseline.json"],
        capsys,
        "--candidate-out would overwrite the baseline artifact",
    )
    assert _snapshot(project / ".passk") == before
    assert not (project / "asked").exists()


def test_control_compare_with_its_own_candidate_out_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _with_baseline(project, capsys)
    assert main(["compare", "--quiet", "--candidate-out", "cand.json"]) == 0
    assert (project / "asked").exists() and (project / "cand.json").exists()
    assert (project / ".passk" / "baseline.json").read_bytes() == before["baseline.json"]


def test_compare_json_over_the_dataset_through_a_symlink_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_baseline(project, capsys)
    (project / "link.json").symlink_to("data.jsonl")
    before = _snapshot(project)
    _refused(["compare", "--quiet", "--json", "link.json"], capsys, "--json", "the dataset")
    assert _snapshot(project) == before


def test_compare_two_outputs_one_hard_link_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_baseline(project, capsys)
    (project / "a.md").write_text("keep\n")
    os.link(project / "a.md", project / "b.md")
    _refused(
        ["compare", "--quiet", "--json", "a.md", "--markdown", "b.md"],
        capsys,
        "--markdown and --json name the same file",
    )
    assert (project / "a.md").read_text() == "keep\n"
    assert not (project / "asked").exists()


def test_run_out_over_the_config_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(project)
    _refused(["run", "--quiet", "--out", "passk.yml"], capsys, "--out would overwrite the config")
    assert _snapshot(project) == before


def test_run_out_whose_journal_is_the_dataset_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The journal beside ``--out`` is deleted when the run ends: it must not be an input."""
    (project / "passk.yml").write_text(
        (project / "passk.yml").read_text().replace("data.jsonl", "r.journal.jsonl")
    )
    (project / "data.jsonl").rename(project / "r.journal.jsonl")
    before = _snapshot(project)
    _refused(["run", "--quiet", "--out", "r"], capsys, "--out's journal would overwrite")
    assert _snapshot(project) == before


def test_control_run_out_to_a_new_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--quiet", "--out", "run.json"]) == 0
    assert json.loads((project / "run.json").read_text())["schema_version"]


@pytest.mark.parametrize("second", ["--dataset-out", "--report-json"])
def test_import_two_outputs_one_file_is_refused(
    second: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", "--from", "tau-bench", str(TAU), "--out", "out.json", second, "./out.json"]
    _refused(argv, capsys, f"{second} and --out name the same file")
    assert not (project / "out.json").exists()


def test_import_out_over_its_input_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "tau.json").write_bytes(TAU.read_bytes())
    _refused(
        ["import", "--from", "tau-bench", "tau.json", "--out", "tau.json"],
        capsys,
        "--out would overwrite input file tau.json",
    )
    assert (project / "tau.json").read_bytes() == TAU.read_bytes()


def test_control_import_three_outputs(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["import", "--from", "tau-bench", str(TAU), "--out", "out.json"]
    argv += ["--dataset-out", "rows.jsonl", "--report-json", "report.json"]
    assert main(argv) == 0
    assert all((project / n).stat().st_size for n in ("out.json", "rows.jsonl", "report.json"))


def test_report_out_over_its_artifact_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--quiet", "--out", "run.json"]) == 0
    before = (project / "run.json").read_bytes()
    _refused(["report", "run.json", "--out", "run.json"], capsys, "--out would overwrite")
    assert (project / "run.json").read_bytes() == before
    assert main(["report", "run.json", "--out", "run.md"]) == 0  # the control


def test_outputs_to_a_device_twice_are_allowed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/null is written in place and loses nothing: naming it twice is fine."""
    argv = ["import", "--from", "tau-bench", str(TAU), "--out", "/dev/null"]
    assert main([*argv, "--dataset-out", "/dev/null", "--report-json", "/dev/null"]) == 0
