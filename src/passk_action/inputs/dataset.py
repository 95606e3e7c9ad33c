"""Load the labeled dataset (JSONL, YAML or CSV) once into a frozen :class:`Dataset`.

Every row has the same fields in every format:

- ``id``: a non-empty string, unique in the file (an unquoted number is an
  error: ``007`` and ``7`` must not silently become the same row);
- ``input``: any JSON value, passed to the agent as is;
- ``expected``: the expected decision: a non-empty string, or with
  ``scoring.fields`` a JSON object naming some of those fields (each value
  fit for its field's rule); absent when ``scoring.by`` is ``environment``
  (the agent reports each task's outcome);
- ``expected_checks``: optional object of the intermediate checks the row
  expects, name -> value (a string, or any JSON value: an ordered list of
  tool calls is one check);
- ``tags``: optional list of strings;
- ``must_not_break``: optional true/false, the row's own mark;
- ``cluster``: optional string grouping related rows (for clustered error bars).

Any other field is an error naming it: a misspelt ``must_not_brake`` that was
silently ignored would quietly drop the protection the user asked for.

Formats, chosen by file extension:

- ``.jsonl``: one JSON object per line; blank lines are allowed.
- ``.yaml`` / ``.yml``: a list of row mappings, or a mapping whose only key
  ``rows`` holds that list.  Dates stay strings; ``yes``/``no`` are booleans
  (so ``expected: no`` must be quoted, which the error says).
- ``.csv``: a header row naming the columns ``id``, ``input``, ``expected``
  and optionally ``tags``, ``must_not_break``, ``cluster``, ``expected_checks``
  (a JSON object), ``expected`` holding a structured decision as JSON.  ``tags`` are
  separated by ``|`` (``refund|high-value``); ``must_not_break`` is one of
  true/false/1/0/yes/no or empty (false); an empty ``cluster`` means none.
  An ``input`` cell that starts with ``{`` or ``[`` is read as JSON, anything
  else is plain text (text that must start with a bracket needs JSONL or YAML).

Every error is a :class:`~passk_action.errors.DatasetError` whose ``where`` is
``file:line`` (the line of the row: the JSONL line, the line where a YAML row's
mapping starts, the physical CSV line where the record starts).  The same rows
give the same digest in all three formats.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from ..core import values
from ..core.model import (
    ANY_OF,
    SET,
    Dataset,
    ExpectedChecks,
    Row,
    Scoring,
    canonical_json,
    dataset_digest,
    is_object_text,
    object_text,
)
from ..errors import DatasetError
from .reading import (
    StrictYamlLoader,
    decode_text,
    first_non_json,
    read_input_file,
    yaml_load_error,
)
from .schema_errors import describe_value, json_path

FIELDS = ("id", "input", "expected", "expected_checks", "tags", "must_not_break", "cluster")
_FIELD_SET = frozenset(FIELDS)
REQUIRED = ("id", "input", "expected")
FORMATS = {"jsonl": "jsonl", "yaml": "yaml", "yml": "yaml", "csv": "csv"}
TAG_SEPARATOR = "|"
_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})
_FORMATS_HINT = "use .jsonl (one JSON object per line), .yaml/.yml or .csv"


def format_for(path: Path) -> str:
    """The dataset format implied by the file extension."""
    fmt = FORMATS.get(path.suffix.lower().lstrip("."))
    if fmt is None:
        raise DatasetError(
            f"unknown dataset format {path.suffix or '(no extension)'!r}",
            where=str(path),
            hint=_FORMATS_HINT,
        )
    return fmt


def load_dataset(
    path: Path, must_not_break_tags: Iterable[str] = (), scoring: Scoring | None = None
) -> Dataset:
    """Read the dataset at ``path``; rows with any of ``must_not_break_tags`` are must-not-break.

    ``scoring`` (the config's) says what an ``expected`` may be: a label, an
    object of the fields it names, or none (the environment scores each task).
    """
    fmt = format_for(path)
    data = read_input_file(
        path,
        DatasetError,
        kind="dataset file",
        not_found_hint="check `dataset:` in the config; it is relative to the config file",
        directory_hint=_FORMATS_HINT,
        unreadable="the dataset",
    )
    return parse_dataset(data, str(path), fmt, must_not_break_tags, scoring)


def parse_dataset(
    data: bytes,
    source: str,
    fmt: str,
    must_not_break_tags: Iterable[str] = (),
    scoring: Scoring | None = None,
) -> Dataset:
    """Parse a dataset's bytes; ``source`` names it in messages and in ``Dataset.source``.

    Pure: reads no files.  ``fmt`` is ``jsonl``, ``yaml`` (or ``yml``) or ``csv``.
    """
    kind = FORMATS.get(fmt.lower().lstrip("."))
    if kind is None:
        raise DatasetError(f"unknown dataset format {fmt!r}", where=source, hint=_FORMATS_HINT)
    text = decode_text(data, source, DatasetError)
    records = {"jsonl": _jsonl_records, "yaml": _yaml_records, "csv": _csv_records}[kind]
    tags = frozenset(must_not_break_tags)
    rules = scoring or Scoring()
    rows: list[Row] = []
    first_line: dict[str, int] = {}
    for line, record in records(text, source, rules):
        row = _make_row(record, line, source, tags, rules)
        # By id, not by line: YAML flow style and aliases put two rows on one line.
        if row.id in first_line:
            raise DatasetError(
                f"duplicate id {_show(row.id)}, first used on line {first_line[row.id]}",
                where=f"{source}:{line}",
                hint="ids must be unique; rename one of the two rows",
            )
        first_line[row.id] = line
        rows.append(row)
    if not rows:
        raise DatasetError(
            "the dataset has no rows",
            where=f"{source}:1",
            hint='add rows like {"id": "r1", "input": ..., "expected": "approve"}',
        )
    return Dataset(rows=tuple(rows), source=source, digest=_digest(rows, source))


# ----------------------------------------------------------------------- decoding


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


class _NotJsonConstant(ValueError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _pairs_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json keeps the last of two equal keys; for a row that can mean a second
    # "expected" silently replacing the first, so it is an error instead.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _reject_constant(name: str) -> Any:
    raise _NotJsonConstant(name)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs_without_duplicates, parse_constant=_reject_constant
)


def _parse_json(text: str, where: str, what: str, hint: str) -> Any:
    """Decode one JSON document, translating every failure into a DatasetError."""
    try:
        return _DECODER.decode(text)
    except _DuplicateKey as exc:
        raise DatasetError(
            f"{what} repeats the key {_show(exc.key)}",
            where=where,
            hint="a key may appear only once in an object; remove one",
        ) from exc
    except _NotJsonConstant as exc:
        raise DatasetError(
            f"{what} contains {exc.name}, which is not valid JSON",
            where=where,
            hint="use a number or a string instead",
        ) from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{what} is not valid JSON: {exc.msg} at column {exc.colno}", where=where, hint=hint
        ) from exc
    except RecursionError as exc:
        raise DatasetError(f"{what} is nested too deeply", where=where, hint=hint) from exc
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise DatasetError(
            f"{what} holds an integer of more than 4,300 digits, which passk cannot read",
            where=where,
            hint="write such a number as a string",
        ) from exc


# ------------------------------------------------------------------------ formats


def _jsonl_records(text: str, source: str, scoring: Scoring) -> Iterator[tuple[int, Any]]:
    # Split on "\n" only: str.splitlines() also splits on U+2028 and friends,
    # which may appear inside JSON strings and would shift every line number.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        yield (
            number,
            _parse_json(
                line,
                f"{source}:{number}",
                "the line",
                'write one JSON object per line, e.g. {"id": "r1", "input": ..., "expected": ...}',
            ),
        )


def _yaml_records(text: str, source: str, scoring: Scoring) -> Iterator[tuple[int, Any]]:
    loader = StrictYamlLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return
        items = _yaml_row_nodes(root, source)
        document = loader.construct_document(root)
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError) as exc:
        raise yaml_load_error(exc, text, source, DatasetError, default_line=1) from exc
    finally:
        loader.dispose()
    values = document["rows"] if isinstance(root, yaml.MappingNode) else document
    if values is None:
        return
    for node, value in zip(items, values, strict=True):
        line = node.start_mark.line + 1
        problem = first_non_json(value)
        if problem is not None:
            parts, message = problem
            raise DatasetError(
                f"{json_path(parts) or 'the row'} {message}",
                where=f"{source}:{line}",
                hint="use plain strings, numbers, true/false, lists and mappings; quote others",
            )
        yield line, value


def _yaml_row_nodes(root: yaml.Node, source: str) -> list[yaml.Node]:
    """The nodes of the rows, for their line numbers."""
    where = f"{source}:{root.start_mark.line + 1}"
    if isinstance(root, yaml.SequenceNode):
        return list(root.value)
    if isinstance(root, yaml.MappingNode):
        rows: yaml.Node | None = None
        for key, value in root.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "rows":
                rows = value
            else:
                raise DatasetError(
                    f"unknown top-level key {_show(getattr(key, 'value', '?'))}",
                    where=f"{source}:{key.start_mark.line + 1}",
                    hint="the file is a list of rows, or a mapping with only `rows:`",
                )
        if rows is None:
            raise DatasetError(
                "no `rows:` list", where=where, hint="put the rows in a list under `rows:`"
            )
        if isinstance(rows, yaml.ScalarNode) and rows.tag == "tag:yaml.org,2002:null":
            return []
        if not isinstance(rows, yaml.SequenceNode):
            raise DatasetError(
                "`rows:` must be a list of rows",
                where=f"{source}:{rows.start_mark.line + 1}",
                hint="write each row as a list item starting with `- id: ...`",
            )
        return list(rows.value)
    raise DatasetError(
        "expected a list of rows",
        where=where,
        hint="write each row as a list item starting with `- id: ...`",
    )


def _csv_records(text: str, source: str, scoring: Scoring) -> Iterator[tuple[int, Any]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    header_line = 1
    previous_end = 0  # physical line on which the previous record ended
    while True:
        start = previous_end + 1
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            raise DatasetError(
                f"unreadable CSV: {exc}",
                where=f"{source}:{start}",
                hint="check the quoting of this record (cells over 128 KiB need JSONL or YAML)",
            ) from exc
        if cells is None:
            return
        previous_end = reader.line_num
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue
        if header is None:
            header, header_line = _csv_header(cells, source, start, scoring), start
            continue
        if len(cells) != len(header):
            raise DatasetError(
                f"has {len(cells)} cells but the header on line {header_line} has {len(header)}",
                where=f"{source}:{start}",
                hint="quote cells that contain commas, quotes or line breaks",
            )
        yield (
            start,
            _csv_record(dict(zip(header, cells, strict=True)), f"{source}:{start}", scoring),
        )


def _csv_header(cells: list[str], source: str, line: int, scoring: Scoring) -> list[str]:
    where = f"{source}:{line}"
    names = [cell.strip() for cell in cells]
    for name in names:
        if name not in FIELDS:
            raise DatasetError(
                f"unknown column {_show(name)}", where=where, hint=_unknown_field_hint(name)
            )
    for name in names:
        if names.count(name) > 1:
            raise DatasetError(
                f"the column {_show(name)} appears twice", where=where, hint="remove one of them"
            )
    required = REQUIRED if not scoring.by_environment else ("id", "input")
    missing = [name for name in required if name not in names]
    if missing:
        raise DatasetError(
            f"the header has no {_show(missing[0])} column",
            where=where,
            hint=f"the first row must name the columns, at least {','.join(required)}",
        )
    return names


def _csv_record(cells: dict[str, str], where: str, scoring: Scoring) -> dict[str, Any]:
    """Turn CSV cells into the same record a JSONL line would give."""
    record: dict[str, Any] = {"id": cells["id"]}
    if "expected" in cells and not (scoring.by_environment and not cells["expected"].strip()):
        expected = cells["expected"]
        if scoring.fields and expected.lstrip().startswith("{"):
            record["expected"] = _parse_json(
                expected, where, "the expected cell", "a structured decision is a JSON object"
            )
        else:
            record["expected"] = expected
    if cells.get("expected_checks", "").strip():
        record["expected_checks"] = _parse_json(
            cells["expected_checks"],
            where,
            "the expected_checks cell",
            'write the checks as a JSON object, e.g. {"damage": "found"}',
        )
    raw_input = cells["input"]
    if raw_input.lstrip().startswith(("{", "[")):
        record["input"] = _parse_json(
            raw_input,
            where,
            "the input cell",
            "an input cell starting with { or [ is read as JSON; fix the JSON",
        )
    else:
        record["input"] = raw_input
    if "tags" in cells:
        record["tags"] = [t.strip() for t in cells["tags"].split(TAG_SEPARATOR) if t.strip()]
    if "must_not_break" in cells:
        flag = cells["must_not_break"].strip().lower()
        if flag not in _TRUE and flag not in _FALSE:
            raise DatasetError(
                f"must_not_break is {_show(cells['must_not_break'])}",
                where=where,
                hint="write true, false, 1, 0, yes or no; an empty cell means false",
            )
        record["must_not_break"] = flag in _TRUE
    if cells.get("cluster", "") != "":
        record["cluster"] = cells["cluster"]
    return record


# ------------------------------------------------------------------------- rows


def _make_row(
    record: Any, line: int, source: str, must_not_break_tags: frozenset[str], scoring: Scoring
) -> Row:
    where = f"{source}:{line}"
    if not isinstance(record, dict):
        raise DatasetError(
            f"a row must be an object with id, input and expected, got {describe_value(record)}",
            where=where,
            hint='write the row as {"id": "r1", "input": ..., "expected": "approve"}',
        )
    if not _FIELD_SET.issuperset(record):
        key = next(k for k in record if k not in _FIELD_SET)
        raise DatasetError(
            f"unknown field {_show(key)}", where=where, hint=_unknown_field_hint(key)
        )
    row_id = _row_id(record, where)
    label = f"row {_show(row_id)}"
    if "input" not in record:
        raise DatasetError(
            f"{label} has no 'input'", where=where, hint="every row needs id, input and expected"
        )
    expected = _expected(record, label, where, scoring)
    expected_checks = _expected_checks(record.get("expected_checks"), label, where)
    tags = _tags(record.get("tags"), label, where)
    marked = record.get("must_not_break", False)
    if not isinstance(marked, bool):
        raise DatasetError(
            f"{label}: 'must_not_break' must be true or false, got {describe_value(marked)}",
            where=where,
            hint="write true or false without quotes; a missing field means false",
        )
    cluster = record.get("cluster")
    if cluster is not None and (not isinstance(cluster, str) or not cluster):
        raise DatasetError(
            f"{label}: 'cluster' must be a non-empty string, got {describe_value(cluster)}",
            where=where,
            hint=_string_hint(cluster, "a name grouping related rows, or leave the field out"),
        )
    return Row(
        id=row_id,
        input=record["input"],
        expected=expected,
        tags=tags,
        must_not_break=marked or not must_not_break_tags.isdisjoint(tags),
        marked=marked,
        cluster=cluster,
        line=line,
        expected_checks=expected_checks,
    )


def _expected(record: dict[str, Any], label: str, where: str, scoring: Scoring) -> str | None:
    """The row's expected decision as the rules take it: a label, an object's text, or None."""
    if scoring.by_environment:
        if "expected" in record:
            older = ' (rows `passk import` wrote before expect "pass")'
            raise DatasetError(
                f"{label} has 'expected', but scoring.by is environment: the environment "
                "scores each task",
                where=where,
                hint='remove expected; the agent reports "correct" or a "score" per task'
                + (older if record["expected"] == "pass" else ""),
            )
        return None
    if "expected" not in record:
        raise DatasetError(
            f"{label} has no 'expected'",
            where=where,
            hint="every row needs id, input and expected (or set scoring.by: environment "
            "when the agent's environment scores each task)",
        )
    expected = record["expected"]
    if scoring.structured:
        return _structured_expected(expected, label, where, scoring)
    if isinstance(expected, dict) or (isinstance(expected, str) and is_object_text(expected)):
        raise DatasetError(
            f"{label}: 'expected' is a JSON object, and scoring.fields names no fields",
            where=where,
            hint="list the decision's fields and their rules under scoring.fields in passk.yml, "
            "e.g. `fields: {action: exact, amount: {tolerance: 0.01}}`",
        )
    if not isinstance(expected, str) or not expected.strip():
        raise DatasetError(
            f"{label}: 'expected' must be a non-empty string, got {describe_value(expected)}",
            where=where,
            hint=_string_hint(expected, "the expected decision, e.g. approve"),
        )
    return expected


def _structured_expected(expected: Any, label: str, where: str, scoring: Scoring) -> str:
    """An expected object (fields the rules name, each value fit for its rule) as its text."""
    names = [f.name for f in scoring.fields]
    if not isinstance(expected, dict) or not expected:
        raise DatasetError(
            f"{label}: 'expected' must be an object of the decision's fields "
            f"({', '.join(names)}), got {describe_value(expected)}",
            where=where,
            hint='e.g. {"' + names[0] + '": ...}; scoring.fields in passk.yml names the fields',
        )
    for name, value in expected.items():
        rule = scoring.field(name)
        if rule is None:
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            raise DatasetError(
                f"{label}: expected.{name} is a field the scoring rules do not know",
                where=where,
                hint=(f"did you mean {close[0]!r}? " if close else "")
                + f"scoring.fields names {', '.join(names)}; add it there, or fix the row",
            )
        options = value if rule.compare in (ANY_OF, SET) else [value]
        if rule.compare in (ANY_OF, SET) and (not isinstance(value, list) or not value):
            what = "the values that count as right" if rule.compare == ANY_OF else "the set's items"
            raise DatasetError(
                f"{label}: expected.{name} must be a non-empty list of {what} "
                f"(scoring.fields.{name} is {rule.compare}), got {describe_value(value)}",
                where=where,
                hint=f'e.g. "{name}": ["high", "urgent"]',
            )
        if rule.numeric:
            bad = next(
                (o for o in options if isinstance(o, bool) or values.finite(o) is None), None
            )
            if bad is not None or not options:
                raise DatasetError(
                    f"{label}: expected.{name} is {describe_value(bad)}, but "
                    f"scoring.fields.{name} has a tolerance, which compares numbers",
                    where=where,
                    hint="write the number without quotes, or remove the tolerance",
                )
    return object_text(expected)


def _expected_checks(value: Any, label: str, where: str) -> ExpectedChecks:
    """The row's optional ``expected_checks``: name -> a string or any JSON value but null."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise DatasetError(
            f"{label}: 'expected_checks' must be an object of check names and values, "
            f"got {describe_value(value)}",
            where=where,
            hint='e.g. {"damage": "found", "tools": ["lookup_order", "refund"]}',
        )
    for name, expected in value.items():
        if not name or expected is None:
            raise DatasetError(
                f"{label}: expected_checks has "
                + ("an empty check name" if not name else f"no value for {name!r}"),
                where=where,
                hint="name each check as the agent reports it, with the value it should have",
            )
    return tuple(value.items())


def _row_id(record: dict[str, Any], where: str) -> str:
    if "id" not in record:
        raise DatasetError("the row has no 'id'", where=where, hint="give every row a unique id")
    row_id = record["id"]
    if isinstance(row_id, str) and row_id.strip():
        problem = values.row_id_problem(row_id)
        if problem is not None:
            # A NUL or a newline in an id would end up in annotations, logs,
            # file names and the comment, where it cuts or forges lines.
            raise DatasetError(
                f"'id' {problem} ({json.dumps(row_id)[:60]})",
                where=where,
                hint="ids are shown in logs and comments; use letters, digits and punctuation",
            )
        return row_id
    if isinstance(row_id, int) and not isinstance(row_id, bool):
        raise DatasetError(
            f"'id' is the number {row_id}, not a string",
            where=where,
            hint=f'quote it: "{row_id}"; an unquoted number loses leading zeros',
        )
    raise DatasetError(
        f"'id' must be a non-empty string, got {describe_value(row_id)}",
        where=where,
        hint="give every row a unique id string",
    )


def _tags(value: Any, label: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(t, str) and t for t in value):
        return tuple(value)
    bad = (
        value
        if not isinstance(value, list)
        else next(t for t in value if not isinstance(t, str) or not t)
    )
    raise DatasetError(
        f"{label}: 'tags' must be a list of non-empty strings, found {describe_value(bad)}",
        where=where,
        hint='write tags as a list, e.g. ["refund", "high-value"]',
    )


def _string_hint(value: Any, meaning: str) -> str:
    if isinstance(value, bool):
        return "quote it; YAML reads yes/no/true/false/on/off as booleans"
    if isinstance(value, (int, float)):
        return "quote it so it is read as a string"
    return meaning


def _unknown_field_hint(name: Any) -> str:
    known = ", ".join(FIELDS)
    close = difflib.get_close_matches(str(name), FIELDS, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}? A row has {known}"
    return f"a row has {known}"


def _show(value: Any) -> str:
    """A value quoted for a message, one line, short."""
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:56] + '..."'


def _digest(rows: list[Row], source: str) -> str:
    try:
        return dataset_digest(rows)
    except (ValueError, UnicodeError, RecursionError):
        pass
    # Rare: find the row that cannot be encoded (e.g. a lone surrogate "\ud800"
    # escaped in JSON) to name its line.  Done only on failure, to keep the
    # common path to a single pass.
    for row in rows:
        try:
            canonical_json(row.content())
        except (ValueError, UnicodeError, RecursionError) as exc:
            raise DatasetError(
                f"row {_show(row.id)} holds a value that cannot be stored as UTF-8 JSON",
                where=f"{source}:{row.line}",
                hint="remove unpaired surrogate escapes like \\ud800, NaN or too-deep nesting",
            ) from exc
    raise DatasetError(  # pragma: no cover - every row encodes but the whole does not
        "the dataset cannot be encoded", where=f"{source}:1", hint="report this as a passk bug"
    )
