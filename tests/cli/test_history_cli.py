"""``passk history`` and the HTML report's history: what a developer runs on a laptop.

The repository (built here) has a config, a dataset and three baselines
committed on ``main``; the commands read them from git and run no agent.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core.history import history_of
from passk_action.core.model import Version
from passk_action.report.charts import Series, svg_curve
from passk_action.report.history_html import history_chart, render_history_html
from passk_action.store.artifact import read_run
from passk_action.store.results import write_result
from support.history_repo import FLIP, RIGHT, WRONG, Repo, baseline, git
from support.html_outline import Outline, outline
from support.paths import TESTS
from support.scenarios import failed_scenario

SVG = "{http://www.w3.org/2000/svg}"
CONFIG = "dataset: data.jsonl\nk: 3\nbaseline: {artifact: .passk/baseline.json}\n"
DATA = "".join(
    json.dumps({"id": row_id, "input": row_id, "expected": "deny"}) + "\n"
    for row_id in ("a", "b", "c", "new-1")
)
HOSTILE = '<script>alert("x")</script>'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    repo = Repo(tmp_path / "repo")
    (repo.root / "passk.yml").write_text(CONFIG, encoding="utf-8")
    (repo.root / "data.jsonl").write_text(DATA, encoding="utf-8")
    repo.commit(baseline({"a": RIGHT, "b": FLIP, HOSTILE: RIGHT}), "baseline 1")
    repo.commit(baseline({"a": RIGHT, "b": RIGHT, HOSTILE: FLIP}), "baseline 2")
    repo.commit(baseline({"a": RIGHT, "b": FLIP, "c": WRONG}), "baseline 3: c joins")
    git(repo.root, "checkout", "-q", "-b", "feature")
    monkeypatch.chdir(repo.root)
    return repo


def test_passk_history_prints_the_rows_that_moved(
    project: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--base", "main"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "3 baselines of .passk/baseline.json on main, newest first"
    assert "  b                        FCF  flip in 2 of the last 3 baselines on main" in lines
    assert any(
        line.startswith("  c                        W--  joined 1 baseline ago") for line in lines
    )
    assert "Rows in the dataset that no baseline measured yet (1):" in lines
    assert lines[-1] == "  new-1"
    # HEAD is named by the checked-out branch.
    assert main(["history"]) == 0
    assert "on feature, newest first" in capsys.readouterr().out


def test_passk_history_last_and_json(project: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--base", "main", "--last", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["readable"], doc["more"], doc["wanted"]) == (2, True, 2)
    assert [b["commit"] for b in doc["baselines"]] == project.commits[:0:-1]
    assert doc["flipped"] == ["b"] and doc["new"] == ["c"] and doc["left"] == [HOSTILE]
    assert doc["unmeasured"] == ["new-1"]


def test_passk_history_html_draws_the_three_numbers(
    project: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "history.html"
    assert main(["history", "--base", "main", "--html", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    parsed = Outline(page)
    assert ("section", {"id": "history"}) in [(t, a) for t, a in parsed.tags if t == "section"]
    svg = page[page.index("<svg") : page.index("</svg>") + 6]
    root = ET.fromstring(svg)
    tips = [c.findtext(f"{SVG}title") for c in root.iter(f"{SVG}circle")]
    first = project.commits[0][:7]
    assert f"mean accuracy, {first}: 88.9%" in tips
    assert f"flip rate (lower is better), {first}: 33.3%" in tips
    # A hostile row id (it left the dataset) is text, never markup.
    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert [t for t, _ in parsed.tags].count("script") == 1


def test_passk_report_html_with_history(project: Repo, tmp_path: Path) -> None:
    result = tmp_path / "result.json"
    write_result(failed_scenario(), result)
    out = tmp_path / "report.html"
    argv = ["report", str(result), "--format", "html", "--history", "main", "--out", str(out)]
    assert main(argv) == 0
    page = out.read_text(encoding="utf-8")
    assert '<a href="#history">History</a>' in page and 'id="chart-history"' in page
    assert main(["report", str(project.root / ".passk/baseline.json"), *argv[2:]]) == 0
    assert 'id="chart-history"' in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["history", "--last", "0"], "--last: --last must be at least 1"),
        (["history", "--base", "nope"], "'nope' names no commit in this repository"),
        (
            ["report", "x.json", "--history", "main"],
            "--history: --history draws a chart: it needs --format html",
        ),
    ],
)
def test_refusals_are_one_line(
    project: Repo, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_outside_a_git_repository_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "passk.yml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(DATA, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["history"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("passk: error: ") and err.count("\n") == 1


# --- the chart ---------------------------------------------------------------------------


def test_the_chart_names_commits_and_leaves_a_gap_for_a_missing_number() -> None:
    svg = svg_curve(
        [Series("flip rate", (0.5, math.nan, 0.25))], title="t", x_ticks=["c1", "c2", "c3"]
    )
    root = ET.fromstring(svg)
    assert [c.findtext(f"{SVG}title") for c in root.iter(f"{SVG}circle")] == [
        "flip rate, c1: 50.0%",
        "flip rate, c3: 25.0%",
    ]
    assert list(root.iter(f"{SVG}polyline")) == []  # two lone points, no line across the gap
    assert root.findtext(f"{SVG}desc") == "flip rate: c1 50.0%, c2 n/a, c3 25.0%"
    with pytest.raises(ValueError):
        svg_curve([Series("x", (0.5,))], title="t", x_ticks=["a", "b"])


def test_a_history_without_baselines_draws_no_chart(tmp_path: Path) -> None:
    empty = history_of([], wanted=10, branch="main")
    assert history_chart(empty) is None
    assert "<svg" not in render_history_html(empty)
    run = read_run(TESTS / "golden" / "artifacts" / "valid_v1.json")
    one = history_of([("c" * 40, "2024-01-01T00:00:00Z", run)], wanted=10, branch="main")
    assert run.agent.version is Version.BASELINE
    assert outline(render_history_html(one)).count("<circle") == 3
