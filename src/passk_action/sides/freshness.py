"""What the base commit says about the baseline side: its agent, its checkout, its freshness.

Shared by the action's gate mode and ``passk compare --base REF``, so a
laptop runs the baseline side exactly as the pull request's job does: the
base commit's config names the agent, which runs from a checkout of that
commit; the committed baseline is checked against what the base commit's
agent runs (``agent.fingerprint``) before it is trusted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..agents.identity import agent_user
from ..core.model import Run
from ..core.notes import (
    BaselineAgeUnknown,
    BaselineBehind,
    StaleBaseline,
    StaleBaselineHandled,
    StalePolicy,
)
from ..engine.request import StalePlan
from ..errors import ArtifactError, GitError
from ..inputs.config import AgentConfig, Config
from ..report.notes import sentence
from .exports import BaseCheckout, rebase_agent
from .gitrepo import GitRepo


def baseline_agent_config(config: Config) -> AgentConfig | None:
    """The agent the baseline side runs: ``baseline.agent``, else ``agent``."""
    return config.baseline.agent or config.agent


@contextlib.contextmanager
def base_checkout(
    repo: GitRepo, sha: str, agent: AgentConfig, env: Mapping[str, str]
) -> Iterator[BaseCheckout]:
    """``agent`` moved into a read-only export of commit ``sha`` (``GitRepo.export``: no
    hooks, no filters, nothing shared with the checkout), removed afterwards.

    Its setup is not run yet: :meth:`BaseCheckout.prepare` does, before the
    candidate is built (``basesetup.py`` says why).  With an agent user
    (``PASSK_AGENT_USER`` in ``env``), an agent with a setup gets a ``HOME`` of
    its own beside the export, locked with it, since that user's home is the
    candidate's too.
    """
    with repo.export(sha) as tree:
        moved = rebase_agent(agent, repo, tree)
        home = None
        if agent.setup and agent_user(env) is not None:
            home = tree.parent / "home"
            home.mkdir(mode=0o755)
            moved = replace(moved, env={"HOME": str(home), **moved.env})
        yield BaseCheckout(tree, moved, home)


def fingerprint_paths(repo: GitRepo, config: Config) -> tuple[str, ...]:
    """The git paths ``agent.fingerprint`` names (``baseline.agent``'s when it names some)."""
    named = config.baseline.agent.fingerprint if config.baseline.agent is not None else ()
    if not named and config.agent is not None:
        named = config.agent.fingerprint
    return tuple(sorted({repo.relative(path) for path in named}))


@dataclass(frozen=True)
class Identity:
    """What a run records about the code it measured."""

    commit: str | None = None
    dirty: bool = False
    fingerprint: tuple[tuple[str, str], ...] | None = None


def working_tree_identity(start: Path, config: Config) -> Identity:
    """HEAD, whether tracked files changed, and the fingerprint of the working tree's files.

    Outside a git repository (or without git) nothing can be told: all unknown.
    """
    try:
        repo = GitRepo.discover(start)
        paths = fingerprint_paths(repo, config)
        commit = repo.head_sha()
        fingerprint = repo.fingerprint(repo.working_tree(paths), paths) if paths else None
        return Identity(commit=commit, dirty=repo.is_dirty(), fingerprint=fingerprint)
    except GitError:
        return Identity()


def commit_identity(repo: GitRepo, sha: str, config: Config) -> Identity:
    """Commit ``sha`` and the fingerprint of its files (a checkout of exactly that commit)."""
    paths = fingerprint_paths(repo, config)
    return Identity(commit=sha, fingerprint=repo.fingerprint(sha, paths) if paths else None)


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


def plan_for(freshness: Freshness, config: Config, warn: Callable[[str], None]) -> StalePlan:
    """``baseline.when_stale`` applied: re-measure, warn, or fail (exit 2)."""
    fingerprint = freshness.fingerprint
    if freshness.behind is not None:
        warn(sentence(freshness.behind))
        return StalePlan(warning=freshness.behind, fingerprint=fingerprint)
    stale = freshness.stale
    if stale is None:
        return StalePlan(fingerprint=fingerprint)
    policy = config.baseline.when_stale
    if policy == "fail":
        raise ArtifactError(
            sentence(stale),
            where=f"{config.path}: baseline.when_stale",
            hint="record the baseline again at the base commit (`passk baseline`, or the "
            "action's `mode: baseline` on the default branch), or set when_stale: remeasure",
        )
    if policy == "warn":
        used = StaleBaselineHandled(stale, StalePolicy.USED_ANYWAY)
        warn(sentence(used))
        return StalePlan(warning=used, fingerprint=fingerprint)
    warn(sentence(StaleBaselineHandled(stale, StalePolicy.REMEASURING)))
    return StalePlan(remeasure=stale, fingerprint=fingerprint)
