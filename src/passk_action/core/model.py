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
    MEASURE = "measure"
    """A baseline's extra attempts at a gated row, recorded with it (``measure``)."""


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


ExpectedChecks = tuple[tuple[str, Json], ...]
"""A row's expected intermediate checks: (name, value) in the dataset's order.  A value is a
string, or any JSON value (an ordered list of tool calls is one check)."""


def expected_json(expected: str | None) -> Json:
    """A row's expected decision as the dataset file states it.

    A structured decision is held as its canonical JSON text (see
    :func:`object_text`), so it reads back as the object; a label is itself;
    None (a task its environment scores) has no expected decision.
    """
    if expected is not None and is_object_text(expected):
        return json.loads(expected)
    return expected


def object_text(value: Mapping[str, Json]) -> str:
    """The canonical JSON text a structured decision (a JSON object) is held as."""
    return canonical_json(value).decode("utf-8")


def is_object_text(text: str) -> bool:
    """Whether ``text`` is the canonical JSON text of an object (a structured decision).

    Decisions and labels are held as text; one that is exactly the canonical
    text of an object stands for that object, in memory and in artifacts.
    """
    if not text.startswith("{") or not text.endswith("}"):
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(value, dict):
        return False
    try:
        return object_text(value) == text
    except (ValueError, RecursionError):
        return False


@dataclass(frozen=True, slots=True)
class Row:
    """One labeled dataset row.

    ``expected`` is a label, a structured decision's canonical JSON text
    (:func:`object_text`), or None for a task its environment scores
    (``scoring.by: environment``).  ``expected_checks`` are the intermediate
    checks the row expects, in the dataset's order.  ``must_not_break`` is the
    *effective* mark: the row's own flag, or one of its tags listed under
    ``must_not_break.tags`` in the config.  ``marked`` keeps the row's own
    flag so the dataset digest depends on the file only.
    """

    id: str
    input: Json
    expected: str | None
    tags: tuple[str, ...] = ()
    must_not_break: bool = False
    marked: bool = False
    cluster: str | None = None
    line: int = 0
    expected_checks: ExpectedChecks = ()

    def content(self) -> dict[str, Json]:
        """The row as the dataset file states it: what the dataset digest covers.

        ``expected`` and ``expected_checks`` appear only when the row has them,
        so a dataset of labels keeps the digest it always had.
        """
        out: dict[str, Json] = {"id": self.id, "input": self.input}
        if self.expected is not None:
            out["expected"] = expected_json(self.expected)
        if self.expected_checks:
            out["expected_checks"] = dict(self.expected_checks)
        out["tags"] = list(self.tags)
        out["must_not_break"] = self.marked
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


NORMALIZE_RULES = ("strip", "casefold")
EXACT, SET, ANY_OF = "exact", "set", "any_of"
COMPARISONS = (EXACT, SET, ANY_OF)
BY_EXPECTED, BY_ENVIRONMENT, BY_COMMAND = "expected", "environment", "command"
CHECKS_REPORTED, CHECKS_REQUIRED = "reported", "required"
DEFAULT_THRESHOLD = 1.0
DEFAULT_SCORER_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class FieldRule:
    """How one field of a structured decision is compared with the row's expected value.

    ``compare``: ``exact`` (the default), ``set`` (a list compared as a set)
    or ``any_of`` (the row lists the values that count as right).
    ``normalize`` applies to strings (inside lists too); None takes the
    scoring's own ``normalize``.  ``tolerance`` (absolute) and
    ``relative_tolerance`` (a share of the expected value) make a number
    right when it is that close; with both, either is enough.
    """

    name: str
    compare: str = EXACT
    normalize: tuple[str, ...] | None = None
    tolerance: float | None = None
    relative_tolerance: float | None = None

    @property
    def numeric(self) -> bool:
        return self.tolerance is not None or self.relative_tolerance is not None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"compare": self.compare}
        if self.normalize is not None:
            out["normalize"] = list(self.normalize)
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance
        if self.relative_tolerance is not None:
            out["relative_tolerance"] = self.relative_tolerance
        return out


@dataclass(frozen=True, slots=True)
class Extractor:
    """How the decision is read out of what the agent answered: exactly one way.

    ``json_pointer`` (RFC 6901) points into a JSON answer (an object, or text
    holding one); ``regex`` has one group, whose first match in a text answer
    is the decision.
    """

    json_pointer: str | None = None
    regex: str | None = None

    def to_json(self) -> dict[str, Json]:
        if self.json_pointer is not None:
            return {"json_pointer": self.json_pointer}
        return {"regex": self.regex}

    def describe(self) -> str:
        """``scoring.extract.regex 'DECISION: (\\w+)'``, for messages."""
        if self.json_pointer is not None:
            return f"scoring.extract.json_pointer '{self.json_pointer}'"
        return f"scoring.extract.regex '{self.regex}'"


@dataclass(frozen=True, slots=True)
class Scoring:
    """How an answer becomes a decision, and how a decision is compared with the expected one.

    Every rule is exact and deterministic: no model is asked.

    - ``normalize``: rules applied to both sides of a label (and, by default,
      to every string field) before an exact comparison: ``strip``
      (surrounding whitespace) and ``casefold``.  Empty: plain exact match.
    - ``fields``: a structured decision (a JSON object) and each field's rule;
      a decision is right when every field the row expects matches.
    - ``extract``: how the decision is read out of the answer (None: the
      answer's ``decision`` is the decision).
    - ``checks``: ``required`` makes a decision right only when the row's
      expected checks are right too; ``reported`` (default) only reports them.
    - ``by``: ``environment`` when the agent reports each task's outcome
      (``correct``, or a ``score`` at or above ``threshold``) and rows carry no
      expected decision; ``command`` when a scorer program judges each answer
      against the row's expected value; ``expected`` (default) otherwise.
    - ``command``: the scorer program (``by: command``, or ``by: environment``
      judged outside the agent): run from the base commit, never the agent's
      own claim.  ``judge_repeats`` asks it that many times per answer (a
      judge that is not deterministic); ``timeout_s`` bounds each verdict.
    """

    normalize: tuple[str, ...] = ()
    fields: tuple[FieldRule, ...] = ()
    extract: Extractor | None = None
    checks: str = CHECKS_REPORTED
    by: str = BY_EXPECTED
    threshold: float = DEFAULT_THRESHOLD
    command: tuple[str, ...] = ()
    judge_repeats: int = 1
    timeout_s: float = DEFAULT_SCORER_TIMEOUT_S

    @property
    def by_scorer(self) -> bool:
        """A scorer program, not the agent, says whether each answer is right."""
        return bool(self.command)

    @property
    def by_outcome(self) -> bool:
        """Decisions are outcomes (``success``/``failure``): the environment's or a scorer's."""
        return self.by_environment or self.by_scorer

    @property
    def structured(self) -> bool:
        """Decisions are JSON objects whose fields ``fields`` names."""
        return bool(self.fields)

    @property
    def by_environment(self) -> bool:
        return self.by == BY_ENVIRONMENT

    @property
    def checks_required(self) -> bool:
        return self.checks == CHECKS_REQUIRED

    @property
    def plain(self) -> bool:
        """Judging is exact match of two labels after ``normalize`` (the fast path)."""
        return not self.fields and self.checks != CHECKS_REQUIRED and not self.by_scorer

    def field(self, name: str) -> FieldRule | None:
        return next((f for f in self.fields if f.name == name), None)

    def to_json(self) -> dict[str, Json]:
        """The rules as runs record them; keys beyond ``normalize`` only when set."""
        out: dict[str, Json] = {"match": "exact", "normalize": list(self.normalize)}
        if self.fields:
            out["fields"] = {f.name: f.to_json() for f in self.fields}
        if self.extract is not None:
            out["extract"] = self.extract.to_json()
        if self.checks != CHECKS_REPORTED:
            out["checks"] = self.checks
        if self.by != BY_EXPECTED:
            out["by"] = self.by
            out["threshold"] = self.threshold
        if self.command:
            out["command"] = list(self.command)
            out["judge_repeats"] = self.judge_repeats
            out["timeout_s"] = self.timeout_s
        return out


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


DURATION_UNKNOWN = "duration unknown"
"""How the warning of an attempt whose ``duration_s`` measures nothing begins.

An imported trial whose harness logged a latency that is no duration (NaN,
Infinity, -1 ms) keeps ``duration_s`` 0.0, which the artifact format needs,
and this warning, which says it is no time: latency figures leave it out
(:attr:`Attempt.timed`), where a 0 s latency would pass any latency limit.
"""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One answer of the scorer program about one attempt's answer (``core/scoring.py``).

    ``correct`` or ``score`` as the scorer said it; ``error`` a reason code
    when it gave no verdict (it crashed, hung, answered garbage or too much),
    with ``detail`` saying why; ``reason`` what it said about its verdict
    (a judge's rationale, kept so a flaky gate can be audited).
    """

    correct: bool | None = None
    score: float | None = None
    error: str | None = None
    detail: str | None = None
    reason: str | None = None
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Attempt:
    """One recorded execution of the agent on one row.

    Exactly one of ``decision`` and ``error`` is set.  An error attempt
    (crash, timeout, unparseable output) is never a decision.  ``decision``
    is what the scoring rules read from the answer: a label, a structured
    decision's canonical JSON text (:func:`object_text`), or the outcome
    (``success``/``failure``) of a task its environment scores.  ``answer``
    keeps what the agent answered when that is not the decision itself (a
    JSON value, a text an extractor read, an answer it could not read), and
    ``correct``/``score`` the outcome the agent reported, so a recorded run
    can be scored again under other rules (``core/scoring.py``).
    ``checks`` are the agent's intermediate checks in the order it reported them.
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
    answer: Json = None
    correct: bool | None = None
    score: float | None = None
    verdicts: tuple[Verdict, ...] = ()
    """What the scorer program said of this answer, once per ``judge_repeats``."""

    @property
    def timed(self) -> bool:
        """Whether ``duration_s`` measured the attempt (see :data:`DURATION_UNKNOWN`)."""
        warnings = self.warnings
        return not warnings or not any(w.startswith(DURATION_UNKNOWN) for w in warnings)

    @property
    def valid(self) -> bool:
        return self.decision is not None

    @property
    def answered(self) -> bool:
        """The agent answered, whether or not a decision could be read from the answer.

        An answer the rules could not read is an error attempt, but not a
        failure to run: it is never retried (asking again would hide how
        often the agent answers in a form nobody can read).
        """
        return (
            self.decision is not None
            or self.answer is not None
            or self.correct is not None
            or self.score is not None
        )


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
    ``expected`` and ``expected_checks`` are the row's, as :class:`Row` has them.
    """

    id: str
    input_digest: str
    expected: str | None
    must_not_break: bool
    tags: tuple[str, ...] = ()
    cluster: str | None = None
    expected_checks: ExpectedChecks = ()


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
