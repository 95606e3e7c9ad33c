"""JUnit XML, so any CI system (GitLab, Jenkins, Buildkite, Azure) shows passk's rows as tests.

Pure: a :class:`CompareResult` or a :class:`Run` in, XML text out, built with
:mod:`xml.etree.ElementTree` (which escapes markup) after every value has
lost the characters XML 1.0 forbids (:func:`.charts.xml_safe`): a NUL in an
agent's stderr must not make the whole file unreadable.

The shape, the one most CI systems read (the Ant/Surefire dialect):

- ``<testsuites>`` holding one ``<testsuite>`` for the comparison (or run),
  with ``<properties>`` for the three numbers of each version, k and the gate;
- one ``<testcase>`` per row, named by the row id, with classname
  ``passk.<suite>``; it has a ``<failure>`` exactly when the row blocks the
  gate, whose message is the gate's own reason.  A row that was lost but does
  not block (not must-not-break) passes, and its ``<system-out>`` says so:
  the gate is the contract, and a red test the gate ignores would teach
  people to ignore red tests;
- one extra ``<testcase>`` per protected change (classname
  ``passk.<suite>.protected``), failed unless the change was allowed (a
  recorded failure of the same commit is never allowed);
- one extra ``<testcase>`` per spend limit the gate checks (``cost limit``,
  ``latency limit``; classname ``passk.<suite>.spend``), failed with the
  gate's reason when the candidate is over it.

For a plain run there is no gate: a row fails when it is must-not-break (or
locked by the run's ratchet) and not stable-correct, the rows a gate would
later block on.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ..core.diff import Change, Confirmation, RowComparison
from ..core.gate import RECORDED_FAILURE_KIND, GateFailure, ProtectedChange, Rule
from ..core.model import Attempt, Phase, RowClass, RowRecord, Run, Scoring
from ..core.result import CompareResult
from ..core.scoring import decision_text, expected_text
from ..core.sequential import RowVerdict
from ..core.stats import Metrics, RowSummary, compute_metrics, summarize_run
from .charts import xml_safe
from .gated import evidence_line
from .notes import sentences
from .phrases import differed_parts, judged_in_parts
from .protected import change_said
from .reasons import reason as failure_reason
from .reasons import warnings

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]+")


def suite_name(name: str) -> str:
    """A classname segment: letters, digits, ``_`` and ``-`` only.

    CI systems split classnames at dots into a package tree, so a dataset
    called ``refunds.v2`` would otherwise become two levels.
    """
    cleaned = _NAME_UNSAFE.sub("_", name).strip("_")
    return cleaned or "dataset"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _properties(parent: ET.Element, values: Sequence[tuple[str, str]]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in values:
        ET.SubElement(props, "property", name=name, value=xml_safe(value))


def _metric_properties(prefix: str, m: Metrics) -> list[tuple[str, str]]:
    return [
        (f"{prefix}mean_accuracy", _share(m.mean_accuracy)),
        (f"{prefix}pass_k", _share(m.pass_k)),
        (f"{prefix}flip_rate", _share(m.flip_rate)),
    ]


def _seconds(attempts: Sequence[Attempt]) -> str:
    return f"{sum(a.duration_s for a in attempts):.3f}"


def _one_line(value: str) -> str:
    """A value on one line, so a decision with a newline cannot fake the next line."""
    return " ".join(value.split()) or '""'


def _decisions(attempts: Sequence[Attempt]) -> str:
    """``approve ×2, (timeout) ×1`` over the attempts given, most frequent first."""
    counts: dict[str, int] = {}
    for a in attempts:
        key = (
            _one_line(decision_text(a.decision))
            if a.decision is not None
            else f"({a.error or 'error'})"
        )
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    return ", ".join(f"{value} ×{n}" for value, n in ranked) or "no attempts"


def _serialize(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _text(element: ET.Element, tag: str, text: str, **attrs: str) -> ET.Element:
    child = ET.SubElement(element, tag, {k: xml_safe(v) for k, v in attrs.items()})
    child.text = xml_safe(text)
    return child


# --- a comparison ------------------------------------------------------------

_CONFIRMATION = {
    Confirmation.BASELINE_VARIES: "the baseline also varies (it answered wrong on confirmation)",
    Confirmation.CONFIRMED_REGRESSION: "confirmed regression",
    Confirmation.NOT_REPRODUCED: "not reproduced (every confirmation answer of the "
    "candidate was right)",
    Confirmation.INCONCLUSIVE: "inconclusive (a version gave no valid answer on "
    "confirmation: its attempts failed)",
}


def _row_story(
    row: RowComparison,
    record: RowRecord,
    scoring: Scoring,
    base: Sequence[Attempt],
    cand: Sequence[Attempt],
    rule_line: str | None = None,
) -> list[str]:
    """What happened to a row, in plain lines: classes, confirmation, the gate's rule, answers."""
    lines = [f"baseline {row.baseline_class.value} → candidate {row.candidate_class.value}"]
    if (row.baseline_final_class, row.candidate_final_class) != (
        row.baseline_class,
        row.candidate_class,
    ):
        lines.append(
            f"with confirmation attempts: baseline {row.baseline_final_class.value}, "
            f"candidate {row.candidate_final_class.value}"
        )
    if row.change is Change.LOST:
        lines.append(
            "confirmation: "
            + (_CONFIRMATION[row.confirmation] if row.confirmation else "none recorded")
        )
    if rule_line is not None:
        lines.append(f"gate rule: {rule_line}")
    check = row.first_divergent_check
    if check is not None:
        lines.append(
            f"first divergent check {_one_line(check.name)}: baseline "
            + ", ".join(f"{_one_line(v)} ×{n}" for v, n in check.baseline)
            + " · candidate "
            + ", ".join(f"{_one_line(v)} ×{n}" for v, n in check.candidate)
        )
    lines.append(f"expected: {_one_line(expected_text(record.expected))}")
    # All recorded answers, confirmation included: the ones the gate read.
    lines.append(f"baseline answers: {_decisions(base)}")
    lines.append(f"candidate answers: {_decisions(cand)}")
    if judged_in_parts(record, scoring):
        lines += differed_parts(base, cand, record, scoring, plain=True)
    return lines


def _row_note(row: RowComparison, verdict: RowVerdict | None) -> str | None:
    """Why a passing row is still worth a line in the CI log (None when it is not)."""
    if verdict is not None and row.change is Change.LOST:
        return (
            "lost, but the gate's rule does not block it: "
            f"{row.baseline_class.value} → {row.candidate_class.value}"
        )
    if verdict is not None and verdict.unconfirmed_wrong:
        return "a wrong answer the gate's rule did not confirm (see the gate rule line)"
    if row.change is Change.LOST:
        return (
            "lost, but does not block the gate (the row is not must-not-break): "
            f"{row.baseline_class.value} → {row.candidate_class.value}"
        )
    if row.change is Change.GAINED:
        return f"gained: {row.baseline_class.value} → {row.candidate_class.value}"
    if row.candidate_class is not RowClass.STABLE_CORRECT:
        return f"not stable-correct on the candidate: {row.candidate_class.value}"
    if row.candidate_check_flips:
        # The verdict held but a check wavered: often the first sign of a flip.
        names = ", ".join(_one_line(n) for n in row.candidate_check_flips)
        return f"a check flipped while the decision held: {names}"
    return None


def _suites(
    name: str, tests: int, failures: int, total_time: float, created_at: str
) -> tuple[ET.Element, ET.Element]:
    """The ``testsuites`` root and its one ``testsuite``, carrying the same counts.

    Both documents (a comparison, a single run) have this shape, and CI
    dashboards read the counts from either element.
    """
    root = ET.Element(
        "testsuites",
        name="passk",
        tests=str(tests),
        failures=str(failures),
        errors="0",
        time=f"{total_time:.3f}",
    )
    testsuite = ET.SubElement(
        root,
        "testsuite",
        name=f"passk.{name}",
        tests=str(tests),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=f"{total_time:.3f}",
        timestamp=xml_safe(created_at),
    )
    return root, testsuite


def _testcase(testsuite: ET.Element, name: str, classname: str, time: str) -> ET.Element:
    return ET.SubElement(testsuite, "testcase", name=xml_safe(name), classname=classname, time=time)


def _stands(change: ProtectedChange, result: CompareResult) -> bool:
    """Whether a protected change fails the gate: unless allowed; a recorded failure always."""
    return change.kind == RECORDED_FAILURE_KIND or not result.protected_changes_allowed


def _spend_limits(result: CompareResult) -> list[tuple[str, GateFailure | None]]:
    """Each spend limit the policy sets, with the gate's failure for it (None: within it)."""
    policy = result.policy
    limits = []
    for rule, limit, label in (
        (Rule.COST, policy.max_cost_increase, "cost limit"),
        (Rule.LATENCY, policy.max_latency_p95_increase, "latency limit"),
    ):
        if limit is not None:
            failed = [f for f in result.gate.failures if f.rule is rule]
            limits.append((label, failed[0] if failed else None))
    return limits


def junit_for_result(result: CompareResult, *, suite: str) -> str:
    """A JUnit XML document for a comparison (see the module docstring for the shape)."""
    name = suite_name(suite)
    cmp = result.comparison
    records = {r.id: r for r in result.rows}
    base_attempts = result.baseline.attempts_by_row()
    cand_attempts = result.candidate.attempts_by_row()
    blocking: dict[str, GateFailure] = {}
    for failure in result.gate.failures:
        if failure.rule is not Rule.PROTECTED_CHANGE and failure.id is not None:
            blocking.setdefault(failure.id, failure)
    standing = [c for c in result.protected_changes if _stands(c, result)]
    protected_failed = len(standing)
    limits = _spend_limits(result)
    tests = len(cmp.rows) + len(result.protected_changes) + len(limits)
    failures = (
        sum(1 for r in cmp.rows if r.id in blocking)
        + protected_failed
        + sum(1 for _, over in limits if over is not None)
    )
    total_time = sum(a.duration_s for a in result.candidate.attempts)

    root, testsuite = _suites(name, tests, failures, total_time, result.created_at)
    _properties(
        testsuite,
        [
            ("k", str(result.candidate.settings.k)),
            ("gate", "passed" if result.gate.passed else "failed"),
            ("dataset_digest", result.candidate.dataset_digest),
            *_metric_properties("baseline.", cmp.baseline_metrics),
            *_metric_properties("candidate.", cmp.candidate_metrics),
            ("rows.gained", str(len(cmp.gained))),
            ("rows.lost", str(len(cmp.lost))),
        ],
    )
    for row in cmp.rows:
        base = base_attempts.get(row.id, [])
        cand = cand_attempts.get(row.id, [])
        case = _testcase(testsuite, row.id, f"passk.{name}", _seconds(cand))
        verdict = result.gate.verdicts.get(row.id)
        rule_line = evidence_line(verdict, result.policy.rule) if verdict is not None else None
        scoring = result.candidate.settings.scoring
        story = _row_story(row, records[row.id], scoring, base, cand, rule_line)
        blocked = blocking.get(row.id)
        if blocked is not None:
            _text(
                case,
                "failure",
                "\n".join(story),
                message=f"{blocked.rule.value}: {failure_reason(blocked, result.policy.rule)}",
                type=blocked.rule.value,
            )
            continue
        note = _row_note(row, verdict)
        if note is not None:
            _text(case, "system-out", "\n".join([note, *story]))
    for change in result.protected_changes:
        label = f"protected change: {change.kind}" + (f" ({change.id})" if change.id else "")
        case = _testcase(testsuite, label, f"passk.{name}.protected", "0.000")
        if change in standing:
            rule = (
                Rule.RECORDED_FAILURE
                if change.kind == RECORDED_FAILURE_KIND
                else Rule.PROTECTED_CHANGE
            )
            _text(
                case,
                "failure",
                change_said(change.what),
                message=f"{rule.value}: {change_said(change.what)}",
                type=rule.value,
            )
        else:
            _text(case, "system-out", f"allowed protected change: {change_said(change.what)}")
    for label, over in limits:
        case = _testcase(testsuite, label, f"passk.{name}.spend", "0.000")
        if over is not None:
            _text(
                case,
                "failure",
                failure_reason(over, result.policy.rule),
                message=f"{over.rule.value}: {failure_reason(over, result.policy.rule)}",
                type=over.rule.value,
            )
    summary = [f"gate {'passed' if result.gate.passed else 'failed'}"]
    summary += [f"warning: {w}" for w in warnings(result.gate.warnings)]
    summary += [f"note: {n}" for n in sentences(result.notes)]
    _text(testsuite, "system-out", "\n".join(summary))
    return _serialize(root)


# --- a single run ------------------------------------------------------------------


def _run_failure(summary: RowSummary, guarded: bool) -> str | None:
    if not guarded or summary.row_class is RowClass.STABLE_CORRECT:
        return None
    if summary.row_class is RowClass.UNCLASSIFIED:
        return "must-not-break row has fewer than k valid decisions"
    return f"must-not-break row is {summary.row_class.value}, not stable-correct"


def junit_for_run(run: Run, *, suite: str) -> str:
    """A JUnit XML document for one recorded run (no gate: see the module docstring)."""
    name = suite_name(suite)
    k = run.settings.k
    by_row = run.attempts_by_row()
    summaries = summarize_run(run.rows, by_row, k, run.settings.scoring)
    metrics = compute_metrics(summaries, k)
    ratchet = set(run.ratchet)
    records = {r.id: r for r in run.rows}
    outcomes = [
        (s, _run_failure(s, records[s.id].must_not_break or s.id in ratchet)) for s in summaries
    ]
    failures = sum(1 for _, reason in outcomes if reason is not None)
    total_time = sum(a.duration_s for a in run.attempts)
    root, testsuite = _suites(name, len(summaries), failures, total_time, run.created_at)
    _properties(
        testsuite,
        [
            ("k", str(k)),
            ("version", run.agent.version.value),
            ("dataset_digest", run.dataset_digest),
            *_metric_properties("", metrics),
        ],
    )
    for summary, reason in outcomes:
        attempts = [a for a in by_row.get(summary.id, []) if a.phase is Phase.MAIN]
        case = _testcase(testsuite, summary.id, f"passk.{name}", _seconds(attempts))
        story = [
            f"class: {summary.row_class.value}",
            f"expected: {_one_line(expected_text(records[summary.id].expected))}",
            f"answers: {_decisions(attempts)}",
        ]
        if reason is not None:
            kind = (
                "unclassified" if summary.row_class is RowClass.UNCLASSIFIED else "must-not-break"
            )
            _text(case, "failure", "\n".join(story), message=reason, type=kind)
        elif summary.row_class is not RowClass.STABLE_CORRECT:
            _text(
                case, "system-out", "\n".join(["not stable-correct (not must-not-break)", *story])
            )
    return _serialize(root)
