"""Speed of ``passk history`` over many baselines of a large artifact, against two references.

Builds a git repository (with ``git fast-import``, in a temporary folder)
whose ``main`` holds V versions of a baseline artifact of R rows x k = 3,
written by passk's own writer; each version moves ~2% of the rows between
classes, as successive baselines do.  Then, in fresh processes and in
turns, ``--repeat`` times each:

- the floor: one ``git cat-file --batch`` streaming every version's blob,
  each parsed with ``json.loads`` (the least any reader of V JSON documents
  pays; it builds no run and classifies nothing);
- the reader: every version, already in a file, through ``read_run`` (passk's
  artifact reader, its fast path; what ``passk report`` pays to read one
  version, V times), then classified;
- the naive way: for each commit of ``git log -- <artifact>``, ``git show
  <sha>:<path>`` into a file and ``read_run`` it, then classify every row
  (what the issue's sketch would cost);
- ``passk history --last V --json`` (``python -m passk_action``).

Prints the medians of wall and CPU time and the ratios to the floor.
Target: ``passk history`` <= 1.2 x the reader (git and the history cost
little beside reading each version once).

Usage (the figures in bench/README.md):

    python bench/history.py --rows 5000 --versions 300 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from passk_action.core.model import (  # noqa: E402
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
from passk_action.store.artifact import dump_run  # noqa: E402

ARTIFACT = ".passk/baseline.json"
CONFIG = "dataset: data.jsonl\nk: 3\nbaseline: {artifact: .passk/baseline.json}\n"

FLOOR = """
import json, subprocess, sys
shas = subprocess.run(["git", "log", "--first-parent", "--format=%H", "main", "--", sys.argv[1]],
                      capture_output=True, text=True, check=True).stdout.split()
proc = subprocess.Popen(["git", "cat-file", "--batch"], stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE)
for sha in shas:
    proc.stdin.write(f"{sha}:{sys.argv[1]}\\n".encode()); proc.stdin.flush()
    size = int(proc.stdout.readline().split()[2])
    json.loads(proc.stdout.read(size + 1)[:size])
proc.stdin.close(); proc.wait()
"""

READER = """
import sys
from pathlib import Path
from passk_action.core.history import summarize_version
from passk_action.store.artifact import read_run
for path in sorted(Path(sys.argv[1]).glob("v*.json")):
    summarize_version(read_run(path))
"""

NAIVE = """
import subprocess, sys, tempfile
from pathlib import Path
from passk_action.core.history import summarize_version
from passk_action.store.artifact import read_run
shas = subprocess.run(["git", "log", "--first-parent", "--format=%H", "main", "--", sys.argv[1]],
                      capture_output=True, text=True, check=True).stdout.split()
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "baseline.json"
    for sha in shas:
        path.write_bytes(subprocess.run(["git", "show", f"{sha}:{sys.argv[1]}"],
                                        capture_output=True, check=True).stdout)
        summarize_version(read_run(path))
"""


def versions(rows: int, count: int, seed: int) -> Iterator[str]:
    """``count`` baseline artifacts, oldest first: each moves ~2% of rows to another class."""
    rng = random.Random(seed)
    ids = [f"r-{i:06d}" for i in range(rows)]
    records = [
        RowRecord(i, sha256_hex(canonical_json({"id": i, "input": i})), "deny", n % 10 == 0)
        for n, i in enumerate(ids)
    ]
    behaviour = {i: "right" if rng.random() < 0.85 else "flip" for i in ids}
    for v in range(count):
        for i in rng.sample(ids, max(1, rows // 50)):
            behaviour[i] = rng.choice(("right", "flip", "wrong"))
        attempts = []
        for i in ids:
            answers = {"right": ["deny"] * 3, "wrong": ["approve"] * 3}.get(
                behaviour[i], ["deny", "approve", "deny"]
            )
            checks = (("return_window", "ok"), ("receipt", "present"))
            attempts += [
                Attempt(i, n, Phase.MAIN, a, checks, duration_s=round(rng.uniform(0.5, 2), 4))
                for n, a in enumerate(answers, 1)
            ]
        locked = tuple(r.id for r in records if r.must_not_break and behaviour[r.id] == "right")
        run = Run(
            tool_version="0.1.0",
            dataset_digest="sha256:" + "0" * 64,
            settings=EvalSettings(k=3),
            agent=AgentInfo(Version.BASELINE, "python3 agent.py", f"{v:040x}"),
            created_at=f"2026-01-01T00:{v // 60 % 60:02d}:{v % 60:02d}Z",
            rows=tuple(records),
            attempts=tuple(attempts),
            ratchet=locked,
        )
        yield dump_run(run)


def build_repository(root: Path, texts: Iterable[str], copies: Path) -> float:
    """``main`` with one commit per version of the artifact (and the config, first), and
    each version as a file in ``copies``.  Returns the size of the last version in MiB.
    """
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    proc = subprocess.Popen(["git", "fast-import", "--quiet"], cwd=root, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    size = 0.0
    for n, text in enumerate(texts, 1):
        stream = []
        data = text.encode("utf-8")
        (copies / f"v{n:05d}.json").write_bytes(data)
        files = [(ARTIFACT, data)]
        if n == 1:
            files.append(("passk.yml", CONFIG.encode()))
            files.append(("data.jsonl", b'{"id": "x", "input": 1, "expected": "deny"}\n'))
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"committer Bench <b@example.com> {1_700_000_000 + n} +0000\n".encode())
        message = f"baseline {n}".encode()
        stream.append(b"data %d\n%s\n" % (len(message), message))
        for path, blob in files:
            stream.append(b"M 100644 inline %s\ndata %d\n" % (path.encode(), len(blob)))
            stream.append(blob + b"\n")
        proc.stdin.write(b"".join(stream))
        size = len(data) / 2**20
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "checkout", "-q", "main"], cwd=root, check=True)
    return size


def cost(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system, children included) seconds of one run in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--versions", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    commands = {
        "floor": [sys.executable, "-c", FLOOR, ARTIFACT],
        "reader": [sys.executable, "-c", READER, "COPIES"],
        "naive": [sys.executable, "-c", NAIVE, ARTIFACT],
        "passk history": [
            sys.executable, "-m", "passk_action", "history", "--base", "main",
            "--last", str(args.versions), "--json",
        ],
    }  # fmt: skip
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="passk-history-bench-") as scratch:
        root, copies = Path(scratch) / "repo", Path(scratch) / "copies"
        copies.mkdir()
        size = build_repository(root, versions(args.rows, args.versions, args.seed), copies)
        for _ in range(args.repeat):  # in turns, so load changes hit all alike
            for name, command in commands.items():
                argv = [str(copies) if a == "COPIES" else a for a in command]
                timings[name].append(cost(argv, root, env))
    medians = {
        name: tuple(statistics.median(x) for x in zip(*runs, strict=True))
        for name, runs in timings.items()
    }
    floor_wall, floor_cpu = medians["floor"]
    print(
        f"{args.versions} versions of a {args.rows:,}-row x k=3 artifact "
        f"({size:.1f} MiB each), medians of {args.repeat} runs"
    )
    print("                     wall s  ratio   CPU s  ratio")
    for name, (wall, cpu) in medians.items():
        print(
            f"{name:<20} {wall:6.2f}  {wall / floor_wall:5.2f}  {cpu:6.2f}  {cpu / floor_cpu:5.2f}"
        )
    wall, cpu = medians["passk history"]
    reader_wall, reader_cpu = medians["reader"]
    print(
        f"passk history / reader: wall {wall / reader_wall:.2f}, CPU {cpu / reader_cpu:.2f} "
        "(target <= 1.20)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
