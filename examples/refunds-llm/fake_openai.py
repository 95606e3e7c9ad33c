"""A local, OpenAI-compatible chat-completions server that reviews refunds like an LLM.

The demo and the tests need a model endpoint that the official ``openai`` SDK
accepts, that costs nothing, needs no network beyond loopback, and yet behaves
like a sampled LLM: it reads the prompt, follows the instructions it finds
there, and answers the same prompt differently from one call to the next.

Run it::

    python3 fake_openai.py --port 0            # prints http://127.0.0.1:PORT/v1

then ``export OPENAI_BASE_URL=<that URL> OPENAI_API_KEY=passk-demo-key``.

It also grades, as an LLM judge would: a system message that says "grade the
answer" gets a ``{"correct": …, "reason": …}`` verdict on the user message's
``Answer:`` against its ``Expected decision:`` (:func:`grade`; a hedging answer
is a coin toss on every call, the judge noise passk measures).

What it serves (loopback only):

- ``POST /v1/chat/completions``: a ``chat.completion`` object (``id``,
  ``object``, ``created``, ``model``, ``choices[0].message.content``,
  ``finish_reason``, ``usage``); ``max_tokens`` / ``max_completion_tokens``
  truncate the answer (``finish_reason: "length"``); ``response_format:
  {"type": "json_object"}`` keeps the answer bare JSON. Streaming and ``n > 1``
  are refused with a 400, as an OpenAI-shaped error.
- ``GET /v1/models``: the models it has been asked for so far.
- ``Authorization: Bearer <key>`` is required (``--api-key``); anything else
  gets the 401 the real API gives.

How it "thinks": the system message is read for the policy clauses it knows
(the grace period, the high-amount threshold, which receipts count, whether
to distrust damage claims on expensive items, JSON-only answers); the user
message is read for the request's facts (``- Price: $59.00`` lines). Clear
facts always get the same reading. Ambiguous ones (a day or two late, a blurry
receipt, a vague damage story, and, under a prompt that asks for skepticism,
any damage claim on an expensive item) are a weighted pseudo-random draw. A
message without the facts gets a polite question instead of JSON.

Determinism: the n-th *answered* call with the same model and messages draws
from sha256(seed, model+messages digest, n), so a run's answers per prompt
are fixed by ``--seed`` however calls interleave, while repeated calls of the
same prompt disagree the way a temperature > 0 model does. ``temperature`` is
accepted and ignored: hosted models vary at temperature 0 too.

Rate limits, like a real per-key limit: a share of calls (``--rate-limit``)
gets ``429`` with ``Retry-After`` (whole seconds) and ``retry-after-ms``; until
that time has passed every call on the key gets ``429`` with the time left, so
a client that ignores ``Retry-After`` keeps failing. A prompt just answered
``429`` is not picked again on its next call, so honouring clients progress.

Bounded: request bodies up to 1 MiB, at most ``--max-connections`` served at
once, idle connections closed after 30 s; the server stops by itself after
``--idle-timeout`` seconds without a call, after ``--max-seconds`` in all or
``--max-requests`` calls, and on SIGINT/SIGTERM, then prints its counters to
stderr.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_API_KEY = "passk-demo-key"
MAX_BODY_BYTES = 1 << 20
LABELS = ("approve", "deny", "escalate")

# --- the model: pure functions from messages to an answer ----------------------------


@dataclass(frozen=True)
class Policy:
    """The instructions the model understood from the system message."""

    grace_days: int = 0
    high_amount: float = math.inf
    strict_proof: bool = False  # only an itemized receipt counts
    partial_proof_ok: bool = False  # statements and gift receipts count, named as such
    skeptical_of_expensive_damage: bool = False
    json_only: bool = False


def read_policy(system: str) -> Policy:
    """The clauses of the refund policy the model recognises, by their wording."""
    text = " ".join(system.lower().split())
    grace = re.search(r"up to (\d+) days? late", text)
    high = re.search(r"items? of \$(\d+(?:\.\d+)?) or more", text)
    return Policy(
        grace_days=int(grace.group(1)) if grace else 0,
        high_amount=float(high.group(1)) if high else math.inf,
        strict_proof="only an itemized receipt" in text,
        partial_proof_ok="partial proof" in text and "accept" in text,
        skeptical_of_expensive_damage="skeptical of damage claims" in text,
        json_only="only a json object" in text,
    )


@dataclass(frozen=True)
class Facts:
    """A refund request as the model read it from the user message."""

    amount: float
    days_since_delivery: int
    return_window_days: int
    receipt: str
    message: str
    flags: str


_FIELD = re.compile(r"^\s*-\s*([A-Za-z ]+):\s*(.*?)\s*$", re.MULTILINE)


def read_facts(user: str) -> Facts | None:
    """The request's facts from ``- Label: value`` lines, or None when some are missing."""
    fields = {label.strip().lower(): value for label, value in _FIELD.findall(user)}
    try:
        amount = float(fields["price"].replace("$", "").replace(",", ""))
        days = int(re.findall(r"\d+", fields["delivered"])[0])
        window = int(re.findall(r"\d+", fields["return window"])[0])
        return Facts(amount, days, window, fields["receipt"],
                     fields.get("customer message", "").strip('"'),
                     fields.get("account flags", "none"))
    except (KeyError, ValueError, IndexError):
        return None


# Keyword readings of the free text, first match wins: how the model reads a receipt
# and a damage story. Vague phrasings land in the ambiguous readings below.
RECEIPT_READINGS: Sequence[tuple[str, tuple[str, ...]]] = (
    ("blurry", ("blurry", "illegible", "cropped", "faded", "hard to read", "smudged")),
    ("missing", ("no receipt", "none", "lost", "threw", "not provided", "can't find")),
    ("partial", ("bank statement", "card statement", "gift receipt", "payment screenshot",
                 "paypal")),
    ("present", ("itemized", "order confirmation", "invoice", "original receipt")),
)
DAMAGE_READINGS: Sequence[tuple[str, tuple[str, ...]]] = (
    ("customer", ("dropped", "spilled", "my fault", "accidentally", "my dog", "sat on",
                  "knocked")),
    ("shipping", ("arrived broken", "arrived cracked", "arrived shattered", "arrived dented",
                  "box was crushed", "damaged in transit", "broken on arrival",
                  "came smashed")),
    ("unclear", ("stopped working", "not working", "scratch", "dented", "crack", "broken",
                 "defective", "won't turn on", "weird noise", "flicker")),
)

# How an ambiguous reading comes out: (reported value, probability) pairs.
Choices = Sequence[tuple[str, float]]
BORDERLINE: Choices = (("borderline", 0.75), ("expired", 0.25))
BLURRY_STRICT: Choices = (("present", 0.5), ("partial", 0.3), ("missing", 0.2))
BLURRY_INFORMED: Choices = (("present", 0.6), ("partial", 0.4))
UNCLEAR_DAMAGE: Choices = (("unclear", 0.7), ("shipping", 0.2), ("customer", 0.1))
SKEPTIC_SHIPPING: Choices = (("shipping", 0.65), ("unclear", 0.25), ("customer", 0.1))
SKEPTIC_UNCLEAR: Choices = (("unclear", 0.5), ("customer", 0.3), ("shipping", 0.2))


def uniform(seed: int, digest: str, n: int, what: str) -> float:
    """A number in [0, 1) fixed by (seed, prompt digest, call number, what is drawn)."""
    key = f"{seed}\x1f{digest}\x1f{n}\x1f{what}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64


def pick(choices: Choices, u: float) -> str:
    total = 0.0
    for value, probability in choices:
        total += probability
        if u < total:
            return value
    return choices[-1][0]


def _read(text: str, readings: Sequence[tuple[str, tuple[str, ...]]], otherwise: str) -> str:
    lowered = text.lower()
    for value, phrases in readings:
        if any(phrase in lowered for phrase in phrases):
            return value
    return otherwise


def review(policy: Policy, facts: Facts, draw: Callable[[str], float]) -> dict[str, Any]:
    """The model's answer object: its checks in the order it made them, then a decision.

    ``draw(what)`` returns this call's uniform number for ``what``.
    """
    high = facts.amount >= policy.high_amount
    late = facts.days_since_delivery - facts.return_window_days
    if late <= 0:
        window = "ok"
    elif late <= policy.grace_days:
        window = pick(BORDERLINE, draw("return_window"))
    else:
        window = "expired"

    receipt = _read(facts.receipt, RECEIPT_READINGS, "missing")
    if receipt == "blurry":
        receipt = pick(BLURRY_INFORMED if policy.partial_proof_ok else BLURRY_STRICT,
                       draw("proof_of_purchase"))

    damage = _read(facts.message, DAMAGE_READINGS, "none")
    if policy.skeptical_of_expensive_damage and high and damage in ("shipping", "unclear"):
        damage = pick(SKEPTIC_SHIPPING if damage == "shipping" else SKEPTIC_UNCLEAR,
                      draw("damage"))
    elif damage == "unclear":
        damage = pick(UNCLEAR_DAMAGE, draw("damage"))

    checks: dict[str, str] = {"return_window": window, "proof_of_purchase": receipt,
                              "damage": damage}
    if window == "expired" or receipt == "missing":
        decision, reason = "deny", "outside the return window or no proof of purchase"
    elif damage == "customer":
        decision, reason = "deny", "the customer caused the damage"
    elif receipt == "partial" and (policy.strict_proof or not policy.partial_proof_ok):
        decision, reason = "deny", "only an itemized receipt counts as proof"
    elif receipt == "partial" or damage == "unclear":
        checks["amount"] = "high" if high else "standard"
        decision = "escalate" if high else "approve"
        reason = "uncertain facts on an expensive item" if high else "low amount, accepted"
    else:
        decision, reason = "approve", "eligible under the policy"
    if facts.flags.strip().lower() not in ("", "none", "[]"):
        checks["account_risk"] = "flagged"
        decision, reason = "escalate", "the account is flagged"
    return {"checks": checks, "decision": decision, "reason": reason}


_EXPECTED = re.compile(r"^\s*expected decision:\s*(\w+)", re.IGNORECASE | re.MULTILINE)
_ANSWER = re.compile(r"^\s*answer:\s*(.*)", re.IGNORECASE | re.MULTILINE | re.DOTALL)


def grade(user: str, draw: Callable[[str], float]) -> dict[str, Any]:
    """A judge's verdict on a free-text answer (a system message that says "grade the
    answer"): ``Expected decision: X`` and ``Answer: ...`` in the user message.

    An answer that names the expected decision and no other is right, one that names
    another and not the expected one wrong, every time. One that names both (it hedges)
    is a coin toss on each call: the judge's own noise, which passk measures.
    """
    expected, answer = _EXPECTED.search(user), _ANSWER.search(user)
    if expected is None or answer is None:
        return {"correct": False, "reason": "no expected decision or answer to grade"}
    want = expected.group(1).lower()
    named = {label for label in LABELS if re.search(rf"\b{label}", answer.group(1).lower())}
    if named == {want}:
        return {"correct": True, "reason": f"the answer decides {want}"}
    if want not in named:
        return {"correct": False, "reason": f"the answer does not decide {want}"}
    right = draw("grade") < 0.5
    return {"correct": right, "reason": "the answer hedges between " + " and ".join(sorted(named))}


def estimate_tokens(text: str) -> int:
    """About four characters a token, like OpenAI's rule of thumb for English."""
    return max(1, math.ceil(len(text) / 4))


@dataclass(frozen=True)
class Completion:
    content: str
    finish_reason: str


def complete(body: Mapping[str, Any], *, seed: int, digest: str, n: int,
             malformed: float = 0.0) -> Completion:
    """The n-th answer to this request body (already validated)."""
    messages = body["messages"]
    system = "\n".join(_text(m) for m in messages if m.get("role") in ("system", "developer"))
    user = "\n".join(_text(m) for m in messages if m.get("role") == "user")
    json_mode = (body.get("response_format") or {}).get("type") in ("json_object", "json_schema")
    policy = read_policy(system)
    facts = read_facts(user)

    def draw(what: str) -> float:
        return uniform(seed, digest, n, what)

    if "grade the answer" in system.lower():
        content = json.dumps(grade(user, draw))
    elif facts is None:
        content = ('{"error": "missing order details"}' if json_mode else
                   "I'd be glad to help. Could you share the price, the delivery date, "
                   "the return window and the receipt for this order?")
    elif draw("malformed") < malformed:
        # What a sampled model sometimes does: a refusal in prose, or JSON it never closes.
        content = ("I'm sorry, I can't make a refund decision on this request."
                   if draw("malformed-kind") < 0.5 and not json_mode
                   else json.dumps(review(policy, facts, draw))[:-7])
    else:
        answer = json.dumps(review(policy, facts, draw))
        fenced = not json_mode and (not policy.json_only or draw("fence") < 0.05)
        content = f"Here is my review.\n\n```json\n{answer}\n```" if fenced else answer

    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if isinstance(limit, int) and estimate_tokens(content) > limit:
        return Completion(content[: max(1, limit) * 4], "length")
    return Completion(content, "stop")


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def check_request(body: Any) -> str | None:
    """What is wrong with a chat-completions body, as the API would say, or None."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"'messages.{i}' must be an object with a 'role'"
    if body.get("stream"):
        return "this fake server does not stream; call without stream=True"
    if body.get("n", 1) != 1:
        return "this fake server answers n=1 only"
    for key in ("max_tokens", "max_completion_tokens"):
        if key in body and body[key] is not None and (
                not isinstance(body[key], int) or body[key] < 1):
            return f"'{key}' must be a positive integer"
    return None


def prompt_digest(body: Mapping[str, Any]) -> str:
    """What makes two calls 'the same prompt': the model and the messages."""
    canonical = json.dumps([body["model"], body["messages"]], sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


# --- the server: state, HTTP, lifetime ------------------------------------------------


@dataclass
class Settings:
    seed: int = 0
    api_key: str = DEFAULT_API_KEY
    rate_limit: float = 0.0
    retry_after_s: float = 1.0
    malformed: float = 0.0
    max_requests: int = 100_000
    max_connections: int = 32


@dataclass
class Counters:
    requests: int = 0
    answered: int = 0
    rate_limited: int = 0  # 429s that started a rate-limit window
    held_back: int = 0  # 429s for calls made while a window was open
    unauthorized: int = 0
    bad_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class LoggedCall:
    """One call as the server saw it, for tests: when, which prompt, what status."""

    at: float
    digest: str
    status: int
    retry_count: str | None  # the SDK's x-stainless-retry-count header


@dataclass
class State:
    settings: Settings
    counters: Counters = field(default_factory=Counters)
    calls: list[LoggedCall] = field(default_factory=list)
    answered_per_prompt: dict[str, int] = field(default_factory=dict)
    limited_last: set[str] = field(default_factory=set)
    models: set[str] = field(default_factory=set)
    blocked_until: float = 0.0
    last_request_at: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    exhausted: threading.Event = field(default_factory=threading.Event)

    def admit(self, digest: str, now: float) -> tuple[int, float]:
        """(call number among this prompt's answers, 0) or (0, seconds to wait: a 429)."""
        s = self.settings
        with self.lock:
            self.counters.requests += 1
            index = self.counters.requests
            if now < self.blocked_until:
                self.counters.held_back += 1
                return 0, self.blocked_until - now
            if (digest not in self.limited_last
                    and uniform(s.seed, "rate-limit", index, "") < s.rate_limit):
                self.limited_last.add(digest)
                self.blocked_until = now + s.retry_after_s
                self.counters.rate_limited += 1
                return 0, s.retry_after_s
            self.limited_last.discard(digest)
            n = self.answered_per_prompt.get(digest, 0) + 1
            self.answered_per_prompt[digest] = n
            self.counters.answered += 1
            return n, 0.0

    def log(self, call: LoggedCall) -> None:
        with self.lock:
            self.calls.append(call)
            self.last_request_at = time.monotonic()
            if self.counters.requests >= self.settings.max_requests:
                self.exhausted.set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects
    # Headers and body go out as two writes: without this, Nagle holds the body until
    # the client's delayed ACK (40 ms a call on Linux), which a real API does not add.
    disable_nagle_algorithm = True
    timeout = 30  # an idle keep-alive connection is closed after this
    server: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per call would drown the demo; the counters tell the story

    def _send(self, status: int, payload: Mapping[str, Any],
              headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_" + hashlib.sha256(data).hexdigest()[:24])
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str, code: str | None,
               headers: Mapping[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": kind, "param": None,
                                      "code": code}}, headers)

    def _authorized(self) -> bool:
        expected = f"Bearer {self.server.state.settings.api_key}"
        if self.headers.get("Authorization", "") == expected:
            return True
        with self.server.state.lock:
            self.server.state.counters.unauthorized += 1
        self._error(401, "Incorrect API key provided: send the key this server was started "
                    "with (--api-key, default passk-demo-key) as OPENAI_API_KEY.",
                    "invalid_request_error", "invalid_api_key")
        return False

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"Unknown request URL: GET {self.path}.",
                        "invalid_request_error", "unknown_url")
            return
        if not self._authorized():
            return
        with self.server.state.lock:
            models = sorted(self.server.state.models)
        self._send(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "passk-fake"}
            for m in models]})

    def do_POST(self) -> None:
        state = self.server.state
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.close_connection = True
            self._error(411, "Content-Length required.", "invalid_request_error", None)
            return
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(413, f"Request body over {MAX_BODY_BYTES} bytes.",
                        "invalid_request_error", None)
            return
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"Unknown request URL: POST {self.path}.",
                        "invalid_request_error", "unknown_url")
            return
        if not self._authorized():
            return
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        problem = "the request body is not valid JSON" if body is None else check_request(body)
        if problem is not None:
            with state.lock:
                state.counters.bad_requests += 1
            self._error(400, problem, "invalid_request_error", None)
            return

        digest = prompt_digest(body)
        now = time.monotonic()
        n, wait_s = state.admit(digest, now)
        retry_count = self.headers.get("x-stainless-retry-count")
        if n == 0:
            state.log(LoggedCall(now, digest, 429, retry_count))
            self._error(
                429, f"Rate limit reached for {body['model']} on requests per min (RPM): "
                f"Please try again in {wait_s * 1000:.0f}ms.", "requests",
                "rate_limit_exceeded",
                {"Retry-After": str(max(1, math.ceil(wait_s))),
                 "retry-after-ms": str(max(1, math.ceil(wait_s * 1000))),
                 "x-ratelimit-remaining-requests": "0"})
            return

        s = state.settings
        done = complete(body, seed=s.seed, digest=digest, n=n, malformed=s.malformed)
        prompt_tokens = sum(estimate_tokens(_text(m)) + 3 for m in body["messages"])
        completion_tokens = estimate_tokens(done.content)
        with state.lock:
            state.models.add(body["model"])
            state.counters.prompt_tokens += prompt_tokens
            state.counters.completion_tokens += completion_tokens
        state.log(LoggedCall(now, digest, 200, retry_count))
        self._send(200, {
            "id": f"chatcmpl-{digest[:12]}{n:012d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "fp_passk_fake",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": done.content, "refusal": None},
                "logprobs": None,
                "finish_reason": done.finish_reason,
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })


class FakeOpenAIServer(ThreadingHTTPServer):
    """The HTTP server on 127.0.0.1; ``url`` is the SDK's ``base_url``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, settings: Settings, port: int = 0) -> None:
        self.state = State(settings)
        self._slots = threading.BoundedSemaphore(settings.max_connections)
        super().__init__(("127.0.0.1", port), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def process_request(self, request: Any, client_address: Any) -> None:
        self._slots.acquire()  # a bounded number of connection threads
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def summary(self) -> str:
        c = self.state.counters
        return (f"fake_openai: {c.requests} calls, {c.answered} answered, "
                f"{c.rate_limited} rate-limited (429, Retry-After) and {c.held_back} held "
                f"back while limited, {c.unauthorized} unauthorized, {c.bad_requests} bad; "
                f"{c.prompt_tokens + c.completion_tokens} tokens")


def serve_in_thread(settings: Settings, port: int = 0) -> tuple[FakeOpenAIServer, threading.Thread]:
    """Start a server on a background thread (for tests); ``server.shutdown()`` stops it."""
    server = FakeOpenAIServer(settings, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fake-openai", daemon=True)
    thread.start()
    return server, thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 (default): a free port")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", default=DEFAULT_API_KEY)
    parser.add_argument("--rate-limit", type=float, default=0.05,
                        help="share of calls that start a 429 window (default 0.05)")
    parser.add_argument("--retry-after", type=float, default=1.0,
                        help="seconds a 429 window lasts (default 1)")
    parser.add_argument("--malformed", type=float, default=0.0,
                        help="share of answers that are not valid JSON (default 0)")
    parser.add_argument("--idle-timeout", type=float, default=120.0,
                        help="stop after this many seconds without a call (default 120)")
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="stop after this many seconds in all (default 1800)")
    parser.add_argument("--max-requests", type=int, default=100_000)
    parser.add_argument("--max-connections", type=int, default=32)
    args = parser.parse_args(argv)
    for name in ("rate_limit", "malformed"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            parser.error(f"--{name.replace('_', '-')} must be between 0 and 1")
    if args.retry_after <= 0 or args.max_connections < 1 or args.max_requests < 1:
        parser.error("--retry-after, --max-connections and --max-requests must be positive")

    settings = Settings(seed=args.seed, api_key=args.api_key, rate_limit=args.rate_limit,
                        retry_after_s=args.retry_after, malformed=args.malformed,
                        max_requests=args.max_requests, max_connections=args.max_connections)
    try:
        server, thread = serve_in_thread(settings, args.port)
    except OSError as exc:
        print(f"fake_openai: cannot listen on 127.0.0.1:{args.port}: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(server.url, flush=True)

    started = time.monotonic()
    why = "signal"
    while not stop.wait(0.2):
        now = time.monotonic()
        if server.state.exhausted.is_set():
            why = f"{args.max_requests} calls"
            break
        if now - server.state.last_request_at > args.idle_timeout:
            why = f"{args.idle_timeout:g} s idle"
            break
        if now - started > args.max_seconds:
            why = f"{args.max_seconds:g} s up"
            break
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
    print(f"{server.summary()}; stopped ({why})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
