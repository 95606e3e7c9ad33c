"""The ``scoring`` section: how an answer becomes a decision and is judged.

Every rule is checked once here, so a bad one fails the load naming its key,
never a run halfway through: a regex compiles with one group and matches
without backtracking, a JSON pointer parses, tolerances follow the value
rules, a scorer program's keys come with a scorer program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core import values
from ..core.model import (
    BY_COMMAND,
    BY_ENVIRONMENT,
    BY_EXPECTED,
    DEFAULT_SCORER_TIMEOUT_S,
    DEFAULT_THRESHOLD,
    EXACT,
    SET,
    Extractor,
    FieldRule,
    Scoring,
)
from ..core.regex import Unsupported, compile_pattern
from ..core.scoring import pointer_parts
from ..errors import ConfigError
from .settings_values import command as settings_command
from .settings_values import ruled, seconds


def read_scoring(doc: Mapping[str, Any], where: str) -> Scoring:
    """The schema-valid ``scoring`` section, every rule checked: a regex that compiles with one
    group, a JSON pointer, tolerances by the value rules, and keys that fit together."""
    by = str(doc.get("by", "expected"))
    fields = tuple(
        _field_rule(name, rule, f"{where}.fields.{name}")
        for name, rule in doc.get("fields", {}).items()
    )
    extract = _extractor(doc["extract"], f"{where}.extract") if "extract" in doc else None
    if by in (BY_ENVIRONMENT, BY_COMMAND) and (fields or extract is not None):
        raise ConfigError(
            f"{'fields' if fields else 'extract'} does not apply when scoring.by is {by}",
            where=f"{where}.{'fields' if fields else 'extract'}",
            hint="the environment scores each task from the outcome the agent reports; "
            "remove the key, or score decisions with by: expected",
        )
    threshold = DEFAULT_THRESHOLD
    if "threshold" in doc:
        if by not in (BY_ENVIRONMENT, BY_COMMAND):
            raise ConfigError(
                "applies only when scoring.by is environment",
                where=f"{where}.threshold",
                hint="add `by: environment` (the agent reports a score per task) or remove it",
            )
        threshold = ruled(
            doc["threshold"],
            values.finite,
            "a finite number",
            f"{where}.threshold",
            "a reported score at or above it is a success, e.g. 1.0",
        )
    command = _scorer_command(doc, by, where)
    return Scoring(
        normalize=tuple(doc.get("normalize", ())),
        fields=fields,
        extract=extract,
        checks=str(doc.get("checks", "reported")),
        by=by,
        threshold=threshold,
        command=command,
        judge_repeats=int(doc.get("judge_repeats", 1)),
        timeout_s=seconds(doc, "timeout_s", DEFAULT_SCORER_TIMEOUT_S, where),
    )


def _scorer_command(doc: Mapping[str, Any], by: str, where: str) -> tuple[str, ...]:
    """The scorer program's command: needed by ``by: command``, allowed with ``by:
    environment``; ``judge_repeats`` and ``timeout_s`` only beside it."""
    raw = doc.get("command")
    if raw is None:
        if by == BY_COMMAND:
            raise ConfigError(
                "by: command needs the scorer program",
                where=f"{where}.command",
                hint='name it, e.g. command: ["python3", "scorer.py"] (run in the config folder)',
            )
        for key in ("judge_repeats", "timeout_s"):
            if key in doc:
                raise ConfigError(
                    "applies only to a scorer program",
                    where=f"{where}.{key}",
                    hint="add scoring.command (with by: command or environment), or remove it",
                )
        return ()
    if by == BY_EXPECTED:
        raise ConfigError(
            "a scorer program needs by: command (or by: environment)",
            where=f"{where}.command",
            hint="add `by: command` so the program judges each answer, or remove command",
        )
    return settings_command(raw, f"{where}.command", '["python3", "scorer.py"]')


def _field_rule(name: str, doc: Any, where: str) -> FieldRule:
    """One field's rule; the shorthand ``amount: set`` is ``{compare: set}``."""
    if isinstance(doc, str):
        return FieldRule(name, compare=doc)
    compare = str(doc.get("compare", EXACT))
    tolerance = doc.get("tolerance")
    relative = doc.get("relative_tolerance")
    if compare == SET and (tolerance is not None or relative is not None):
        raise ConfigError(
            "a tolerance applies to single numbers, not to a list compared as a set",
            where=f"{where}.{'tolerance' if tolerance is not None else 'relative_tolerance'}",
            hint="use compare: exact or any_of with a tolerance",
        )
    normalize = doc.get("normalize")
    return FieldRule(
        name,
        compare=compare,
        normalize=None if normalize is None else tuple(normalize),
        tolerance=None
        if tolerance is None
        else ruled(
            tolerance,
            values.tolerance,
            values.TOLERANCE_TEXT,
            f"{where}.tolerance",
            "how far from the expected number an answer may be, e.g. 0.01",
        ),
        relative_tolerance=None
        if relative is None
        else ruled(
            relative,
            values.relative_tolerance,
            values.RELATIVE_TOLERANCE_TEXT,
            f"{where}.relative_tolerance",
            "a share of the expected number, e.g. 0.02 for 2%",
        ),
    )


def _extractor(doc: Mapping[str, Any], where: str) -> Extractor:
    if "json_pointer" in doc:
        pointer = str(doc["json_pointer"])
        if pointer_parts(pointer) is None:
            raise ConfigError(
                f"{pointer!r} is not a JSON pointer",
                where=f"{where}.json_pointer",
                hint='start it with "/" (e.g. /decision/action; ~1 stands for "/", ~0 for "~"),'
                ' or "" for the whole answer',
            )
        return Extractor(json_pointer=pointer)
    pattern = str(doc["regex"])
    try:
        groups = compile_pattern(pattern).groups
    except re.error as exc:
        at = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ConfigError(
            f"{pattern!r} does not compile: {exc.msg}{at}",
            where=f"{where}.regex",
            hint="write a Python regular expression; in YAML, single quotes keep backslashes",
        ) from exc
    except (Unsupported, RecursionError, OverflowError) as exc:
        reason = str(exc) if isinstance(exc, Unsupported) else "it is nested too deeply"
        raise ConfigError(
            f"{pattern!r} cannot be matched safely: {reason}",
            where=f"{where}.regex",
            hint="passk matches without backtracking so no answer can hang it: write the "
            "pattern without backreferences or lookaround, or extract with a json_pointer",
        ) from exc
    if groups != 1:
        raise ConfigError(
            f"{pattern!r} has {groups} groups; it needs exactly one, around the decision",
            where=f"{where}.regex",
            hint="e.g. 'DECISION: (\\w+)'; make other groups non-capturing with (?:...)",
        )
    return Extractor(regex=pattern)
