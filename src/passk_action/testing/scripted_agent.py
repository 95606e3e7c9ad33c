"""A scripted agent: a fake that behaves exactly as a JSON script says.

Tests and demos need an agent whose every answer, crash, hang and garbage
output is chosen in advance, so that the runner, the gate and the report can
be checked against a known truth.  This is that agent; it speaks the same
process protocol as a real one (one JSON request on stdin, one JSON answer on
stdout) so the code under test cannot tell the difference.

Run it as ``python -m passk_action.testing.scripted_agent SCRIPT.json``; with
``protocol: worker`` (``PASSK_PROTOCOL=worker``) one process plays every request
sent to it, one line each (:func:`serve_lines`).

The script::

    {
      "default": "approve",
      "rows": {
        "r-001": {"baseline": ["deny"], "candidate": ["deny", "approve"]},
        "r-002": {"*": [{"decision": "deny", "checks": {"return_window": "expired"}}]},
        "r-003": ["approve", {"crash": "model overloaded"}, {"hang": true}]
      }
    }

For a request ``{"id", "input", "attempt", "version"}`` the agent takes the
row's list for ``version`` (else its ``"*"`` list; a bare list is shorthand
for ``{"*": list}``), else ``"default"``.  Attempt n plays element n-1, and
the LAST element once n runs past the list, so confirmation attempts continue
the row's behaviour.  An outcome is one of:

- ``"deny"``: shorthand for ``{"decision": "deny"}``;
- ``{"decision": "deny", "checks": {"return_window": "ok"}}``: a normal answer,
  optionally with ``"usage": {"input_tokens": 812, ...}`` sent as it is; the
  decision may be any JSON value (``{"action": "refund", "amount": 120}``, a
  text an extractor reads), and ``"correct"`` or ``"score"`` report the
  outcome of a task its environment scores (then the decision is optional:
  ``{"correct": true}``);
- ``{"crash": "message"}``: raise an exception (traceback on stderr, exit 1);
- ``{"exit": 3, "stderr": "text"}``: write ``stderr`` (optional), exit 3;
- ``{"sleep": 2.5, "then": <outcome>}``: wait, then play ``then``;
- ``{"stdout": "raw text"}``: write exactly that text, exit 0 (bad output);
- ``{"hang": true}``: never finish (until killed).

If env ``PASSK_SCRIPTED_LOG`` names a file, each request received is appended
to it as one JSON line, in a single ``O_APPEND`` write, before the outcome is
played: concurrent attempts never interleave, and a test can assert which
attempts were asked (or never asked), including ones that later hung.

A script that is invalid, a request that is not JSON, or a row with no entry
and no ``"default"`` ends with exit 2 and a one-line message on stderr.  The
whole script is validated before anything is played, so a typo in any row is
reported at once rather than when that row happens to be asked.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, TypeAlias

from passk_action.agents.serve import PROTOCOL_ENV, REQUEST_ID, WORKER
from passk_action.errors import EXIT_USAGE, PasskError, UsageError

LOG_ENV = "PASSK_SCRIPTED_LOG"


class ScriptedCrash(RuntimeError):
    """Raised on purpose by a ``{"crash": ...}`` outcome."""


class _Value:
    """A frozen value, equal to another of its class with equal fields.

    What ``@dataclass(frozen=True)`` gives, written out: this agent starts once per
    attempt, and importing ``dataclasses`` (with the ``inspect`` it imports) was a
    third of its start-up (bench/suite_speed.md, "Three workers on two cores, and the
    scripted agent's start-up").
    """

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self) -> int:
        return hash((type(self), self._fields()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)


class Answer(_Value):
    __slots__ = ("checks", "decision", "outcome", "usage")
    decision: Any
    """Any JSON value; None: the answer has no decision (it reports an outcome)."""
    checks: tuple[tuple[str, str], ...]
    usage: Any
    """Sent as the answer's ``usage`` exactly as scripted (a malformed one too)."""
    outcome: tuple[tuple[str, Any], ...]
    """``correct`` and ``score`` as scripted, sent as they are."""

    def __init__(
        self,
        decision: Any,
        checks: tuple[tuple[str, str], ...] = (),
        usage: Any = None,
        outcome: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        self._set(decision=decision, checks=checks, usage=usage, outcome=outcome)


class Crash(_Value):
    __slots__ = ("message",)
    message: str

    def __init__(self, message: str) -> None:
        self._set(message=message)


class Exit(_Value):
    __slots__ = ("code", "stderr")
    code: int
    stderr: str

    def __init__(self, code: int, stderr: str = "") -> None:
        self._set(code=code, stderr=stderr)


class Sleep(_Value):
    __slots__ = ("seconds", "then")
    seconds: float
    then: Outcome

    def __init__(self, seconds: float, then: Outcome) -> None:
        self._set(seconds=seconds, then=then)


class RawStdout(_Value):
    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        self._set(text=text)


class Hang(_Value):
    __slots__ = ()


Outcome: TypeAlias = Answer | Crash | Exit | Sleep | RawStdout | Hang


class Script(_Value):
    __slots__ = ("default", "rows", "source")
    default: Outcome | None
    rows: Mapping[str, Mapping[str, tuple[Outcome, ...]]]
    source: str

    def __init__(
        self,
        default: Outcome | None,
        rows: Mapping[str, Mapping[str, tuple[Outcome, ...]]],
        source: str = "<script>",
    ) -> None:
        self._set(default=default, rows=rows, source=source)


def _fail(where: str, message: str, hint: str) -> UsageError:
    return UsageError(message, where=where, hint=hint)


def parse_outcome(value: Any, where: str) -> Outcome:
    """Turn one JSON outcome into its typed form, naming ``where`` on error."""
    if isinstance(value, str):
        return Answer(value)
    if not isinstance(value, dict):
        raise _fail(
            where,
            f"an outcome must be a string or an object, got {value!r}",
            'write e.g. "deny" or {"decision": "deny"}',
        )
    kinds = [k for k in ("decision", "crash", "exit", "sleep", "stdout", "hang") if k in value]
    if not kinds and ("correct" in value or "score" in value):
        kinds = ["decision"]  # an outcome reported without a decision
    if len(kinds) != 1:
        raise _fail(
            where,
            f"an outcome needs exactly one of decision, crash, exit, sleep, "
            f"stdout, hang; got keys {sorted(value)}",
            "keep one kind per outcome",
        )
    kind = kinds[0]
    extras = {
        "decision": {"checks", "usage", "correct", "score"},
        "exit": {"stderr"},
        "sleep": {"then"},
    }
    allowed = extras.get(kind, set())
    extra = sorted(set(value) - {kind} - allowed)
    if extra:
        raise _fail(
            where,
            f"unknown key(s) {extra} in a {kind!r} outcome",
            "remove them; see the scripted_agent docstring for the format",
        )
    raw = value.get(kind)
    if kind == "decision":
        checks = value.get("checks", {})
        if raw is None and "decision" in value:
            raise _fail(
                where, "decision must not be null", 'use {"stdout": ...} to script malformed output'
            )
        if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
            raise _fail(
                where,
                "checks must be an object of string values",
                'write e.g. {"return_window": "ok"}',
            )
        outcome = tuple((k, value[k]) for k in ("correct", "score") if k in value)
        return Answer(raw, tuple(checks.items()), value.get("usage"), outcome)
    if kind == "crash":
        return Crash(str(raw))
    if kind == "exit":
        stderr = value.get("stderr", "")
        if not isinstance(raw, int) or isinstance(raw, bool) or not 0 <= raw <= 255:
            raise _fail(where, f"exit must be an integer 0..255, got {raw!r}", 'e.g. {"exit": 3}')
        if not isinstance(stderr, str):
            raise _fail(where, "stderr must be a string", 'e.g. "stderr": "quota exceeded"')
        return Exit(raw, stderr)
    if kind == "sleep":
        if not isinstance(raw, (int, float)) or isinstance(raw, bool) or raw < 0:
            raise _fail(
                where,
                f"sleep must be a non-negative number of seconds, got {raw!r}",
                'e.g. {"sleep": 2.5, "then": "deny"}',
            )
        if "then" not in value:
            raise _fail(
                where, "a sleep outcome needs 'then'", 'e.g. {"sleep": 2.5, "then": "deny"}'
            )
        return Sleep(float(raw), parse_outcome(value["then"], f"{where}.then"))
    if kind == "stdout":
        if not isinstance(raw, str):
            raise _fail(where, "stdout must be a string", 'e.g. {"stdout": "not json"}')
        return RawStdout(raw)
    if raw is not True:
        raise _fail(where, f"hang must be true, got {raw!r}", 'write {"hang": true}')
    return Hang()


def _parse_list(value: Any, where: str) -> tuple[Outcome, ...]:
    if not isinstance(value, list) or not value:
        raise _fail(where, "must be a non-empty list of outcomes", 'e.g. ["deny", "approve"]')
    return tuple(parse_outcome(item, f"{where}[{i}]") for i, item in enumerate(value))


def parse_script(data: Any, source: str = "<script>") -> Script:
    """Validate a whole script (see the module docstring) into a :class:`Script`."""
    if not isinstance(data, dict):
        raise _fail(source, "the script must be a JSON object", 'e.g. {"default": "approve"}')
    unknown = sorted(set(data) - {"default", "rows"})
    if unknown:
        raise _fail(source, f"unknown top-level key(s) {unknown}", "only default and rows")
    default = parse_outcome(data["default"], f"{source}: default") if "default" in data else None
    raw_rows = data.get("rows", {})
    if not isinstance(raw_rows, dict):
        raise _fail(
            f"{source}: rows",
            "rows must be an object keyed by row id",
            'e.g. {"r-001": {"*": ["deny"]}}',
        )
    rows: dict[str, dict[str, tuple[Outcome, ...]]] = {}
    for row_id, entry in raw_rows.items():
        where = f"{source}: rows[{row_id!r}]"
        if isinstance(entry, list):
            entry = {"*": entry}
        if not isinstance(entry, dict):
            raise _fail(
                where,
                "must be a list of outcomes or an object keyed by version",
                'e.g. {"baseline": ["deny"], "candidate": ["approve"]}',
            )
        bad = sorted(set(entry) - {"baseline", "candidate", "*"})
        if bad:
            raise _fail(where, f"unknown version key(s) {bad}", 'use "baseline", "candidate", "*"')
        rows[row_id] = {v: _parse_list(lst, f"{where}.{v}") for v, lst in entry.items()}
    return Script(default, rows, source)


def load_script(path: str) -> Script:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise UsageError(
            f"cannot read the script: {exc.strerror}",
            where=path,
            hint="pass the path of a JSON script file",
        ) from exc
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"not valid JSON: {exc.msg}", where=f"{path}:{exc.lineno}", hint="fix the JSON syntax"
        ) from exc
    return parse_script(data, path)


def outcome_for(script: Script, row_id: str, version: str, attempt: int) -> Outcome:
    """The outcome for attempt ``attempt`` (1-based), repeating a list's last element."""
    entry = script.rows.get(row_id, {})
    outcomes = entry.get(version) or entry.get("*")
    if outcomes is None:
        if script.default is None:
            raise UsageError(
                f"no outcome for row {row_id!r} ({version}) and no default",
                where=script.source,
                hint=f'add rows["{row_id}"] or a "default" outcome',
            )
        return script.default
    return outcomes[min(attempt, len(outcomes)) - 1]


def parse_request(text: str, env: Mapping[str, str]) -> tuple[dict[str, Any], str, str, int]:
    """The request object and its (row id, version, attempt); env fills missing keys."""
    try:
        request = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"the request on stdin is not JSON: {exc.msg}",
            where="stdin",
            hint="passk writes one JSON object per attempt",
        ) from exc
    if not isinstance(request, dict):
        raise UsageError("the request on stdin must be a JSON object", where="stdin")
    row_id = request.get("id", env.get("PASSK_ROW_ID"))
    version = request.get("version", env.get("PASSK_VERSION"))
    attempt = request.get("attempt", env.get("PASSK_ATTEMPT"))
    number = 0
    if isinstance(attempt, int) and not isinstance(attempt, bool):
        number = attempt
    elif isinstance(attempt, str) and attempt.isdigit():
        number = int(attempt)
    if not isinstance(row_id, str) or not isinstance(version, str) or number < 1:
        raise UsageError(
            f"the request needs id, version and a positive attempt, got "
            f"id={row_id!r} version={version!r} attempt={attempt!r}",
            where="stdin",
            hint="send {id, input, attempt, version}",
        )
    return request, row_id, version, number


def log_request(path: str, request: Mapping[str, Any]) -> None:
    """Append one line with a single write: O_APPEND keeps concurrent lines whole."""
    line = (json.dumps(request, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def settle(outcome: Outcome) -> Outcome:
    """Wait out a sleep outcome (and any it wraps); the outcome to play after it."""
    while isinstance(outcome, Sleep):
        time.sleep(outcome.seconds)
        outcome = outcome.then
    return outcome


def play(
    outcome: Outcome, stdout: IO[bytes], stderr: IO[bytes], request_id: str | None = None
) -> int:
    """Perform one outcome; return the exit code (a crash raises instead).

    With ``request_id`` (the worker protocol) an answer line echoes it."""
    outcome = settle(outcome)
    if isinstance(outcome, Answer):
        answer: dict[str, Any] = dict(outcome.outcome)
        if request_id is not None:
            answer[REQUEST_ID] = request_id
        if outcome.decision is not None:
            answer["decision"] = outcome.decision
        if outcome.checks:
            answer["checks"] = dict(outcome.checks)
        if outcome.usage is not None:
            answer["usage"] = outcome.usage
        stdout.write((json.dumps(answer, ensure_ascii=False) + "\n").encode("utf-8"))
        return 0
    if isinstance(outcome, Crash):
        raise ScriptedCrash(outcome.message)
    if isinstance(outcome, Exit):
        stderr.write(outcome.stderr.encode("utf-8"))
        return outcome.code
    if isinstance(outcome, RawStdout):
        stdout.write(outcome.text.encode("utf-8"))
        return 0
    while True:  # Hang: only a kill from the runner's timeout ends this.
        time.sleep(3600)


def serve_lines(script: Script, stdin: IO[str], stdout: IO[bytes], stderr: IO[bytes]) -> int:
    """The worker protocol (``PASSK_PROTOCOL=worker``): one request per line, each played.

    An answer echoes the request's ``request_id``; a crash is the error line
    ``{"request_id", "error"}`` (the worker stays, as an agent reporting a failure
    does); an exit, raw stdout and a hang are played as they are, so a test sees
    what passk makes of a worker that dies, garbles its stream or stops answering.
    A line that is no request ends the worker with exit 2, as it ends one attempt.
    """
    log_path = os.environ.get(LOG_ENV)
    for line in stdin:
        if not line.strip():
            continue
        request, row_id, version, attempt = parse_request(line, {})
        request_id = request.pop(REQUEST_ID, None)
        if not isinstance(request_id, str):
            raise UsageError(
                "a worker request needs a request_id string", where="stdin",
                hint="passk sends one with every request line",
            )  # fmt: skip
        if log_path:
            log_request(log_path, request)
        outcome = settle(outcome_for(script, row_id, version, attempt))
        if isinstance(outcome, Exit):
            return play(outcome, stdout, stderr)
        if isinstance(outcome, Crash):
            error = {REQUEST_ID: request_id, "error": f"ScriptedCrash: {outcome.message}"}
            stdout.write((json.dumps(error, ensure_ascii=False) + "\n").encode("utf-8"))
        else:
            play(outcome, stdout, stderr, request_id)
        stdout.flush()
        stderr.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) != 1:
            raise UsageError(
                "expected exactly one argument, the script path",
                hint="python -m passk_action.testing.scripted_agent SCRIPT.json",
            )
        script = load_script(args[0])
        if os.environ.get(PROTOCOL_ENV) == WORKER:
            return serve_lines(script, sys.stdin, sys.stdout.buffer, sys.stderr.buffer)
        request, row_id, version, attempt = parse_request(sys.stdin.read(), os.environ)
        log_path = os.environ.get(LOG_ENV)
        if log_path:
            log_request(log_path, request)
        outcome = outcome_for(script, row_id, version, attempt)
    except PasskError as exc:
        print(f"scripted_agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    code = play(outcome, sys.stdout.buffer, sys.stderr.buffer)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
