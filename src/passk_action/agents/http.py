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
As for process agents, the runner's own credentials (``GITHUB_TOKEN``,
``ACTIONS_*`` … ``core/runner_credentials.py``) can never be referenced: a
header naming one is refused.

Failures are error attempts, so the run's retry policy applies to them:

- ``http-status``: a non-2xx answer.  On 429 and 503 the endpoint is asking
  us to slow down.  The rejected request is not sent again before its
  ``Retry-After`` (seconds or an HTTP date, capped) has passed, nor is any
  other when the endpoint says the wait is for every request (a 503, or a
  quota used up: :func:`for_every_request`); otherwise the other requests go
  on, and the agent's send *rate* is cut only when the endpoint refuses more
  than scattered pushback would (:class:`Pacer`);
- ``connection-error``: no connection, or it broke before the answer was complete;
- ``timeout``: no complete answer within ``timeout_s``, which bounds the whole
  attempt: connecting, the headers and the body (a watchdog closes the socket of
  a body that stalls or trickles in past the deadline);
- ``bad-output`` / ``output-too-large``: as for stdout.

A ``${VAR}`` value is a secret: it is masked (``***``) wherever the endpoint
echoes it into something passk stores (an error detail, a decision, a check,
the usage's model, counter names and warnings), in the forms it can take on
the way (as is, JSON-escaped, ``\\uXXXX``-escaped, percent-encoded, without
the spaces around it), every occurrence, inside a longer word too
(``xx<secret>yy``).  The body is masked before anything is read or cut from
it, so a snippet that ends inside the secret keeps none of it.  Masking a
short value everywhere would garble unrelated text (``1`` in an address such
as ``127.0.0.1``), and not masking it would store it, so a ``${VAR}`` value
with fewer than :data:`MIN_SECRET_CHARS` characters besides the spaces
around it (and at least one) is refused when the agent is built (exit 2
naming the header): a value that is no secret belongs in the header as it is.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

import requests
from requests.adapters import HTTPAdapter

from ..core.model import Attempt, Usage
from ..core.retry_after import retry_after_s
from ..core.runner_credentials import MIN_SECRET_CHARS, is_runner_credential
from ..errors import ConfigError
from ..inputs.agent_config import HEADER_ENV_REF, HttpAgentConfig
from .answer import (
    DEFAULT_OUTPUT_CAP,
    BadOutput,
    decided_attempt,
    error_attempt,
    map_strings,
    parse_output,
    request_message,
)
from .protocol import (
    BAD_OUTPUT,
    OUTPUT_TOO_LARGE,
    TIMEOUT,
    AttemptCancelled,
    AttemptRequest,
    RetryAfters,
)

HTTP_STATUS = "http-status"
CONNECTION_ERROR = "connection-error"

RETRY_AFTER_STATUSES = frozenset({429, 503})
DEFAULT_MAX_RETRY_AFTER_S = 60.0
_BODY_SNIPPET = 200
_ENV_REF = HEADER_ENV_REF
_MASK = "***"
MIN_RATE = 1.0
"""Requests per second the pacer never goes below after a 429 or 503."""
HEADROOM = 1.1
"""After a cut, the limit is this times the rate the endpoint admits (:class:`Pacer`)."""
WINDOW_S = 2.0
"""Seconds of sends and refusals the pacer judges the endpoint by."""
MIN_SPAN_S = 0.25
"""The shortest span a rate is measured over: a run's first sends leave together."""
TOLERATED_SHARE = 0.15
"""The share of requests an endpoint may refuse without the rate being cut."""
SIGNIFICANCE_Z = 3.0
"""How many standard errors above :data:`TOLERATED_SHARE` the refusals must be to cut."""
MIN_SAMPLE = 20
"""Fewer requests than this in the window say nothing about a share: no cut yet."""
RECOVER_AFTER_S = 1.0
"""Seconds without pushback after which the limit doubles each second."""
PROBE_STEP = 0.05
"""Requests a second each accepted answer adds while refusals stay within tolerance."""
PROBE_BELOW = 1.0 - 1.0 / HEADROOM
"""Refused share under which the limit is probed upwards: below what a limit met at
:data:`HEADROOM` x its rate refuses, so pushback scattered over a run."""
GLOBAL_KEY = "*"
"""The key of a wait the endpoint set for every request, in the pending Retry-After map."""
_RECHECK_S = 0.1
"""Longest sleep of a request waiting for a send slot: a raised limit is seen this soon."""
_QUOTA_HEADERS = ("ratelimit-remaining", "x-ratelimit-remaining", "x-ratelimit-remaining-requests")
_STRUCTURED_QUOTA = re.compile(r";\s*r\s*=\s*0\s*(?:;|,|$)")


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


def secret_forms(secret: str) -> set[str]:
    """The ways ``secret`` can appear in text passk stores: as is, JSON-escaped, percent-encoded."""
    forms = {
        secret,
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret)[1:-1].replace("/", "\\/"),
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
    }
    return {form for form in forms if form}


def masker(secrets: Iterable[str]) -> Callable[[str], str]:
    """A function that replaces every stored form of each secret by ``***``.

    Every occurrence, inside a longer word too; the longest form first, so a
    secret that contains another is masked whole.  Values shorter than
    :data:`MIN_SECRET_CHARS` are left alone (:class:`HttpAgent` refuses them).
    """
    # A value padded with spaces is echoed trimmed too (a server strips a header's
    # value): both are masked.
    spelled = {spelling for secret in secrets for spelling in (secret, secret.strip())}
    long_enough = [secret for secret in spelled if len(secret) >= MIN_SECRET_CHARS]
    forms = sorted(
        {form for secret in long_enough for form in secret_forms(secret)},
        key=len,
        reverse=True,
    )
    if not forms:
        return lambda text: text
    pattern = re.compile("|".join(map(re.escape, forms)))
    return lambda text: pattern.sub(_MASK, text)


class Pacer:
    """The send rate of one HTTP agent: unlimited until the endpoint refuses too much.

    A 429 or 503 says up to three things, and each gets its own answer:

    - *this request, not before* ``Retry-After``: the refused request waits
      that long (:class:`HttpAgent`) and is then sent at once, the others go on;
    - *nobody, not before* ``Retry-After``, when the endpoint says the wait is
      for every request (:func:`for_every_request`): :meth:`pause`;
    - *slower*, when the endpoint refuses more than it can be refusing by
      chance.  Over the last :data:`WINDOW_S` seconds, with ``n`` requests sent
      and ``r`` refused, the rate is cut when ``r > p n + z sqrt(n p (1 - p))``
      (a one-sided binomial test of "at most a share ``p`` refused", ``p`` =
      :data:`TOLERATED_SHARE`, ``z`` = :data:`SIGNIFICANCE_Z`), to
      :data:`HEADROOM` times the rate the endpoint admitted, ``(n - r) / span``
      (``span`` the window, at least :data:`MIN_SPAN_S`), never below
      :data:`MIN_RATE` and never above the limit already set.  Pushback
      scattered through a run (a few percent of requests refused whatever the
      rate, or one refusal among the first requests, before any answer)
      passes the test and costs no rate; above a real limit L what is admitted
      is L, so the rate settles at HEADROOM x L and follows L down.

    The limit grows back two ways: once a second has passed without pushback,
    each accepted answer adds one request a second (it doubles every second
    while the limit binds), and while the window's refused share stays under
    :data:`PROBE_BELOW` (what a limit met at HEADROOM x its rate refuses) each
    adds :data:`PROBE_STEP` (a few percent a second), so a limit that rose
    under scattered pushback is found again.

    Slots are taken when a request leaves (:meth:`claim`), never handed out
    ahead: a cut or a pause applies to every request not yet sent, and a
    raised limit to every request waiting.  (The first design handed each
    thread its slot in advance: after a 429 before any answer, which found an
    empty window and cut the rate to 1 a second, 32 threads held slots one
    second apart and one early refusal cost 44 s; see bench/README.md, "Rate
    limits".)
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.rate: float | None = None
        self.paused_until = float("-inf")
        self._next_at = float("-inf")
        self._sends: deque[float] = deque()
        self._refusals: deque[float] = deque()
        self._first_send: float | None = None
        self._pushed_at = float("-inf")

    def claim(self) -> float:
        """Take a send slot now (0.0), or the seconds until one may be free (none taken)."""
        now = self._clock()
        if now < self.paused_until:
            return self.paused_until - now
        if self.rate is not None:
            if now < self._next_at:
                return self._next_at - now
            interval = 1.0 / self.rate
            # A thread that woke late keeps up to one interval of its lateness,
            # so the rate holds however the threads are scheduled.
            self._next_at = max(self._next_at, now - interval) + interval
        if self._first_send is None:
            self._first_send = now
        self._sends.append(now)
        self._forget(now)
        return 0.0

    def pause(self, seconds: float) -> None:
        """No request before ``seconds`` from now: the endpoint said so for all of them."""
        self.paused_until = max(self.paused_until, self._clock() + seconds)

    def accepted(self) -> None:
        """The endpoint answered a request (anything but pushback)."""
        now = self._clock()
        self._forget(now)
        if self.rate is None:
            return
        if now - self._pushed_at >= RECOVER_AFTER_S:
            self.rate += 1.0
        elif len(self._refusals) < PROBE_BELOW * len(self._sends):
            self.rate += PROBE_STEP

    def pushback(self) -> bool:
        """The endpoint answered 429 or 503; whether the limit was cut."""
        now = self._clock()
        self._pushed_at = now
        self._refusals.append(now)
        self._forget(now)
        if not self._refusing():
            return False
        sent = len(self._sends)
        admitted = max(0, sent - len(self._refusals))
        first = self._first_send if self._first_send is not None else now
        span = min(WINDOW_S, max(MIN_SPAN_S, now - first))
        level = max(MIN_RATE, HEADROOM * admitted / span)
        if self.rate is not None and level >= self.rate:
            return False
        self.rate = level
        if self._sends:
            # The next slot, one new interval after the last send.
            self._next_at = self._sends[-1] + 1.0 / level
        return True

    def _refusing(self) -> bool:
        """Refusals in the window significantly above :data:`TOLERATED_SHARE` of the sends."""
        sent = len(self._sends)
        refused = len(self._refusals)
        if sent < MIN_SAMPLE:
            return False
        p = TOLERATED_SHARE
        return min(refused, sent) > p * sent + SIGNIFICANCE_Z * math.sqrt(sent * p * (1 - p))

    def _forget(self, now: float) -> None:
        for times in (self._sends, self._refusals):
            while times and times[0] < now - WINDOW_S:
                times.popleft()


def for_every_request(status: int, headers: Mapping[str, str]) -> bool:
    """Whether the endpoint's Retry-After is for every request of the client, not this one.

    A 503's is (RFC 9110 §10.2.3: how long the service is expected to be
    unavailable to the client), and so is a 429's that says the client's quota
    is used up: ``RateLimit-Remaining``, ``X-RateLimit-Remaining`` or
    ``X-RateLimit-Remaining-Requests`` of 0, or a ``RateLimit`` field with
    ``r=0`` (draft-ietf-httpapi-ratelimit-headers).  A plain 429 refuses that
    request; whether the others should slow down is the :class:`Pacer`'s call.
    """
    if status == 503:
        return True
    lowered = {name.lower(): value for name, value in headers.items()}
    if any(lowered.get(name, "").strip() == "0" for name in _QUOTA_HEADERS):
        return True
    return bool(_STRUCTURED_QUOTA.search(lowered.get("ratelimit", "")))


def _one_line(text: str, limit: int = _BODY_SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Clocks:
    """The time an HTTP agent reads: monotonic seconds for its waits and deadlines, and the
    wall clock a Retry-After date is read against (tests set both)."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], datetime] = _utc_now


class HttpAgent:
    """Sends each attempt to an HTTP endpoint; see the module docstring."""

    def __init__(
        self,
        config: HttpAgentConfig,
        parent_env: Mapping[str, str],
        *,
        concurrency: int = 4,
        description: str | None = None,
        where: str = "agent.http",
        output_cap: int = DEFAULT_OUTPUT_CAP,
        max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S,
        clocks: Clocks | None = None,
    ) -> None:
        self.config = config
        self.description = description or config.describe()
        # Kept by reference, read per request: the expanded values are never stored.
        self._env = parent_env
        self._output_cap = output_cap
        self._max_retry_after_s = max_retry_after_s
        clocks = clocks or Clocks()
        self._clock = clocks.monotonic
        self._wall_clock = clocks.wall
        for header, name in header_env_names(config.headers):
            if is_runner_credential(name):
                raise ConfigError(
                    f"header {header!r} references ${{{name}}}, a credential of the runner "
                    "that no agent may get",
                    where=f"{where}.headers.{header}",
                    hint="use the endpoint's own key, passed under a name of its own",
                )
            if name not in parent_env:
                raise ConfigError(
                    f"header {header!r} references ${{{name}}}, which is not set",
                    where=f"{where}.headers.{header}",
                    hint=f"set {name} in the environment (e.g. from a repository secret)",
                )
            # Judged without the spaces around it: a server strips them, and may echo
            # what is left.
            if 0 < len(parent_env[name].strip()) < MIN_SECRET_CHARS:
                raise ConfigError(
                    f"header {header!r} references ${{{name}}}, whose value has only "
                    f"{len(parent_env[name].strip())} character(s) besides spaces: too "
                    "short for passk to mask "
                    "wherever the endpoint echoes it without garbling other text",
                    where=f"{where}.headers.{header}",
                    hint=f"a ${{VAR}} value is treated as a secret: give {name} a value of "
                    f"at least {MIN_SECRET_CHARS} characters, or, if it is no secret, write "
                    "it into the header as it is",
                )
        self._session = requests.Session()
        # One connection per concurrency slot; more would only sit idle.
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=max(1, concurrency))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._lock = threading.Lock()
        # Requests waiting for a send slot sleep on it; a cut, a pause or a cancel wakes them.
        self._paced = threading.Condition(self._lock)
        self._pacer = Pacer(clocks.monotonic)
        # Per request (row, number, phase, version): not before this clock time,
        # from a Retry-After given to that request.
        self._retry_at: dict[tuple[str, int, str, str], float] = {}
        self._wake = threading.Event()
        self._generation = 0
        self._save: Callable[[dict[str, str]], None] | None = None

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
            self._paced.notify_all()

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> HttpAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- Retry-After across processes (``--resume``) ------------------------------------

    def carry_retry_after(self, pending: RetryAfters, save: Callable[[RetryAfters], None]) -> None:
        """Honour Retry-Afters a stopped run was given, and report new ones to ``save``.

        ``pending`` maps a request key (:func:`retry_key`) to the UTC time
        (ISO 8601) before which that request must not be sent again;
        ``save`` is called with the whole pending map whenever it changes, so
        a run stopped during the wait resumes without hammering the endpoint.
        """
        now_wall, now = self._wall_clock(), self._clock()
        with self._lock:
            for key, when in pending.items():
                try:
                    request_key = None if key == GLOBAL_KEY else _key_from_text(key)
                    wait = (datetime.fromisoformat(when) - now_wall).total_seconds()
                except (ValueError, TypeError, OverflowError):
                    continue  # not ours to trust: a damaged entry is dropped
                if wait <= 0:
                    continue
                if request_key is None:
                    self._pacer.pause(min(wait, self._max_retry_after_s))
                else:
                    self._retry_at[request_key] = now + min(wait, self._max_retry_after_s)
            self._save = save

    def _pending(self) -> dict[str, str]:
        """The Retry-Afters still to wait for, as wall-clock times (call with the lock held)."""
        now_wall, now = self._wall_clock(), self._clock()
        waits = {retry_key(*key): at for key, at in self._retry_at.items() if at > now}
        if self._pacer.paused_until > now:
            waits[GLOBAL_KEY] = self._pacer.paused_until
        return {
            key: (now_wall + timedelta(seconds=at - now)).isoformat() for key, at in waits.items()
        }

    def ready_in(self, request: AttemptRequest) -> float:
        """Seconds before ``request`` may be sent again: what its Retry-After left."""
        with self._lock:
            retry_at = self._retry_at.get(self._key(request))
            paused_until = self._pacer.paused_until
        return max(0.0, (retry_at or 0.0) - self._clock(), paused_until - self._clock())

    @property
    def rate(self) -> float | None:
        """The current send limit in requests per second; None while unlimited."""
        return self._pacer.rate

    # -- one attempt -------------------------------------------------------------------

    def _take_slot(self, generation: int) -> None:
        """Wait for the pacer to let a request go, and take its slot; raise if cancelled."""
        with self._lock:
            while True:
                if self._generation != generation:
                    raise AttemptCancelled("cancelled while waiting for a send slot")
                wait = self._pacer.claim()
                if wait <= 0:
                    return
                self._paced.wait(min(wait, _RECHECK_S))

    def _wait_until(self, when: float, generation: int) -> None:
        """Sleep until clock time ``when``; raise AttemptCancelled if cancelled meanwhile."""
        while True:
            with self._lock:
                if self._generation != generation:
                    raise AttemptCancelled("cancelled while backing off")
                wake = self._wake
            wait = when - self._clock()
            if wait <= 0:
                return
            wake.wait(wait)

    @staticmethod
    def _key(request: AttemptRequest) -> tuple[str, int, str, str]:
        return (request.row.id, request.number, request.phase.value, request.version.value)

    def run(self, request: AttemptRequest) -> Attempt:
        key = self._key(request)
        with self._lock:
            generation = self._generation
            retry_at = self._retry_at.get(key)
        if retry_at is not None:
            self._wait_until(retry_at, generation)
            with self._lock:
                self._retry_at.pop(key, None)
        self._take_slot(generation)
        started = self._clock()
        attempt, answered, retry_after, everyone = self._send(request, started)
        with self._lock:
            if answered in RETRY_AFTER_STATUSES:
                if self._pacer.pushback():
                    self._paced.notify_all()
            elif answered is not None:
                self._pacer.accepted()
            if retry_after is not None:
                # This request, not before then; the others go on at the pacer's
                # rate, unless the endpoint said the wait is for all of them.
                capped = min(retry_after, self._max_retry_after_s)
                self._retry_at[key] = self._clock() + capped
                if everyone:
                    self._pacer.pause(capped)
                    self._paced.notify_all()
                if self._save is not None:
                    self._save(self._pending())
            if self._generation != generation:
                raise AttemptCancelled(f"attempt {request.number} of row {request.row.id!r}")
        return attempt

    def _send(self, request: AttemptRequest, started: float) -> _Sent:
        """Send ``request`` once and read what the endpoint answered (:class:`_Sent`)."""
        body = request_message(request)
        try:
            headers, secrets = expand_headers(self.config.headers, self._env)
        except KeyError as exc:
            missing = f"a header references ${{{exc.args[0]}}}, which is no longer set"
            return _Sent(self._error(request, HTTP_STATUS, missing, started))
        mask = masker(secrets)
        headers.setdefault("Content-Type", "application/json")
        headers.setdefault("Accept", "application/json")
        timeout = self.config.timeout_s
        timed_out = f"no complete answer within the {timeout:g}s timeout"
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
                content, too_large = self._read_body(response, started + timeout)
        except (requests.Timeout, _BodyTimeout):
            return _Sent(self._error(request, TIMEOUT, timed_out, started))
        except requests.RequestException as exc:
            if _timed_out(exc):
                return _Sent(self._error(request, TIMEOUT, timed_out, started))
            detail = _one_line(mask(f"{type(exc).__name__}: {exc}"), 300)
            failed = f"request failed: {detail}"
            return _Sent(self._error(request, CONNECTION_ERROR, failed, started))
        except (ValueError, UnicodeError) as exc:
            # A redirect whose Location urllib3 cannot parse (a bad IPv6 host, a label
            # over 63 bytes, bytes that are not UTF-8): the endpoint's answer, not passk's bug.
            detail = _one_line(mask(f"{type(exc).__name__}: {exc}"), 300)
            bad = f"the endpoint's answer cannot be followed: {detail}"
            return _Sent(self._error(request, HTTP_STATUS, bad, started))
        if not 200 <= response.status_code < 300:
            return self._refused(
                request, response, mask(content.decode("utf-8", "replace")), started
            )
        return _Sent(self._answer(request, content, too_large, mask, started), response.status_code)

    def _refused(
        self, request: AttemptRequest, response: requests.Response, text: str, started: float
    ) -> _Sent:
        """A non-2xx answer: an error attempt, and the wait it asked for (429 and 503)."""
        status = response.status_code
        reason = f"HTTP {status} {response.reason or ''}".rstrip()
        wait: float | None = None
        everyone = False
        if status in RETRY_AFTER_STATUSES:
            now = self._wall_clock().timestamp()
            wait = retry_after_s(response.headers.get("Retry-After"), now)
            if wait is not None:
                everyone = for_every_request(status, response.headers)
                whom = " (for every request)" if everyone else ""
                reason += f"; Retry-After {min(wait, self._max_retry_after_s):g}s{whom} honoured"
        snippet = _one_line(text)
        detail = f"{reason}: {snippet}" if snippet else reason
        return _Sent(self._error(request, HTTP_STATUS, detail, started), status, wait, everyone)

    def _answer(
        self,
        request: AttemptRequest,
        content: bytes,
        too_large: bool,
        mask: Callable[[str], str],
        started: float,
    ) -> Attempt:
        """The attempt a 2xx body makes, every echo of a secret masked."""
        if too_large:
            cap = f"the response body exceeded {self._output_cap} bytes"
            return self._error(request, OUTPUT_TOO_LARGE, cap, started)
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            pass  # parse_output says so, quoting none of it
        else:
            # Masked before it is read: every message, snippet (cut at 80 characters)
            # and name made from the body is made from masked text.
            content = mask(text).encode("utf-8")
        try:
            answer = parse_output(content)
        except BadOutput as exc:
            message = (
                str(exc).replace("stdout", "the response body").replace("; send logs to stderr", "")
            )
            return self._error(request, BAD_OUTPUT, mask(message), started)
        # Again on what was read: a secret the endpoint spelled in a form the body's
        # text does not show (``\u0061bc``) is masked in every string, names included.
        usage, warnings = _masked_usage(answer.usage, mask)
        answer = replace(
            answer,
            decision=map_strings(answer.decision, mask),
            checks=tuple((mask(name), mask(value)) for name, value in answer.checks),
            warnings=tuple(mask(w) for w in (*answer.warnings, *warnings)),
            usage=usage,
        )
        return decided_attempt(request, answer, self._clock() - started)

    def _read_body(self, response: requests.Response, deadline: float) -> tuple[bytes, bool]:
        """The body up to the cap (True when cut), by the attempt's deadline.

        A read blocks until its chunk is full or the body ends, so a body that
        stalls or trickles in is cut by a watchdog that shuts the socket down
        at the deadline; :class:`_BodyTimeout` then reports it.
        """
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            sock = _socket_of(response)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        if self._clock() >= deadline:
            raise _BodyTimeout
        watchdog = threading.Timer(max(0.0, deadline - self._clock()), expire)
        watchdog.daemon = True
        watchdog.start()
        body = bytearray()
        try:
            for chunk in response.iter_content(chunk_size=1 << 16):
                body += chunk
                if len(body) > self._output_cap:
                    return bytes(body[: self._output_cap]), True
        except requests.RequestException:
            if expired.is_set():
                raise _BodyTimeout from None
            raise
        finally:
            watchdog.cancel()
        if expired.is_set() or self._clock() > deadline:
            raise _BodyTimeout
        return bytes(body), False

    def _error(self, request: AttemptRequest, reason: str, detail: str, started: float) -> Attempt:
        return error_attempt(request, reason, detail, self._clock() - started)


def retry_key(row_id: str, number: int, phase: str, version: str) -> str:
    """A request's key in the pending Retry-After map, as text (a JSON array)."""
    return json.dumps([row_id, number, phase, version], ensure_ascii=False)


def _key_from_text(text: str) -> tuple[str, int, str, str]:
    row_id, number, phase, version = json.loads(text)
    return str(row_id), int(number), str(phase), str(version)


def _masked_usage(
    usage: Usage | None, mask: Callable[[str], str]
) -> tuple[Usage | None, tuple[str, ...]]:
    """``usage`` with its model and its counters' names masked, and a warning per counter
    dropped because masking gave it the name of an earlier one."""
    if usage is None:
        return None, ()
    extra: dict[str, float] = {}
    warnings: list[str] = []
    for name, value in usage.extra:
        masked = mask(name)
        if masked in extra:
            warnings.append(f'"usage.{masked}": a second counter of that name once masked; ignored')
            continue
        extra[masked] = value
    model = None if usage.model is None else mask(usage.model)
    return replace(usage, model=model, extra=tuple(extra.items())), tuple(warnings)


class _Sent(NamedTuple):
    """What one request to the endpoint came to."""

    attempt: Attempt
    status: int | None = None
    """The HTTP status the endpoint answered; None: no answer."""
    retry_after: float | None = None
    """Seconds the endpoint asked before this request is sent again (429, 503)."""
    everyone: bool = False
    """The wait is for every request of the agent (:func:`for_every_request`)."""


class _BodyTimeout(Exception):
    """The body did not arrive complete by the attempt's deadline."""


def _timed_out(exc: BaseException) -> bool:
    """Whether a requests error was, underneath, a read or connect timeout.

    ``iter_content`` reports a read timeout mid-body as a ConnectionError.
    """
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, (requests.Timeout, socket.timeout, TimeoutError)):
            return True
        if type(seen).__name__ in ("ReadTimeoutError", "ConnectTimeoutError"):
            return True
        nxt = seen.__cause__ or seen.__context__
        if nxt is None and seen.args and isinstance(seen.args[0], BaseException):
            nxt = seen.args[0]
        seen = nxt
    return False


def _socket_of(response: requests.Response) -> socket.socket | None:
    """The socket a streamed response is read from (urllib3 1.x and 2.x), if reachable."""
    raw = response.raw
    connection = getattr(raw, "connection", None) or getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(raw, "_fp", None)
    inner = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
    return inner if isinstance(inner, socket.socket) else None
