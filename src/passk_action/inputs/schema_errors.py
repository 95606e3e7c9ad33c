"""Turn jsonschema validation errors into one-line messages a user can act on.

jsonschema's own messages print Python reprs of whole sub-documents ("{'a':
...} is not valid under any of the given schemas") and never say where the
problem is.  passk's messages name the key as a JSON path (``agent.timeout_s``,
``agent.command[0]``) and say what was expected in words, so every loader that
validates against a schema (config, artifacts) reports problems the same way.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jsonschema.exceptions import ValidationError, relevance

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")

_TYPE_WORDS = {
    "integer": "a whole number",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def json_path(parts: Iterable[str | int]) -> str:
    """``("agent", "command", 0)`` -> ``agent.command[0]``; the root is ``""``.

    Keys that are not plain identifiers are quoted (``env["MY.VAR"]``) so the
    path is never ambiguous.
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def error_parts(error: ValidationError) -> tuple[str | int, ...]:
    """The path of the offending key.

    For a missing required key that is the key itself, not its parent: "dataset
    is required" reads better at ``dataset`` than at the document root.
    """
    parts = tuple(error.absolute_path)
    if error.validator == "required":
        missing = _missing_keys(error)
        if missing:
            parts = (*parts, missing[0])
    return parts


def error_path(error: ValidationError) -> str:
    return json_path(error_parts(error))


def describe_value(value: Any, limit: int = 40) -> str:
    """A short, one-line rendering of a document value for messages."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, (int, float)):
        text = repr(value)
        if len(text) > limit:
            text = f"{text[:12]}… ({len(text)} digits)"
        return f"the number {text}"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        if len(text) > limit:
            text = text[: limit - 4] + '..."'
        return f"the string {text}"
    return f"a {type(value).__name__} value"


def _missing_keys(error: ValidationError) -> list[str]:
    instance = error.instance
    required = error.validator_value
    if not isinstance(instance, Mapping) or not isinstance(required, Sequence):
        return []
    return [key for key in required if isinstance(key, str) and key not in instance]


def _only_required(subschemas: Any) -> list[str] | None:
    """Keys of a ``oneOf`` whose branches only say "this key is required"."""
    if not isinstance(subschemas, Sequence):
        return None
    keys: list[str] = []
    for sub in subschemas:
        if not isinstance(sub, Mapping) or set(sub) != {"required"}:
            return None
        keys.extend(str(k) for k in sub["required"])
    return keys


def _quote_list(items: Iterable[Any]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def error_message(error: ValidationError) -> str:
    """What is wrong, in words, without the location (see :func:`error_path`)."""
    kind = error.validator
    expected: Any = error.validator_value
    value: Any = error.instance
    got = describe_value(value)
    if kind == "type":
        types = [expected] if isinstance(expected, str) else list(expected)
        words = " or ".join(_TYPE_WORDS.get(str(t), str(t)) for t in types)
        return f"expected {words}, got {got}"
    if kind == "required":
        return "is required but missing"
    if kind == "enum":
        message = f"must be one of {_quote_list(expected)}, got {got}"
        if isinstance(value, str):
            close = difflib.get_close_matches(value, [str(e) for e in expected], n=1)
            if close:
                message += f"; did you mean `{close[0]}`?"
        return message
    if kind == "minimum":
        return f"must be at least {expected}, got {value!r}"
    if kind == "exclusiveMinimum":
        return f"must be greater than {expected}, got {value!r}"
    if kind == "maximum":
        return f"must be at most {expected}, got {value!r}"
    if kind == "exclusiveMaximum":
        return f"must be less than {expected}, got {value!r}"
    if kind in ("minLength", "minItems", "minProperties") and expected == 1:
        return "must not be empty"
    if kind == "minItems":
        return f"needs at least {expected} items"
    if kind == "uniqueItems":
        return "has duplicate items"
    if kind == "pattern":
        return f"{got} is not allowed here"
    if kind in ("oneOf", "anyOf"):
        keys = _only_required(expected)
        if keys is not None and isinstance(value, Mapping):
            present = [k for k in keys if k in value]
            found = "found " + (" and ".join(f"`{k}`" for k in present) or "none")
            return f"needs exactly one of {_quote_list(keys)}, {found}"
    if kind == "additionalProperties" and isinstance(value, Mapping):
        return f"unknown keys {_quote_list(unknown_keys(error))}"
    # Anything rarer: jsonschema's own words, squeezed onto one line.
    text = " ".join(error.message.split())
    return text if len(text) <= 160 else text[:157] + "..."


def unknown_keys(error: ValidationError) -> list[str]:
    """The keys an ``additionalProperties: false`` error complains about, in document order."""
    instance = error.instance
    schema = error.schema
    if not isinstance(instance, Mapping) or not isinstance(schema, Mapping):
        return []
    known = schema.get("properties", {})
    return [str(key) for key in instance if key not in known]


def known_keys(error: ValidationError) -> list[str]:
    """The keys the schema at this error's location does know about."""
    schema = error.schema
    if not isinstance(schema, Mapping):
        return []
    return [str(key) for key in schema.get("properties", {})]


def most_relevant(errors: Iterable[ValidationError]) -> ValidationError | None:
    """The error to show first: the shallowest, as jsonschema ranks them.

    Unlike ``jsonschema.exceptions.best_match`` this never descends into the
    branches of a ``oneOf``: "needs exactly one of `command`, `http`" is the
    useful message there, not "'http' is a required property".
    """
    best: ValidationError | None = None
    best_rank: Any = None
    for error in errors:
        rank: Any = relevance(error)
        if best is None or rank > best_rank:
            best, best_rank = error, rank
    return best
