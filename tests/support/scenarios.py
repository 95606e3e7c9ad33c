"""Compare results built by hand for the report tests: failed, passed, hostile, spend limits."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from passk_action.core.gate import GatePolicy, ProtectedChange
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowRecord,
    Run,
    Usage,
    Version,
)
from passk_action.core.notes import Written
from passk_action.core.protected import BaselineArtifactChanged, WrittenChange
from passk_action.core.result import CompareResult, Executions, evaluate
from passk_action.core.sequential import SEQUENTIAL, STRICT, RuleSettings

MARKER = "<!-- passk:sticky-comment -->"
RECORD = '<!-- passk:record {"gate":"failed","head":"0123abc"} -->'
DIGEST = "sha256:" + "ab12" * 16
K = 3
NO_EXECUTIONS = Executions()
# The scenarios hold the attempts the sequential rule reads (its confirmation rounds,
# its evidence lines): built for it, they name it (the default rule, relative, needs the
# baseline's measurement; tests/engine/test_relative_path.py and the SDK example's golden).
SEQUENTIAL_RULE = RuleSettings(rule=SEQUENTIAL)
NO_LIMITS = GatePolicy(rule=SEQUENTIAL_RULE)
STRICT_POLICY = GatePolicy(rule=RuleSettings(rule=STRICT))


Checks = Sequence[tuple[str, str]]


def row(row_id: str, expected: str, *, mnb: bool = False) -> RowRecord:
    return RowRecord(
        id=row_id, input_digest="sha256:" + "0" * 64, expected=expected, must_not_break=mnb
    )


Spender = Callable[[str, int], tuple[Usage | None, float]]
"""What an attempt of (row, number) spent and how long it took."""


class Attempts:
    """Numbered attempts for one version: main ones first, then confirmations."""

    def __init__(self, spender: Spender | None = None) -> None:
        self.attempts: list[Attempt] = []
        self._numbers: dict[str, int] = {}
        self._spender = spender

    def _spend(self, attempt: Attempt) -> Attempt:
        if self._spender is None:
            return attempt
        usage, duration = self._spender(attempt.row_id, attempt.number)
        return replace(attempt, usage=usage, duration_s=duration)

    def _next(self, row_id: str) -> int:
        self._numbers[row_id] = self._numbers.get(row_id, 0) + 1
        return self._numbers[row_id]

    def ok(
        self,
        row_id: str,
        decision: str,
        checks: Checks = (),
        *,
        phase: Phase = Phase.MAIN,
        times: int = 1,
    ) -> Attempts:
        for _ in range(times):
            self.attempts.append(
                self._spend(Attempt(row_id, self._next(row_id), phase, decision, tuple(checks)))
            )
        return self

    def error(
        self, row_id: str, reason: str, detail: str, *, phase: Phase = Phase.MAIN
    ) -> Attempts:
        attempt = Attempt(row_id, self._next(row_id), phase, None, (), error=reason, detail=detail)
        self.attempts.append(replace(self._spend(attempt), usage=None))
        return self


def make_run(
    version: Version,
    rows: Sequence[RowRecord],
    attempts: Attempts,
    description: str,
    commit: str | None,
    ratchet: Iterable[str] = (),
) -> Run:
    return Run(
        tool_version="0.1.0",
        dataset_digest=DIGEST,
        settings=EvalSettings(k=K),
        agent=AgentInfo(version=version, description=description, commit=commit),
        created_at="2024-05-01T12:00:00Z",
        rows=tuple(rows),
        attempts=tuple(attempts.attempts),
        ratchet=tuple(ratchet),
    )


def compare(
    rows: Sequence[RowRecord],
    base: Run,
    cand: Run,
    *,
    ratchet: Iterable[str] = (),
    protected: Sequence[ProtectedChange] = (),
    protected_allowed: bool = False,
    notes: tuple[str, ...] = (),
    executions: Executions = NO_EXECUTIONS,
    reused: bool = False,
    policy: GatePolicy = NO_LIMITS,
) -> CompareResult:
    locked = frozenset(ratchet)
    comparison, gate = evaluate(
        rows,
        base,
        cand,
        ratchet=locked,
        policy=policy,
        protected_changes=protected,
        protected_changes_allowed=protected_allowed,
    )
    return CompareResult(
        rows=tuple(rows),
        baseline=base,
        candidate=cand,
        ratchet=locked,
        policy=policy,
        comparison=comparison,
        gate=gate,
        protected_changes=tuple(protected),
        protected_changes_allowed=protected_allowed,
        notes=tuple(Written(note) for note in notes),
        executions=executions,
        reused=reused,
        created_at="2024-05-02T09:30:00Z",
        tool_version="0.1.0",
    )


OK = [("return_window", "ok"), ("proof_of_purchase", "present")]
EXPIRED = [("return_window", "expired"), ("proof_of_purchase", "present")]
TIMEOUT_DETAIL = (
    "killed after the 30s timeout\nstderr (last 2000 chars): Traceback (most recent call last):\n"
    '  File "agent.py", line 12, in <module>\n    time.sleep(60)\nKeyboardInterrupt'
)


def _row_number(row_id: str) -> int:
    return int(row_id.rsplit("-", 1)[1])


def baseline_spend(row_id: str, number: int) -> tuple[Usage | None, float]:
    """Reported tokens and cost; latency 0.6-1.3 s."""
    i = _row_number(row_id)
    tokens_in = 700 + 40 * i + 5 * number
    return Usage(tokens_in, 60, round(tokens_in * 0.15e-6 + 60 * 0.6e-6, 9), "gpt-4o-mini"), (
        0.6 + 0.1 * i + 0.02 * number
    )


def candidate_spend(row_id: str, number: int) -> tuple[Usage | None, float]:
    """A longer prompt: about 45% more cost; latency 0.9-2.0 s."""
    i = _row_number(row_id)
    tokens_in = 1100 + 40 * i + 5 * number
    return Usage(tokens_in, 75, round(tokens_in * 0.15e-6 + 75 * 0.6e-6, 9), "gpt-4o-mini"), (
        0.9 + 0.15 * i + 0.03 * number
    )


def _executions(baseline: int, candidate: int, rounds: int) -> Executions:
    return Executions(
        candidate=21,
        confirm_baseline=baseline,
        confirm_candidate=candidate,
        naive=42 + baseline + candidate,
        confirm_rounds=rounds,
    )


def failed_scenario(*, strict: bool = False) -> CompareResult:
    """Every kind of row the report distinguishes, and a failed gate.

    Confirmed as the engine confirms under the default rule (``strict=False``): the
    candidate's test of refund-001 fails after 18 answers, so its baseline is run
    until its test ends (25 answers); refund-004, one wrong answer in its first 3, gets
    the 15 more that one wrong answer needs and passes, listed as a wrong answer the
    rule did not confirm.  ``strict=True``: confirmed as the strict rule confirms (6
    attempts on both versions of a lost must-not-break or ratchet row).
    """
    rows = [
        row("refund-001", "approve", mnb=True),  # must-not-break confirmed regression
        row("refund-002", "deny"),  # lost, the baseline also varies
        row("refund-003", "approve", mnb=True),  # must-not-break, unclassified candidate
        row("refund-004", "approve"),  # ratchet-locked, lost, not reproduced
        row("refund-005", "deny"),  # gained
        row("refund-006", "deny"),  # decision holds, a check flips on the candidate
        row("refund-007", "approve"),  # stable-wrong -> flip; a check flips on the baseline
    ]
    base = (
        Attempts(baseline_spend)
        .ok("refund-001", "approve", OK, times=3)
        .ok("refund-001", "approve", OK, phase=Phase.CONFIRM, times=6 if strict else 22)
        .ok("refund-002", "deny", times=3)
        .ok("refund-002", "deny", phase=Phase.CONFIRM)
        .ok("refund-002", "approve", phase=Phase.CONFIRM)
        .ok("refund-003", "approve", OK, times=3)
        .ok("refund-004", "approve", times=3)
        .ok("refund-004", "approve", phase=Phase.CONFIRM, times=2 if strict else 0)
        .ok("refund-005", "deny")
        .ok("refund-005", "approve")
        .ok("refund-005", "deny")
        .ok("refund-006", "deny", [("proof_of_purchase", "missing")], times=3)
        .ok("refund-007", "deny", [("return_window", "ok")])
        .ok("refund-007", "deny", [("return_window", "expired")])
        .ok("refund-007", "deny", [("return_window", "ok")])
    )
    cand = (
        Attempts(candidate_spend)
        .ok("refund-001", "approve", OK, times=2)
        .ok("refund-001", "deny", EXPIRED)
        .ok("refund-001", "approve", OK, phase=Phase.CONFIRM, times=3)
        .ok("refund-001", "deny", EXPIRED, phase=Phase.CONFIRM, times=3 if strict else 12)
        .ok("refund-002", "deny")
        .ok("refund-002", "approve")
        .ok("refund-002", "deny")
        .ok("refund-002", "deny", phase=Phase.CONFIRM, times=2)
        .ok("refund-003", "approve", OK)
        .error("refund-003", "timeout", TIMEOUT_DETAIL)
        .error("refund-003", "exit-status", "exited with status 3")
        .ok("refund-004", "approve")
        .ok("refund-004", "deny")
        .ok("refund-004", "approve")
        .ok("refund-004", "approve", phase=Phase.CONFIRM, times=2 if strict else 15)
        .ok("refund-005", "deny", times=3)
        .ok("refund-006", "deny", [("proof_of_purchase", "missing")])
        .ok("refund-006", "deny", [("proof_of_purchase", "present")])
        .ok("refund-006", "deny", [("proof_of_purchase", "missing")])
        .ok("refund-007", "deny", [("return_window", "ok")])
        .ok("refund-007", "approve", [("return_window", "ok")])
        .ok("refund-007", "deny", [("return_window", "ok")])
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, "refund agent (production prompt)", "9f8e7d6c5b4a"),
        make_run(Version.CANDIDATE, rows, cand, "refund agent (new prompt)", "0123abcdef99"),
        ratchet=["refund-004"],
        notes=("1 row was relabeled since the baseline was recorded: refund-005",),
        # Confirmations: (baseline, candidate, rounds); naive is both versions' 42 main
        # attempts plus the same confirmations.
        executions=_executions(*((10, 10, 1) if strict else (24, 32, 2))),
        policy=STRICT_POLICY if strict else NO_LIMITS,
    )


def passed_scenario() -> CompareResult:
    """A clean pull request: one row gained, verdicts reused, an allowed protected change."""
    rows = [
        row("claim-a", "pay", mnb=True),
        row("claim-b", "reject"),
        row("claim-c", "pay"),
        row("claim-d", "escalate"),
    ]
    base = (
        Attempts()
        .ok("claim-a", "pay", times=3)
        .ok("claim-b", "reject", times=3)
        .ok("claim-c", "pay")
        .ok("claim-c", "reject")
        .ok("claim-c", "pay")
        .ok("claim-d", "pay", times=3)
    )
    cand = (
        Attempts()
        .ok("claim-a", "pay", times=3)
        .ok("claim-a", "pay", phase=Phase.CONFIRM, times=4)  # 7 right answers pass it
        .ok("claim-b", "reject", times=3)
        .ok("claim-c", "pay", times=3)
        .ok("claim-d", "pay", times=3)
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, "claims agent v1", None),
        make_run(Version.CANDIDATE, rows, cand, "claims agent v2", "abcdef1234567890"),
        protected=[
            ProtectedChange(
                "baseline-artifact-changed", BaselineArtifactChanged(".passk/baseline.json", False)
            )
        ],
        protected_allowed=True,
        executions=Executions(candidate=0, naive=24),
        reused=True,
    )


# The block keeps the tail of a long detail, so the hostile part comes last.
HOSTILE_DETAILS = "y" * 10_000 + (
    "\n```\n</details>\n<!-- passk:sticky-comment -->\n"
    "<img src=x onerror=alert(1)>\r\nNUL:\x00 end\n"
)


def hostile_scenario() -> CompareResult:
    """Every user- or agent-controlled string is hostile."""
    html_id = "</details><img src=x onerror=alert(1)>"
    pipe_id = "| a | b |"
    link_id = "[click](https://evil.example)"
    marker_id = MARKER
    ping_id = "@octocat #1 www.evil.example\nsecond line"
    rows = [
        row(html_id, "approve", mnb=True),
        row(pipe_id, "```"),
        row(link_id, "**yes**"),
        row(marker_id, "deny"),
        row(ping_id, "approve", mnb=True),
    ]
    check = "`x` | y <!-- passk:record -->"
    base = (
        Attempts()
        .ok(html_id, "approve", [(check, "[click](https://evil.example)")], times=3)
        .ok(
            html_id,
            "approve",
            [(check, "[click](https://evil.example)")],
            phase=Phase.CONFIRM,
            times=2,
        )
        .ok(pipe_id, "```", times=3)
        .ok(pipe_id, "@octocat", phase=Phase.CONFIRM)
        .ok(link_id, "**yes**")
        .ok(link_id, "</details>")
        .ok(link_id, "**yes**")
        .ok(marker_id, "deny", [("<!-- passk:sticky-comment -->", "a")], times=3)
        .ok(ping_id, "approve", times=3)
    )
    cand = (
        Attempts()
        .ok(html_id, "approve", [(check, "[click](https://evil.example)")], times=2)
        .ok(html_id, "@octocat #1\nnext", [(check, "@octocat #1\nnext")])
        .ok(
            html_id,
            "@octocat #1\nnext",
            [(check, "@octocat #1\nnext")],
            phase=Phase.CONFIRM,
            times=2,
        )
        .ok(pipe_id, "```")
        .ok(pipe_id, "| x |")
        .ok(pipe_id, "```")
        .ok(pipe_id, "```", phase=Phase.CONFIRM)
        .ok(link_id, "**yes**", times=3)
        .ok(marker_id, "deny", [("<!-- passk:sticky-comment -->", "a")])
        .ok(marker_id, "deny", [("<!-- passk:sticky-comment -->", "<b>b</b>")])
        .ok(marker_id, "deny", [("<!-- passk:sticky-comment -->", "a")])
        .ok(ping_id, "approve")
        .error(ping_id, "exit-status`|<b>", HOSTILE_DETAILS)
        .error(ping_id, "exit-status`|<b>", "second")
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, "**bold** @team [x](https://evil.example)", None),
        make_run(Version.CANDIDATE, rows, cand, "<script>alert(1)</script>", "`; rm -rf /"),
        protected=[
            ProtectedChange(
                "relabeled", WrittenChange("row <!-- x --> relabeled | @octocat"), pipe_id
            )
        ],
        notes=("note with <!-- passk:sticky-comment --> and @octocat\nand a newline",),
        executions=Executions(candidate=13, confirm_baseline=3, confirm_candidate=3, naive=36),
    )


def many_lost_rows(n: int) -> CompareResult:
    """``n`` lost rows with long ids, every other one must-not-break."""
    rows = [row(f"row-{i:05d}-" + "x" * 60, "approve", mnb=i % 2 == 0) for i in range(n)]
    base = Attempts()
    cand = Attempts()
    for r in rows:
        base.ok(r.id, "approve", times=3)
        cand.ok(r.id, "approve", times=2).ok(r.id, "deny")
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, "big baseline", None),
        make_run(Version.CANDIDATE, rows, cand, "big candidate", None),
        executions=Executions(candidate=3 * n, naive=6 * n),
        policy=STRICT_POLICY,  # one wrong answer blocks at once: as many blockers as can be
    )


SPEND_LIMITS = GatePolicy(
    rule=SEQUENTIAL_RULE, max_cost_increase=0.25, max_latency_p95_increase=0.3
)


def spend_limits_scenario(
    policy: GatePolicy = SPEND_LIMITS, protected: Sequence[ProtectedChange] = ()
) -> CompareResult:
    """Every row holds, but the candidate passes both spend limits the base commit sets.

    36 attempts a row, 72 a version: the fewest whose latencies bound a p95
    (issue 20: a limit fails only beyond noise).
    """
    rows = [row("refund-001", "approve", mnb=True), row("refund-002", "deny")]
    base = (
        Attempts(baseline_spend)
        .ok("refund-001", "approve", OK, times=36)
        .ok("refund-002", "deny", times=36)
    )
    cand = (
        Attempts(candidate_spend)
        .ok("refund-001", "approve", OK, times=36)
        .ok("refund-002", "deny", times=36)
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, "refund agent (production prompt)", "9f8e7d6c5b4a"),
        make_run(Version.CANDIDATE, rows, cand, "refund agent (new prompt)", "0123abcdef99"),
        executions=Executions(candidate=72, naive=144),
        policy=policy,
        protected=protected,
    )
