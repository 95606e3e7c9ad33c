"""What protects the gate, read from the pull request's base commit before any agent runs.

The head supplies the candidate agent and the rows to run; the base supplies
every setting (but the few the head's own run takes), the must-not-break
marks and labels, and the baseline artifact with its ratchet, so a pull
request cannot loosen the rules it is judged by.  An edit the head makes
that weakens the gate is a protected change.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from ..core.gate import ProtectedChange
from ..core.model import Dataset, Row, Run, dataset_digest
from ..core.notes import Note
from ..errors import ArtifactError, ConfigError, DatasetError
from ..inputs.config import Config, LoadedConfig, load_config, parse_config_bytes
from ..inputs.dataset import format_for, load_dataset, parse_dataset
from ..store.artifact import run_from_json
from .gitrepo import NOT_IN_TREE, REGULAR_MODES, GitRepo, short_sha
from .head_settings import settle
from .protect import ProtectedInputs, protected_changes


@dataclass(frozen=True)
class BaseAndHead:
    """What protects the gate, as the base commit and the head each have it."""

    base: ProtectedInputs
    head: ProtectedInputs
    base_run_where: str
    """How messages name the base's baseline artifact (``path@sha7``)."""


HEAD_COMMIT = "HEAD"
"""The head in the action: the checked-out commit (the pull request's merge commit)."""


@dataclass(frozen=True)
class BaseCommit:
    """The commit whose files protect the gate, and how messages name it.

    ``ref`` is the name a developer gave (``passk compare --base main``);
    the action has none and says "the pull request's base commit".
    """

    sha: str
    ref: str | None = None

    @property
    def at(self) -> str:
        """``@abc1234``, or ``@abc1234 (main)``: appended to a git path in a ``where``."""
        return f"@{short_sha(self.sha)}" + (f" ({self.ref})" if self.ref else "")

    @property
    def owner(self) -> str:
        return "the pull request's base commit" if self.ref is None else f"the base {self.ref}"

    @property
    def label(self) -> str:
        if self.ref is None:
            return f"the base commit {short_sha(self.sha)}"
        return f"the base {self.ref} ({short_sha(self.sha)})"


HeadTree = Callable[[GitRepo, Sequence[str]], str]
"""Given the protected git paths, the tree-ish whose entries stand for the head's copies."""


def checked_out_commit(repo: GitRepo, paths: Sequence[str]) -> str:
    """The action's head: what the checked-out commit holds (a ``.gitattributes`` that
    rewrites line endings in the checkout does not make its files an edit)."""
    return HEAD_COMMIT


def working_tree_copies(repo: GitRepo, paths: Sequence[str]) -> str:
    """A laptop's head: HEAD with the working tree's copies of ``paths``, uncommitted
    changes included, cleaned by git as ``git add`` would (what the developer would push)."""
    return repo.working_tree(paths)


def read_both_sides(
    repo: GitRepo,
    config_path: Path,
    base: BaseCommit,
    warn: Callable[[str], None],
    *,
    head_tree: HeadTree = checked_out_commit,
    head_objects: str | None = None,
) -> BaseAndHead:
    """Read the head from the checkout and the base from git objects of the base commit.

    Protected files are named by their git paths, never by following the
    checkout's symlinks, and the head's baseline artifact is compared as the
    blob of ``head_tree`` (the head commit in the action, so a ``.gitattributes``
    that rewrites line endings in the checkout is not an edit); a change of a
    protected file's type or mode is listed.  ``head_objects`` (a tree-ish,
    the two-job gate's merge) makes the head git objects too: its config and
    dataset are read from them, nothing from the checkout's files.
    """
    config_rel = repo.relative(config_path)
    head_config, head_dataset = _head_inputs(repo, config_path, head_objects, warn)
    base_config, base_dataset = _base_inputs(repo, config_path, base)
    at = base.at
    dataset_rel = repo.relative(base_config.dataset)
    artifact_rel = repo.relative(base_config.baseline.artifact)
    base_baseline = repo.show(base.sha, artifact_rel)
    if base_baseline is None:
        raise ArtifactError(
            f"{base.owner} has no baseline artifact",
            where=f"{artifact_rel}{at}",
            hint="record one: run the action with `mode: baseline` on the default branch, "
            "or run `passk baseline` and commit the artifact",
        )
    head_artifact_rel = repo.relative(head_config.baseline.artifact)
    protected = (config_rel, dataset_rel, artifact_rel)
    scorer_paths = _scorer_paths(repo, base.sha, base_config)
    head = (
        head_objects
        if head_objects is not None
        else head_tree(repo, tuple(dict.fromkeys((*protected, head_artifact_rel, *scorer_paths))))
    )
    head_artifact = repo.entry(head, head_artifact_rel)
    head_baseline = (
        repo.show(head, head_artifact_rel)
        if head_artifact is not None and head_artifact.mode in REGULAR_MODES
        else None
    )
    base_files = _kinds(repo, base.sha, protected, checkout=False)
    head_files = _kinds(repo, head, protected, checkout=head_objects is None)
    base_scorer = {rel: _object_id(repo, base.sha, rel) for rel in scorer_paths}
    head_scorer = {rel: _object_id(repo, head, rel) for rel in scorer_paths}
    return BaseAndHead(
        base=ProtectedInputs(base_config, base_dataset, base_baseline, base_files, base_scorer),
        head=ProtectedInputs(head_config, head_dataset, head_baseline, head_files, head_scorer),
        base_run_where=f"{artifact_rel}{at}",
    )


def _head_inputs(
    repo: GitRepo, config_path: Path, head_objects: str | None, warn: Callable[[str], None]
) -> tuple[Config, Dataset]:
    """The head's config (its warnings handed to ``warn``) and dataset: from the
    checkout, or from the git objects of ``head_objects``."""
    if head_objects is None:
        loaded = load_config(config_path)
    else:
        config_rel = repo.relative(config_path)
        loaded = _config_at(repo, head_objects, config_path, config_rel, "the pull request")
    for message in loaded.warnings:
        warn(message)
    config = loaded.config
    dataset = (
        load_dataset(config.dataset, config.must_not_break_tags, config.scoring)
        if head_objects is None
        else _dataset_at(repo, head_objects, config, "the pull request's merge")
    )
    return config, dataset


def _base_inputs(repo: GitRepo, config_path: Path, base: BaseCommit) -> tuple[Config, Dataset]:
    """The base commit's config and dataset, read from its git objects: the gate's settings."""
    at = base.at
    config_rel = repo.relative(config_path)
    base_bytes = repo.show(base.sha, config_rel)
    if base_bytes is None:
        raise ConfigError(
            f"{base.owner} has no {config_rel}",
            where=f"{config_rel}{at}",
            hint="merge the passk config and a recorded baseline into the base branch first; "
            "the gate trusts only the base's config",
        )
    try:
        # Anchored at the checkout's path, so relative paths name the same files.
        base_config = parse_config_bytes(base_bytes, config_path).config
    except ConfigError as exc:
        raise ConfigError(
            f"in {base.label}: {exc.message}",
            where=exc.where,
            hint="the gate reads its settings from the base branch; fix the config there first",
        ) from exc
    dataset_rel = repo.relative(base_config.dataset)
    dataset_bytes = repo.show(base.sha, dataset_rel)
    if dataset_bytes is None:
        raise DatasetError(
            "the base commit's config names a dataset that is not in the base commit",
            where=f"{dataset_rel}{at}",
            hint="commit the dataset to the base branch",
        )
    base_dataset = parse_dataset(
        dataset_bytes,
        f"{dataset_rel}{at}",
        format_for(base_config.dataset),
        base_config.must_not_break_tags,
        base_config.scoring,
    )
    return base_config, base_dataset


def _kinds(repo: GitRepo, tree: str, paths: Sequence[str], *, checkout: bool) -> dict[str, str]:
    """The git kind of each of ``paths`` that ``tree`` holds; with ``checkout``, a path
    the tree lacks but the working tree has is :data:`NOT_IN_TREE`."""
    kinds: dict[str, str] = {}
    for rel in paths:
        entry = repo.entry(tree, rel)
        if entry is not None:
            kinds[rel] = entry.kind
        elif checkout and os.path.lexists(repo.root / rel):
            kinds[rel] = NOT_IN_TREE
    return kinds


def _scorer_paths(repo: GitRepo, sha: str, config: Config) -> tuple[str, ...]:
    """The git paths of the base's scorer program: each word of ``scoring.command`` that
    names a file or folder of the base commit, taken from the config's folder."""
    if not config.scoring.by_scorer:
        return ()
    folder = PurePosixPath(repo.relative(config.path.parent))
    found: list[str] = []
    for word in config.scoring.command:
        if word.startswith("-") or PurePosixPath(word).is_absolute():
            continue
        rel = posixpath.normpath(str(folder / word))
        if rel.startswith("..") or rel == ".":
            continue
        if repo.entry(sha, rel) is not None:
            found.append(rel)
    return tuple(dict.fromkeys(found))


def _object_id(repo: GitRepo, treeish: str, rel: str) -> str:
    entry = repo.entry(treeish, rel)
    return "missing" if entry is None else f"{entry.mode} {entry.oid}"


def _config_at(
    repo: GitRepo, treeish: str, config_path: Path, config_rel: str, owner: str
) -> LoadedConfig:
    """The config as ``treeish`` has it, anchored at the checkout's path."""
    data = repo.show(treeish, config_rel)
    if data is None:
        raise ConfigError(
            f"{owner} has no {config_rel}",
            where=f"{config_rel}@{short_sha(treeish)}",
            hint="the pull request must keep the passk config",
        )
    return parse_config_bytes(data, config_path)


def _dataset_at(repo: GitRepo, treeish: str, config: Config, owner: str) -> Dataset:
    """The dataset ``config`` names, as ``treeish`` has it."""
    rel = repo.relative(config.dataset)
    data = repo.show(treeish, rel)
    if data is None:
        raise DatasetError(
            f"{owner} has no dataset at the path its config names",
            where=f"{rel}@{short_sha(treeish)}",
            hint="commit the dataset with the config",
        )
    return parse_dataset(
        data,
        f"{rel}@{short_sha(treeish)}",
        format_for(config.dataset),
        config.must_not_break_tags,
        config.scoring,
    )


def authoritative_dataset(
    base: ProtectedInputs,
    head: ProtectedInputs,
    allowed: bool,
    ratchet: Collection[str] = (),
) -> Dataset:
    """The rows to gate: the head's, protected by the base's marks and labels.

    A row is must-not-break when the head marks it, when the base did (by id,
    tags of the base config included), or when it carries a tag the base
    config protects.  A row keeps the base's expected decision and expected
    checks when it was must-not-break at base, when the base's ``ratchet``
    locks it, or, with the base's ``gate.block_on_any_regression`` on,
    whenever the base has it: the label that protects the gate is the one the
    base committed.  When the protected changes are allowed by label, a
    maintainer approved the head's edits, so the head's rows stand as written.
    """
    if allowed:
        return head.dataset
    base_rows = base.dataset.by_id()
    base_tags = set(base.config.must_not_break_tags)
    locked = set(ratchet)
    any_row = base.config.gate.block_on_any_regression
    rows: list[Row] = []
    for row in head.dataset.rows:
        old = base_rows.get(row.id)
        protected_at_base = old is not None and old.must_not_break
        mark = row.must_not_break or protected_at_base or not base_tags.isdisjoint(row.tags)
        keeps_label = old is not None and (protected_at_base or row.id in locked or any_row)
        if keeps_label and old is not None:
            row = replace(row, expected=old.expected, expected_checks=old.expected_checks)
        rows.append(replace(row, must_not_break=mark))
    return Dataset(rows=tuple(rows), source=head.dataset.source, digest=dataset_digest(rows))


def effective_config(base: Config, head: Config, allowed: bool = False) -> Config:
    """The base's config with the head's own candidate run's settings, in the base's bounds.

    ``head_settings.settle`` says which (the head's agent, its timeouts and
    concurrency at most the base's, its dataset); when the protected changes are
    allowed by label, the head's spend limits and scoring rules stand too: a
    maintainer approved the change, so the pull request that makes it is held
    to the rules it sets.  Every other setting is the base's.
    """
    return settle(base, head, allowed=allowed).config


@dataclass(frozen=True)
class Trusted:
    """The gate's inputs after the base commit has had its say."""

    sides: BaseAndHead
    baseline_run: Run
    changes: tuple[ProtectedChange, ...]
    allowed: bool
    config: Config
    dataset: Dataset
    settings_ignored: tuple[Note, ...] = ()
    """The pull request's config settings its run does not use, or caps: said before any
    agent runs, and kept with the result's warnings (the comment shows them)."""


def trust_base(
    repo: GitRepo,
    config_path: Path,
    base: BaseCommit,
    labels: Collection[str],
    warn: Callable[[str], None],
    *,
    head_tree: HeadTree = checked_out_commit,
    head_objects: str | None = None,
) -> Trusted:
    """Read both sides, list the protected changes, and build what the gate runs on.

    ``labels`` are the pull request's: the base config's ``gate.allow_label``
    among them allows the protected changes.  Shared by the action and
    ``passk compare --base``, so both gate the same rows by the same rules.
    """
    sides = read_both_sides(
        repo, config_path, base, warn, head_tree=head_tree, head_objects=head_objects
    )
    base_side, head_side = sides.base, sides.head
    try:
        baseline_run = run_from_json(json.loads(base_side.baseline or b""), sides.base_run_where)
    except ValueError as exc:
        raise ArtifactError(
            f"the base commit's baseline artifact is not JSON: {exc}",
            where=sides.base_run_where,
            hint="record it again with `passk baseline` on the base branch",
        ) from exc
    changes = protected_changes(base_side, head_side, ratchet=baseline_run.ratchet)
    allowed = bool(changes) and base_side.config.gate.allow_label in labels
    settled = settle(base_side.config, head_side.config, allowed=allowed)
    # Named as git names it: the same words on a laptop and in the action.
    named = repo.relative(config_path)
    return Trusted(
        sides=sides,
        baseline_run=baseline_run,
        changes=changes,
        allowed=allowed,
        config=settled.config,
        dataset=authoritative_dataset(base_side, head_side, allowed, baseline_run.ratchet),
        settings_ignored=tuple(replace(w, config=named) for w in settled.warnings),
    )
