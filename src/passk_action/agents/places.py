"""Nothing shared between two agent users: the places an environment names, kept or not.

The two sides of a comparison run as two users (``identity.py``), each with
a private ``HOME`` and ``TMPDIR``.  But the step's environment, and the
config's ``agent.env``, are passed to both: ``XDG_CACHE_HOME=/tmp/cache``,
``HF_HOME``, ``PIP_CACHE_DIR`` or a ``PYTHONPATH`` entry under ``/tmp``
names one place both users may write.  The candidate fills it first (a
cached answer, a model file, a ``.pth`` in a ``PYTHONUSERBASE``), and the
baseline's confirmation attempts read what the pull request left there.

The rule, whatever the variable is called (:func:`own_env`): a value that
is an absolute path, or a ``:``-separated list of them, names a place; a
place is **shared** when another agent user could change what is there:
write it, create it, or replace a folder or link on the way to it
(:func:`shared`).  A shared place never reaches an agent:

- a variable that names a per-user folder (:data:`OWN_FOLDERS`: ``HOME``,
  the temporary folders, the XDG folders and the tools' caches) gets a
  folder of the agent's own instead, inside its private ``TMPDIR``;
- a list (``PATH``, ``PYTHONPATH``) loses the shared entries, keeps the rest;
- any other variable is dropped.

A workflow that shares a place on purpose (a log both agents append to)
names its variables in ``PASSK_SHARED_ENV`` (:data:`SHARED_ENV`, read from
the step's environment only, never from a config): those are passed as they
are, except the per-user folders above, which are never shared.

A place no other agent user can change (a folder only root or the runner's
user may write, a file the step made in ``/tmp``, the agent's own folders)
is passed on as it is: a read-only model cache made by an earlier step still
reaches both agents.  Judged when each process starts, so what was missing
then and appears later was the work of someone who could create it, and
then it was already shared.  Not judged: values that are not absolute paths
(``file:///tmp/x``, ``--cache-dir /tmp/x``), what is *inside* a folder only
root may write (as the step made it), and ACLs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

Account = tuple[int, int]
"""An agent user as the kernel sees it: uid and primary gid (agents have no other group)."""

OWN_FOLDERS = frozenset(
    {
        "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR",
        "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE",
        "TRANSFORMERS_CACHE", "SENTENCE_TRANSFORMERS_HOME", "TORCH_HOME", "TIKTOKEN_CACHE_DIR",
        "NLTK_DATA", "MPLCONFIGDIR",
        "PIP_CACHE_DIR", "UV_CACHE_DIR", "POETRY_CACHE_DIR", "PYTHONPYCACHEPREFIX",
        "PYTHONUSERBASE",
        "npm_config_cache", "NPM_CONFIG_CACHE", "YARN_CACHE_FOLDER",
        "GOCACHE", "GOMODCACHE", "GOPATH", "CARGO_HOME",
    }
)  # fmt: skip
"""Variables that name a folder a tool keeps for one user: a shared one is replaced."""

TEMPORARY = frozenset({"HOME", "TMPDIR", "TMP", "TEMP", "TEMPDIR"})
"""Variables replaced by the agent's private folder itself when shared."""

SHARED_ENV = "PASSK_SHARED_ENV"
"""The step's variables (names, separated by spaces or commas) both agent users may share."""

OWN_SUBFOLDER = ".passk-own"
"""Where, inside the agent's private folder, a replaced per-user folder goes (one per name)."""

_MAX_LINKS = 40  # as the kernel's own limit on symlinks in one path


def own_env(
    env: Mapping[str, str],
    others: Sequence[Account],
    private: Path,
    on_purpose: frozenset[str] = frozenset(),
) -> tuple[dict[str, str], dict[str, str | None]]:
    """``env`` with no place ``others`` could change; and what changed (None: dropped).

    ``private`` is the agent's own folder (its ``TMPDIR``): shared per-user
    folders are replaced by folders under it.  ``on_purpose`` names the
    variables shared on purpose (:func:`shared_on_purpose`).  Without
    ``others`` (one user for both sides, or no agent user at all) nothing is
    changed.
    """
    if not others:
        return dict(env), {}
    kept: dict[str, str] = {}
    changed: dict[str, str | None] = {}
    for name, value in env.items():
        if name in on_purpose and name not in OWN_FOLDERS and name not in TEMPORARY:
            kept[name] = value
            continue
        new = _own_value(name, value, others, private)
        if new == value:
            kept[name] = value
            continue
        changed[name] = new
        if new is not None:
            kept[name] = new
    return kept, changed


def shared_on_purpose(env: Mapping[str, str]) -> frozenset[str]:
    """The variables ``PASSK_SHARED_ENV`` names in the step's environment ``env``."""
    return frozenset(env.get(SHARED_ENV, "").replace(",", " ").split())


def _own_value(name: str, value: str, others: Sequence[Account], private: Path) -> str | None:
    """``value`` as an agent may get it: itself, its own replacement, fewer entries, or None."""
    if name in TEMPORARY or name in OWN_FOLDERS:
        if not value.startswith("/") or not shared(value, others):
            return value
        return str(private) if name in TEMPORARY else str(private / OWN_SUBFOLDER / name)
    parts = value.split(":")
    places = [part for part in parts if part]
    if not places or not all(part.startswith("/") for part in places):
        return value  # not a place, or not only places: a word, a URL, relative paths
    if len(parts) == 1:
        return None if shared(value, others) else value
    own = [part for part in parts if not part or not shared(part, others)]
    if len(own) == len(parts):
        return value
    return ":".join(own) if any(own) else None


def shared(path: str, others: Sequence[Account]) -> bool:
    """Whether any of ``others`` could change what is at ``path``, or on the way to it.

    Walked from ``/`` one name at a time, links followed as the kernel
    follows them: a name is theirs to change when they own it, or may write
    the folder holding it (a sticky folder such as ``/tmp`` lets them
    replace only their own names); a missing name is theirs to create when
    they may write its folder; the place itself is shared when they may
    write it.  A device (``/dev/null``) is no place.  Anything that cannot
    be looked at counts as shared.
    """
    try:
        return _shared(path, others)
    except OSError:
        return True


def _shared(path: str, others: Sequence[Account]) -> bool:
    folder, here = "/", os.lstat("/")
    pending = [part for part in path.split("/") if part and part != "."]
    links = 0
    while pending:
        name = pending.pop(0)
        if name == "..":
            folder = os.path.dirname(folder)  # a real path: every link on it was resolved
            here = os.lstat(folder)
            continue
        child = os.path.join(folder, name)
        try:
            entry = os.lstat(child)
        except (FileNotFoundError, NotADirectoryError):
            return _writable(here, others)  # missing: theirs to make if the folder lets them
        if _owned(entry, others):
            return True
        if _writable(here, others) and not here.st_mode & stat.S_ISVTX:
            return True  # they may rename or replace it
        if stat.S_ISLNK(entry.st_mode):
            links += 1
            if links > _MAX_LINKS:
                return True
            target = os.readlink(child)
            if target.startswith("/"):
                folder, here = "/", os.lstat("/")
            pending = [part for part in target.split("/") if part and part != "."] + pending
            continue
        folder, here = child, entry
    if stat.S_ISCHR(here.st_mode) or stat.S_ISBLK(here.st_mode):
        return False
    return _writable(here, others)


def _owned(entry: os.stat_result, others: Sequence[Account]) -> bool:
    return any(entry.st_uid == uid for uid, _ in others)


def _writable(entry: os.stat_result, others: Sequence[Account]) -> bool:
    """Whether one of ``others`` may write it (its owner may always: it can chmod)."""
    for uid, gid in others:
        if entry.st_uid == uid:
            return True
        bit = stat.S_IWGRP if entry.st_gid == gid else stat.S_IWOTH
        if entry.st_mode & bit:
            return True
    return False
