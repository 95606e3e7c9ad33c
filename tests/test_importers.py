"""passk import: tau-bench, tau2-bench, Inspect and promptfoo results to run artifacts.

Input files in tests/data/importers follow the harnesses' documented schemas
(cited in each importer's docstring).  Golden artifacts are in
tests/golden/importers; regenerate after a deliberate change with

    PASSK_UPDATE_GOLDEN=1 python -m pytest tests/test_importers.py -q
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from passk_action.artifact import dump_run, read_run, run_from_json
from passk_action.cli import main
from passk_action.core.model import RowClass, Version, group_attempts
from passk_action.core.stats import compute_metrics, summarize_run
from passk_action.dataset import load_dataset
from passk_action.errors import ArtifactError, UsageError
from passk_action.importers import (
    FAIL,
    PASS,
    Imported,
    ImportOptions,
    Parsed,
    Trial,
    build_import,
    dataset_jsonl,
    inspect_ai,
    promptfoo,
    tau_bench,
)
from passk_action.importers.reader import import_files

DATA = Path(__file__).parent / "data" / "importers"
GOLDEN = Path(__file__).parent / "golden" / "importers"
NOW = "2025-06-01T12:00:00Z"


def fixed_now() -> str:
    return NOW


def do_import(source: str, *names: str, **options: Any) -> Imported:
    return import_files(
        source,
        [DATA / n for n in names],
        ImportOptions(**options),
        now=fixed_now,
        tool_version="0.1.0",
    )


def decisions(imported: Imported) -> dict[str, list[str | None]]:
    grouped = group_attempts(imported.run.attempts)
    return {
        row: [a.decision if a.decision is not None else f"!{a.error}" for a in attempts]
        for row, attempts in grouped.items()
    }


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"{path} is missing: run with PASSK_UPDATE_GOLDEN=1 to create it")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


# ------------------------------------------------------------------- golden runs


@pytest.mark.parametrize(
    ("source", "files", "golden", "options"),
    [
        ("tau-bench", ["tau_bench_retail.json"], "tau_bench_retail.run.json", {}),
        ("tau-bench", ["tau2_airline.json"], "tau2_airline.run.json", {}),
        ("inspect", ["inspect_refunds.json"], "inspect_refunds.run.json", {}),
        ("promptfoo", ["promptfoo_refunds.json"], "promptfoo_refunds.run.json", {}),
    ],
)
def test_golden_artifacts(
    source: str, files: list[str], golden: str, options: dict[str, Any]
) -> None:
    imported = do_import(source, *files, **options)
    text = dump_run(imported.run)
    check_golden(golden, text)
    # The golden artifact is a valid run that passk itself reads back.
    back = run_from_json(json.loads(text), golden)
    assert back.created_at == NOW
    assert back.dataset_digest == imported.dataset.digest


# -------------------------------------------------------------------- tau-bench


def test_tau_bench_mapping() -> None:
    imported = do_import("tau-bench", "tau_bench_retail.json")
    assert decisions(imported) == {
        # reward 0.9999995 is within 1e-6 of 1: a success
        "0": [PASS, PASS, PASS],
        "1": [PASS, FAIL, PASS],
        # the harness raised on trial 1; trial 2's reward "n/a" is skipped
        "2": [FAIL, "!harness-error", FAIL],
    }
    run = imported.run
    assert run.settings.k == 3
    assert all(r.expected == "pass" and not r.must_not_break for r in run.rows)
    error = next(a for a in run.attempts if a.error)
    assert error.detail == "litellm.RateLimitError: rate limit reached for gpt-4o"
    report = imported.report
    assert [str(s) for s in report.skipped] == [
        f"{DATA / 'tau_bench_retail.json'}: [7]: no 'task_id' (a string or an integer is needed)",
        f"{DATA / 'tau_bench_retail.json'}: [10]: reward 'n/a' is not a number",
    ]
    assert [str(d) for d in report.dropped] == [
        "task '3': has 1 trial(s), fewer than 2 (pass^k needs repeated trials)"
    ]
    assert report.summary() == (
        "imported 3 row(s), 9 attempt(s) (1 error(s)) from 1 tau-bench file(s), k=3; "
        "2 entries skipped; 1 task(s) with too few trials left out"
    )


def test_tau_bench_classes_and_metrics() -> None:
    run = do_import("tau-bench", "tau_bench_retail.json").run
    summaries = summarize_run(run.rows, group_attempts(run.attempts), 3, run.settings.scoring)
    classes = {s.id: s.row_class for s in summaries}
    assert classes == {
        "0": RowClass.STABLE_CORRECT,
        "1": RowClass.FLIP,
        "2": RowClass.UNCLASSIFIED,  # an error is not a decision: 2 valid < k
    }
    metrics = compute_metrics(summaries, 3)
    assert metrics.pass_k == pytest.approx(1 / 3)
    assert metrics.mean_accuracy == pytest.approx(5 / 8)


def test_tau2_mapping() -> None:
    imported = do_import("tau-bench", "tau2_airline.json")
    assert decisions(imported) == {
        "0": [PASS, PASS],
        "1": [FAIL, "!infrastructure-error"],
        "2": [FAIL, PASS],
    }
    assert imported.run.settings.k == 2
    assert "claude-3-7-sonnet on airline" in imported.run.agent.description
    assert imported.run.attempts[0].duration_s == pytest.approx(36.2)


def test_tau2_directory_format_reads_the_index() -> None:
    doc = {
        "info": {},
        "tasks": [],
        "simulations": [],
        "simulation_index": [
            {
                "id": "a",
                "task_id": "7",
                "trial": 1,
                "reward": 0.0,
                "termination_reason": "user_stop",
            },
            {
                "id": "b",
                "task_id": "7",
                "trial": 0,
                "reward": 1.0,
                "termination_reason": "user_stop",
            },
            {"id": "c", "task_id": "8", "trial": 0, "reward": None},
        ],
    }
    parsed = tau_bench.parse(doc, "results.json", 0, ImportOptions())
    by_task = {(t.task, t.order[1]): (t.decision, t.error) for t in parsed.trials}
    assert by_task == {
        ("7", 1): (FAIL, None),
        ("7", 0): (PASS, None),
        ("8", 0): (None, "no-reward"),
    }


def test_tau_bench_rejects_other_documents() -> None:
    with pytest.raises(ArtifactError, match="not a tau-bench or tau2-bench results file"):
        tau_bench.parse({"samples": []}, "x.json", 0, ImportOptions())


# ---------------------------------------------------------------------- Inspect


def test_inspect_mapping() -> None:
    imported = do_import("inspect", "inspect_refunds.json")
    assert decisions(imported) == {
        "1": [PASS, PASS, PASS],  # C, 1, true
        "2": [PASS, FAIL, "!no-answer"],  # C, I, N
        "r-3": [FAIL, "!sample-error"],  # I, error; epoch 3's P is skipped
    }
    report = imported.report
    assert report.k == 2
    assert [s.reason for s in report.skipped] == [
        "score value 'P' of 'match' is not C/I, 1/0 or true/false"
    ]
    assert report.skipped[0].where.endswith("inspect_refunds.json: samples[8]")
    assert any("graded with the first, 'match'" in w for w in report.warnings)
    assert any("2 task(s) have more than k=2 trials" in w for w in report.warnings)
    assert "openai/gpt-4o-mini on refund_policy" in imported.run.agent.description


def test_inspect_never_copies_the_target() -> None:
    imported = do_import("inspect", "inspect_refunds.json")
    assert "SECRET-TARGET" not in dump_run(imported.run)
    assert "SECRET-TARGET" not in dataset_jsonl(imported.dataset.rows)


def test_inspect_scorer_choice() -> None:
    # Only epoch 1 of samples 1 and 2 carries model_graded_qa: one trial each
    # (r-3's errored epoch 2 counts as its one trial).
    with pytest.raises(ArtifactError, match="no task has at least 2 trials: task '1'"):
        do_import("inspect", "inspect_refunds.json", scorer="model_graded_qa")
    parsed = inspect_ai.parse(
        json.loads((DATA / "inspect_refunds.json").read_text()),
        "log.json",
        0,
        ImportOptions(scorer="model_graded_qa"),
    )
    assert [(t.task, t.decision) for t in parsed.trials if t.error is None] == [
        ("1", PASS),
        ("2", FAIL),
    ]
    assert parsed.notes == ()


def test_inspect_unknown_scorer() -> None:
    with pytest.raises(ArtifactError, match="no scorer named 'f1'"):
        do_import("inspect", "inspect_refunds.json", scorer="f1")


def test_inspect_binary_log_is_refused_with_the_conversion_command(tmp_path: Path) -> None:
    log = tmp_path / "2025-05-20_refunds.eval"
    log.write_bytes(b"PK\x03\x04")
    with pytest.raises(UsageError, match="inspect log convert --to json"):
        import_files("inspect", [log], ImportOptions(), now=fixed_now, tool_version="0")


def test_inspect_log_without_samples() -> None:
    with pytest.raises(ArtifactError, match="no samples"):
        inspect_ai.parse({"eval": {}, "status": "success"}, "log.json", 0, ImportOptions())


# -------------------------------------------------------------------- promptfoo


def test_promptfoo_repeats_are_one_test() -> None:
    imported = do_import("promptfoo", "promptfoo_refunds.json")
    assert decisions(imported) == {
        # testIdx 0, 2, 4: one test repeated; 4 was a provider error
        "within window": [PASS, PASS, "!provider-error"],
        # no description: named after its first testIdx; 5 grades by gradingResult
        "test-1": [PASS, FAIL, PASS],
    }
    rows = {r.id: r for r in imported.dataset.rows}
    assert rows["within window"].input == {"description": "within window", "vars": {"order": "A-1"}}
    assert rows["test-1"].input == {"vars": {"order": "A-2"}}
    assert imported.report.k == 3
    assert [s.reason for s in imported.report.skipped] == ["no integer 'testIdx' and 'promptIdx'"]
    error = next(a for a in imported.run.attempts if a.error)
    assert error.detail == "API error: 503 Service Unavailable"
    assert error.duration_s == pytest.approx(30.0)


def results_doc(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"evalId": "e", "results": {"version": 3, "results": results}}


def test_promptfoo_several_prompts_need_a_choice() -> None:
    results = [
        {"promptIdx": p, "testIdx": t, "vars": {"q": t % 2}, "success": True}
        for t in range(4)
        for p in (0, 1)
    ]
    with pytest.raises(UsageError, match="--prompt-idx"):
        promptfoo.parse(results_doc(results), "out.json", 0, ImportOptions())
    parsed = promptfoo.parse(results_doc(results), "out.json", 0, ImportOptions(prompt_idx=1))
    assert len(parsed.trials) == 4
    assert parsed.notes == ("out.json: left out 4 result(s) of prompts other than promptIdx 1",)


def test_promptfoo_same_description_different_vars_stay_apart() -> None:
    results = [
        {
            "promptIdx": 0,
            "testIdx": t,
            "testCase": {"description": "d"},
            "vars": {"q": t % 2},
            "success": t < 2,
        }
        for t in range(4)
    ]
    parsed = promptfoo.parse(results_doc(results), "out.json", 0, ImportOptions())
    assert sorted({t.task for t in parsed.trials}) == ["test-0", "test-1"]


def test_promptfoo_rejects_other_documents() -> None:
    with pytest.raises(ArtifactError, match="not a promptfoo output file"):
        promptfoo.parse([], "out.json", 0, ImportOptions())


# ----------------------------------------------------------------- common rules


def trial(task: str, n: int, decision: str | None = PASS) -> Trial:
    error = None if decision is not None else "crash"
    return Trial(task, task, (0, n, n), decision, error)


def build(trials: list[Trial], **options: Any) -> Imported:
    return build_import(
        [Parsed(tuple(trials))],
        source="tau-bench",
        files=["r.json"],
        options=ImportOptions(**options),
        now=fixed_now,
        tool_version="0.1.0",
    )


def test_k_is_the_fewest_trials_and_order_follows_the_trial_number() -> None:
    imported = build(
        [trial("a", 2, FAIL), trial("a", 1), trial("a", 3), trial("b", 1), trial("b", 2)]
    )
    assert imported.run.settings.k == 2
    assert decisions(imported)["a"] == [PASS, FAIL, PASS]
    assert imported.report.warnings == (
        "1 task(s) have more than k=2 trials; all their trials are kept "
        "and pass^k uses C(c,k)/C(n,k) over them",
    )


def test_explicit_k_drops_tasks_with_fewer_trials() -> None:
    imported = build(
        [trial("a", 1), trial("a", 2), trial("a", 3), trial("b", 1), trial("b", 2)], k=3
    )
    assert [r.id for r in imported.run.rows] == ["a"]
    assert [d.reason for d in imported.report.dropped] == ["has 2 trial(s), fewer than 3"]


def test_nothing_to_import_is_an_error_naming_the_reasons() -> None:
    with pytest.raises(ArtifactError, match="no task has at least 2 trials: task 'a'"):
        build([trial("a", 1)])
    with pytest.raises(ArtifactError, match="nothing could be imported"):
        build([])
    with pytest.raises(UsageError, match="--k must be at least 1"):
        build([trial("a", 1), trial("a", 2)], k=0)


def test_dataset_out_matches_the_run_digest(tmp_path: Path) -> None:
    imported = do_import("promptfoo", "promptfoo_refunds.json")
    path = tmp_path / "rows.jsonl"
    path.write_text(dataset_jsonl(imported.dataset.rows), encoding="utf-8")
    loaded = load_dataset(path)
    assert loaded.digest == imported.run.dataset_digest
    assert [r.input_digest for r in loaded.rows] == [r.input_digest for r in imported.run.rows]


# ------------------------------------------------------------------------- CLI


def test_cli_import_writes_run_dataset_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, rows, report = tmp_path / "run.json", tmp_path / "rows.jsonl", tmp_path / "report.json"
    code = main(
        [
            "import", "--from", "tau-bench", str(DATA / "tau_bench_retail.json"),
            "--out", str(out), "--dataset-out", str(rows), "--version", "baseline",
            "--report-json", str(report),
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == (
        "passk: imported 3 row(s), 9 attempt(s) (1 error(s)) from 1 tau-bench file(s), k=3; "
        f"2 entries skipped; 1 task(s) with too few trials left out: {out}\n"
    )
    assert "not imported: task '3': has 1 trial(s)" in captured.err
    run = read_run(out)
    assert run.agent.version is Version.BASELINE
    assert load_dataset(rows).digest == run.dataset_digest
    assert len(json.loads(report.read_text())["skipped"]) == 2


def test_cli_exits_2_when_nothing_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    out = tmp_path / "run.json"
    code = main(["import", "--from", "tau-bench", str(empty), "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("passk: error: ") and "nothing could be imported" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        (
            "tau-bench",
            "pass a tau-bench results JSON (a list of {task_id, reward, trial}) "
            "or a tau2-bench one (an object with 'simulations')",
        ),
        (
            "inspect",
            "pass an Inspect eval log in JSON (an object with 'eval' and 'samples'; "
            "`inspect log convert --to json` converts .eval logs)",
        ),
        (
            "promptfoo",
            "pass promptfoo output JSON ({'results': {'results': [...]}}, "
            "as `promptfoo eval -o out.json` writes it)",
        ),
    ],
)
def test_cli_names_a_broken_file_and_the_format_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, hint: str
) -> None:
    """Not passk's artifact hint ("a file written by passk"): this file is the harness's."""
    broken = tmp_path / "results.json"
    broken.write_text('[\n{"task_id": 1,', encoding="utf-8")
    code = main(["import", "--from", source, str(broken), "--out", str(tmp_path / "r.json")])
    assert code == 2
    assert capsys.readouterr().err == (
        f"passk: error: {broken}:2: invalid JSON: Expecting property name enclosed in "
        f"double quotes ({hint})\n"
    )


def test_a_file_that_is_not_utf8_names_the_format_expected(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_bytes(b'{"eval": "\xff"}')
    with pytest.raises(ArtifactError) as caught:
        import_files("inspect", [log], ImportOptions(), now=fixed_now, tool_version="0")
    assert caught.value.one_line() == (
        f"{log}: not UTF-8 (byte 10) (pass an Inspect eval log in JSON (an object with "
        "'eval' and 'samples'; `inspect log convert --to json` converts .eval logs))"
    )


def test_cli_option_for_another_format_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "import", "--from", "tau-bench", str(DATA / "tau2_airline.json"),
            "--out", str(tmp_path / "r.json"), "--scorer", "match",
        ]
    )  # fmt: skip
    assert code == 2
    assert "--scorer applies to --from inspect only" in capsys.readouterr().err


def test_imported_runs_compare_on_the_written_dataset(tmp_path: Path) -> None:
    """Two imports of the same tasks share a digest, so compare can pair them."""
    base = do_import("tau-bench", "tau2_airline.json", version=Version.BASELINE)
    cand = do_import("tau-bench", "tau2_airline.json")
    assert base.run.dataset_digest == cand.run.dataset_digest
    assert base.run.agent.version is Version.BASELINE


# ------------------------------------------------------------------- duplicates


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def tau_entries(tasks: list[int], trials: range, reward: float = 1.0) -> list[dict[str, Any]]:
    return [{"task_id": t, "trial": n, "reward": reward} for n in trials for t in tasks]


def import_paths(source: str, *paths: Path, **options: Any) -> Imported:
    return import_files(
        source, list(paths), ImportOptions(**options), now=fixed_now, tool_version="0.1.0"
    )


def test_tau_bench_duplicate_trial_in_one_file_is_imported_once(tmp_path: Path) -> None:
    entries = tau_entries([0, 1], range(2))
    entries.append({"task_id": 0, "trial": 1, "reward": 1.0})  # [4]: the same again
    entries.append({"task_id": 1, "trial": 0, "reward": 0.0})  # [5]: same key, other result
    path = write_json(tmp_path / "a.json", entries)
    imported = import_paths("tau-bench", path)
    assert decisions(imported) == {"0": [PASS, PASS], "1": [PASS, PASS]}
    assert imported.run.settings.k == 2
    assert [str(s) for s in imported.report.skipped] == [
        f"{path}: [4]: duplicate task '0' trial 1 (first at {path}: [2]), not imported twice",
        f"{path}: [5]: duplicate task '1' trial 0 (first at {path}: [1]), not imported twice; "
        "the two disagree (fail here, pass there)",
    ]
    assert imported.report.duplicates == 2
    assert imported.report.summary() == (
        "imported 2 row(s), 4 attempt(s) (0 error(s)) from 1 tau-bench file(s), k=2; "
        "2 entries skipped (2 duplicate(s))"
    )


def test_two_tau_bench_runs_with_the_same_trial_numbers_do_not_double_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The review's case: two runs each with trials 0-3 used to give k=8."""
    a = write_json(tmp_path / "a.json", tau_entries([0, 1], range(4)))
    b = write_json(tmp_path / "b.json", tau_entries([0, 1], range(4)))
    imported = import_paths("tau-bench", a, b)
    assert imported.run.settings.k == 4
    assert len(imported.run.attempts) == 8
    report = imported.report
    assert report.duplicates == 8
    assert str(report.skipped[0]) == (
        f"{b}: [0]: duplicate task '0' trial 0 (first at {a}: [0]), not imported twice"
    )
    assert all(s.where.startswith(f"{b}: [") for s in report.skipped)
    out = tmp_path / "run.json"
    code = main(["import", "--from", "tau-bench", str(a), str(b), "--out", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == (
        "passk: imported 2 row(s), 8 attempt(s) (0 error(s)) from 2 tau-bench file(s), k=4; "
        "4 trial(s) per task from 1 of the 2 files; 8 entries skipped (8 duplicate(s)): "
        f"{out}\n"
    )
    assert f"not imported: {b}: [7]: duplicate task '1' trial 3 (first at {a}: [7])" in (
        captured.err
    )


def test_tau_bench_runs_with_distinct_trial_numbers_combine(tmp_path: Path) -> None:
    a = write_json(tmp_path / "a.json", tau_entries([0, 1], range(2)) + tau_entries([2], range(3)))
    b = write_json(tmp_path / "b.json", tau_entries([0, 1], range(2, 4), reward=0.0))
    imported = import_paths("tau-bench", a, b)
    assert decisions(imported)["0"] == [PASS, PASS, FAIL, FAIL]
    assert imported.report.skipped == ()
    assert imported.report.summary() == (
        "imported 3 row(s), 11 attempt(s) (0 error(s)) from 2 tau-bench file(s), k=3; "
        "3-4 trial(s) per task from 1-2 of the 2 files"
    )
    assert imported.report.to_json()["trials_per_task"] == [3, 4]
    assert imported.report.to_json()["files_per_task"] == [1, 2]


def test_tau2_simulations_without_a_trial_number_are_all_kept() -> None:
    doc = {
        "simulations": [
            {"task_id": "7", "trial": None, "reward_info": {"reward": 1.0}},
            {"task_id": "7", "trial": None, "reward_info": {"reward": 0.0}},
        ]
    }
    parsed = tau_bench.parse(doc, "r.json", 0, ImportOptions())
    imported = build_import(
        [parsed], source="tau-bench", files=["r.json"], options=ImportOptions(),
        now=fixed_now, tool_version="0",
    )  # fmt: skip
    assert decisions(imported) == {"7": [PASS, FAIL]}
    assert imported.report.duplicates == 0


def test_inspect_log_passed_twice_is_imported_once(tmp_path: Path) -> None:
    a = DATA / "inspect_refunds.json"
    b = write_json(tmp_path / "again.json", json.loads(a.read_text(encoding="utf-8")))
    once = do_import("inspect", "inspect_refunds.json")
    twice = import_paths("inspect", a, b)
    assert decisions(twice) == decisions(once)
    report = twice.report
    assert report.duplicates == 8
    # Each file's entries the parser could not map, then that file's duplicates.
    assert [s.where for s in report.skipped[:3]] == [
        f"{a}: samples[8]",
        f"{b}: samples[8]",
        f"{b}: samples[0]",
    ]
    assert str(report.skipped[2]) == (
        f"{b}: samples[0]: duplicate sample '1' epoch 1 (first at {a}: samples[0]), "
        "not imported twice"
    )
    # samples[8] (a P score) is skipped for its value in both files, not as a duplicate
    assert report.summary() == (
        "imported 3 row(s), 8 attempt(s) (2 error(s)) from 2 inspect file(s), k=2; "
        "2-3 trial(s) per task from 1 of the 2 files; 10 entries skipped (8 duplicate(s))"
    )


def test_inspect_duplicate_epoch_in_one_log() -> None:
    sample = {"id": "s", "scores": {"match": {"value": "C"}}}
    doc = {
        "eval": {},
        "samples": [{**sample, "epoch": 1}, {**sample, "epoch": 2}, {**sample, "epoch": 1}],
    }
    parsed = inspect_ai.parse(doc, "log.json", 0, ImportOptions())
    imported = build_import(
        [parsed], source="inspect", files=["log.json"], options=ImportOptions(),
        now=fixed_now, tool_version="0",
    )  # fmt: skip
    assert [str(s) for s in imported.report.skipped] == [
        "log.json: samples[2]: duplicate sample 's' epoch 1 (first at log.json: samples[0]), "
        "not imported twice"
    ]
    assert imported.run.settings.k == 2


def test_promptfoo_repeats_are_numbered_by_test_idx() -> None:
    parsed = promptfoo.parse(
        json.loads((DATA / "promptfoo_refunds.json").read_text(encoding="utf-8")),
        "out.json",
        0,
        ImportOptions(),
    )
    assert [(t.key, t.where) for t in parsed.trials if t.task == "within window"] == [
        ("test 'within window' repeat 1", "out.json: results.results[0]"),
        ("test 'within window' repeat 2", "out.json: results.results[2]"),
        ("test 'within window' repeat 3", "out.json: results.results[4]"),
    ]


def test_promptfoo_duplicates_in_one_file_and_across_files(tmp_path: Path) -> None:
    results = [
        {"promptIdx": 0, "testIdx": t, "vars": {"q": t % 2}, "success": True} for t in range(4)
    ]
    results.append({"promptIdx": 0, "testIdx": 2, "vars": {"q": 0}, "success": False})
    a = write_json(tmp_path / "a.json", results_doc(results))
    b = write_json(tmp_path / "b.json", results_doc(results[:2]))
    imported = import_paths("promptfoo", a, b)
    assert decisions(imported) == {"test-0": [PASS, PASS], "test-1": [PASS, PASS]}
    assert [str(s) for s in imported.report.skipped] == [
        f"{a}: results.results[4]: duplicate test 'test-0' repeat 2 "
        f"(first at {a}: results.results[2]), not imported twice; "
        "the two disagree (fail here, pass there)",
        f"{b}: results.results[0]: duplicate test 'test-0' repeat 1 "
        f"(first at {a}: results.results[0]), not imported twice",
        f"{b}: results.results[1]: duplicate test 'test-1' repeat 1 "
        f"(first at {a}: results.results[1]), not imported twice",
    ]
    assert imported.report.summary() == (
        "imported 2 row(s), 4 attempt(s) (0 error(s)) from 2 promptfoo file(s), k=2; "
        "2 trial(s) per task from 1 of the 2 files; 3 entries skipped (3 duplicate(s))"
    )
