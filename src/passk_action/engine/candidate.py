"""The candidate side of a comparison: a recorded run checked against the dataset, or one
measured now (k attempts per row, journaled, resumable)."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import AgentInfo, Phase, Run, Version
from ..core.notes import Note, RecordedCandidate
from ..errors import ArtifactError, ConfigError
from ..report.notes import ids
from .asking import Asker
from .measuring import check_settings, measure
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
    if source.recorded is not None:
        run = source.recorded
        check_settings(run, config.settings, "--candidate", "candidate run")
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
        return CandidateSide(run, made, (RecordedCandidate(made),))
    if not asker.available(Version.CANDIDATE):
        raise ConfigError(
            "no candidate run was given and the config has no `agent:` to record one",
            where=f"{config.path}: agent",
            hint="pass a recorded run (--candidate RUN, e.g. from `passk import`), or add `agent:`",
        )
    info = AgentInfo(
        Version.CANDIDATE, asker.describe(Version.CANDIDATE), source.commit, dirty=source.dirty
    )
    run = measure(
        dataset, dataset.rows, config.settings, asker, info, source.out, resume=source.resume
    )
    return CandidateSide(run)
