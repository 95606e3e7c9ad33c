"""The engine's phases, one at a time, with in-process agents (no process, no git).

Each phase returns what it made and what it has to say: the baseline side
(reuse, top-up, re-measurement), the candidate side, confirmation, and the
decision; a re-run's recorded attempts and a standing failure are inputs.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from passk_action.agents.protocol import Agent, AttemptRequest
from passk_action.agents.runner import FunctionAgent
from passk_action.agents.scheduler import RetryPolicy
from passk_action.core.gate import RECORDED_FAILURE_KIND, Rule
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
from passk_action.core.notes import (
    BaselineReused,
    ConfirmationSkipped,
    DroppedRows,
    NothingRun,
    RatchetExits,
    RecordedCandidate,
    RelabeledRows,
    Remeasured,
    RemeasuredOnRequest,
    SkipReason,
    StaleBaseline,
    ToppedUp,
    VerdictsReused,
    WhereFrom,
)
from passk_action.core.result import CompareResult, evaluate
from passk_action.core.sequential import Decision, Ending, Finding
from passk_action.engine.agents import ReadyAgents
from passk_action.engine.asking import Asker, Replay
from passk_action.engine.baseline import baseline_side, reuse
from passk_action.engine.candidate import candidate_side
from passk_action.engine.compare import compare
from passk_action.engine.confirm import Confirmed, confirm
from passk_action.engine.measuring import row_records
from passk_action.engine.measuring_job import measure_candidate
from passk_action.engine.request import (
    AgainstBase,
    CandidateSource,
    CompareInputs,
    Rerun,
    StalePlan,
)
from passk_action.engine.session import Session
from passk_action.errors import AgentCouldNotRun, ArtifactError, ConfigError, Interrupted
from passk_action.inputs.config import Config, parse_config
from passk_action.store.compare_journal import compare_journal_path, discard_compare_journal
from support.words import said

K = 2
BASE_SHA = "b" * 40


def rows_of(*ids: str, mnb: tuple[str, ...] = ()) -> tuple[Row, ...]:
    return tuple(Row(id=i, input={"id": i}, expected="deny", must_not_break=i in mnb) for i in ids)


def dataset_of(rows: tuple[Row, ...]) -> Dataset:
    return Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))


def config_of(
    tmp_path: Path, *, baseline_agent: bool = True, agent: bool = True, rule: str | None = None
) -> Config:
    text = f"dataset: data.jsonl\nk: {K}\nconfirm: {{attempts: 2, must_not_break_attempts: 2}}\n"
    if rule is not None:
        text += f"gate: {{rule: {rule}}}\n"
    if agent:
        text += "agent: {command: [candidate]}\n"
    if baseline_agent:
        text += "baseline: {agent: {command: [baseline]}}\n"
    return parse_config(text, tmp_path / "passk.yml").config


def committed(dataset: Dataset, rows: tuple[Row, ...], *, ratchet: tuple[str, ...] = ()) -> Run:
    """A baseline recorded on ``rows``: every row right, k times."""
    return Run(
        tool_version="0.1.0",
        dataset_digest=dataset.digest,
        settings=EvalSettings(k=K),
        agent=AgentInfo(Version.BASELINE, "baseline"),
        created_at="2026-01-01T00:00:00Z",
        rows=tuple(RowRecord(r.id, r.input_digest, r.expected, r.must_not_break) for r in rows),
        attempts=tuple(Attempt(r.id, n, Phase.MAIN, "deny") for r in rows for n in (1, 2)),
        ratchet=ratchet,
    )


def answering(decide: Callable[[AttemptRequest], str], name: str) -> FunctionAgent:
    return FunctionAgent(lambda request: {"decision": decide(request)}, name)


ALWAYS_RIGHT = answering(lambda request: "deny", "baseline")


class Counting:
    """An agent source that records which versions were built, and can refuse to build."""

    def __init__(self, agents: Mapping[Version, Agent], *, buildable: bool = True) -> None:
        self.agents = dict(agents)
        self.built: list[Version] = []
        self.buildable = buildable

    def available(self, version: Version) -> bool:
        return version in self.agents

    def describe(self, version: Version) -> str:
        return self.agents[version].description

    def get(self, version: Version) -> Agent:
        assert self.buildable, f"the {version.value} agent was built"
        self.built.append(version)
        return self.agents[version]


def session() -> Session:
    return Session(concurrency=2, retry=RetryPolicy(attempts=0), now=lambda: "now")


def inputs_for(
    tmp_path: Path,
    dataset: Dataset,
    baseline: Run,
    *,
    config: Config | None = None,
    recorded: Run | None = None,
    base: AgainstBase | None = None,
    rerun: Rerun | None = None,
) -> CompareInputs:
    return CompareInputs(
        config=config or config_of(tmp_path),
        dataset=dataset,
        baseline=baseline,
        candidate=CandidateSource(out=tmp_path / "candidate.json", recorded=recorded),
        base=base,
        rerun=rerun,
    )


# --- the baseline side ------------------------------------------------------------------


def test_reuse_keeps_unchanged_rows_and_tops_up_new_or_changed_ones() -> None:
    old = rows_of("a", "b", "gone")
    now = (*rows_of("a"), replace(rows_of("b")[0], expected="approve"), *rows_of("new"))
    changed = replace(rows_of("a")[0], input={"id": "other"})
    held = reuse(committed(dataset_of(old), old), (*now, changed))
    assert [a.row_id for a in held.attempts] == ["a", "a", "b", "b"]
    assert [r.id for r in held.topup] == ["new", "a"]
    assert (held.relabeled, held.dropped) == (("b",), ("gone",))


def test_the_baseline_side_says_what_it_reused_topped_up_and_dropped(tmp_path: Path) -> None:
    old = rows_of("a", "gone")
    now = rows_of("a", "new")
    dataset = dataset_of(now)
    agents = Counting({Version.BASELINE: ALWAYS_RIGHT})
    side = baseline_side(
        inputs_for(tmp_path, dataset, committed(dataset_of(old), old)),
        row_records(dataset),
        Asker(agents, session()),
    )
    assert side.notes == (DroppedRows(("gone",)), ToppedUp(("new",), K))
    assert [(a.row_id, a.number) for a in side.run.attempts] == [
        ("a", 1),
        ("a", 2),
        ("new", 1),
        ("new", 2),
    ]
    assert side.run.rows == row_records(dataset) and agents.built == [Version.BASELINE]


def test_a_baseline_that_matches_runs_nothing(tmp_path: Path) -> None:
    rows = rows_of("a", "b")
    dataset = dataset_of(rows)
    agents = Counting({Version.BASELINE: ALWAYS_RIGHT}, buildable=False)
    side = baseline_side(
        inputs_for(tmp_path, dataset, committed(dataset, rows)),
        row_records(dataset),
        Asker(agents, session()),
    )
    assert side.notes == (BaselineReused(),) and side.warnings == ()


def test_a_relabeled_row_is_rescored_not_rerun(tmp_path: Path) -> None:
    old = rows_of("a")
    now = (replace(old[0], expected="approve"),)
    side = baseline_side(
        inputs_for(tmp_path, dataset_of(now), committed(dataset_of(old), old)),
        row_records(dataset_of(now)),
        Asker(Counting({}, buildable=False), session()),
    )
    assert side.notes == (RelabeledRows(("a",)),)


def test_a_new_row_without_a_baseline_agent_is_an_error_naming_it(tmp_path: Path) -> None:
    old, now = rows_of("a"), rows_of("a", "new")
    with pytest.raises(ConfigError, match=r"1 row\(s\) are new or changed .*\(new\)"):
        baseline_side(
            inputs_for(tmp_path, dataset_of(now), committed(dataset_of(old), old)),
            row_records(dataset_of(now)),
            Asker(Counting({}), session()),
        )


STALE = StaleBaseline("a" * 40, BASE_SHA, ("agent.py",), ("agent.py",))


def test_a_stale_baseline_is_measured_anew_at_the_base_and_says_so(tmp_path: Path) -> None:
    rows = rows_of("a", "b")
    dataset = dataset_of(rows)
    fingerprint = (("agent.py", "sha"),)
    base = AgainstBase(BASE_SHA, stale=StalePlan(remeasure=STALE, fingerprint=fingerprint))
    baseline = committed(dataset, rows, ratchet=("a",))
    side = baseline_side(
        inputs_for(tmp_path, dataset, baseline, base=base),
        row_records(dataset),
        Asker(ReadyAgents({Version.BASELINE: ALWAYS_RIGHT}), session()),
    )
    assert side.warnings == (Remeasured(STALE, BASE_SHA, 2 * K, K, 2),)
    assert side.notes == ()  # measured anew: not "matches the dataset"
    assert side.run.agent == AgentInfo(
        Version.BASELINE, "baseline", BASE_SHA, fingerprint=fingerprint
    )
    assert side.run.ratchet == ("a",)  # the committed ratchet stays


def test_a_stale_baseline_without_a_baseline_agent_says_why_it_is_stale(tmp_path: Path) -> None:
    rows = rows_of("a")
    dataset = dataset_of(rows)
    base = AgainstBase(BASE_SHA, stale=StalePlan(remeasure=STALE))
    with pytest.raises(ConfigError, match=r"is stale: .* and no baseline agent is available"):
        baseline_side(
            inputs_for(tmp_path, dataset, committed(dataset, rows), base=base),
            row_records(dataset),
            Asker(Counting({}), session()),
        )


# --- the candidate side -----------------------------------------------------------------


def test_a_recorded_candidate_counts_its_attempts_and_runs_nothing(tmp_path: Path) -> None:
    rows = rows_of("a", "b")
    dataset = dataset_of(rows)
    recorded = replace(committed(dataset, rows), agent=AgentInfo(Version.CANDIDATE, "c"))
    side = candidate_side(
        inputs_for(tmp_path, dataset, committed(dataset, rows), recorded=recorded),
        Asker(Counting({}, buildable=False), session()),
    )
    assert (side.run, side.recorded_main, side.notes) == (
        recorded,
        2 * K,
        (RecordedCandidate(2 * K),),
    )


def test_a_recorded_candidate_on_other_inputs_is_refused(tmp_path: Path) -> None:
    rows = rows_of("a", "b")
    recorded = committed(dataset_of(rows[:1]), rows[:1])
    with pytest.raises(ArtifactError, match=r"1 row\(s\) are missing or have another input \(b\)"):
        candidate_side(
            inputs_for(
                tmp_path, dataset_of(rows), committed(dataset_of(rows), rows), recorded=recorded
            ),
            Asker(Counting({}), session()),
        )


def test_no_candidate_and_no_agent_is_an_error(tmp_path: Path) -> None:
    rows = rows_of("a")
    with pytest.raises(ConfigError, match="no candidate run was given"):
        candidate_side(
            inputs_for(tmp_path, dataset_of(rows), committed(dataset_of(rows), rows)),
            Asker(Counting({}), session()),
        )


# --- confirmation -----------------------------------------------------------------------


def losing(run: Run, row_id: str) -> Run:
    """``run`` with a wrong answer on ``row_id``'s last main attempt: a lost row."""
    attempts = tuple(
        replace(a, decision="approve") if (a.row_id, a.number) == (row_id, K) else a
        for a in run.attempts
    )
    return replace(run, attempts=attempts, agent=AgentInfo(Version.CANDIDATE, "candidate"))


def confirming(inputs: CompareInputs, baseline: Run, candidate: Run, asker: Asker) -> Confirmed:
    """The confirmation phase, after the comparison of the main attempts, as compare() runs it."""
    records = row_records(inputs.dataset)
    comparison, _ = evaluate(
        records, baseline, candidate, ratchet=frozenset(), policy=inputs.config.gate.policy
    )
    return confirm(inputs, records, comparison, baseline, candidate, asker)


@pytest.mark.parametrize(
    ("base", "where", "ref"),
    [
        (None, WhereFrom.CONFIG, None),
        (AgainstBase(BASE_SHA), WhereFrom.PULL_REQUEST_BASE, None),
        (AgainstBase(BASE_SHA, ref="main"), WhereFrom.BASE_REF, "main"),
    ],
)
def test_confirmation_without_a_baseline_agent_warns_where_to_get_one(
    tmp_path: Path, base: AgainstBase | None, where: WhereFrom, ref: str | None
) -> None:
    rows = rows_of("a")
    run = committed(dataset_of(rows), rows)
    inputs = inputs_for(tmp_path, dataset_of(rows), run, base=base)
    cand = losing(run, "a")
    done = confirming(
        inputs, run, cand, Asker(Counting({Version.CANDIDATE: ALWAYS_RIGHT}), session())
    )
    assert done.warnings == (ConfirmationSkipped(1, SkipReason.NO_BASELINE_AGENT, where, ref),)
    assert (done.baseline, done.candidate, done.made) == (run, cand, 0)


def test_confirmation_with_no_agent_at_all_is_a_note(tmp_path: Path) -> None:
    rows = rows_of("a")
    run = committed(dataset_of(rows), rows)
    config = config_of(tmp_path, agent=False, baseline_agent=False)
    inputs = inputs_for(tmp_path, dataset_of(rows), run, config=config)
    asker = Asker(Counting({}), session())
    assert confirming(inputs, run, losing(run, "a"), asker).notes == (
        ConfirmationSkipped(1, SkipReason.NO_AGENT),
    )
    assert confirming(inputs, run, run, asker).notes == (NothingRun(),)


def test_confirmation_numbers_attempts_after_each_rows_last(tmp_path: Path) -> None:
    rows = rows_of("a", "b")
    run = committed(dataset_of(rows), rows)
    inputs = inputs_for(tmp_path, dataset_of(rows), run)
    agents = ReadyAgents({Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: ALWAYS_RIGHT})
    done = confirming(inputs, run, losing(run, "b"), Asker(agents, session()))
    extra = [
        (a.row_id, a.number, a.phase) for a in done.candidate.attempts if a.phase is Phase.CONFIRM
    ]
    assert extra == [("b", 3, Phase.CONFIRM), ("b", 4, Phase.CONFIRM)] and done.made == 4
    assert done.rounds == 1


def confirm_numbers(run: Run, row_id: str) -> list[int]:
    return [a.number for a in run.attempts if a.row_id == row_id and a.phase is Phase.CONFIRM]


def test_a_reliable_gated_row_gets_the_candidate_answers_the_rule_needs_and_no_more(
    tmp_path: Path,
) -> None:
    """k = 2 right answers on a must-not-break row: the rule passes a row after 7 right
    answers, so one round asks the candidate for 5 more; the baseline is not asked."""
    rows = rows_of("m", "x", mnb=("m",))
    run = committed(dataset_of(rows), rows)
    inputs = inputs_for(
        tmp_path, dataset_of(rows), run, config=config_of(tmp_path, rule="sequential")
    )
    agents = Counting({Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: ALWAYS_RIGHT})
    done = confirming(inputs, run, losing(run, "nothing"), Asker(agents, session()))
    assert confirm_numbers(done.candidate, "m") == [3, 4, 5, 6, 7]
    assert confirm_numbers(done.baseline, "m") == [] and confirm_numbers(done.candidate, "x") == []
    assert (done.rounds, done.made, agents.built) == (1, 5, [Version.CANDIDATE])


def wrong_from(row_id: str, numbers: set[int]) -> FunctionAgent:
    """A candidate wrong on ``row_id`` at the given attempt numbers, right otherwise."""
    return answering(
        lambda r: "approve" if r.row.id == row_id and r.number in numbers else "deny", "candidate"
    )


def test_a_gated_row_that_keeps_failing_is_confirmed_on_both_versions_in_rounds(
    tmp_path: Path,
) -> None:
    """Three wrong candidate answers end its test "unreliable": the baseline's test then runs
    (numbered after its last attempt) and, right every time, keeps the block."""
    rows = rows_of("m", mnb=("m",))
    dataset = dataset_of(rows)
    run = committed(dataset, rows)
    inputs = inputs_for(tmp_path, dataset, run, config=config_of(tmp_path, rule="sequential"))
    candidate = wrong_from("m", {2, 3, 5})
    agents = ReadyAgents({Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: candidate})
    result = compare(inputs, agents, session())
    verdict = result.gate.verdicts["m"]
    assert verdict.decision is Decision.BLOCK and verdict.finding is Finding.REGRESSION
    # Main: right, wrong.  Round 1 asks what one wrong answer needs to pass (18 answers):
    # 16 more; the third wrong (attempt 5) ends the test, the rest are counted, not read.
    assert confirm_numbers(result.candidate, "m") == list(range(3, 19))
    assert (verdict.candidate.read, verdict.candidate.wrong_read) == (5, 3)
    # Round 2: the baseline, 23 more (25 right answers show it does not vary).
    assert confirm_numbers(result.baseline, "m") == list(range(3, 26))
    assert verdict.baseline.ending is Ending.RELIABLE
    [failure] = result.gate.failures
    assert failure.rule is Rule.MUST_NOT_BREAK and failure.id == "m"
    assert "3 wrong of 18 attempts; baseline 0 of 25;" in said(failure)
    assert (result.executions.confirm_candidate, result.executions.confirm_baseline) == (16, 23)


def test_a_gated_row_that_only_crashes_is_asked_one_round_then_judged_as_it_is(
    tmp_path: Path,
) -> None:
    """Errored attempts are not answers, so a round asks again in their place, but the agent
    shown unable to answer (its last unable_after attempts errored) ends the asking: a
    crashing row does not spend 80 timeouts."""
    rows = rows_of("m", "x", mnb=("m",))
    dataset = dataset_of(rows)
    inputs = inputs_for(
        tmp_path, dataset, committed(dataset, rows), config=config_of(tmp_path, rule="sequential")
    )

    def crashes_on_m(request: AttemptRequest) -> dict[str, str]:
        if request.row.id == "m":
            raise ValueError("the agent has a bug")  # not an outage: no wait helps
        return {"decision": "deny"}

    agents = ReadyAgents(
        {Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: FunctionAgent(crashes_on_m)}
    )
    result = compare(inputs, agents, session())
    # Main: two crashes (k = 2); round 1 asks the 7 right answers that would pass the row;
    # all crash, and nothing more is asked.
    assert confirm_numbers(result.candidate, "m") == list(range(3, 10))
    assert result.executions.confirm_rounds == 1
    [failure] = result.gate.failures
    assert (failure.id, failure.rule) == ("m", Rule.UNCLASSIFIED)
    assert "cannot be judged on the candidate: 0 wrong of 9 attempts (9 errored)" in said(failure)
    assert "the agent could not answer: its last 5 attempts at the row all errored" in (
        said(failure)
    )


def test_one_errored_round_does_not_end_a_gated_row_s_asking(tmp_path: Path) -> None:
    """Issue 29: errors are not evidence.  A round whose every attempt errored (fewer than
    unable_after) is asked again; the row is then judged on its answers, and passes."""
    rows = rows_of("m", "x", mnb=("m",))
    dataset = dataset_of(rows)
    inputs = inputs_for(
        tmp_path, dataset, committed(dataset, rows), config=config_of(tmp_path, rule="sequential")
    )
    erring = {3, 4, 5, 6, 8, 9, 10, 11}

    def errs_for_a_while(request: AttemptRequest) -> dict[str, str]:
        if request.row.id == "m" and request.number in erring:
            # Not an outage (no wait helps), nor one failure over and over (a version that
            # cannot run): a row the agent sometimes fails on.
            raise ValueError(f"the agent has bug {request.number}")
        return {"decision": "deny"}

    agents = ReadyAgents(
        {Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: FunctionAgent(errs_for_a_while)}
    )
    result = compare(inputs, agents, session())
    # Round 1 (3..7) answers once; round 2 (8..11) only errs; round 3 (12..15) answers.
    assert confirm_numbers(result.candidate, "m") == list(range(3, 16))
    assert result.executions.confirm_rounds == 3
    assert result.gate.passed, result.gate.failures


# --- replay and the decision ------------------------------------------------------------


def flaky_on(row_id: str) -> FunctionAgent:
    """A candidate that loses ``row_id``: right on odd attempts, wrong on even ones."""
    return answering(
        lambda r: "approve" if r.row.id == row_id and r.number % 2 == 0 else "deny", "candidate"
    )


def first_run(tmp_path: Path) -> tuple[CompareInputs, CompareResult]:
    rows = rows_of("a", "b", "new", mnb=("a",))
    dataset = dataset_of(rows)
    inputs = inputs_for(tmp_path, dataset, committed(dataset, rows[:2]), base=AgainstBase(BASE_SHA))
    agents = {Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: flaky_on("a")}
    result = compare(inputs, ReadyAgents(agents), session())
    discard_compare_journal(inputs.candidate.out)  # as the action does once it has the result
    return inputs, result


def test_a_rerun_replays_every_recorded_attempt_and_asks_nothing(tmp_path: Path) -> None:
    inputs, first = first_run(tmp_path)
    assert first.executions.total > 0 and not first.reused
    recorded = first.candidate.attempts
    extras = tuple(
        a for a in first.baseline.attempts if a.phase is Phase.CONFIRM or a.row_id == "new"
    )
    rerun = Rerun(Replay(recorded, extras), recorded_for="c" * 40)
    nothing = Counting(
        {Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: ALWAYS_RIGHT}, buildable=False
    )
    again = compare(replace(inputs, rerun=rerun), nothing, session())
    assert again.gate == first.gate
    assert again.candidate.attempts == recorded
    assert again.reused and again.executions.total == 0
    replayed = len(recorded) + len(extras)
    assert again.notes[-1] == VerdictsReused(replayed, 0, "c" * 40)


def test_a_rerun_asks_only_for_what_the_record_lacks(tmp_path: Path) -> None:
    inputs, first = first_run(tmp_path)
    recorded = first.candidate.attempts[1:]
    agents = Counting({Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: flaky_on("a")})
    again = compare(replace(inputs, rerun=Rerun(Replay(recorded))), agents, session())
    assert again.executions.candidate == 1 and again.reused
    assert Version.CANDIDATE in agents.built
    note = again.notes[-1]
    assert isinstance(note, VerdictsReused) and note.replayed == len(recorded) and note.asked > 0


def test_a_standing_recorded_failure_is_an_input_the_decision_keeps(tmp_path: Path) -> None:
    rows = rows_of("a")
    dataset = dataset_of(rows)
    agents = ReadyAgents({Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: ALWAYS_RIGHT})
    inputs = inputs_for(
        tmp_path,
        dataset,
        committed(dataset, rows),
        base=AgainstBase(BASE_SHA, protected_changes_allowed=True),
        rerun=Rerun(failure_stands=True, remeasured_label=None),
    )
    result = compare(inputs, agents, session())
    assert not result.gate.passed
    assert [f.rule for f in result.gate.failures] == [Rule.RECORDED_FAILURE]
    assert [c.kind for c in result.protected_changes] == [RECORDED_FAILURE_KIND]


def test_the_notes_come_in_phase_order(tmp_path: Path) -> None:
    rows = rows_of("a", "new")
    dataset = dataset_of(rows)
    baseline = committed(dataset, rows[:1] + rows_of("gone"), ratchet=("gone",))
    agents = ReadyAgents({Version.BASELINE: ALWAYS_RIGHT, Version.CANDIDATE: ALWAYS_RIGHT})
    inputs = inputs_for(
        tmp_path, dataset, baseline, rerun=Rerun(remeasured_label="passk:remeasure")
    )
    result = compare(inputs, agents, session())
    assert result.notes == (
        DroppedRows(("gone",)),
        ToppedUp(("new",), K),
        RatchetExits(("gone",)),
        RemeasuredOnRequest("passk:remeasure"),
    )
    assert result.executions.to_json() == {
        "candidate": 2 * K,
        "baseline_topup": K,
        "confirm_baseline": 0,
        "confirm_candidate": 0,
        "total": 3 * K,
        "naive": 2 * 2 * K,
        "confirm_rounds": 0,
    }


def test_a_rerun_without_a_baseline_agent_still_says_it_replayed_and_ran_nothing(
    tmp_path: Path,
) -> None:
    """A base config that names no agent (its baseline is only ever reused): replaying the
    candidate's recorded attempts is still no agent execution, and the result says reused.
    (It used to count every replayed attempt as run now and report ``reused: false``.)"""
    rows = rows_of("a", "b")
    dataset = dataset_of(rows)
    inputs = inputs_for(
        tmp_path,
        dataset,
        committed(dataset, rows),
        config=config_of(tmp_path, baseline_agent=False),
        base=AgainstBase(BASE_SHA),
    )
    first = compare(inputs, ReadyAgents({Version.CANDIDATE: ALWAYS_RIGHT}), session())
    assert first.executions.candidate == 2 * K and not first.reused
    recorded = first.candidate.attempts
    nothing = Counting({Version.CANDIDATE: ALWAYS_RIGHT}, buildable=False)
    again = compare(replace(inputs, rerun=Rerun(Replay(recorded))), nothing, session())
    assert again.reused and again.executions.total == 0
    assert again.notes[-1] == VerdictsReused(len(recorded), 0, None)
    assert again.gate == first.gate


# --- every attempt journaled before it counts (issue 30) --------------------------------


class AnswersOnce:
    """Both versions' agents, answering a re-asked attempt the other way (the candidate loses
    ``a``); ``stop`` (SIGTERM's event) is set at the ``stop_at``-th attempt of its phase and
    version, counted over every run."""

    def __init__(self) -> None:
        self.asked: Counter[tuple[Version, str, int]] = Counter()
        self.stop = threading.Event()
        self.stop_at: tuple[Version, Phase, int] | None = None
        self._made: Counter[tuple[Version, Phase]] = Counter()

    def agents(self) -> ReadyAgents:
        return ReadyAgents(
            {v: answering(lambda r, v=v: self.answer(v, r), v.value) for v in Version}
        )

    def answer(self, version: Version, request: AttemptRequest) -> str:
        key = (version, request.row.id, request.number)
        self.asked[key] += 1
        self._made[(version, request.phase)] += 1
        if self.stop_at == (version, request.phase, self._made[(version, request.phase)]):
            self.stop.set()
        wrong = version is Version.CANDIDATE and request.row.id == "a" and request.number % 3 == 2
        if self.asked[key] > 1:
            wrong = not wrong
        return "approve" if wrong else "deny"

    def stop_at_next(self, version: Version, phase: Phase, nth: int) -> None:
        self.stop, self.stop_at = threading.Event(), (version, phase, nth)


def test_the_measuring_jobs_rounds_resume_asking_nothing_again(tmp_path: Path) -> None:
    rows = rows_of("a", "b", mnb=("a",))
    dataset = dataset_of(rows)
    inputs = inputs_for(tmp_path, dataset, committed(dataset, rows))

    def measured(agent: AnswersOnce, out: Path, resume: bool = False) -> list[tuple[Any, ...]]:
        source = replace(inputs.candidate, out=out, resume=resume)
        run = measure_candidate(
            replace(inputs, candidate=source), agent.agents(), replace(session(), stop=agent.stop)
        ).run
        return [(a.row_id, a.number, a.phase, a.decision) for a in run.attempts]

    whole = measured(AnswersOnce(), tmp_path / "whole.json")
    confirming = sum(1 for attempt in whole if attempt[2] is Phase.CONFIRM)
    assert confirming >= 6
    agent = AnswersOnce()
    out = tmp_path / "stopped.json"
    for nth in (2, confirming // 2):
        agent.stop_at_next(Version.CANDIDATE, Phase.CONFIRM, nth)
        with pytest.raises(Interrupted):
            measured(agent, out, resume=nth != 2)
    agent.stop = threading.Event()
    assert measured(agent, out, resume=True) == whole
    assert [key for key, n in agent.asked.items() if n != 1] == []


def test_a_comparison_stopped_in_its_top_up_and_rounds_resumes_asking_nothing_again(
    tmp_path: Path,
) -> None:
    """The baseline's top-up of a new row and both versions' rounds are journaled: stopped
    in each and resumed, every attempt is asked once and the result is the whole run's."""
    rows = rows_of("a", "b", "new", mnb=("a",))
    dataset = dataset_of(rows)
    inputs = inputs_for(
        tmp_path,
        dataset,
        committed(dataset, rows[:2]),
        config=config_of(tmp_path, rule="sequential"),
    )

    def compared(agent: AnswersOnce, out: Path, resume: bool = False) -> CompareResult:
        source = replace(inputs.candidate, out=out, resume=resume)
        return compare(
            replace(inputs, candidate=source), agent.agents(), replace(session(), stop=agent.stop)
        )

    def attempts(result: CompareResult) -> list[tuple[Any, ...]]:
        return [
            (run.agent.version, a.row_id, a.number, a.phase, a.decision)
            for run in (result.baseline, result.candidate)
            for a in run.attempts
        ]

    whole = compared(AnswersOnce(), tmp_path / "whole.json")
    agent = AnswersOnce()
    out = tmp_path / "stopped.json"
    stops = [(Version.BASELINE, Phase.MAIN, 1), (Version.CANDIDATE, Phase.CONFIRM, 2)]
    stops.append((Version.BASELINE, Phase.CONFIRM, 3))
    for n, stop in enumerate(stops):
        agent.stop_at_next(*stop)
        with pytest.raises(Interrupted):
            compared(agent, out, resume=n > 0)
    agent.stop = threading.Event()
    again = compared(agent, out, resume=True)
    assert [key for key, count in agent.asked.items() if count != 1] == []
    assert attempts(again) == attempts(whole) and again.gate == whole.gate


def test_a_baseline_that_never_answers_leaves_no_journal_to_replay_its_crashes(
    tmp_path: Path,
) -> None:
    """A version that could not run at all leaves nothing to resume: once fixed, its crashes
    are not replayed as its answers.  Control: an answered attempt keeps the journal."""
    rows = rows_of("a", "new", mnb=("a",))
    dataset = dataset_of(rows)
    inputs = inputs_for(tmp_path, dataset, committed(dataset, rows[:1]))

    def broken(request: AttemptRequest) -> str:
        raise RuntimeError("no API key")

    agents = {Version.BASELINE: answering(broken, "baseline"), Version.CANDIDATE: ALWAYS_RIGHT}
    with pytest.raises(AgentCouldNotRun):
        compare(inputs, ReadyAgents(agents), session())
    assert not compare_journal_path(inputs.candidate.out).exists()
    # Control: the journal keeps what answered, for --resume (a stop after the top-up).
    agent = AnswersOnce()
    agent.stop_at_next(Version.BASELINE, Phase.MAIN, 1)
    with pytest.raises(Interrupted):
        compare(inputs, agent.agents(), replace(session(), stop=agent.stop))
    assert compare_journal_path(inputs.candidate.out).exists()
