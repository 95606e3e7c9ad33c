"""Bad input through the real CLI: exit 2 and exactly one line that names where and how to fix.

A table: each case writes a small project into a temporary directory, runs
``passk_action.cli.main`` as a user would, and checks the whole contract at
once: exit code 2, nothing on stdout, one line on stderr starting
``passk: error: ``, naming the file (with the line or key where there is
one) and ending with a parenthesised fix, and no traceback.  The loaders'
property tests prove "never another exception"; this proves what the user
actually reads.  Then: artifacts from another dataset or another k are
refused with the reason, never silently compared.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action import __version__
from passk_action.cli import main
from passk_action.cli.common import load_inputs
from passk_action.core.model import AgentInfo, Attempt, EvalSettings, Phase, Run, Version
from passk_action.engine.measuring import row_records
from passk_action.store.artifact import write_run
from passk_action.store.results import RESULT_SCHEMA_VERSION
from support.paths import TESTS

AGENT = [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"]
RUN = ("run", "--config", "passk.yml", "--out", "run.json", "--quiet")
GOOD_ROWS = [
    {"id": "a", "input": {"n": 1}, "expected": "deny"},
    {"id": "b", "input": {"n": 2}, "expected": "deny"},
]


def config(dataset: str = "data.jsonl", k: Any = 3, **extra: Any) -> str:
    doc: dict[str, Any] = {
        "dataset": dataset,
        "k": k,
        "agent": {"command": AGENT},
        "baseline": {"artifact": "baseline.json"},
        **extra,
    }
    return yaml.safe_dump(doc)


def rows_as(fmt: str, rows: list[dict[str, Any]]) -> str:
    """The rows written in a dataset format as a user would write them."""
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows)
    if fmt == "yaml":
        return yaml.safe_dump(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = [c for c in ("id", "input", "expected") if any(c in r for r in rows)]
    writer.writerow(columns)
    for r in rows:
        cells = [r.get(c, "") for c in columns]
        writer.writerow([json.dumps(c) if not isinstance(c, str) else c for c in cells])
    return out.getvalue()


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str | bytes]
    where: str
    """What follows ``passk: error: ``: the file, with ``:line`` or ``: key``."""
    fix: str
    """A fragment of the parenthesised fix at the end of the line."""
    argv: tuple[str, ...] = RUN
    builder: Callable[[Path], None] | None = field(default=None, compare=False)


def dataset_cases(fmt: str) -> list[Case]:
    data = f"data.{fmt}"
    cfg = config(data)

    def case(name: str, content: str | bytes, where: str, fix: str) -> Case:
        return Case(f"{fmt}-{name}", {"passk.yml": cfg, data: content}, where, fix)

    syntax = {
        "jsonl": ('{"id": "a", "input": 1, "expected": "deny"}\n{"id": "b",\n', f"{data}:2"),
        "yaml": ("- id: a\n  input: [1\n", f"{data}:3"),
        "csv": ('id,input,expected\na,"1,deny\n', f"{data}:2"),
    }[fmt]
    a = GOOD_ROWS[0]
    cases = [
        case("syntax", syntax[0], syntax[1], ""),
        case("missing-expected", rows_as(fmt, [a, {"id": "b", "input": 1}]), f"{data}:", ""),
        case("duplicate-id", rows_as(fmt, [a, dict(a)]), f"{data}:", "ids must be unique"),
        case("empty", "", f"{data}:1", "add rows like"),
        case("not-utf8", rows_as(fmt, [a]).encode() + b"caf\xe9\n", f"{data}:", "UTF-8"),
    ]
    if fmt != "csv":  # every CSV cell is a string, so these cannot be written in CSV
        cases += [
            case(
                "wrong-type",
                rows_as(fmt, [a, {"id": "b", "input": 1, "expected": ["deny"]}]),
                f"{data}:",
                "the expected decision",
            ),
            case(
                "id-not-a-string",
                rows_as(fmt, [a, {"id": 5, "input": 1, "expected": "deny"}]),
                f"{data}:",
                'quote it: "5"',
            ),
        ]
    else:
        cases.append(
            case(
                "huge-cell",
                rows_as(fmt, [a, {"id": "b", "input": "x" * 200_000, "expected": "deny"}]),
                f"{data}:3",
                "cells over 128 KiB need JSONL or YAML",
            )
        )
    return cases


GOOD_DATA = rows_as("jsonl", GOOD_ROWS)
VALID_RUN_TEXT = (TESTS / "golden" / "artifacts" / "valid_v1.json").read_text()


def artifact_with(change: Callable[[dict[str, Any]], None]) -> str:
    doc = json.loads(VALID_RUN_TEXT)
    change(doc)
    return json.dumps(doc, indent=1)


def report(path: str) -> tuple[str, ...]:
    return ("report", path, "--format", "json")


CASES: list[Case] = [
    # ------------------------------------------------------------------ config
    Case("config-syntax", {"passk.yml": "k: [3\n", "data.jsonl": GOOD_DATA}, "passk.yml:2", "YAML"),
    Case(
        "config-wrong-type",
        {"passk.yml": config(k="three"), "data.jsonl": GOOD_DATA},
        "passk.yml: k",
        "whole number",
    ),
    Case(
        "config-k-below-2",
        {"passk.yml": config(k=1), "data.jsonl": GOOD_DATA},
        "passk.yml: k: must be at least 2",
        "from 2 to 1000",
    ),
    Case(
        "config-k-absurd",
        {"passk.yml": config(k=100_000_000_000), "data.jsonl": GOOD_DATA},
        "passk.yml: k: must be at most 1000",
        "from 2 to 1000",
    ),
    Case(
        "config-missing-dataset",
        {"passk.yml": "k: 3\nagent: {command: [x]}\n", "data.jsonl": GOOD_DATA},
        "passk.yml: dataset",
        "path of the labeled dataset",
    ),
    Case(
        "config-not-utf8",
        {"passk.yml": config().encode() + b"# caf\xe9\n", "data.jsonl": GOOD_DATA},
        "passk.yml:",
        "UTF-8",
    ),
    Case("config-empty", {"passk.yml": "", "data.jsonl": GOOD_DATA}, "passk.yml", "required"),
    Case("config-missing", {"data.jsonl": GOOD_DATA}, "passk.yml", "--config PATH"),
    Case(
        "config-dataset-missing",
        {"passk.yml": config("nope.jsonl")},
        "nope.jsonl",
        "",
    ),
    # ---------------------------------------------------------------- datasets
    *dataset_cases("jsonl"),
    *dataset_cases("yaml"),
    *dataset_cases("csv"),
    Case(
        "yaml-duplicate-id-by-alias",
        {
            "passk.yml": config("data.yaml"),
            "data.yaml": "- &r {id: a, input: 1, expected: x}\n- *r\n",
        },
        "data.yaml:",
        "ids must be unique",
    ),
    # ----------------------------------------------------------------- scoring
    Case(
        "scoring-unknown-field",
        {
            "passk.yml": config(scoring={"fields": {"action": "exact", "amount": "exact"}}),
            "data.jsonl": '{"id": "a", "input": 1, "expected": {"action": "deny", "amout": 0}}\n',
        },
        "data.jsonl:1",
        "did you mean 'amount'? scoring.fields names action, amount",
    ),
    Case(
        "scoring-tolerance-on-a-string",
        {
            "passk.yml": config(scoring={"fields": {"amount": {"tolerance": 0.01}}}),
            "data.jsonl": '{"id": "a", "input": 1, "expected": {"amount": "120"}}\n',
        },
        "data.jsonl:1",
        "write the number without quotes, or remove the tolerance",
    ),
    Case(
        "scoring-regex-does-not-compile",
        {
            "passk.yml": config(scoring={"extract": {"regex": "DECISION: (\\w+"}}),
            "data.jsonl": GOOD_DATA,
        },
        "passk.yml: scoring.extract.regex",
        "write a Python regular expression",
    ),
    Case(
        "scoring-regex-without-a-group",
        {
            "passk.yml": config(scoring={"extract": {"regex": "deny|approve"}}),
            "data.jsonl": GOOD_DATA,
        },
        "passk.yml: scoring.extract.regex",
        "make other groups non-capturing",
    ),
    Case(
        "scoring-extractor-matches-nothing",
        {
            "passk.yml": config(scoring={"extract": {"regex": "DECISION: (\\w+)"}}),
            "data.jsonl": GOOD_DATA,
        },
        "scoring.extract",
        "fix the extractor so it finds the decision in answers like this one",
    ),
    Case(
        "scoring-expected-in-an-environment-scored-row",
        {"passk.yml": config(scoring={"by": "environment"}), "data.jsonl": GOOD_DATA},
        "data.jsonl:1",
        'the agent reports "correct" or a "score" per task',
    ),
    # --------------------------------------------------------------- artifacts
    Case(
        "artifact-syntax",
        {"run.json": '{"schema_version": 1,\n'},
        "run.json:",
        "pass a file written by passk, or restore it from git",
        argv=report("run.json"),
    ),
    Case("artifact-empty", {"run.json": ""}, "run.json:", "", argv=report("run.json")),
    Case(
        "artifact-not-utf8",
        {"run.json": VALID_RUN_TEXT.encode().replace(b"python3", b"pyth\xf6n3")},
        "run.json",
        "passk writes UTF-8 JSON",
        argv=report("run.json"),
    ),
    Case(
        "artifact-wrong-type",
        {"run.json": artifact_with(lambda d: d["rows"][0].update(must_not_break="yes"))},
        "run.json: rows[0]",
        "",
        argv=report("run.json"),
    ),
    Case(
        "artifact-k-below-2",
        {"run.json": artifact_with(lambda d: d["settings"].update(k=1))},
        "run.json: settings.k",
        "",
        argv=report("run.json"),
    ),
    Case(
        "artifact-no-schema-version",
        {"run.json": artifact_with(lambda d: d.pop("schema_version"))},
        "run.json",
        "this file was not written by passk",
        argv=report("run.json"),
    ),
    Case(
        "artifact-not-an-object",
        {"run.json": "[1, 2]"},
        "run.json",
        "",
        argv=report("run.json"),
    ),
    Case(
        "artifact-nan",
        {"run.json": VALID_RUN_TEXT.replace('"duration_s":0.5', '"duration_s":NaN')},
        "run.json: attempts[1]",
        "",
        argv=report("run.json"),
    ),
    Case("artifact-missing", {}, "run.json", "", argv=report("run.json")),
    # ------------------------------------------------------------------ results
    Case(
        "result-is-a-run",
        {"result.json": VALID_RUN_TEXT},
        "result.json",
        "pass the right file",
        argv=("gate", "result.json"),
    ),
    Case(
        "result-syntax",
        {"result.json": '{"kind": "passk-result"'},
        "result.json:",
        "pass a file written by passk, or restore it from git",
        argv=("gate", "result.json"),
    ),
    Case(
        "result-wrong-type",
        {"result.json": json.dumps({"schema_version": 1, "kind": "passk-result", "rows": 3})},
        "result.json",
        "",
        argv=("gate", "result.json"),
    ),
    Case(
        "result-newer",
        {
            "result.json": json.dumps(
                {"schema_version": RESULT_SCHEMA_VERSION + 1, "kind": "passk-result"}
            )
        },
        "result.json",
        "upgrade passk",
        argv=("gate", "result.json"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_exits_2_with_one_line(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.json").write_text('{"default": "deny"}')
    for name, content in case.files.items():
        data = content.encode() if isinstance(content, str) else content
        (tmp_path / name).write_bytes(data)
    code = main(list(case.argv))
    captured = capsys.readouterr()
    err = captured.err.replace(f"{tmp_path}/", "")
    assert code == 2, err
    assert captured.out == ""
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"passk: error: {case.where}"), line
    # Every message ends with how to fix it, in parentheses.
    assert line.endswith(")") and " (" in line, line
    fix = line[line.rindex(" (") :]
    assert case.fix in line[line.index(" (") :], (case.fix, fix)
    assert not (tmp_path / "run.json").exists() or case.argv != RUN, "bad input wrote a run"


@pytest.mark.parametrize("fmt", ["jsonl", "yaml", "csv"])
def test_a_bom_and_a_huge_row_are_fine(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not bad input: Excel's BOM, and (JSONL/YAML) a 2 MB input the agent gets whole."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.json").write_text('{"default": "deny"}')
    rows = [dict(r) for r in GOOD_ROWS]
    if fmt != "csv":
        rows[1]["input"] = {"history": "y" * 2_000_000}
    bom = b"\xef\xbb\xbf"
    (tmp_path / f"data.{fmt}").write_bytes(bom + rows_as(fmt, rows).encode())
    (tmp_path / "passk.yml").write_bytes(bom + config(f"data.{fmt}", k=2).encode())
    assert main(list(RUN)) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "run.json").read_text())
    assert [a["decision"] for a in doc["attempts"]] == ["deny"] * 4


# ------------------------------------------------- artifacts that do not match


def recorded_run(
    root: Path,
    *,
    k: int,
    version: Version,
    digest: str | None = None,
    input_digest: str | None = None,
) -> Run:
    inputs = load_inputs(str(root / "passk.yml"))
    rows = row_records(inputs.dataset)
    if input_digest is not None:  # as if the first row's input had been edited
        rows = (replace(rows[0], input_digest=input_digest), *rows[1:])
    return Run(
        tool_version=__version__,
        dataset_digest=digest or inputs.dataset.digest,
        settings=EvalSettings(k=k),
        agent=AgentInfo(version, "scripted"),
        created_at="2026-11-30T09:00:00Z",
        rows=rows,
        attempts=tuple(Attempt(r.id, n, Phase.MAIN, "deny") for r in rows for n in range(1, k + 1)),
    )


@pytest.fixture
def compare_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.json").write_text('{"default": "deny"}')
    (tmp_path / "data.jsonl").write_text(GOOD_DATA)
    (tmp_path / "passk.yml").write_text(config())
    return tmp_path


def compare(*extra: str) -> list[str]:
    return ["compare", "--config", "passk.yml", "--quiet", "--json", "result.json", *extra]


def test_a_baseline_recorded_with_another_k_is_refused(
    compare_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(
        recorded_run(compare_project, k=4, version=Version.BASELINE),
        compare_project / "baseline.json",
    )
    assert main(compare()) == 2
    assert capsys.readouterr().err == (
        "passk: error: baseline.json: the baseline was recorded with k=4; "
        "the config has k=3 (record it again with the current config "
        "(`passk baseline`))\n"
    )
    assert not (compare_project / "result.json").exists()


def test_a_candidate_run_of_another_dataset_or_k_is_refused(
    compare_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(
        recorded_run(compare_project, k=3, version=Version.BASELINE),
        compare_project / "baseline.json",
    )
    edited = recorded_run(
        compare_project,
        k=3,
        version=Version.CANDIDATE,
        digest="sha256:" + "1" * 64,
        input_digest="sha256:" + "2" * 64,
    )
    first = edited.rows[0].id
    write_run(edited, compare_project / "candidate.json")
    assert main(compare("--candidate", "candidate.json")) == 2
    assert capsys.readouterr().err == (
        "passk: error: --candidate: the candidate run was recorded on another version of the "
        f"dataset: 1 row(s) are missing or have another input ({first}) "
        "(run the candidate again on the current dataset)\n"
    )
    # Only labels or marks differ (another dataset digest, the same inputs): the
    # recorded decisions still hold and are scored against today's labels.
    relabeled = recorded_run(
        compare_project, k=3, version=Version.CANDIDATE, digest="sha256:" + "1" * 64
    )
    write_run(relabeled, compare_project / "candidate.json")
    assert main(compare("--candidate", "candidate.json")) == 0, capsys.readouterr().err
    capsys.readouterr()
    write_run(
        recorded_run(compare_project, k=2, version=Version.CANDIDATE),
        compare_project / "candidate.json",
    )
    assert main(compare("--candidate", "candidate.json")) == 2
    err = capsys.readouterr().err
    assert err.startswith("passk: error: --candidate: the candidate run was recorded with k=2")
    assert len(err.splitlines()) == 1
    # The same candidate on the current dataset and k compares fine: the refusals were real.
    write_run(
        recorded_run(compare_project, k=3, version=Version.CANDIDATE),
        compare_project / "candidate.json",
    )
    assert main(compare("--candidate", "candidate.json")) == 0, capsys.readouterr().err


def test_golden_valid_artifact_is_not_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The matrix's artifacts are the valid golden file with one fault: the file itself loads."""
    path = tmp_path / "run.json"
    path.write_text(VALID_RUN_TEXT)
    assert main(list(report(str(path)))) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["rows"] == 2
