"""How sure we can be of a comparison: error bars, the paired comparison, the pass^k curve,
check stability and statistical power, for both versions, in one value.

The three headline numbers (``stats``) say *what* was measured; this says *how
sure* we can be of it.  Everything is pure: recorded attempts in, frozen
dataclasses with ``to_json()`` out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .check_stability import MAIN_ONLY, CheckStability, check_stability
from .error_bars import ErrorBar, accuracy_error_bar, pass_k_error_bar
from .model import RowRecord, Run, Scoring
from .paired import PairedComparison, paired_comparison
from .pass_curve import PassCurve, pass_curve
from .power import Power, paired_power
from .result import CompareResult
from .stats import RowSummary, summarize_run


@dataclass(frozen=True, slots=True)
class VersionAnalysis:
    """Everything this analysis says about one version's main attempts."""

    version: str
    accuracy: ErrorBar
    pass_k: ErrorBar
    curve: PassCurve
    checks: tuple[CheckStability, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "mean_accuracy": self.accuracy.to_json(),
            "pass_k": self.pass_k.to_json(),
            "curve": self.curve.to_json(),
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True, slots=True)
class Analysis:
    """The one value renderers need: both versions, their comparison and the power."""

    k: int
    baseline: VersionAnalysis
    candidate: VersionAnalysis
    paired: PairedComparison
    power: Power

    def to_json(self) -> dict[str, object]:
        return {
            "k": self.k,
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "paired": self.paired.to_json(),
            "power": self.power.to_json(),
        }


def clusters_of(rows: Iterable[RowRecord]) -> dict[str, str] | None:
    """Row id -> cluster for the rows that carry one; None when no row does."""
    found = {r.id: r.cluster for r in rows if r.cluster is not None}
    return found or None


def analyze_run(
    rows: Sequence[RowRecord],
    run: Run,
    clusters: Mapping[str, str] | None = None,
    *,
    k: int | None = None,
    scoring: Scoring | None = None,
) -> tuple[VersionAnalysis, list[RowSummary]]:
    """One version's analysis over ``rows`` (main attempts only) and its row summaries.

    ``clusters`` defaults to the rows' own (:func:`clusters_of`), so a report
    of an artifact alone has the clustered error bars of the dataset.
    """
    if clusters is None:
        clusters = clusters_of(rows)
    k = run.settings.k if k is None else k
    scoring = run.settings.scoring if scoring is None else scoring
    grouped = run.attempts_by_row()
    summaries = summarize_run(rows, grouped, k, scoring, MAIN_ONLY)
    analysis = VersionAnalysis(
        version=run.agent.version.value,
        accuracy=accuracy_error_bar(summaries, clusters),
        pass_k=pass_k_error_bar(summaries, k, clusters),
        curve=pass_curve([(s.attempts, s.correct) for s in summaries]),
        checks=check_stability(rows, grouped, scoring, k=k),
    )
    return analysis, summaries


def analyze(result: CompareResult, clusters: Mapping[str, str] | None = None) -> Analysis:
    """Error bars, paired comparison, pass^k curves, check stability and power.

    Rows (labels) come from ``result.rows``, the authoritative ones; k and
    scoring from the candidate run (the gate's settings).  Main attempts
    only: confirmation re-runs target lost rows and would bias every mean.
    ``clusters`` maps row id -> cluster; it defaults to the clusters the
    result's rows carry (the dataset's, recorded with them).  Rows missing
    from it are clusters of their own.
    """
    if clusters is None:
        clusters = clusters_of(result.rows)
    k = result.candidate.settings.k
    scoring = result.candidate.settings.scoring
    base, base_summaries = analyze_run(result.rows, result.baseline, clusters, k=k, scoring=scoring)
    # The candidate's own k and scoring are the gate's: no need to pass them.
    cand, cand_summaries = analyze_run(result.rows, result.candidate, clusters)
    return Analysis(
        k=k,
        baseline=base,
        candidate=cand,
        paired=paired_comparison(base_summaries, cand_summaries, clusters),
        power=paired_power(base_summaries, cand_summaries),
    )
