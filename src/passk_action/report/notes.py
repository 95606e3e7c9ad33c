"""The sentences for a comparison's notes and warnings (:mod:`passk_action.core.notes`).

Pure: a note in, one line out.  The result file, the Markdown report, the
pull request comment, JUnit and the CLI's warnings all print these lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.notes import (
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
    ids,
)

FILES_SHOWN = 5
"""Changed files a behind-the-base warning lists before "and N more"."""


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


def _written(note: Written) -> str:
    return note.text


def _dropped(note: DroppedRows) -> str:
    return f"{len(note.ids)} baseline row(s) are no longer in the dataset: {ids(note.ids)}"


def _relabeled(note: RelabeledRows) -> str:
    return (
        f"{len(note.ids)} row(s) changed their expected label since the baseline; "
        "their recorded baseline decisions were scored against the new label: "
        f"{ids(note.ids)}"
    )


def _topped_up(note: ToppedUp) -> str:
    return (
        f"the baseline was run on {len(note.ids)} new or changed row(s) first "
        f"({note.executions} executions): {ids(note.ids)}"
    )


def _added_not_measured(note: AddedRowsNotMeasured) -> str:
    return (
        f"{len(note.ids)} row(s) this pull request adds were not measured on the baseline: "
        f"the gating job runs the base agent on at most {note.limit} added row(s) "
        f"(baseline.added_rows_limit in the base config), so they are left out of this "
        f"comparison: {ids(note.ids)}"
    )


def _reused(note: BaselineReused) -> str:
    return "the baseline artifact matches the dataset: no baseline run was needed"


def _rescored(note: Rescored) -> str:
    return (
        f"{note.run} was recorded under other scoring rules: its {note.attempts} recorded "
        f"answers were scored again under these, no agent run ({note.changed} read "
        "otherwise)"
    )


def _ratchet_exits(note: RatchetExits) -> str:
    return f"{len(note.ids)} row(s) left the ratchet because they left the dataset: {ids(note.ids)}"


def _stale_handled(note: StaleBaselineHandled) -> str:
    if note.policy is StalePolicy.USED_ANYWAY:
        return f"{stale(note.stale)}; it was used anyway (baseline.when_stale: warn)"
    return f"{stale(note.stale)}; measuring the baseline anew at the base commit"


def _age_unknown(note: BaselineAgeUnknown) -> str:
    return (
        f"the baseline was measured at {short(note.measured_at)}, which is not in this "
        "checkout, so passk cannot tell what changed since (fetch with `fetch-depth: 0`)"
    )


def _behind(note: BaselineBehind) -> str:
    return (
        f"the baseline was measured at {short(note.measured_at)}, {note.commits} commit(s) "
        f"behind the base {short(note.base)}; files changed since: "
        f"{ids(note.files, FILES_SHOWN)} (name what the agent runs under "
        "agent.fingerprint to re-measure it when those change)"
    )


def _remeasured(note: Remeasured) -> str:
    at = f" at {short(note.at)}" if note.at else ""
    return (
        f"{stale(note.stale)}, so it was measured anew{at} ({note.executions} executions: "
        f"k = {note.k} × {note.rows} rows); the ratchet is still the committed one"
    )


def _on_request(note: RemeasuredOnRequest) -> str:
    return (
        f"re-measured on request: the label {note.label!r} is on the pull request, so the "
        "agent was asked again instead of replaying the recorded verdicts"
    )


def _measured_by_pull_request(note: MeasuredByPullRequest) -> str:
    counted = f" ({note.main} main, {note.confirm} confirmation attempts)" if note.main else ""
    return (
        f"the candidate's answers{counted} were recorded by the pull request's own job, "
        "without a write token; this job ran none of its code, checked their rows, inputs "
        "and settings and judged them by the base commit's labels, but cannot check that "
        "its agent gave them"
    )


def _recorded_candidate(note: RecordedCandidate) -> str:
    return f"the candidate's {note.attempts} main attempts were recorded earlier (--candidate)"


def _verdicts_reused(note: VerdictsReused) -> str:
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


def _nothing_run(note: NothingRun) -> str:
    return (
        "both runs are recorded and the config names no agent: nothing was run "
        "(no lost row needed confirming)"
    )


def _settings_ignored(note: HeadSettingsIgnored) -> str:
    return (
        f"{note.config}: the pull request's config changes {', '.join(note.keys)}: not used, "
        "those settings come from the base commit's config (merge the change to the base "
        "first; one that weakens the gate is a protected change too)"
    )


def _limit_capped(note: HeadLimitCapped) -> str:
    value, bound = f"{note.value:g}{note.unit}", f"{note.bound:g}{note.unit}"
    return (
        f"{note.config}: {note.key} is {value} in the pull request's config, above the base's "
        f"{bound}: the base's {bound} holds (a pull request may lower it, never raise it)"
    )


def _confirmation_skipped(note: ConfirmationSkipped) -> str:
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


_WORDS: dict[type[Note], Callable[[Any], str]] = {
    Written: _written,
    DroppedRows: _dropped,
    RelabeledRows: _relabeled,
    ToppedUp: _topped_up,
    AddedRowsNotMeasured: _added_not_measured,
    BaselineReused: _reused,
    Rescored: _rescored,
    RatchetExits: _ratchet_exits,
    StaleBaseline: stale,
    StaleBaselineHandled: _stale_handled,
    BaselineAgeUnknown: _age_unknown,
    BaselineBehind: _behind,
    Remeasured: _remeasured,
    RemeasuredOnRequest: _on_request,
    MeasuredByPullRequest: _measured_by_pull_request,
    RecordedCandidate: _recorded_candidate,
    VerdictsReused: _verdicts_reused,
    NothingRun: _nothing_run,
    ConfirmationSkipped: _confirmation_skipped,
    GatedRowsAsRecorded: gated_as_recorded,
    HeadSettingsIgnored: _settings_ignored,
    HeadLimitCapped: _limit_capped,
}
"""Each kind's words (a kind added without words is a bug :func:`sentence` names)."""


def sentence(note: Note) -> str:
    """The one line that says ``note``."""
    words = _WORDS.get(type(note))
    if words is None:  # a kind added without words
        raise TypeError(f"no sentence for {type(note).__name__}")
    return words(note)


def sentences(notes: Sequence[Note]) -> list[str]:
    return [sentence(note) for note in notes]
