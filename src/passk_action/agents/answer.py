"""The protocol's wire format: the request an agent reads, and the answer it sends back.

Shared by every transport (a process per attempt, the worker pool, HTTP),
so the same answer is recorded the same way whichever carried it
(``docs/protocol.md``): :func:`request_message` is the request;
:func:`loads_answer` decodes an answer's JSON by the protocol's rules,
:func:`parse_output_object` checks its decision and checks, and
:func:`parse_usage` reads its optional ``usage`` by the value rules of
``core/values.py``, where a malformed value is a warning, never a lost
decision.  :func:`decided_attempt` and :func:`error_attempt` turn the
outcome into the attempt recorded.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import values
from ..core.model import Attempt, Json, Usage
from ..core.scoring import BAD_OUTPUT as BAD_OUTPUT_CODE
from ..core.scoring import MISSING, scored_attempt
from .protocol import AttemptRequest

DEFAULT_OUTPUT_CAP = 1 << 20
STDERR_TAIL_CHARS = 2000
# Bytes of stderr kept while reading; a few times the tail so multi-byte
# characters cut at the edge do not eat into the 2,000 characters we show.
STDERR_KEEP_BYTES = 4 * STDERR_TAIL_CHARS * 4


# --------------------------------------------------------------------------
# The protocol's output, shared by every agent kind.


class BadOutput(Exception):
    """The agent's answer breaks the protocol; ``str()`` says how."""


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads silently keeps the last of duplicate keys; for checks that
    # would hide which value the agent meant, so duplicates are an error.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadOutput(f"duplicate key {key!r} in a JSON object")
        out[key] = value
    return out


class _Constant(float):
    """NaN, Infinity or -Infinity as an answer spelled it (not JSON): see :func:`loads_answer`."""

    name: str


def _constant(name: str) -> _Constant:
    number = _Constant(name)
    number.name = name
    return number


def _float(text: str) -> float:
    """A JSON number; one beyond a float (``1e400``) is held like NaN: refused outside usage."""
    number = float(text)
    return number if math.isfinite(number) else _constant(text[:24])


def compact_json(value: Json) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def storable_text(text: str) -> str:
    """``text`` with anything UTF-8 cannot hold (lone surrogates) written as ``\\udXXX``.

    For details and logs, which must reach the journal whatever the agent sent.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _storable(text: str, what: str) -> str:
    """``text`` unchanged, or BadOutput when UTF-8 JSON cannot store it (a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadOutput(
            f"{what} holds a lone surrogate (\\u{ord(text[exc.start]):04x}),"
            " which UTF-8 cannot store; send valid Unicode"
        ) from exc
    return text


def _preview(value: object) -> str:
    """The start of ``value`` as compact JSON for an error message, whatever it holds."""
    try:
        return storable_text(compact_json(value))[:80]
    except (RecursionError, ValueError, TypeError):
        return f"a {type(value).__name__} too deep or large to show"


def _check_value(name: str, value: object) -> str:
    if isinstance(value, str):
        return _storable(value, f"check {name!r}")
    try:
        text = compact_json(value)
    except RecursionError as exc:
        raise BadOutput(f"check {name!r} is nested too deeply to store") from exc
    except (ValueError, TypeError) as exc:
        raise BadOutput(f"check {name!r} cannot be stored as JSON ({exc})") from exc
    return _storable(text, f"check {name!r}")


def loads_answer(text: str) -> Any:
    """Decode one answer's JSON text by the protocol's rules.

    Raises BadOutput for duplicate keys, for NaN/Infinity (not JSON) outside
    ``usage``, and for JSON that is valid but that passk could not store or
    read back: nesting deeper than the parser's recursion limit, integers
    longer than Python's digit limit.  Inside ``usage`` such a constant is
    kept as a float, which the usage's value rules then refuse with a
    warning: a malformed usage never costs the decision.
    ``json.JSONDecodeError`` (a ValueError) is left to the caller, which knows
    the transport's words for it.
    """
    try:
        obj = json.loads(
            text,
            object_pairs_hook=_reject_duplicate_keys,
            parse_constant=_constant,
            parse_float=_float,
        )
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:
        raise BadOutput("the answer is nested too deeply to store") from exc
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string"
        raise BadOutput(f"the answer cannot be stored: {' '.join(str(exc).split())[:120]}") from exc
    if values.nested_deeper(obj, values.MAX_NESTING):
        # Masking, scoring and storing walk the answer: the bound is met here, once.
        raise BadOutput(f"the answer is nested more than {values.MAX_NESTING} levels")
    if ("NaN" in text or "Infinity" in text or "e" in text.lower()) and (
        found := _constant_outside_usage(obj)
    ):
        raise BadOutput(f"{found} is not valid JSON")
    return obj


def _constant_outside_usage(obj: Any) -> str | None:
    """The name of the first NaN/Infinity anywhere but in the answer's ``usage``; None if none."""
    stack = [v for k, v in obj.items() if k != "usage"] if isinstance(obj, dict) else [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, _Constant):
            return item.name
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


@dataclass(frozen=True)
class Answer:
    """A valid answer: its decision as sent (any JSON value; ``MISSING`` when the answer has
    none), the outcome it reported, its checks, what it spent, and what was ignored.

    The scoring rules read the decision from it when the attempt is recorded
    (:func:`decided_attempt`).
    """

    decision: Json
    checks: tuple[tuple[str, str], ...] = ()
    usage: Usage | None = None
    warnings: tuple[str, ...] = ()
    correct: Json = None
    score: Json = None


OUTCOME_KEYS = ("correct", "score")
"""What an agent reports of a task its environment scored (``scoring.by: environment``)."""


def _raw_decision(obj: dict[str, Any]) -> Json:
    """The answer's ``decision`` as sent: a non-empty string, or any JSON value UTF-8 can store."""
    if "decision" not in obj or obj["decision"] is None:
        if any(obj.get(key) is not None for key in OUTCOME_KEYS):
            return MISSING
        if "decision" in obj:
            raise BadOutput('"decision" must be a string or a JSON object, got null')
        raise BadOutput('the answer has no "decision" key')
    decision = obj["decision"]
    if isinstance(decision, str):
        if not decision.strip():
            raise BadOutput('"decision" is empty')
        return _storable(decision, '"decision"')
    try:
        _storable(compact_json(decision), '"decision"')
    except RecursionError as exc:
        raise BadOutput('"decision" is nested too deeply to store') from exc
    except (ValueError, TypeError) as exc:
        raise BadOutput(f'"decision" cannot be stored as JSON ({exc})') from exc
    return decision


def parse_output_object(obj: object) -> Answer:
    """Validate a decoded answer; return its decision as sent and its checks in reported order.

    The decision is any JSON value (a label, a structured decision, a text an
    extractor reads); it may be absent when the answer reports an outcome
    (``correct``, ``score``).  The scoring rules decide what it must be.
    Check values that are not strings are kept as their compact JSON text
    (``true`` -> ``"true"``) so every check compares as a string.  A
    malformed ``usage`` never costs the decision: what is wrong with it
    becomes a warning on the attempt (see :func:`parse_usage`).
    """
    if not isinstance(obj, dict):
        kind = "an array" if isinstance(obj, list) else f"a {type(obj).__name__}"
        raise BadOutput(f"the answer must be a JSON object, got {kind}")
    decision = _raw_decision(obj)
    raw_checks = obj.get("checks", {})
    if raw_checks is None:
        raw_checks = {}
    if not isinstance(raw_checks, dict):
        raise BadOutput(f'"checks" must be a JSON object, got {_preview(raw_checks)}')
    checks = tuple(
        (_storable(str(name), "a check name"), _check_value(str(name), value))
        for name, value in raw_checks.items()
    )
    usage, warnings = parse_usage(obj.get("usage"))
    return Answer(decision, checks, usage, warnings, obj.get("correct"), obj.get("score"))


USAGE_TOKENS = ("input_tokens", "output_tokens")
MAX_USAGE_COUNTERS = 32
"""Extra counters kept per attempt; more are dropped with a warning."""


def parse_usage(raw: object) -> tuple[Usage | None, tuple[str, ...]]:
    """The answer's optional ``usage`` object, and a warning for each part ignored.

    Keys: ``input_tokens`` and ``output_tokens`` (token counts), ``cost_usd``
    (an amount), ``model`` (a non-empty string); any other key holding an
    amount is kept as an extra counter (counts and amounts as
    ``core/values.py`` defines them).  A value that breaks its rule (the
    wrong type, NaN, 10^400, 1e308 dollars) is dropped with a warning naming
    the key; the rest is kept.
    """
    if raw is None:
        return None, ()
    if not isinstance(raw, dict):
        return None, (f'"usage" must be a JSON object, got {_preview(raw)}; ignored',)
    warnings: list[str] = []
    counts: dict[str, int | None] = dict.fromkeys(USAGE_TOKENS)
    cost: float | None = None
    model: str | None = None
    extra: list[tuple[str, float]] = []
    dropped = 0
    for key, value in raw.items():
        if value is None:
            continue
        if key in counts:
            counts[key] = values.count(value)
            ok, want = counts[key] is not None, values.COUNT_TEXT
        elif key == "cost_usd":
            cost = values.amount(value)
            ok, want = cost is not None, values.AMOUNT_TEXT
        elif key == "model":
            ok = isinstance(value, str) and bool(value.strip()) and value == storable_text(value)
            model = value.strip() if ok else None
            want = "a non-empty string of valid Unicode"
        elif key == "priced":  # passk's own mark of a cost it computed, never an agent's
            ok, want = False, "left to passk (it marks costs priced from the config)"
        else:
            amount = values.amount(value)
            ok, want = amount is not None, values.AMOUNT_TEXT
            if amount is not None and len(extra) < MAX_USAGE_COUNTERS:
                extra.append((storable_text(str(key)), amount))
            elif amount is not None:
                dropped += 1
        if not ok:
            warnings.append(
                f'"usage.{storable_text(str(key))[:40]}" must be {want}, '
                f"got {_preview(value)[:40]}; ignored"
            )
    if dropped:
        warnings.append(f'"usage" has {dropped} counters over {MAX_USAGE_COUNTERS}; ignored')
    usage = Usage(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cost_usd=cost,
        model=model,
        extra=tuple(extra),
    )
    if usage == Usage():
        return None, tuple(warnings)
    return usage, tuple(warnings)


def parse_output(stdout: bytes) -> Answer:
    """Parse a process agent's whole stdout (see :func:`parse_output_object`)."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadOutput(f"stdout is not UTF-8 (byte {exc.start})") from exc
    if not text.strip():
        raise BadOutput("stdout is empty; write one JSON object to stdout")
    try:
        obj = loads_answer(text)
    except json.JSONDecodeError as exc:
        raise BadOutput(_not_one_object(text, exc)) from exc
    return parse_output_object(obj)


def _not_one_object(text: str, exc: json.JSONDecodeError) -> str:
    """Why ``text`` is not one JSON object, quoting what the agent printed besides it.

    The commonest cause is a log line printed to stdout before or after the
    answer: then the lines that are not the answer are named and the first quoted.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    answer_lines = [line for line in lines if _is_object(line)]
    others = [line for line in lines if not _is_object(line)]
    if len(answer_lines) == 1 and others:
        return (
            f"stdout holds the answer and {len(others)} other line(s), the first:"
            f" {others[0][:80]!r}; write only the answer to stdout and logs to stderr"
        )
    snippet = " ".join(text.strip().split())[:80]
    return (
        f"stdout is not one JSON object ({exc.msg} at line {exc.lineno} column {exc.colno}):"
        f" {snippet!r}; send logs to stderr"
    )


def _is_object(line: str) -> bool:
    if not line.startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


# --------------------------------------------------------------------------
# The protocol's request and the attempts it ends in, shared by every transport
# (a process per attempt, a worker pool, an HTTP endpoint)
# so that the same answer is recorded the same way whichever carried it.


def request_message(request: AttemptRequest) -> dict[str, Json]:
    """The protocol's request object (``docs/protocol.md``): the same keys on every transport."""
    message: dict[str, Json] = {
        "id": request.row.id,
        "input": request.row.input,
        "attempt": request.number,
        "version": request.version.value,
    }
    if request.state_dir is not None:
        message["state_dir"] = request.state_dir
    return message


def json_line(message: Mapping[str, Json]) -> bytes:
    """``message`` as one newline-terminated UTF-8 JSON line (a newline in a value is escaped)."""
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def error_attempt(request: AttemptRequest, reason: str, detail: str, duration_s: float) -> Attempt:
    """An attempt that made no decision: ``reason`` is one of the stable reason codes."""
    return Attempt(
        row_id=request.row.id,
        number=request.number,
        phase=request.phase,
        decision=None,
        error=reason,
        # Whatever the agent sent ends up in a UTF-8 journal: never a lone surrogate.
        detail=storable_text(detail),
        duration_s=duration_s,
    )


def decided_attempt(request: AttemptRequest, answer: Answer, duration_s: float) -> Attempt:
    """An attempt whose answer passed :func:`parse_output_object`, read by the request's rules.

    The decision is what ``request.scoring`` reads from the answer; an answer
    it cannot read is a ``bad-output`` error attempt that keeps the answer
    (``core/scoring.py``).  A reported outcome is kept when it is well formed
    (``correct`` true or false, ``score`` a finite number); when the rules
    score by it, a malformed one is the error.
    """
    correct = answer.correct if isinstance(answer.correct, bool) else None
    score = None if isinstance(answer.score, bool) else values.finite(answer.score)
    attempt = Attempt(
        row_id=request.row.id,
        number=request.number,
        phase=request.phase,
        decision=None,
        checks=answer.checks,
        duration_s=duration_s,
        usage=answer.usage,
        warnings=answer.warnings,
        correct=correct,
        score=score,
    )
    if request.scoring.by_environment and not request.scoring.by_scorer:
        for key, raw, kept in (
            ("correct", answer.correct, correct),
            ("score", answer.score, score),
        ):
            if raw is not None and kept is None:
                want = "true or false" if key == "correct" else "a finite number"
                reason = f'"{key}" must be {want}, got {_preview(raw)}'
                return error_attempt(request, BAD_OUTPUT_CODE, reason, duration_s)
    return scored_attempt(attempt, answer.decision, request.scoring)


def map_strings(value: Json, change: Callable[[str], str]) -> Json:
    """``value`` with ``change`` applied to every string in it (keys included), e.g. a mask."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {change(k): map_strings(v, change) for k, v in value.items()}
    return value


def exception_detail(exc: BaseException) -> str:
    """An exception as one line, ``Type: message``, for an ``exception`` attempt's detail."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def stderr_tail(data: bytes | bytearray) -> str:
    """The last :data:`STDERR_TAIL_CHARS` characters of captured stderr, decoded leniently."""
    return data.decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]


def with_stderr(reason: str, stderr_tail: str) -> str:
    """A one-line reason, then the end of stderr when there is any."""
    tail = stderr_tail.strip()
    return f"{reason}\nstderr (last {STDERR_TAIL_CHARS} chars): {tail}" if tail else reason
