"""The job's token that ``actions/checkout`` leaves on disk, kept out of the agents' reach.

passk removes the token from every agent's environment and, in the container
action, runs agents as ``PASSK_AGENT_USER``, who can read what everyone can:
the checkout included.  But ``actions/checkout`` persists the token it fetched
with unless told ``persist-credentials: false`` (its default is ``true``): it
writes ``http.https://github.com/.extraheader = AUTHORIZATION: basic
<base64 of x-access-token:TOKEN>`` with ``fs.promises.writeFile``, so the file
is world-readable (0644 under the usual umask).  Where, by version (its
``src/git-auth-helper.ts``, ``configureToken``):

- up to v5 (``v4`` is what most workflows pin), into the checkout's own
  ``.git/config``;
- from v6.0.0 ("Persist creds to a separate file", actions/checkout#2286,
  worktrees added in actions/checkout#2327), into ``$RUNNER_TEMP/git-credentials-<uuid>.config``,
  included from ``.git/config`` by ``includeIf.gitdir:<workspace>/.git.path``
  and, for container actions, ``includeIf.gitdir:/github/workspace/.git.path``
  pointing at ``/github/runner_temp/git-credentials-<uuid>.config`` (the same
  file, mounted there).

Either way the pull request's own code, the candidate agent, could read the
token and post a forged passk record or a passing check as
``github-actions[bot]``, the one login passk trusts.  The fix is
``persist-credentials: false`` (passk reads git objects locally and never
fetches; baseline mode pushes with the token in the environment of that one
git call, see ``gitrepo.token_auth_env``).  This module is the second line,
for a workflow that still persists it, set up before any agent (setup or
attempt) runs and undone after the last one:

- **with an agent user** (passk is root): whatever git reads here that holds a
  credential becomes unreadable to that user while agents run: the checkout's
  git directory when the secret is in its config, the included file when it
  is elsewhere (a ``store`` helper's file too).  Group and others lose every
  permission bit, and a path the agent user owns is given to root meanwhile
  (it could otherwise ``chmod`` it back).  The original owner and mode are
  restored through descriptors held since, so a rename cannot redirect it,
  and in ``finally``, whatever happens.  passk's own git calls run as root
  and still work; agents lose the checkout's git metadata (``git rev-parse``,
  setuptools-scm) while it lasts;
- **without one** (the runner action, a laptop, root with no agent user):
  agents are passk's own user and can read whatever passk can, so nothing can
  be hidden from them: one warning line names the file and the fix.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..agents.identity import AgentUser
from ..core.runner_credentials import without_runner_credentials
from ..errors import GitError, UsageError
from .gitrepo import GitRepo

FIX = "set `persist-credentials: false` on actions/checkout"

Say = Callable[[str], None]


@dataclass(frozen=True)
class StoredCredential:
    """A credential git would send from this checkout, and the file that holds it."""

    what: str
    """The config key (``http.https://github.com/.extraheader``) or helper that stores it."""
    file: Path


def stored_credentials(repo: GitRepo, env: Mapping[str, str]) -> list[StoredCredential]:
    """Every credential persisted on disk for git in ``repo``'s checkout.

    An ``http.*.extraheader`` (what ``actions/checkout`` writes) in any config
    file git reads here, includes followed; and the file of a ``store``
    credential helper, if it exists.  ``env`` gives passk's ``HOME`` and
    ``XDG_CONFIG_HOME``, where ``store`` keeps its file by default.
    """
    found: list[StoredCredential] = []
    for entry in repo.config_entries(r"^http\..*extraheader$"):
        file = entry.file(repo.root)
        if file is not None and entry.value.strip():
            found.append(StoredCredential(entry.key, file))
    for entry in repo.config_entries(r"^credential\..*helper$"):
        for file in _store_files(entry.value, env):
            found.append(StoredCredential(f"{entry.key} {entry.value.split()[0]}", file))
    unique: dict[tuple[str, Path], StoredCredential] = {}
    for item in found:
        unique.setdefault((item.what, item.file), item)
    return list(unique.values())


def _store_files(helper: str, env: Mapping[str, str]) -> list[Path]:
    """The files git's ``store`` helper reads, for a ``credential.helper`` value, if they exist."""
    try:
        words = shlex.split(helper)
    except ValueError:
        return []
    if not words or words[0] not in ("store", "git-credential-store"):
        return []
    home = env.get("HOME", "")
    named = [w.removeprefix("--file=") for w in words[1:] if w.startswith("--file=")]
    named += [after for word, after in itertools.pairwise(words) if word == "--file"]
    if not named and home:
        xdg = env.get("XDG_CONFIG_HOME") or f"{home}/.config"
        named = [f"{home}/.git-credentials", f"{xdg}/git/credentials"]
    paths = [Path(home + name[1:] if name.startswith("~/") else name) for name in named]
    return [path for path in paths if path.is_absolute() and path.is_file()]


def env_without_token(env: Mapping[str, str], token: str) -> dict[str, str]:
    """The parent environment for an agent or a setup: no runner credential, no token.

    The runner's credentials by name, and any variable holding the token under
    another name (``MY_TOKEN: ${{ github.token }}``): no config can keep one
    (``core/runner_credentials.py``; ``pass_env`` cannot either).
    """
    return without_runner_credentials(env, token)


def warn_persisted_token(cwd: Path, env: Mapping[str, str], warn: Say) -> None:
    """Warn when the checkout ``cwd`` is in keeps a token on disk that the agent could read.

    For the CLI, which hides nothing: ``passk run`` in CI (a shard job) runs the
    pull request's agent from a checkout that ``actions/checkout`` may have
    left its token in (the action hides it: :func:`credentials_hidden`).
    """
    try:
        found = stored_credentials(GitRepo.discover(cwd), env)
    except GitError:
        return  # not in a git checkout, or no git: nothing persisted for one
    if found:
        warn(
            f"the checkout's git config holds a token that agents can read: {describe(found)} "
            f"(the passk CLI does not hide it); {FIX}"
        )


def describe(credentials: list[StoredCredential]) -> str:
    """``KEY in FILE``, joined: what a log line names."""
    return ", ".join(f"{c.what} in {c.file}" for c in credentials)


@contextlib.contextmanager
def credentials_hidden(
    repo: GitRepo,
    users: AgentUser | tuple[AgentUser | None, ...] | None,
    env: Mapping[str, str],
    *,
    warn: Say,
    note: Say,
) -> Iterator[list[StoredCredential]]:
    """Inside, no agent can read a credential persisted for this checkout, if that is possible.

    ``users`` are the agent users (each side's; None: agents are passk's own
    user, so only ``warn`` says what they can read); ``note`` says what was
    hidden.
    """
    found = stored_credentials(repo, env)
    if not found:
        yield found
        return
    every = users if isinstance(users, tuple) else (users,)
    user = None if None in every else every[0]
    if user is None:
        warn(
            f"the checkout's git config holds a token that agents can read: {describe(found)} "
            f"(they run as passk's own user, so passk cannot hide it); {FIX}"
        )
        yield found
        return
    with contextlib.ExitStack() as stack:
        for target in _targets(found, repo.git_dirs()):
            try:
                stack.enter_context(_unreadable_to(target, every))
            except OSError as exc:
                # Fail closed: no agent runs while the token is within its reach.
                raise UsageError(
                    f"cannot make it unreadable to the agent user {user.name}, and it holds "
                    f"a token ({describe(found)}): {exc.strerror or exc}",
                    where=str(target),
                    hint=FIX,
                ) from exc
        note(
            f"the checkout's git config holds a token: {describe(found)}; it is unreadable to "
            f"the agent user {user.name} while agents run (so is the git directory, if it "
            f"is there), and agents get no git metadata of the checkout; {FIX}"
        )
        yield found


def _targets(found: list[StoredCredential], git_dirs: tuple[Path, ...]) -> list[Path]:
    """What to lock: the git directory holding a credential file, or the file itself."""
    targets: list[Path] = []
    for credential in found:
        real = Path(os.path.realpath(credential.file))
        holder = next((d for d in git_dirs if real.is_relative_to(d)), real)
        if holder not in targets:
            targets.append(holder)
    return targets


@contextlib.contextmanager
def _unreadable_to(path: Path, users: tuple[AgentUser | None, ...]) -> Iterator[None]:
    """``path`` (a file or directory) with no permission for group and others; restored after.

    Changed and restored through one descriptor opened without following a
    symlink, so what is restored is what was locked, even if it is renamed
    meanwhile.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        before = os.fstat(fd)
        if before.st_uid in {user.uid for user in users if user is not None}:
            os.fchown(fd, os.geteuid(), os.getegid())
        os.fchmod(fd, stat.S_IMODE(before.st_mode) & 0o700)
        try:
            yield
        finally:
            os.fchown(fd, before.st_uid, before.st_gid)
            os.fchmod(fd, stat.S_IMODE(before.st_mode))
    finally:
        os.close(fd)
