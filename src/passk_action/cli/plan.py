"""``passk plan``: what the gate's rule does for a config, and settings for target rates.

For a config (its ``gate.rule`` settings, k, and the gated rows it has:
must-not-break rows, the committed baseline's ratchet, and under
``gate.block_on_any_regression`` the baseline's stable-correct rows) or for
``--gated-rows N --k K``, prints the exact chance the gate blocks a harmless
pull request and catches a gated row whose accuracy dropped
(``core/operating.py``, the figures the comment's "How sure" section
states), then the sequential settings with the fewest attempts that meet
``--false-block`` and ``--miss``.  Runs no agent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..core import values
from ..core.model import RowClass
from ..core.operating import (
    DROPPED,
    HARMLESS,
    GateOC,
    MeasuredRow,
    dataset_oc,
    gate_oc,
    measured_rates,
)
from ..core.planning import Targets, less_accurate, suggest
from ..core.scoring import rescore_run
from ..core.sequential import RELATIVE, GatedKind, Outcome, RuleSettings, gated_kind, score
from ..core.stats import summarize_run
from ..errors import EXIT_OK, UsageError
from ..report.gated import plan_lines, rates_json, rates_lines
from .output import warn

HELP = "print the gate's false-block and catch rates for a config, and settings for targets"


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "plan",
        help=HELP,
        description=HELP + ". Exact figures, no agent runs.",
    )
    parser.add_argument(
        "--config", default=None, help="a passk config (default: passk.yml, when it exists)"
    )
    parser.add_argument("--gated-rows", type=int, help="gated rows (instead of the config's)")
    parser.add_argument("--k", type=int, help="attempts per row (instead of the config's)")
    parser.add_argument(
        "--false-block",
        type=float,
        default=0.05,
        help="target: harmless pull requests blocked at most this often (default 0.05)",
    )
    parser.add_argument(
        "--miss",
        type=float,
        default=0.1,
        help="target: a dropped gated row missed at most this often (default 0.1)",
    )
    parser.add_argument(
        "--accuracy",
        type=float,
        default=HARMLESS,
        help=f"a harmless gated row's accuracy on both versions (default {HARMLESS})",
    )
    parser.add_argument(
        "--dropped",
        type=float,
        default=DROPPED,
        help=f"the accuracy a broken gated row drops to (default {DROPPED})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=handle)


def _gated_kinds(
    config_path: Path,
) -> tuple[RuleSettings, int, list[GatedKind], list[MeasuredRow]]:
    """The config's rule, k, the kind of each row it gates (as far as files tell), and each
    gated row with the committed baseline's answers on it (none without a baseline)."""
    from ..engine.measuring import row_records
    from ..inputs.config import load_config
    from ..inputs.dataset import load_dataset
    from ..store.artifact import read_run

    loaded = load_config(config_path)
    for message in loaded.warnings:
        warn(message)
    config = loaded.config
    # Read as the config scores it: structured expected objects, or none at all under
    # scoring.by: environment.
    dataset = load_dataset(config.dataset, config.must_not_break_tags, config.scoring)
    ratchet: frozenset[str] = frozenset()
    stable: set[str] = set()
    baseline = None
    if config.baseline.artifact.exists():
        baseline = read_run(config.baseline.artifact)
        ratchet = frozenset(baseline.ratchet)
        if config.gate.block_on_any_regression:
            # As the gate judges it: the recorded answers read by the config's scoring rules,
            # against the dataset's expected decisions, on rows whose input has not changed.
            recorded = {r.id: r.input_digest for r in baseline.rows}
            same = [r for r in row_records(dataset) if recorded.get(r.id) == r.input_digest]
            grouped = rescore_run(baseline, config.scoring).attempts_by_row()
            summaries = summarize_run(same, grouped, config.k, config.scoring)
            stable = {s.id for s in summaries if s.row_class is RowClass.STABLE_CORRECT}
    elif config.gate.block_on_any_regression:
        warn(
            f"{config.baseline.artifact}: no baseline yet, so the rows "
            "gate.block_on_any_regression gates are not counted"
        )
    gated = [
        (row, kind)
        for row in dataset.rows
        if (
            kind := gated_kind(
                must_not_break=row.must_not_break,
                in_ratchet=row.id in ratchet,
                block_on_any_regression=config.gate.block_on_any_regression,
                baseline_stable_correct=row.id in stable,
            )
        )
        is not None
    ]
    measured: list[MeasuredRow] = []
    if baseline is not None:
        records = {r.id: r for r in row_records(dataset)}
        digests = {r.id: r.input_digest for r in baseline.rows}
        by_row = rescore_run(baseline, config.scoring).attempts_by_row()
        for row, kind in gated:
            side = score(
                by_row.get(row.id, ()) if digests.get(row.id) == row.input_digest else (),
                records[row.id],
                config.scoring,
            )
            outcomes = (
                side.outcomes[: side.recorded]
                if config.gate.rule.rule == RELATIVE
                else (side.outcomes)
            )
            right = sum(1 for o in outcomes if o is Outcome.RIGHT)
            answers = sum(1 for o in outcomes if o is not Outcome.ERROR)
            measured.append(MeasuredRow(row.id, kind, right, answers))
    return config.gate.rule, config.k, [kind for _, kind in gated], measured


def _check_numbers(args: argparse.Namespace) -> None:
    """The options' value rules (``core/values.py``), the config's own for ``--k``."""
    for name, value in (
        ("--false-block", args.false_block),
        ("--miss", args.miss),
        ("--accuracy", args.accuracy),
        ("--dropped", args.dropped),
    ):
        if values.chance(value) is None:
            raise UsageError(f"{name} must be {values.CHANCE_TEXT}, got {value}", where=name)
    if args.k is not None and values.attempts_per_row(args.k) is None:
        raise UsageError(
            f"--k must be {values.K_TEXT}, as in the config, got {args.k}",
            where="--k",
            hint="k attempts per row tell a flip from a stable answer only from 2 on",
        )
    if args.gated_rows is not None and not 1 <= args.gated_rows <= values.MAX_TOKENS:
        raise UsageError(
            f"--gated-rows must be a whole number from 1 to 10^12, got {str(args.gated_rows)[:20]}",
            where="--gated-rows",
        )


def handle(args: argparse.Namespace) -> int:
    _check_numbers(args)
    if not 0.0 < args.dropped < args.accuracy < 1.0:
        raise UsageError(
            "need 0 < --dropped < --accuracy < 1", where="--accuracy", hint="e.g. 0.99 and 0.7"
        )
    config_path = Path(args.config or "passk.yml")
    settings, k, kinds = RuleSettings(), 3, [GatedKind.MUST_NOT_BREAK]
    measured: list[MeasuredRow] = []
    if args.config is not None or (args.gated_rows is None and config_path.exists()):
        settings, k, kinds, measured = _gated_kinds(config_path)
    elif args.gated_rows is None:
        raise UsageError(
            "no passk.yml here: pass --config PATH, or --gated-rows N",
            where="passk plan",
            hint="e.g. `passk plan --gated-rows 10 --k 3`",
        )
    if args.k is not None:
        k = args.k
    gated_rows = len(kinds)
    oc: GateOC | None = None
    if args.gated_rows is not None:
        # N rows of one kind: the closed form, no list of N rows (10^9 of them held 8 GB).
        gated_rows = args.gated_rows
        measured = []  # rows of a size, not the config's: no baseline measured them
        kind = kinds[0] if kinds else GatedKind.MUST_NOT_BREAK
        oc = gate_oc(
            settings,
            k=k,
            gated_rows=gated_rows,
            accuracy=args.accuracy,
            dropped=args.dropped,
            kind=kind,
        )
    elif kinds:
        oc = dataset_oc(settings, k=k, kinds=kinds, accuracy=args.accuracy, dropped=args.dropped)
    targets = Targets(args.false_block, args.miss, args.accuracy, args.dropped)
    plan = suggest(k=k, gated_rows=max(gated_rows, 1), targets=targets, base=settings)
    rates = measured_rates(settings, k=k, rows=measured) if measured else None
    worse = less_accurate(plan)
    if args.json:
        doc = {
            "settings": settings.to_json(),
            "gate": oc.to_json() if oc is not None else None,
            "measured": rates_json(rates) if rates is not None else None,
            "targets": {"false_block": args.false_block, "miss": args.miss},
            "suggested": {"settings": plan.settings.to_json(), "gate": plan.oc.to_json(),
                          "met": plan.met, "less_accurate": worse.to_json()},
        }  # fmt: skip
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    for line in plan_lines(
        oc, settings, plan, false_block=args.false_block, miss=args.miss, less_accurate=worse
    ):
        print(line)
    if rates is not None:
        print()
        for line in rates_lines(rates, settings):
            print(line)
    return EXIT_OK
