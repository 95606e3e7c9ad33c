"""Deterministic, balanced assignment of dataset rows to shards.

``passk run --shard I/N`` runs one of N slices of the dataset so a CI matrix
can spread a long run over N machines; ``passk merge`` joins the slices back.
The assignment must be the same on every machine and must not move rows
between shards when the file is merely re-ordered or re-formatted, so it
depends on the row ids alone: rows are sorted by ``sha256(id)`` and dealt
round-robin.  Hashing spreads neighbouring ids (``r-001``, ``r-002``, …, often
similar in difficulty and latency) across shards; dealing round-robin makes
shard sizes differ by at most one.  Adding a row may move other rows to
another shard; that is fine, since shards of one dataset version are merged
together and a merged run is pinned to the dataset digest.

Pure: no IO.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import UsageError
from .model import Row

_SHARD_TEXT = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True, slots=True, order=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise UsageError(
                f"shard {self.index}/{self.count} does not exist",
                where="--shard",
                hint="use I/N with 1 <= I <= N, e.g. --shard 2/4",
            )

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_json(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}


def parse_shard(text: str) -> Shard:
    """``"2/4"`` -> ``Shard(2, 4)``; anything else is a :class:`UsageError`."""
    match = _SHARD_TEXT.match(text)
    if match is None:
        raise UsageError(
            f"{text!r} is not a shard",
            where="--shard",
            hint="write I/N, e.g. --shard 2/4 for the second of four shards",
        )
    return Shard(int(match.group(1)), int(match.group(2)))


def _hash_key(row_id: str) -> tuple[bytes, str]:
    # The id breaks (astronomically unlikely) hash ties so the order is total.
    return hashlib.sha256(row_id.encode("utf-8")).digest(), row_id


def assign_shards(row_ids: Iterable[str], count: int) -> dict[str, int]:
    """Map each row id to its shard index (1-based) among ``count`` shards.

    Sort ids by sha256 of their UTF-8 bytes, then deal: the i-th id (from 0)
    goes to shard ``i mod count + 1``.  Sizes therefore differ by at most one,
    and the result depends on the set of ids, never on their order.
    """
    if count < 1:
        raise UsageError(f"cannot split rows into {count} shards", where="--shard")
    ordered = sorted(set(row_ids), key=_hash_key)
    return {row_id: i % count + 1 for i, row_id in enumerate(ordered)}


def shard_rows(rows: Sequence[Row], shard: Shard) -> tuple[Row, ...]:
    """The rows of ``shard``, in dataset order (so a shard run reads like the full run)."""
    assignment = assign_shards((r.id for r in rows), shard.count)
    return tuple(r for r in rows if assignment[r.id] == shard.index)


def shard_sizes(assignment: Mapping[str, int], count: int) -> tuple[int, ...]:
    """How many rows each shard 1..count holds."""
    sizes = [0] * count
    for index in assignment.values():
        sizes[index - 1] += 1
    return tuple(sizes)
