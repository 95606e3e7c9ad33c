"""The second fuzz's crash classes (issue 31), each through the real CLI.

A second, independent fuzz aimed at what was new since issue 25 (scoring
rules, extractors, structured rows and expected checks, the measured file,
``add``, ``history``, ``plan``, HTTP redirects and Retry-After files) found
inputs that ended in a traceback, a hang or unbounded memory.  Each case
writes the smallest project that reached one, runs ``passk_action.cli.main``
as a user would, and checks the contract: exit 0/1 with a result, or exit 2
with one line ``passk: error: ...`` naming where; never an internal error,
within a time bound.  Each fix is at the cause, a rule where the value
enters (``core/values.py`` and the readers), so each case names its rule.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from support.fuzzing import time_bound
from support.paths import REPO

GOLDEN_RUN = REPO / "tests" / "golden" / "artifacts" / "valid_v2.json"
AGENT = [sys.executable, "-c", 'print(\'{"decision": "deny"}\')']
DATA = '{"id": "a", "input": {"n": 1}, "expected": "deny", "must_not_break": true}\n'


def config_text(**extra: Any) -> str:
    doc = {"dataset": "data.jsonl", "k": 3, "agent": {"command": AGENT}, **extra}
    return yaml.safe_dump(doc)


Files = dict[str, "str | bytes | Callable[[Path], None]"]


@dataclass(frozen=True)
class Case:
    name: str
    files: Callable[[], Files]
    argv: list[str]
    outcome: str
    """"ok" (exit 0 or 1) or "error" (exit 2, one line naming ``where``)."""
    where: str = ""


def run_case(case: Case, tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> str:
    for name, content in case.files().items():
        path = tmp / name
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8", errors="surrogatepass")
    monkeypatch.chdir(tmp)
    with time_bound():
        code = main(case.argv)
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    if case.outcome == "ok":
        assert code in (0, 1), err
        return err
    assert code == 2, err
    errors = [line for line in err.splitlines() if line.startswith("passk: error:")]
    assert len(errors) == 1, err
    assert case.where in errors[0], errors[0]
    return errors[0]


PLAN = [
    Case("plan-false-block-1e-30", dict, ["plan", "--gated-rows", "3", "--false-block", "1e-30"],
         "error", "--false-block must be a number from 10^-6"),
    Case("plan-a-billion-gated-rows", dict, ["plan", "--gated-rows", "1000000000"], "ok"),
    Case("plan-gated-rows-of-400-digits", dict, ["plan", "--gated-rows", "9" * 400],
         "error", "--gated-rows must be a whole number from 1 to 10^12"),
    Case("plan-negative-rate", dict, ["plan", "--gated-rows", "3", "--miss", "-0.5"],
         "error", "--miss must be a number from 10^-6"),
    Case("plan-dropped-1e-300", dict,
         ["plan", "--gated-rows", "3", "--accuracy", "0.99", "--dropped", "1e-300"],
         "error", "--dropped must be a number from 10^-6"),
    Case("plan-accuracy-two-in-a-million", dict,
         ["plan", "--gated-rows", "10", "--accuracy", "0.000002", "--dropped", "0.000001"],
         "ok"),
    Case("plan-k-1", dict, ["plan", "--gated-rows", "3", "--k", "1"],
         "error", "--k must be a whole number from 2 to 1000, as in the config"),
]  # fmt: skip


def _result_with_rule(**settings: Any) -> Files:
    from support import fuzzing

    doc = fuzzing._result_seed()
    doc["policy"]["rule"].update(settings)
    return {"r.json": json.dumps(doc)}


def _sequential(**settings: Any) -> Files:
    return {
        "passk.yml": config_text(gate={"rule": "sequential", "sequential": settings}),
        "data.jsonl": DATA,
    }


RULE_SETTINGS = [
    Case("sequential-unknown-key", lambda: {**_sequential(bogus=1), "in.json": '{"n": 2}'},
         ["add", "in.json", "--expected", "deny", "--dry-run"], "ok"),
    Case("sequential-vanishing-unreliable", lambda: _sequential(unreliable=1e-300), ["plan"],
         "error", "gate.sequential: unreliable must be a number from 10^-6"),
    Case("result-rule-reads-a-billion-answers", lambda: _result_with_rule(max_decisions=10**9),
         ["gate", "r.json"], "error", "max_decisions must be a whole number from 1 to 1000"),
    Case("result-rule-vanishing-unreliable", lambda: _result_with_rule(unreliable=5e-324),
         ["gate", "r.json"], "error", "unreliable must be a number from 10^-6"),
    Case("result-rule-unknown-key", lambda: _result_with_rule(bogus=1),
         ["gate", "r.json"], "error", "r.json"),
    Case("result-rule-control", lambda: _result_with_rule(), ["gate", "r.json"], "ok"),
]  # fmt: skip

CASES = [*PLAN, *RULE_SETTINGS]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_crash(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    run_case(case, tmp_path, capsys, monkeypatch)


def test_the_config_and_plan_share_one_rule_for_k() -> None:
    """``passk plan --k`` takes what ``k:`` in passk.yml takes: one rule, two doors."""
    from passk_action.core import values

    schema = json.loads((REPO / "src/passk_action/schemas/config.schema.json").read_text("utf-8"))
    k = schema["properties"]["k"]
    assert (k["minimum"], k["maximum"]) == (values.MIN_K, values.MAX_K)


def _link(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


ENDLESS = [
    Case("dataset-is-dev-zero",
         lambda: {"passk.yml": config_text(), "data.jsonl": _link("/dev/zero")}, ["plan"],
         "error", "data.jsonl: cannot read the dataset: larger than 1 MiB"),
    Case("config-is-dev-zero", lambda: {"passk.yml": _link("/dev/zero")}, ["plan"],
         "error", "passk.yml: cannot read the config file: larger than 1 MiB"),
    Case("artifact-is-dev-zero", lambda: {"run.json": _link("/dev/zero")},
         ["report", "run.json"], "error", "run.json: cannot read: larger than 1 MiB"),
    Case("result-is-dev-zero", lambda: {"r.json": _link("/dev/zero")},
         ["gate", "r.json"], "error", "r.json: cannot read: larger than 1 MiB"),
    Case("import-is-dev-zero", lambda: {"t.json": _link("/dev/zero")},
         ["import", "--from", "tau-bench", "t.json", "--out", "o.json"],
         "error", "t.json: cannot read: larger than 1 MiB"),
    Case("add-input-is-dev-zero",
         lambda: {"passk.yml": config_text(), "data.jsonl": DATA, "in.json": _link("/dev/zero")},
         ["add", "in.json", "--expected", "deny"], "error", "in.json: cannot read: larger than"),
    Case("control-dataset-is-dev-null", lambda: {"passk.yml": config_text(),
         "data.jsonl": _link("/dev/null")}, ["plan"], "error", "data.jsonl"),
]  # fmt: skip


@pytest.mark.parametrize("case", ENDLESS, ids=[c.name for c in ENDLESS])
def test_a_file_that_never_ends_is_refused_by_name(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """Every whole-file read is bounded (``files.py``); the bound is 1 MiB here, 1 GiB in use."""
    from passk_action import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 20)
    run_case(case, tmp_path, capsys, monkeypatch)


TAU = REPO / "tests" / "data" / "importers" / "tau_bench_retail.json"


def _tau_entries() -> list[Any]:
    doc: list[Any] = json.loads(TAU.read_text("utf-8"))
    return doc


def _first_task() -> int:
    return next(e["task_id"] for e in _tau_entries() if isinstance(e, dict) and "task_id" in e)


def test_import_dataset_out_writes_only_ids_its_loader_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """One rule for a row id (``values.row_id_problem``): import skips what the loader refuses."""
    entries = _tau_entries()
    first = _first_task()
    for entry in entries:
        if isinstance(entry, dict) and entry.get("task_id") == first:
            entry["task_id"] = "a\nb::error::x"
    files: Files = {
        "tau.json": json.dumps(entries),
        "passk.yml": yaml.safe_dump(
            {"dataset": "rows.jsonl", "k": 3, "scoring": {"by": "environment"}}
        ),
    }
    argv = [
        "import",
        "--from",
        "tau-bench",
        "tau.json",
        "--out",
        "o.json",
        "--dataset-out",
        "rows.jsonl",
    ]
    err = run_case(Case("import", lambda: files, argv, "ok"), tmp_path, capsys, monkeypatch)
    assert "task_id contains the control character U+000A, which a row id may not" in err
    compare = ["compare", "--quiet", "--baseline", "o.json", "--candidate", "o.json"]
    run_case(Case("compare", dict, compare, "ok"), tmp_path, capsys, monkeypatch)


def test_tau_bench_task_1_and_task_one_as_text_stay_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    entries = _tau_entries()
    first = _first_task()
    twin = dict(next(e for e in entries if isinstance(e, dict) and e.get("task_id") == first))
    twin["task_id"], twin["trial"] = str(first), 99
    files: Files = {"tau.json": json.dumps([*entries, twin])}
    argv = ["import", "--from", "tau-bench", "tau.json", "--out", "o.json"]
    err = run_case(Case("import", lambda: files, argv, "ok"), tmp_path, capsys, monkeypatch)
    assert f'task_id "{first}" names the same row as task_id {first}' in err
    run = json.loads((tmp_path / "o.json").read_text("utf-8"))
    assert max(a["n"] for a in run["attempts"] if a["row"] == str(first)) < 99


def test_control_tau_bench_integer_ids_import_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    argv = ["import", "--from", "tau-bench", str(TAU), "--out", "o.json"]
    err = run_case(Case("import", dict, argv, "ok"), tmp_path, capsys, monkeypatch)
    assert "same row" not in err and "control character" not in err


def test_the_settings_search_stays_within_the_rule_for_a_chance() -> None:
    """``plan --miss 1e-06`` searched a beta of 2e-7, which the rule refuses (ValueError)."""
    from passk_action.core import values
    from passk_action.core.planning import Targets, suggest

    plan = suggest(k=3, gated_rows=1, targets=Targets(miss=1e-6), alphas=(0.001,))
    assert values.chance(plan.settings.beta) is not None


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "1e400"])
def test_a_non_finite_expected_check_in_a_run_is_refused_where_it_is_read(
    constant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """NaN in ``expected_checks`` was read, then failed when written (merge, measured)."""
    doc = json.loads(GOLDEN_RUN.read_text("utf-8"))
    doc["rows"][0]["expected_checks"] = {"tools": "__X__"}
    text = json.dumps(doc).replace('"__X__"', constant)
    case = Case("report", lambda: {"run.json": text}, ["report", "run.json"], "error",
                "expected_checks.tools' must be a JSON value passk can store")  # fmt: skip
    run_case(case, tmp_path, capsys, monkeypatch)


@pytest.mark.parametrize("answer", [b'{"decision": 1e400}', b'{"decision": "deny", "x": [1e400]}'])
def test_an_answer_number_beyond_a_float_is_a_bad_output(answer: bytes) -> None:
    """1e400 became inf, which then failed when the attempt was written (found by fuzz_cli)."""
    from passk_action.agents.answer import BadOutput, parse_output

    with pytest.raises(BadOutput, match="1e400 is not valid JSON"):
        parse_output(answer)


def test_control_a_usage_beyond_a_float_costs_only_the_usage() -> None:
    from passk_action.agents.answer import parse_output

    assert parse_output(b'{"decision": "deny", "usage": {"cost_usd": 1e400}}').decision == "deny"
