"""What an error attempt says about its cause: a short name, and whether it looks passing.

An attempt's reason code (``exception``, ``http-status``, ``timeout``, ...) says
how it failed, its detail why: an SDK's ``RateLimitError: Error code: 429`` or
``AuthenticationError: Error code: 401 - Incorrect API key``.  Reports group
errors by :func:`cause` (``RateLimitError 429 ×3``), say when they look
**transient** (rate limits, server errors, timeouts, dropped connections: the
same attempt later may well answer) and when they are about the **key** (a
missing or refused credential: no wait helps), so a hint can fit the cause.

The rules read the first line of the detail only, and only for well-known
shapes: an HTTP status after ``code``, ``status``, ``HTTP`` or ``answered``, or
opening a parenthesis (``(429 from ...)``), an exception class name
(``...Error``, ``...Exception``, ``...Timeout``), words about an API key, a rate
limit or an unreachable host.  Anything else is named by its reason code and is neither.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from .model import Attempt

_STATUS = re.compile(
    r"(?:\b(?:error code|status code|status|code|answered|http(?:/\d(?:\.\d)?)?)\s*[:=]?\s*"
    r"|\()([1-5]\d\d)(?=\b)(?!\.\d)",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(r"\b((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Timeout))\b")
_KEY_WORDS = re.compile(
    r"api[ _-]?key|(?-i:\b[A-Z][A-Z0-9]*_(?:API_)?KEY\b)|unauthori[sz]ed|"
    r"invalid (?:token|credentials)",
    re.IGNORECASE,
)
_TRANSIENT_NAMES = re.compile(
    r"RateLimit|Timeout|TimedOut|Connection|InternalServer|ServiceUnavailable|Overloaded|"
    r"BadGateway|GatewayTimeout|TooManyRequests|ServerError",
)
_KEY_NAMES = re.compile(r"Authentication|PermissionDenied|Unauthori[sz]ed|InvalidApiKey")
_TRANSIENT_WORDS = re.compile(
    r"rate[ -]?limit|cannot reach|unreachable|timed out|connection (?:refused|reset|error|"
    r"aborted)|overloaded|temporarily unavailable",
    re.IGNORECASE,
)
_TRANSIENT_REASONS = frozenset({"timeout", "connection-error"})


class Kind(str, Enum):
    """What a cause suggests doing: wait and run again, fix the key, or look closer."""

    TRANSIENT = "transient"
    KEY = "key"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Cause:
    """One error cause: its short name (``RateLimitError 429``) and its kind."""

    name: str
    kind: Kind


def _first_line(detail: str | None) -> str:
    return (detail or "").strip().splitlines()[0] if (detail or "").strip() else ""


def cause(error: str, detail: str | None) -> Cause:
    """The cause of one error attempt (reason code ``error``, its ``detail``).

    Name: the exception class (last dotted part) and the HTTP status when the
    detail's first line has them (``RateLimitError 429``, ``http-status 503``),
    else the reason code.  Kind: ``key`` for 401, 403 and authentication errors
    or words about an API key; ``transient`` for 408, 425, 429, 5xx, timeouts
    and dropped connections; ``other`` for the rest (a bad answer, a crash).
    """
    line = _first_line(detail)
    status_match = _STATUS.search(line)
    status = int(status_match.group(1)) if status_match else None
    exc_match = _EXCEPTION.search(line)
    exception = exc_match.group(1).rsplit(".", 1)[-1] if exc_match else None
    parts = [exception or error]
    if status is not None:
        parts.append(str(status))
    name = " ".join(parts)
    if status in (401, 403) or (exception and _KEY_NAMES.search(exception)):
        return Cause(name, Kind.KEY)
    if status is None and _KEY_WORDS.search(line) and error != "bad-output":
        return Cause(name, Kind.KEY)
    if (
        error in _TRANSIENT_REASONS
        or status in (408, 425, 429)
        or (status is not None and 500 <= status <= 599)
        or (exception is not None and _TRANSIENT_NAMES.search(exception))
        or (status is None and _TRANSIENT_WORDS.search(line))
    ):
        return Cause(name, Kind.TRANSIENT)
    return Cause(name, Kind.OTHER)


def attempt_cause(attempt: Attempt) -> Cause | None:
    """:func:`cause` of an error attempt; None for a decision."""
    if attempt.error is None:
        return None
    return cause(attempt.error, attempt.detail)


def causes_of(attempts: Iterable[Attempt]) -> list[tuple[Cause, int]]:
    """The error causes of ``attempts`` with their counts, most frequent first, then by name."""
    counts: Counter[Cause] = Counter()
    for attempt in attempts:
        found = attempt_cause(attempt)
        if found is not None:
            counts[found] += 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0].name))


def dominant_kind(attempts: Iterable[Attempt]) -> Kind | None:
    """The kind every error of ``attempts`` shares; None when they differ or there are none."""
    kinds = {c.kind for c, _ in causes_of(attempts)}
    return kinds.pop() if len(kinds) == 1 else None
