"""A refund-review agent that behaves like a sampled LLM, without one.

passk's demo needs an agent whose answers vary the way a real LLM agent's do,
yet runs anywhere with the standard library and no network.  This one reads a
refund request, works through named checks in order, and decides::

    return_window      ok | borderline | expired   (days since delivery vs. window)
    proof_of_purchase  present | partial | missing (what the receipt field shows)
    damage             none | shipping | customer | unclear (from the message)
    amount             standard | high             (reported only when it decided)
    account_risk       flagged                     (reported only when flagged)

Decision, in this order: a flagged account -> escalate; expired window, no
proof, or customer-caused damage -> deny; a high amount (>= $500) with partial
proof or unclear damage -> escalate; anything else -> approve.

Where the facts are clear, every check is answered the same way every time.
Where they are ambiguous (1-2 days past the window, a blurry receipt, a vague
damage story) a check is a weighted pseudo-random draw, like a temperature>0
model reading the same request twice.  The draw is seeded by sha256 over
(seed, row id, attempt, version, check): a run is reproducible for a given
seed (``--seed`` or env ``PASSK_SEED``, default 0), yet attempts disagree.

Two prompts, ``--policy v1`` (production) and ``--policy v2`` (candidate):
- v1 demands an itemized receipt, so it denies every bank statement or gift
  receipt (partial proof) that policy accepts: consistent, but wrong.
- v2 accepts partial proof (escalating it when the amount is high) and reads
  blurry receipts better, so its mean accuracy is higher.  But its new "be
  skeptical of expensive damage claims" line makes it unsure of the damage
  check on items of $500 or more: high-value damage rows start to flip.
Accuracy goes up, reliability on must-not-break rows goes down: what passk
exists to catch.

Usage: each answer reports synthetic token counts the way an LLM agent reports
its API's usage, so the demo shows cost beside reliability.  Input tokens are
the prompt (v2's is longer: it spells out the new rules) plus the request at
about 4 characters a token; output tokens are a short reasoning per check, a
seeded draw like the checks.  passk prices them from ``pricing`` in passk.yml.

Protocol: one JSON request on stdin ``{"id", "input", "attempt", "version"}``,
one JSON answer on stdout ``{"decision", "checks", "usage"}``; exit 2 on a bad
request.  Started by passk's worker pool (``protocol: worker`` in passk.yml, which
sets ``PASSK_PROTOCOL=worker``) it answers one request per line instead, echoing
its ``request_id``, until stdin closes: one start-up for many answers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

HIGH_AMOUNT_USD = 500
PROMPT_TOKENS = {"v1": 410, "v2": 655}
"""Synthetic prompt sizes: v2's prompt adds the partial-proof and high-value rules."""
MODEL = "refund-sim-1"
GRACE_DAYS = 2
POLICIES = ("v1", "v2")

# Keyword readings of the free-text fields, checked in this order (first match wins).
RECEIPT_READINGS = [
    ("blurry", ("blurry", "illegible", "cropped", "faded", "hard to read")),
    ("missing", ("no receipt", "none", "lost", "threw", "not provided", "can't find")),
    ("partial", ("bank statement", "card statement", "gift receipt", "payment screenshot")),
    ("present", ("itemized", "order confirmation", "invoice", "original receipt")),
]
DAMAGE_READINGS = [
    ("customer", ("dropped", "spilled", "my fault", "accidentally", "my dog", "my son sat")),
    ("shipping", ("arrived broken", "arrived cracked", "arrived shattered", "arrived dented",
                  "box was crushed", "damaged in transit", "broken on arrival")),
    ("unclear", ("stopped working", "not working", "scratch", "dented", "crack", "broken",
                 "defective", "won't turn on", "weird noise")),
]

# How each version reads an ambiguous fact: (reported value, probability) pairs.
AMBIGUOUS: dict[str, dict[tuple[str, str], list[tuple[str, float]]]] = {
    "v1": {
        ("return_window", "borderline"): [("borderline", 0.7), ("expired", 0.3)],
        ("proof_of_purchase", "blurry"): [("present", 0.5), ("partial", 0.3), ("missing", 0.2)],
        ("damage", "unclear"): [("unclear", 0.65), ("shipping", 0.2), ("customer", 0.15)],
    },
    "v2": {
        ("return_window", "borderline"): [("borderline", 0.7), ("expired", 0.3)],
        ("proof_of_purchase", "blurry"): [("present", 0.6), ("partial", 0.4)],
        ("damage", "unclear"): [("unclear", 0.65), ("shipping", 0.2), ("customer", 0.15)],
        # The candidate's skepticism, applied only when the amount is high.
        ("damage", "shipping/high"): [("shipping", 0.7), ("unclear", 0.2), ("customer", 0.1)],
        ("damage", "unclear/high"): [("unclear", 0.5), ("customer", 0.3), ("shipping", 0.2)],
    },
}


def read(text: str, readings: list[tuple[str, tuple[str, ...]]], otherwise: str) -> str:
    lowered = text.lower()
    for fact, phrases in readings:
        if any(phrase in lowered for phrase in phrases):
            return fact
    return otherwise


def draw(seed: int, request: dict[str, Any], check: str) -> float:
    """A uniform number in [0, 1) fixed by (seed, row, attempt, version, check)."""
    key = "\x1f".join(str(part) for part in (
        seed, request["id"], request.get("attempt", 1), request.get("version", ""), check))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def judge(check: str, fact: str, policy: str, seed: int, request: dict[str, Any]) -> str:
    """The value the agent reports for a check: the fact itself unless it is ambiguous."""
    choices = AMBIGUOUS[policy].get((check, fact))
    if choices is None:
        return fact
    u, total = draw(seed, request, check), 0.0
    for value, probability in choices:
        total += probability
        if u < total:
            return value
    return choices[-1][0]


def decide(request: dict[str, Any], policy: str, seed: int) -> dict[str, Any]:
    """Decide one request under ``policy``; returns ``{"decision", "checks"}``."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    facts = request["input"]
    days, window = int(facts["days_since_delivery"]), int(facts.get("return_window_days", 30))
    high = float(facts["amount_usd"]) >= HIGH_AMOUNT_USD

    window_fact = "ok" if days <= window else "borderline" if days <= window + GRACE_DAYS \
        else "expired"
    damage_fact = read(str(facts.get("customer_message", "")), DAMAGE_READINGS, "none")
    if high and policy == "v2" and damage_fact in ("shipping", "unclear"):
        damage_fact += "/high"
    checks = {
        "return_window": judge("return_window", window_fact, policy, seed, request),
        "proof_of_purchase": judge(
            "proof_of_purchase", read(str(facts.get("receipt", "")), RECEIPT_READINGS, "missing"),
            policy, seed, request),
        "damage": judge("damage", damage_fact, policy, seed, request),
    }
    decision = _rules(checks, high, policy)
    if facts.get("account_flags"):
        checks["account_risk"] = "flagged"
        decision = "escalate"
    return {"decision": decision, "checks": checks, "usage": usage(request, policy, seed, checks)}


def usage(
    request: dict[str, Any], policy: str, seed: int, checks: dict[str, str]
) -> dict[str, Any]:
    """Synthetic token counts for one answer (see the module docstring)."""
    request_tokens = len(json.dumps(request["input"])) // 4
    reasoning = sum(18 + int(22 * draw(seed, request, f"tokens:{name}")) for name in checks)
    return {
        "input_tokens": PROMPT_TOKENS[policy] + request_tokens,
        "output_tokens": 12 + reasoning,
        "model": MODEL,
    }


def _rules(checks: dict[str, str], high: bool, policy: str) -> str:
    """The prompt's decision rules over the checks; may add the ``amount`` check."""
    if checks["return_window"] == "expired" or checks["proof_of_purchase"] == "missing":
        return "deny"
    if checks["damage"] == "customer":
        return "deny"
    partial = checks["proof_of_purchase"] == "partial"
    if partial and policy == "v1":
        return "deny"  # The production prompt insists on an itemized receipt.
    if partial or checks["damage"] == "unclear":
        checks["amount"] = "high" if high else "standard"
        return "escalate" if high else "approve"
    return "approve"


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
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            reply = {"request_id": request_id, "error": f"bad request: {exc!r}"}
        print(json.dumps(reply), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Demo refund-review agent (reads stdin).")
    parser.add_argument("--policy", choices=POLICIES, default="v1")
    parser.add_argument("--seed", type=int, default=None, help="default: $PASSK_SEED or 0")
    args = parser.parse_args(argv)
    try:
        seed = args.seed if args.seed is not None else int(os.environ.get("PASSK_SEED", "0"))
        if os.environ.get("PASSK_PROTOCOL") == "worker":
            return serve_lines(lambda request: decide(request, args.policy, seed))
        request = json.loads(sys.stdin.read())
        request.setdefault("id", os.environ.get("PASSK_ROW_ID", ""))
        request.setdefault("attempt", int(os.environ.get("PASSK_ATTEMPT", "1")))
        request.setdefault("version", os.environ.get("PASSK_VERSION", ""))
        answer = decide(request, args.policy, seed)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"agent.py: bad request or settings: {exc!r}", file=sys.stderr)
        return 2
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
