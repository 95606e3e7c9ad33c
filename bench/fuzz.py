"""A long fuzz run of every input surface: how many inputs, how many crash classes.

The generators and runners are ``tests/support/fuzzing.py``'s, the ones the test
suite runs on a small budget (``tests/e2e/test_fuzz.py``); here they run for
``--inputs`` inputs in all, split evenly over the surfaces, with a fresh
random seed unless ``--seed`` is given.  Each input ends ``ok``, in one
clean ``error`` line, or in a ``crash``; crashes are grouped into classes
(the exception and the deepest frame of passk it came from, or "hang" past
the time bound) and each class is printed with its first input.

    python bench/fuzz.py --inputs 20000
    python bench/fuzz.py --inputs 2000 --surface "run artifact" --seed 7

Needs the dev extra (hypothesis).  Writes a Markdown table to stdout; exit
status 1 when any crash class was found.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# --src DIR measures another tree (e.g. an older commit's src/) with these generators.
_SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv[:-1] else str(ROOT / "src")
sys.path[:0] = [_SRC, str(ROOT / "tests")]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from support import fuzzing  # noqa: E402


def fuzz_surface(
    surface: fuzzing.Surface, inputs: int, rng_seed: int, scratch: Path
) -> tuple[Counter[str], dict[str, str], float]:
    """Outcome counts, the first input of each crash class, and the seconds it took."""
    counts: Counter[str] = Counter()
    classes: dict[str, str] = {}

    @seed(rng_seed)
    @settings(
        max_examples=inputs,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=surface.inputs)
    def run(case: Any) -> None:
        folder = scratch / f"{surface.name.replace(' ', '-')}-{sum(counts.values())}"
        folder.mkdir(parents=True)
        outcome = surface.run(case, folder)
        counts[outcome.kind] += 1
        if outcome.kind == "crash" and outcome.text not in classes:
            classes[outcome.text] = repr(case)[:300]

    started = time.perf_counter()
    run()
    return counts, classes, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=20000, help="inputs in all (default 20000)")
    parser.add_argument("--surface", action="append", help="only these surfaces (repeatable)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--src", help="the src/ folder of the passk to fuzz (default: this tree's)")
    args = parser.parse_args(argv)
    surfaces = [s for s in fuzzing.surfaces() if not args.surface or s.name in args.surface]
    if not surfaces:
        parser.error(f"no such surface; choose from {[s.name for s in fuzzing.surfaces()]}")
    rng_seed = args.seed if args.seed is not None else random.randrange(2**32)
    each = max(1, args.inputs // len(surfaces))
    print(
        f"passk from {fuzzing.passk_source()}; seed {rng_seed}; {each} inputs per surface; "
        f"time bound {fuzzing.TIME_BOUND_S} s\n"
    )
    print("| surface | inputs | ok | clean error | crashes | crash classes | seconds |")
    print("|---|---|---|---|---|---|---|")
    found: dict[str, tuple[str, str]] = {}
    total: Counter[str] = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="passk-fuzz-") as scratch:
        try:
            for surface in surfaces:
                counts, classes, seconds = fuzz_surface(surface, each, rng_seed, Path(scratch))
                total.update(counts)
                for name, example in classes.items():
                    found.setdefault(name, (surface.name, example))
                n = sum(counts.values())
                print(
                    f"| {surface.name} | {n:,} | {counts['ok']:,} | {counts['error']:,} "
                    f"| {counts['crash']:,} | {len(classes)} | {seconds:.0f} |",
                    flush=True,
                )
        finally:
            fuzzing.close_agents()
    n = sum(total.values())
    print(
        f"| **all** | **{n:,}** | {total['ok']:,} | {total['error']:,} | {total['crash']:,} "
        f"| **{len(found)}** | {time.perf_counter() - started:.0f} |"
    )
    for name, (surface, example) in found.items():
        print(f"\n- **{name}** ({surface}), first input: `{example}`")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
