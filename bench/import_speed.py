"""Speed of ``passk import``: its wall time against a bare ``json.load`` of the same file.

Writes a synthetic tau-bench results file of N records shaped as tau-bench's
``run.py`` writes them (``[r.model_dump() for r in results]``: ``task_id``,
``reward``, ``info``, ``traj``, ``trial``), N/trials tasks x trials, with a
few trials that raised (``info.error``).  Then, in fresh processes and in
turns, ``--repeat`` times each:

- the floor: ``python3 -c "import json; json.load(open(FILE))"``;
- ``passk import --from tau-bench FILE --out run.json`` (``python -m passk_action``);
- ``passk report run.json`` (markdown, to /dev/null) of the run just written.

``--vs DIR`` times a second tree's sources too (e.g. an older commit's, from
``git archive COMMIT src | tar -x -C DIR``), in the same turns, each tree
reporting the run it wrote itself.

Prints the medians and their ratios, of wall time and of CPU time (user +
system, which a machine shared with other jobs disturbs less); targets:
import <= 2.5, report <= 2.0.  ``--traj N`` sets the
messages per trajectory: real trajectories are long, which makes the floor
larger and the ratio smaller, so the default (2 short messages) is the hard
case.

Usage (the figures in bench/README.md):

    python bench/import_speed.py --records 500000 --repeat 3
    python bench/import_speed.py --records 500000 --repeat 3 --vs /tmp/old/src  # A/B
    python -X importtime -m passk_action --version 2> importtime.txt   # start-up
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_tau_bench(path: Path, records: int, trials: int, traj: int, seed: int) -> None:
    """A tau-bench results file: every task's trials 0..trials-1, ~70% successes."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for index in range(records):
            task, trial = divmod(index, trials)
            raised = rng.random() < 0.002
            info: dict[str, object] = {
                "task": {"user_id": f"user_{task}", "actions": [{"name": "get_order"}]},
                "source": "user",
            }
            if raised:
                info = {"error": "litellm.RateLimitError: rate limit", "traceback": "..."}
            record = {
                "task_id": task,
                "reward": 0.0 if raised else (1.0 if rng.random() < 0.7 else 0.0),
                "info": info,
                "traj": [
                    {"role": "user" if m % 2 else "assistant", "content": f"message {m}"}
                    for m in range(traj)
                ],
                "trial": trial,
            }
            if index:
                out.write(", ")
            json.dump(record, out)
        out.write("]")


def cost(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``command`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--traj", type=int, default=2, help="messages per trajectory")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--src",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "src",
        help="the passk sources to time (default: this checkout's), e.g. an older "
        "commit's from `git archive COMMIT src | tar -x -C DIR`",
    )
    parser.add_argument("--vs", type=Path, default=None, help="a second tree's src, A/B")
    args = parser.parse_args()

    trees = {"this tree": args.src.resolve()}
    if args.vs is not None:
        trees["--vs tree"] = args.vs.resolve()
    envs = {}
    for name, src in trees.items():
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
        envs[name] = env
    timed: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="passk-import-bench-") as scratch:
        data = Path(scratch) / "results.json"
        write_tau_bench(data, args.records, args.trials, args.traj, args.seed)
        size = data.stat().st_size
        floor_cmd = [sys.executable, "-c", f"import json; json.load(open({str(data)!r}))"]
        for _ in range(args.repeat):  # in turns, so load changes hit all alike
            timed.setdefault("json.load (floor)", []).append(cost(floor_cmd, envs["this tree"]))
            for index, (name, env) in enumerate(envs.items()):
                out = Path(scratch) / f"run{index}.json"
                import_cmd = [
                    sys.executable, "-m", "passk_action", "import", "--from", "tau-bench",
                    str(data), "--out", str(out),
                ]  # fmt: skip
                report_cmd = [sys.executable, "-m", "passk_action", "report", str(out)]
                timed.setdefault(f"import, {name}", []).append(cost(import_cmd, env))
                timed.setdefault(f"report, {name}", []).append(cost(report_cmd, env))
    medians = {
        name: tuple(statistics.median(x) for x in zip(*runs, strict=True))
        for name, runs in timed.items()
    }
    floor_wall, floor_cpu = medians["json.load (floor)"]
    print(
        f"{args.records:,} records ({args.records // args.trials:,} tasks x {args.trials} "
        f"trials), {size / 2**20:.0f} MiB, medians of {args.repeat} runs"
    )
    print(f"{'':24} wall s  ratio   CPU s  ratio")
    for name, (wall, cpu) in medians.items():
        print(
            f"{name:24} {wall:6.2f}  {wall / floor_wall:5.2f}  {cpu:6.2f}  {cpu / floor_cpu:5.2f}"
        )
    print("targets: import <= 2.5, report <= 2.0 (ratios to the floor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
