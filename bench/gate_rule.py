"""False block, miss and attempts of the gate's row rule: simulated, beside the exact figures.

A gated row (must-not-break, ratchet, or any row under
``block_on_any_regression``) is decided by a rule (``core/sequential.py``).
This benchmark plays pull requests against the rules and counts:

- **false block**: a harmless PR (both versions right with probability p on
  every one of G gated rows) is blocked;
- **catch**: a PR in which one gated row's candidate accuracy dropped to 0.7
  (the other G - 1 harmless) is blocked; **row miss**: that row alone
  passes (G = 1);
- **attempts**: extra candidate attempts beyond the k main ones, and extra
  baseline attempts (its main ones are already recorded), per gated row of
  a harmless PR; **rounds**: the most confirmation rounds a PR took.

Each figure is simulated and computed exactly (``core/operating.py``, dynamic
programming over the sequential test; closed forms for the others); the
table flags any simulated figure more than 3 Monte Carlo standard errors
from the exact one, and the run fails if one is.

The rules: ``sequential`` (the default until issue 29: an SPRT per version), ``strict``
(the literal rule passk had: any wrong answer blocks a ratchet row; a
must-not-break row unless the baseline also erred in confirmation), and two
candidates measured for the choice: ``reproduce`` (block only when the
failure reproduces in confirmation: 7 candidate answers, and if one is
wrong, m more of which at least r must be wrong; m and r the cheapest that
meet the goals) and ``sequential, same baseline test`` (the baseline tested
against 0.7 like the candidate, instead of 0.9).

**The trial hook.** One trial is one pull request: ``Trial`` takes a
:class:`PullRequest` (the rule, k, every gated row's baseline and candidate
accuracy) and a seed, and returns a :class:`PullRequestResult` (per row:
blocked, attempts on each version, rounds).  :func:`rule_trial` plays it
through the rule module alone, answering each attempt the rule asks for
from a random agent, as the engine's confirmation loop will.  To measure the
real compare path instead, write a ``Trial`` that builds a dataset of G
must-not-break rows, records ``passk baseline`` and runs ``passk compare
--json`` with an agent answering right with the row's accuracy (seeded by
request id, attempt and version), and reads blocked rows, attempts
(``executions``) and rounds from the result; pass it as ``trial=`` to
:func:`measure`.  Nothing else changes: the exact figures and the table stay.

    python bench/gate_rule.py --out bench/gate_rule.md     # about 10 min on 2 cores
    python bench/gate_rule.py --scale 0.1                  # a quick look

Standard library only.  Rows are independent in this model, so the PRs of
G = 10 and G = 1 are the rows of the G = 50 PRs taken 10 and 1 at a time.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from passk_action.core.model import Version
from passk_action.core.operating import DROPPED, any_of, row_oc, side_oc
from passk_action.core.sequential import (
    STRICT,
    Decision,
    Ending,
    GatedKind,
    Outcome,
    Request,
    RuleSettings,
    SideAttempts,
    boundaries,
    judge,
    read,
)

K = 3
ACCURACIES = (0.99, 0.995, 0.999)
GATED_ROWS = (1, 10, 50)
FLAKY = ((0.98, 0.98), (0.95, 0.95), (0.9, 0.9), (0.8, 0.8), (0.9, 0.7))
"""(baseline, candidate) accuracies of rows that were never as reliable as 0.99."""
GOAL_ALPHA = 0.001
"""Per-row false block that meets both goals (<= 5% at 50 rows, <= 1% at 10)."""
GOAL_MISS = 0.1

Choice = tuple[Decision, tuple[Request, ...]]


# ------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """A rule under test: how it decides a row, and its exact per-row figures."""

    name: str
    decide: Callable[[SideAttempts, SideAttempts], Choice]
    exact: Callable[[float, float], tuple[float, float, float]]
    """(baseline accuracy, candidate accuracy) -> (block, candidate attempts, baseline extra)."""
    settings: RuleSettings | None = None
    """A rule of ``core/sequential.py`` (the compare path can run it); None: a bench-only rule."""
    kind: GatedKind = GatedKind.MUST_NOT_BREAK


def package_rule(name: str, settings: RuleSettings, kind: GatedKind, k: int = K) -> Rule:
    """A rule of ``core/sequential.py``: :func:`judge` and :func:`row_oc`."""

    def decide(candidate: SideAttempts, baseline: SideAttempts) -> Choice:
        verdict = judge(candidate, baseline, settings, kind=kind, k=k)
        return verdict.decision, verdict.requests

    def exact(baseline: float, candidate: float) -> tuple[float, float, float]:
        oc = row_oc(settings, k=k, candidate=candidate, baseline=baseline, kind=kind)
        return oc.block, oc.candidate_attempts, oc.baseline_extra

    return Rule(name, decide, exact, settings, kind)


def _tail(n: int, q: float, r: int) -> float:
    """P(Binomial(n, q) >= r)."""
    return math.fsum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(r, n + 1))


def reproduce_design(first: int = 7, k: int = K) -> tuple[int, int]:
    """The cheapest (m, r) meeting the goals at p = 0.99 and 0.7, the baseline check aside.

    Per row: block = P(>= 1 wrong of ``first``) P(>= r wrong of m); the
    goals are block <= GOAL_ALPHA at 0.99 and >= 1 - GOAL_MISS at 0.7;
    cheapest = fewest expected candidate attempts at 0.99.
    """
    best: tuple[float, int, int] | None = None
    for r in range(1, 6):
        for m in range(1, 60):
            harmless = _tail(first, 0.01, 1) * _tail(m, 0.01, r)
            dropped = _tail(first, 0.3, 1) * _tail(m, 0.3, r)
            if harmless <= GOAL_ALPHA and dropped >= 1 - GOAL_MISS + 0.005:
                cost = first + _tail(first, 0.01, 1) * m
                if best is None or cost < best[0]:
                    best = (cost, m, r)
                break
    assert best is not None
    return best[1], best[2]


DEFAULT = RuleSettings(rule="sequential")  # the rule this bench chose (issue 20)


def reproduce_rule(settings: RuleSettings = DEFAULT, first: int = 7, k: int = K) -> Rule:
    """ "Block only when the failure reproduces in confirmation", with the default baseline test."""
    m, r = reproduce_design(first, k)
    base_bounds = boundaries(settings.baseline_test)

    def decide(candidate: SideAttempts, baseline: SideAttempts) -> Choice:
        answers = [o for o in candidate.outcomes if o is not Outcome.ERROR]
        if len(answers) < first:
            return Decision.MORE, (Request(Version.CANDIDATE, first - len(answers)),)
        if Outcome.WRONG not in answers[:first]:
            return Decision.PASS, ()
        if len(answers) < first + m:
            return Decision.MORE, (Request(Version.CANDIDATE, first + m - len(answers)),)
        if answers[first : first + m].count(Outcome.WRONG) < r:
            return Decision.PASS, ()
        base = read(baseline, base_bounds)
        if base.ending is Ending.UNRELIABLE:
            return Decision.PASS, ()
        if base.ending is Ending.UNDECIDED:
            wanted = base_bounds.rights_to_pass(base.read, base.wrong_read)
            return Decision.MORE, (Request(Version.BASELINE, wanted),)
        return Decision.BLOCK, ()

    def exact(baseline: float, candidate: float) -> tuple[float, float, float]:
        doubt = _tail(first, 1 - candidate, 1)
        fails = doubt * _tail(m, 1 - candidate, r)
        base = side_oc(settings.baseline_test, baseline, k)
        attempts = max(first, k) + doubt * m
        return fails * (1 - base.unreliable), attempts, fails * (base.attempts - k)

    return Rule(f"reproduce (7, then {r} wrong of {m})", decide, exact)


def rules() -> list[Rule]:
    default = RuleSettings(rule="sequential")
    same_base = replace(
        default,
        baseline_unreliable=default.unreliable,
        baseline_alpha=default.alpha,
        baseline_beta=default.beta,
        baseline_max_decisions=default.max_decisions,
    )
    strict = RuleSettings(rule=STRICT)
    return [
        package_rule("sequential", default, GatedKind.MUST_NOT_BREAK),
        package_rule("sequential, same baseline test", same_base, GatedKind.MUST_NOT_BREAK),
        reproduce_rule(default),
        package_rule("strict, ratchet row", strict, GatedKind.RATCHET),
        package_rule("strict, must-not-break row", strict, GatedKind.MUST_NOT_BREAK),
    ]


# ------------------------------------------------------------------- trials


@dataclass(frozen=True)
class PullRequest:
    """A pull request to play: the rule, k, each gated row's (baseline, candidate) accuracy."""

    rule: Rule
    k: int
    rows: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class RowResult:
    blocked: bool
    candidate_attempts: int
    baseline_extra: int
    rounds: int


@dataclass(frozen=True)
class PullRequestResult:
    rows: tuple[RowResult, ...]

    @property
    def blocked(self) -> bool:
        return any(r.blocked for r in self.rows)


Trial = Callable[[PullRequest, int], PullRequestResult]


def rule_trial(pr: PullRequest, seed: int) -> PullRequestResult:
    """Play ``pr`` through the rule alone: main attempts, then every round the rule asks for.

    Each attempt is right with its version's accuracy (independently); a
    row's rounds are the batches of attempts it asked for (the engine runs
    one batch per round for all rows at once).
    """
    rng = random.Random(seed)
    uniform = rng.random
    right, wrong = Outcome.RIGHT, Outcome.WRONG

    def draw(p: float, count: int) -> list[Outcome]:
        return [right if uniform() < p else wrong for _ in range(count)]

    results = []
    for p_base, p_cand in pr.rows:
        base, cand = draw(p_base, pr.k), draw(p_cand, pr.k)
        rounds = 0
        while True:
            decision, requests = pr.rule.decide(
                SideAttempts(tuple(cand), pr.k), SideAttempts(tuple(base), pr.k)
            )
            if decision is not Decision.MORE:
                break
            rounds += 1
            for request in requests:
                if request.version is Version.CANDIDATE:
                    cand += draw(p_cand, request.attempts)
                else:
                    base += draw(p_base, request.attempts)
        results.append(RowResult(decision is Decision.BLOCK, len(cand), len(base) - pr.k, rounds))
    return PullRequestResult(tuple(results))


def compare_trial(pr: PullRequest, seed: int) -> PullRequestResult:
    """Play ``pr`` through the real compare path: ``passk baseline``, then ``passk compare``.

    A dataset of G gated rows (must-not-break, or not marked and locked by the
    committed baseline's ratchet for a ratchet rule), a config with the rule's
    settings (``gate.rule``, ``gate.sequential``, ``confirm``), an in-process agent
    per version answering right with its row's accuracy (drawn from a generator
    seeded by trial, row, attempt number and version, so a re-run gives the same
    answers); the baseline is recorded by the engine's own ``measure_run`` (what
    ``passk baseline`` runs) and the candidate compared by ``engine.compare``
    (what ``passk compare`` runs: main attempts, every confirmation round, the
    gate through ``core/result.evaluate``).  Per row, from the result: blocked
    (its gate failure), attempts on each version (its recorded verdict's
    evidence); rounds are the comparison's (``executions.confirm_rounds``).
    """
    from passk_action.agents.runner import AttemptRequest, FunctionAgent, RetryPolicy
    from passk_action.core.model import AgentInfo, Dataset, Row, dataset_digest
    from passk_action.engine.agents import ReadyAgents
    from passk_action.engine.compare import compare
    from passk_action.engine.measuring import Measurement, measure_run
    from passk_action.engine.request import CandidateSource, CompareInputs
    from passk_action.engine.session import Session
    from passk_action.inputs.config import parse_config

    settings = pr.rule.settings
    if settings is None:
        raise ValueError(f"{pr.rule.name} is not a rule passk runs")
    ratchet = pr.rule.kind is GatedKind.RATCHET
    rows = tuple(
        Row(id=f"r{i:03d}", input={"i": i}, expected="yes", must_not_break=not ratchet)
        for i in range(len(pr.rows))
    )
    accuracy = {row.id: pair for row, pair in zip(rows, pr.rows, strict=True)}
    dataset = Dataset(rows=rows, source="data.jsonl", digest=dataset_digest(rows))

    def agent(version: Version) -> FunctionAgent:
        side = 0 if version is Version.BASELINE else 1

        def answer(request: AttemptRequest) -> dict[str, str]:
            draw = random.Random(f"{seed}|{request.row.id}|{request.number}|{version.value}")
            right = draw.random() < accuracy[request.row.id][side]
            return {"decision": "yes" if right else "no"}

        return FunctionAgent(answer, version.value)

    fields = {
        key: value
        for key, value in settings.to_json().items()
        if key not in ("rule", "confirm_attempts")
    }
    text = (
        f"dataset: data.jsonl\nk: {pr.k}\nconcurrency: 8\nagent: {{command: [candidate]}}\n"
        "baseline: {agent: {command: [baseline]}}\nretry: {attempts: 0}\n"
        f"confirm: {{attempts: 3, must_not_break_attempts: {settings.confirm_attempts}}}\n"
        f"gate: {{rule: {settings.rule}, sequential: {json.dumps(fields)}}}\n"
    )
    scratch = Path(tempfile.mkdtemp(dir=_SCRATCH))
    try:
        config = parse_config(text, scratch / "passk.yml").config
        assert config.gate.rule == settings, "the config must carry the rule's settings"
        session = Session(concurrency=8, retry=RetryPolicy(attempts=0), now=lambda: "now")
        baseline, _ = measure_run(
            Measurement(
                dataset,
                rows,
                config.settings,
                scratch / "baseline.json",
                ratchet=tuple([r.id for r in rows] if ratchet else ()),
            ),
            agent(Version.BASELINE),
            AgentInfo(Version.BASELINE, "baseline"),
            session,
        )
        inputs = CompareInputs(
            config=config,
            dataset=dataset,
            baseline=baseline,
            candidate=CandidateSource(out=scratch / "candidate.json"),
        )
        agents = ReadyAgents(
            {Version.BASELINE: agent(Version.BASELINE), Version.CANDIDATE: agent(Version.CANDIDATE)}
        )
        result = compare(inputs, agents, session)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    blocked = {f.id for f in result.gate.failures if f.id is not None}
    rounds = result.executions.confirm_rounds
    out = []
    for row in rows:
        verdict = result.gate.verdicts[row.id]
        out.append(
            RowResult(
                row.id in blocked,
                verdict.candidate.attempts,
                verdict.baseline.attempts - pr.k,
                rounds,
            )
        )
    return PullRequestResult(tuple(out))


_SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
"""Where a compare-path trial writes its runs (memory when the machine has it: fsyncs are
the engine's, not what is measured)."""


# --------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Figure:
    """A simulated rate beside the exact one, with its Monte Carlo standard error."""

    simulated: float
    exact: float
    trials: int

    @property
    def se(self) -> float:
        p = min(max(self.exact, 1.0 / (self.trials + 1)), 1 - 1.0 / (self.trials + 1))
        return math.sqrt(p * (1 - p) / self.trials)

    @property
    def z(self) -> float:
        return (self.simulated - self.exact) / self.se

    def text(self, digits: int = 2) -> str:
        mark = " ⚠" if abs(self.z) > 3 else ""
        return f"{_pct(self.exact, digits)} ({_pct(self.simulated, digits)}){mark}"


def _pct(value: float, digits: int) -> str:
    text = f"{value * 100:.{digits}f}%"
    if value > 0 and float(text[:-1]) == 0:
        return f"{value * 100:.1g}%"
    return text


@dataclass(frozen=True)
class Mean:
    """A simulated mean beside the exact one, with its standard error."""

    simulated: float
    exact: float
    se: float

    @property
    def z(self) -> float:
        return 0.0 if self.se == 0 else (self.simulated - self.exact) / self.se

    def text(self) -> str:
        mark = " ⚠" if abs(self.z) > 3 else ""
        return f"{self.exact:.2f} ({self.simulated:.2f}){mark}"


def _mean(values: Sequence[float], exact: float) -> Mean:
    n = len(values)
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / max(1, n - 1)
    return Mean(mean, exact, math.sqrt(var / n))


@dataclass(frozen=True)
class Cell:
    rule: str
    accuracy: float
    gated_rows: int
    false_block: Figure
    catch: Figure
    candidate_extra: Mean
    baseline_extra: Mean
    rounds: int


def measure(
    rule: Rule, accuracy: float, prs: int, dropped_prs: int, seed: int, trial: Trial = rule_trial
) -> list[Cell]:
    """Every G of :data:`GATED_ROWS` for one rule and accuracy, from PRs of the largest G."""
    top = max(GATED_ROWS)
    harmless = (accuracy, accuracy)
    rows: list[RowResult] = []
    for i in range(prs):
        result = trial(PullRequest(rule, K, (harmless,) * top), seed * 1_000_003 + i)
        rows.extend(result.rows)
    broken: list[PullRequestResult] = []
    for i in range(dropped_prs):
        pr = PullRequest(rule, K, ((accuracy, DROPPED),) + (harmless,) * (top - 1))
        broken.append(trial(pr, seed * 1_000_003 + prs + i))
    block, attempts, base_extra = rule.exact(accuracy, accuracy)
    dropped_block = rule.exact(accuracy, DROPPED)[0]
    cells = []
    for g in GATED_ROWS:
        groups = [rows[i : i + g] for i in range(0, len(rows) - g + 1, g)]
        blocked = sum(any(r.blocked for r in group) for group in groups)
        caught = sum(any(r.blocked for r in pr.rows[:g]) for pr in broken)
        rounds = max(max(r.rounds for r in group) for group in groups)
        cells.append(
            Cell(
                rule.name,
                accuracy,
                g,
                Figure(blocked / len(groups), any_of(block, g), len(groups)),
                Figure(
                    caught / len(broken),
                    1 - (1 - dropped_block) * (1 - any_of(block, g - 1)),
                    len(broken),
                ),
                _mean([r.candidate_attempts - K for r in rows], attempts - K),
                _mean([r.baseline_extra for r in rows], base_extra),
                rounds,
            )
        )
    return cells


@dataclass(frozen=True)
class FlakyCell:
    rule: str
    baseline: float
    candidate: float
    block: Figure
    candidate_extra: Mean
    baseline_extra: Mean


def measure_flaky(rule: Rule, baseline: float, candidate: float, rows: int, seed: int) -> FlakyCell:
    """One row at a time: how often a row that was never 0.99-reliable blocks."""
    results = [
        trial_row
        for i in range(0, rows, 100)
        for trial_row in rule_trial(
            PullRequest(rule, K, ((baseline, candidate),) * min(100, rows - i)), seed + i
        ).rows
    ]
    block, attempts, base_extra = rule.exact(baseline, candidate)
    return FlakyCell(
        rule.name,
        baseline,
        candidate,
        Figure(sum(r.blocked for r in results) / len(results), block, len(results)),
        _mean([r.candidate_attempts - K for r in results], attempts - K),
        _mean([r.baseline_extra for r in results], base_extra),
    )


# ----------------------------------------------------------------- running


COMPARE_RULES = ("sequential", "strict, ratchet row", "strict, must-not-break row")
"""The rules ``gate.rule`` offers, each played through the compare path."""
Job = tuple[str, int, float, float, int, int, int, str]
TRIALS: dict[str, Trial] = {"rule": rule_trial, "compare": compare_trial}
"""How a pull request is played: through the rule module alone, or the real compare path."""


def _job(args: Job) -> list[Cell] | FlakyCell:
    kind, index, first, second, size, extra, seed, path = args
    rule = rules()[index]
    if kind == "main":
        return measure(rule, first, size, extra, seed, trial=TRIALS[path])
    return measure_flaky(rule, first, second, size, seed)


def run(
    scale: float, seed: int, jobs: int, path: str = "rule"
) -> tuple[list[Cell], list[FlakyCell]]:
    """Every cell of the table; ``path`` "compare" plays the rules passk runs through the
    real compare path (no flaky-row table: that one is per row, the rule's own)."""
    prs, dropped, flaky_rows = int(10_000 * scale), int(4_000 * scale), int(100_000 * scale)
    work: list[Job] = []
    for index, rule in enumerate(rules()):
        if path == "compare" and rule.name not in COMPARE_RULES:
            continue
        for p in ACCURACIES:
            work.append(
                ("main", index, p, p, prs, dropped, seed + index * 100 + int(p * 1000), path)
            )
        if path == "compare":
            continue
        for b, c in FLAKY:
            work.append(
                ("flaky", index, b, c, flaky_rows, 0, seed + index * 100 + int(b * 10 + c), path)
            )
    if jobs <= 1:
        done = [_job(w) for w in work]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_job, work, chunksize=1))
    cells = [c for d in done if isinstance(d, list) for c in d]
    flaky = [d for d in done if isinstance(d, FlakyCell)]
    return cells, flaky


PATHS = {
    "rule": "played through the rule module (`core/sequential.judge`, each round's attempts "
    "drawn as the engine asks for them)",
    "compare": "played through the real compare path: a baseline recorded by the engine "
    "(`measure_run`, what `passk baseline` runs), then `engine.compare` (what `passk compare` "
    "runs: main attempts, every confirmation round, the gate via `core/result.evaluate`), "
    "with an in-process agent per version right with each row's accuracy",
}


def markdown(
    cells: Sequence[Cell],
    flaky: Sequence[FlakyCell],
    scale: float,
    seed: int,
    secs: float,
    path: str = "rule",
) -> str:
    worst = max(
        [abs(c.false_block.z) for c in cells]
        + [abs(c.catch.z) for c in cells]
        + [abs(c.candidate_extra.z) for c in cells]
        + [abs(c.baseline_extra.z) for c in cells]
        + [abs(f.block.z) for f in flaky]
    )
    n_prs, n_dropped = int(10_000 * scale), int(4_000 * scale)
    lines = [
        f"Gate rule, k = {K}: exact figure (simulated in brackets), {PATHS[path]}. "
        f"{n_prs:,} harmless PRs of "
        f"50 gated rows (rows regrouped for 10 and 1), {n_dropped:,} PRs with one row dropped to "
        f"{DROPPED}, seed {seed}; {secs:.0f} s. Largest |simulated - exact| / Monte Carlo SE: "
        f"{worst:.1f} (⚠ marks a figure beyond 3: each does so by chance 0.27% of the time, "
        f"so among the {_figures(cells, flaky)} figures about "
        f"{_figures(cells, flaky) * 0.0027:.1f} are expected to; the run fails beyond 4).",
        "",
        "| rule | accuracy | gated rows | false block | catch one row dropped to 0.7 "
        "| extra candidate attempts / row | extra baseline attempts / row | most rounds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.rule} | {c.accuracy} | {c.gated_rows} | {c.false_block.text()} "
            f"| {c.catch.text(1)} | {c.candidate_extra.text()} | {c.baseline_extra.text()} "
            f"| {c.rounds} |"
        )
    if path == "compare":
        lines += [
            "",
            "Most rounds: the comparison's confirmation rounds (all rows of a pull request "
            "share them), the most over its pull requests.",
        ]
    if not flaky:
        return "\n".join(lines) + "\n"
    lines += [
        "",
        f"Rows that were never 0.99-reliable, one row at a time ({int(100_000 * scale):,} rows "
        "each): the chance the row blocks, and its extra attempts.",
        "",
        "| rule | baseline accuracy | candidate accuracy | row blocks "
        "| extra candidate attempts | extra baseline attempts |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for f in flaky:
        lines.append(
            f"| {f.rule} | {f.baseline} | {f.candidate} | {f.block.text(1)} "
            f"| {f.candidate_extra.text()} | {f.baseline_extra.text()} |"
        )
    return "\n".join(lines) + "\n"


def _figures(cells: Sequence[Cell], flaky: Sequence[FlakyCell]) -> int:
    """Distinct simulated figures compared (the G rows of a cell share their samples)."""
    return len(cells) // len(GATED_ROWS) * 5 + len(flaky) * 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=float, default=1.0, help="share of the committed trials")
    parser.add_argument("--seed", type=int, default=20261220)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--path",
        choices=sorted(TRIALS),
        default="rule",
        help="play pull requests through the rule module (rule) or the real compare path",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cells, flaky = run(args.scale, args.seed, args.jobs, args.path)
    text = markdown(cells, flaky, args.scale, args.seed, time.perf_counter() - started, args.path)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    off = [c for c in cells if max(abs(c.false_block.z), abs(c.catch.z)) > 4]
    off_flaky = [f for f in flaky if abs(f.block.z) > 4]
    return 1 if off or off_flaky else 0


if __name__ == "__main__":
    raise SystemExit(main())
