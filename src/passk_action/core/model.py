"""The data passk reasons about: rows, attempts, runs, and row classes.

Everything here is a frozen dataclass (or an enum) built once at load time by
an edge (dataset loader, runner, artifact store) and then only read.  No IO.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from types import MappingProxyType
from typing import Any

Json = Any
"""Any JSON value (dict, list, str, int, float, bool, None)."""


class RowClass(str, Enum):
    """How a row behaved over its attempts (see DEVELOPERS.md)."""

    STABLE_CORRECT = "stable-correct"
    STABLE_WRONG = "stable-wrong"
    FLIP = "flip"
    UNCLASSIFIED = "unclassified"


class Phase(str, Enum):
    """Why an attempt was made: the k main attempts, or a confirmation re-run."""

    MAIN = "main"
    CONFIRM = "confirm"


class Version(str, Enum):
    """Which version of the agent a run measured."""

    BASELINE = "baseline"
    CANDIDATE = "candidate"


def canonical_json(value: Json) -> bytes:
    """The byte form every digest is computed over: sorted keys, no spaces, UTF-8."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Row:
    """One labeled dataset row.

    ``must_not_break`` is the *effective* mark: the row's own flag, or one of
    its tags listed under ``must_not_break.tags`` in the config.  ``marked``
    keeps the row's own flag so the dataset digest depends on the file only.
    """

    id: str
    input: Json
    expected: str
    tags: tuple[str, ...] = ()
    must_not_break: bool = False
    marked: bool = False
    cluster: str | None = None
    line: int = 0

    def content(self) -> dict[str, Json]:
        """The row as the dataset file states it: what the dataset digest covers."""
        out: dict[str, Json] = {
            "id": self.id,
            "input": self.input,
            "expected": self.expected,
            "tags": list(self.tags),
            "must_not_break": self.marked,
        }
        if self.cluster is not None:
            out["cluster"] = self.cluster
        return out

    @property
    def input_digest(self) -> str:
        """Digest of what the agent sees (id and input).

        Decisions depend on this alone, so recorded attempts stay valid when
        only the label, tags or must-not-break mark of a row change.
        """
        return sha256_hex(canonical_json({"id": self.id, "input": self.input}))


@dataclass(frozen=True, slots=True)
class Dataset:
    rows: tuple[Row, ...]
    source: str
    digest: str

    def by_id(self) -> dict[str, Row]:
        return {row.id: row for row in self.rows}


def dataset_digest(rows: Iterable[Row]) -> str:
    """sha256 over the canonical JSON array of rows sorted by id.

    Sorting makes the digest independent of row order and of the file format
    (the same rows in JSONL, YAML or CSV have the same digest).
    """
    ordered = sorted(rows, key=lambda r: r.id)
    return sha256_hex(canonical_json([r.content() for r in ordered]))


@dataclass(frozen=True, slots=True)
class Scoring:
    """How a decision is compared with the expected label.

    ``normalize`` is an ordered list of rules applied to both sides before an
    exact comparison: ``strip`` (surrounding whitespace) and ``casefold``.
    An empty list is plain exact match, the default.
    """

    normalize: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Json]:
        return {"match": "exact", "normalize": list(self.normalize)}


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """What pins an artifact besides the dataset: k and scoring."""

    k: int
    scoring: Scoring = field(default_factory=Scoring)

    def to_json(self) -> dict[str, Json]:
        return {"k": self.k, "scoring": self.scoring.to_json()}


@dataclass(frozen=True, slots=True)
class Usage:
    """What one attempt spent, as the agent (or an imported log) reported it.

    Every field is optional: an agent may report tokens only, a cost only, or
    both.  ``priced`` marks a ``cost_usd`` that passk computed from the
    config's ``pricing`` because the agent reported tokens but no cost.
    ``extra`` keeps any other numeric counters the agent reported (e.g.
    ``cached_input_tokens``), by name, in reported order.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    priced: bool = False
    extra: tuple[tuple[str, float], ...] = ()

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens; None when the agent reported neither."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One recorded execution of the agent on one row.

    Exactly one of ``decision`` and ``error`` is set.  An error attempt
    (crash, timeout, unparseable output) is never a decision.  ``checks`` are
    the agent's intermediate checks in the order it reported them.
    ``retries`` keeps the reasons of earlier errored tries of this same
    attempt, so retrying never loses what happened.  ``usage`` is what the
    attempt spent, when reported; ``warnings`` note what passk ignored in an
    otherwise valid answer (a malformed ``usage``), never a lost decision.
    """

    row_id: str
    number: int
    phase: Phase
    decision: str | None
    checks: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    detail: str | None = None
    duration_s: float = 0.0
    retries: tuple[str, ...] = ()
    usage: Usage | None = None
    warnings: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return self.decision is not None


_STDERR_LEAD = re.compile(r"^stderr \(last \d+ chars\): ")


def split_error_detail(detail: str | None) -> tuple[str, str]:
    """An error attempt's detail as (its one-line reason, the stderr tail after it).

    Runners write ``reason`` and, when the agent wrote to stderr, a newline and
    ``stderr (last N chars): <tail>`` (``agents/runner.py: with_stderr``).
    """
    if not detail:
        return "", ""
    reason, _, rest = detail.partition("\n")
    return reason.strip(), _STDERR_LEAD.sub("", rest, count=1)


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """Which agent produced a run, as far as passk can tell."""

    version: Version
    description: str
    commit: str | None = None
    dirty: bool = False
    """True when the working tree had uncommitted changes to tracked files."""
    fingerprint: tuple[tuple[str, str], ...] | None = None
    """Git path -> object id of each path the config names as what the agent runs.

    None when the config names none (or passk could not read git).  A path
    missing from the tree maps to ``"missing"``.
    """

    def label(self) -> str:
        """``abc1234`` or ``abc1234 (+ uncommitted changes)``; empty without a commit."""
        if not self.commit:
            return "uncommitted changes" if self.dirty else ""
        return self.commit[:7] + (" (+ uncommitted changes)" if self.dirty else "")


@dataclass(frozen=True, slots=True)
class RowRecord:
    """What a run recorded about a row when it ran: enough to gate without the dataset.

    ``cluster`` is the dataset row's cluster (None: a row of its own), kept so
    a report of the artifact alone can compute clustered error bars.
    """

    id: str
    input_digest: str
    expected: str
    must_not_break: bool
    tags: tuple[str, ...] = ()
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class ImportInfo:
    """How a run imported from another harness was made (absent for runs passk recorded).

    ``errors`` names whose convention scored the trials that errored:
    ``"harness"`` reproduces the harness's own headline numbers (``convention``
    says how, in one sentence), ``"passk"`` keeps every errored trial as an
    error attempt, never a decision.  ``left_out`` counts what the import did
    not carry over, by reason, so a report can say it.
    """

    source: str
    errors: str
    convention: str
    left_out: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Json]:
        return {
            "source": self.source,
            "errors": self.errors,
            "convention": self.convention,
            "left_out": {reason: count for reason, count in self.left_out},
        }


@dataclass(frozen=True)
class Run:
    """A recorded run of one agent version over a dataset: the artifact's content."""

    tool_version: str
    dataset_digest: str
    settings: EvalSettings
    agent: AgentInfo
    created_at: str
    rows: tuple[RowRecord, ...]
    attempts: tuple[Attempt, ...]
    ratchet: tuple[str, ...] = ()
    """Must-not-break row ids locked stable-correct by this or an earlier baseline."""
    imported: ImportInfo | None = None
    """Set when ``passk import`` made the run from another harness's results."""

    def attempts_by_row(self) -> Mapping[str, Sequence[Attempt]]:
        """Every row's attempts in attempt order; a row with none maps to ().

        Computed once per run and shared: the gate, the statistics and every
        renderer read it, and a run holds up to millions of attempts.
        """
        return self._attempts_by_row

    @cached_property
    def _attempts_by_row(self) -> Mapping[str, Sequence[Attempt]]:
        grouped: dict[str, tuple[Attempt, ...]] = dict.fromkeys((r.id for r in self.rows), ())
        grouped.update(group_attempts(self.attempts))
        return MappingProxyType(grouped)


def group_attempts(attempts: Iterable[Attempt]) -> dict[str, tuple[Attempt, ...]]:
    """Attempts grouped by row, each group in attempt order."""
    grouped: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        grouped.setdefault(attempt.row_id, []).append(attempt)
    # Already in order almost always: sorting a sorted list is one linear pass.
    return {row: tuple(sorted(group, key=_number)) for row, group in grouped.items()}


def _number(attempt: Attempt) -> int:
    return attempt.number
