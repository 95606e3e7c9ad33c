"""Join shard artifacts (``passk run --shard I/N``) into the run one machine would record.

Merging is where a sharded workflow could silently lose or double-count
rows, so it refuses anything that is not exactly one complete run: two
shards holding the same row, a dataset row no shard holds, a shard missing
from the set, or shards recorded on another dataset version, with other
settings, by another agent version or by another passk.  The merged run
lists rows in dataset order and attempts by row then number, as
:func:`passk_action.engine.measuring.measure_run` does, so it is equal to a
single-machine run up to timings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from ..core.model import Attempt, Dataset, RowRecord, Run
from ..core.shard import Shard, assign_shards
from ..errors import ArtifactError
from .document import run_from_json, shard_from_json
from .jsonfile import parse_json_file

_SHOWN_IDS = 10


@dataclass(frozen=True)
class ShardRun:
    """One artifact to merge, with where it came from (for messages)."""

    where: str
    run: Run
    shard: Shard | None


def read_shard_run(path: Path) -> ShardRun:
    doc = parse_json_file(path)
    run = run_from_json(doc, str(path))
    return ShardRun(where=str(path), run=run, shard=shard_from_json(doc, str(path)))


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_IDS])
    more = len(ids) - _SHOWN_IDS
    return shown + (f" and {more} more" if more > 0 else "")


def _check_same(parts: Sequence[ShardRun]) -> None:
    """Every part must come from the same dataset version, settings, agent and passk."""
    first = parts[0]
    checks = (
        (
            "dataset digest",
            lambda r: r.dataset_digest,
            "record every shard on the same dataset version",
        ),
        ("settings (k, scoring)", lambda r: r.settings, "record every shard with the same config"),
        (
            "agent version",
            lambda r: (r.agent.version, r.agent.description, r.agent.commit),
            "record every shard with the same agent, `--version` and commit",
        ),
        ("passk version", lambda r: r.tool_version, "install the same passk on every shard job"),
        ("ratchet", lambda r: r.ratchet, "record every shard from the same baseline"),
    )
    for name, key, hint in checks:
        for part in parts[1:]:
            if key(part.run) != key(first.run):
                raise ArtifactError(
                    f"its {name} differs from that of {first.where}",
                    where=part.where,
                    hint=hint,
                )


def _check_shards(parts: Sequence[ShardRun]) -> None:
    """The shard labels, when present, must be one complete set of I/N."""
    labelled = [p for p in parts if p.shard is not None]
    if not labelled:
        return
    if len(labelled) != len(parts):
        unlabelled = next(p for p in parts if p.shard is None)
        raise ArtifactError(
            "is a whole run, not a shard, but other inputs are shards",
            where=unlabelled.where,
            hint="merge only the artifacts of `passk run --shard I/N`",
        )
    count = labelled[0].shard.count if labelled[0].shard else 0
    seen: dict[int, str] = {}
    for part in labelled:
        assert part.shard is not None
        if part.shard.count != count:
            raise ArtifactError(
                f"is shard {part.shard} but {labelled[0].where} is one of {count} shards",
                where=part.where,
                hint="merge shards of one split only",
            )
        if part.shard.index in seen:
            raise ArtifactError(
                f"shard {part.shard} was given twice (also {seen[part.shard.index]})",
                where=part.where,
                hint="pass each shard's artifact once",
            )
        seen[part.shard.index] = part.where
    if len(seen) < count:
        # The first few missing, found without walking all of a count the file
        # declares (10**12 shards must not hang the merge).
        missing = islice((str(i) for i in range(1, count + 1) if i not in seen), _SHOWN_IDS)
        more = count - len(seen) - _SHOWN_IDS
        raise ArtifactError(
            f"shard(s) {', '.join(missing)}{f' and {more} more' if more > 0 else ''} "
            f"of {count} are missing",
            where="passk merge",
            hint="pass the artifact of every shard; rerun the failed shard jobs",
        )


def merge_runs(parts: Sequence[ShardRun], dataset: Dataset) -> Run:
    """The single run the parts add up to, or an :class:`ArtifactError` saying why not."""
    if not parts:
        raise ArtifactError("no artifacts to merge", where="passk merge", hint="pass shard files")
    _check_same(parts)
    first = parts[0].run
    if first.dataset_digest != dataset.digest:
        raise ArtifactError(
            "the shards were recorded on another version of the dataset than the config's",
            where=parts[0].where,
            hint=f"run the shards again on {dataset.source}, or use the config they were run with",
        )
    _check_shards(parts)

    owner: dict[str, str] = {}
    records: dict[str, RowRecord] = {}
    for part in parts:
        overlap = [r.id for r in part.run.rows if r.id in owner]
        if overlap:
            raise ArtifactError(
                f"{len(overlap)} row(s) are also in {owner[overlap[0]]}: {_ids(overlap)}",
                where=part.where,
                hint="each row must be in exactly one shard; pass each shard once",
            )
        for record in part.run.rows:
            owner[record.id] = part.where
            records[record.id] = record

    dataset_ids = [r.id for r in dataset.rows]
    missing = [row_id for row_id in dataset_ids if row_id not in owner]
    if missing:
        hint = "pass the artifact of every shard"
        labelled = [p.shard for p in parts if p.shard is not None]
        if labelled:
            assignment = assign_shards(dataset_ids, labelled[0].count)
            shards = sorted({assignment[i] for i in missing})
            hint = (
                f"they belong to shard(s) {', '.join(map(str, shards))} of "
                f"{labelled[0].count}; pass those artifacts or rerun those jobs"
            )
        raise ArtifactError(
            f"{len(missing)} dataset row(s) are in no shard: {_ids(missing)}",
            where="passk merge",
            hint=hint,
        )
    extra = sorted(set(owner) - set(dataset_ids))
    if extra:
        raise ArtifactError(
            f"{len(extra)} row(s) are not in the dataset: {_ids(extra)}",
            where=owner[extra[0]],
            hint="the shard was recorded on another dataset; run it again",
        )
    _check_assignment(parts, dataset_ids)

    order = {row_id: i for i, row_id in enumerate(dataset_ids)}
    attempts: list[Attempt] = [a for part in parts for a in part.run.attempts]
    attempts.sort(key=lambda a: (order[a.row_id], a.number))
    return Run(
        tool_version=first.tool_version,
        dataset_digest=first.dataset_digest,
        settings=first.settings,
        agent=first.agent,
        # The merged run started when its first shard did.
        created_at=min(p.run.created_at for p in parts),
        rows=tuple(records[row_id] for row_id in dataset_ids),
        attempts=tuple(attempts),
        ratchet=first.ratchet,
    )


def _check_assignment(parts: Sequence[ShardRun], dataset_ids: Sequence[str]) -> None:
    """A labelled shard must hold exactly the rows the split gives it.

    Catches shards recorded by a passk with another split, or edited by hand:
    the union would still be complete, but the runs were not the shards they
    claim to be.
    """
    labelled = [p for p in parts if p.shard is not None]
    if not labelled:
        return
    assignment = assign_shards(dataset_ids, labelled[0].shard.count if labelled[0].shard else 1)
    for part in labelled:
        assert part.shard is not None
        strays = [r.id for r in part.run.rows if assignment[r.id] != part.shard.index]
        if strays:
            raise ArtifactError(
                f"is labelled shard {part.shard} but holds {len(strays)} row(s) of other "
                f"shards: {_ids(strays)}",
                where=part.where,
                hint="record the shards again with the same passk and dataset",
            )
