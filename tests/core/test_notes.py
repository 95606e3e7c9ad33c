"""Notes and warnings are data (core/notes.py), worded in one place (report/notes.py).

Each expected line is the sentence passk printed before notes were data:
result files, goldens and users' scripts read these words.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from passk_action.core import notes as kinds
from passk_action.core.notes import (
    AddedRowsNotMeasured,
    BaselineAgeUnknown,
    BaselineBehind,
    BaselineReused,
    ConfirmationSkipped,
    DroppedRows,
    GatedRowsAsRecorded,
    HeadLimitCapped,
    HeadSettingsIgnored,
    MeasuredByPullRequest,
    Note,
    NothingRun,
    RatchetExits,
    RecordedCandidate,
    RelabeledRows,
    Remeasured,
    RemeasuredOnRequest,
    Rescored,
    SkipReason,
    StaleBaseline,
    StaleBaselineHandled,
    StalePolicy,
    ToppedUp,
    VerdictsReused,
    WhereFrom,
    Written,
)
from passk_action.report.notes import sentence

BASE = "b" * 40
MEASURED = "a" * 40
STALE = StaleBaseline(MEASURED, BASE, ("agent.py", "prompt.txt"), ("prompt.txt",))
ELEVEN = tuple(f"r{i}" for i in range(11))

CASES: list[tuple[Note, str]] = [
    (
        HeadSettingsIgnored("passk.yml", ("k", "retry.attempts")),
        "passk.yml: the pull request's config changes k, retry.attempts: not used, those "
        "settings come from the base commit's config (merge the change to the base first; "
        "one that weakens the gate is a protected change too)",
    ),
    (
        HeadLimitCapped("passk.yml", "agent.timeout_s", 3600.0, 30.0, "s"),
        "passk.yml: agent.timeout_s is 3600s in the pull request's config, above the base's "
        "30s: the base's 30s holds (a pull request may lower it, never raise it)",
    ),
    (
        HeadLimitCapped("passk.yml", "concurrency", 16.0, 4.0, ""),
        "passk.yml: concurrency is 16 in the pull request's config, above the base's 4: the "
        "base's 4 holds (a pull request may lower it, never raise it)",
    ),
    (DroppedRows(("r1", "r2")), "2 baseline row(s) are no longer in the dataset: r1, r2"),
    (
        RelabeledRows(("r3",)),
        "1 row(s) changed their expected label since the baseline; their recorded baseline "
        "decisions were scored against the new label: r3",
    ),
    (
        ToppedUp(ELEVEN, 33),
        "the baseline was run on 11 new or changed row(s) first (33 executions): "
        "r0, r1, r2, r3, r4, r5, r6, r7, r8, r9 and 1 more",
    ),
    (
        AddedRowsNotMeasured(("r7", "r8"), 5),
        "2 row(s) this pull request adds were not measured on the baseline: the gating job "
        "runs the base agent on at most 5 added row(s) (baseline.added_rows_limit in the base "
        "config), so they are left out of this comparison: r7, r8",
    ),
    (BaselineReused(), "the baseline artifact matches the dataset: no baseline run was needed"),
    (RatchetExits(("r9",)), "1 row(s) left the ratchet because they left the dataset: r9"),
    (
        Rescored("the committed baseline", 42, 3),
        "the committed baseline was recorded under other scoring rules: its 42 recorded "
        "answers were scored again under these, no agent run (3 read otherwise)",
    ),
    (
        STALE,
        "the committed baseline (measured at aaaaaaa) is stale: it was measured on other "
        "files: prompt.txt changed at the base bbbbbbb",
    ),
    (
        StaleBaseline(None, BASE, ("agent.py", "prompt.txt"), None),
        "the committed baseline is stale: it records no fingerprint of agent.py, prompt.txt "
        "at the base bbbbbbb",
    ),
    (
        StaleBaselineHandled(STALE, StalePolicy.USED_ANYWAY),
        "the committed baseline (measured at aaaaaaa) is stale: it was measured on other "
        "files: prompt.txt changed at the base bbbbbbb; it was used anyway "
        "(baseline.when_stale: warn)",
    ),
    (
        StaleBaselineHandled(STALE, StalePolicy.REMEASURING),
        "the committed baseline (measured at aaaaaaa) is stale: it was measured on other "
        "files: prompt.txt changed at the base bbbbbbb; measuring the baseline anew at the "
        "base commit",
    ),
    (
        BaselineAgeUnknown(MEASURED),
        "the baseline was measured at aaaaaaa, which is not in this checkout, so passk cannot "
        "tell what changed since (fetch with `fetch-depth: 0`)",
    ),
    (
        BaselineBehind(MEASURED, BASE, 3, ("a", "b", "c", "d", "e", "f", "g")),
        "the baseline was measured at aaaaaaa, 3 commit(s) behind the base bbbbbbb; files "
        "changed since: a, b, c, d, e and 2 more (name what the agent runs under "
        "agent.fingerprint to re-measure it when those change)",
    ),
    (
        Remeasured(STALE, BASE, 6, 2, 3),
        "the committed baseline (measured at aaaaaaa) is stale: it was measured on other "
        "files: prompt.txt changed at the base bbbbbbb, so it was measured anew at bbbbbbb "
        "(6 executions: k = 2 × 3 rows); the ratchet is still the committed one",
    ),
    (
        RemeasuredOnRequest("passk:remeasure"),
        "re-measured on request: the label 'passk:remeasure' is on the pull request, so the "
        "agent was asked again instead of replaying the recorded verdicts",
    ),
    (
        MeasuredByPullRequest(8, 2),
        "the candidate's answers (8 main, 2 confirmation attempts) were recorded by the pull "
        "request's own job, without a write token; this job ran none of its code, checked their "
        "rows, inputs and settings and judged them by the base commit's labels, but cannot check "
        "that its agent gave them",
    ),
    (
        MeasuredByPullRequest(0, 0),
        "the candidate's answers were recorded by the pull request's own job, without a write "
        "token; this job ran none of its code, checked their rows, inputs and settings and judged "
        "them by the base commit's labels, but cannot check that its agent gave them",
    ),
    (
        RecordedCandidate(12),
        "the candidate's 12 main attempts were recorded earlier (--candidate)",
    ),
    (
        VerdictsReused(8, 0, None),
        "verdicts reused from passk's record for this commit: 8 recorded attempt(s) "
        "replayed, errors included, no agent run",
    ),
    (
        VerdictsReused(8, 2, MEASURED),
        "verdicts reused from passk's record for commit aaaaaaa, which has the same files "
        "as this one: 8 recorded attempt(s) replayed, errors included, 2 missing attempt(s) "
        "asked",
    ),
    (
        NothingRun(),
        "both runs are recorded and the config names no agent: nothing was run (no lost row "
        "needed confirming)",
    ),
    (
        ConfirmationSkipped(2, SkipReason.NO_AGENT),
        "confirmation skipped for 2 lost row(s): both runs are recorded and the config names "
        "no agent to run them again; the gate used the recorded attempts only",
    ),
    (
        ConfirmationSkipped(1, SkipReason.NO_BASELINE_AGENT),
        "confirmation skipped for 1 lost row(s): no baseline agent is available, so the gate "
        "used the main attempts only; to confirm, set baseline.agent, or run "
        "`passk compare --base main`",
    ),
    (
        ConfirmationSkipped(1, SkipReason.NO_BASELINE_AGENT, WhereFrom.PULL_REQUEST_BASE),
        "confirmation skipped for 1 lost row(s): no baseline agent is available, so the gate "
        "used the main attempts only; to confirm, give the base branch's passk.yml an `agent:`",
    ),
    (
        ConfirmationSkipped(1, SkipReason.NO_BASELINE_AGENT, WhereFrom.BASE_REF, "release"),
        "confirmation skipped for 1 lost row(s): no baseline agent is available, so the gate "
        "used the main attempts only; to confirm, give the base config an `agent:` "
        "(release has none)",
    ),
    (
        ConfirmationSkipped(3, SkipReason.NO_CANDIDATE_AGENT),
        "confirmation skipped for 3 lost row(s): the candidate is a recorded run and no agent "
        "can add to it, so the gate used the main attempts only",
    ),
    (
        GatedRowsAsRecorded(("m-1", "m-2"), "baseline", SkipReason.NO_BASELINE_AGENT),
        "2 gated row(s) wanted more baseline attempts (to tell a regression from a baseline "
        "that varies as much) and no baseline agent is available, so they were judged on the "
        "attempts recorded: m-1, m-2; to run them, set baseline.agent, or run "
        "`passk compare --base main`",
    ),
    (
        GatedRowsAsRecorded(("m-1",), "candidate", SkipReason.NO_AGENT),
        "1 gated row(s) wanted more candidate attempts to be judged and the config names no "
        "agent to run them, so they were judged on the attempts recorded (a row the rule "
        "cannot judge blocks): m-1; give the config an `agent:`, or record more attempts per "
        "row (a higher k)",
    ),
    (Written("as the file says"), "as the file says"),
]


@pytest.mark.parametrize(("note", "line"), CASES, ids=lambda v: type(v).__name__)
def test_each_kind_is_worded_as_before(note: Note, line: str) -> None:
    assert sentence(note) == line


def test_every_kind_has_words_and_is_frozen_data() -> None:
    defined = {
        cls
        for _, cls in inspect.getmembers(kinds, inspect.isclass)
        if issubclass(cls, Note) and cls is not Note
    }
    assert defined == {type(note) for note, _ in CASES}
    for cls in defined:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_only_what_is_said_before_any_agent_runs_is_announced() -> None:
    announced = {type(note) for note, _ in CASES if note.announced}
    assert announced == {
        StaleBaselineHandled, BaselineAgeUnknown, BaselineBehind, HeadSettingsIgnored,
        HeadLimitCapped,
    }  # fmt: skip
