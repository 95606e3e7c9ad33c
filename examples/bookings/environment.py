"""A toy airline environment in the manner of tau-bench: a database, tools, and a reward.

The agent changes the database only through the tools; when it is done, the
environment scores the task by its final state, as tau-bench does: the gold
actions (``tasks.json``, never shown to the agent) are replayed on a fresh
copy of the database, and the reward is 1.0 when both final databases are
equal, else 0.0.  Whatever the agent said along the way, only what it did
counts.

Tools: ``get_reservation(reservation_id)``, ``search_flights(origin,
destination, date)``, ``change_flight(reservation_id, flight_id)``,
``add_bag(reservation_id)`` and ``cancel_reservation(reservation_id)``
(refused for a basic-economy ticket, as the airline's policy says).
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

TASKS = Path(__file__).with_name("tasks.json")

FLIGHTS = {
    "HAT101": {"origin": "SFO", "destination": "JFK", "date": "2025-05-14", "time": "07:10"},
    "HAT107": {"origin": "SFO", "destination": "JFK", "date": "2025-05-14", "time": "18:45"},
    "HAT102": {"origin": "SFO", "destination": "JFK", "date": "2025-05-15", "time": "07:10"},
    "HAT108": {"origin": "SFO", "destination": "JFK", "date": "2025-05-15", "time": "18:45"},
    "HAT201": {"origin": "BOS", "destination": "ORD", "date": "2025-05-20", "time": "06:30"},
    "HAT205": {"origin": "BOS", "destination": "ORD", "date": "2025-05-20", "time": "16:15"},
    "HAT301": {"origin": "SEA", "destination": "LAX", "date": "2025-06-02", "time": "09:00"},
    "HAT305": {"origin": "SEA", "destination": "LAX", "date": "2025-06-02", "time": "20:30"},
}
RESERVATIONS = {
    "ZQ8K2L": {"user": "mia_li", "flight": "HAT101", "cabin": "economy", "bags": 0},
    "RT5M9P": {"user": "omar_s", "flight": "HAT201", "cabin": "basic_economy", "bags": 0},
    "KD3W7X": {"user": "ava_p", "flight": "HAT301", "cabin": "business", "bags": 1},
    "PL9Q4N": {"user": "leo_k", "flight": "HAT102", "cabin": "economy", "bags": 2},
    "WX2B6V": {"user": "noa_t", "flight": "HAT205", "cabin": "economy", "bags": 0},
}


class ToolError(Exception):
    """A tool call the environment refused; the agent sees the message."""


class Environment:
    """One task's database and tools."""

    def __init__(self) -> None:
        self.db: dict[str, Any] = {
            "flights": copy.deepcopy(FLIGHTS),
            "reservations": copy.deepcopy(RESERVATIONS),
        }
        self.calls: list[str] = []

    def _reservation(self, reservation_id: str) -> dict[str, Any]:
        found = self.db["reservations"].get(reservation_id)
        if found is None:
            raise ToolError(f"no reservation {reservation_id}")
        return found  # type: ignore[no-any-return]

    def get_reservation(self, reservation_id: str) -> dict[str, Any]:
        self.calls.append("get_reservation")
        return dict(self._reservation(reservation_id))

    def search_flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        self.calls.append("search_flights")
        return [
            {"flight_id": fid, **flight}
            for fid, flight in sorted(self.db["flights"].items())
            if (flight["origin"], flight["destination"], flight["date"])
            == (origin, destination, date)
        ]

    def change_flight(self, reservation_id: str, flight_id: str) -> str:
        self.calls.append("change_flight")
        if flight_id not in self.db["flights"]:
            raise ToolError(f"no flight {flight_id}")
        self._reservation(reservation_id)["flight"] = flight_id
        return "changed"

    def add_bag(self, reservation_id: str) -> str:
        self.calls.append("add_bag")
        self._reservation(reservation_id)["bags"] += 1
        return "added"

    def cancel_reservation(self, reservation_id: str) -> str:
        self.calls.append("cancel_reservation")
        reservation = self._reservation(reservation_id)
        if reservation["cabin"] == "basic_economy":
            raise ToolError("basic economy tickets cannot be cancelled")
        del self.db["reservations"][reservation_id]
        return "cancelled"

    def call(self, tool: str, **args: Any) -> Any:
        return getattr(self, tool)(**args)


def load_tasks() -> dict[str, dict[str, Any]]:
    tasks: list[dict[str, Any]] = json.loads(TASKS.read_text(encoding="utf-8"))
    return {task["id"]: task for task in tasks}


def reward(task: dict[str, Any], env: Environment) -> float:
    """1.0 when the agent's final database is the gold actions' final database, else 0.0."""
    gold = Environment()
    for tool, args in task["gold_actions"]:
        with contextlib.suppress(ToolError):  # the gold run meets the refusals the agent would
            gold.call(tool, **args)
    return 1.0 if env.db == gold.db else 0.0
