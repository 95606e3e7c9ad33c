"""Runs and a result using every field of the artifact format; a run after a JSON trip."""

from __future__ import annotations

from dataclasses import replace

from passk_action.core.gate import GatePolicy
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Extractor,
    FieldRule,
    Phase,
    RowRecord,
    Run,
    Scoring,
    Usage,
    Verdict,
    Version,
    canonical_json,
    object_text,
    sha256_hex,
)
from passk_action.core.notes import Written
from passk_action.core.result import CompareResult, Executions, evaluate


def _digest(row_id: str) -> str:
    return sha256_hex(canonical_json({"id": row_id, "input": {"case": row_id}}))


def small_run() -> Run:
    """A hand-built run that uses every field the format has."""
    rows = (
        RowRecord("refund-001", _digest("refund-001"), "deny", True, ("vip", "eu")),
        RowRecord("refund-002", _digest("refund-002"), "approve", False),
    )
    attempts = (
        Attempt(
            "refund-001",
            1,
            Phase.MAIN,
            "deny",
            checks=(("return_window", "expired"), ("proof_of_purchase", "present")),
            duration_s=1.23456789,
        ),
        Attempt(
            "refund-001",
            2,
            Phase.MAIN,
            "deny",
            checks=(("return_window", "expired"), ("proof_of_purchase", "present")),
            duration_s=0.5,
            retries=("exit-status: exited with status 1",),
        ),
        Attempt("refund-001", 3, Phase.MAIN, "deny", duration_s=0.75),
        Attempt("refund-001", 4, Phase.CONFIRM, "deny", duration_s=0.25),
        Attempt("refund-002", 1, Phase.MAIN, "approve", duration_s=0.1),
        Attempt(
            "refund-002",
            2,
            Phase.MAIN,
            None,
            error="timeout",
            detail="killed after the 60s timeout\nstderr (last 2000 chars): retrying…",
            duration_s=60.0,
        ),
        Attempt("refund-002", 3, Phase.MAIN, "Approve ", duration_s=0.2),
    )
    return Run(
        tool_version="0.1.0",
        dataset_digest="sha256:" + "ab" * 32,
        settings=EvalSettings(k=3, scoring=Scoring(normalize=("strip", "casefold"))),
        agent=AgentInfo(Version.BASELINE, "python3 agent.py --prod", "0123456789abcdef"),
        created_at="2026-11-30T09:00:00Z",
        rows=rows,
        attempts=attempts,
        ratchet=("refund-001",),
    )


def small_run_v2() -> Run:
    """:func:`small_run` with what version 2 added: usage (reported, priced, extra) and warnings."""
    from dataclasses import replace

    run = small_run()
    attempts = list(run.attempts)
    attempts[0] = replace(
        attempts[0],
        usage=Usage(812, 64, 0.00125, "gpt-4o-mini", extra=(("cached_input_tokens", 512.0),)),
    )
    attempts[1] = replace(attempts[1], usage=Usage(790, 71, 0.0001611, "gpt-4o-mini", priced=True))
    attempts[2] = replace(
        attempts[2],
        usage=Usage(cost_usd=0.002),
        warnings=('"usage.input_tokens" must be a whole number >= 0, got "many"; ignored',),
    )
    attempts[5] = replace(attempts[5], usage=Usage(output_tokens=0))
    return replace(run, attempts=tuple(attempts))


def small_run_v3() -> Run:
    """A run with what version 3 added: a structured decision and an expected object, an
    answer an extractor read and one it could not, expected checks, and an outcome."""
    from dataclasses import replace

    run = small_run_v2()
    structured = Scoring(
        normalize=("strip", "casefold"),
        fields=(
            FieldRule("action"),
            FieldRule("amount", tolerance=0.5, relative_tolerance=0.01),
            FieldRule("reasons", compare="set", normalize=()),
        ),
        extract=Extractor(json_pointer="/decision"),
        checks="required",
    )
    refund = object_text({"action": "refund", "amount": 120, "reasons": ["damaged"]})
    rows = (
        replace(run.rows[0], expected=refund, expected_checks=(("tools", ["lookup", "refund"]),)),
        run.rows[1],
        RowRecord("refund-003", _digest("refund-003"), None, False),
    )
    answer = {"decision": {"action": "refund", "amount": 120, "reasons": ["damaged"]}}
    attempts = list(run.attempts)
    attempts[0] = replace(
        attempts[0], decision=refund, answer=answer, checks=(("tools", '["lookup","refund"]'),)
    )
    attempts[3] = replace(
        attempts[3],
        decision=None,
        error="bad-output",
        detail="the answer has no /decision",
        answer="I would refund it",
    )
    attempts += [
        Attempt("refund-003", 1, Phase.MAIN, "success", correct=True, duration_s=2.5),
        Attempt("refund-003", 2, Phase.MAIN, "failure", score=0.25, duration_s=2.5),
        Attempt("refund-003", 3, Phase.MAIN, "success", correct=True, score=1.0, answer="moved"),
    ]
    return replace(
        run,
        settings=EvalSettings(k=3, scoring=structured),
        rows=rows,
        attempts=tuple(attempts),
    )


def small_run_v4() -> Run:
    """A run with what version 4 added: two measurement attempts at a gated row."""
    from dataclasses import replace

    run = small_run_v3()
    row = run.rows[0].id
    top = max(a.number for a in run.attempts if a.row_id == row)
    measured = (
        Attempt(row, top + 1, Phase.MEASURE, run.attempts[0].decision, duration_s=1.5),
        Attempt(row, top + 2, Phase.MEASURE, None, error="timeout", detail="timed out after 30s"),
    )
    order = {r.id: i for i, r in enumerate(run.rows)}
    attempts = sorted((*run.attempts, *measured), key=lambda a: (order[a.row_id], a.number))
    return replace(run, attempts=tuple(attempts))


def small_run_v5() -> Run:
    """A run with what version 5 added: answers a scorer program judged, its verdicts kept
    (one right, one split judge, one scorer that crashed), and the scorer's command."""
    from dataclasses import replace

    run = small_run_v2()
    scoring = Scoring(
        by="command", command=("python3", "scorer.py"), judge_repeats=3, timeout_s=30.0
    )
    rows = (run.rows[0], RowRecord("refund-003", _digest("refund-003"), "approve", False))
    right = Verdict(correct=True, reason="names the refund", duration_s=0.5)
    attempts = (
        Attempt(
            "refund-001", 1, Phase.MAIN, "success", answer="I refund it", verdicts=(right,) * 3
        ),
        Attempt(
            "refund-001",
            2,
            Phase.MAIN,
            "success",
            answer="Refund, I think",
            verdicts=(right, Verdict(score=0.25, duration_s=0.5), right),
        ),
        Attempt(
            "refund-001",
            3,
            Phase.MAIN,
            None,
            error="scorer-error",
            detail="scorer: exited with status 1",
            answer="Refund",
            verdicts=(Verdict(error="exit-status", detail="exited with status 1"),),
        ),
        Attempt(
            "refund-003",
            1,
            Phase.MAIN,
            "failure",
            answer="deny",
            verdicts=(Verdict(correct=False),) * 3,
        ),
        Attempt(
            "refund-003",
            2,
            Phase.MAIN,
            "failure",
            answer="deny",
            verdicts=(Verdict(correct=False),) * 3,
        ),
        Attempt(
            "refund-003",
            3,
            Phase.MAIN,
            "failure",
            answer="deny",
            verdicts=(Verdict(correct=False),) * 3,
        ),
    )
    return replace(run, settings=EvalSettings(k=3, scoring=scoring), rows=rows, attempts=attempts)


def normalized(run: Run) -> Run:
    """What a run looks like after a trip through JSON: durations rounded to 0.1 ms."""
    from dataclasses import replace

    return replace(
        run,
        attempts=tuple(replace(a, duration_s=round(a.duration_s, 4)) for a in run.attempts),
    )


def make_result(candidate: Run | None = None) -> CompareResult:
    candidate = candidate or small_run_v2()
    baseline = replace(
        candidate,
        attempts=tuple(a for a in candidate.attempts if a.error is None),
    )
    policy = GatePolicy(block_on_any_regression=False)
    ratchet = frozenset(candidate.ratchet)
    comparison, gate = evaluate(candidate.rows, baseline, candidate, ratchet=ratchet, policy=policy)
    return CompareResult(
        rows=candidate.rows,
        baseline=baseline,
        candidate=candidate,
        ratchet=ratchet,
        policy=policy,
        comparison=comparison,
        gate=gate,
        notes=(Written("a note"),),
        executions=Executions(
            candidate=6, baseline_topup=0, confirm_baseline=0, confirm_candidate=1, naive=14
        ),
        created_at="2026-11-30T09:00:00Z",
        tool_version="0.1.0",
    )
