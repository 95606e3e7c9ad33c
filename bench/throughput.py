"""Throughput of ``passk run``: wall time against the ideal ceil(N*k / C) * L.

An agent that sleeps a fixed latency L answers N rows x k attempts at
concurrency C, through the same path ``passk run`` takes (``measure_run``: the
runner, retries, the fsync'd journal, the artifact).  With no overhead at all
the run takes ceil(N*k / C) * L; the ratio of the measured wall time to that
is the figure of merit (target: <= 1.10 with the worker protocol).

With one process per attempt, Python's start-up is the floor.  It is measured
(``python3 -c pass`` and the minimal agent with L = 0, wall and CPU time), and
the run is also reported against that floor:

    floor = max(ceil(N*k / C) * (L + agent start wall),  N*k * agent start CPU / cores)

the first term when start-ups overlap freely, the second when they queue for
the CPU (32 Python start-ups at once on 2 cores do).

``--agent sh`` runs one process per attempt of a minimal shell agent
(``read``, ``sleep``, ``echo``): its start-up costs little, so the ratio to
the ideal is what passk's own per-attempt work costs (spawning as the agent
user, the reaper, the journal), which is what ``--mode process --agent sh``
measures.

``--user nobody`` (passk as root, as in the container action) runs every
agent as that user, as ``PASSK_AGENT_USER`` does: its uid and gid, no
supplementary group, a private ``HOME``.

Usage (the figures in bench/README.md):

    python bench/throughput.py --rows 1000 --k 3 --latency 0.05 --concurrency 32
    python bench/throughput.py --mode process --agent sh
    python bench/throughput.py --mode process --agent sh --user nobody
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from passk_action.agents.identity import AGENT_USER_ENV, agent_user
from passk_action.agents.protocol import Agent
from passk_action.agents.runner import ProcessAgent, ProcessAgentSpec
from passk_action.agents.scheduler import RetryPolicy
from passk_action.agents.worker import WorkerAgent
from passk_action.core.model import AgentInfo, Dataset, EvalSettings, Row, Version, dataset_digest
from passk_action.engine.measuring import Measurement, measure_run
from passk_action.engine.session import Session

AGENT = """\
import os, time
from passk_action.agents.serve import agent

LATENCY = float(os.environ["BENCH_LATENCY_S"])

@agent
def decide(request):
    time.sleep(LATENCY)
    return {"decision": "deny", "checks": {"latency": LATENCY}}
"""

SH_AGENT = """\
read -r request
sleep "$BENCH_LATENCY_S"
echo '{"decision": "deny", "checks": {"latency": "fixed"}}'
"""

REQUEST = b'{"id": "r1", "input": {}, "attempt": 1, "version": "candidate"}\n'


def child_cost(command: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of running ``command`` once, one at a time."""
    walls, cpus = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        assert proc.stdin is not None
        proc.stdin.write(REQUEST)
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        walls.append(time.perf_counter() - started)
        cpus.append(usage.ru_utime + usage.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{command} exited with {proc.returncode}")
    return statistics.median(walls), statistics.median(cpus)


def timed_run(agent: Agent, rows: int, k: int, concurrency: int, out: Path) -> float:
    dataset_rows = tuple(Row(id=f"r{i:06d}", input={"n": i}, expected="deny") for i in range(rows))
    dataset = Dataset(dataset_rows, "bench", dataset_digest(dataset_rows))
    session = Session(
        concurrency=concurrency, retry=RetryPolicy(attempts=0), now=lambda: "2026-01-01T00:00:00Z"
    )
    started = time.perf_counter()
    run, _ = measure_run(
        Measurement(dataset, dataset.rows, EvalSettings(k=k), out),
        agent,
        AgentInfo(Version.CANDIDATE, "bench"),
        session,
    )
    wall = time.perf_counter() - started
    errors = [a for a in run.attempts if not a.valid]
    if errors:
        raise SystemExit(
            f"{len(errors)} error attempts, e.g. {errors[0].error}: {errors[0].detail}"
        )
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per attempt (L)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--mode", choices=["worker", "process", "both"], default="both")
    parser.add_argument(
        "--agent",
        choices=["python", "sh"],
        default="python",
        help="process mode: a serve()-based Python agent, or a minimal shell agent",
    )
    parser.add_argument(
        "--user", default="", help="run agents as this user (passk must be root), as the action"
    )
    args = parser.parse_args()
    user = agent_user({AGENT_USER_ENV: args.user})

    n = args.rows * args.k
    rounds = math.ceil(n / args.concurrency)
    ideal = rounds * args.latency
    cores = os.cpu_count() or 1
    print(f"N*k = {n}, L = {args.latency:g}s, C = {args.concurrency}, cores = {cores}")
    print(f"ideal ceil(N*k/C)*L = {ideal:.3f}s")

    with tempfile.TemporaryDirectory(prefix="passk-bench-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the agent user reads its agent here
        (root / "agent.py").write_text(AGENT, encoding="utf-8")
        env = {**os.environ, "BENCH_LATENCY_S": str(args.latency)}
        spec = ProcessAgentSpec(
            command=(sys.executable, str(root / "agent.py")), cwd=root, timeout_s=60, user=user
        )

        zero = {**env, "BENCH_LATENCY_S": "0"}
        agent_wall, agent_cpu = child_cost([sys.executable, str(root / "agent.py")], zero, 20)
        if args.mode in ("worker", "both"):
            # Cold: the pool starts C workers during the run (C start-ups on
            # `cores` CPUs is its own floor); warm: the same pool, a second run,
            # which is what the protocol itself costs.
            pool_floor = ideal + args.concurrency * agent_cpu / cores
            with WorkerAgent(spec, env, max_workers=args.concurrency) as worker:
                cold = timed_run(worker, args.rows, args.k, args.concurrency, root / "w1.json")
                warm = timed_run(worker, args.rows, args.k, args.concurrency, root / "w2.json")
                started = worker.started
            print(
                f"worker cold: wall {cold:.3f}s  ratio to ideal {cold / ideal:.3f}  "
                f"ratio to ideal + pool start-up ({pool_floor:.3f}s) {cold / pool_floor:.3f}"
            )
            print(
                f"worker warm: wall {warm:.3f}s  ratio to ideal {warm / ideal:.3f}  "
                f"({started} worker processes in all)"
            )

        if args.mode in ("process", "both"):
            if args.agent == "sh":
                (root / "agent.sh").write_text(SH_AGENT, encoding="utf-8")
                command = ["/bin/sh", str(root / "agent.sh")]
                spec = ProcessAgentSpec(command=tuple(command), cwd=root, timeout_s=60, user=user)
                agent_wall, agent_cpu = child_cost(command, zero, 20)
            bare_wall, bare_cpu = child_cost([sys.executable, "-c", "pass"], zero, 20)
            floor = max(rounds * (args.latency + agent_wall), n * agent_cpu / cores)
            print(
                f"start-up: python3 -c pass {bare_wall * 1000:.1f}ms wall / "
                f"{bare_cpu * 1000:.1f}ms CPU; minimal {args.agent} agent "
                f"{agent_wall * 1000:.1f}ms wall / {agent_cpu * 1000:.1f}ms CPU"
            )
            print(f"process floor = {floor:.3f}s")
            wall = timed_run(
                ProcessAgent(spec, env), args.rows, args.k, args.concurrency, root / "p.json"
            )
            print(
                f"process: wall {wall:.3f}s  ratio to ideal {wall / ideal:.3f}  "
                f"ratio to start-up floor {wall / floor:.3f}"
            )


if __name__ == "__main__":
    main()
