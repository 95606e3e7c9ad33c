"""Throughput of an HTTP agent whose endpoint pushes back (429 with Retry-After).

A loopback endpoint answers each request after ``--latency`` seconds, the way
a model API does, and pushes back in one of three ways:

- ``none``: never (the ceiling: what the pool itself can do);
- ``scattered``: a fixed share of requests (``--share``, 3%), drawn by a
  seeded generator, get ``429`` with ``Retry-After: 1`` whatever the rate:
  the pushback says nothing about the rate, so the rate should not drop;
- ``limit``: a token bucket admits ``--limit`` requests a second and answers
  the rest ``429`` with ``Retry-After: 1``: the rate should settle near the
  limit without many refusals.

Attempts go through the real path (``HttpAgent`` under ``run_attempts``, each
refused attempt retried after its Retry-After). Printed: attempts per second
over the run, the share of requests refused, and the wall time.  Run it on
two trees (``PYTHONPATH=<tree>/src``) to compare them; the figures quoted in
bench/README.md come from:

    python bench/rate_limits.py --attempts 10000 --pushback none
    python bench/rate_limits.py --attempts 10000 --pushback scattered
    python bench/rate_limits.py --attempts 4000 --pushback limit --limit 100
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from passk_action.agents.http import HttpAgent
from passk_action.agents.protocol import AttemptRequest
from passk_action.agents.scheduler import RetryPolicy, run_attempts
from passk_action.core.model import Phase, Row, Version
from passk_action.inputs.config import HttpAgentConfig


class Bucket:
    """A token bucket: ``rate`` requests a second, bursts of one second's worth."""

    def __init__(self, rate: float) -> None:
        self.rate, self.tokens, self.at = rate, rate, time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens >= 1:
                self.tokens -= 1
                return True
            return False


def serve(pushback: str, share: float, limit: float, latency: float) -> tuple[str, Any, dict]:
    counts = {"answered": 0, "refused": 0}
    lock = threading.Lock()
    bucket = Bucket(limit)
    draws = random.Random(7)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                refuse = (pushback == "scattered" and draws.random() < share) or (
                    pushback == "limit" and not bucket.take()
                )
                counts["refused" if refuse else "answered"] += 1
            if refuse:
                reply, status, extra = b"slow down", 429, {"Retry-After": "1"}
            else:
                time.sleep(latency)
                reply, status, extra = b'{"decision": "deny"}', 200, {}
            self.send_response(status)
            for name, value in {**extra, "Content-Length": str(len(reply))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/decide", server, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=10000)
    parser.add_argument("--pushback", choices=["none", "scattered", "limit"], default="scattered")
    parser.add_argument("--share", type=float, default=0.03, help="scattered: share refused")
    parser.add_argument("--limit", type=float, default=100.0, help="limit: requests a second")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per answer")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    url, server, counts = serve(args.pushback, args.share, args.limit, args.latency)
    agent = HttpAgent(HttpAgentConfig(url=url), {}, concurrency=args.concurrency)
    requests = [
        AttemptRequest(Row(f"r{i:06d}", {"n": i}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
        for i in range(args.attempts)
    ]
    started = time.monotonic()
    done = run_attempts(
        requests,
        agent,
        concurrency=args.concurrency,
        retry=RetryPolicy(attempts=10, backoff_s=0.0, max_backoff_s=0.0),
    )
    wall = time.monotonic() - started
    agent.close()
    server.shutdown()
    valid = sum(1 for attempt in done if attempt.valid)
    sent = counts["answered"] + counts["refused"]
    print(
        f"pushback={args.pushback} attempts={args.attempts} concurrency={args.concurrency} "
        f"latency={args.latency:g}s"
        + (f" share={args.share:g}" if args.pushback == "scattered" else "")
        + (f" limit={args.limit:g}/s" if args.pushback == "limit" else "")
    )
    print(
        f"wall {wall:.1f}s  {valid / wall:.0f} attempts/s  valid {valid}/{args.attempts}  "
        f"requests {sent}, refused {counts['refused']} ({counts['refused'] / max(sent, 1):.1%})"
    )


if __name__ == "__main__":
    main()
