"""A short provider outage costs time, not a red check; a broken agent stops early everywhere.

- Errors of gated rows (must-not-break, the ratchet) are held back until the
  rest of the run is done, then tried again with the whole retry budget after
  the longest backoff; their earlier failures stay in ``retries``, so the
  result shows what happened and a re-run replays the final attempt.  So a
  recording (``passk baseline``) and a comparison under ``gate.rule: strict``.
- Under the sequential rule (the default) a comparison's second chance is its
  next confirmation round: an errored attempt stays an error and is not an
  answer, the round waits the longest backoff when the errors look transient,
  then asks again in their place.
- Re-measuring a stale baseline stops after its first attempts when the base
  agent cannot run, as every other run does.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.runner import FunctionAgent
from passk_action.agents.scheduler import Keeping, RetryPolicy, Schedule, run_attempts
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    Dataset,
    EvalSettings,
    Phase,
    Row,
    Run,
    Version,
    dataset_digest,
)
from passk_action.core.notes import StaleBaseline
from passk_action.core.result import CompareResult
from passk_action.engine.agents import ReadyAgents
from passk_action.engine.asking import Replay
from passk_action.engine.compare import compare
from passk_action.engine.measuring import row_records
from passk_action.engine.request import (
    AgainstBase,
    CandidateSource,
    CompareInputs,
    Rerun,
    StalePlan,
)
from passk_action.engine.session import Session
from passk_action.errors import AgentCouldNotRun
from passk_action.inputs.config import parse_config

RETRY = RetryPolicy(attempts=2, backoff_s=1.0, max_backoff_s=30.0)
RATE_LIMITED = "RateLimitError: Error code: 429 - slow down"


class Outage:
    """An agent whose provider refuses each row's first ``calls`` calls (429), then answers;
    ``only`` one row's, when given."""

    def __init__(self, calls: int, answer: str = "deny", only: str | None = None) -> None:
        self.calls, self.answer, self.only = calls, answer, only
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.order: list[str] = []

    def __call__(self, request: AttemptRequest) -> dict[str, str]:
        with self.lock:
            self.seen[request.row.id] += 1
            self.order.append(request.row.id)
            failing = self.seen[request.row.id] <= self.calls
            failing = failing and self.only in (None, request.row.id)
        if failing:
            raise RuntimeError(RATE_LIMITED)
        return {"decision": self.answer}


def requests(rows: list[Row], version: Version = Version.CANDIDATE) -> list[AttemptRequest]:
    return [AttemptRequest(row, 1, Phase.MAIN, version) for row in rows]


def test_a_gated_rows_error_gets_a_second_chance_once_the_rest_is_done() -> None:
    gated, free = Row("r-mnb", {}, "deny", must_not_break=True), Row("r-free", {}, "deny")
    later = [Row(f"r-{i}", {}, "deny") for i in range(3)]
    outage = Outage(calls=3)  # each row's first try and both retries are refused
    waits: list[float] = []
    journal: list[Attempt] = []
    done = run_attempts(
        requests([gated, free, *later]),
        FunctionAgent(outage),
        Schedule(
            concurrency=1, retry=RETRY, second_chance=lambda request: request.row.must_not_break
        ),
        keeping=Keeping(on_attempt=journal.append),
        sleep=waits.append,
    )
    by_row = {a.row_id: a for a in done}
    # The gated row answered on its second chance, its three refusals kept as retries.
    assert by_row["r-mnb"].decision == "deny" and by_row["r-mnb"].error is None
    assert by_row["r-mnb"].retries == (f"exception: RuntimeError: {RATE_LIMITED}",) * 3
    # Any other row's error stays an error: its retries were its chance.
    assert by_row["r-free"].error == "exception" and len(by_row["r-free"].retries) == 2
    # It came back after everything else, after the longest backoff, and was
    # journaled once, last.
    assert outage.order[-1] == "r-mnb" and outage.seen["r-mnb"] == 4
    assert 30.0 in waits and waits.index(30.0) == len(waits) - 1
    assert [a.row_id for a in journal][-1] == "r-mnb"
    assert len(journal) == len(done) == 5


def test_a_second_chance_that_fails_again_is_recorded_with_every_try() -> None:
    gated = Row("r-mnb", {}, "deny", must_not_break=True)
    (attempt,) = run_attempts(
        requests([gated]),
        FunctionAgent(Outage(calls=100)),
        Schedule(concurrency=1, retry=RETRY, second_chance=lambda request: True),
        sleep=lambda s: None,
    )
    assert attempt.error == "exception"
    assert len(attempt.retries) == 5  # 2 retries, the first round's end, 2 more retries


def test_a_stop_during_the_wait_returns_no_held_attempt() -> None:
    gated = Row("r-mnb", {}, "deny", must_not_break=True)
    stop = threading.Event()

    def wait(seconds: float) -> None:
        if seconds == RETRY.max_backoff_s:
            stop.set()  # stopped while waiting for the second chance

    done = run_attempts(
        requests([gated, Row("r-ok", {}, "deny")]),
        FunctionAgent(Outage(calls=3)),
        Schedule(
            concurrency=1, retry=RETRY, second_chance=lambda request: request.row.must_not_break
        ),
        sleep=wait,
        stop=stop,
    )
    # Not recorded as an error: a resumed run asks it afresh.
    assert [a.row_id for a in done] == ["r-ok"]


# --- through the engine ------------------------------------------------------------------


def project(tmp_path: Path, rule: str = "strict") -> tuple[Dataset, Run, object]:
    rows = (
        Row("r0", {"n": 0}, "deny", must_not_break=True),
        Row("r1", {"n": 1}, "deny"),
        Row("r2", {"n": 2}, "deny"),
    )
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))
    config = parse_config(
        "dataset: data.jsonl\nk: 2\nagent: {command: [x]}\nretry: {attempts: 1}\n"
        f"gate: {{rule: {rule}}}\n",
        tmp_path / "passk.yml",
    ).config
    baseline = Run(
        tool_version="t",
        dataset_digest=dataset.digest,
        settings=EvalSettings(k=2),
        agent=AgentInfo(Version.BASELINE, "y"),
        created_at="t",
        rows=row_records(dataset),
        attempts=tuple(Attempt(r.id, n, Phase.MAIN, "deny") for r in rows for n in (1, 2)),
        ratchet=("r0",),
    )
    return dataset, baseline, config


def run_compare(
    tmp_path: Path,
    agent: Outage,
    session: Session,
    remeasure: StaleBaseline | None = None,
    rule: str = "strict",
) -> CompareResult:
    dataset, baseline, config = project(tmp_path, rule)
    base = AgainstBase("0" * 40, stale=StalePlan(remeasure=remeasure)) if remeasure else None
    inputs = CompareInputs(
        config=config,  # type: ignore[arg-type]
        dataset=dataset,
        baseline=baseline,
        candidate=CandidateSource(out=tmp_path / "candidate.json"),
        base=base,
    )
    agents = {version: FunctionAgent(agent) for version in Version}
    return compare(inputs, ReadyAgents(agents), session)


def test_an_outage_on_a_must_not_break_row_costs_time_not_a_red_check(tmp_path: Path) -> None:
    outage = Outage(calls=2)  # first try and its one retry refused, for each row
    waits: list[float] = []
    session = Session(
        concurrency=1, retry=RetryPolicy(attempts=1, max_backoff_s=30.0), now=lambda: "t",
        sleep=waits.append,
    )  # fmt: skip
    result = run_compare(tmp_path, outage, session)
    assert result.gate.passed, result.gate.failures
    attempts = {(a.row_id, a.number): a for a in result.candidate.attempts}
    # r0's first attempt was refused twice, then answered on its second chance.
    assert attempts["r0", 1].decision == "deny"
    assert attempts["r0", 1].retries == (f"exception: RuntimeError: {RATE_LIMITED}",) * 2
    # r1 is gated by nothing: its first attempt stays an error (r2's too).
    assert attempts["r1", 1].error == "exception"
    assert 30.0 in waits


def test_under_the_sequential_rule_the_second_chance_is_the_next_round(tmp_path: Path) -> None:
    """One mechanism: nothing is held back; the errored attempt counts toward the row's
    attempts, is not an answer, and the next round asks again after the longest backoff."""
    outage = Outage(calls=2)  # each row's first try and its one retry refused
    waits: list[float] = []
    session = Session(
        concurrency=1, retry=RetryPolicy(attempts=1, max_backoff_s=30.0), now=lambda: "t",
        sleep=waits.append,
    )  # fmt: skip
    result = run_compare(tmp_path, outage, session, rule="sequential")
    assert result.gate.passed, result.gate.failures
    attempts = {(a.row_id, a.number): a for a in result.candidate.attempts}
    assert attempts["r0", 1].error == "exception"  # stays what it was
    assert attempts["r0", 1].retries == (f"exception: RuntimeError: {RATE_LIMITED}",)
    verdict = result.gate.verdicts["r0"]
    # One answer in the main attempts; the round, after the wait, asked for the 6 that
    # would end the test if all were right: 7 answers of 8 attempts.
    assert (verdict.candidate.attempts, verdict.candidate.errors) == (8, 1)
    assert waits.count(30.0) == 1 and result.executions.confirm_rounds == 1
    # Replayed, the rounds are the same, no agent is asked and nothing waits.
    untouched = Outage(calls=0)
    again_waits: list[float] = []
    quiet = replace(session, sleep=again_waits.append)
    dataset, baseline, config = project(tmp_path, "sequential")
    inputs = CompareInputs(
        config=config,  # type: ignore[arg-type]
        dataset=dataset,
        baseline=baseline,
        candidate=CandidateSource(out=tmp_path / "again.json"),
        rerun=Rerun(
            Replay(
                result.candidate.attempts,
                tuple(a for a in result.baseline.attempts if a.phase is Phase.CONFIRM),
            )
        ),
    )
    agents = ReadyAgents({version: FunctionAgent(untouched) for version in Version})
    again = compare(inputs, agents, quiet)
    assert again.gate == result.gate
    assert (again_waits, untouched.order) == ([], [])


def test_a_round_of_only_transient_errors_gets_another_round_and_a_replay_agrees(
    tmp_path: Path,
) -> None:
    """An outage longer than a round: the row's whole first round errs (429s), which does not
    end its asking as a crash would; the next round, after the wait, answers.  A replay of
    the record (retries off) ends its rounds where this run did: the same verdicts."""
    calls = 2 * (2 + 7)  # each try and its one retry: the 2 main attempts and round 1's 7
    outage = Outage(calls=calls, only="r0")
    waits: list[float] = []
    # Two in flight: r0's two main attempts failing alike are not the run's first attempts
    # all failing alike (that is an agent that cannot run).
    session = Session(
        concurrency=2, retry=RetryPolicy(attempts=1, max_backoff_s=30.0), now=lambda: "t",
        sleep=waits.append,
    )  # fmt: skip
    result = run_compare(tmp_path, outage, session, rule="sequential")
    assert result.gate.passed, result.gate.failures
    verdict = result.gate.verdicts["r0"]
    assert (verdict.candidate.attempts, verdict.candidate.errors) == (16, 9)
    assert result.executions.confirm_rounds == 2 and waits.count(30.0) == 2
    dataset, baseline, config = project(tmp_path, "sequential")
    replayed = compare(
        CompareInputs(
            config=config,  # type: ignore[arg-type]
            dataset=dataset,
            baseline=baseline,
            candidate=CandidateSource(out=tmp_path / "again.json"),
            rerun=Rerun(
                Replay(
                    result.candidate.attempts,
                    tuple(a for a in result.baseline.attempts if a.phase is Phase.CONFIRM),
                )
            ),
        ),
        ReadyAgents({version: FunctionAgent(Outage(calls=0)) for version in Version}),
        replace(session, sleep=None),
    )
    assert replayed.gate == result.gate
    assert replayed.executions.ran_now == 0 and replayed.executions.confirm_rounds == 2


def test_re_measuring_a_stale_baseline_stops_when_the_base_agent_cannot_run(
    tmp_path: Path,
) -> None:
    broken = Outage(calls=10**6)
    session = Session(concurrency=1, retry=RetryPolicy(attempts=0), now=lambda: "t")
    with pytest.raises(AgentCouldNotRun, match="baseline"):
        stale = StaleBaseline(None, "0" * 40, ("agent.py",), None)
        run_compare(tmp_path, broken, session, remeasure=stale)
    # min(rows × k, 2 × concurrency) = 2 attempts, not all 6.
    assert sum(broken.seen.values()) == 2


def test_only_transient_errors_get_a_second_chance_and_only_with_retries_on() -> None:
    gated = Row("r-mnb", {}, "deny", must_not_break=True)

    def crash(request: AttemptRequest) -> dict[str, str]:
        raise ValueError("the agent has a bug")  # no wait makes this pass

    waits: list[float] = []
    every = Schedule(concurrency=1, retry=RETRY, second_chance=lambda request: True)
    (crashed,) = run_attempts(requests([gated]), FunctionAgent(crash), every, sleep=waits.append)
    assert len(crashed.retries) == 2 and RETRY.max_backoff_s not in waits
    outage = Outage(calls=1)
    no_retries = replace(every, retry=RetryPolicy(attempts=0))
    (refused,) = run_attempts(
        requests([gated]), FunctionAgent(outage), no_retries, sleep=waits.append
    )
    assert refused.error == "exception" and outage.seen["r-mnb"] == 1  # retries off: none
