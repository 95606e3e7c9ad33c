"""``passk plan``: the gate's rates for a config or a size, and settings for target rates.

The figures are the exact ones of ``core/operating.py`` (checked by simulation
in bench/gate_rule.md), the same the comment's "How sure" section states.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core.operating import dataset_oc, gate_oc
from passk_action.core.sequential import GatedKind, RuleSettings
from passk_action.report.gated import gate_sentence
from support.paths import TESTS

GOLDEN = TESTS / "golden" / "render" / "plan_10_rows.txt"


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["plan", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_for_a_size_prints_the_rates_and_a_suggestion(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no passk.yml here
    code, out, err = plan(capsys, "--gated-rows", "10", "--k", "3")
    assert (code, err) == (0, "")
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(out, encoding="utf-8")
    assert out == GOLDEN.read_text(encoding="utf-8")
    assert out.startswith("gate.rule: relative (")  # the default rule
    oc = gate_oc(RuleSettings(), k=3, gated_rows=10)
    assert oc.false_block <= 1 - (1 - 0.001 / 0.995) ** 10  # the paired comparison's bound
    # The comment's How-sure sentence for the same rows states the same figure.
    sentence = gate_sentence(dataset_oc(RuleSettings(), k=3, kinds=[GatedKind.MUST_NOT_BREAK] * 10),
                             RuleSettings())  # fmt: skip
    said = re.search(r"\) ([0-9.e-]+%) of the time", sentence)
    assert said is not None and f"is blocked {said.group(1)} of the time" in out


def test_plan_counts_the_gated_rows_of_a_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [
        {"id": "a", "input": 1, "expected": "x", "must_not_break": True},
        {"id": "b", "input": 2, "expected": "x", "tags": ["vip"]},
        {"id": "c", "input": 3, "expected": "x"},
        {"id": "d", "input": 4, "expected": "x"},
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "passk.yml").write_text(
        "dataset: data.jsonl\nk: 5\nmust_not_break: {tags: [vip]}\ngate: {rule: strict}\n",
        encoding="utf-8",
    )
    code, out, _ = plan(capsys, "--config", str(tmp_path / "passk.yml"), "--json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["gate"]["gated_rows"], doc["gate"]["k"], doc["gate"]["rule"]) == (2, 5, "strict")
    expected = dataset_oc(RuleSettings(rule="strict", confirm_attempts=6), k=5,
                          kinds=[GatedKind.MUST_NOT_BREAK] * 2)  # fmt: skip
    assert doc["gate"]["false_block"] == pytest.approx(expected.false_block)
    assert doc["suggested"]["met"] is True
    assert doc["suggested"]["settings"]["rule"] == "sequential"
    code, out, _ = plan(capsys, "--config", str(tmp_path / "passk.yml"))
    assert "gate.rule: strict (any wrong answer blocks" in out and "k = 5, 2 gated rows:" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "passk: error: passk plan: no passk.yml here: pass --config PATH, or --gated-rows N"),
        (("--gated-rows", "0"), "passk: error: --gated-rows: --gated-rows must be a whole number"),
        (("--gated-rows", "3", "--miss", "1.5"), "passk: error: --miss: --miss must be a number"),
        (("--gated-rows", "3", "--dropped", "0.995"), "passk: error: --accuracy: need 0 <"),
    ],
)
def test_bad_plan_arguments_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = plan(capsys, *args)
    assert code == 2
    assert err.startswith(message) and err.count("\n") == 1


def test_plan_judges_the_baseline_as_the_gate_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Under ``block_on_any_regression`` the gated rows are the baseline's stable-correct
    ones, judged as the gate judges them: the recorded answers read by the config's
    scoring rules (here a regex), against the dataset's expected decisions."""
    from passk_action.core.model import Attempt, Phase
    from passk_action.engine.measuring import row_records
    from passk_action.inputs.dataset import load_dataset
    from passk_action.store.artifact import write_run
    from support.runs import run_of

    rows = [{"id": i, "input": n, "expected": "deny"} for n, i in enumerate("abc")]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = load_dataset(tmp_path / "data.jsonl", ())
    said = {"a": "DECISION: deny", "b": "DECISION: approve", "c": "DECISION: deny"}
    answers = [Attempt(i, n, Phase.MAIN, said[i]) for i in "abc" for n in (1, 2, 3)]
    baseline = run_of(row_records(dataset), answers, dataset_digest=dataset.digest)
    write_run(baseline, tmp_path / "baseline.json")
    config = tmp_path / "passk.yml"
    settings = "k: 3\ngate: {block_on_any_regression: true}\nbaseline: {artifact: baseline.json}\n"
    for scoring, gated in (("", 0), ("scoring: {extract: {regex: 'DECISION: (\\w+)'}}\n", 2)):
        config.write_text(f"dataset: data.jsonl\n{settings}{scoring}", encoding="utf-8")
        code, out, _ = plan(capsys, "--config", str(config), "--json")
        doc = json.loads(out)
        assert (code, doc["gate"] and doc["gate"]["gated_rows"]) == (0, gated or None)


@pytest.mark.parametrize("accuracy", ["0.9"])
def test_plan_at_an_accuracy_of_90_percent_or_less_suggests_settings(
    capsys: pytest.CaptureFixture[str], accuracy: str
) -> None:
    """Issue 29: any --accuracy <= 0.9 was an internal error (the baseline's test at 0.9)."""
    code, out, err = plan(capsys, "--gated-rows", "10", "--accuracy", accuracy, "--json")
    assert (code, err) == (0, "")
    suggested = json.loads(out)["suggested"]["settings"]
    assert suggested["baseline_unreliable"] < suggested["reliable"] == float(accuracy)


@pytest.mark.parametrize(
    ("scoring", "expected"),
    [
        ("scoring: {fields: {action: {}}}\n", {"action": "deny"}),
        ("scoring: {by: environment}\n", None),
    ],
)
def test_plan_reads_the_dataset_as_the_config_scores_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, scoring: str, expected: object
) -> None:
    """Issue 29: a config with scoring.fields or scoring.by: environment exited 2 (its dataset
    was read without the config's scoring)."""
    row: dict[str, object] = {"id": "a", "input": 1, "must_not_break": True}
    if expected is not None:
        row["expected"] = expected
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    config = tmp_path / "passk.yml"
    config.write_text(f"dataset: data.jsonl\n{scoring}", encoding="utf-8")
    code, out, err = plan(capsys, "--config", str(config), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["gate"]["gated_rows"] == 1


def test_plan_states_the_rates_at_the_baseline_s_measured_accuracies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 29: the rates this dataset has, from the committed baseline's answers on each
    gated row, and the rows that make the gate noisy or costly, named."""
    from passk_action.core.model import Attempt, Phase
    from passk_action.engine.measuring import row_records
    from passk_action.inputs.dataset import load_dataset
    from passk_action.store.artifact import write_run
    from support.runs import run_of

    ids = [f"r{i:02d}" for i in range(10)]
    rows = [{"id": i, "input": n, "expected": "deny", "must_not_break": True}
            for n, i in enumerate(ids)]  # fmt: skip
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = load_dataset(tmp_path / "data.jsonl", ())
    answers = []
    for i in ids:
        for n in range(1, 61):
            wrong = i == "r07" and n % 6 == 0  # right 50 of 60 times
            phase = Phase.MAIN if n <= 3 else Phase.MEASURE
            answers.append(Attempt(i, n, phase, "approve" if wrong else "deny"))
    write_run(run_of(row_records(dataset), answers, dataset_digest=dataset.digest),
              tmp_path / "baseline.json")  # fmt: skip
    config = tmp_path / "passk.yml"
    # The sequential rule, which assumes 99%: the rule with noisy rows to name.
    config.write_text(
        "dataset: data.jsonl\nbaseline: {artifact: baseline.json}\ngate: {rule: sequential}\n"
    )
    code, out, _ = plan(capsys, "--config", str(config))
    assert code == 0
    assert "at the accuracy the committed baseline shows on each gated row (10 rows):" in out
    assert "  a harmless pull request is blocked 1.45% of the time" in out
    assert "  noisy: r07 is right 83.3% of 60 baseline answers: it alone blocks a harmless " \
        "pull request 1.45% of the time" in out  # fmt: skip
    assert "  costly: r07 is right 83.3% of the time on the baseline: gating it costs about " \
        "18 candidate and 26 baseline attempts a pull request" in out  # fmt: skip
    code, out, _ = plan(capsys, "--config", str(config), "--json")
    measured = json.loads(out)["measured"]
    assert measured["rows"][7] | {"block": 0} == measured["rows"][7] | {"block": 0}
    assert (measured["rows"][7]["right"], measured["rows"][7]["answers"]) == (50, 60)
    # Control: a size, not the config's rows, states no measured rates.
    code, out, _ = plan(capsys, "--config", str(config), "--gated-rows", "10", "--json")
    assert json.loads(out)["measured"] is None


def test_the_suggestion_says_what_it_does_when_the_rows_are_less_accurate_than_assumed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sequential settings hold their rates only at the accuracy they were set for:
    # the suggestion states its false blocks for rows 5 points worse, from the same code.
    monkeypatch.chdir(tmp_path)
    code, out, _ = plan(capsys, "--gated-rows", "10", "--k", "3", "--json")
    suggested = json.loads(out)["suggested"]
    worse = suggested["less_accurate"]
    assert (code, worse["accuracy"], worse["gated_rows"]) == (0, 0.94, 10)
    settings = RuleSettings(**suggested["settings"])
    direct = gate_oc(settings, k=3, gated_rows=10, accuracy=0.94)
    assert worse["false_block"] == direct.false_block
    assert worse["false_block"] > 10 * suggested["gate"]["false_block"]
    code, out, _ = plan(capsys, "--gated-rows", "10", "--k", "3")
    blocked = f"{direct.false_block:.1%}"
    said = f"were they right 94.0%, a harmless pull request would be blocked {blocked}"
    assert said in out
    # Close to the dropped accuracy, halfway to it instead.
    code, out, _ = plan(capsys, "--gated-rows", "3", "--accuracy", "0.8", "--dropped", "0.76",
                        "--json")  # fmt: skip
    assert json.loads(out)["suggested"]["less_accurate"]["accuracy"] == 0.78
