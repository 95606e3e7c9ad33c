"""The 15 crash classes fuzzing found (issue 25), each through the real CLI.

Every case writes the smallest project that reached ``passk: internal
error`` (or hung) before its fix, runs ``passk_action.cli.main`` as a user
would, and checks the contract: exit 0 with a result, or exit 2 with one
line ``passk: error: ...`` naming where; never an internal error or a
traceback, and within a time bound.  Each fix is at the cause (a value
rule, a bound, a check where the string enters), so each case names the
rule that now holds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from support.fuzzing import time_bound
from support.paths import REPO

GOLDEN_RUN = REPO / "tests" / "golden" / "artifacts" / "valid_v2.json"
TAU = REPO / "tests" / "data" / "importers" / "tau_bench_retail.json"
PROMPTFOO = REPO / "tests" / "data" / "importers" / "promptfoo_refunds.json"
INSPECT = REPO / "tests" / "data" / "importers" / "inspect_refunds.json"
HUGE = 10**400
"""An integer beyond any float (float() raises OverflowError)."""
DIGITS_4301 = "9" * 4301
"""An integer longer than Python's integer-string limit (int() raises ValueError)."""
AGENT = [sys.executable, "-c", 'print(\'{"decision": "deny"}\')']


def run_cli(
    argv: list[str], cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    with time_bound():
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_clean(code: int, err: str, outcome: str, where: str = "") -> None:
    assert "internal error" not in err, err
    assert "Traceback" not in err, err
    if outcome == "ok":
        assert code == 0, err
        return
    assert code == 2, err
    errors = [line for line in err.splitlines() if line.startswith("passk: error:")]
    assert len(errors) == 1, err
    assert where in errors[0], errors[0]


def golden_run() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN_RUN.read_text("utf-8"))
    return doc


def config_text(**extra: Any) -> str:
    doc = {"dataset": "data.jsonl", "k": 3, "agent": {"command": AGENT}, **extra}
    return yaml.safe_dump(doc)


DATA = '{"id": "a", "input": {"n": 1}, "expected": "deny"}\n'


@dataclass(frozen=True)
class Case:
    number: int
    name: str
    files: Callable[[], dict[str, str]]
    argv: list[str]
    outcome: str
    """"ok" (exit 0) or "error" (exit 2, one line naming ``where``)."""
    where: str = ""
    extra: Callable[[Path, str], None] | None = field(default=None, compare=False)


def _json(doc: Any) -> str:
    # ASCII: a lone surrogate is written as the escape another tool would write.
    return json.dumps(doc)


def _run_with(edit: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    doc = golden_run()
    edit(doc)
    # json.dumps writes 10**400 as its digits: what another tool could write.
    return {"run.json": _json(doc)}


def _attempt(doc: dict[str, Any], **fields: Any) -> None:
    doc["attempts"][4].update(fields)


def _tau(edit: Callable[[list[Any]], None]) -> dict[str, str]:
    doc = json.loads(TAU.read_text("utf-8"))
    edit(doc)
    return {"tau.json": _json(doc)}


def _tau_reward(doc: list[Any]) -> None:
    doc[0]["reward"] = HUGE


def _promptfoo(edit: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    doc = json.loads(PROMPTFOO.read_text("utf-8"))
    edit(doc)
    return {"pf.json": _json(doc)}


def _inspect(edit: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    doc = json.loads(INSPECT.read_text("utf-8"))
    edit(doc)
    return {"inspect.json": _json(doc)}


def _deep_vars(doc: dict[str, Any]) -> None:
    deep: Any = "x"
    for _ in range(900):
        deep = {"v": deep}
    doc["results"]["results"][0]["vars"] = deep


def _inspect_cost(doc: dict[str, Any]) -> None:
    sample = doc["samples"][0]
    sample["model_usage"] = {"openai/gpt-4o-mini": {"input_tokens": 5, "total_cost": HUGE}}


def _surrogate_tau(doc: list[Any]) -> None:
    doc[0]["task_id"] = "\ud800"


def _huge_k(doc: dict[str, Any]) -> None:
    doc["settings"]["k"] = 10**12


IMPORT_TAU = ["import", "--from", "tau-bench", "--out", "out.json", "tau.json"]
REPORT = ["report", "run.json"]
RUN_PASSK = ["run", "--config", "passk.yml", "--out", "run.json", "--quiet"]

CASES = [
    Case(
        1,
        "http URL the schema accepts but urllib rejects",
        lambda: {
            "passk.yml": config_text(agent={"http": {"url": "http://h:99999/x"}}),
            "data.jsonl": DATA,
        },
        RUN_PASSK,
        "error",
        "passk.yml: agent.http.url",
    ),
    Case(
        2,
        "a 401-digit gate.max_cost_increase",
        lambda: {"passk.yml": config_text(gate={"max_cost_increase": 10**400}), "data.jsonl": DATA},
        RUN_PASSK,
        "error",
        "passk.yml: gate.max_cost_increase",
    ),
    Case(
        3,
        "a 401-digit pricing price",
        lambda: {
            "passk.yml": config_text(
                pricing={"models": {"m": {"input_per_mtok": 10**400, "output_per_mtok": 1}}}
            ),
            "data.jsonl": DATA,
        },
        RUN_PASSK,
        "error",
        "passk.yml: pricing.models.m.input_per_mtok",
    ),
    Case(
        4,
        "an integer over 4,300 digits in a JSONL line",
        lambda: {
            "passk.yml": config_text(),
            "data.jsonl": '{"id": "a", "input": ' + DIGITS_4301 + ', "expected": "deny"}\n',
        },
        RUN_PASSK,
        "error",
        "data.jsonl:1",
    ),
    Case(
        4,
        "an integer over 4,300 digits in a CSV input cell",
        lambda: {
            "passk.yml": config_text(dataset="data.csv"),
            "data.csv": f"id,input,expected\na,[{DIGITS_4301}],deny\n",
        },
        RUN_PASSK,
        "error",
        "data.csv:2",
    ),
    Case(
        5,
        "an integer over 4,300 digits in a JSON file read whole",
        lambda: {"run.json": json.dumps(golden_run(), indent=1)[:-2] + f',"x": {DIGITS_4301}}}'},
        REPORT,
        "error",
        "run.json",
    ),
    Case(
        6,
        "duration_s: 10**400",
        lambda: _run_with(lambda doc: _attempt(doc, duration_s=HUGE)),
        REPORT,
        "error",
        "run.json: attempts[4]",
    ),
    Case(
        7,
        "usage.cost_usd: 10**400",
        lambda: _run_with(lambda doc: _attempt(doc, usage={"cost_usd": HUGE})),
        REPORT,
        "error",
        "run.json: attempts[4]",
    ),
    Case(
        8,
        "a decision that is a lone surrogate",
        lambda: _run_with(lambda doc: _attempt(doc, decision="\ud800")),
        [*REPORT, "--format", "json"],
        "error",
        "run.json: attempts[4].decision",
    ),
    Case(
        9,
        "an imported run declaring k = 10**12 (the pass^j hang)",
        lambda: _run_with(_huge_k),
        REPORT,
        "error",
        "run.json: settings.k",
    ),
    Case(
        10,
        "a tau-bench reward of 10**400 (fast path)",
        lambda: _tau(_tau_reward),
        IMPORT_TAU,
        "ok",
    ),
    Case(
        11,
        "a tau-bench reward of 10**400 (--concat-runs)",
        lambda: _tau(_tau_reward),
        [*IMPORT_TAU, "--concat-runs"],
        "ok",
    ),
    Case(
        12,
        "a promptfoo cost of 10**400",
        lambda: _promptfoo(lambda doc: doc["results"]["results"][0].update(cost=HUGE)),
        ["import", "--from", "promptfoo", "--out", "out.json", "pf.json"],
        "ok",
    ),
    Case(
        12,
        "an Inspect total_cost of 10**400",
        lambda: _inspect(_inspect_cost),
        ["import", "--from", "inspect", "--out", "out.json", "inspect.json"],
        "ok",
    ),
    Case(
        13,
        "deeply nested promptfoo vars",
        lambda: _promptfoo(_deep_vars),
        ["import", "--from", "promptfoo", "--out", "out.json", "pf.json"],
        "ok",
    ),
    Case(
        14,
        "a lone surrogate in a harness file",
        lambda: _tau(_surrogate_tau),
        IMPORT_TAU,
        "error",
        "tau.json: [0].task_id",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.number}-{c.name}")
def test_crash_class(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    for name, text in case.files().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    code, _, err = run_cli(case.argv, tmp_path, capsys, monkeypatch)
    assert_clean(code, err, case.outcome, case.where)


HUGE_COST_AGENT = 'print(\'{"decision": "deny", "usage": {"cost_usd": 1e308}}\')'


@pytest.mark.parametrize("fmt", ["md", "json", "html"])
def test_crash_class_15_huge_reported_cost(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """An answer's ``usage.cost_usd: 1e308`` is a warning, and no report of the run breaks."""
    (tmp_path / "data.jsonl").write_text(DATA + DATA.replace('"a"', '"b"'), "utf-8")
    agent = {"command": [sys.executable, "-c", HUGE_COST_AGENT]}
    (tmp_path / "passk.yml").write_text(config_text(agent=agent), "utf-8")
    code, _, err = run_cli(RUN_PASSK, tmp_path, capsys, monkeypatch)
    assert_clean(code, err, "ok")
    run = json.loads((tmp_path / "run.json").read_text("utf-8"))
    first = run["attempts"][0]
    assert first["decision"] == "deny"
    assert "usage" not in first
    assert any("usage.cost_usd" in w for w in first["warnings"])
    code, out, err = run_cli(["report", "run.json", "--format", fmt], tmp_path, capsys, monkeypatch)
    assert_clean(code, err, "ok")
    assert out


def test_k_may_exceed_1000_only_when_a_row_holds_that_many_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """The control of class 9: an import of 1,001 trials per task declares k = 1001, and reads."""
    doc = golden_run()
    first = doc["attempts"][0]
    doc["attempts"] = [{**first, "n": n, "phase": "main"} for n in range(1, 1002)]
    doc["settings"]["k"] = 1001
    (tmp_path / "run.json").write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = run_cli(REPORT, tmp_path, capsys, monkeypatch)
    assert_clean(code, err, "ok")
    doc["settings"]["k"] = 1002
    (tmp_path / "run.json").write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = run_cli(REPORT, tmp_path, capsys, monkeypatch)
    assert_clean(code, err, "error", "run.json: settings.k: is 1002, more than 1000")


def test_a_result_file_with_a_huge_recorded_limit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """A result's policy holds the config's limits: the same rule reads them back."""
    (tmp_path / "data.jsonl").write_text(DATA, "utf-8")
    (tmp_path / "passk.yml").write_text(config_text(), "utf-8")
    assert run_cli(RUN_PASSK, tmp_path, capsys, monkeypatch)[0] == 0
    argv = ["compare", "--baseline", "run.json", "--candidate", "run.json", "--json", "r.json"]
    assert run_cli(argv, tmp_path, capsys, monkeypatch)[0] == 0
    result = json.loads((tmp_path / "r.json").read_text("utf-8"))
    result["policy"]["max_cost_increase"] = HUGE
    (tmp_path / "r.json").write_text(json.dumps(result), "utf-8")
    for argv in (["gate", "r.json"], ["report", "r.json", "--format", "json"]):
        code, _, err = run_cli(argv, tmp_path, capsys, monkeypatch)
        assert_clean(code, err, "error", "r.json: policy.max_cost_increase")


@pytest.mark.parametrize("rows", [3, "rows", {"id": "a"}, None])
def test_a_result_whose_rows_are_not_a_list_is_refused(
    rows: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """Found by bench/fuzz.py after the issue: the schema checks a result's rows as []."""
    (tmp_path / "data.jsonl").write_text(DATA, "utf-8")
    (tmp_path / "passk.yml").write_text(config_text(), "utf-8")
    assert run_cli(RUN_PASSK, tmp_path, capsys, monkeypatch)[0] == 0
    argv = ["compare", "--baseline", "run.json", "--candidate", "run.json", "--json", "r.json"]
    assert run_cli(argv, tmp_path, capsys, monkeypatch)[0] == 0
    result = json.loads((tmp_path / "r.json").read_text("utf-8"))
    result["rows"] = rows
    (tmp_path / "r.json").write_text(json.dumps(result), "utf-8")
    code, _, err = run_cli(["gate", "r.json"], tmp_path, capsys, monkeypatch)
    assert_clean(code, err, "error", "r.json: 'rows' must be a list")


def test_an_internal_error_is_one_line_that_says_where_to_report_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """Whatever slips through still fails safe: exit 2, one line, where to report it."""
    from passk_action.cli import report
    from passk_action.errors import REPORT_BUGS_AT

    def broken(path: Path) -> Any:
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(report, "read_run_or_result", broken)
    code, _, err = run_cli(REPORT, tmp_path, capsys, monkeypatch)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(
        "passk: internal error: RuntimeError: a bug over"
    )
    assert REPORT_BUGS_AT in err


def _costly_run(cost: float, version: str, dataset: Any) -> dict[str, Any]:
    """The golden run on ``dataset``, every attempt a decision that cost ``cost``."""
    doc = golden_run()
    doc["dataset_digest"] = dataset.digest
    digests = {row.id: row.input_digest for row in dataset.rows}
    for row in doc["rows"]:
        row["input_digest"] = digests[row["id"]]
    doc["agent"]["version"] = version
    for attempt in doc["attempts"]:
        attempt.pop("error", None)
        attempt.pop("detail", None)
        attempt["decision"] = "deny"
        attempt["usage"] = {"cost_usd": cost}
    return doc


FORMATS = ("md", "json", "html", "junit")


@pytest.mark.parametrize(("base", "candidate"), [(5e-324, 1e12), (1e12, 1e12), (0.0, 1e12)])
def test_the_largest_costs_an_artifact_may_hold_cannot_break_compare_gate_or_reports(
    base: float,
    candidate: float,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: Any,
) -> None:
    """Class 15's second half: whatever cost a run may hold, compare, gate and reports hold too."""
    from passk_action.inputs.dataset import load_dataset

    rows = [
        {"id": r["id"], "input": {}, "expected": r["expected"], "tags": r.get("tags", []),
         "must_not_break": r["must_not_break"]}
        for r in golden_run()["rows"]
    ]  # fmt: skip
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    dataset = load_dataset(tmp_path / "d.jsonl")
    for name, cost, version in (("b.json", base, "baseline"), ("c.json", candidate, "candidate")):
        (tmp_path / name).write_text(json.dumps(_costly_run(cost, version, dataset)), "utf-8")
    config = config_text(
        gate={"max_cost_increase": 0.25},
        dataset="d.jsonl",
        scoring={"normalize": ["strip", "casefold"]},
    )
    (tmp_path / "passk.yml").write_text(config, "utf-8")
    argv = ["compare", "--baseline", "b.json", "--candidate", "c.json", "--json", "r.json"]
    code, _, err = run_cli(argv, tmp_path, capsys, monkeypatch)
    # A 25% cost limit: +10^336% blocks; from a baseline of 0 no share can be computed.
    assert code == {5e-324: 1, 1e12: 0, 0.0: 0}[base], err
    for argv in (["gate", "r.json"], *(["report", "r.json", "--format", f] for f in FORMATS)):
        code, _, err = run_cli(argv, tmp_path, capsys, monkeypatch)
        assert "internal error" not in err and code in (0, 1), err
