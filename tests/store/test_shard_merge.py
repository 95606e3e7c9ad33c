"""Sharded runs: the split is deterministic and balanced; merging equals one machine's run."""

from __future__ import annotations

import json
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from passk_action.cli import main
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    Dataset,
    EvalSettings,
    Phase,
    Row,
    RowRecord,
    Run,
    Version,
    dataset_digest,
)
from passk_action.core.shard import Shard, assign_shards, parse_shard, shard_rows, shard_sizes
from passk_action.errors import ArtifactError, UsageError
from passk_action.store.artifact import (
    parse_json_file,
    read_run,
    run_from_json,
    run_to_json,
    shard_from_json,
    write_run,
)
from passk_action.store.merge import ShardRun, merge_runs
from support.fakegithub import SPECS_DIR
from support.paths import REPO

WORKFLOW = REPO / "examples" / "workflows" / "passk-sharded.yml"
WORKFLOW_SCHEMA = SPECS_DIR / "github-workflow.schema.json"

# --- the split -------------------------------------------------------------------

ids_strategy = st.lists(st.text(min_size=1, max_size=12), unique=True, max_size=200)


@given(ids=ids_strategy, count=st.integers(min_value=1, max_value=12), seed=st.integers())
def test_split_is_balanced_total_and_independent_of_order(
    ids: list[str], count: int, seed: int
) -> None:
    assignment = assign_shards(ids, count)
    assert set(assignment) == set(ids)
    sizes = shard_sizes(assignment, count)
    assert sum(sizes) == len(ids)
    assert max(sizes) - min(sizes) <= 1
    shuffled = list(ids)
    random.Random(seed).shuffle(shuffled)
    assert assign_shards(shuffled, count) == assignment


def test_split_is_pinned_across_versions_of_passk() -> None:
    # The split is a contract between shard jobs that may run different passk
    # builds: changing it would make merges refuse. These values are sha256-dealt.
    ids = [f"r-{i:03d}" for i in range(1, 9)]
    assert assign_shards(ids, 3) == {
        "r-008": 1, "r-006": 2, "r-003": 3, "r-001": 1,
        "r-007": 2, "r-002": 3, "r-005": 1, "r-004": 2,
    }  # fmt: skip
    assert assign_shards(["a"], 4) == {"a": 1}


def test_shard_rows_keep_dataset_order() -> None:
    rows = tuple(Row(id=f"r{i}", input=i, expected="x") for i in range(30))
    picked = [shard_rows(rows, Shard(i, 4)) for i in range(1, 5)]
    assert sorted(r.id for part in picked for r in part) == sorted(r.id for r in rows)
    for part in picked:
        positions = [rows.index(r) for r in part]
        assert positions == sorted(positions)


@pytest.mark.parametrize("text", ["", "2", "0/4", "5/4", "1/0", "a/b", "-1/2", "1/2/3"])
def test_bad_shard_text_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_shard(text)
    assert "--shard" in str(info.value)


def test_shard_text() -> None:
    assert parse_shard(" 2/4 ") == Shard(2, 4)
    assert str(Shard(3, 5)) == "3/5"


# --- merge refusals (hand-built runs) ----------------------------------------------

K = 2


def make_dataset(n: int = 10) -> Dataset:
    rows = tuple(Row(id=f"r{i:02d}", input={"n": i}, expected="deny") for i in range(n))
    return Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))


def make_run(dataset: Dataset, rows: tuple[Row, ...], **changes: Any) -> Run:
    run = Run(
        tool_version="0.1.0",
        dataset_digest=dataset.digest,
        settings=EvalSettings(k=K),
        agent=AgentInfo(Version.CANDIDATE, "python3 agent.py"),
        created_at="2026-01-02T00:00:00Z",
        rows=tuple(RowRecord(r.id, r.input_digest, r.expected, r.must_not_break) for r in rows),
        attempts=tuple(
            Attempt(r.id, n, Phase.MAIN, "deny", duration_s=0.1)
            for r in reversed(rows)  # finish order differs from dataset order
            for n in range(K, 0, -1)
        ),
    )
    return replace(run, **changes)


def shards_of(dataset: Dataset, count: int) -> list[ShardRun]:
    return [
        ShardRun(
            f"shard-{i}.json",
            make_run(dataset, shard_rows(dataset.rows, Shard(i, count))),
            Shard(i, count),
        )
        for i in range(1, count + 1)
    ]


def test_merge_orders_rows_like_the_dataset_and_attempts_by_number() -> None:
    dataset = make_dataset()
    merged = merge_runs(list(reversed(shards_of(dataset, 3))), dataset)
    assert [r.id for r in merged.rows] == [r.id for r in dataset.rows]
    assert [(a.row_id, a.number) for a in merged.attempts] == [
        (r.id, n) for r in dataset.rows for n in range(1, K + 1)
    ]


def refusal(parts: list[ShardRun], dataset: Dataset) -> str:
    with pytest.raises(ArtifactError) as info:
        merge_runs(parts, dataset)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_merge_refuses_a_missing_shard_and_names_it() -> None:
    dataset = make_dataset()
    parts = shards_of(dataset, 3)
    assert "shard(s) 2 of 3 are missing" in refusal([parts[0], parts[2]], dataset)


def test_a_shard_declaring_10_to_the_12_shards_is_refused_at_once() -> None:
    """A declared size is bounded by what the files hold: the merge lists a few, not 10^12."""
    dataset = make_dataset()
    parts = shards_of(dataset, 2)
    huge = [replace(p, shard=Shard(p.shard.index, 10**12)) for p in parts if p.shard]
    message = refusal(huge, dataset)
    assert f"shard(s) 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 and {10**12 - 12} more of {10**12}" in message


def test_merge_refuses_the_same_shard_twice() -> None:
    dataset = make_dataset()
    parts = shards_of(dataset, 2)
    message = refusal([parts[0], parts[1], replace(parts[1], where="copy.json")], dataset)
    assert "copy.json" in message and "given twice" in message


def test_merge_refuses_overlapping_rows_in_unlabelled_runs() -> None:
    dataset = make_dataset(4)
    a = ShardRun("a.json", make_run(dataset, dataset.rows[:3]), None)
    b = ShardRun("b.json", make_run(dataset, dataset.rows[2:]), None)
    message = refusal([a, b], dataset)
    assert message.startswith("b.json:") and "r02" in message and "a.json" in message


def test_merge_refuses_missing_rows_in_unlabelled_runs() -> None:
    dataset = make_dataset(4)
    a = ShardRun("a.json", make_run(dataset, dataset.rows[:2]), None)
    b = ShardRun("b.json", make_run(dataset, dataset.rows[3:]), None)
    assert "1 dataset row(s) are in no shard: r02" in refusal([a, b], dataset)


def test_merge_refuses_a_shard_holding_rows_of_another_shard() -> None:
    dataset = make_dataset()
    parts = shards_of(dataset, 2)
    # Labels swapped: the union is complete, but neither run is the shard it claims.
    swapped = [replace(parts[0], shard=Shard(2, 2)), replace(parts[1], shard=Shard(1, 2))]
    assert "row(s) of other shards" in refusal(swapped, dataset)


def test_merge_refuses_mixing_a_whole_run_and_shards() -> None:
    dataset = make_dataset()
    parts = shards_of(dataset, 2)
    assert "is a whole run" in refusal([parts[0], replace(parts[1], shard=None)], dataset)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"dataset_digest": "sha256:" + "1" * 64}, "dataset digest"),
        ({"settings": EvalSettings(k=3)}, "settings"),
        ({"agent": AgentInfo(Version.BASELINE, "python3 agent.py")}, "agent version"),
        ({"agent": AgentInfo(Version.CANDIDATE, "python3 other.py")}, "agent version"),
        ({"tool_version": "0.2.0"}, "passk version"),
        ({"ratchet": ("r01",)}, "ratchet"),
    ],
)
def test_merge_refuses_shards_that_do_not_match(change: dict[str, Any], words: str) -> None:
    dataset = make_dataset()
    parts = shards_of(dataset, 2)
    odd = replace(parts[1], run=replace(parts[1].run, **change))
    message = refusal([parts[0], odd], dataset)
    assert message.startswith("shard-2.json:") and words in message


def test_merge_refuses_shards_of_another_dataset_version() -> None:
    dataset = make_dataset()
    parts = shards_of(dataset, 2)
    newer = make_dataset(11)
    assert "another version of the dataset" in refusal(parts, newer)


def test_merge_refuses_nothing_to_merge() -> None:
    assert "no artifacts" in refusal([], make_dataset())


# --- the artifact's shard label --------------------------------------------------


def test_shard_label_round_trips_and_is_validated(tmp_path: Path) -> None:
    dataset = make_dataset(4)
    run = make_run(dataset, dataset.rows[:2])
    path = tmp_path / "s.json"
    write_run(run, path, Shard(2, 3))
    doc = parse_json_file(path)
    assert next(iter(doc)) == "schema_version"
    assert shard_from_json(doc, "s.json") == Shard(2, 3)
    assert run_from_json(doc, "s.json") == run
    assert shard_from_json(run_to_json(run), "x") is None

    doc["shard"] = {"index": 4, "count": 3}
    with pytest.raises(ArtifactError, match="shard 4/3 does not exist"):
        shard_from_json(doc, "s.json")
    doc["shard"] = {"index": 1}
    with pytest.raises(ArtifactError, match="shard"):
        run_from_json(doc, "s.json")


# --- end to end: shards recorded by the CLI with the scripted agent -------------------


def write_project(root: Path, n_rows: int = 23) -> str:
    rows: list[dict[str, Any]] = [
        {"id": f"row-{i:02d}", "input": {"n": i}, "expected": "deny", "must_not_break": i % 5 == 0}
        for i in range(n_rows)
    ]
    for i, row in enumerate(rows):
        if i % 4:  # every fourth row is a cluster of its own
            row["cluster"] = f"case-{i // 4}"
    (root / "data.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", "utf-8")
    # Rows behave differently per attempt, including errors, so a merge that
    # dropped, duplicated or renumbered attempts would show.
    script_rows: dict[str, Any] = {
        f"row-{i:02d}": [
            {"decision": "deny", "usage": {"input_tokens": 100 + i, "output_tokens": 7}},
            "approve" if i % 3 else "deny",
            {"exit": 3},
        ]
        for i in range(n_rows)
    }
    (root / "script.json").write_text(json.dumps({"default": "deny", "rows": script_rows}))
    agent = [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"]
    config = {
        "dataset": "data.jsonl",
        "k": 3,
        "concurrency": 8,
        "agent": {"command": agent, "timeout_s": 30},
        "retry": {"attempts": 0, "backoff_s": 0},
        "pricing": {"input_per_mtok": 1.0, "output_per_mtok": 4.0},
    }
    (root / "passk.yml").write_text(yaml.safe_dump(config), "utf-8")
    return str(root / "passk.yml")


def comparable(run: Run) -> Run:
    """A run without what differs between two honest recordings: timings and dates."""
    return replace(
        run,
        created_at="",
        attempts=tuple(replace(a, duration_s=0.0) for a in run.attempts),
    )


def test_sharded_run_merged_equals_a_single_machine_run(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    full = tmp_path / "full.json"
    assert main(["run", "--config", config, "--out", str(full), "--quiet"]) == 0
    shard_files = []
    for i in (3, 1, 2):  # shard jobs finish in any order
        out = tmp_path / f"shard-{i}.json"
        assert (
            main(["run", "--config", config, "--out", str(out), "--quiet", "--shard", f"{i}/3"])
            == 0
        )
        assert shard_from_json(parse_json_file(out), str(out)) == Shard(i, 3)
        shard_files.append(str(out))
    sizes = sorted(len(read_run(Path(f)).rows) for f in shard_files)
    assert sizes == [7, 8, 8]

    merged = tmp_path / "merged.json"
    assert main(["merge", "--config", config, "--out", str(merged), *shard_files]) == 0
    merged_doc = parse_json_file(merged)
    assert "shard" not in merged_doc
    assert comparable(read_run(merged)) == comparable(read_run(full))
    # Each row's cluster travels through the shards into the merged run.
    clusters = {r.id: r.cluster for r in read_run(merged).rows}
    assert clusters["row-00"] is None and clusters["row-05"] == "case-1"
    assert sum(c is not None for c in clusters.values()) == 17
    # Usage, priced when recorded, travels through shards and the merge.
    first = [a for a in read_run(merged).attempts if a.number == 1]
    assert len(first) == 23
    assert all(a.usage is not None and a.usage.priced for a in first)
    assert first[0].usage is not None and first[0].usage.cost_usd == (100 * 1 + 7 * 4) / 1e6


def test_merge_cli_refuses_a_missing_shard_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_project(tmp_path, n_rows=6)
    out = tmp_path / "shard-1.json"
    assert main(["run", "--config", config, "--out", str(out), "--quiet", "--shard", "1/2"]) == 0
    capsys.readouterr()
    code = main(["merge", "--config", config, "--out", str(tmp_path / "m.json"), str(out)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "passk: error: passk merge: shard(s) 2 of 2 are missing "
        "(pass the artifact of every shard; rerun the failed shard jobs)"
    )
    assert not (tmp_path / "m.json").exists()


def test_run_refuses_a_bad_shard_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_project(tmp_path, n_rows=2)
    assert (
        main(["run", "--config", config, "--out", str(tmp_path / "o.json"), "--shard", "3/2"]) == 2
    )
    assert "--shard: shard 3/2 does not exist" in capsys.readouterr().err


# --- the example workflow ------------------------------------------------------------


def test_sharded_workflow_example_is_a_valid_github_workflow() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    # YAML 1.1 reads the key `on` as the boolean True; GitHub reads it as "on".
    if True in doc:
        doc["on"] = doc.pop(True)
    schema = json.loads(WORKFLOW_SCHEMA.read_text("utf-8"))
    errors = sorted(Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    jobs = doc["jobs"]
    shard_job = next(j for j in jobs.values() if "strategy" in j)
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    steps = " ".join(str(s.get("run", "")) for j in jobs.values() for s in j["steps"])
    assert f'--shard "$SHARD/{len(shards)}"' in steps
    assert "passk merge" in steps
    all_steps = [step for job in jobs.values() for step in job["steps"]]
    gate = next(step for step in all_steps if "candidate-run" in step.get("with", {}))
    assert gate["uses"] == "passk-dev/passk-action@v1"
    assert gate["with"]["candidate-run"] == "merged.json"


# --- cost: executions used versus the naive way -------------------------------------------


def test_compare_counts_executions_and_the_naive_cost(tmp_path: Path) -> None:
    from passk_action.agents.protocol import AttemptRequest
    from passk_action.agents.runner import FunctionAgent
    from passk_action.agents.scheduler import RetryPolicy
    from passk_action.engine.agents import ReadyAgents
    from passk_action.engine.compare import compare
    from passk_action.engine.request import CandidateSource, CompareInputs
    from passk_action.engine.session import Session
    from passk_action.inputs.config import parse_config

    k = 3
    rows = tuple(Row(id=f"r{i}", input={"n": i}, expected="deny") for i in range(4))
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))
    config = parse_config(
        f"dataset: data.jsonl\nk: {k}\nagent: {{command: [x]}}\n"
        "baseline: {agent: {command: [y]}}\nconfirm: {attempts: 2, must_not_break_attempts: 4}\n",
        tmp_path / "passk.yml",
    ).config

    def baseline_fn(request: AttemptRequest) -> dict[str, str]:
        return {"decision": "deny"}

    def candidate_fn(request: AttemptRequest) -> dict[str, str]:
        # r0 is lost: stable-correct on the baseline, a flip on the candidate.
        wrong = request.row.id == "r0" and request.number % 2 == 0
        return {"decision": "approve" if wrong else "deny"}

    agents = {Version.BASELINE: FunctionAgent(baseline_fn),
              Version.CANDIDATE: FunctionAgent(candidate_fn)}  # fmt: skip
    # The committed baseline predates r3: only r3 needs a baseline top-up.
    recorded = make_run(dataset, rows[:3], settings=EvalSettings(k=k),
                        agent=AgentInfo(Version.BASELINE, "y"))  # fmt: skip
    recorded = replace(recorded, attempts=tuple(
        Attempt(r.id, n, Phase.MAIN, "deny") for r in rows[:3] for n in range(1, k + 1)
    ))  # fmt: skip
    session = Session(concurrency=2, retry=RetryPolicy(attempts=0), now=lambda: "t")
    result = compare(
        CompareInputs(config=config, dataset=dataset, baseline=recorded,
                      candidate=CandidateSource(out=tmp_path / "candidate.json")),
        ReadyAgents(agents),
        session,
    )  # fmt: skip
    assert result.comparison.lost == ("r0",)
    assert result.executions.to_json() == {
        "candidate": 4 * k,  # every row, k times
        "baseline_topup": 1 * k,  # the new row only
        "confirm_baseline": 2,
        "confirm_candidate": 2,
        "total": 4 * k + k + 4,
        # Naive: both versions on every row, plus the same confirmations.
        "naive": 2 * 4 * k + 4,
        "confirm_rounds": 1,
    }


def test_a_gate_of_two_recorded_runs_says_no_agent_ran(tmp_path: Path) -> None:
    from passk_action.agents.scheduler import RetryPolicy
    from passk_action.engine.agents import ReadyAgents
    from passk_action.engine.compare import compare
    from passk_action.engine.request import CandidateSource, CompareInputs
    from passk_action.engine.session import Session
    from passk_action.inputs.config import parse_config
    from passk_action.report.phrases import executions_text
    from passk_action.store.results import result_from_json, result_to_json

    k = 3
    rows = tuple(Row(id=f"r{i}", input={"n": i}, expected="deny") for i in range(3))
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))
    config = parse_config(f"dataset: data.jsonl\nk: {k}\n", tmp_path / "passk.yml").config

    def recorded(version: Version) -> Run:
        run = make_run(dataset, rows, settings=EvalSettings(k=k), agent=AgentInfo(version, "x"))
        return replace(run, attempts=tuple(
            Attempt(r.id, n, Phase.MAIN, "deny") for r in rows for n in range(1, k + 1)
        ))  # fmt: skip

    result = compare(
        CompareInputs(config=config, dataset=dataset, baseline=recorded(Version.BASELINE),
                      candidate=CandidateSource(out=tmp_path / "candidate.json",
                                                recorded=recorded(Version.CANDIDATE))),
        ReadyAgents({}),
        Session(concurrency=1, retry=RetryPolicy(attempts=0), now=lambda: "t"),
    )  # fmt: skip
    assert result.executions.candidate_recorded == result.executions.total == 9
    assert result.executions.ran_now == 0
    said = "no agent was run: the candidate's 9 main attempts were recorded earlier"
    assert executions_text(result.executions, reused=False) == said
    again = result_from_json(result_to_json(result), "result.json").result  # in the file too
    assert executions_text(again.executions, reused=False) == said


def test_a_candidate_recorded_on_another_dataset_version_says_what_moved(tmp_path: Path) -> None:
    from passk_action.agents.scheduler import RetryPolicy
    from passk_action.engine.agents import ReadyAgents
    from passk_action.engine.compare import compare
    from passk_action.engine.request import CandidateSource, CompareInputs
    from passk_action.engine.session import Session
    from passk_action.inputs.config import parse_config
    from passk_action.report.compare_report import render_compare_report

    k = 2
    rows = (
        Row(id="r0", input={"n": 0}, expected="deny"),
        Row(id="r1", input={"n": 1}, expected="deny"),
        Row(id="r2", input={"n": 2}, expected="deny", must_not_break=True),
    )
    then = (
        Row(id="r0", input={"n": 0}, expected="deny"),
        Row(id="r1", input={"n": 1}, expected="approve"),  # relabeled since
        Row(id="r2", input={"n": 2}, expected="deny"),  # marked since
        Row(id="r9", input={"n": 9}, expected="deny"),  # removed since
    )
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))
    old = Dataset(rows=then, source="data.jsonl", digest=dataset_digest(then))
    config = parse_config(f"dataset: data.jsonl\nk: {k}\n", tmp_path / "passk.yml").config

    def recorded(data: Dataset, version: Version) -> Run:
        run = make_run(data, data.rows, settings=EvalSettings(k=k), agent=AgentInfo(version, "x"))
        return replace(run, attempts=tuple(
            Attempt(r.id, n, Phase.MAIN, "deny") for r in data.rows for n in range(1, k + 1)
        ))  # fmt: skip

    result = compare(
        CompareInputs(config=config, dataset=dataset, baseline=recorded(dataset, Version.BASELINE),
                      candidate=CandidateSource(out=tmp_path / "candidate.json",
                                                recorded=recorded(old, Version.CANDIDATE))),
        ReadyAgents({}),
        Session(concurrency=1, retry=RetryPolicy(attempts=0), now=lambda: "t"),
    )  # fmt: skip
    (line,) = [ln for ln in render_compare_report(result).splitlines() if "**Dataset:**" in ln]
    assert line == (
        f"- **Dataset:** `{dataset.digest[:19]}` · 3 rows · k = 2 · the candidate run was "
        f"recorded on `{old.digest[:19]}`; since then: 1 row removed, 2 rows changed "
        "(expected ×1, must_not_break ×1)"
    )
