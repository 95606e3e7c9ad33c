"""The candidate side of a comparison: a recorded run checked against the dataset, or one
measured now (k attempts per row, journaled, resumable)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..core.model import AgentInfo, Phase, Run, Scoring, Version
from ..core.notes import MeasuredByPullRequest, Note, RecordedCandidate, Rescored, ids
from ..errors import ArtifactError, ConfigError
from .asking import Asker
from .measuring import Measurement, check_settings, measure, scored_recording
from .request import CompareInputs


@dataclass(frozen=True)
class CandidateSide:
    run: Run
    recorded_main: int = 0
    """Main attempts made earlier (a recorded run, e.g. from sharded jobs): they count."""
    notes: tuple[Note, ...] = ()


def candidate_side(inputs: CompareInputs, asker: Asker) -> CandidateSide:
    """The recorded candidate, or the candidate agent measured on every row now."""
    config, dataset, source = inputs.config, inputs.dataset, inputs.candidate
    if source.recorded is not None and source.measured_by_pull_request:
        run = measured_main_attempts(source.recorded, inputs)
        made = len(run.attempts)
        confirm = len(source.recorded.attempts) - made
        notes: tuple[Note, ...] = (MeasuredByPullRequest(made, confirm),)
        if judged_again(config.scoring):
            # The file's verdicts are the pull request's word: every answer is asked of
            # the recorded answers, which the base's scorer judges (sides/prepare).
            return CandidateSide(_measured_now(inputs, asker), made, notes)
        return CandidateSide(run, made, notes)
    if source.measured_by_pull_request:
        # Replayed from passk's record of an earlier gate of this content.
        return CandidateSide(_measured_now(inputs, asker), notes=(MeasuredByPullRequest(0, 0),))
    if source.recorded is not None:
        check_settings(source.recorded, config.settings, "--candidate", "candidate run")
        run, changed = scored_recording(source.recorded, config.scoring, "--candidate")
        rescored: tuple[Note, ...] = ()
        if run is not source.recorded:
            rescored = (Rescored("the recorded candidate", len(run.attempts), changed),)
        # Decisions depend on a row's input alone (as for baseline reuse): a
        # recorded run still holds when only labels, tags or marks changed.
        recorded = {r.id: r.input_digest for r in run.rows}
        other = [r.id for r in dataset.rows if recorded.get(r.id) != r.input_digest]
        if other:
            raise ArtifactError(
                f"the candidate run was recorded on another version of the dataset: "
                f"{len(other)} row(s) are missing or have another input ({ids(other, 3)})",
                where="--candidate",
                hint="run the candidate again on the current dataset",
            )
        made = sum(1 for a in run.attempts if a.phase is Phase.MAIN)
        return CandidateSide(run, made, (RecordedCandidate(made), *rescored))
    return CandidateSide(_measured_now(inputs, asker))


def judged_again(scoring: Scoring) -> bool:
    """Whether the two-job mode's gating job judges the measured answers again: under a
    scorer program that reads the answer alone (``by: command``).  Under ``by:
    environment`` the state an attempt left stayed in the measuring job, so its verdicts
    are the measuring job's."""
    return scoring.by_scorer and not scoring.by_environment


TWO_JOBS_WITH_STATE_SCORER = (
    "the two-job mode cannot check the verdicts of `scoring.by: environment` with a "
    "`command`: the scorer judges the state each attempt leaves, and that state stays in "
    "the measuring job, which runs the pull request's code, so a measured file could call "
    "every gated row right"
)


def refuse_unverifiable_verdicts(scoring: Scoring, config_path: Path) -> None:
    """Refuse the two-job mode (exit 2, before any agent runs) under a scorer that judges
    the state an attempt left (``by: environment`` with a ``command``).

    The measured file carries answers, not states: the gating job can judge the answers
    again (``by: command``, :func:`judged_again`) but not a state it never sees, so the
    verdicts would be the pull request's word where the one-job mode's are the base's
    scorer's.  Without a ``command`` the verdict is the agent's own report in either mode
    (the README's table says so), and the two-job mode goes on.
    """
    if scoring.by_environment and scoring.by_scorer:
        raise ConfigError(
            TWO_JOBS_WITH_STATE_SCORER,
            where=f"{config_path}: scoring.by",
            hint="gate in one job (`mode: gate`, where the base's scorer reads each state "
            "as its own user), or use `scoring.by: command` if the answer alone shows "
            "whether it is right",
        )


def _measured_now(inputs: CompareInputs, asker: Asker) -> Run:
    config, dataset, source = inputs.config, inputs.dataset, inputs.candidate
    if not asker.available(Version.CANDIDATE):
        raise ConfigError(
            "no candidate run was given and the config has no `agent:` to record one",
            where=f"{config.path}: agent",
            hint="pass a recorded run (--candidate RUN, e.g. from `passk import`), or add `agent:`",
        )
    info = AgentInfo(
        Version.CANDIDATE, asker.describe(Version.CANDIDATE), source.commit, dirty=source.dirty
    )
    return measure(
        Measurement(dataset, dataset.rows, config.settings, source.out, resume=source.resume),
        asker,
        info,
    )


MEASURED = "the measured run (input `candidate-run`)"
REMEASURE = (
    "re-run the measuring workflow for this commit with the base commit's config and "
    "dataset; the gating job runs none of the pull request's code"
)


def measured_main_attempts(run: Run, inputs: CompareInputs) -> Run:
    """The measured run's main attempts, once it is shown to be a run of exactly this dataset.

    The run comes from the job that ran the pull request's code, so each rule
    below is one a forged or edited file could break: its agent is the
    candidate of ``commit``; its settings are the base config's; its dataset
    digest is the gated dataset's (the base commit's labels and marks on the
    merge's rows) and it has exactly those rows, on the same inputs; every row
    has main attempts numbered 1..k, no more and no fewer; every other attempt
    is a confirmation numbered after them.  Its rows' own labels are never
    read: the gate judges every decision by the gated dataset's labels.
    """
    config, dataset, source = inputs.config, inputs.dataset, inputs.candidate
    if run.agent.version is not Version.CANDIDATE:
        raise ArtifactError(
            f"is a run of the {run.agent.version.value}, not of the candidate",
            where=MEASURED,
            hint=REMEASURE,
        )
    if source.commit is not None and run.agent.commit != source.commit:
        raise ArtifactError(
            f"was measured at commit {run.agent.commit or 'unknown'}, not at the pull "
            f"request's head {source.commit}",
            where=MEASURED,
            hint=REMEASURE,
        )
    check_settings(run, config.settings, MEASURED, "measured run")
    recorded = {r.id: r.input_digest for r in run.rows}
    other = [r.id for r in dataset.rows if recorded.get(r.id) != r.input_digest]
    extra = sorted(set(recorded) - {r.id for r in dataset.rows})
    if other or extra or run.dataset_digest != dataset.digest:
        what = []
        if other:
            what.append(f"{len(other)} row(s) missing or on another input ({ids(other, 3)})")
        if extra:
            what.append(f"{len(extra)} row(s) the dataset lacks ({ids(extra, 3)})")
        if not what:
            what.append("other labels or marks")
        raise ArtifactError(
            f"was recorded on another dataset (digest {run.dataset_digest}, the gated dataset "
            f"is {dataset.digest}): " + "; ".join(what),
            where=MEASURED,
            hint=REMEASURE,
        )
    k = config.settings.k
    numbers: dict[str, list[int]] = {}
    for attempt in run.attempts:
        if attempt.phase is Phase.MAIN:
            numbers.setdefault(attempt.row_id, []).append(attempt.number)
        elif attempt.number <= k:
            raise ArtifactError(
                f"row {attempt.row_id!r} has a {attempt.phase.value} attempt numbered "
                f"{attempt.number}, among the main attempts 1..{k}",
                where=MEASURED,
                hint=REMEASURE,
            )
    wrong = [r.id for r in dataset.rows if sorted(numbers.get(r.id, ())) != list(range(1, k + 1))]
    if wrong:
        raise ArtifactError(
            f"{len(wrong)} row(s) do not have exactly the main attempts 1..{k} ({ids(wrong, 3)})",
            where=MEASURED,
            hint=REMEASURE,
        )
    main = replace(run, attempts=tuple(a for a in run.attempts if a.phase is Phase.MAIN))
    # The gate's rules read the recorded answers, whatever rules the file names.
    return scored_recording(main, config.scoring, MEASURED)[0]
