"""A pytest plugin that records each test's wall time and CPU time, for bench/suite_speed.md.

    PYTHONPATH=bench python3 -m pytest -q -p suite_timing --suite-timing=/tmp/t.jsonl [args]
    python3 bench/suite_timing.py /tmp/t.jsonl      # the summary

A test's CPU time is its process's user + system time plus its waited-for children's
(``os.times``), over setup, call and teardown: what the test costs the machine's cores,
whatever else runs on them; ``own_cpu`` is the worker process's part alone (the test's
code and what it runs in process), the rest its agents, ``git`` and other processes.
Its wall time, on a busy machine, is that cost stretched by the load, plus what the
test spends waiting (sleeps, timeouts, another process's start-up that is not its own
CPU). The summary gives, per layer (``tests/<part>``):

- ``wall``: the sum of the tests' wall times (a serial run's length, under this load);
- ``cpu``: the sum of their CPU times (the work; with c cores, no run is shorter
  than cpu / c);
- ``cpu/wall``: how CPU-bound the layer is. A worker that runs tests whose ratio is r
  keeps r of one core busy, so about cores / r workers fill the cores.

Docker's containers and a CPU a process never waited for (a daemon left running) are
not counted: the CPU figures are lower bounds.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    """(this process's CPU and its waited-for children's, this process's alone)."""
    t = os.times()
    own = t.user + t.system
    return own + t.children_user + t.children_system, own


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--suite-timing", default=None, help="append each test's times here")


_failed: set[str] = set()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    if outcome.get_result().failed:
        _failed.add(item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    target = item.config.getoption("--suite-timing")
    wall, (cpu, own), start = time.perf_counter(), _cpu(), time.time()
    yield
    cpu_now, own_now = _cpu()
    if target:
        line = {
            "id": item.nodeid,
            "wall": time.perf_counter() - wall,
            "cpu": cpu_now - cpu,
            "own_cpu": own_now - own,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
            "start": start,
            "failed": item.nodeid in _failed,
        }
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


def summary(path: Path) -> str:
    layers: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for line in path.read_text(encoding="utf-8").splitlines():
        test = json.loads(line)
        parts = test["id"].split("/")
        layer = parts[1] if len(parts) > 2 else "(top)"
        layers[layer][0] += 1
        layers[layer][1] += test["wall"]
        layers[layer][2] += test["cpu"]
    rows = ["| layer | tests | wall s | cpu s | cpu/wall |", "|---|---|---|---|---|"]
    total = [0.0, 0.0, 0.0]
    for layer, (n, wall, cpu) in sorted(layers.items(), key=lambda kv: -kv[1][1]):
        rows.append(f"| {layer} | {n:.0f} | {wall:.0f} | {cpu:.0f} | {cpu / wall:.2f} |")
        total = [total[0] + n, total[1] + wall, total[2] + cpu]
    n, wall, cpu = total
    rows.append(f"| **all** | {n:.0f} | {wall:.0f} | {cpu:.0f} | {cpu / wall:.2f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
