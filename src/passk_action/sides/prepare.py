"""The one preparation of a comparison, for the action and ``passk compare`` alike.

:func:`prepare` turns what a shell read (a base commit's trusted inputs, or
a working tree's config) into the engine's typed inputs and an agent
factory, and holds what must last while agents run:

- the job's token kept out of agents' reach, with ``isolate`` (the action),
  before any agent or setup runs;
- the base commit's export for the baseline agent, made before any of the
  head's code runs; its setup runs first, whichever side is built first, and
  then it is locked;
- with ``isolate``, the candidate's own export of HEAD for the agent user;
- whether the committed baseline still measures the base commit's agent,
  said before any agent runs.

Agents are built on first use only (:class:`LazyAgents`): a comparison that
replays or reuses everything starts none, runs no setup, and the engine asks
each version only for what is missing.  Every agent built is closed before
the exports go.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..agents.identity import (
    BASELINE_USER_ENV,
    AgentUser,
    baseline_env,
    shared_places,
    side_users,
)
from ..agents.places import OWN_FOLDERS, SHARED_ENV, TEMPORARY
from ..agents.runner import Agent
from ..core.model import Dataset, Run, Version
from ..core.notes import Note
from ..engine.agents import ScorerSpec, build_agent, close_agent, scored, scorer_spec
from ..engine.request import AgainstBase, CandidateSource, CompareInputs, Rerun, StalePlan
from ..inputs.agent_config import AgentConfig
from ..inputs.config import Config
from .credentials import credentials_hidden, env_without_token, warn_persisted_token
from .exports import BaseExport, HeadExport, base_export, baseline_agent_config, head_export
from .freshness import assess, plan_for
from .gitrepo import GitRepo
from .trusted import BaseCommit, Trusted

SetupRunner = Callable[[AgentConfig, Mapping[str, str], Version, "str | None"], None]
"""Runs an agent's ``setup`` in ``env`` and logs it the shell's way; the last argument
says what the working directory is, when it is not the checkout."""

PULL_REQUEST_BASE_WHERE = (
    "the base commit's files; set up before any of the pull request's code runs, even if "
    "no row then needs the baseline, and read-only after"
)
REF_WHERE = (
    "a checkout of REF; set up before the working tree's agent runs, even if no row then "
    "needs the baseline, and read-only after"
)


@dataclass(frozen=True)
class Shell:
    """How the calling shell (the action's log, the CLI's stderr) shows the preparation."""

    warn: Callable[[str], None]
    note: Callable[[str], None]
    """Says what was done (credentials hidden)."""
    announce: Callable[[Note], None]
    """Says a note before any agent runs (a stale baseline): the shell words it."""
    line: Callable[[str], None]
    """A plain log line (where the candidate runs from)."""
    setup: SetupRunner


@dataclass(frozen=True)
class Base:
    """A comparison against a base commit: its repository, the commit, and its trusted
    inputs (``trusted.trust_base``: the head's rows protected by the base's rules)."""

    repo: GitRepo
    commit: BaseCommit
    trusted: Trusted


@dataclass(frozen=True)
class Local:
    """A comparison in one working tree: its config names both agents."""

    config: Config
    dataset: Dataset
    baseline: Run
    """The committed baseline artifact (or the one ``--baseline`` names)."""


@dataclass(frozen=True)
class Running:
    """What every agent of a comparison is built with: the environment it starts from, the
    token taken out of it, and how many attempts run at once (None: as the agent says)."""

    env: Mapping[str, str]
    token: str = ""
    concurrency: int | None = None


@dataclass(frozen=True)
class Exports:
    """The copies agents run from: the base commit's (set up before any of the head's
    code runs, then locked), how a log names it, and HEAD's, for the agent user."""

    base: BaseExport | None = None
    base_where: str | None = None
    head: HeadExport | None = None


@dataclass(frozen=True)
class Prepared:
    """The engine's inputs, and the agents it may ask for, built on first use."""

    inputs: CompareInputs
    agents: LazyAgents


class LazyAgents:
    """The comparison's agents by version (:class:`engine.agents.AgentSource`).

    Built on the engine's first request for a version, in the engine's thread:
    the base export's setup first (once, whichever version comes first), then,
    for an agent that runs from the head, its own setup; closed when the
    preparation ends, before the exports go.
    """

    def __init__(
        self,
        specs: Mapping[Version, AgentConfig],
        *,
        shell: Shell,
        running: Running,
        stack: contextlib.ExitStack,
        exports: Exports = Exports(),
        warn_token: bool = False,
        ready: Mapping[Version, Agent] | None = None,
        scorer: ScorerSpec | None = None,
    ) -> None:
        self._scorer = scorer
        self._specs = dict(specs)
        self._ready = dict(ready or {})
        self._shell = shell
        self._env = running.env
        self._token = running.token
        self._stack = stack
        self._concurrency = running.concurrency
        self._base_export = exports.base
        self._base_where = exports.base_where
        self._head_export = exports.head
        self._warn_token = warn_token
        self._built: dict[Version, Agent] = {}

    def available(self, version: Version) -> bool:
        return version in self._specs or version in self._ready

    def describe(self, version: Version) -> str:
        if version in self._ready:
            return self._ready[version].description
        return self._specs[version].describe()

    def get(self, version: Version) -> Agent:
        if version in self._ready:
            return self._ready[version]  # runs nothing: no setup, no export
        built = self._built.get(version)
        if built is not None:
            return built
        if self._base_export is not None:
            # Before any of the head's code runs, it may still write its export.
            self._base_export.prepare(self._base_setup, self._env)
        spec = self._specs[version]
        env = env_without_token(self._side_env(version), self._token)
        if not (version is Version.BASELINE and self._base_export is not None):
            # Runs from the head (the checkout, the working tree or HEAD's export).
            where = None
            if version is Version.CANDIDATE and self._head_export is not None:
                self._head_export.announce(self._shell.line, version.value)
                where = self._head_export.where
            if self._warn_token:
                warn_persisted_token(spec.cwd, self._env, self._shell.warn)
            self._shell.setup(spec, env, version, where)
        agent = build_agent(
            spec, env, concurrency=self._concurrency, warn=self._shell.warn, scorer=self._scorer
        )
        self._stack.callback(close_agent, agent)
        self._built[version] = agent
        return agent

    def _base_setup(self, spec: AgentConfig) -> None:
        env = env_without_token(self._side_env(Version.BASELINE), self._token)
        self._shell.setup(spec, env, Version.BASELINE, self._base_where)

    def _side_env(self, version: Version) -> Mapping[str, str]:
        """The environment a side's agent is built from: it names that side's user."""
        return baseline_env(self._env) if version is Version.BASELINE else self._env


@contextlib.contextmanager
def prepare(
    shell: Shell,
    compared: Base | Local,
    candidate: CandidateSource,
    running: Running,
    *,
    isolate: bool = False,
    rerun: Rerun | None = None,
    candidate_agent: Agent | None = None,
    baseline: bool = True,
) -> Iterator[Prepared]:
    """Both sides ready for the engine's comparison; undone on the way out.

    ``isolate`` (the action, where agents may run as their own user): hide
    persisted credentials from agents and run the candidate from its own export
    of HEAD; without it (the CLI) a token agents could read is only warned
    about.  ``running.token`` is taken out of every agent's environment.  The
    two-job mode: ``candidate_agent`` (the gating job) answers for the candidate
    instead of the head's agent, which is then neither exported nor set up,
    so none of the pull request's code runs; ``baseline=False`` (the measuring
    job) prepares no baseline side at all.
    """
    env, token = running.env, running.token
    with contextlib.ExitStack() as stack:
        if isinstance(compared, Local):
            inputs = CompareInputs(
                compared.config, compared.dataset, compared.baseline, candidate, rerun=rerun
            )
            agents = LazyAgents(
                _local_specs(compared.config),
                shell=shell,
                running=running,
                stack=stack,
                warn_token=True,
                scorer=scorer_spec(compared.config.scoring, compared.config.path.parent, env),
            )
            yield Prepared(inputs, agents)
            return
        trusted = compared.trusted
        head_agent = trusted.config.agent if candidate_agent is None else None
        base_agent = baseline_agent_config(trusted.sides.base.config) if baseline else None
        exports = _exports(compared, stack, env, shell, isolate, head_agent, base_agent)
        specs: dict[Version, AgentConfig] = {}
        if head_agent is not None:
            specs[Version.CANDIDATE] = exports.head.agent if exports.head else head_agent
        if exports.base is not None:
            specs[Version.BASELINE] = exports.base.agent
        scorer = None
        if trusted.config.scoring.by_scorer:
            scorer = _base_scorer(compared, stack, env, shell)
        if candidate_agent is not None and scorer is not None:
            # The gating job's recorded answers are judged as an agent's are: by the base's
            # scorer, as its own user (what the answers hand over is up to them).
            candidate_agent = scored(candidate_agent, scorer, env_without_token(env, token))
            stack.callback(close_agent, candidate_agent)
        inputs = CompareInputs(
            trusted.config,
            trusted.dataset,
            trusted.baseline_run,
            candidate,
            base=_against(compared, shell),
            rerun=rerun,
        )
        agents = LazyAgents(
            specs,
            shell=shell,
            running=running,
            stack=stack,
            exports=exports,
            warn_token=not isolate,
            ready={Version.CANDIDATE: candidate_agent} if candidate_agent is not None else None,
            scorer=scorer,
        )
        yield Prepared(inputs, agents)


def _exports(
    compared: Base,
    stack: contextlib.ExitStack,
    env: Mapping[str, str],
    shell: Shell,
    isolate: bool,
    head_agent: AgentConfig | None,
    base_agent: AgentConfig | None,
) -> Exports:
    """Credentials hidden (with ``isolate``), then the base's export made before any of
    the head's code runs, then HEAD's for the agent user (with ``isolate``); each undone
    by ``stack``."""
    if isolate and (head_agent is not None or base_agent is not None):
        users = side_users(env)
        _say_users(users, shell)
        _say_shared_places(users, env, shell)
        # Before any agent (setup or attempt) runs, and undone after the last one
        # stops: a token actions/checkout persisted is out of the agents' reach.
        stack.enter_context(
            credentials_hidden(compared.repo, users, env, warn=shell.warn, note=shell.note)
        )
    base_exported = None
    if base_agent is not None:
        # Exported now, before the head's code runs at all.
        base_exported = stack.enter_context(
            base_export(compared.repo, compared.commit.sha, base_agent, env)
        )
    head_exported = None
    if isolate and head_agent is not None:
        # Exported (and handed to the agent user) even when every verdict is
        # replayed, as the base is; built, set up and announced only if asked.
        head_exported = stack.enter_context(head_export(compared.repo, head_agent, env, shell.warn))
    return Exports(
        base=base_exported,
        base_where=PULL_REQUEST_BASE_WHERE if compared.commit.ref is None else REF_WHERE,
        head=head_exported,
    )


def _base_scorer(
    base: Base, stack: contextlib.ExitStack, env: Mapping[str, str], shell: Shell
) -> ScorerSpec | None:
    """The scorer program from an export of the base commit of its own: read-only, never
    handed to any agent user, so neither side's agent nor the head's copy of the scorer can
    change how answers are judged (``agents/scorer.py``)."""
    config = base.trusted.config
    tree = stack.enter_context(base.repo.export(base.commit.sha, side="scorer"))
    folder = tree.joinpath(*PurePosixPath(base.repo.relative(config.path.parent)).parts)
    spec = scorer_spec(config.scoring, folder, env)
    if spec is not None:
        shell.line(
            f"passk: answers are judged by {shlex.join(spec.command)} from {base.commit.label}"
            + (f", run as {spec.user.name}" if spec.user is not None else "")
        )
    return spec


def _say_users(users: tuple[AgentUser | None, AgentUser | None], shell: Shell) -> None:
    """Say who each side runs as; warn when one user runs both (no boundary between them)."""
    candidate, baseline = users
    if candidate is None or baseline is None:
        return
    if candidate.uid == baseline.uid:
        shell.warn(
            f"the baseline and the candidate agents both run as {candidate.name}: the pull "
            "request's code can write the baseline's HOME and signal its processes; set "
            f"{BASELINE_USER_ENV} to another unprivileged user (the action's image does)"
        )
        return
    shell.line(
        f"passk: the candidate agent runs as {candidate.name}, the baseline agent as "
        f"{baseline.name}: neither can write the other's files nor signal its processes"
    )


def _say_shared_places(
    users: tuple[AgentUser | None, AgentUser | None], env: Mapping[str, str], shell: Shell
) -> None:
    """Warn once about the step's variables that name a place both agent users could write.

    Each process started as an agent user is kept from them anyway
    (``agents/places.py``); this says so, and what each agent gets instead.
    """
    changed: dict[str, str | None] = {}
    for user in users:
        changed.update(shared_places(user, env))
    for always_own in ("HOME", "TMPDIR"):  # never the step's, shared or not
        changed.pop(always_own, None)
    if not changed:
        return
    told = []
    for name in sorted(changed):
        if changed[name] is None:
            what = "dropped"
        elif name in OWN_FOLDERS or name in TEMPORARY:
            what = "each agent gets a folder of its own"
        else:
            what = "those entries left out"
        told.append(f"{name}={env[name]} ({what})")
    shell.warn(
        "the environment names places the other agent user could write too, so no agent "
        f"gets them: {', '.join(told)}; to share one with both agents, make it where only "
        f"root writes (both read it, neither can change it), or name it in {SHARED_ENV}"
    )


def _local_specs(config: Config) -> dict[Version, AgentConfig]:
    """A working tree's agents: ``agent`` is the candidate, ``baseline.agent`` the baseline."""
    specs = {Version.CANDIDATE: config.agent, Version.BASELINE: config.baseline.agent}
    return {version: spec for version, spec in specs.items() if spec is not None}


def _against(base: Base, shell: Shell) -> AgainstBase:
    """What the base commit adds: its protected changes, and what to do about staleness."""
    trusted = base.trusted
    base_config = trusted.sides.base.config
    # A committed baseline the base commit's agent no longer matches is stale.
    freshness = assess(base.repo, trusted.baseline_run, base.commit.sha, base_config)
    stale: StalePlan = plan_for(freshness, base_config, shell.announce)
    for ignored in trusted.settings_ignored:
        shell.announce(ignored)
    return AgainstBase(
        commit=base.commit.sha,
        ref=base.commit.ref,
        protected_changes=trusted.changes,
        protected_changes_allowed=trusted.allowed,
        stale=stale,
        warnings=trusted.settings_ignored,
    )
