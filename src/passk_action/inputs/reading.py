"""Reading a user's file (a config, a dataset): its bytes, its text, its YAML, JSON's values only.

The loaders of the config and of a dataset read, decode and parse the same
way, so both give the same one-line messages, each in its own error class.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import yaml

from ..core import values
from ..errors import PasskError
from ..files import read_bounded
from .schema_errors import describe_value

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class StrictYamlLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """A YAML safe loader fit for JSON-shaped documents (configs and datasets).

    - Dates stay strings: JSON has no dates, and ``id: 2024-01-31`` or an
      input field holding a date should reach the agent as written, not as a
      Python ``date`` that cannot be serialized.
    - A key repeated in one mapping is an error: YAML would silently keep the
      last one, which hides e.g. a second ``must_not_break:`` that undoes the
      first.
    """

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result

    def get_single_node(self) -> yaml.Node | None:
        node: yaml.Node | None = super().get_single_node()
        if node is not None:
            check_aliases(node)
        return node


ALIAS_GROWTH = 10
"""How many times the nodes written aliases may expand a document to (plus ALIAS_SLACK)."""
ALIAS_SLACK = 100_000


def check_aliases(root: yaml.Node) -> None:
    """Refuse an alias that refers to a node holding it, or aliases that expand too far.

    YAML's aliases share one value: ``&a [x, x]`` used ten times in ``&b``,
    ``&b`` ten times in ``&c``, and so on, is a few lines that expand to a
    billion values when passk walks, validates or serializes the document
    (an alias bomb), and ``&a [*a]`` holds itself and never ends.  The
    document as passk will walk it may hold at most ``ALIAS_GROWTH`` times
    the nodes written plus ``ALIAS_SLACK``; anchors for shared defaults stay
    well inside that.  Iterative: a deep document must not exhaust the stack.
    """
    expanded: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in children)
            continue
        if key in expanded:
            continue
        if key in open_nodes:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to the node that holds it", node.start_mark
            )
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise yaml.composer.ComposerError(
                    None, None, "an alias refers to the node that holds it", child.start_mark
                )
            if id(child) not in expanded:
                stack.append((child, False))
    written = len(expanded)
    if expanded[id(root)] > ALIAS_GROWTH * written + ALIAS_SLACK:
        raise yaml.composer.ComposerError(
            None,
            None,
            f"its aliases expand {written:,} values to {expanded[id(root)]:,} "
            f"(at most {ALIAS_GROWTH} times the values written plus {ALIAS_SLACK:,})",
            root.start_mark,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


StrictYamlLoader.add_constructor(_TIMESTAMP, yaml.SafeLoader.construct_yaml_str)


def yaml_error_line(exc: yaml.YAMLError, text: str) -> int | None:
    """The 1-based line a YAML error points at, if it says."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    position = getattr(exc, "position", None)  # ReaderError: bad characters
    if isinstance(position, int):
        return text.count("\n", 0, position) + 1
    return None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """The YAML error's own words, on one line, without its excerpt of the file."""
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem:
        text = f"{context}: {problem}" if context and "duplicate" not in problem else problem
    else:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return " ".join(text.split())


def yaml_hint(exc: yaml.YAMLError) -> str:
    if "duplicate key" in str(getattr(exc, "problem", "")):
        return "a key may appear only once in a mapping; remove or rename one of them"
    if "alias" in str(getattr(exc, "problem", "")):
        return "write the values out instead of nesting aliases (anchors `&`, aliases `*`)"
    return "fix the YAML syntax at that line"


def yaml_load_error(
    exc: Exception, text: str, source: str, error: type[PasskError], *, default_line: int | None
) -> PasskError:
    """Translate an exception from loading YAML ``text`` (a YAMLError, or too-deep nesting).

    ``where`` is ``source:line`` when the line is known, else ``source:default_line``
    (just ``source`` when ``default_line`` is None).  Raise it ``from exc``.
    """
    if isinstance(exc, yaml.YAMLError):
        line = yaml_error_line(exc, text) or default_line
        return error(
            f"invalid YAML: {yaml_problem(exc)}",
            where=f"{source}:{line}" if line else source,
            hint=yaml_hint(exc),
        )
    return error(
        f"cannot read this YAML: {type(exc).__name__}",
        where=f"{source}:{default_line}" if default_line else source,
        hint="simplify the document: very deep nesting or out-of-range values",
    )


def read_input_file(
    path: Path,
    error: type[PasskError],
    *,
    kind: str,
    not_found_hint: str,
    directory_hint: str,
    unreadable: str,
) -> bytes:
    """The bytes of a user's input file, or ``error`` saying why it cannot be read.

    ``kind`` names the file ("config file"), ``unreadable`` what could not be
    read ("the config file").
    """
    try:
        return read_bounded(path)
    except FileNotFoundError as exc:
        raise error(f"{kind} not found", where=str(path), hint=not_found_hint) from exc
    except IsADirectoryError as exc:
        raise error(f"is a directory, not a {kind}", where=str(path), hint=directory_hint) from exc
    except OSError as exc:
        raise error(
            f"cannot read {unreadable}: {exc.strerror or exc}",
            where=str(path),
            hint="check the path and its permissions",
        ) from exc


def decode_text(data: bytes, source: str, error: type[PasskError]) -> str:
    """Decode a user's file as UTF-8 (a BOM from Excel or Notepad is fine); name the bad line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            "is not valid UTF-8 text", where=f"{source}:{line}", hint="save the file as UTF-8"
        ) from exc


def first_non_json(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The path to, and a description of, the first non-JSON thing in ``value``.

    YAML can express sets, binary, non-string keys and NaN; none of them
    survive the trip to the agent or into a digest, so loaders reject them at
    load time, naming where they are.  Iterative, so deep nesting cannot
    exhaust the stack; nesting past :data:`~.values.MAX_NESTING` levels is
    refused here too, before any recursive code (the schema validator, the
    digest) meets it.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if len(where) > values.MAX_NESTING:
            return where[:3], f"is nested more than {values.MAX_NESTING} levels"
        if item is None or isinstance(item, (bool, int, str)):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return where, f"is {item!r}, which JSON cannot hold"
            continue
        if isinstance(item, list):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(item))))
            continue
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return where, f"has the key {describe_value(key)}; keys must be strings"
            stack.extend((v, (*where, k)) for k, v in reversed(list(item.items())))
            continue
        return where, f"is {describe_value(item)}, which JSON cannot hold"
    return None
