"""``passk gate``: recompute the gate from a result's recorded verdicts, never running an agent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import EXIT_GATE_FAILED, EXIT_OK
from ..report.reasons import reason, warnings
from ..store.results import read_result


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "gate", help="re-derive the gate decision from a result file (no agent runs)"
    )
    parser.add_argument("result", help="a result JSON written by `passk compare --json`")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    audited = read_result(Path(args.result))
    gate = audited.result.gate
    if not audited.consistent:
        # The file says one thing and its own verdicts another: it was edited
        # or written by a different gate.  Never let that pass.
        print(
            f"passk: error: {args.result}: the recorded gate "
            f"({'passed' if audited.recorded_gate.passed else 'failed'}) does not match the gate "
            f"recomputed from its attempts ({'passed' if gate.passed else 'failed'}) "
            "(the file was edited or written by another passk; treat it as failed)",
            file=sys.stderr,
        )
        return EXIT_GATE_FAILED
    for failure in gate.failures:
        row = f"{failure.id}: " if failure.id else ""
        print(f"FAIL {row}[{failure.rule.value}] {reason(failure, audited.result.policy.rule)}")
    for said in warnings(gate.warnings):
        print(f"WARN {said}")
    print(f"gate {'passed' if gate.passed else 'failed'} ({len(gate.failures)} failure(s))")
    return EXIT_OK if gate.passed else EXIT_GATE_FAILED
