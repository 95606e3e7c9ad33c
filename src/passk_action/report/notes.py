"""The sentences for a comparison's notes and warnings (:mod:`passk_action.core.notes`).

Pure: a note in, one line out.  The result file, the Markdown report, the
pull request comment, JUnit and the CLI's warnings all print these lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.notes import (
    AddedRowsNotMeasured,
    BaselineAgeUnknown,
    BaselineBehind,
    BaselineReused,
    ConfirmationSkipped,
    DroppedRows,
    GatedRowsAsRecorded,
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

IDS_SHOWN = 10
"""Row ids a note lists before "… and N more"."""
FILES_SHOWN = 5
"""Changed files a behind-the-base warning lists before "and N more"."""


def ids(row_ids: Sequence[str], limit: int = IDS_SHOWN) -> str:
    """``a, b, c`` and, past ``limit``, `` and N more``."""
    shown = ", ".join(row_ids[:limit])
    return shown + (f" and {len(row_ids) - limit} more" if len(row_ids) > limit else "")


def short(sha: str) -> str:
    return sha[:7]


def stale(note: StaleBaseline) -> str:
    """Why the committed baseline is stale: the line ``baseline.when_stale`` acts on."""
    at = f" (measured at {short(note.measured_at)})" if note.measured_at else ""
    if note.changed is None:
        why = f"records no fingerprint of {', '.join(note.paths)}"
    else:
        why = f"was measured on other files: {', '.join(note.changed)} changed"
    return f"the committed baseline{at} is stale: it {why} at the base {short(note.base)}"


def confirm_hint(note: ConfirmationSkipped | GatedRowsAsRecorded) -> str:
    """What to set so that the baseline side can run confirmation next time."""
    if note.baseline_from is WhereFrom.PULL_REQUEST_BASE:
        return "give the base branch's passk.yml an `agent:`"
    if note.baseline_from is WhereFrom.BASE_REF:
        return f"give the base config an `agent:` ({note.base_ref} has none)"
    return "set baseline.agent, or run `passk compare --base main`"


def sentence(note: Note) -> str:
    """The one line that says ``note``."""
    if isinstance(note, Written):
        return note.text
    if isinstance(note, DroppedRows):
        return f"{len(note.ids)} baseline row(s) are no longer in the dataset: {ids(note.ids)}"
    if isinstance(note, RelabeledRows):
        return (
            f"{len(note.ids)} row(s) changed their expected label since the baseline; "
            "their recorded baseline decisions were scored against the new label: "
            f"{ids(note.ids)}"
        )
    if isinstance(note, ToppedUp):
        return (
            f"the baseline was run on {len(note.ids)} new or changed row(s) first "
            f"({note.executions} executions): {ids(note.ids)}"
        )
    if isinstance(note, AddedRowsNotMeasured):
        return (
            f"{len(note.ids)} row(s) this pull request adds were not measured on the baseline: "
            f"the gating job runs the base agent on at most {note.limit} added row(s) "
            f"(baseline.added_rows_limit in the base config), so they are left out of this "
            f"comparison: {ids(note.ids)}"
        )
    if isinstance(note, BaselineReused):
        return "the baseline artifact matches the dataset: no baseline run was needed"
    if isinstance(note, Rescored):
        return (
            f"{note.run} was recorded under other scoring rules: its {note.attempts} recorded "
            f"answers were scored again under these, no agent run ({note.changed} read "
            "otherwise)"
        )
    if isinstance(note, RatchetExits):
        return (
            f"{len(note.ids)} row(s) left the ratchet because they left the dataset: "
            f"{ids(note.ids)}"
        )
    if isinstance(note, StaleBaseline):
        return stale(note)
    if isinstance(note, StaleBaselineHandled):
        if note.policy is StalePolicy.USED_ANYWAY:
            return f"{stale(note.stale)}; it was used anyway (baseline.when_stale: warn)"
        return f"{stale(note.stale)}; measuring the baseline anew at the base commit"
    if isinstance(note, BaselineAgeUnknown):
        return (
            f"the baseline was measured at {short(note.measured_at)}, which is not in this "
            "checkout, so passk cannot tell what changed since (fetch with `fetch-depth: 0`)"
        )
    if isinstance(note, BaselineBehind):
        return (
            f"the baseline was measured at {short(note.measured_at)}, {note.commits} commit(s) "
            f"behind the base {short(note.base)}; files changed since: "
            f"{ids(note.files, FILES_SHOWN)} (name what the agent runs under "
            "agent.fingerprint to re-measure it when those change)"
        )
    if isinstance(note, Remeasured):
        at = f" at {short(note.at)}" if note.at else ""
        return (
            f"{stale(note.stale)}, so it was measured anew{at} ({note.executions} executions: "
            f"k = {note.k} × {note.rows} rows); the ratchet is still the committed one"
        )
    if isinstance(note, RemeasuredOnRequest):
        return (
            f"re-measured on request: the label {note.label!r} is on the pull request, so the "
            "agent was asked again instead of replaying the recorded verdicts"
        )
    if isinstance(note, MeasuredByPullRequest):
        counted = f" ({note.main} main, {note.confirm} confirmation attempts)" if note.main else ""
        return (
            f"the candidate's answers{counted} were recorded by the pull request's own job, "
            "without a write token; this job ran none of its code, checked their rows, inputs "
            "and settings and judged them by the base commit's labels, but cannot check that "
            "its agent gave them"
        )
    if isinstance(note, RecordedCandidate):
        return f"the candidate's {note.attempts} main attempts were recorded earlier (--candidate)"
    if isinstance(note, VerdictsReused):
        source = (
            "this commit"
            if note.recorded_for is None
            else f"commit {short(note.recorded_for)}, which has the same files as this one"
        )
        return (
            f"verdicts reused from passk's record for {source}: {note.replayed} "
            "recorded attempt(s) replayed, errors included"
            + (f", {note.asked} missing attempt(s) asked" if note.asked else ", no agent run")
        )
    if isinstance(note, NothingRun):
        return (
            "both runs are recorded and the config names no agent: nothing was run "
            "(no lost row needed confirming)"
        )
    if isinstance(note, ConfirmationSkipped):
        if note.reason is SkipReason.NO_AGENT:
            return (
                f"confirmation skipped for {note.lost} lost row(s): both runs are recorded and "
                "the config names no agent to run them again; the gate used the recorded "
                "attempts only"
            )
        if note.reason is SkipReason.NO_CANDIDATE_AGENT:
            return (
                f"confirmation skipped for {note.lost} lost row(s): the candidate is a recorded "
                "run and no agent can add to it, so the gate used the main attempts only"
            )
        return (
            f"confirmation skipped for {note.lost} lost row(s): no baseline agent is "
            f"available, so the gate used the main attempts only; to confirm, "
            f"{confirm_hint(note)}"
        )
    if isinstance(note, GatedRowsAsRecorded):
        return gated_as_recorded(note)
    raise TypeError(f"no sentence for {type(note).__name__}")  # a kind added without words


def gated_as_recorded(note: GatedRowsAsRecorded) -> str:
    """Gated rows judged without the attempts the rule wanted, why, and how to get them."""
    rows = f"{len(note.ids)} gated row(s)"
    if note.version == "baseline":
        return (
            f"{rows} wanted more baseline attempts (to tell a regression from a baseline that "
            "varies as much) and no baseline agent is available, so they were judged on the "
            f"attempts recorded: {ids(note.ids)}; to run them, {confirm_hint(note)}"
        )
    why = (
        "the config names no agent to run them"
        if note.reason is SkipReason.NO_AGENT
        else "the candidate is a recorded run and no agent can add to it"
    )
    return (
        f"{rows} wanted more candidate attempts to be judged and {why}, so they were judged "
        f"on the attempts recorded (a row the rule cannot judge blocks): {ids(note.ids)}; "
        "give the config an `agent:`, or record more attempts per row (a higher k)"
    )


def sentences(notes: Sequence[Note]) -> list[str]:
    return [sentence(note) for note in notes]
