"""Read a JSON file whole: every way it can fail is one ArtifactError naming the file.

Used for passk's artifacts and results when they are not in passk's own
layout, and for the harness files ``passk import`` reads.  Beyond syntax,
two things JSON allows but passk could not use are refused here, where
they enter, with the line or the JSON path: an integer longer than
Python's 4,300-digit limit for integers in text, and a string holding a
lone surrogate (``"\\ud800"``), which UTF-8 cannot store, so no report or
artifact holding it could be written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from ..files import read_bounded

SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONG_INTEGER = re.compile(r"[0-9]{4301,}")


def parse_json_file(path: Path, *, expected: str | None = None) -> Any:
    """Read and parse a JSON file, translating every failure to an ArtifactError.

    ``expected`` describes what the file should be (e.g. "a tau-bench results
    JSON"); by default the hints speak of passk's own files.
    """
    try:
        data = read_bounded(path)
    except FileNotFoundError:
        raise ArtifactError("file not found", where=str(path), hint="check the path") from None
    except OSError as exc:
        raise ArtifactError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    hint = f"pass {expected}" if expected else None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArtifactError(
            f"not UTF-8 (byte {exc.start})",
            where=str(path),
            hint=hint or "passk writes UTF-8 JSON",
        ) from exc
    return parse_json_text(
        text, str(path), hint=hint or "pass a file written by passk, or restore it from git"
    )


def parse_json_text(text: str, where: str, *, hint: str | None = None) -> Any:
    """Parse a whole JSON document, every failure one ArtifactError naming ``where``.

    ``where`` is a file, or a file at a commit (``path@abc1234``); a syntax
    error adds its line.  Refused as :func:`parse_json_file` says: an integer
    of more than 4,300 digits, a lone surrogate.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            f"invalid JSON: {exc.msg}", where=f"{where}:{exc.lineno}", hint=hint
        ) from exc
    except RecursionError as exc:
        raise ArtifactError("JSON nested too deeply", where=where, hint=hint) from exc
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise ArtifactError(
            "holds an integer of more than 4,300 digits, which passk cannot read",
            where=f"{where}:{_line_of(_LONG_INTEGER, text)}",
            hint=hint,
        ) from exc
    if "\\u" in text and SURROGATE_ESCAPE.search(text):
        at = unstorable_path(doc)
        if at is not None:
            raise ArtifactError(
                "holds a lone surrogate (an escape like \\ud800 without its pair), "
                "which UTF-8 cannot store",
                where=f"{where}: {at}" if at else where,
                hint=hint,
            )
    return doc


def _line_of(pattern: re.Pattern[str], text: str) -> int:
    found = pattern.search(text)
    return 1 if found is None else text.count("\n", 0, found.start()) + 1


def unstorable_path(doc: Any) -> str | None:
    """The JSON path of the first string (or key) UTF-8 cannot encode; None if there is none.

    ``""`` is the top level itself.  Iterative, so nesting as deep as the
    decoder allows cannot exhaust the stack.
    """
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            if not _storable(item):
                return at
        elif isinstance(item, list):
            stack.extend((value, f"{at}[{i}]") for i, value in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            children = []
            for key, value in item.items():
                named = f"{at}.{key}" if at else str(key)
                if not _storable(key):
                    return named.encode("utf-8", "backslashreplace").decode("utf-8")
                children.append((value, named))
            stack.extend(reversed(children))
    return None


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
