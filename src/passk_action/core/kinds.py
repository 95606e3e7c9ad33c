"""Facts as data: a kind (a frozen dataclass) to JSON and back, by its fields.

A note, a warning or a gate's failure reason is stored as ``{"kind": ...,
fields...}`` and never as a sentence: only the renderers word it, so the
words can improve without a stored file changing, and a reader can act on a
field (a row id, a count) without parsing English.

A kind's name is its class name in kebab case (``DroppedRows`` ->
``dropped-rows``): renaming a class renames the stored kind, which the
kinds' own tests pin.  Fields may be ``str``, ``int``, ``float``, ``bool``,
``None``, an enum (by its value), a tuple (a list), or another dataclass (an
object of its fields, without a kind: its type is the field's), or, when the
field's type is a base class naming its subclasses in a ``KINDS`` registry,
one of those (an object with its own ``kind``).
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from enum import Enum
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T")

_WORD = re.compile(r"(?<!^)(?=[A-Z])")


def kind_name(cls: type) -> str:
    """``DroppedRows`` -> ``dropped-rows``."""
    return _WORD.sub("-", cls.__name__).lower()


def registry(*classes: type[T]) -> dict[str, type[T]]:
    """The kinds by their stored name (two classes with one name is a bug)."""
    found = {kind_name(cls): cls for cls in classes}
    if len(found) != len(classes):  # pragma: no cover - a kind added under a taken name
        raise AssertionError("two kinds share a name")
    return found


def to_json(value: Any) -> Any:
    """A kind's fields (or a field's value) as JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(type(value), "KINDS"):
            return kind_to_json(value)
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [to_json(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} is not a field a kind can store")


def kind_to_json(value: Any) -> dict[str, Any]:
    """``{"kind": ..., fields...}`` (a field named ``kind`` would be a bug)."""
    fields = {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if "kind" in fields:  # pragma: no cover - the kinds' tests pin their fields
        raise AssertionError(f"{type(value).__name__} has a field named 'kind'")
    return {"kind": kind_name(type(value)), **fields}


def kind_from_json(doc: Any, kinds: Mapping[str, type[T]]) -> T:
    """The kind ``doc`` stores; ValueError naming the key that is wrong."""
    if not isinstance(doc, dict):
        raise ValueError("must be an object with a 'kind'")
    name = doc.get("kind")
    cls = kinds.get(name) if isinstance(name, str) else None
    if cls is None or not isinstance(name, str):
        raise ValueError(f"'kind' must be one of {', '.join(sorted(kinds))}, got {name!r}")
    fields = {key: value for key, value in doc.items() if key != "kind"}
    value: T = _decode(cls, fields, name)
    return value


def _decode(hint: Any, value: Any, where: str) -> Any:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(hint) if arg is not type(None)]
        if value is None and len(options) < len(get_args(hint)):
            return None
        if len(options) != 1:  # pragma: no cover - kinds use X | None only
            raise TypeError(f"{where}: a union of several types is not stored")
        return _decode(options[0], value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list")
        item = get_args(hint)[0]
        return tuple(_decode(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            allowed = ", ".join(str(member.value) for member in hint)
            raise ValueError(f"{where} must be one of {allowed}, got {value!r}") from None
    if isinstance(hint, type) and "KINDS" in vars(hint):  # a base: one of its kinds
        try:
            return kind_from_json(value, vars(hint)["KINDS"])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_fields(hint, value, where)
    return _decode_plain(hint, value, where)


def _decode_plain(hint: Any, value: Any, where: str) -> Any:
    if hint is bool or hint is str:
        if type(value) is not hint:
            raise ValueError(f"{where} must be a {'string' if hint is str else 'true or false'}")
        return value
    if hint is int:
        if type(value) is not int:
            raise ValueError(f"{where} must be a whole number")
        return value
    if hint is float:
        if type(value) not in (int, float):
            raise ValueError(f"{where} must be a number")
        return float(value)
    raise TypeError(f"{where}: {hint!r} is not a type a kind stores")  # pragma: no cover


def _decode_fields(cls: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object")
    hints = get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ValueError(f"{where} has no field {unknown[0]!r}")
    args = {}
    for name, field in known.items():
        if name in value:
            args[name] = _decode(hints[name], value[name], f"{where}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ValueError(f"{where} lacks its field {name!r}")
    try:
        return cls(**args)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
