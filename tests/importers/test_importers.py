"""passk import: tau-bench, tau2-bench, Inspect and promptfoo results to run artifacts.

Input files in tests/data/importers follow the harnesses' documented schemas
(cited in each importer's docstring).  Golden artifacts are in
tests/golden/importers; regenerate after a deliberate change with

    PASSK_UPDATE_GOLDEN=1 python -m pytest tests/importers/test_importers.py -q
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main
from passk_action.core.cost import compare_spend
from passk_action.core.gate import GatePolicy, decide
from passk_action.core.model import RowClass, Scoring, Version, group_attempts
from passk_action.core.stats import compute_metrics, summarize_run
from passk_action.errors import ArtifactError, UsageError
from passk_action.importers import (
    FAIL,
    PASS,
    PASSK_CONVENTION,
    UNTIMED_WARNING,
    Imported,
    ImportOptions,
    Parsed,
    Trial,
    build_import,
    dataset_jsonl,
    headline,
    inspect_ai,
    promptfoo,
    tau_bench,
)
from passk_action.importers.reader import import_files
from passk_action.inputs.dataset import load_dataset
from passk_action.report.run_report import render_run_report
from passk_action.store.artifact import dump_run, read_run, run_from_json
from support.paths import TESTS
from support.words import warned

DATA = TESTS / "data" / "importers"
GOLDEN = TESTS / "golden" / "importers"
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
    imported = do_import("tau-bench", "tau_bench_retail.json", errors="passk")
    assert decisions(imported) == {
        # reward 0.9999995 is within 1e-6 of 1: a success
        "0": [PASS, PASS, PASS],
        "1": [PASS, FAIL, PASS],
        # the harness raised on trial 1; trial 2's reward "n/a" is skipped
        "2": [FAIL, "!harness-error", FAIL],
    }
    run = imported.run
    assert run.settings.k == 3
    assert all(r.expected is None and not r.must_not_break for r in run.rows)
    assert run.settings.scoring == Scoring(by="environment")
    assert {(a.decision, a.correct) for a in run.attempts if a.decision} == {
        (PASS, True),
        (FAIL, False),
    }
    error = next(a for a in run.attempts if a.error)
    assert error.detail == "litellm.RateLimitError: rate limit reached for gpt-4o"
    report = imported.report
    assert [str(s) for s in report.skipped] == [
        f"{DATA / 'tau_bench_retail.json'}: [7]: no 'task_id' (a string or an integer is needed)",
        f"{DATA / 'tau_bench_retail.json'}: [10]: reward 'n/a' is not a finite number",
    ]
    assert [str(d) for d in report.dropped] == [
        "task '3': has 1 trial(s), fewer than 2 (pass^k needs repeated trials)"
    ]
    assert report.summary() == (
        "imported 3 row(s), 9 attempt(s) (1 error(s)) from 1 tau-bench file(s), k=3; "
        "2 entries skipped; 1 task(s) with too few trials left out"
    )


def test_tau_bench_scores_a_raised_trial_as_a_failure_by_default() -> None:
    """run.py records reward 0 for a trial that raised: tau-bench's numbers count it."""
    imported = do_import("tau-bench", "tau_bench_retail.json")
    assert decisions(imported)["2"] == [FAIL, FAIL, FAIL]
    failed = [a for a in imported.run.attempts if a.row_id == "2"][1]
    assert failed.error is None
    assert failed.detail == "harness-error: litellm.RateLimitError: rate limit reached for gpt-4o"
    info = imported.run.imported
    assert info is not None and info.errors == "harness"
    assert info.convention == tau_bench.CONVENTION_TAU
    assert dict(info.left_out) == {
        "tasks with too few trials": 1,
        "entries that could not be mapped": 2,
    }
    report = imported.report
    assert report.summary() == (
        "imported 3 row(s), 9 attempt(s) (0 error(s)) from 1 tau-bench file(s), k=3; "
        "errored trials as tau-bench scores them: 1 scored as failures; "
        "2 entries skipped; 1 task(s) with too few trials left out"
    )
    # tau-bench's own numbers: 9 graded trials, 5 successes; pass^3 = (1 + 0 + 0) / 3
    assert headline(imported.run) == (
        "mean accuracy 0.556, pass^3 0.333 over 3 row(s), 0 error attempt(s)"
    )
    assert report.beside == (
        "with --errors passk: mean accuracy 0.625, pass^3 0.333 over 3 row(s), 1 error attempt(s)"
    )
    assert report.headline == headline(imported.run)


def test_tau_bench_classes_and_metrics() -> None:
    run = do_import("tau-bench", "tau_bench_retail.json", errors="passk").run
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
    imported = do_import("tau-bench", "tau2_airline.json", errors="passk")
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
    imported = do_import("inspect", "inspect_refunds.json", errors="passk")
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


def test_rows_with_more_trials_than_k_keep_them_all_and_the_report_says_how_they_read() -> None:
    """Issue 20: every trial is kept; the class uses them all (stable-correct only when every
    trial was right), pass^k stays the harness's unbiased C(c,k)/C(n,k) over all of them;
    the report says once how the two relate, and only where it applies."""
    imported = do_import("inspect", "inspect_refunds.json", errors="passk")
    run = imported.run
    k = run.settings.k
    summaries = {
        s.id: s for s in summarize_run(run.rows, run.attempts_by_row(), k, run.settings.scoring)
    }
    row = summaries["2"]  # PASS, FAIL, and an error: 3 trials, k = 2
    assert (row.attempts, row.correct, row.row_class) == (3, 1, RowClass.FLIP)
    metrics = compute_metrics(list(summaries.values()), k)
    assert metrics.beyond_k == 2  # rows "1" and "2"
    # pass^2 of row "1": 3 right of 3 -> 1; of row "2": C(1,2)/C(3,2) = 0: a flip scores 0.
    assert summaries["1"].row_class is RowClass.STABLE_CORRECT
    sentence = (
        "2 rows have more than k = 2 trials: pass^k counts k-in-a-row chances on all of them "
        "(C(c,k)/C(n,k), the harness's own figure), while a row is stable-correct only if "
        "every trial was right."
    )
    report = render_run_report(run)
    assert report.count(sentence) == 1
    assert metrics.to_json()["beyond_k"] == 2
    # Where it does not apply, nothing is said (and the JSON keeps its old keys).
    plain = replace(run, attempts=tuple(a for a in run.attempts if a.number <= k))
    assert "more than k" not in render_run_report(plain)
    plain_metrics = compute_metrics(
        summarize_run(plain.rows, plain.attempts_by_row(), k, plain.settings.scoring), k
    )
    assert "beyond_k" not in plain_metrics.to_json()


def test_inspect_leaves_errored_samples_out_and_scores_no_answer_as_incorrect() -> None:
    """Inspect's accuracy: N is 0 (value_to_float); a sample that errored has no score."""
    imported = do_import("inspect", "inspect_refunds.json")
    assert decisions(imported) == {
        "1": [PASS, PASS, PASS],
        "2": [PASS, FAIL, FAIL],
        # r-3 keeps one graded epoch (I): fewer than 2 trials, so the task is left out
    }
    report = imported.report
    assert (report.errored_left_out, report.scored_as_failures) == (1, 1)
    assert [str(d) for d in report.dropped] == [
        "task 'r-3': has 1 trial(s), fewer than 2 (pass^k needs repeated trials)"
    ]
    assert report.k == 3
    info = imported.run.imported
    assert info is not None and info.convention == inspect_ai.CONVENTION
    assert dict(info.left_out)["errored trials left out"] == 1
    # The summary counts from the trials; the reference summarises the built runs.
    assert report.headline == headline(imported.run)
    passk = do_import("inspect", "inspect_refunds.json", errors="passk")
    assert report.beside == f"with --errors passk: {headline(passk.run)}"
    assert passk.report.beside == f"with --errors harness: {headline(imported.run)}"


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
    with pytest.raises(UsageError) as raised:
        import_files("inspect", [log], ImportOptions(), now=fixed_now, tool_version="0")
    # `inspect log convert` needs --output-dir: without it the command fails.
    assert raised.value.hint == (
        f"convert it first: inspect log convert {log} --to json --output-dir DIR, "
        "then import DIR/2025-05-20_refunds.json"
    )


def test_inspect_log_without_samples() -> None:
    with pytest.raises(ArtifactError, match="no samples"):
        inspect_ai.parse({"eval": {}, "status": "success"}, "log.json", 0, ImportOptions())


# -------------------------------------------------------------------- promptfoo


def vars_id(vars_: dict[str, Any]) -> str:
    """The row id of a promptfoo test without a description: a hash of its vars."""
    text = json.dumps(vars_, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "test-" + hashlib.sha256(text.encode()).hexdigest()[:12]


A2 = vars_id({"order": "A-2"})


def test_promptfoo_repeats_are_one_test() -> None:
    imported = do_import("promptfoo", "promptfoo_refunds.json", errors="passk")
    assert decisions(imported) == {
        # testIdx 0, 2, 4: one test repeated; 4 was a provider error
        "within window": [PASS, PASS, "!provider-error"],
        # no description: named after its vars; 5 grades by gradingResult
        A2: [PASS, FAIL, PASS],
    }
    rows = {r.id: r for r in imported.dataset.rows}
    assert rows["within window"].input == {"description": "within window", "vars": {"order": "A-1"}}
    assert rows[A2].input == {"vars": {"order": "A-2"}}
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
    assert len({t.task for t in parsed.trials}) == 2
    assert all(t.task.startswith("test-") for t in parsed.trials)


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
    with pytest.raises(UsageError, match="--k must be at least 2, got 0"):
        build([trial("a", 1), trial("a", 2)], k=0)


def test_dataset_out_matches_the_run_digest(tmp_path: Path) -> None:
    imported = do_import("promptfoo", "promptfoo_refunds.json")
    path = tmp_path / "rows.jsonl"
    path.write_text(dataset_jsonl(imported.dataset.rows), encoding="utf-8")
    loaded = load_dataset(path, scoring=imported.run.settings.scoring)
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
        "passk: imported 3 row(s), 9 attempt(s) (0 error(s)) from 1 tau-bench file(s), k=3; "
        "errored trials as tau-bench scores them: 1 scored as failures; "
        f"2 entries skipped; 1 task(s) with too few trials left out: {out}\n"
        f"passk: {tau_bench.CONVENTION_TAU}: "
        "mean accuracy 0.556, pass^3 0.333 over 3 row(s), 0 error attempt(s); "
        "with --errors passk: mean accuracy 0.625, pass^3 0.333 over 3 row(s), "
        "1 error attempt(s)\n"
        f"passk: {rows}: its rows expect no decision (tau-bench graded each trial): point "
        "`dataset:` at it, with `scoring: {by: environment}`\n"
    )
    assert "not imported: task '3': has 1 trial(s)" in captured.err
    run = read_run(out)
    assert run.agent.version is Version.BASELINE
    assert load_dataset(rows, scoring=run.settings.scoring).digest == run.dataset_digest
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
            "`inspect log convert LOG --to json --output-dir DIR` converts .eval logs)",
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
        "'eval' and 'samples'; `inspect log convert LOG --to json --output-dir DIR` "
        "converts .eval logs))"
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
        "the two disagree (failure here, success there)",
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
    once = do_import("inspect", "inspect_refunds.json", errors="passk")
    twice = import_paths("inspect", a, b, errors="passk")
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
        "2-3 trial(s) per task from 1 of the 2 files; 10 entries skipped (8 duplicate(s)); "
        "values left out: output tokens of 1 trial(s) (not a whole number from 0 to 10^12)"
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
    q0, q1 = (vars_id({"q": q}) for q in (0, 1))
    assert decisions(imported) == {q0: [PASS, PASS], q1: [PASS, PASS]}
    assert [str(s) for s in imported.report.skipped] == [
        f"{a}: results.results[4]: duplicate test '{q0}' repeat 2 "
        f"(first at {a}: results.results[2]), not imported twice; "
        "the two disagree (failure here, success there)",
        f"{b}: results.results[0]: duplicate test '{q0}' repeat 1 "
        f"(first at {a}: results.results[0]), not imported twice",
        f"{b}: results.results[1]: duplicate test '{q1}' repeat 1 "
        f"(first at {a}: results.results[1]), not imported twice",
    ]
    assert imported.report.summary() == (
        "imported 2 row(s), 4 attempt(s) (0 error(s)) from 2 promptfoo file(s), k=2; "
        "2 trial(s) per task from 1 of the 2 files; 3 entries skipped (3 duplicate(s))"
    )


# ------------------------------------------------- error conventions (issue 14)


def test_tau2_leaves_infrastructure_errors_out_and_fails_context_overflow() -> None:
    """tau2's metrics drop infrastructure errors; anything else without success scores 0."""
    doc = {
        "info": {},
        "simulations": [
            {"task_id": "a", "trial": 0, "reward_info": {"reward": 1.0}},
            {"task_id": "a", "trial": 1, "termination_reason": "infrastructure_error"},
            {"task_id": "a", "trial": 2, "reward_info": {"reward": 1.0}},
            {"task_id": "b", "trial": 0, "reward_info": {"reward": 1.0}},
            {"task_id": "b", "trial": 1, "termination_reason": "context_window_exceeded"},
            {"task_id": "b", "trial": 2, "reward_info": None},
        ],
    }
    parsed = tau_bench.parse(doc, "r.json", 0, ImportOptions())
    harness = build([*parsed.trials])
    assert decisions(harness) == {"a": [PASS, PASS], "b": [PASS, FAIL, FAIL]}
    assert (harness.report.errored_left_out, harness.report.scored_as_failures) == (1, 2)
    assert harness.run.settings.k == 2
    passk = build([*parsed.trials], errors="passk")
    assert decisions(passk) == {
        "a": [PASS, "!infrastructure-error", PASS],
        "b": [PASS, "!context-window-exceeded", "!no-reward"],
    }
    info = passk.run.imported
    assert info is not None and (info.errors, info.convention) == ("passk", PASSK_CONVENTION)


def test_promptfoo_counts_a_provider_error_as_a_failed_test_by_default() -> None:
    imported = do_import("promptfoo", "promptfoo_refunds.json")
    assert decisions(imported)["within window"] == [PASS, PASS, FAIL]
    assert imported.report.scored_as_failures == 1
    info = imported.run.imported
    assert info is not None and info.convention == promptfoo.CONVENTION


def test_an_unknown_error_convention_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown --errors 'mine'"):
        build([trial("a", 1), trial("a", 2)], errors="mine")


def test_the_convention_survives_the_artifact_and_older_imports_still_read(
    tmp_path: Path,
) -> None:
    imported = do_import("inspect", "inspect_refunds.json")
    back = run_from_json(json.loads(dump_run(imported.run)), "run.json")
    assert back.imported == imported.run.imported
    # An import written before runs recorded their convention reads as before.
    old = read_run(DATA / "before_imported_field.run.json")
    assert old.imported is None
    assert len(old.attempts) == 9


# ---------------------------------------------------- combining runs, keys, bugs


def test_concat_runs_joins_two_runs_that_both_number_trials_from_0(tmp_path: Path) -> None:
    a = write_json(tmp_path / "a.json", tau_entries([1, 2], range(3)))
    b = write_json(tmp_path / "b.json", tau_entries([1, 2], range(3), reward=0.0))
    joined = import_paths("tau-bench", a, b, concat_runs=True)
    assert joined.run.settings.k == 6
    assert decisions(joined)["1"] == [PASS] * 3 + [FAIL] * 3
    assert joined.report.duplicates == 0
    assert "6 trial(s) per task from 2 of the 2 files" in joined.report.summary()
    # Without the option they are the same trials seen twice.
    assert import_paths("tau-bench", a, b).run.settings.k == 3


def test_concat_runs_refuses_the_same_file_twice(tmp_path: Path) -> None:
    a = write_json(tmp_path / "a.json", tau_entries([1], range(3)))
    with pytest.raises(UsageError, match="is given twice"):
        import_paths("tau-bench", a, tmp_path / "." / "a.json", concat_runs=True)


def test_concat_runs_joins_inspect_epochs(tmp_path: Path) -> None:
    a = DATA / "inspect_refunds.json"
    b = write_json(tmp_path / "b.json", json.loads(a.read_text(encoding="utf-8")))
    joined = import_paths("inspect", a, b, concat_runs=True)
    assert decisions(joined)["1"] == [PASS] * 6
    assert joined.report.duplicates == 0


def inspect_log(task: str, values: list[str], status: str = "success") -> dict[str, Any]:
    samples = [
        {"id": 1, "epoch": epoch, "scores": {"match": {"value": value}}}
        for epoch, value in enumerate(values, start=1)
    ]
    return {"status": status, "eval": {"task": task, "model": "m"}, "samples": samples}


def test_two_inspect_tasks_with_the_same_sample_ids_stay_apart(tmp_path: Path) -> None:
    a = write_json(tmp_path / "a.json", inspect_log("refunds", ["C", "C"]))
    b = write_json(tmp_path / "b.json", inspect_log("returns", ["I", "I"]))
    imported = import_paths("inspect", a, b)
    assert decisions(imported) == {"refunds/1": [PASS, PASS], "returns/1": [FAIL, FAIL]}
    assert imported.report.duplicates == 0
    rows = {r.id: r.input for r in imported.dataset.rows}
    assert rows["refunds/1"] == {"task": "refunds", "id": "1"}


def test_a_failed_inspect_eval_is_refused_unless_asked(tmp_path: Path) -> None:
    doc = inspect_log("refunds", ["C", "C"], status="error")
    doc["error"] = {"message": "RuntimeError: provider quota exhausted\n...", "traceback": ""}
    log = write_json(tmp_path / "log.json", doc)
    with pytest.raises(ArtifactError) as raised:
        import_paths("inspect", log)
    assert raised.value.message == (
        "the eval's status is 'error' (RuntimeError: provider quota exhausted): "
        "the log holds only the samples that finished, which would lower k"
    )
    assert raised.value.hint is not None and "--allow-incomplete" in raised.value.hint
    imported = import_paths("inspect", log, allow_incomplete=True)
    assert imported.run.settings.k == 2
    assert any("imported the samples that finished" in w for w in imported.report.warnings)


def test_promptfoo_ids_do_not_move_with_position_or_repeat(tmp_path: Path) -> None:
    tests = [{"vars": {"order": name}} for name in ("A-1", "A-2", "A-3")]

    def run(order: list[int], repeat: int) -> set[str]:
        results = [
            {"promptIdx": 0, "testIdx": r * len(order) + i, "vars": tests[t]["vars"],
             "testCase": tests[t], "success": True}
            for r in range(repeat)
            for i, t in enumerate(order)
        ]  # fmt: skip
        parsed = promptfoo.parse(results_doc(results), "out.json", 0, ImportOptions())
        return {t.task for t in parsed.trials}

    ids = run([0, 1, 2], 2)
    assert ids == {vars_id(t["vars"]) for t in tests}
    assert run([2, 0, 1], 3) == ids


def test_promptfoo_nan_in_vars_is_imported_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        '{"results": {"results": ['
        '{"promptIdx": 0, "testIdx": 0, "vars": {"x": NaN}, "success": true},'
        '{"promptIdx": 0, "testIdx": 1, "vars": {"x": NaN}, "success": false},'
        '{"promptIdx": 0, "testIdx": 2, "vars": {"x": Infinity}, "success": true},'
        '{"promptIdx": 0, "testIdx": 3, "vars": {"x": Infinity}, "success": true}]}}'
    )
    path = tmp_path / "out.json"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "run.json"
    assert main(["import", "--from", "promptfoo", str(path), "--out", str(out)]) == 0
    assert "hold NaN or Infinity" in capsys.readouterr().err
    assert {r.id for r in read_run(out).rows} == {
        vars_id({"x": "NaN"}),
        vars_id({"x": "Infinity"}),
    }


def test_a_reward_that_is_not_finite_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(
        '[{"task_id": 1, "trial": 0, "reward": 1.0}, {"task_id": 1, "trial": 1, "reward": 1.0},'
        '{"task_id": 1, "trial": 2, "reward": NaN}]',
        encoding="utf-8",
    )
    imported = import_paths("tau-bench", path)
    assert [s.reason for s in imported.report.skipped] == ["reward nan is not a finite number"]


def test_k_1_is_refused_at_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.json"
    code = main(
        ["import", "--from", "tau-bench", str(DATA / "tau_bench_retail.json"),
         "--out", str(out), "--k", "1"]
    )  # fmt: skip
    assert code == 2
    assert "--k must be at least 2, got 1" in capsys.readouterr().err
    assert not out.exists()


def tau2_directory(folder: Path, index: Any) -> Path:
    """A tau2 run saved with format="dir": results.json and simulations/<id>.json."""
    (folder / "simulations").mkdir(parents=True)
    meta = {"timestamp": "t", "info": {"agent_info": {"llm": "m"}}, "tasks": []}
    meta["simulation_index"] = index
    write_json(folder / "results.json", meta)
    for task in ("0", "1"):
        for trial_no in (0, 1):
            sim = {
                "id": f"sim-{task}-{trial_no}",
                "task_id": task,
                "trial": trial_no,
                "duration": 2.0,
                "termination_reason": "user_stop",
                "reward_info": {"reward": 1.0 if task == "0" else float(trial_no)},
                "messages": [],
            }
            write_json(folder / "simulations" / f"sim-{task}-{trial_no}.json", sim)
    return folder


@pytest.mark.parametrize("index", [None, []])
def test_tau2_directory_format_reads_the_simulation_files(tmp_path: Path, index: Any) -> None:
    folder = tau2_directory(tmp_path / "run", index)
    for given in (folder, folder / "results.json"):
        imported = import_paths("tau-bench", given)
        assert decisions(imported) == {"0": [PASS, PASS], "1": [FAIL, PASS]}
    parsed = tau_bench.parse_directory({}, [("sims/x.json", 3)], 0, ImportOptions())
    assert [str(s) for s in parsed.skipped] == ["sims/x.json: not a JSON object"]


def test_a_tau2_results_json_without_its_simulations_says_where_they_are(
    tmp_path: Path,
) -> None:
    meta = write_json(tmp_path / "results.json", {"info": {}, "simulation_index": None})
    with pytest.raises(ArtifactError) as raised:
        import_paths("tau-bench", meta)
    assert raised.value.message == "this tau2-bench results.json lists no simulations"
    assert raised.value.hint is not None and "simulations/" in raised.value.hint


# ------------------------------------------------------ gating imported runs


def promptfoo_run(path: Path, outcomes: dict[str, list[bool]]) -> Path:
    """A promptfoo --repeat output: one described test per key, repeats in order."""
    names = list(outcomes)
    repeat = len(next(iter(outcomes.values())))
    results = [
        {"promptIdx": 0, "testIdx": r * len(names) + i,
         "testCase": {"description": name, "vars": {"case": name}},
         "vars": {"case": name}, "success": outcomes[name][r], "failureReason": 0}
        for r in range(repeat)
        for i, name in enumerate(names)
    ]  # fmt: skip
    return write_json(path, results_doc(results))


def test_compare_gates_two_imported_runs_without_an_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = promptfoo_run(tmp_path / "base.json", {"refund": [True] * 3, "deny": [True] * 3})
    cand = promptfoo_run(
        tmp_path / "cand.json", {"refund": [True, False, True], "deny": [True] * 3}
    )
    rows = tmp_path / "rows.jsonl"
    for path, version, out in ((base, "baseline", "base.run.json"), (cand, "candidate", "c.json")):
        assert main(["import", "--from", "promptfoo", str(path), "--version", version,
                     "--out", str(tmp_path / out), "--dataset-out", str(rows)]) == 0  # fmt: skip
    config = tmp_path / "passk.yml"
    config.write_text("dataset: rows.jsonl\nk: 3\nscoring: {by: environment}\n", encoding="utf-8")
    argv = [
        "compare", "--config", str(config), "--baseline", str(tmp_path / "base.run.json"),
        "--candidate", str(tmp_path / "c.json"), "--markdown", str(tmp_path / "r.md"),
    ]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0  # 'refund' is lost, but it is not must-not-break
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert (
        "confirmation skipped for 1 lost row(s): both runs are recorded and the config names "
        "no agent to run them again; the gate used the recorded attempts only"
    ) in report
    # Marked must-not-break (the mark is the dataset's, not the runs'), the loss fails the gate.
    marked = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    for row in marked:
        row["must_not_break"] = row["id"] == "refund"
    rows.write_text("".join(json.dumps(r) + "\n" for r in marked), encoding="utf-8")
    assert main(argv) == 1
    # Three recorded attempts, no agent to ask for more: the row cannot be judged.
    assert capsys.readouterr().err == (
        "passk: warning: 1 gated row(s) wanted more candidate attempts to be judged and the "
        "config names no agent to run them, so they were judged on the attempts recorded (a "
        "row the rule cannot judge blocks): refund; give the config an `agent:`, or record "
        "more attempts per row (a higher k)\n"
    )


def test_a_gated_row_the_relative_rule_compares_side_by_side_names_both_absent_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A must-not-break row the baseline got wrong once in three goes straight to the side-by-
    side comparison under the SPRT screen, which wants both versions: with no agent at all,
    the warning names each (it was a note that confirmation was skipped, and the comment said
    nothing of the row)."""
    flaky = [True, False, True]
    base = promptfoo_run(tmp_path / "base.json", {"refund": flaky, "deny": [True] * 3})
    cand = promptfoo_run(tmp_path / "cand.json", {"refund": flaky, "deny": [True] * 3})
    rows = tmp_path / "rows.jsonl"
    for path, version, out in ((base, "baseline", "base.run.json"), (cand, "candidate", "c.json")):
        assert main(["import", "--from", "promptfoo", str(path), "--version", version,
                     "--out", str(tmp_path / out), "--dataset-out", str(rows)]) == 0  # fmt: skip
    marked = [json.loads(line) for line in rows.read_text(encoding="utf-8").splitlines()]
    for row in marked:
        row["must_not_break"] = row["id"] == "refund"
    rows.write_text("".join(json.dumps(r) + "\n" for r in marked), encoding="utf-8")
    config = tmp_path / "passk.yml"
    config.write_text(
        "dataset: rows.jsonl\nk: 3\nscoring: {by: environment}\n"
        "gate: {sequential: {screen: sprt}}\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main([
        "compare", "--config", str(config), "--baseline", str(tmp_path / "base.run.json"),
        "--candidate", str(tmp_path / "c.json"), "--markdown", str(tmp_path / "r.md"),
    ]) == 1  # fmt: skip
    err = capsys.readouterr().err
    for version in ("baseline", "candidate"):
        assert f"passk: warning: 1 gated row(s) wanted more {version} attempts" in err, err


def test_compare_without_an_agent_or_a_candidate_run_says_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = promptfoo_run(tmp_path / "base.json", {"refund": [True] * 3})
    rows, run = tmp_path / "rows.jsonl", tmp_path / "base.run.json"
    assert main(["import", "--from", "promptfoo", str(base), "--version", "baseline",
                 "--out", str(run), "--dataset-out", str(rows)]) == 0  # fmt: skip
    config = tmp_path / "passk.yml"
    config.write_text("dataset: rows.jsonl\nk: 3\nscoring: {by: environment}\n", encoding="utf-8")
    capsys.readouterr()
    code = main(["compare", "--config", str(config), "--baseline", str(run)])
    assert code == 2
    err = capsys.readouterr().err
    assert err == (
        f"passk: error: {config}: agent: no candidate run was given and the config has no "
        "`agent:` to record one (pass a recorded run (--candidate RUN, e.g. from "
        "`passk import`), or add `agent:`)\n"
    )
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "x.json")]) == 2
    assert "`passk run` needs an agent, and the config has no `agent:`" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("source", "name", "golden"),
    [
        ("tau-bench", "tau_bench_retail.json", "tau_bench_retail.report.md"),
        ("inspect", "inspect_refunds.json", "inspect_refunds.report.md"),
    ],
)
def test_the_report_of_an_import_shows_pass_1_to_k_and_what_was_left_out(
    source: str, name: str, golden: str
) -> None:
    run = do_import(source, name).run
    check_golden(golden, render_run_report(run))


def test_a_run_passk_recorded_has_no_import_section() -> None:
    run = replace(do_import("tau-bench", "tau_bench_retail.json").run, imported=None)
    assert "## Imported from" not in render_run_report(run)


@pytest.mark.parametrize(
    ("source", "name", "errors", "numbers"),
    [
        ("tau-bench", "tau_bench_retail.json", "harness", (5 / 9, 1 / 3, 1 / 3)),
        ("tau-bench", "tau_bench_retail.json", "passk", (5 / 8, 1 / 3, 1 / 2)),
        ("tau-bench", "tau2_airline.json", "harness", (3 / 4, 1 / 2, 1 / 2)),
        ("tau-bench", "tau2_airline.json", "passk", (3 / 5, 1 / 3, 1 / 2)),
        ("inspect", "inspect_refunds.json", "harness", (2 / 3, 1 / 2, 1 / 2)),
        ("inspect", "inspect_refunds.json", "passk", (2 / 3, 1 / 3, 1 / 2)),
        ("promptfoo", "promptfoo_refunds.json", "harness", (2 / 3, 0.0, 1.0)),
        ("promptfoo", "promptfoo_refunds.json", "passk", (4 / 5, 0.0, 1.0)),
    ],
)
def test_the_real_harness_files_give_the_three_numbers_they_always_gave(
    source: str, name: str, errors: str, numbers: tuple[float, float, float]
) -> None:
    """Scored by their environment now (each trial's grade), as a made-up "pass" label before:
    the numbers are the ones passk computed from the same files before version 3."""
    run = do_import(source, name, errors=errors).run
    assert run.settings.scoring.by_environment and {r.expected for r in run.rows} == {None}
    k = run.settings.k
    metrics = compute_metrics(
        summarize_run(run.rows, run.attempts_by_row(), k, run.settings.scoring), k
    )
    assert (metrics.mean_accuracy, metrics.pass_k, metrics.flip_rate) == pytest.approx(numbers)


def test_a_value_an_import_leaves_out_is_counted_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A cost of 1e400 reads as infinity: left out of the usage, and said where
    # the import reports (its summary line, the run's left_out, the report).
    entries = tau_entries([0, 1], range(2))
    for entry in entries:
        entry["info"] = {"total_cost": 0.25}
    entries[1]["duration"] = -3
    text = json.dumps(entries).replace('"total_cost": 0.25', '"total_cost": 1e400', 1)
    path = tmp_path / "tau.json"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "run.json"
    code = main(["import", "--from", "tau-bench", str(path), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert (
        "values left out: cost of 1 trial(s) (not a number of dollars from 0 to 10^12), "
        "duration of 1 trial(s) (not a number of seconds from 0 to 10^9)"
    ) in printed
    left_out = json.loads(out.read_text(encoding="utf-8"))["imported"]["left_out"]
    assert left_out == {
        "trials with their cost left out (not a number of dollars from 0 to 10^12)": 1,
        "trials with their duration left out (not a number of seconds from 0 to 10^9)": 1,
    }
    # Every importer counts them: Inspect's and promptfoo's usage alike.
    inspect = do_import("inspect", "inspect_refunds.json").report
    assert inspect.values_left_out == (("output tokens", 1),)
    doc = json.loads((DATA / "promptfoo_refunds.json").read_text(encoding="utf-8"))
    first = doc["results"]["results"][0]
    first["cost"], first["latencyMs"] = "free", "n/a"
    promptfoo = import_paths("promptfoo", write_json(tmp_path / "p.json", doc)).report
    assert promptfoo.values_left_out == (("cost", 1), ("duration", 1))
    assert promptfoo.to_json()["values_left_out"] == {"cost": 1, "duration": 1}


def _with_latency(source: str, tmp_path: Path, latency: float) -> Path:
    """A harness file of the source's own fixture (tau-bench: 2 tasks x 20 trials)
    whose every trial logged ``latency`` seconds (as the harness spells them)."""
    if source == "tau-bench":
        entries = tau_entries([0, 1], range(20))
        for entry in entries:
            entry["duration"] = latency
        return write_json(tmp_path / f"tau-{latency}.json", entries)
    if source == "inspect":
        doc = json.loads((DATA / "inspect_refunds.json").read_text(encoding="utf-8"))
        for sample in doc["samples"]:
            sample["total_time"] = latency
        return write_json(tmp_path / f"inspect-{latency}.json", doc)
    doc = json.loads((DATA / "promptfoo_refunds.json").read_text(encoding="utf-8"))
    for result in doc["results"]["results"]:
        result["latencyMs"] = latency * 1000
    return write_json(tmp_path / f"promptfoo-{latency}.json", doc)


@pytest.mark.parametrize("source", ["promptfoo", "tau-bench", "inspect"])
@pytest.mark.parametrize("latency", [float("nan"), float("inf"), -0.001])
def test_a_latency_that_is_no_duration_is_missing_never_0_s(
    tmp_path: Path, source: str, latency: float
) -> None:
    """NaN, Infinity or -1 ms was recorded as 0 s, and such a candidate then passed
    max_latency_p95_increase ("p95 700 ms -> 0 ms")."""
    baseline = import_paths(source, _with_latency(source, tmp_path, 0.7)).run
    imported = import_paths(source, _with_latency(source, tmp_path, latency))
    candidate = replace(imported.run, agent=replace(imported.run.agent, version=Version.CANDIDATE))
    assert ("duration", len(candidate.attempts)) in imported.report.values_left_out
    # Kept as no time, through the artifact too.
    again = run_from_json(json.loads(dump_run(candidate)), "run.json")
    assert all(not a.timed and a.warnings == (UNTIMED_WARNING,) for a in again.attempts)
    spend = compare_spend(baseline, again)
    assert spend.baseline.latency_p95 == pytest.approx(0.7)
    assert spend.candidate.latency_p95 is None  # not 0 s
    policy = GatePolicy(max_latency_p95_increase=0.1)
    gate = decide([], policy, verdicts={}, spend=spend)
    assert "gate.max_latency_p95_increase was not checked: the candidate has no attempt with " \
        "a measured latency" in warned(gate)  # fmt: skip


def test_control_a_measured_latency_is_kept_and_judged(tmp_path: Path) -> None:
    baseline = import_paths("tau-bench", _with_latency("tau-bench", tmp_path, 0.7)).run
    imported = import_paths("tau-bench", _with_latency("tau-bench", tmp_path, 0.0))
    assert imported.report.values_left_out == ()
    assert all(a.timed and a.warnings == () for a in imported.run.attempts)
    spend = compare_spend(baseline, imported.run)
    assert spend.candidate.latency_p95 == 0.0  # a measured 0 s is a time
