"""An agent behind an HTTP endpoint (``agent.http`` in passk.yml).

Each attempt sends the request object of ``docs/protocol.md`` (``id``,
``input``, ``attempt``, ``version``) as a JSON body and reads the answer from
the response body by the same rules as a process agent's stdout.  Connections
are pooled (one ``requests.Session`` sized to the run's concurrency), so a
run of thousands of attempts does not pay a TCP and TLS handshake for each.

Header values may name environment variables, ``Authorization: Bearer
${MODEL_API_KEY}``.  They are expanded from the parent environment for each
request and the expanded value lives only in that request: never in the
agent's description, an error detail (an echo of it is masked) or an artifact.
Like ``pass_env`` for process agents, the workflow's own credentials
(``GITHUB_TOKEN`` …) can be referenced only when listed in ``pass_env``.

Failures are error attempts, so the run's retry policy applies to them:

- ``http-status``: a non-2xx answer.  On 429 and 503 the endpoint is asking
  us to slow down: a ``Retry-After`` (seconds or an HTTP date, capped) holds
  back *every* request of this agent until it has passed, since a rate limit
  is usually per key, not per connection;
- ``connection-error``: no connection, or it broke mid-answer;
- ``timeout``: no answer within ``timeout_s`` (connect, and the whole body);
- ``bad-output`` / ``output-too-large``: as for stdout.
"""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone

import requests
from requests.adapters import HTTPAdapter

from ..core.model import Attempt
from ..errors import ConfigError
from ..inputs.config import HttpAgentConfig
from .runner import (
    BAD_OUTPUT,
    DEFAULT_OUTPUT_CAP,
    OUTPUT_TOO_LARGE,
    SECRET_ENV,
    TIMEOUT,
    AttemptCancelled,
    AttemptRequest,
    BadOutput,
    decided_attempt,
    error_attempt,
    parse_output,
    request_message,
)

HTTP_STATUS = "http-status"
CONNECTION_ERROR = "connection-error"

RETRY_AFTER_STATUSES = frozenset({429, 503})
DEFAULT_MAX_RETRY_AFTER_S = 60.0
_BODY_SNIPPET = 200
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MASK = "***"


def header_env_names(headers: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """``(header, variable)`` for every ``${VAR}`` a header value references."""
    return [(name, ref) for name, value in headers for ref in _ENV_REF.findall(value)]


def expand_headers(
    headers: tuple[tuple[str, str], ...], env: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Headers with ``${VAR}`` replaced from ``env``, and the secret values used.

    Returns the values so error details can mask any echo of them.  Raises
    KeyError naming a variable that is not set.
    """
    secrets: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        value = env[match.group(1)]
        if value:
            secrets.append(value)
        return value

    return {name: _ENV_REF.sub(substitute, value) for name, value in headers}, secrets


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (RFC 9110 §10.2.3), or None.

    Either a non-negative integer number of seconds or an HTTP date; a date in
    the past means "now" (0).  Anything else is ignored, as the RFC allows.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _mask(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, _MASK)
    return text


def _one_line(text: str, limit: int = _BODY_SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class HttpAgent:
    """Sends each attempt to an HTTP endpoint; see the module docstring."""

    def __init__(
        self,
        config: HttpAgentConfig,
        parent_env: Mapping[str, str],
        *,
        concurrency: int = 4,
        pass_env: tuple[str, ...] = (),
        description: str | None = None,
        where: str = "agent.http",
        output_cap: int = DEFAULT_OUTPUT_CAP,
        max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.config = config
        self.description = description or config.describe()
        # Kept by reference, read per request: the expanded values are never stored.
        self._env = parent_env
        self._output_cap = output_cap
        self._max_retry_after_s = max_retry_after_s
        self._clock = clock
        self._wall_clock = wall_clock
        for header, name in header_env_names(config.headers):
            if name in SECRET_ENV and name not in pass_env:
                raise ConfigError(
                    f"header {header!r} references ${{{name}}}, a credential of the workflow "
                    "that passk keeps from agents",
                    where=f"{where}.headers.{header}",
                    hint=f"use the endpoint's own key, or list {name} in pass_env",
                )
            if name not in parent_env:
                raise ConfigError(
                    f"header {header!r} references ${{{name}}}, which is not set",
                    where=f"{where}.headers.{header}",
                    hint=f"set {name} in the environment (e.g. from a repository secret)",
                )
        self._session = requests.Session()
        # One connection per concurrency slot; more would only sit idle.
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=max(1, concurrency))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._lock = threading.Lock()
        self._not_before = 0.0
        self._wake = threading.Event()
        self._generation = 0

    # -- lifecycle ------------------------------------------------------------------

    def cancel(self) -> None:
        """Abandon the attempts in flight and cut any Retry-After wait short.

        A request already on the wire cannot be recalled; its answer, when it
        comes (at most ``timeout_s`` later), is dropped and the attempt is not
        recorded, so a resumed run makes it again.
        """
        with self._lock:
            self._generation += 1
            self._wake.set()
            self._wake = threading.Event()

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> HttpAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one attempt -------------------------------------------------------------------

    def _hold_back(self, generation: int) -> None:
        """Wait until a Retry-After given to any request has passed."""
        while True:
            with self._lock:
                if self._generation != generation:
                    raise AttemptCancelled("cancelled while backing off")
                wait = self._not_before - self._clock()
                wake = self._wake
            if wait <= 0:
                return
            wake.wait(wait)

    def _back_off(self, seconds: float) -> None:
        with self._lock:
            until = self._clock() + min(seconds, self._max_retry_after_s)
            self._not_before = max(self._not_before, until)

    def run(self, request: AttemptRequest) -> Attempt:
        with self._lock:
            generation = self._generation
        self._hold_back(generation)
        started = self._clock()
        attempt = self._send(request, started)
        with self._lock:
            if self._generation != generation:
                raise AttemptCancelled(f"attempt {request.number} of row {request.row.id!r}")
        return attempt

    def _send(self, request: AttemptRequest, started: float) -> Attempt:
        body = request_message(request)
        try:
            headers, secrets = expand_headers(self.config.headers, self._env)
        except KeyError as exc:
            return self._error(
                request,
                HTTP_STATUS,
                f"a header references ${{{exc.args[0]}}}, which is no longer set",
                started,
            )
        headers.setdefault("Content-Type", "application/json")
        headers.setdefault("Accept", "application/json")
        timeout = self.config.timeout_s
        try:
            if self.config.method == "GET":
                # GET carries no body: the request goes in the query string,
                # ``input`` as its JSON text.
                params = {**body, "input": json.dumps(request.row.input, ensure_ascii=False)}
                response = self._session.get(
                    self.config.url, params=params, headers=headers, timeout=timeout, stream=True
                )
            else:
                response = self._session.request(
                    self.config.method,
                    self.config.url,
                    data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                    headers=headers,
                    timeout=timeout,
                    stream=True,
                )
            with response:
                content, too_large = self._read_body(response, started)
        except requests.Timeout:
            return self._error(
                request, TIMEOUT, f"no answer within the {timeout:g}s timeout", started
            )
        except _BodyTimeout:
            return self._error(
                request, TIMEOUT, f"the answer took longer than the {timeout:g}s timeout", started
            )
        except requests.RequestException as exc:
            detail = _mask(_one_line(f"{type(exc).__name__}: {exc}", 300), secrets)
            return self._error(request, CONNECTION_ERROR, f"request failed: {detail}", started)

        status = response.status_code
        if not 200 <= status < 300:
            text = _mask(_one_line(content.decode("utf-8", errors="replace")), secrets)
            reason = f"HTTP {status} {response.reason or ''}".rstrip()
            if status in RETRY_AFTER_STATUSES:
                wait = parse_retry_after(response.headers.get("Retry-After"), self._wall_clock())
                if wait is not None:
                    self._back_off(wait)
                    reason += f"; Retry-After {wait:g}s honoured"
            detail = f"{reason}: {text}" if text else reason
            return self._error(request, HTTP_STATUS, detail, started)
        if too_large:
            return self._error(
                request,
                OUTPUT_TOO_LARGE,
                f"the response body exceeded {self._output_cap} bytes",
                started,
            )
        try:
            decision, checks = parse_output(content)
        except BadOutput as exc:
            message = (
                str(exc).replace("stdout", "the response body").replace("; send logs to stderr", "")
            )
            return self._error(request, BAD_OUTPUT, _mask(message, secrets), started)
        return decided_attempt(request, decision, checks, self._clock() - started)

    def _read_body(self, response: requests.Response, started: float) -> tuple[bytes, bool]:
        """The body up to the cap (True when cut), within the attempt's total timeout."""
        deadline = started + self.config.timeout_s
        body = bytearray()
        for chunk in response.iter_content(chunk_size=1 << 16):
            body += chunk
            if len(body) > self._output_cap:
                return bytes(body[: self._output_cap]), True
            if self._clock() > deadline:
                raise _BodyTimeout
        return bytes(body), False

    def _error(self, request: AttemptRequest, reason: str, detail: str, started: float) -> Attempt:
        return error_attempt(request, reason, detail, self._clock() - started)


class _BodyTimeout(Exception):
    """The body trickled in past the attempt's total timeout."""
