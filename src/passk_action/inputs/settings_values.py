"""The readers of single settings shared by the config's sections: a ruled value, a
duration, a command.

The schema checked each value's type and sign; these readers apply the one
rule of ``core/values`` for what a value may be, and split a command written
as one string the way a shell would, each failure one line naming its key.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

from ..core import values
from ..errors import ConfigError
from .schema_errors import describe_value


def ruled(
    value: Any, rule: Callable[[object], float | None], text: str, where: str, hint: str
) -> float:
    """``value`` by one of ``core/values.py``'s rules (the schema checked type and sign)."""
    number = rule(value)
    if number is None:
        raise ConfigError(f"must be {text}, not {describe_value(value)}", where=where, hint=hint)
    return number


def seconds(doc: Mapping[str, Any], key: str, default: float, where: str) -> float:
    """A duration by the duration rule; the schema checked the type and the sign."""
    return ruled(
        doc.get(key, default),
        values.seconds,
        values.SECONDS_TEXT,
        f"{where}.{key}",
        "use a duration in seconds such as 60",
    )


def command(raw: Any, where: str, example: str) -> tuple[str, ...]:
    """A schema-valid command, a list or one string split like a shell would; ``where`` is
    the ``command`` key, ``example`` a command to suggest (``["python3", "agent.py"]``)."""
    if not isinstance(raw, str):
        return tuple(raw)
    try:
        split = tuple(shlex.split(raw))
    except ValueError as exc:
        raise ConfigError(
            f"cannot split the command like a shell would: {exc}",
            where=where,
            hint=f"close the quote, or write the command as a list: {example}",
        ) from exc
    if not split:
        raise ConfigError(
            "the command is blank", where=where, hint=f"write the command to run, e.g. {example}"
        )
    return split
