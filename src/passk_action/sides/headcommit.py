"""Where the action runs the checked-out agent (the candidate, or the baseline mode's agent).

In the container action passk is root and agents run as ``PASSK_AGENT_USER``
(``agents/identity.py``), but the checkout belongs to the runner's user: a
setup that writes into the agent's folder (``npm ci``, ``uv sync``, ``python
-m venv .venv``) fails there with EACCES, while the same setup works for the
baseline, which runs from an export of the base commit (``basesetup.py``).

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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..agents.identity import agent_user
from ..errors import GitError
from ..inputs.config import AgentConfig
from .exports import hand_over, rebase_agent
from .gitrepo import GitRepo, short_sha


@dataclass(frozen=True)
class HeadCheckout:
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
def head_checkout(
    repo: GitRepo,
    agent: AgentConfig,
    env: Mapping[str, str],
    warn: Callable[[str], None],
    *,
    version: str = "candidate",
) -> Iterator[HeadCheckout]:
    """``agent`` moved into an export of ``HEAD`` owned by the agent user; removed after.

    Without an agent user (``PASSK_AGENT_USER`` in ``env``), ``agent`` as it is.
    """
    user = agent_user(env)
    if user is None or not _in_repository(repo, agent):
        yield HeadCheckout(agent)
        return
    with contextlib.ExitStack() as stack:
        try:
            sha = repo.head_sha()
            tree = stack.enter_context(repo.export(sha, side="head"))
        except GitError as exc:
            warn(
                f"the {version} runs in the checkout, which {user.name} cannot write, because "
                f"HEAD could not be exported ({exc.one_line()}); a setup that writes into its "
                "folder (npm ci, a venv) fails there"
            )
            yield HeadCheckout(agent)
            return
        hand_over(tree, user)
        yield HeadCheckout(
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
