"""The fast reader: a run or result in passk's own layout, read line by line.

``json.load`` of a 100,000-row x k=5 result holds ~1.3 GiB of dicts before a
single Attempt exists.  A file passk wrote has one row / attempt per line
(``codec.dump_document``), so each line can be parsed, validated and turned
into an Attempt on its own, and the dicts dropped at once.  The layout is
checked strictly; anything unexpected (another tool re-indented the file,
an invalid value, an odd field, an escaped surrogate) raises NotCanonical
and the caller reads the file again as a whole document, so an accepted
file gives exactly what the whole-document path gives, and a bad file gets
exactly its error message.  The value rules are the codec's and
``core/values.py``'s, the same as the whole path's.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, TypeVar

from ..core import values
from ..core.model import Attempt, RowRecord, Run, Usage, object_text
from ..errors import ArtifactError
from ..files import check_size
from .codec import (
    ATTEMPT_KEYS,
    DIGEST_PREFIX,
    DURATION_DIGITS,
    PHASES,
    ROW_KEYS,
    RUN_KIND,
    attempt_from_json,
    row_from_json,
    usage_from_json,
)
from .document import assemble_run, check_version, validate_header
from .jsonfile import SURROGATE_ESCAPE

_T = TypeVar("_T")


class NotCanonical(Exception):
    """Not in our layout, or something in it needs the whole-document path."""


_raw_decode = json.JSONDecoder().raw_decode
_JSON_SPACE = " \t\n\r"
_ABSENT: Any = object()

ItemSink = Callable[[Any, int], object]
"""Receives each item of a one-item-per-line list with its index."""
TextSink = Callable[[str, int, int], int]
"""Takes an item as text (line, start, index): where the item ends, or -1 to decline."""


def decode_at(line: str, start: int) -> tuple[Any, int]:
    try:
        return _raw_decode(line, start)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        raise NotCanonical from None


def comma_follows(line: str, end: int) -> bool:
    """Whether ``line`` continues with a comma after ``end``; nothing else may follow."""
    tail = line[end:]
    if tail == ",\n" or tail == ",":
        return True
    if tail == "\n" or tail == "":
        return False
    raise NotCanonical


def _refuse_surrogates(line: str) -> None:
    """An escaped surrogate may be a lone one: the whole-document path names it."""
    if "\\u" in line and SURROGATE_ESCAPE.search(line):
        raise NotCanonical


class CanonicalLines:
    """The lines of an open text file, read once from the start."""

    def __init__(self, handle: IO[str]):
        self.handle = handle

    def take(self) -> str:
        line = self.handle.readline()
        if not line:
            raise NotCanonical  # the document ended early
        _refuse_surrogates(line)
        return line

    def expect(self, text: str) -> bool:
        """Take a closing line ``text`` (with an optional comma); whether a comma followed."""
        line = self.take()
        if not line.startswith(text):
            raise NotCanonical
        return comma_follows(line, len(text))

    def finish(self) -> None:
        """Only JSON whitespace may follow the document (``json.loads`` allows no more)."""
        for line in self.handle:
            if line.strip(_JSON_SPACE):
                raise NotCanonical

    def member(self, pad: int) -> tuple[str, str, int]:
        """The next member line ``<pad spaces>"key": value``: key, line, value start."""
        line = self.take()
        if not line.startswith(" " * pad):
            raise NotCanonical
        key, end = decode_at(line, pad)
        if not isinstance(key, str) or not line.startswith(": ", end):
            raise NotCanonical
        return key, line, end + 2

    def items(self, pad: int, sink: ItemSink, text_sink: TextSink | None = None) -> bool:
        """The items of a list opened by a member at ``pad``, one per line at ``pad + 2``.

        Each item goes to ``text_sink`` as text first, when there is one (-1:
        it declined), else it is decoded and goes to ``sink``.  Returns
        whether a comma follows the closing bracket (another member).
        """
        handle, item_pad = self.handle, pad + 2
        spaces, close = " " * item_pad, " " * pad + "]"
        index, last = 0, False
        for line in handle:
            if line.startswith(spaces):
                if last:
                    raise NotCanonical  # a missing comma: not JSON
                _refuse_surrogates(line)
                end = -1 if text_sink is None else text_sink(line, item_pad, index)
                if end < 0:
                    try:
                        item, end = _raw_decode(line, item_pad)
                    except (ValueError, RecursionError):
                        raise NotCanonical from None
                    sink(item, index)
                tail = line[end:]
                if tail == ",\n":
                    pass
                elif tail == "\n" or tail == "":
                    last = True
                else:
                    raise NotCanonical
                index += 1
            elif line.startswith(close) and (last or index == 0):
                return comma_follows(line, len(close))
            else:
                raise NotCanonical
        raise NotCanonical


def stream_canonical(path: Path, read: Callable[[CanonicalLines, str], _T]) -> _T | None:
    """``read`` over the lines of ``path``; None when the whole-document path must decide.

    The cyclic garbage collector is paused meanwhile (see :func:`gc_paused`).
    """
    if not check_size(path):
        return None  # a device, a FIFO, a file too large: the bounded reader says which
    with gc_paused():
        try:
            with path.open(encoding="utf-8-sig") as handle:
                lines = CanonicalLines(handle)
                value = read(lines, str(path))
                lines.finish()
                return value
        except (NotCanonical, ArtifactError, OSError, UnicodeDecodeError):
            return None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, then restore it as it was.

    Reading and analysing a large artifact creates millions of objects, none
    of them garbage, and the collector would scan them all again and again
    (a third of the reading time).  Reference counting still frees
    everything dropped meanwhile.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Interner:
    """One copy of each repeated string and check list across everything read.

    Row ids repeat in every attempt of both runs, decisions and check names
    and values in nearly every attempt: sharing them keeps a large artifact
    small in memory, and makes comparisons of equal check lists cheap.
    """

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.checks: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
        self.tags: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.row_lines: dict[str, RowRecord] = {}

    def string(self, value: str) -> str:
        return self.strings.setdefault(value, value)

    def shared_attempt(self, attempt: Attempt, ids: Mapping[str, str]) -> Attempt:
        """``attempt`` (built the careful way) sharing its row id, decision and checks."""
        checks = self.checks.setdefault(attempt.checks, attempt.checks)
        decision = None if attempt.decision is None else self.string(attempt.decision)
        row_id = ids.get(attempt.row_id, attempt.row_id)
        return replace(attempt, row_id=row_id, decision=decision, checks=checks)

    def tag_tuple(self, tags: list[str]) -> tuple[str, ...]:
        key = tuple(tags)
        return self.tags.setdefault(key, tuple(self.string(t) for t in key))


def row_fast(doc: Any, interner: Interner) -> RowRecord | None:
    """:func:`row_from_json` for a row that is plainly valid; None for any doubt.

    Plain: a label or no ``expected`` (a task its environment scores), no
    ``expected_checks``; an expected object goes the careful way.
    """
    if type(doc) is not dict or not doc.keys() <= _FAST_ROW_KEYS:
        return None
    row_id, digest, expected = doc.get("id"), doc.get("input_digest"), doc.get("expected")
    mnb, tags = doc.get("must_not_break"), doc.get("tags", _ABSENT)
    cluster = doc.get("cluster")
    if type(row_id) is not str or not row_id:
        return None
    if expected is not None and (type(expected) is not str or not expected):
        return None
    if type(digest) is not str or len(digest) != 71 or not digest.startswith(DIGEST_PREFIX):
        return None
    if type(mnb) is not bool or (cluster is not None and (type(cluster) is not str or not cluster)):
        return None
    if tags is _ABSENT:
        tag_tuple: tuple[str, ...] = ()
    elif type(tags) is list and all(type(t) is str for t in tags):
        tag_tuple = interner.tag_tuple(tags)
    else:
        return None
    string = interner.string
    shared = None if cluster is None else string(cluster)
    label = None if expected is None else string(expected)
    return RowRecord(string(row_id), string(digest), label, mnb, tag_tuple, shared)


_FAST_ROW_KEYS = ROW_KEYS - {"expected_checks"}


def attempt_fast(doc: Any, ids: Mapping[str, str], interner: Interner) -> Attempt | None:
    """:func:`attempt_from_json` for a plainly valid attempt of a known row; None for any doubt.

    Runs a million times for a large artifact, hence the plain type checks.
    """
    if type(doc) is not dict or not doc.keys() <= _FASTATTEMPT_KEYS:
        return None
    row, n, phase = doc.get("row"), doc.get("n"), doc.get("phase")
    if type(row) is not str or type(n) is not int or n < 1 or type(phase) is not str:
        return None
    row_id, phase_value = ids.get(row), PHASES.get(phase)
    if row_id is None or phase_value is None:
        return None
    decision, error = doc.get("decision"), doc.get("error")
    strings = interner.strings
    if decision is not None:
        if error is not None:
            return None
        if type(decision) is dict:
            try:
                decision = object_text(decision)
            except (ValueError, RecursionError):
                return None
        elif type(decision) is not str or not decision:
            return None
        decision = strings.setdefault(decision, decision)
    elif type(error) is not str or not error:
        return None
    else:
        error = strings.setdefault(error, error)
    correct = doc.get("correct")
    if correct is not None and type(correct) is not bool:
        return None
    checks = doc.get("checks", _ABSENT)
    if checks is _ABSENT:
        pairs: tuple[tuple[str, str], ...] = ()
    elif type(checks) is dict:
        key = tuple(checks.items())
        try:
            found = interner.checks.get(key)
        except TypeError:  # a list or object among the values: not hashable, not valid
            return None
        if found is None:
            if not all(type(v) is str for _, v in key):
                return None
            found = interner.checks[key] = tuple(
                (strings.setdefault(name, name), strings.setdefault(value, value))
                for name, value in key
            )
        pairs = found
    else:
        return None
    detail = doc.get("detail")
    if detail is not None and type(detail) is not str:
        return None
    detail = detail or None  # as codec.attempt_from_json reads it
    duration = doc.get("duration_s", 0.0)
    if type(duration) is not float:
        return None  # ints go the careful way
    duration = values.seconds(duration)
    if duration is None:
        return None
    duration = round(duration, DURATION_DIGITS)
    raw_usage = doc.get("usage")
    usage = None
    if raw_usage is not None:
        try:
            usage = usage_from_json(raw_usage, "")
        except ArtifactError:
            return None
    return Attempt(
        row_id, n, phase_value, decision, pairs, error, detail, duration, (), usage,
        correct=correct,
    )  # fmt: skip


_FASTATTEMPT_KEYS = ATTEMPT_KEYS - {"retries", "warnings", "answer", "score", "verdicts"}
_ATTEMPT_HEAD = re.compile(r'\{"row":"([^"\\\x00-\x1f]*)","n":([1-9][0-9]{0,17}),')
_ATTEMPT_TAIL = re.compile(
    r'"duration_s":(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+))\}'
)
_ATTEMPT_USAGE = re.compile(
    r'"duration_s":(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)),"usage":'
)
_DURATION = '"duration_s":'
_OWN_KEYS = frozenset({"row", "n", "duration_s", "usage"})
_MIDDLES_KEPT = 10_000


class AttemptLines:
    """Attempts read straight from the text of their lines, skipping the JSON decoder.

    :func:`attempt_to_json` writes ``{"row":R,"n":N,<middle>"duration_s":D}``,
    or ``...,"duration_s":D,"usage":U}`` when the attempt reported a usage.
    Only R, N, D and U differ from attempt to attempt; the middle (phase,
    decision, checks, error) takes a handful of distinct values in a run.  A
    line is taken when R is a plain string (no escape), N a positive integer,
    D a JSON float, U (decoded on its own) a valid usage object that ends the
    line, and the middle, decoded on its own as an object, is a valid
    attempt's remaining fields: JSON's grammar then makes the line decode to
    exactly those fields.  Each distinct middle is validated once, by
    :func:`attempt_fast`; every other line is declined, to be decoded.
    """

    def __init__(self, ids: Mapping[str, str], interner: Interner, out: list[Attempt]):
        self.ids, self.interner, self.out = ids, interner, out
        self.middles: dict[str, Attempt] = {}

    def __call__(self, line: str, start: int, index: int) -> int:
        head = _ATTEMPT_HEAD.match(line, start)
        if head is None:
            return -1
        row_id = self.ids.get(head.group(1))
        cut = line.rfind(_DURATION, head.end())
        if row_id is None or cut < 0:
            return -1
        usage: Usage | None = None
        tail = _ATTEMPT_TAIL.match(line, cut)
        if tail is not None:
            duration, end = float(tail.group(1)), tail.end()
        else:
            with_usage = _ATTEMPT_USAGE.match(line, cut)
            if with_usage is None:
                return -1
            duration, usage, end = float(with_usage.group(1)), *self._usage(line, with_usage.end())
            if usage is None:
                return -1
        if values.seconds(duration) is None:
            return -1
        duration = round(duration, DURATION_DIGITS)
        middle = line[head.end() : cut]
        model = self.middles.get(middle)
        if model is None:
            model = self._learn(middle)
            if model is None:
                return -1
        self.out.append(
            Attempt(row_id, int(head.group(2)), model.phase, model.decision, model.checks,
                    model.error, model.detail, duration, (), usage, correct=model.correct)
        )  # fmt: skip
        return end

    @staticmethod
    def _usage(line: str, start: int) -> tuple[Usage | None, int]:
        """The usage object at ``start`` and where the attempt ends; None to decline."""
        try:
            doc, end = _raw_decode(line, start)
        except (ValueError, RecursionError):
            return None, -1
        if type(doc) is not dict or not line.startswith("}", end):
            return None, -1
        try:
            return usage_from_json(doc, ""), end + 1
        except ArtifactError:
            return None, -1

    def _learn(self, middle: str) -> Attempt | None:
        """Validate a middle never seen before; remember it if it is an attempt's fields."""
        if not middle.endswith(","):
            return None
        try:
            fields = json.loads("{" + middle[:-1] + "}")
        except (ValueError, RecursionError):
            return None
        if not isinstance(fields, dict) or fields.keys() & _OWN_KEYS:
            return None  # a repeated key: json would keep the last one
        probe = {"row": next(iter(self.ids), ""), "n": 1, **fields, "duration_s": 0.0}
        model = attempt_fast(probe, self.ids, self.interner)
        if model is not None and len(self.middles) < _MIDDLES_KEPT:
            self.middles[middle] = model
        return model


@dataclass
class RunSections:
    """A run object read from its lines: the header (big lists empty), rows and attempts."""

    header: dict[str, Any]
    rows: list[RowRecord]
    attempts: list[Attempt]


def stream_run_members(
    lines: CanonicalLines, pad: int, where: str, interner: Interner
) -> RunSections:
    """The members of a run object whose keys sit at ``pad`` spaces, up to its closing line.

    Rows and attempts are validated as they are read (the careful check
    decides whenever the quick one doubts); any error raises NotCanonical.
    """
    header: dict[str, Any] = {}
    rows: list[RowRecord] = []
    attempts: list[Attempt] = []
    ids: dict[str, str] = {}

    def add_row(doc: Any, index: int) -> RowRecord:
        row = row_fast(doc, interner)
        if row is None:
            row = _careful(row_from_json, doc, f"{where}: rows[{index}]")
        rows.append(row)
        ids.setdefault(row.id, row.id)
        return row

    def add_row_line(line: str, start: int, index: int) -> int:
        """A row line seen verbatim in the other run is that run's row (the usual case)."""
        text = line[start:].rstrip("\n").removesuffix(",")
        row = interner.row_lines.get(text)
        if row is None:
            item, end = decode_at(line, start)
            if end != start + len(text):
                raise NotCanonical
            interner.row_lines[text] = add_row(item, index)
        else:
            rows.append(row)
            ids.setdefault(row.id, row.id)
        return start + len(text)

    def add_attempt(doc: Any, index: int) -> None:
        attempt = attempt_fast(doc, ids, interner)
        if attempt is None:
            attempt = _careful(attempt_from_json, doc, f"{where}: attempts[{index}]")
            attempt = interner.shared_attempt(attempt, ids)
        attempts.append(attempt)

    attempt_lines = AttemptLines(ids, interner, attempts)

    more = True
    while more:
        key, line, start = lines.member(pad)
        if key in header:
            raise NotCanonical  # a repeated key: json keeps the last one; let it
        if line[start:] in ("[\n", "["):
            header[key] = []
            if key == "rows" and not attempts:
                more = lines.items(pad, add_row, add_row_line)
            elif key == "attempts":
                more = lines.items(pad, add_attempt, attempt_lines)
            else:
                raise NotCanonical
        else:
            header[key], end = decode_at(line, start)
            more = comma_follows(line, end)
            if key in ("rows", "attempts") and header[key] != []:
                raise NotCanonical
    return RunSections(header, rows, attempts)


def _careful(check: Callable[[Any, str], _T], doc: Any, where: str) -> _T:
    try:
        return check(doc, where)
    except ArtifactError:
        raise NotCanonical from None


def run_from_sections(sections: RunSections, where: str) -> Run:
    """The Run of streamed sections, with every check :func:`run_from_json` makes."""
    doc = sections.header
    check_version(doc, where, RUN_KIND)
    validate_header(doc, where, "run.schema.json")
    if not isinstance(doc.get("rows"), list) or not isinstance(doc.get("attempts"), list):
        raise NotCanonical
    return assemble_run(doc, tuple(sections.rows), tuple(sections.attempts), where)


def stream_run_document(lines: CanonicalLines, where: str) -> Run:
    if lines.take() != "{\n":
        raise NotCanonical
    sections = stream_run_members(lines, 2, where, Interner())
    if lines.expect("}"):
        raise NotCanonical
    return run_from_sections(sections, where)
