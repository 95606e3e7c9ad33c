"""An agent that only answers from attempts recorded elsewhere: it runs nothing.

The two-job mode's gating job must run none of the pull request's code, yet
confirmation asks the candidate for attempts on the rows it lost.  Those
attempts were made by the pull request's own job (``mode: measure``) and come
in its file; this agent hands each request the recorded attempt with the same
row, number and phase.  A request the file does not answer stops the
candidate (:class:`AgentCouldNotRun`): asking the pull request's agent here is
exactly what the mode forbids, and an error attempt in its place would look
like a measurement.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.model import Attempt, Phase, Scoring
from ..core.scoring import rescore_attempt, unjudged
from ..errors import AgentCouldNotRun
from .protocol import AgentBase, AttemptRequest

NOT_MEASURED_HINT = (
    "the gating job runs none of the pull request's code: re-run the measuring workflow "
    "for this commit (it measures the rows the base commit's baseline may lose)"
)


class RecordedAnswers(AgentBase):
    """Answers each request with the recorded attempt of the same row, number and phase.

    ``scoring`` names the rules the attempts were recorded under: each one is
    read again under the request's (the gate's) rules from its recorded answer.
    ``judge_again``: each is handed over as its answer alone, its recorded
    verdicts dropped, for the base's scorer program to judge
    (:class:`agents.scorer.ScoredAgent`), as the agent's own process is.
    """

    def __init__(
        self,
        attempts: Iterable[Attempt],
        description: str,
        scoring: Scoring | None = None,
        *,
        judge_again: bool = False,
    ) -> None:
        self._recorded = {(a.row_id, a.number, a.phase): a for a in attempts}
        self.description = description
        self._scoring = scoring
        self._judge_again = judge_again

    def run(self, request: AttemptRequest) -> Attempt:
        found = self._recorded.get((request.row.id, request.number, request.phase))
        if found is not None and self._judge_again:
            return unjudged(found)
        if found is not None and self._scoring is not None:
            return rescore_attempt(found, self._scoring, request.scoring)
        if found is not None:
            return found
        phase = "confirmation" if request.phase is Phase.CONFIRM else request.phase.value
        raise AgentCouldNotRun(
            version=request.version.value,
            reason=f"the pull request's job recorded no {phase} attempt {request.number} of "
            f"row {request.row.id!r}",
            hint=NOT_MEASURED_HINT,
        )
