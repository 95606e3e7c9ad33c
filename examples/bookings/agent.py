"""A booking agent whose tasks its environment scores, in the manner of tau-bench.

Each request names a task of ``tasks.json`` and carries the customer's
instruction.  The agent works on a fresh copy of the toy airline database
(``environment.py``) through its tools, then the environment scores the
task by the final state of the database, as tau-bench does: reward 1.0 when
it equals the state the gold actions leave, else 0.0.  The agent reports that
reward as its answer's ``score``, with its last message as the ``decision``
and the tools it called, in order, as the check ``tools``.  passk's rows
carry no expected decision (``scoring.by: environment``): a task is right
when its environment says it succeeded.

Like a sampled LLM the agent is not always sure; its draws are seeded by
sha256 over (seed, row id, attempt, version), so a run is reproducible
(``--seed`` or env ``PASSK_SEED``, default 0) and attempts still disagree.

Two prompts, ``--policy v1`` (production) and ``--policy v2`` (candidate):

- v1 follows every step, but on a request that asks for two things ("...,
  and also add a checked bag") it forgets the second one half the time.
- v2 adds "resolve each request in as few steps as you can": it never
  forgets the bag (more accurate), but now and then it skips the flight
  search and moves the reservation to the next flight number on its route,
  which is the wrong flight: the database ends in the wrong state, whatever
  the agent says.

Protocol: one JSON request on stdin ``{"id", "input", "attempt", "version"}``,
one JSON answer on stdout ``{"decision", "score", "checks"}``; exit 2 on a
bad request.
Started by passk's worker pool (``protocol: worker`` in passk.yml, which sets
``PASSK_PROTOCOL=worker``) it answers one request per line instead, echoing its
``request_id``, until stdin closes: one start-up for many answers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from environment import Environment, ToolError, load_tasks, reward

POLICIES = ("v1", "v2")


def draw(seed: int, request: dict[str, Any], version: str, what: str) -> float:
    """A reproducible number in [0, 1) for one attempt: the sampled model's coin."""
    key = f"{seed}|{request['id']}|{request.get('attempt', 1)}|{version}|{what}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) / 16**12


def change(env: Environment, reservation_id: str, instruction: str, skip_search: bool) -> str:
    """Move the reservation to the flight the instruction asks for."""
    reservation = env.get_reservation(reservation_id)
    flight = env.db["flights"][reservation["flight"]]
    if skip_search:  # "few steps": the next flight number, not the one asked for
        guess = f"HAT{int(reservation['flight'][3:]) + 1}"
        try:
            env.change_flight(reservation_id, guess)
        except ToolError as refused:
            return f"I could not move it: {refused}."
        return f"Moved {reservation_id} to {guess}."
    day = date.fromisoformat(flight["date"])
    if "next day" in instruction:
        day += timedelta(days=1)
    found = env.search_flights(flight["origin"], flight["destination"], day.isoformat())
    evening = "evening" in instruction
    chosen = [f for f in found if (f["time"] >= "12:00") == evening]
    if not chosen:
        return "No such flight."
    env.change_flight(reservation_id, chosen[0]["flight_id"])
    return f"Moved {reservation_id} to {chosen[0]['flight_id']}."


def work(env: Environment, request: dict[str, Any], policy: str, seed: int) -> str:
    """Carry out the instruction with the tools; the last message to the customer."""
    version = str(request.get("version", "candidate"))
    instruction = str(request["input"]["instruction"])
    found = re.search(r"\b[A-Z0-9]{6}\b", instruction)
    if found is None:
        return "Which reservation?"
    reservation_id = found.group(0)
    if "Cancel" in instruction:
        env.get_reservation(reservation_id)
        try:
            env.cancel_reservation(reservation_id)
        except ToolError as refused:
            return f"I cannot cancel it: {refused}."
        return f"Cancelled {reservation_id}."
    said = ""
    if "flight" in instruction:
        skip = policy == "v2" and draw(seed, request, version, "few steps") < 0.35
        said = change(env, reservation_id, instruction, skip)
        asks_more = "also" in instruction
        if asks_more and policy == "v1" and draw(seed, request, version, "second ask") < 0.5:
            return said  # the second request is forgotten
    else:
        env.get_reservation(reservation_id)
    if "bag" in instruction:
        for _ in range(2 if "two" in instruction else 1):
            env.add_bag(reservation_id)
        said = (said + " Added the checked bag.").strip()
    return said


def answer(request: dict[str, Any], policy: str, seed: int = 0) -> dict[str, Any]:
    task = load_tasks()[str(request["input"]["task"])]
    env = Environment()
    message = work(env, request, policy, seed)
    return {"decision": message, "score": reward(task, env), "checks": {"tools": env.calls}}


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
        except (ValueError, KeyError, TypeError, ToolError) as exc:
            reply = {"request_id": request_id, "error": f"bad request: {exc}"}
        print(json.dumps(reply), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", choices=POLICIES, default="v1")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("PASSK_SEED", "0")))
    args = parser.parse_args(argv)
    if os.environ.get("PASSK_PROTOCOL") == "worker":
        return serve_lines(lambda request: answer(request, args.policy, args.seed))
    try:
        request = json.loads(sys.stdin.read())
        result = answer(request, args.policy, args.seed)
    except (ValueError, KeyError, TypeError, ToolError) as exc:
        print(f"agent.py: bad request: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
