"""Append one row to a dataset in the file's own format and style, every existing byte kept.

``passk add`` writes a new row the way the file's last row is written:

- JSONL: the same key order, spacing (``{"a": 1}`` or ``{"a":1}``) and
  escaping of non-ASCII text, and the optional fields every row states;
- YAML: a list item at the same indentation, with the same key order, the
  same quoting of keys and strings, flow or block style for the input and
  the tags, and a blank line between rows when the file has them;
- CSV: the header's columns, the same quoting and ``must_not_break``
  spelling (``true``/``1``/``yes``), JSON inputs spaced alike.

The file's line endings (and a UTF-8 BOM) are kept.  Every append is
verified by reading the new file back with the dataset loader: the old rows
must come out unchanged and in order, and the new one exactly as meant;
anything else is refused, the file untouched.  A row a format cannot hold
(a CSV without a ``tags`` column, an input CSV would read back as another
value) is refused with the fix.  Pure: bytes in, bytes out.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from ..core.model import Json, Scoring
from ..errors import DatasetError
from .dataset import FIELDS, TAG_SEPARATOR, parse_dataset
from .reading import StrictYamlLoader

BOM = "\ufeff"
_CANNOT = "cannot append to this file keeping its layout"
_BY_HAND = "add the row by hand, in the file's own style"


def _fix_the_row(loader_hint: str | None) -> str:
    """The fix for a new row the dataset's loader refuses: the row, not how it is written."""
    said = f"{loader_hint}; " if loader_hint else ""
    return (
        f"{said}change --expected, the input or the tags so the row loads "
        "(the file is untouched; by hand it would be refused alike)"
    )


@dataclass(frozen=True)
class Appended:
    """The new file's bytes and the line the new row starts on."""

    data: bytes
    line: int
    text: str
    """The row as written (without the line ending before it)."""


def append_row(
    data: bytes,
    source: str,
    fmt: str,
    record: dict[str, Json],
    must_not_break_tags: Iterable[str] = (),
    scoring: Scoring | None = None,
) -> Appended:
    """``data`` (the dataset ``source``, in format ``fmt``) with ``record`` appended.

    Verified by reading the result back; DatasetError, naming the fix, when
    the row cannot be appended in the file's own layout.
    """
    tags = tuple(must_not_break_tags)
    before = parse_dataset(data, source, fmt, tags, scoring)
    text = data.decode("utf-8")  # valid: the loader read it; a BOM stays a character
    bom = BOM if text.startswith(BOM) else ""
    body = text[len(bom) :]
    newline = "\r\n" if "\r\n" in body else "\n"
    writers: dict[str, Callable[[str, dict[str, Json], str, str], tuple[str, str]]] = {
        "jsonl": _jsonl,
        "yaml": _yaml,
        "csv": _csv,
    }
    new_body, row_text = writers[fmt](body, record, newline, source)
    new_data = (bom + new_body).encode("utf-8")
    try:
        after = parse_dataset(new_data, source, fmt, tags, scoring)
    except DatasetError as exc:
        # The row itself is refused: written by hand it would be refused alike.
        raise DatasetError(
            f"the new row would not load: {exc.message}",
            where=exc.where,
            hint=_fix_the_row(exc.hint),
        ) from exc
    old = [(r.content(), r.line) for r in before.rows]
    kept = [(r.content(), r.line) for r in after.rows[: len(before.rows)]]
    added = after.rows[len(before.rows) :]
    if kept != old or len(added) != 1 or added[0].content() != _content(record):
        raise DatasetError(f"{_CANNOT} (read back, the rows differ)", where=source, hint=_BY_HAND)
    return Appended(new_data, added[0].line, row_text)


def _content(record: dict[str, Json]) -> dict[str, Json]:
    """``record`` as :meth:`Row.content` states a row (the loader's defaults filled in)."""
    out = {"id": record["id"], "input": record["input"]}
    if record.get("expected") is not None:
        out["expected"] = record["expected"]
    out["tags"] = list(record.get("tags") or [])
    out["must_not_break"] = bool(record.get("must_not_break", False))
    if record.get("cluster") is not None:
        out["cluster"] = record["cluster"]
    return out


def _ordered(
    record: dict[str, Json], template_keys: Iterable[str], always: Iterable[str]
) -> dict[str, Json]:
    """The record's keys in the template's order (then the loader's), with the optional
    fields every row states filled in with their defaults."""
    full = dict(record)
    defaults: dict[str, Json] = {"tags": [], "must_not_break": False}
    for key in always:
        if key in defaults and key not in full:
            full[key] = defaults[key]
    order = [k for k in template_keys if k in full]
    order += [k for k in FIELDS if k in full and k not in order]
    return {k: full[k] for k in order}


def _ending(body: str, newline: str) -> str:
    """What goes before an appended line: a line ending when the file lacks a final one."""
    return "" if not body or body.endswith("\n") else newline


# --- JSONL ---------------------------------------------------------------------------

_SEPARATORS = ((", ", ": "), (",", ":"), (", ", ":"), (",", ": "))


def _jsonl(body: str, record: dict[str, Json], newline: str, source: str) -> tuple[str, str]:
    lines = [line.rstrip("\r") for line in body.split("\n") if line.strip()]
    docs = [json.loads(line) for line in lines]
    template, template_doc = lines[-1], docs[-1]
    always = set.intersection(*(set(doc) for doc in docs))
    row = _ordered(record, list(template_doc), always)
    # The spacing and escaping that writes the template line as it is.
    style = ((", ", ": "), False)
    for separators in _SEPARATORS:
        for ascii_only in (False, True):
            again = json.dumps(template_doc, separators=separators, ensure_ascii=ascii_only)
            if again == template.strip():
                style = (separators, ascii_only)
                break
        else:
            continue
        break
    text = json.dumps(row, separators=style[0], ensure_ascii=style[1], allow_nan=False)
    return body + _ending(body, newline) + text + newline, text


# --- YAML ----------------------------------------------------------------------------


class _IndentedDumper(yaml.SafeDumper):
    """Block sequences inside mappings indented (``tags:\\n  - a``), not flush."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _yaml(body: str, record: dict[str, Json], newline: str, source: str) -> tuple[str, str]:
    loader = StrictYamlLoader(body)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    assert root is not None  # the loader read at least one row
    items = root
    if isinstance(root, yaml.MappingNode):
        items = next(value for key, value in root.value if key.value == "rows")
    if not isinstance(items, yaml.SequenceNode) or items.flow_style:
        raise DatasetError(
            f"{_CANNOT}: the rows are one flow list [...]",
            where=f"{source}:{items.start_mark.line + 1}",
            hint="write the rows as a block list, one `- id: ...` item each, or " + _BY_HAND,
        )
    template = items.value[-1]
    lines = body.split("\n")
    start = template.start_mark
    dash = lines[start.line].rfind("-", 0, start.column)
    if dash < 0:
        raise DatasetError(
            f"{_CANNOT}: no `-` before the last row", where=f"{source}:{start.line + 1}"
        )
    keys = [k.value for k, _ in template.value] if isinstance(template, yaml.MappingNode) else []
    always = set(FIELDS)
    for item in items.value:
        if isinstance(item, yaml.MappingNode):
            always &= {k.value for k, _ in item.value}
    row = _ordered(record, keys, always)
    dumper = yaml.SafeDumper(io.StringIO(), sort_keys=False)
    node = dumper.represent_data(row)
    indented = False
    if isinstance(template, yaml.MappingNode) and isinstance(node, yaml.MappingNode):
        node.flow_style = template.flow_style
        styles = {k.value: (k, v) for k, v in template.value}
        for key_node, value_node in node.value:
            found = styles.get(key_node.value)
            if found is None:
                continue
            key_node.style = found[0].style
            indented |= _copy_style(found[1], value_node, found[0].start_mark.column, lines)
    step = start.column - dash
    indent = step if 2 <= step <= 9 else 2
    text = yaml.serialize(
        yaml.SequenceNode("tag:yaml.org,2002:seq", [node], flow_style=False),
        Dumper=_IndentedDumper if indented else yaml.SafeDumper,
        allow_unicode=True,
        width=1 << 30,
        indent=indent,
    )
    item = "\n".join(" " * dash + line if line else line for line in text.rstrip("\n").split("\n"))
    at = _after_node(template, body)
    before, after = body[:at], body[at:]
    gap = ""
    if len(items.value) > 1 and not lines[start.line - 1].strip():
        gap = newline  # rows separated by a blank line
    written = item.replace("\n", newline)
    return before + _ending(before, newline) + gap + written + newline + after, item


def _copy_style(template: yaml.Node, value: yaml.Node, key_column: int, lines: list[str]) -> bool:
    """Give ``value`` the template value's style; whether a block list sits indented
    (its ``-`` right of its key) rather than flush with it."""
    if isinstance(template, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode):
        if value.tag == "tag:yaml.org,2002:str" and template.style in ('"', "'"):
            value.style = template.style
        return False
    if isinstance(template, (yaml.MappingNode, yaml.SequenceNode)) and isinstance(
        value, (yaml.MappingNode, yaml.SequenceNode)
    ):
        value.flow_style = template.flow_style
        if isinstance(template, yaml.SequenceNode) and not template.flow_style and template.value:
            first = template.value[0].start_mark
            dash: int = lines[first.line].rfind("-", 0, first.column)
            return dash > key_column
        return False
    return False


def _after_node(node: yaml.Node, body: str) -> int:
    """Where the line after ``node``'s last content begins (trailing comments stay after)."""
    last = node
    while isinstance(last, (yaml.MappingNode, yaml.SequenceNode)) and not last.flow_style:
        if not last.value:
            break
        last = last.value[-1][1] if isinstance(last, yaml.MappingNode) else last.value[-1]
    end = last.end_mark
    if end.column == 0:
        return end.index  # a block scalar ends at the start of the next line
    newline = body.find("\n", end.index)
    return len(body) if newline < 0 else newline + 1


# --- CSV -----------------------------------------------------------------------------


def _csv(body: str, record: dict[str, Json], newline: str, source: str) -> tuple[str, str]:
    reader = csv.reader(io.StringIO(body, newline=""))
    records: list[tuple[list[str], int, int]] = []
    previous = 0
    for cells in reader:
        if cells and not (len(cells) == 1 and not cells[0].strip()):
            records.append((cells, previous, reader.line_num))
        previous = reader.line_num
    header = [name.strip() for name in records[0][0]]
    rows = [dict(zip(header, cells, strict=True)) for cells, _, _ in records[1:]]
    for field, given in (
        ("tags", bool(record.get("tags"))),
        ("must_not_break", bool(record.get("must_not_break"))),
        ("cluster", record.get("cluster") is not None),
    ):
        if given and field not in header:
            raise DatasetError(
                f"the CSV has no {field} column for the new row's {field}",
                where=f"{source}:{records[0][1] + 1}",
                hint=f"add a `{field}` column to the header first (existing rows may leave "
                "it empty), or leave the option out",
            )
    new_cells = {
        "id": str(record["id"]),
        "input": _csv_input(record["input"], [r.get("input", "") for r in rows]),
        "expected": str(record["expected"]),
        "tags": _csv_tags(record.get("tags") or []),
        "must_not_break": _csv_flag(
            bool(record.get("must_not_break")), [r.get("must_not_break", "") for r in rows]
        ),
        "cluster": str(record.get("cluster") or ""),
    }
    physical = body.split("\n")
    last_cells, first, end = records[-1]
    raw = "\n".join(line.rstrip("\r") for line in physical[first:end])
    # Every cell quoted, when that is how the last record is written.
    quote_all = (
        _csv_line(last_cells, False, "\n") != raw and _csv_line(last_cells, True, "\n") == raw
    )
    text = _csv_line([new_cells[name] for name in header], quote_all, newline)
    return body + _ending(body, newline) + text + newline, text


def _csv_line(cells: list[str], quote_all: bool, newline: str) -> str:
    out = io.StringIO()
    if quote_all:
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator=newline).writerow(cells)
    else:
        csv.writer(out, quoting=csv.QUOTE_MINIMAL, lineterminator=newline).writerow(cells)
    return out.getvalue()[: -len(newline)]


def _csv_input(value: Json, existing: list[str]) -> str:
    """The input cell: JSON for an object or list (spaced like the file's), else the text."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=_spacing(existing), ensure_ascii=False)
    if isinstance(value, str) and not value.lstrip().startswith(("{", "[")):
        return value
    what = "text starting with { or [" if isinstance(value, str) else f"the JSON value {value!r}"
    raise DatasetError(
        f"a CSV input cell holds a JSON object or list, or plain text; this input is {what}",
        where="input",
        hint='use a JSONL or YAML dataset, or wrap the input in an object, e.g. {"text": ...}',
    )


def _spacing(cells: list[str]) -> tuple[str, str]:
    """The JSON separators that write most of the file's JSON cells as they are."""
    docs = []
    for cell in cells:
        if cell.lstrip().startswith(("{", "[")):
            try:
                docs.append((cell, json.loads(cell)))
            except ValueError:
                continue
    scores = [
        sum(json.dumps(doc, separators=seps, ensure_ascii=False) == cell for cell, doc in docs)
        for seps in _SEPARATORS
    ]
    return _SEPARATORS[scores.index(max(scores))]


def _csv_tags(tags: Any) -> str:
    for tag in tags:
        if TAG_SEPARATOR in tag or tag != tag.strip():
            raise DatasetError(
                f"the tag {tag!r} cannot be stored in a CSV tags cell",
                where="--tag",
                hint=f"tags are separated by {TAG_SEPARATOR!r} and stripped: choose another",
            )
    return TAG_SEPARATOR.join(tags)


def _csv_flag(value: bool, existing: list[str]) -> str:
    """``must_not_break`` spelled as the file spells it (``true``, ``1``, ``yes``; empty)."""
    truthy = {"true", "1", "yes"}
    spelled = Counter(cell for cell in existing if (cell.strip().lower() in truthy) == value)
    if spelled:
        return spelled.most_common(1)[0][0]
    return "true" if value else "false"
