"""Throughput of an HTTP agent whose endpoint pushes back (429 with Retry-After).

A loopback endpoint answers each request after ``--latency`` seconds, the way
a model API does, and pushes back in one of four ways:

- ``none``: never (the ceiling: what the pool itself can do);
- ``scattered``: a fixed share of requests (``--share``), drawn by a seeded
  generator, get ``429`` with ``Retry-After: 1`` whatever the rate: the
  pushback says nothing about the rate, so the rate should not drop;
- ``early``: the very first request, before any answer, gets ``429`` with
  ``Retry-After: 1``, the rest are answered: the run should cost about 1 s more;
- ``limit``: a token bucket admits ``--limit`` requests a second and answers
  the rest ``429`` with ``Retry-After: 1``: the rate should settle near the
  limit without many refusals.

Attempts go through the real path (``HttpAgent`` under ``run_attempts`` with
the default retry policy, each refused attempt retried after its
Retry-After), stopped after ``--max-seconds`` so a slow pacer cannot hold the
bench for minutes.  Printed: attempts per second over the run, the wall time,
the share of requests refused, and **violations**: requests sent again before
the Retry-After their earlier refusal gave.

``--ab OLD NEW`` compares two source trees (``<tree>/src`` first on the
path), each scenario run in a fresh process, the trees in turns (A B A B …,
``--repeat`` times each), and prints the medians as a Markdown table: the
machine may be shared, so runs of the two trees are interleaved and the
ratio is taken pair by pair.  The table in bench/README.md ("Rate limits")
comes from:

    python bench/rate_limits.py --ab /tmp/old /path/to/repo --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCENARIOS = [
    ("no pushback", ["--pushback", "none"]),
    ("3% scattered 429", ["--pushback", "scattered", "--share", "0.03"]),
    ("10% scattered 429", ["--pushback", "scattered", "--share", "0.10"]),
    ("one early 429", ["--pushback", "early"]),
    ("limit of 100/s", ["--pushback", "limit", "--limit", "100"]),
]


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


class Endpoint:
    """The loopback endpoint, counting refusals and Retry-After violations."""

    def __init__(self, pushback: str, share: float, limit: float, latency: float) -> None:
        self.pushback, self.share, self.latency = pushback, share, latency
        self.answered = self.refused = self.violations = 0
        self.lock = threading.Lock()
        self.bucket = Bucket(limit)
        self.draws = random.Random(7)
        self.not_before: dict[str, float] = {}

    def decide(self, row: str) -> bool:
        """Whether to refuse this request (and record what it means), under the lock."""
        now = time.monotonic()
        with self.lock:
            if now < self.not_before.get(row, 0.0):
                self.violations += 1
            sent = self.answered + self.refused
            refuse = (
                (self.pushback == "scattered" and self.draws.random() < self.share)
                or (self.pushback == "limit" and not self.bucket.take())
                or (self.pushback == "early" and sent == 0)
            )
            if refuse:
                self.refused += 1
                self.not_before[row] = now + 1.0
            else:
                self.answered += 1
            return refuse


def serve(endpoint: Endpoint) -> tuple[str, ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if endpoint.decide(f"{body['id']}/{body['attempt']}"):
                reply, status, extra = b"slow down", 429, {"Retry-After": "1"}
            else:
                time.sleep(endpoint.latency)
                reply, status, extra = b'{"decision": "deny"}', 200, {}
            self.send_response(status)
            for name, value in {**extra, "Content-Length": str(len(reply))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/decide", server


def run(args: argparse.Namespace) -> dict[str, float]:
    """One scenario in this process, through the tree first on ``sys.path``."""
    from passk_action.agents.http import HttpAgent
    from passk_action.agents.protocol import AttemptRequest
    from passk_action.agents.scheduler import Keeping, Schedule, run_attempts
    from passk_action.core.model import Phase, Row, Version
    from passk_action.inputs.agent_config import HttpAgentConfig

    endpoint = Endpoint(args.pushback, args.share, args.limit, args.latency)
    url, server = serve(endpoint)
    agent = HttpAgent(HttpAgentConfig(url=url), {}, concurrency=args.concurrency)
    requests = [
        AttemptRequest(Row(f"r{i:06d}", {"n": i}, "deny"), 1, Phase.MAIN, Version.CANDIDATE)
        for i in range(args.attempts)
    ]
    stop = threading.Event()
    timer = threading.Timer(args.max_seconds, stop.set)
    timer.start()
    finished: list[float] = []
    started = time.monotonic()
    done = run_attempts(
        requests,
        agent,
        Schedule(concurrency=args.concurrency),
        keeping=Keeping(on_attempt=lambda attempt: finished.append(time.monotonic() - started)),
        stop=stop,
    )
    wall = time.monotonic() - started
    timer.cancel()
    agent.close()
    server.shutdown()
    sent = endpoint.answered + endpoint.refused
    most = int(0.9 * args.attempts)
    return {
        "rate": sum(1 for attempt in done if attempt.valid) / wall,
        # Until 90% are done: the rate while the pool is busy, without the last
        # refused requests waiting out their Retry-After alone at the end.
        "steady": most / finished[most - 1] if len(finished) >= most else len(finished) / wall,
        "wall": wall,
        "done": len(done),
        "refused": endpoint.refused / max(sent, 1),
        "violations": endpoint.violations,
    }


def ab(args: argparse.Namespace) -> None:
    """Both trees, every scenario, interleaved; a Markdown table of medians."""
    trees = {"before": args.ab[0], "after": args.ab[1]}
    base = [
        "--attempts", str(args.attempts), "--concurrency", str(args.concurrency),
        "--latency", str(args.latency), "--max-seconds", str(args.max_seconds),
    ]  # fmt: skip
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for turn in range(args.repeat):
        for name, extra in SCENARIOS:
            for side, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": os.path.join(tree, "src")}
                out = subprocess.run(
                    [sys.executable, __file__, *base, *extra, "--json"],
                    env=env, capture_output=True, text=True, check=True,
                )  # fmt: skip
                figures = json.loads(out.stdout)
                results.setdefault((name, side), []).append(figures)
                print(f"turn {turn + 1} {name} {side}: {figures}", file=sys.stderr)

    def median(name: str, side: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name, side])

    ceiling = {side: median("no pushback", side, "rate") for side in trees}
    steady_ceiling = {side: median("no pushback", side, "steady") for side in trees}
    print(
        f"{args.attempts} attempts, {args.concurrency} in flight, latency "
        f"{args.latency * 1000:g} ms, runs stopped at {args.max_seconds:g} s; "
        f"medians of {args.repeat} interleaved runs\n"
    )
    print("| endpoint | before: attempts/s (wall) | after: attempts/s (wall) "
          "| of the ceiling, before → after | until 90% done, of its ceiling "
          "| refused, before → after | Retry-After violations |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, _ in SCENARIOS:
        cells = [name]
        for side in trees:
            cells.append(f"{median(name, side, 'rate'):.0f} ({median(name, side, 'wall'):.1f} s)")
        share = [median(name, side, "rate") / ceiling[side] for side in trees]
        cells.append(f"{share[0]:.2f} → **{share[1]:.2f}**")
        steady = [median(name, side, "steady") / steady_ceiling[side] for side in trees]
        cells.append(f"{steady[0]:.2f} → **{steady[1]:.2f}**")
        refused = [median(name, side, "refused") for side in trees]
        cells.append(f"{refused[0]:.1%} → {refused[1]:.1%}")
        violations = [max(r["violations"] for r in results[name, side]) for side in trees]
        cells.append(f"{violations[0]:.0f} → {violations[1]:.0f}")
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=3000)
    parser.add_argument(
        "--pushback", choices=["none", "scattered", "early", "limit"], default="scattered"
    )
    parser.add_argument("--share", type=float, default=0.03, help="scattered: share refused")
    parser.add_argument("--limit", type=float, default=100.0, help="limit: requests a second")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per answer")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=30.0, help="stop the run then")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--ab", nargs=2, metavar=("OLD_TREE", "NEW_TREE"))
    parser.add_argument("--repeat", type=int, default=3, help="--ab: runs of each")
    args = parser.parse_args()
    if args.ab:
        ab(args)
        return
    figures = run(args)
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"pushback={args.pushback} attempts={args.attempts} concurrency={args.concurrency} "
        f"latency={args.latency:g}s"
        + (f" share={args.share:g}" if args.pushback == "scattered" else "")
        + (f" limit={args.limit:g}/s" if args.pushback == "limit" else "")
    )
    print(
        f"wall {figures['wall']:.1f}s  {figures['rate']:.0f} attempts/s  "
        f"({figures['steady']:.0f}/s until 90% done)  "
        f"done {figures['done']:.0f}/{args.attempts}  refused {figures['refused']:.1%}  "
        f"Retry-After violations {figures['violations']:.0f}"
    )


if __name__ == "__main__":
    main()
