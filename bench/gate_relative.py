"""The relative gate rule (issue 29): exact rates for rows right 80-100% of the time, and the
real compare path played against them.

For a gated row whose baseline is right with probability p and whose
candidate is right with p - drop (drop 0: a harmless row), this prints:

- **exact** (``core/operating.py``: ``relative_oc`` for ``gate.rule: relative``,
  ``row_oc`` for the issue-20 ``sequential`` rule): the chance the row blocks,
  the candidate's expected attempts beyond k, the baseline's expected attempts in
  the pull request, and for harmless rows the chance a pull request of 10 or 50
  such rows is blocked, 1 - (1 - b)^G;
- **what a smaller drop costs**: the relative rule set to catch a drop of 10 or 5
  points (``gate.sequential.drop``), its catch and its attempts;
- **simulated through the real compare path**: a baseline recorded by the engine
  (``measure_run`` with the gated rows' measurement, what ``passk baseline``
  runs), then ``engine.compare`` (what ``passk compare`` runs: main attempts,
  every confirmation round, the gate via ``core/result.evaluate``), with an
  in-process agent per version right with the row's accuracy; the block rate and
  attempts beside the exact figures, flagged beyond 3 Monte Carlo standard errors.

    python bench/gate_relative.py --out bench/gate_relative.md     # ~2.5 min, 2 cores
    python bench/gate_relative.py --prs 20                         # a quick look
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from passk_action.core.model import Version
from passk_action.core.operating import any_of, relative_oc, row_oc
from passk_action.core.sequential import RELATIVE, SEQUENTIAL, SPRT, RuleSettings

K = 3
ACCURACIES = (0.80, 0.85, 0.90, 0.95, 0.97, 0.99, 1.00)
DROPS = (0.0, 0.05, 0.10, 0.20, 0.30)
RELATIVE_RULE = RuleSettings(rule=RELATIVE)
SEQUENTIAL_RULE = RuleSettings(rule=SEQUENTIAL)


@dataclass(frozen=True)
class Exact:
    rule: str
    accuracy: float
    drop: float
    block: float
    candidate_extra: float
    baseline_extra: float


def exact(settings: RuleSettings, accuracy: float, drop: float) -> Exact:
    candidate = max(0.0, accuracy - drop)
    if settings.rule == RELATIVE:
        oc = relative_oc(settings, k=K, candidate=candidate, baseline=accuracy)
        return Exact(settings.rule, accuracy, drop, oc.block, oc.candidate_extra, oc.baseline_extra)
    row = row_oc(settings, k=K, candidate=candidate, baseline=accuracy)
    return Exact(settings.rule, accuracy, drop, row.block, row.candidate_extra, row.baseline_extra)


def _exact_job(args: tuple[RuleSettings, float, float]) -> Exact:
    return exact(*args)


SECOND_DESIGN = replace(RELATIVE_RULE, screen=SPRT, pair_beta=0.02)
"""The relative rule's second design (result schema 6 to the designed screen): an SPRT
screen, the paired comparison at pair_beta 0.02."""
FIRST_DESIGN = replace(
    SECOND_DESIGN, screen_alpha=0.15, screen_beta=0.03, anchor_z=1.5, screen_cap=0.99,
    pair_z=1.2816, direct_below=0.0, pair_quiet=0,
)  # fmt: skip
"""The relative rule's first design (result schema 5), for the frontier."""
FRONTIER = (
    ("defaults (the designed screen)", RELATIVE_RULE),
    ("designed screen, pair_beta 0.02", replace(RELATIVE_RULE, pair_beta=0.02)),
    ("designed screen, no quiet stop (pair_quiet 0)", replace(RELATIVE_RULE, pair_quiet=0)),
    ("designed screen, 80 measured answers", replace(RELATIVE_RULE, measure=80)),
    ("second design (the SPRT screen)", SECOND_DESIGN),
    ("second design, screen_beta 0.09", replace(SECOND_DESIGN, screen_beta=0.09)),
    ("second design, anchor_z 0.3", replace(SECOND_DESIGN, anchor_z=0.3)),
    ("second design, pair_beta 0.005", replace(SECOND_DESIGN, pair_beta=0.005)),
    (
        "second design read to 80 answers, anchor_z 0.15, screen_alpha 0.0003",
        replace(SECOND_DESIGN, max_decisions=80, anchor_z=0.15, screen_alpha=0.0003),
    ),
    ("first design", FIRST_DESIGN),
)
"""The designed screen and what it replaced: the cost at 0.95 and what it buys."""
FRONTIER_GRID = tuple(round(0.80 + 0.01 * i, 2) for i in range(21))


@dataclass(frozen=True)
class Frontier:
    name: str
    candidate_extra: float
    baseline_extra: float
    worst_catch: float
    worst_at: float
    worst_block: float


def frontier(name: str, settings: RuleSettings) -> Frontier:
    """Worst catch and false block over FRONTIER_GRID, and the cost of a harmless row at 0.95."""
    at95 = exact(settings, 0.95, 0.0)
    catches = [(exact(settings, p, settings.drop).block, p) for p in FRONTIER_GRID]
    worst = min(catches)
    block = max(exact(settings, p, 0.0).block for p in FRONTIER_GRID)
    return Frontier(name, at95.candidate_extra, at95.baseline_extra, worst[0], worst[1], block)


def _frontier_job(args: tuple[str, RuleSettings]) -> Frontier:
    return frontier(*args)


# ------------------------------------------------------------ the real path


@dataclass(frozen=True)
class Played:
    blocked: int
    rows: int
    candidate_extra: float
    baseline_extra: float
    baseline_measure: float
    seconds: float


def compare_path(accuracy: float, drop: float, rows: int, prs: int, seed: int) -> Played:
    """``prs`` pull requests of ``rows`` gated rows through ``passk baseline`` + ``passk compare``.

    The first row of each pull request has the candidate at accuracy - drop, the
    others are harmless (drop 0: all harmless); blocked counts the first row's
    gate failures only (a catch counts only the row that regressed), or every
    row's when drop is 0.  A fresh baseline is recorded for every pull request,
    so the baseline's measurement varies as it does between merges.
    """
    from passk_action.agents.runner import AttemptRequest, FunctionAgent, RetryPolicy
    from passk_action.core.model import AgentInfo, Dataset, Phase, Row, dataset_digest
    from passk_action.engine.agents import ReadyAgents
    from passk_action.engine.compare import compare
    from passk_action.engine.measuring import Measurement, measure_run, rows_to_measure
    from passk_action.engine.request import CandidateSource, CompareInputs
    from passk_action.engine.session import Session
    from passk_action.inputs.config import parse_config

    started = time.perf_counter()
    blocked = 0
    cand_extra = base_extra = measured = 0
    for pr in range(prs):
        gated = tuple(
            Row(id=f"r{i:03d}", input={"i": i}, expected="yes", must_not_break=True)
            for i in range(rows)
        )
        dataset = Dataset(rows=gated, source="data.jsonl", digest=dataset_digest(gated))
        accuracy_of = {
            row.id: (accuracy, accuracy - drop if i == 0 else accuracy)
            for i, row in enumerate(gated)
        }

        def agent(
            version: Version,
            pr: int = pr,
            accuracy_of: dict[str, tuple[float, float]] = accuracy_of,
        ) -> FunctionAgent:
            side = 0 if version is Version.BASELINE else 1

            def answer(request: AttemptRequest) -> dict[str, str]:
                key = f"{seed}|{pr}|{request.row.id}|{request.number}|{version.value}"
                right = random.Random(key).random() < accuracy_of[request.row.id][side]
                return {"decision": "yes" if right else "no"}

            return FunctionAgent(answer, version.value)

        text = (
            f"dataset: data.jsonl\nk: {K}\nconcurrency: 8\nagent: {{command: [candidate]}}\n"
            "baseline: {agent: {command: [baseline]}}\nretry: {attempts: 0}\n"
            "gate: {rule: relative}\n"
        )
        scratch = Path(tempfile.mkdtemp(dir=_SCRATCH))
        try:
            config = parse_config(text, scratch / "passk.yml").config
            session = Session(concurrency=8, retry=RetryPolicy(attempts=0), now=lambda: "now")
            baseline, _ = measure_run(
                Measurement(
                    dataset,
                    gated,
                    config.settings,
                    scratch / "baseline.json",
                    measured=rows_to_measure(config.gate.rule, gated, ()),
                ),
                agent(Version.BASELINE),
                AgentInfo(Version.BASELINE, "baseline"),
                session,
            )
            measured += sum(1 for a in baseline.attempts if a.phase is Phase.MEASURE)
            inputs = CompareInputs(
                config=config,
                dataset=dataset,
                baseline=baseline,
                candidate=CandidateSource(out=scratch / "candidate.json"),
            )
            agents = ReadyAgents(
                {
                    Version.BASELINE: agent(Version.BASELINE),
                    Version.CANDIDATE: agent(Version.CANDIDATE),
                }
            )
            result = compare(inputs, agents, session)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        failed = {f.id for f in result.gate.failures if f.id is not None}
        counted = gated if drop == 0 else gated[:1]
        blocked += sum(1 for row in counted if row.id in failed)
        for row in counted:
            verdict = result.gate.verdicts[row.id]
            cand_extra += verdict.candidate.attempts - K
            base_extra += verdict.baseline.attempts - K - (config.gate.rule.measure - K)
    counted_rows = prs * (rows if drop == 0 else 1)
    return Played(
        blocked,
        counted_rows,
        cand_extra / counted_rows,
        base_extra / counted_rows,
        measured / (prs * rows),
        time.perf_counter() - started,
    )


_SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None


def _played_job(args: tuple[float, float, int, int, int]) -> Played:
    return compare_path(*args)


# ------------------------------------------------------------------- table


def _pct(value: float) -> str:
    if value == 0:
        return "0%"
    if value < 0.0001:
        return f"{value * 100:.1g}%"
    if value < 0.01:
        return f"{value * 100:.2f}%"
    return f"{value * 100:.1f}%"


PLAYED = ((0.80, 0.0, 10), (0.90, 0.0, 10), (0.95, 0.0, 10), (0.80, 0.2, 5), (0.90, 0.2, 5),
          (1.00, 0.2, 5), (0.95, 0.1, 5))  # fmt: skip
"""(accuracy, drop, gated rows) of the pull requests played through the real compare path."""


def run(prs: int, seed: int, workers: int) -> str:
    started = time.perf_counter()
    jobs = [(s, p, d) for s in (RELATIVE_RULE, SEQUENTIAL_RULE) for p in ACCURACIES for d in DROPS]
    smaller = [
        (replace(RELATIVE_RULE, drop=drop), p, d)
        for drop in (0.1, 0.05)
        for p in (0.8, 0.9, 0.95, 1.0)
        for d in (0.0, drop)
    ]
    with ProcessPoolExecutor(workers) as pool:
        table = list(pool.map(_exact_job, jobs))
        costs = list(pool.map(_exact_job, smaller))
        played = list(
            pool.map(_played_job, [(p, d, g, prs, seed + i) for i, (p, d, g) in enumerate(PLAYED)])
        )
        trade = list(pool.map(_frontier_job, FRONTIER))
    by = {(e.rule, e.accuracy, e.drop): e for e in table}
    out = [
        f"Gate rules, k = {K}, exact (`core/operating.py`): a gated row right with probability p "
        "on the baseline and p - drop on the candidate (drop 0: harmless). The relative rule "
        f"reads the baseline's {RELATIVE_RULE.measure} recorded answers per gated row "
        "(`passk baseline` measures them); the sequential rule assumes every row is right 99% "
        "of the time. Cells: row blocks / extra candidate attempts / extra baseline attempts in "
        "the pull request.",
        "",
        "| p | rule | harmless: row blocks | 10 rows | 50 rows | drop 5 points | drop 10 "
        "| drop 20 | drop 30 |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in ACCURACIES:
        for rule in (RELATIVE, SEQUENTIAL):
            h = by[(rule, p, 0.0)]
            cells = [
                f"{_pct(by[(rule, p, d)].block)} / {by[(rule, p, d)].candidate_extra:.1f} / "
                f"{by[(rule, p, d)].baseline_extra:.1f}"
                for d in DROPS
            ]
            out.append(
                f"| {p:.2f} | {rule} | {cells[0]} | {_pct(any_of(h.block, 10))} | "
                f"{_pct(any_of(h.block, 50))} | " + " | ".join(cells[1:]) + " |"
            )
    worst_harmless = max(by[(RELATIVE, p, 0.0)].block for p in ACCURACIES)
    worst_catch = min(by[(RELATIVE, p, 0.2)].block for p in ACCURACIES)
    at95 = by[(RELATIVE, 0.95, 0.0)]
    out += [
        "",
        f"Relative rule over p in 0.80-1.00: a harmless row blocks at most {_pct(worst_harmless)} "
        f"(a pull request of 10 such rows {_pct(any_of(worst_harmless, 10))}, of 50 "
        f"{_pct(any_of(worst_harmless, 50))}); a 20-point drop is caught at least "
        f"{_pct(worst_catch)} of the time; a harmless row at 0.95 costs "
        f"{at95.candidate_extra:.1f} extra candidate and {at95.baseline_extra:.1f} baseline "
        f"attempts per pull request, and {RELATIVE_RULE.measure} attempts per recorded baseline.",
        "",
        "What a smaller drop costs to catch (the relative rule with `gate.sequential.drop` set):",
        "",
        "| drop | p | catch | harmless row blocks | extra candidate attempts (harmless) "
        "| extra baseline attempts (harmless) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i in range(0, len(costs), 2):
        harmless, dropped = costs[i], costs[i + 1]
        settings = smaller[i][0]
        out.append(
            f"| {settings.drop:.2f} | {harmless.accuracy:.2f} | {_pct(dropped.block)} | "
            f"{_pct(harmless.block)} | {harmless.candidate_extra:.1f} | "
            f"{harmless.baseline_extra:.1f} |"
        )
    out += [
        "",
        "The frontier (exact): a harmless row's extra attempts at 0.95 against the worst "
        "20-point catch and the worst harmless row block over p = 0.80, 0.81, ..., 1.00.",
        "",
        "| settings | extra candidate attempts at 0.95 | extra baseline attempts at 0.95 "
        "| worst catch (at p) | worst harmless row block | 10 rows | 50 rows |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for f in trade:
        out.append(
            f"| {f.name} | {f.candidate_extra:.1f} | {f.baseline_extra:.1f} | "
            f"{_pct(f.worst_catch)} ({f.worst_at:.2f}) | {_pct(f.worst_block)} | "
            f"{_pct(any_of(f.worst_block, 10))} | {_pct(any_of(f.worst_block, 50))} |"
        )
    catching = sorted((f for f in trade if f.worst_catch >= 0.9), key=lambda f: f.candidate_extra)
    cheapest = catching[0]
    meets = [f.name for f in catching if f.candidate_extra <= 15]
    out += [
        "",
        f"Of these settings, the cheapest at 0.95 that still catches a 20-point drop at least "
        f"90% of the time is {cheapest.name}: {cheapest.candidate_extra:.1f} extra candidate "
        f"attempts; at most 15 with that catch: {', '.join(meets) if meets else 'none'}.",
    ]
    worst_z = 0.0
    out += [
        "",
        f"Through the real compare path ({prs} pull requests per line, seed {seed}): exact "
        "(simulated in brackets).",
        "",
        "| p | drop | gated rows | rows counted | row blocks | extra candidate attempts "
        "| extra baseline attempts | measurement attempts / gated row | seconds |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (p, d, g), got in zip(PLAYED, played, strict=True):
        e = exact(RELATIVE_RULE, p, d)
        rate = got.blocked / got.rows
        se = math.sqrt(max(e.block * (1 - e.block), 1.0 / got.rows) / got.rows)
        z = abs(rate - e.block) / se
        worst_z = max(worst_z, z)
        flag = " ⚠" if z > 3 else ""
        out.append(
            f"| {p:.2f} | {d:.2f} | {g} | {got.rows} | {_pct(e.block)} ({_pct(rate)}){flag} | "
            f"{e.candidate_extra:.1f} ({got.candidate_extra:.1f}) | {e.baseline_extra:.1f} "
            f"({got.baseline_extra:.1f}) | {got.baseline_measure:.0f} | {got.seconds:.0f} |"
        )
    out += [
        "",
        f"Largest |simulated - exact| / Monte Carlo SE: {worst_z:.1f}. Attempts simulated count "
        "what the rounds made (a round runs what the rule asked for whole); the exact ones "
        "count the paired comparison's pairs read, so the simulated ones may exceed them. "
        f"{time.perf_counter() - started:.0f} s.",
    ]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261229)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    text = run(args.prs, args.seed, args.workers)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
