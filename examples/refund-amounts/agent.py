"""A refund agent with a structured decision: an action and an amount, like an LLM's JSON output.

passk's second demo: the decision is not one word but a JSON object,
``{"action": "refund" | "partial_refund" | "deny", "amount": <US dollars>}``,
and passk compares it field by field (``scoring.fields`` in passk.yml: the
action exactly, the amount within a cent).  The agent uses no model and no
network, but like a sampled LLM it is not always sure: where the facts are
ambiguous it draws, seeded by sha256 over (seed, row id, attempt, version),
so a run is reproducible (``--seed`` or env ``PASSK_SEED``, default 0) and
attempts still disagree.

The refund policy both prompts follow::

    outside the return window          -> deny, 0
    arrived damaged, or unopened        -> refund, the price plus shipping
    opened, within the window           -> partial_refund, the price less a 15% restocking fee

Two prompts, ``--policy v1`` (production) and ``--policy v2`` (candidate):

- v1 reads "arrived with a scratch" as damage half the time (a flip on the
  rows that say so), and otherwise follows the policy to the cent.
- v2 adds "say what the customer gets back, shipping included": it reads
  the scratch right every time (more accurate), but on an opened item with
  paid shipping it sometimes adds the shipping to the partial refund.  The
  action stays ``partial_refund``; the amount drifts.  A label-only eval
  would see nothing change; passk sees the decision flip.

Protocol: one JSON request on stdin ``{"id", "input", "attempt", "version"}``,
one JSON answer on stdout ``{"decision": {"action", "amount"}, "checks"}``;
exit 2 on a bad request.
Started by passk's worker pool (``protocol: worker`` in passk.yml, which sets
``PASSK_PROTOCOL=worker``) it answers one request per line instead, echoing its
``request_id``, until stdin closes: one start-up for many answers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

RESTOCKING_FEE = 0.15
POLICIES = ("v1", "v2")


def draw(seed: int, request: dict[str, Any], version: str, what: str) -> float:
    """A reproducible number in [0, 1) for one attempt: the sampled model's coin."""
    key = f"{seed}|{request['id']}|{request.get('attempt', 1)}|{version}|{what}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) / 16**12


def decide(request: dict[str, Any], policy: str, seed: int = 0) -> dict[str, Any]:
    """The answer to one request: the decision object and the checks on the way."""
    order = request["input"]
    version = str(request.get("version", "candidate"))
    price, shipping = float(order["price_usd"]), float(order.get("shipping_usd", 0.0))
    in_window = order["days_since_delivery"] <= order["return_window_days"]
    condition = str(order["condition"])
    if condition == "arrived with a scratch":
        # Damage, by the policy. v1 is unsure whether a scratch counts; v2 is not.
        damaged = policy == "v2" or draw(seed, request, version, "scratch") < 0.5
        condition = "damaged" if damaged else "opened"
    checks = {"return_window": "ok" if in_window else "expired", "condition": condition}
    if not in_window:
        return {"decision": {"action": "deny", "amount": 0}, "checks": checks}
    if condition in ("damaged", "unopened"):
        amount = price + shipping
        return {"decision": {"action": "refund", "amount": round(amount, 2)}, "checks": checks}
    amount = price * (1 - RESTOCKING_FEE)
    # v2's new line about shipping is read into partial refunds now and then.
    if policy == "v2" and shipping and draw(seed, request, version, "shipping") < 0.35:
        amount += shipping
    return {"decision": {"action": "partial_refund", "amount": round(amount, 2)}, "checks": checks}


def serve_lines(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """passk's worker protocol: one JSON request per stdin line, one answer line each.

    The answer carries the request's ``request_id``; a request it cannot answer
    gets ``{"request_id", "error"}`` and the worker goes on; a line that is not a
    request (passk never sends one) ends it with exit 2.
    """
    for line in sys.stdin:
        try:
            request = json.loads(line)
            request_id = request.pop("request_id")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"agent.py: not a worker request line: {exc!r}", file=sys.stderr)
            return 2
        try:
            reply = {**answer(request), "request_id": request_id}
        except (ValueError, KeyError, TypeError) as exc:
            reply = {"request_id": request_id, "error": f"bad request: {exc}"}
        print(json.dumps(reply), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", choices=POLICIES, default="v1")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("PASSK_SEED", "0")))
    args = parser.parse_args(argv)
    if os.environ.get("PASSK_PROTOCOL") == "worker":
        return serve_lines(lambda request: decide(request, args.policy, args.seed))
    try:
        request = json.loads(sys.stdin.read())
        answer = decide(request, args.policy, args.seed)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"agent.py: bad request: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
