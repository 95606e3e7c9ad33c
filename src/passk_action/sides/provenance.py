"""What a run records about the code it measured: the commit, a dirty tree, a fingerprint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import GitError
from ..inputs.config import Config
from .freshness import fingerprint_paths
from .gitrepo import GitRepo


@dataclass(frozen=True)
class Provenance:
    """What a run records about the code it measured."""

    commit: str | None = None
    dirty: bool = False
    fingerprint: tuple[tuple[str, str], ...] | None = None


def working_tree_provenance(start: Path, config: Config) -> Provenance:
    """HEAD, whether tracked files changed, and the fingerprint of the working tree's files.

    Outside a git repository (or without git) nothing can be told: all unknown.
    """
    try:
        repo = GitRepo.discover(start)
        paths = fingerprint_paths(repo, config)
        commit = repo.head_sha()
        fingerprint = repo.fingerprint(repo.working_tree(paths), paths) if paths else None
        return Provenance(commit=commit, dirty=repo.is_dirty(), fingerprint=fingerprint)
    except GitError:
        return Provenance()


def commit_provenance(repo: GitRepo, sha: str, config: Config) -> Provenance:
    """Commit ``sha`` and the fingerprint of its files (a checkout of exactly that commit)."""
    paths = fingerprint_paths(repo, config)
    return Provenance(commit=sha, fingerprint=repo.fingerprint(sha, paths) if paths else None)
