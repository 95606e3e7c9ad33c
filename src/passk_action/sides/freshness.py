"""Whether the committed baseline still measures what the base commit's agent runs.

The base config's ``agent.fingerprint`` names the files the agent runs; a
baseline measured on other contents of them is stale, and
``baseline.when_stale`` says what to do: re-measure it at the base, use it
with a warning, or fail.  Without fingerprint paths a baseline is never
stale, but how far behind the base it was measured is said.  Shared by the
action's gate mode and ``passk compare --base REF``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.model import Run
from ..core.notes import (
    BaselineAgeUnknown,
    BaselineBehind,
    Note,
    StaleBaseline,
    StaleBaselineHandled,
    StalePolicy,
)
from ..engine.request import StalePlan, stale_reason
from ..errors import ArtifactError
from ..inputs.config import Config
from .gitrepo import GitRepo


def fingerprint_paths(repo: GitRepo, config: Config) -> tuple[str, ...]:
    """The git paths ``agent.fingerprint`` names (``baseline.agent``'s when it names some)."""
    named = config.baseline.agent.fingerprint if config.baseline.agent is not None else ()
    if not named and config.agent is not None:
        named = config.agent.fingerprint
    return tuple(sorted({repo.relative(path) for path in named}))


@dataclass(frozen=True)
class Freshness:
    """How the committed baseline relates to the base commit.

    ``stale`` when the fingerprint differs (the base's agent is not the one
    measured), saying why; else, without fingerprint paths, how far behind the
    base the baseline was measured, if that is worth saying (never stale then).
    """

    stale: StaleBaseline | None = None
    behind: BaselineBehind | BaselineAgeUnknown | None = None
    fingerprint: tuple[tuple[str, str], ...] | None = None
    """The base commit's fingerprint (None without fingerprint paths)."""


def assess(repo: GitRepo, run: Run, base_sha: str, config: Config) -> Freshness:
    """Compare the committed baseline ``run`` with the base commit ``base_sha``."""
    paths = fingerprint_paths(repo, config)
    measured = run.agent.commit
    if paths:
        current = repo.fingerprint(base_sha, paths)
        recorded = run.agent.fingerprint
        if recorded == current:
            return Freshness(fingerprint=current)
        changed = None
        if recorded is not None:
            before, now = dict(recorded), dict(current)
            changed = tuple(
                sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p))
            )
        return Freshness(
            stale=StaleBaseline(measured, base_sha, paths, changed), fingerprint=current
        )
    if not measured:
        return Freshness()
    if not repo.has_commit(measured):
        return Freshness(behind=BaselineAgeUnknown(measured))
    behind = repo.commits_between(measured, base_sha)
    artifact = repo.relative(config.baseline.artifact)
    files = [f for f in repo.changed_files(measured, base_sha) if f != artifact]
    if behind == 0 or not files:
        return Freshness()
    return Freshness(behind=BaselineBehind(measured, base_sha, behind, tuple(files)))


def plan_for(freshness: Freshness, config: Config, warn: Callable[[Note], None]) -> StalePlan:
    """``baseline.when_stale`` applied: re-measure, warn, or fail (exit 2).

    ``warn`` gets what is said before any agent runs, as a note: the shell words it.
    """
    fingerprint = freshness.fingerprint
    if freshness.behind is not None:
        warn(freshness.behind)
        return StalePlan(warning=freshness.behind, fingerprint=fingerprint)
    stale = freshness.stale
    if stale is None:
        return StalePlan(fingerprint=fingerprint)
    policy = config.baseline.when_stale
    if policy == "fail":
        raise ArtifactError(
            stale_reason(stale),
            where=f"{config.path}: baseline.when_stale",
            hint="record the baseline again at the base commit (`passk baseline`, or the "
            "action's `mode: baseline` on the default branch), or set when_stale: remeasure",
        )
    if policy == "warn":
        used = StaleBaselineHandled(stale, StalePolicy.USED_ANYWAY)
        warn(used)
        return StalePlan(warning=used, fingerprint=fingerprint)
    warn(StaleBaselineHandled(stale, StalePolicy.REMEASURING))
    return StalePlan(remeasure=stale, fingerprint=fingerprint)
