"""The exports agents run from: the base commit's, set up then locked; HEAD's, the agent user's.

The base commit's export
------------------------

The baseline agent's ``setup`` runs there before any of the PR's code.  The
baseline side runs from an export of the base commit (``GitRepo.export``)
that belongs to passk and is read-only, so the pull request's code (the
candidate agent and its setup, running as the same agent user) cannot change
what the baseline runs.  But a real setup writes into the agent's directory:
``npm ci`` (``node_modules``), ``uv sync`` or ``python -m venv .venv`` and
``pip install``, ``poetry install`` with an in-project venv.  Run as the
agent user in a read-only export, every one of them fails with EACCES.

Two ways were weighed:

- **Lazy, in a private writable copy**: keep setup on the baseline's first
  request, in a copy the agent user may write.  By then the candidate has
  usually run, and a persistent candidate process (a worker, anything it left
  behind) runs as the *same* user as the setup: no directory can be writable
  by the setup and not by it.  Whatever the setup installs could be rewritten
  between its writing and its locking; unsound.
- **First, then locked** (what this module does): the export is handed to
  the setup's user only while the baseline's setup runs, and that happens
  before the candidate agent is built at all, so before any of the pull
  request's code (its setup included) starts.  Then, as root, everything in
  the export is given back to root and loses its write bits; its owner could
  otherwise ``chmod`` them back, and root's files are out of the agent user's
  reach for good.  Set-user-ID and set-group-ID bits go too: a file the agent
  user made must never become a root-owned set-user-ID program.

Setups also write outside their folder: ``pip install`` as the agent user
falls back to a user install under ``HOME``.  The baseline runs as a user of
its own (``PASSK_BASELINE_USER``, ``agents/identity.py``), whose private
``HOME`` and ``TMPDIR`` the candidate cannot reach; should both sides share
one user, that home would be the candidate's too.  Either way, a baseline
agent that has a setup gets a ``HOME`` of its own beside the export
(``agent.env``; setup and attempts both see it), handed over and locked with
the export: what its setup installed stays as it was.  Its attempts write to
their ``TMPDIR``; their ``HOME`` is read-only to them, as their folder is.

The cost: the baseline's setup runs whenever the candidate runs, even when
the baseline agent is then never asked (no lost row, no new row to top up),
because that cannot be known before the candidate has answered.  It does not
run when nothing runs: a re-run that replays the recorded verdicts builds
neither agent, so it makes no agent call and runs no setup at all.

When passk is not root (the runner action, a laptop), setup, baseline and
candidate all run as one user: the export is made writable for the setup and
read-only after it, so an agent writing there by mistake is stopped, but any
process of that user could change the modes back.  There is no boundary to
keep there, and this module does not pretend to keep one.

HEAD's export
-------------

Where the action runs the checked-out agent (the candidate, or the baseline mode's agent).

In the container action passk is root and agents run as ``PASSK_AGENT_USER``
(``agents/identity.py``), but the checkout belongs to the runner's user: a
setup that writes into the agent's folder (``npm ci``, ``uv sync``, ``python
-m venv .venv``) fails there with EACCES, while the same setup works for the
baseline, which runs from an export of the base commit (above).

So with an agent user, the checked-out agent runs from its own export of
``HEAD`` (``GitRepo.export``: the commit's files read from git objects, no
hook or filter, outside the checkout), handed to the agent user for the
whole run and removed afterwards.  It is the pull request's own code, so it
is never locked; and it reaches none of passk's files: passk writes its
results into the checkout, never into the export, and the agent user cannot
write the checkout.  The side effect: only the commit's files are there,
not what earlier workflow steps left uncommitted or untracked in the
workspace.  The export has no ``.git`` either (``credentials.py`` still
hides the checkout's, which stays readable by absolute path).

Without an agent user (the runner action, a laptop, ``passk compare``)
nothing changes: the agent runs in the checkout, as passk's own user, who
may write there anyway.  If ``HEAD`` cannot be exported, the agent runs in
the checkout as before, with a warning.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from ..agents.identity import agent_user, baseline_env
from ..errors import GitError, MalformedTree
from ..inputs.agent_config import AgentConfig
from ..inputs.config import Config
from .gitrepo import GitRepo, short_sha
from .ownership import hand_over, writable

RunSetup = Callable[[AgentConfig], None]
"""Runs an agent's setup commands and logs them (the action's folded group, the CLI's lines)."""


@dataclass
class BaseExport:
    """The base commit's export (``tree``) and the baseline agent moved into it.

    :meth:`prepare` runs the agent's setup at most once; call it before the
    candidate agent is built and before the baseline agent is.
    """

    tree: Path
    agent: AgentConfig
    home: Path | None = None
    """The baseline's own ``HOME`` (in ``agent.env``), handed over and locked with ``tree``."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _done: bool = field(default=False, repr=False)
    _error: BaseException | None = field(default=None, repr=False)

    def prepare(self, run_setup: RunSetup, env: Mapping[str, str]) -> None:
        """Run the baseline's setup in the export, writable only meanwhile; once.

        ``env`` names the users (``PASSK_AGENT_USER``, ``PASSK_BASELINE_USER``):
        the export is the baseline user's while its setup runs.  A failure is
        raised again by every later call, so whichever side asks next stops
        with the same error.
        """
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._done:
                return
            self._done = True
            if not self.agent.setup:
                return
            user = agent_user(baseline_env(env))
            try:
                with contextlib.ExitStack() as stack:
                    for folder in (self.tree, self.home):
                        if folder is not None:
                            stack.enter_context(writable(folder, user))
                    run_setup(self.agent)
            except BaseException as exc:
                self._error = exc
                raise


def baseline_agent_config(config: Config) -> AgentConfig | None:
    """The agent the baseline side runs: ``baseline.agent``, else ``agent``."""
    return config.baseline.agent or config.agent


@contextlib.contextmanager
def base_export(
    repo: GitRepo, sha: str, agent: AgentConfig, env: Mapping[str, str]
) -> Iterator[BaseExport]:
    """``agent`` moved into a read-only export of commit ``sha`` (``GitRepo.export``: no
    hooks, no filters, nothing shared with the checkout), removed afterwards.

    Its setup is not run yet: :meth:`BaseExport.prepare` does, before the
    candidate is built (this module's docstring says why).  With an agent user
    (``PASSK_BASELINE_USER``, else ``PASSK_AGENT_USER`` in ``env``), an agent
    with a setup gets a ``HOME`` of its own beside the export, locked with it:
    what its setup installed stays as it was, whoever else shares that user.
    """
    with repo.export(sha) as tree:
        moved = rebase_agent(agent, repo, tree)
        home = None
        if agent.setup and agent_user(baseline_env(env)) is not None:
            home = tree.parent / "home"
            home.mkdir(mode=0o755)
            moved = replace(moved, env={"HOME": str(home), **moved.env})
        yield BaseExport(tree, moved, home)


@dataclass(frozen=True)
class HeadExport:
    """The agent to run, and where it runs when that is not the checkout."""

    agent: AgentConfig
    where: str | None = None
    """``the files of HEAD <sha7>, owned by <user>``; None: in the checkout itself."""

    def announce(self, log: Callable[[str], None], version: str) -> None:
        """Say once where the agent runs, when that is not the checkout."""
        if self.where is not None:
            log(
                f"passk: the {version} runs from {self.where} (an export of the commit: "
                "uncommitted or untracked files of the workspace are not there)"
            )


@contextlib.contextmanager
def head_export(
    repo: GitRepo,
    agent: AgentConfig,
    env: Mapping[str, str],
    warn: Callable[[str], None],
    *,
    version: str = "candidate",
) -> Iterator[HeadExport]:
    """``agent`` moved into an export of ``HEAD`` owned by the agent user; removed after.

    Without an agent user (``PASSK_AGENT_USER`` in ``env``), ``agent`` as it is.
    """
    user = agent_user(env)
    if user is None or not _in_repository(repo, agent):
        yield HeadExport(agent)
        return
    with contextlib.ExitStack() as stack:
        try:
            sha = repo.head_sha()
            tree = stack.enter_context(repo.export(sha, side="head"))
        except MalformedTree:
            raise  # a tree git never writes is refused, never run from the checkout instead
        except GitError as exc:
            warn(
                f"the {version} runs in the checkout, which {user.name} cannot write, because "
                f"HEAD could not be exported ({exc.one_line()}); a setup that writes into its "
                "folder (npm ci, a venv) fails there"
            )
            yield HeadExport(agent)
            return
        hand_over(tree, user)
        yield HeadExport(
            rebase_agent(agent, repo, tree),
            f"the files of HEAD {short_sha(sha)}, owned by {user.name}",
        )


def _in_repository(repo: GitRepo, agent: AgentConfig) -> bool:
    """Whether the agent's cwd is part of the commit (one outside the checkout is not moved)."""
    try:
        repo.relative(agent.cwd)
    except GitError:
        return False
    return True


def rebase_agent(agent: AgentConfig, repo: GitRepo, new_root: Path) -> AgentConfig:
    """The same agent with its working directory moved from ``repo`` into ``new_root``.

    The cwd is taken as a git path (symlinks in the checkout not followed).
    """
    try:
        rel = repo.relative(agent.cwd)
    except GitError:
        return agent  # a cwd outside the repository is not part of the commit
    return replace(agent, cwd=new_root.joinpath(*PurePosixPath(rel).parts))
