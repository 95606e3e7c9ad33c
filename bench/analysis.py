"""Time and peak memory of ``passk gate`` and ``passk report`` on a large result.

Generates a result of N rows x k attempts on both versions (default 100,000 x
5, two intermediate checks per attempt, 1% error attempts, 2% lost rows with
confirmation attempts on both sides), written by the same code as ``passk
compare --json``.  Then runs, each in a fresh process:

- the floor: ``python3 -c 'json.load(open(result))'`` (reading the file at all);
- ``passk gate result.json``;
- ``passk report result.json`` (Markdown) and ``--format json``.

and prints wall time and peak RSS for each (the median of ``--repeat`` runs,
taken in turns so a busy neighbour slows every command alike), and their
ratios to the floor.  Peak RSS is the child's own ``ru_maxrss`` from
``wait4``.  Targets: ``passk gate`` and ``passk report`` under 10 s and under
1 GiB RSS each, on a 2-core machine.  ``--all-formats`` adds the HTML and
JUnit reports.

Usage (the figures in bench/README.md):

    python bench/analysis.py --rows 100000 --k 5 --repeat 5 --all-formats
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from passk_action.core.gate import GatePolicy
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowRecord,
    Run,
    Version,
    canonical_json,
    sha256_hex,
)
from passk_action.core.result import CompareResult, Executions, evaluate
from passk_action.store.results import write_result

CHECKS = ("return_window", "proof_of_purchase")


def make_attempts(
    rng: random.Random, row_id: str, k: int, p_right: float, phase: Phase, start: int
) -> list[Attempt]:
    made = []
    for n in range(start, start + k):
        if rng.random() < 0.01:
            made.append(
                Attempt(row_id, n, phase, None, error="timeout", detail="killed after 60s",
                        duration_s=60.0)
            )  # fmt: skip
            continue
        decision = "deny" if rng.random() < p_right else "approve"
        checks = (("return_window", "ok" if decision == "deny" else "expired"),
                  ("proof_of_purchase", "present"))  # fmt: skip
        made.append(Attempt(row_id, n, phase, decision, checks, duration_s=rng.random()))
    return made


def generate(rows: int, k: int, path: Path, seed: int = 7) -> None:
    rng = random.Random(seed)
    records = tuple(
        RowRecord(
            f"r-{i:06d}",
            sha256_hex(canonical_json({"id": f"r-{i:06d}", "input": i})),
            "deny",
            i % 20 == 0,
            ("refunds", "tier-" + str(i % 3)),
        )
        for i in range(rows)
    )
    base: list[Attempt] = []
    cand: list[Attempt] = []
    confirm_b = confirm_c = 0
    for record in records:
        p_base = rng.choice((0.999, 0.999, 0.9, 0.5, 0.02))
        lost = rng.random() < 0.02
        p_cand = 0.4 if lost else p_base
        base += make_attempts(rng, record.id, k, p_base, Phase.MAIN, 1)
        cand += make_attempts(rng, record.id, k, p_cand, Phase.MAIN, 1)
        if lost:
            extra = 6 if record.must_not_break else 3
            base += make_attempts(rng, record.id, extra, p_base, Phase.CONFIRM, k + 1)
            cand += make_attempts(rng, record.id, extra, p_cand, Phase.CONFIRM, k + 1)
            confirm_b += extra
            confirm_c += extra
    settings = EvalSettings(k=k)

    def run(version: Version, attempts: list[Attempt]) -> Run:
        return Run("0.1.0", "sha256:" + "0" * 64, settings, AgentInfo(version, "bench"),
                   "2026-01-01T00:00:00Z", records, tuple(attempts))  # fmt: skip

    baseline, candidate = run(Version.BASELINE, base), run(Version.CANDIDATE, cand)
    ratchet = frozenset(r.id for r in records if r.must_not_break and rng.random() < 0.5)
    policy = GatePolicy()
    comparison, gate = evaluate(records, baseline, candidate, ratchet=ratchet, policy=policy)
    result = CompareResult(
        rows=records, baseline=baseline, candidate=candidate, ratchet=ratchet, policy=policy,
        comparison=comparison, gate=gate,
        executions=Executions(candidate=rows * k, confirm_baseline=confirm_b,
                              confirm_candidate=confirm_c,
                              naive=2 * rows * k + confirm_b + confirm_c),
        created_at="2026-01-01T00:00:00Z", tool_version="0.1.0",
    )  # fmt: skip
    write_result(result, path)


def measure(command: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB and exit status of one fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode  # ru_maxrss is KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--keep", default=None, help="also keep the generated result here")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (median)")
    parser.add_argument("--all-formats", action="store_true", help="also html and junit")
    parser.add_argument("--generate-only", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:
        generate(args.rows, args.k, Path(args.generate_only))
        return
    with tempfile.TemporaryDirectory(prefix="passk-bench-") as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "result.json"
        started = time.perf_counter()
        # In a child: a forked child inherits its parent's peak RSS, so the
        # measuring process must stay small for the figures to mean anything.
        subprocess.run(
            [sys.executable, __file__, "--rows", str(args.rows), "--k", str(args.k),
             "--generate-only", str(path)],
            check=True,
        )  # fmt: skip
        size = path.stat().st_size / (1 << 20)
        print(
            f"generated {args.rows} rows x k={args.k} (+ confirmations): {size:.0f} MiB "
            f"in {time.perf_counter() - started:.1f}s"
        )
        python = sys.executable
        passk = "import sys; from passk_action.cli import main; sys.exit(main(sys.argv[1:]))"
        cases = {
            "json.load (floor)": [python, "-c", "import json,sys; json.load(open(sys.argv[1]))",
                                  str(path)],
            "passk gate": [python, "-c", passk, "gate", str(path)],
            "passk report (md)": [python, "-c", passk, "report", str(path)],
            "passk report (json)": [python, "-c", passk, "report", str(path),
                                    "--format", "json"],
        }  # fmt: skip
        if args.all_formats:
            for fmt in ("html", "junit"):
                cases[f"passk report ({fmt})"] = [python, "-c", passk, "report", str(path),
                                                  "--format", fmt]  # fmt: skip
        runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, command in cases.items():
                runs[name].append(measure(command))
        floor_wall = statistics.median(w for w, _, _ in runs["json.load (floor)"])
        floor_rss = statistics.median(r for _, r, _ in runs["json.load (floor)"])
        print(f"median of {args.repeat} run(s) each:")
        for name, measured in runs.items():
            wall = statistics.median(w for w, _, _ in measured)
            rss = statistics.median(r for _, r, _ in measured)
            codes = sorted({c for _, _, c in measured})
            print(
                f"{name:22} wall {wall:6.2f}s ({wall / floor_wall:4.2f}x floor)  "
                f"peak RSS {rss:6.0f} MiB ({rss / floor_rss:4.2f}x floor)  exit {codes}  "
                f"walls {' '.join(f'{w:.1f}' for w, _, _ in measured)}"
            )


if __name__ == "__main__":
    main()
