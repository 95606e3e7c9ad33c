"""Golden tests for the Markdown renderers: the run report, the compare report, the PR comment.

Each scenario builds its runs by hand, attempt by attempt, decides the gate
with ``core.result.evaluate`` (the only path to a decision), renders, and
compares the **whole text** with a file in ``tests/golden/render/``.

To regenerate the golden files after an intended change, run::

    PASSK_UPDATE_GOLDEN=1 python -m pytest tests/report/test_render.py -q

then read the diff of ``tests/golden/render/`` before committing it.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from passk_action.core.analysis import analyze, analyze_run
from passk_action.core.error_bars import ErrorBar
from passk_action.core.gate import GateDecision, GateFailure, ProtectedChange, Rule
from passk_action.core.history import History, HistoryBuilder, summarize_version
from passk_action.core.model import (
    Phase,
    Version,
)
from passk_action.core.operating import MeasuredRow, dataset_oc, measured_rates, row_oc
from passk_action.core.paired import PairedComparison
from passk_action.core.power import Power, power_analysis
from passk_action.core.protected import GatedBy, LabelChanged
from passk_action.core.reasons import WrittenReason
from passk_action.core.result import CompareResult, Executions
from passk_action.core.sequential import GatedKind, RuleSettings
from passk_action.errors import AgentCouldNotRun
from passk_action.report.check_run import check_title
from passk_action.report.comment import (
    CommentContext,
    render_agent_failure_comment,
    render_comment,
)
from passk_action.report.compare_report import render_compare_report
from passk_action.report.gated import gate_sentence, rates_of, rates_sentence
from passk_action.report.how_sure import STATISTICS_TITLE, noise_sentence, power_text
from passk_action.report.html import render_html_report
from passk_action.report.phrases import (
    capped,
    counts_text,
    interval_text,
    percent,
    points,
    ranked_counts,
    short_digest,
)
from passk_action.report.run_report import render_run_report, run_report_json
from support.render_goldens import assert_golden
from support.scenarios import (
    DIGEST,
    MARKER,
    RECORD,
    STRICT_POLICY,
    Attempts,
    compare,
    failed_scenario,
    hostile_scenario,
    make_run,
    many_lost_rows,
    passed_scenario,
    row,
    spend_limits_scenario,
)

# --- golden files -------------------------------------------------------------


SCENARIOS = {
    "failed": failed_scenario,
    "passed": passed_scenario,
    "hostile": hostile_scenario,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_compare_report_golden(name: str) -> None:
    assert_golden(f"compare_{name}.md", render_compare_report(SCENARIOS[name]()))


# The pull request around a comment: what the action knows besides the result.
PR_CONTEXT = CommentContext(
    head_sha="0123abcdef9988776655443322110000ffffeeee",
    base_sha="9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
    base_ref="main",
    config="passk.yml",
    inputs={
        "refund-001": {
            "order_id": "A-1001",
            "amount": 120.5,
            "days_since_purchase": 12,
            "reason": "arrived broken, photo attached",
        },
        "refund-003": "I want my money back for order A-1003, it never arrived.",
        "refund-004": {"order_id": "A-1004", "amount": 15, "days_since_purchase": 2},
    },
    allow_label="passk: allow protected change",
    result_path=".passk/result.json",
    details_url="https://github.com/o/r/actions/runs/42",
)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_comment_golden(name: str) -> None:
    context = None if name == "hostile" else PR_CONTEXT
    text = render_comment(SCENARIOS[name](), marker=MARKER, record=RECORD, context=context)
    assert_golden(f"comment_{name}.md", text)


def protected_scenario() -> CompareResult:
    """Every row holds, but the pull request relabels a must-not-break row without the label."""
    rows = [row("claim-a", "pay", mnb=True), row("claim-b", "reject")]
    base = Attempts().ok("claim-a", "pay", times=3).ok("claim-b", "reject", times=3)
    cand = (
        Attempts()
        .ok("claim-a", "pay", times=3)
        .ok("claim-a", "pay", phase=Phase.CONFIRM, times=4)
        .ok("claim-b", "reject", times=3)
    )
    return compare(
        rows,
        make_run(Version.BASELINE, rows, base, "claims agent v1", "1111111111aa"),
        make_run(Version.CANDIDATE, rows, cand, "claims agent v2", "2222222222bb"),
        protected=[
            ProtectedChange(
                "must-not-break-row-relabeled",
                LabelChanged(GatedBy.MUST_NOT_BREAK, "pay", "reject"),
                "claim-a",
            )
        ],
        executions=Executions(candidate=6, naive=12),
    )


def test_comment_golden_protected_change() -> None:
    result = protected_scenario()
    text = render_comment(result, marker=MARKER, record=RECORD, context=PR_CONTEXT)
    assert_golden("comment_protected.md", text)
    assert "adds the label `passk: allow protected change`" in text


def test_comment_golden_strict_rule() -> None:
    """``gate.rule: strict``: any wrong answer blocks.  refund-004 was right on every
    confirmation attempt and still blocks; the comment says why, never "not reproduced"."""
    text = render_comment(
        failed_scenario(strict=True), marker=MARKER, record=RECORD, context=PR_CONTEXT
    )
    assert_golden("comment_strict.md", text)
    blockers = text.split("| | mean accuracy")[0]
    assert "not reproduced" not in blockers
    assert (
        "- on re-run the candidate was right on all 2 of its attempts, but a wrong answer among "
        "the first k still blocks (the strict rule: any wrong answer blocks)"
    ) in blockers
    assert (
        "- **evidence:** 1 wrong of 5 attempts; baseline 0 of 5; the strict rule blocks on any"
        in (blockers)
    )


def test_every_blocker_states_its_evidence_and_every_unconfirmed_wrong_answer_is_listed() -> None:
    """Nothing hidden (issue 20): under the blockers, one line per gated row that passed with
    a wrong answer, with what the rule saw; each blocking row states its evidence."""
    text = render_comment(failed_scenario(), marker=MARKER, record=RECORD, context=PR_CONTEXT)
    why = text.index("**Why it failed**")
    listed = text.index("**Wrong answers the rule did not confirm** (1)")
    numbers = text.index("| | mean accuracy")
    assert why < listed < numbers
    assert (
        "- `refund-004` (ratchet): 1 wrong of 18 attempts; baseline 0 of 3; within what a row "
        "right 99% of the time does by chance"
    ) in text
    assert (
        "- **evidence:** 13 wrong of 18 attempts; baseline 0 of 25; more wrong answers than a "
        "row right 99% of the time gives by chance, and the baseline was not shown to vary as much"
    ) in text
    assert "- **evidence:** 0 wrong of 3 attempts (2 errored); baseline 0 of 3;" in text
    # A passing gate lists them too, above the numbers.
    passing = replace(
        failed_scenario(), gate=replace(failed_scenario().gate, failures=(), passed=True)
    )
    shown = render_comment(passing, marker=MARKER, record=RECORD)
    assert shown.index("**Wrong answers the rule did not confirm** (1)") < shown.index(
        "| | mean accuracy"
    )


def test_how_sure_states_the_gates_rates_for_its_rows_and_settings() -> None:
    """The comment's How-sure paragraph on the gate: the exact rates ``passk plan`` prints,
    for a dataset's gated rows and rule (golden: every case it words)."""
    mnb, ratchet = GatedKind.MUST_NOT_BREAK, GatedKind.RATCHET
    cases = [
        ("no gated row", None, RuleSettings(rule="sequential")),
        (
            "1 must-not-break row, k = 3",
            dataset_oc(RuleSettings(rule="sequential"), k=3, kinds=[mnb]),
            RuleSettings(rule="sequential"),
        ),
        (
            "10 rows, k = 3",
            dataset_oc(RuleSettings(rule="sequential"), k=3, kinds=[mnb] * 10),
            RuleSettings(rule="sequential"),
        ),
        (
            "50 rows, k = 8",
            dataset_oc(RuleSettings(rule="sequential"), k=8, kinds=[mnb] * 50),
            RuleSettings(rule="sequential"),
        ),
        (
            "strict, 5 must-not-break and 5 ratchet rows, k = 3",
            dataset_oc(STRICT_POLICY.rule, k=3, kinds=[mnb] * 5 + [ratchet] * 5),
            STRICT_POLICY.rule,
        ),
    ]
    text = "".join(f"## {name}\n\n{gate_sentence(oc, rule)}\n\n" for name, oc, rule in cases)
    assert_golden("how_sure_gate.md", text)
    assert "blocks a harmless pull request (every gated row right 99% of the time on both " \
        "versions) 0.41% of the time, and catches a gated row whose accuracy drops from 99% " \
        "to 70% 91.0% of the time (that row's own block" in text  # fmt: skip
    comment = render_comment(failed_scenario(), marker=MARKER, record=RECORD)
    assert rates_sentence(rates_of(failed_scenario()), RuleSettings(rule="sequential")) in comment


def test_how_sure_states_this_dataset_s_rates_and_names_the_rows_that_cost_them() -> None:
    """Issue 29: the rates at the gated rows' measured accuracies, not an assumed 99%; the
    rows that make the gate noisy or expensive named, with what each costs."""
    mnb = GatedKind.MUST_NOT_BREAK
    rows = [MeasuredRow("r12", mnb, 50, 60)] + [
        MeasuredRow(f"r{i:02d}", mnb, 60, 60) for i in range(9)
    ]
    rule = RuleSettings(rule="sequential")  # the rule that assumes 99%: noisy rows to name
    rates = measured_rates(rule, k=3, rows=rows)
    flaky = row_oc(rule, k=3, candidate=50 / 60, baseline=50 / 60)
    assert rates.false_block == pytest.approx(flaky.block)  # the reliable rows never block
    text = rates_sentence(rates, rule)
    assert (
        "it blocks a harmless pull request 1.45% of the time, and catches a gated row "
        "whose accuracy drops 20 points below its own at least 2.17% of the time" in text
    )
    assert (
        "Noisiest: `r12` (right 83.3% of 60 baseline answers: blocks a harmless pull "
        "request 1.45% of the time)." in text
    )
    assert "Costliest: `r12` (right 83.3% of the time on the baseline: about 18 candidate " \
        "and 26 baseline attempts a pull request)." in text  # fmt: skip
    # Control: ten rows right on every answer name no row.
    calm = measured_rates(rule, k=3, rows=[*rows[1:], MeasuredRow("r10", mnb, 60, 60)])
    assert "Noisiest" not in rates_sentence(calm, rule)
    assert "Costliest" not in rates_sentence(calm, rule)


def test_a_preview_of_uncommitted_work_is_not_called_the_head() -> None:
    # `passk compare --base main --comment` before committing: the candidate's commit is
    # where the work sits (often the base itself), not a pull request's head.
    result = passed_scenario()
    agent = replace(result.candidate.agent, commit=PR_CONTEXT.base_sha, dirty=True)
    result = replace(result, candidate=replace(result.candidate, agent=agent))
    context = replace(PR_CONTEXT, head_sha=None)
    text = render_comment(result, marker=MARKER, record=RECORD, context=context)
    line = next(x for x in text.splitlines() if x.startswith("- **Compared:**"))
    assert line.startswith(
        "- **Compared:** candidate the working tree (uncommitted changes on top of "
        "`9f8e7d6c5b4a`) with the baseline committed on base `main` at `9f8e7d6c5b4a`"
    ), line
    assert "at head" not in text


def test_comment_golden_rerun_replay() -> None:
    """A re-run of a failing commit replays the recorded verdicts, and says so first."""
    result = replace(failed_scenario(), reused=True, executions=Executions(naive=62))
    text = render_comment(result, marker=MARKER, record=RECORD, context=PR_CONTEXT)
    assert_golden("comment_rerun.md", text)
    assert text.splitlines()[3].startswith("Re-run of the same commit")


def history_on_main() -> History:
    """Six baselines of the failed scenario's rows on main, read from a shallow clone."""
    rows = {r.id: r for r in failed_scenario().rows}
    # Newest first; "C" stable-correct, "F" flip, "-" not in that baseline.
    lines = {
        "refund-001": "CCCCCC",
        "refund-002": "FCFCCC",
        "refund-003": "CC----",
        "refund-004": "CFCCFC",
        "refund-005": "FFFFFF",
    }
    builder = HistoryBuilder(10)
    for i in range(6):
        attempts = Attempts()
        held = [rows[row_id] for row_id, codes in lines.items() if codes[i] != "-"]
        for record in held:
            if lines[record.id][i] == "C":
                attempts.ok(record.id, record.expected, times=3)
            else:
                attempts.ok(record.id, record.expected, times=2).ok(record.id, "escalate")
        run = make_run(Version.BASELINE, held, attempts, "refund agent", f"{i:x}" * 12)
        builder.add(f"{6 - i:x}" * 40, f"2024-04-{20 + 6 - i}T10:00:00Z", summarize_version(run))
    return builder.build(branch="main", artifact=".passk/baseline.json", shallow=True)


def test_comment_golden_with_history_marks() -> None:
    """Each blocking or lost row says whether main's baselines had the same trouble."""
    context = replace(PR_CONTEXT, history=history_on_main())
    # The strict rule's scenario: its three blocking rows are new and old trouble alike.
    scenario = failed_scenario(strict=True)
    text = render_comment(scenario, marker=MARKER, record=RECORD, context=context)
    assert_golden("comment_history.md", text)
    marks = [line for line in text.splitlines() if "history:" in line]
    assert marks == [
        "- history: stable-correct in each of the last 6 baselines on main (new trouble)",
        "- history: stable-correct in each of the 2 baselines on main since it joined"
        " (new trouble)",
        "- history: flip in 2 of the last 6 baselines on main (old trouble)",
        "- `refund-002`: stable-correct → flip (with confirmation attempts: baseline flip, "
        "candidate flip); the baseline also varies: it answered wrong on confirmation; "
        "history: flip in 2 of the last 6 baselines on main (old trouble)",
    ]
    note = "6 baselines readable on main in this shallow clone; fetch-depth: 0 gives all"
    assert f"- {note}" in text
    # Without a history the comment is the one it always was.
    plain = render_comment(scenario, marker=MARKER, record=RECORD, context=PR_CONTEXT)
    assert "history" not in plain


def test_the_compare_report_marks_lost_rows_with_their_history_too() -> None:
    """The job summary and `passk compare --base` say what the comment says."""
    context = CommentContext(history=history_on_main())
    text = render_compare_report(failed_scenario(strict=True), context=context)
    marked = [line.split(":")[0] for line in text.splitlines() if "; history: " in line]
    assert marked == [
        "- `refund-001` (must-not-break)",
        "- `refund-003` (must-not-break)",
        "- `refund-004` (ratchet)",
        "- `refund-002`",
    ]
    # The "Why it failed" block, shared with the comment, marks its rows too.
    assert text.count("\n- history: ") == 3
    assert "- 6 baselines readable on main in this shallow clone; fetch-depth: 0 gives all" in text
    assert render_compare_report(failed_scenario()) == render_compare_report(
        failed_scenario(), context=CommentContext()
    )


def test_comment_golden_two_steps_in_one_workflow() -> None:
    """Two passk steps, two comments: each keyed by its own marker, each naming its step."""
    first = render_comment(
        failed_scenario(),
        marker="<!-- passk:sticky-comment refunds -->",
        record=RECORD,
        context=replace(PR_CONTEXT, step="refunds (passk.yml)", config="passk.yml"),
    )
    second = render_comment(
        passed_scenario(),
        marker="<!-- passk:sticky-comment claims -->",
        record=RECORD,
        context=replace(PR_CONTEXT, step="claims (claims/passk.yml)", config="claims/passk.yml"),
    )
    assert_golden("comment_two_steps.md", first + "\n\n" + second + "\n")
    assert first.splitlines()[1].startswith("### ❌ passk · refunds (passk.yml): ")
    assert second.splitlines()[1].startswith("### ✅ passk · claims (claims/passk.yml): ")


def test_comment_golden_agent_could_not_run() -> None:
    error = AgentCouldNotRun(
        version="candidate",
        reason="setup command `pip install -r requirements.txt` exited with status 1",
        stderr_tail=(
            "Collecting openai==9.9.9\n"
            "ERROR: Could not find a version that satisfies the requirement openai==9.9.9\n"
            "ERROR: No matching distribution found for openai==9.9.9"
        ),
        hint="fix the setup command in passk.yml (agent.setup), or pin a version that exists",
        where="passk.yml: agent.setup[0]",
        during_setup=True,
    )
    text = render_agent_failure_comment(error, marker=MARKER, record=RECORD, context=PR_CONTEXT)
    assert_golden("comment_agent_failed.md", text)


def test_check_titles_name_the_reason() -> None:
    assert check_title(failed_scenario()) == (
        "1 must-not-break row broke: refund-001 · 1 must-not-break row got too few answers: "
        "refund-003"
    )
    assert check_title(failed_scenario(strict=True)) == (
        "1 must-not-break row broke: refund-001 · 1 must-not-break row got too few answers: "
        "refund-003 · 1 ratchet-locked row broke: refund-004"
    )
    assert check_title(passed_scenario()) == "passed: 1 gained, 0 lost"
    assert check_title(protected_scenario()) == ("1 protected change not allowed by label: claim-a")
    assert check_title(many_lost_rows(10)) == (
        "5 must-not-break rows broke: "
        + ", ".join(f"row-{i:05d}-" + "x" * 29 + "…" for i in (0, 2, 4))
        + " +2 more"
    )


def test_the_first_blocking_row_comes_before_the_numbers_on_the_first_screen() -> None:
    """Rendered as GitHub renders it: the reviewer sees what blocks before any number."""
    text = render_comment(failed_scenario(), marker=MARKER, record=RECORD, context=PR_CONTEXT)
    html = gfm().render(text)
    lines = [line for line in html.splitlines() if line.strip()]
    first_row = next(i for i, line in enumerate(lines) if "refund-001" in line)
    table = next(i for i, line in enumerate(lines) if line.startswith("<table>"))
    assert first_row < table
    assert first_row < 25
    # Each blocking row is shown once in full (the verdict line names it too).
    assert text.count("**`refund-001`**") == 1
    assert html.count("refund-001") == 2


def test_the_passing_comment_is_short() -> None:
    text = render_comment(passed_scenario(), marker=MARKER, record=RECORD, context=PR_CONTEXT)
    # What shows with every <details> closed: the verdict, the re-run line, the allowed
    # protected change, the numbers (five table lines), the rows and the version.
    visible = re.sub(r"<details>.*?</details>", "", text, flags=re.S)
    shown = [line for line in visible.splitlines() if line.strip()]
    assert len(shown) == 13, shown
    assert len(visible) < 1000


@pytest.mark.parametrize("name", ["failed", "hostile"])
def test_run_report_golden(name: str) -> None:
    assert_golden(f"run_{name}.md", render_run_report(SCENARIOS[name]().candidate))


def test_a_run_another_passk_recorded_says_so_and_how_to_record_it_again() -> None:
    # The demo baselines were recorded by passk 0.1.0: true, and said as what it means.
    run = replace(failed_scenario().candidate, tool_version="0.1.0")
    line = next(x for x in render_run_report(run, reader="1.0.0").splitlines() if "Recorded" in x)
    assert line.endswith(
        "by passk `0.1.0` (another version than this passk `1.0.0`, which reads its attempts "
        "as recorded; `passk baseline` records it again)"
    )
    same = render_run_report(run, reader="0.1.0")
    assert "another version" not in same and "by passk `0.1.0`" in same


def test_a_baseline_s_measurement_is_not_called_confirmation() -> None:
    """A baseline `passk baseline` recorded for the relative rule keeps measurement attempts
    of its gated rows: named as such beside any confirmations, never counted in the numbers."""
    run = failed_scenario().candidate
    first = run.attempts[0]
    measured = tuple(replace(first, number=100 + n, phase=Phase.MEASURE) for n in range(5))
    text = render_run_report(replace(run, attempts=run.attempts + measured))
    line = next(x for x in text.splitlines() if x.startswith("- **Attempts:**"))
    assert line.endswith(
        "· 5 measurement attempts and 32 confirmation attempts recorded, not counted in the numbers"
    ), line
    # Control: the same run without them says what it always said.
    assert "measurement" not in render_run_report(run)


def test_run_report_caps_its_row_table() -> None:
    text = render_run_report(failed_scenario().candidate, rows_limit=2)
    assert_golden("run_failed_capped.md", text)


# --- what the goldens are meant to show, stated so a bad regeneration fails ---


def test_the_failed_scenario_fails_for_the_expected_reasons() -> None:
    result = failed_scenario()
    assert [(f.id, f.rule.value) for f in result.gate.failures] == [
        ("refund-001", "must-not-break"),
        ("refund-003", "unclassified"),
    ]
    report = render_compare_report(result)
    assert report.startswith("# ❌ passk: gate failed: 2 failures")
    assert (
        "first divergent check `return_window`: baseline ok ×25 · candidate expired ×13, ok ×5"
        in report
    )
    strict = failed_scenario(strict=True)
    assert [(f.id, f.rule.value) for f in strict.gate.failures] == [
        ("refund-001", "must-not-break"),
        ("refund-003", "unclassified"),
        ("refund-004", "ratchet"),
    ]
    report = render_compare_report(strict)
    assert report.startswith("# ❌ passk: gate failed: 3 failures")
    assert (
        "first divergent check `return_window`: baseline ok ×9 · candidate ok ×5, expired ×4"
        in report
    )


def agresti_coull_t(values: list[float], q: float, worth: float = 1.0) -> tuple[float, float]:
    """By hand: z^2/(2 worth) pseudo-rows of 1 and of 0, centre +- q * SE, clipped to [0, 1]."""
    z = 1.959964
    half, total = z * z / 2 / worth, len(values) + z * z / worth
    centre = (sum(values) + half) / total
    spread = sum((x - centre) ** 2 for x in values) + half * ((1 - centre) ** 2 + centre**2)
    width = q * spread**0.5 / total
    return max(0.0, centre - width), min(1.0, centre + width)


def test_the_report_states_both_versions_error_bars_computed_by_hand() -> None:
    report = render_compare_report(failed_scenario())
    # Baseline per-row accuracy: 1, 1, 1, 1, 2/3, 1, 0 -> mean 17/21; the sample
    # variance is (5 (4/21)^2 + (3/21)^2 + (17/21)^2) / 6 = 1/7, SE = sqrt(1/49) = 1/7.
    # pass^3: five rows 1, two rows 0 -> 5/7, variance 5/21, SE = sqrt(5/147).
    # Intervals: Agresti-Coull with t_{0.975, 6} = 2.446912 (tables) as the multiplier,
    # the pseudo-answers sized by what a row of 3 answers is worth:
    # mean (1 - mean) / (n SE^2) = (17/21)(4/21) / (7 / 49) = 68/63 (pass^k: 1 each).
    base_acc = 17 / 21
    base_pk, base_pk_se = 5 / 7, (5 / 147) ** 0.5
    acc_low, acc_high = agresti_coull_t([1, 1, 1, 1, 2 / 3, 1, 0], 2.4469118511449786, 68 / 63)
    pk_low, pk_high = agresti_coull_t([1, 1, 1, 1, 0, 1, 0], 2.4469118511449786)
    expected = (
        f"| baseline | {percent(base_acc)} | {percent(acc_low)} – {percent(acc_high)} "
        f"| 14.3 pts | {percent(base_pk)} | {percent(pk_low)} – {percent(pk_high)} "
        f"| {base_pk_se * 100:.1f} pts | 7 |"
    )
    assert expected == (
        "| baseline | 81.0% | 38.0% – 100.0% | 14.3 pts | 71.4% | 28.1% – 99.5% | 18.4 pts | 7 |"
    )
    assert expected in report
    # Candidate: 2/3, 2/3, 1 (one valid answer), 2/3, 1, 1, 1/3 -> 16/21 per row,
    # not the pooled 14/19 of the numbers table: the note under the table says why.
    assert "| candidate | 76.2% |" in report and "| candidate | 73.7% |" in report
    assert "per-row mean can differ slightly from the pooled mean accuracy" in report
    # The block sits between the noise sentence and the row counts.
    assert report.index("**Within noise:**") < report.index(f"**{STATISTICS_TITLE}**")
    assert report.index(f"**{STATISTICS_TITLE}**") < report.index("**Rows:** 1 gained")
    # The drop its verdict flags "worse" 80% of the time (model in core/power.Power):
    # with 7 rows it takes half the accuracy (31.8 pts by the old formula was flagged
    # far less often than 80%; bench/power.md).
    assert (
        'this comparison flags "worse" 80% of the time (its 95% interval below 0) is **50.0 pts**'
        in report
    )
    # Of the paired design too: the differences' variance is all within-row noise.
    assert "Advice: raise k: most of the variance is answer-to-answer noise" in report


def test_the_statistics_table_uses_the_given_analysis_and_names_clusters_and_left_out_rows() -> (
    None
):
    rows = [row("a", "yes"), row("b", "yes"), row("c", "yes"), row("d", "yes")]
    base = Attempts().ok("a", "yes", times=3).ok("b", "yes", times=3)
    base.ok("c", "no", times=3).ok("d", "yes", times=3)
    cand = Attempts().ok("a", "yes", times=3).ok("b", "no", times=3).ok("c", "yes", times=3)
    for _ in range(3):
        cand.error("d", "timeout", "killed")
    result = compare(
        rows,
        make_run(Version.BASELINE, rows, base, "v1", None),
        make_run(Version.CANDIDATE, rows, cand, "v2", None),
    )
    stats = analyze(result, {"a": "one", "b": "one", "c": "two", "d": "three"})
    report = render_compare_report(result, analysis=stats)
    assert "| 4 (3 clusters) |" in report  # baseline: every row answered
    assert "| 3 (2 clusters, 1 without a valid answer left out) |" in report
    assert "| 3 (1 without a valid answer left out) |" in render_compare_report(result)
    assert "**Too few rows" not in report


def test_power_text_edge_cases() -> None:
    too_few = Power(1, "paired", None, None, None, None, None, None, None, None, None)
    assert power_text(too_few).startswith("Too few rows to estimate the smallest change")
    run = failed_scenario().candidate
    _, summaries = analyze_run(run.rows, run)
    single = power_text(power_analysis(summaries))
    assert 'a comparison on these rows would flag "worse" 80% of the time' in single
    assert "paired" not in single and "0.0 pts" not in single


def test_the_html_page_shows_the_statistics_once() -> None:
    page = render_html_report(failed_scenario())
    assert page.count('id="error-bars"') == 1
    assert page.count(STATISTICS_TITLE) == 1
    assert page.count("this comparison flags") == 1
    assert page.count("per-row mean can differ slightly") == 1


def test_the_comment_keeps_the_intervals_when_lists_are_cut() -> None:
    result = many_lost_rows(200)
    tight = render_comment(result, marker=MARKER, record=RECORD, limit=8_000)
    assert "Some lists are shortened" in tight
    line = next(x for x in tight.splitlines() if x.startswith("**95% CI**"))
    # Every row is stable-correct on the baseline and right 2 times of 3 on
    # the candidate: rows that all agree still leave an interval (200 rows,
    # t_{0.975, 199} = 1.971957), never "100.0% – 100.0%".
    q = 1.9719565442517533
    all_right, two_thirds = agresti_coull_t([1.0] * 200, q), agresti_coull_t([2 / 3] * 200, q)
    none = agresti_coull_t([0.0] * 200, q)
    assert (round(all_right[0], 3), round(two_thirds[0], 3), round(none[1], 3)) == (
        0.977,
        0.654,
        0.023,
    )
    assert line == (
        f"**95% CI** (row as the unit): mean accuracy baseline {percent(all_right[0])} – 100.0%, "
        f"candidate {percent(two_thirds[0])} – {percent(two_thirds[1])} · pass^k baseline "
        f"{percent(all_right[0])} – 100.0%, candidate 0.0% – {percent(none[1])}."
    )


def gfm() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def all_tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for token in gfm().parse(text):
        out.append(token)
        out.extend(token.children or [])
    return out


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(lambda: render_compare_report(hostile_scenario()), id="report"),
        pytest.param(
            lambda: render_comment(hostile_scenario(), marker=MARKER, record=RECORD),
            id="comment",
        ),
        pytest.param(lambda: render_run_report(hostile_scenario().candidate), id="run"),
    ],
)
def test_hostile_values_stay_inert(text: object) -> None:
    assert callable(text)
    rendered: str = text()
    tokens = all_tokens(rendered)
    kinds = {t.type for t in tokens}
    assert not kinds & {"link_open", "image", "em_open", "s_open", "code_block"}
    # Our own headings only: none comes from a value.
    headings = [t for t in tokens if t.type == "heading_open"]
    assert len(headings) == sum(1 for line in rendered.splitlines() if line.startswith("#"))
    # The only HTML is ours: the marker, the record, <details>/<summary>.
    html = [t.content.strip() for t in tokens if t.type in ("html_block", "html_inline")]
    for chunk in html:
        ours = chunk in (MARKER, RECORD, "</details>") or chunk.startswith("<details><summary>")
        assert ours, chunk
    # Every table row has exactly as many cells as its header.
    lines = rendered.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|---"):
            continue
        header = "\n".join(lines[i - 1 : i + 1])
        width = sum(1 for t in all_tokens(header) if t.type == "th_open")
        j = i + 1
        while j < len(lines) and lines[j].startswith("|"):
            table = "\n".join([lines[i - 1], lines[i], lines[j]])
            assert sum(1 for t in all_tokens(table) if t.type == "td_open") == width, lines[j]
            j += 1
    # Pings and autolinks are broken outside code spans (where GitHub shows text as is).
    prose = "".join(t.content for t in tokens if t.type == "text")
    assert "@octocat" not in prose
    assert "https://evil" not in prose
    assert "www.evil" not in prose


def test_hostile_comment_has_marker_and_record_exactly_once() -> None:
    text = render_comment(hostile_scenario(), marker=MARKER, record=RECORD)
    assert text.startswith(MARKER + "\n")
    assert text.endswith("\n" + RECORD)
    assert text.count(MARKER) == 1
    assert text.count(RECORD) == 1
    assert text.count("<!--") == 2


# --- size ----------------------------------------------------------------------


def test_a_huge_comment_is_trimmed_under_the_limit_keeping_what_matters() -> None:
    result = many_lost_rows(5000)
    limit = 60_000
    text = render_comment(result, marker=MARKER, record=RECORD, limit=limit)
    assert len(text) <= limit
    assert text.startswith(MARKER + "\n") and text.endswith("\n" + RECORD)
    assert text.count(MARKER) == 1 and text.count(RECORD) == 1
    assert "### ❌ passk: 2500 must-not-break rows broke: `row-00000-" in text
    assert "| baseline | 100.0% | 100.0% | 0.0% |" in text
    assert "| candidate | 66.7% | 0.0% | 100.0% |" in text
    assert "| change | -33.3 pts **worse** | -100.0 pts **worse** | +100.0 pts **worse** |" in text
    assert "5000 lost (2500 blocking)" in text
    assert "<summary>More blocking reasons (2490)</summary>" in text  # the count exact
    assert "full report in the job summary" in text
    # The full report keeps the exact counts too.
    report = render_compare_report(result)
    assert "## Less stable without a confirmed regression (5000)" in report
    assert "- … and 4800 more" in report


def test_a_tight_limit_drops_lists_before_gate_reasons() -> None:
    result = many_lost_rows(200)
    roomy = render_comment(result, marker=MARKER, record=RECORD, limit=60_000)
    tight = render_comment(result, marker=MARKER, record=RECORD, limit=8_000)
    assert len(tight) <= 8_000 < len(roomy)
    assert tight.count("row-00000-") >= 1  # still names the first gate failure
    assert "Some lists are shortened" in tight


def test_comment_rejects_a_marker_that_is_not_a_hidden_comment() -> None:
    with pytest.raises(ValueError, match="marker"):
        render_comment(passed_scenario(), marker="passk", record=RECORD)
    with pytest.raises(ValueError, match="details_url"):
        render_comment(
            passed_scenario(), marker=MARKER, record=RECORD, details_url="javascript:alert(1)"
        )


# --- helpers and the JSON report --------------------------------------------


def test_formatting_helpers() -> None:
    assert percent(None) == "n/a"
    assert percent(0.8333333) == "83.3%"
    assert points(0.5, 0.542) == "+4.2 pts"
    assert points(0.5, 0.49999) == "0.0 pts"
    assert points(0.7, 0.5) == "-20.0 pts"
    assert points(None, 0.5) == "n/a"
    assert ranked_counts(["deny", "approve", None, "approve"]) == [("approve", 2), ("deny", 1)]
    assert ranked_counts(["b", "a"]) == [("b", 1), ("a", 1)]
    assert counts_text([("approve", 2), ("deny", 1)]) == "approve ×2, deny ×1"
    assert counts_text([]) == "—"
    assert short_digest(DIGEST) == "sha256:ab12ab12ab12"
    assert capped(["a", "b", "c"], 2) == ["- a", "- b", "- … and 1 more"]
    assert capped(["a"], 2) == ["- a"]


def test_run_report_json() -> None:
    data = run_report_json(failed_scenario().candidate)
    assert data["metrics"] == {
        "rows": 7,
        "k": 3,
        "mean_accuracy": 14 / 19,
        "pass_k": 2 / 7,
        "flip_rate": 4 / 6,
        "classes": {"stable-correct": 2, "stable-wrong": 0, "flip": 4, "unclassified": 1},
        "attempts": 21,
        "valid": 19,
        "errors": 2,
    }
    assert data["errors_by_reason"] == {"exit-status": 1, "timeout": 1}
    rows = data["rows"]
    assert isinstance(rows, list)
    assert rows[2] == {
        "id": "refund-003",
        "class": "unclassified",
        "must_not_break": True,
        "decisions": ["approve", None, None],
        "correct": 1,
        "valid": 1,
        "errors": 2,
    }
    assert [r["id"] for r in rows] == [f"refund-00{i}" for i in range(1, 8)]
    analysis = data["analysis"]
    assert analysis["k"] == 3 and analysis["version"] == "candidate"
    assert analysis["pass_k"]["estimate"] == data["metrics"]["pass_k"]
    assert analysis["mean_accuracy"]["estimate"] == pytest.approx(16 / 21)
    assert analysis["mean_accuracy"]["n"] == 7
    assert analysis["power"]["rows"] == 7 and analysis["power"]["design"] == "projected"
    assert [p["j"] for p in analysis["curve"]["points"]] == [1, 2, 3]
    assert {c["check"] for c in analysis["checks"]} == {"return_window", "proof_of_purchase"}


def test_an_empty_run_reports_undefined_numbers_as_na() -> None:
    empty = make_run(Version.BASELINE, [], Attempts(), "", None)
    text = render_run_report(empty)
    assert "| n/a | n/a | n/a |" in text.splitlines()
    assert "- **Agent:** *(no description)*" in text.splitlines()
    assert "**Errors by reason:** none" in text.splitlines()
    assert "## Rows that are not stable-correct" not in text
    result = compare([], empty, make_run(Version.CANDIDATE, [], Attempts(), "c", None))
    comment = render_comment(result, marker=MARKER, record=RECORD)
    assert "| change | n/a | n/a | n/a |" in comment.splitlines()
    assert comment.splitlines()[1] == "### ✅ passk: passed: 0 gained, 0 lost"


def test_an_interval_never_prints_with_equal_ends() -> None:
    tight = ErrorBar(1.0, 0.0, 0.999962, 1.0, 100_000)
    assert interval_text(tight) == "99.996% – 100.000%"
    assert interval_text(ErrorBar(0.5, 0.1, 0.301, 0.7, 20)) == "30.1% – 70.0%"
    assert interval_text(ErrorBar(0.5, None, None, None, 1)) == "n/a"
    difference = ErrorBar(0.0, 0.0, -0.00004, 0.00004, 100_000, interval="agresti-min-t")
    sentence = noise_sentence(PairedComparison(difference, 0, 0, 1.0, "within noise"))
    assert "95% CI -0.004 to +0.004 pts over 100000 rows" in sentence
    assert "exact McNemar p = 1." in sentence


def test_the_noise_sentence_keeps_a_p_value_on_its_side_of_five_percent() -> None:
    bar = ErrorBar(0.1, 0.05, 0.01, 0.2, 40, interval="agresti-min-t")
    for p, text in ((0.049, "p = 0.049."), (0.0504, "p = 0.0504."), (0.0004, "p < 0.001.")):
        assert f"exact McNemar {text}" in noise_sentence(PairedComparison(bar, 1, 9, p, "better"))


def test_comment_golden_spend_limits() -> None:
    """A reliable candidate over the cost and latency limits: the reasons as a reader sees them."""
    result = spend_limits_scenario()
    assert [f.rule for f in result.gate.failures] == [Rule.COST, Rule.LATENCY]
    text = render_comment(result, marker=MARKER, record=RECORD, context=PR_CONTEXT)
    assert_golden("comment_spend_limits.md", text)
    assert text.splitlines()[1] == "### ❌ passk: 1 cost limit failed · 1 latency limit failed"
    assert check_title(result) == "1 cost limit failed · 1 latency limit failed"


@pytest.mark.parametrize("rule", list(Rule))
def test_every_gate_rule_names_itself_in_the_heading_and_the_check_title(rule: Rule) -> None:
    result = replace(
        passed_scenario(),
        gate=GateDecision(passed=False, failures=(GateFailure(rule, WrittenReason("why"), None),)),
    )
    title = check_title(result)
    assert title and title.startswith("1 ")
    heading = render_comment(result, marker=MARKER, record=RECORD, context=PR_CONTEXT)
    assert heading.splitlines()[1] == f"### ❌ passk: {title}"
