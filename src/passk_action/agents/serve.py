"""Serve a Python function as a passk agent, under either protocol.

Write the decision logic once::

    from passk_action.serve import agent

    @agent
    def decide(request):
        return {"decision": "deny", "checks": {"return_window": "expired"}}

and run the file as the agent command.  Started once per attempt (the default
``process`` protocol) it reads one request from stdin and answers once; started
by passk's worker pool (``agent.protocol: worker``, which sets
``PASSK_PROTOCOL=worker``) it answers one request per line until stdin closes,
so start-up cost (imports, clients, models) is paid once per worker instead of
once per attempt.  See ``docs/protocol.md``.

While the function runs, ``sys.stdout`` points at stderr: a stray ``print``
in agent code becomes a log line instead of corrupting the answer stream.
An exception becomes an error answer (worker) or a non-zero exit (process),
with its traceback on stderr; the function is never asked twice for one request.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import IO, Any, TypeVar

PROTOCOL_ENV = "PASSK_PROTOCOL"
WORKER = "worker"
REQUEST_ID = "request_id"

Handler = Callable[[dict[str, Any]], Any]
F = TypeVar("F", bound=Handler)


def _answer_object(answer: Any) -> dict[str, Any]:
    """What the handler returned, as the protocol's answer object.

    A bare string is shorthand for ``{"decision": ...}``; anything else is
    passed on for passk to validate, so the rules live in one place (passk).
    """
    if isinstance(answer, str):
        return {"decision": answer}
    if isinstance(answer, Mapping):
        out = dict(answer)
        if "usage" in out:
            out["usage"] = _usage_object(out["usage"])
        return out
    return {"decision": answer}


_SDK_USAGE_NAMES = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("prompt_tokens", "input_tokens"),  # the openai SDK's names
    ("completion_tokens", "output_tokens"),
)


def _usage_object(usage: Any) -> Any:
    """The answer's ``usage`` in a form that survives JSON; passk validates the rest.

    An SDK's usage object (openai's ``prompt_tokens``/``completion_tokens``,
    anthropic's ``input_tokens``/``output_tokens``) becomes the protocol's
    keys.  A value JSON cannot carry (NaN, an object) becomes its text, which
    passk records as a warning on the attempt: the decision is never lost.
    """
    if usage is not None and not isinstance(usage, Mapping):
        found = {
            key: getattr(usage, name)
            for name, key in _SDK_USAGE_NAMES
            if isinstance(getattr(usage, name, None), int)
        }
        usage = found or str(usage)
    try:
        json.dumps(usage, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"not JSON ({exc}): {str(usage)[:80]}"
    return usage


def _set_attempt_env(request: Mapping[str, Any]) -> None:
    # The per-attempt protocol describes the attempt in PASSK_* variables; a
    # worker gets them per request, so code written for either protocol works.
    for name, key in (
        ("PASSK_ROW_ID", "id"),
        ("PASSK_ATTEMPT", "attempt"),
        ("PASSK_VERSION", "version"),
    ):
        if key in request:
            os.environ[name] = str(request[key])


def _write_line(out: IO[str], obj: Mapping[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n")
    out.flush()


def _describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:500]


def serve(
    fn: Handler,
    *,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Answer passk's requests with ``fn``; return the exit status for ``sys.exit``.

    ``fn`` receives the request object (``id``, ``input``, ``attempt``,
    ``version``) and returns the answer object (``decision``, optional
    ``checks`` and ``usage``) or a bare decision string.
    """
    env = env if env is not None else os.environ
    worker = env.get(PROTOCOL_ENV) == WORKER
    if stdout is None:
        stdout = _claim_stdout()
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    if worker:
        return _serve_lines(fn, stdin, stdout, stderr)
    return _serve_once(fn, stdin, stdout, stderr)


def _claim_stdout() -> IO[str]:
    """Keep file descriptor 1 for answers only; point fd 1 itself at stderr.

    One stray write to stdout (a library's print, a child process inheriting
    fd 1) would turn an answer into bad output, and in a worker desynchronise
    the answer stream for every later request.  After this, anything written to
    fd 1 lands in stderr, and answers go through a private copy of the pipe.
    """
    sys.stdout.flush()
    answers = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(answers, "w", encoding="utf-8", newline="\n")


def _serve_once(fn: Handler, stdin: IO[str], stdout: IO[str], stderr: IO[str]) -> int:
    text = stdin.read()
    try:
        request = json.loads(text)
    except json.JSONDecodeError as exc:
        print(f"passk agent: stdin is not a JSON request: {exc}", file=stderr)
        return 2
    if not isinstance(request, dict):
        print("passk agent: stdin is not a JSON request object", file=stderr)
        return 2
    _set_attempt_env(request)
    try:
        with contextlib.redirect_stdout(stderr):
            answer = _answer_object(fn(request))
        _write_line(stdout, answer)
    except Exception:
        traceback.print_exc(file=stderr)
        return 1
    return 0


def _serve_lines(fn: Handler, stdin: IO[str], stdout: IO[str], stderr: IO[str]) -> int:
    """One request per line in, one answer per line out, echoing ``request_id``."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            # Without a request id there is nothing to answer; passk never
            # sends this, so say so loudly and stop rather than guess.
            print(f"passk agent: request line is not JSON: {exc}", file=stderr)
            return 2
        if not isinstance(request, dict) or REQUEST_ID not in request:
            print(f"passk agent: request line has no {REQUEST_ID!r}", file=stderr)
            return 2
        request_id = request.pop(REQUEST_ID)
        _set_attempt_env(request)
        try:
            with contextlib.redirect_stdout(stderr):
                answer = _answer_object(fn(request))
            text = json.dumps(
                {**answer, REQUEST_ID: request_id}, ensure_ascii=False, allow_nan=False
            )
        except Exception as exc:
            traceback.print_exc(file=stderr)
            text = json.dumps({REQUEST_ID: request_id, "error": _describe(exc)})
        stdout.write(text + "\n")
        stdout.flush()
    return 0


def agent(fn: F) -> F:
    """Decorator: serve ``fn`` when its file is run as a program, else leave it be.

    Defined in ``__main__`` (the file passk starts), the decorator serves and
    exits; imported from elsewhere (a test), ``fn`` is returned unchanged so it
    can be called directly.
    """
    if getattr(fn, "__module__", None) == "__main__":
        sys.exit(serve(fn))
    return fn
